import { z } from "zod";
import { MODES } from "../../config/schema.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { isRequestIdOrAbsent, isWellFormedCall, isWellFormedResultAnswer, MAX_CALL_TIMEOUT_MS } from "./callChecks.js";

/**
 * The daemon's wire protocol (see DESIGN.md "Daemon protocol"): one JSON object per line in each
 * direction, answered in order. Shared by the daemon and its client, so this module imports no
 * daemon code and the library can use it without pulling the daemon in.
 */

/** Longest request or response line the daemon accepts (16 MiB), newline excluded. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** An `id` the client may attach to a request; echoed back in its response. */
export const requestIdSchema = z.union([z.string().max(200), z.number().finite(), z.null()]);
export type RequestId = z.infer<typeof requestIdSchema>;

const common = {
  /** The token from the lockfile: proves the caller can read the 0600 file. */
  token: z.string(),
  id: requestIdSchema.optional(),
};
const name = z.string().min(1).max(1000);
const limit = (max: number) => z.number().int().positive().max(max).optional();
/** A run's limits, each over the config's `[code]` value (the bounds of src/code/runtime/codeLimits.ts). */
export const codeLimitsSchema = z.strictObject({
  timeout_ms: limit(86_400_000),
  memory_mb: limit(1024),
  max_calls: limit(1_000_000),
  max_concurrent_calls: limit(1_000),
});

/**
 * Every request the daemon understands. Objects are strict so a typo (`arguments` for `args`)
 * is reported instead of silently calling the tool with no arguments.
 */
export const daemonRequestSchema = z.discriminatedUnion("op", [
  z.strictObject({ op: z.literal("list_tools"), mode: z.enum(MODES).optional(), ...common }),
  z.strictObject({
    op: z.literal("call_tool"),
    server: name,
    tool: name,
    args: z.record(z.string(), z.unknown()).optional(),
    /** Overrides the server's `timeout_ms` for this call. */
    timeout_ms: z.number().int().positive().max(MAX_CALL_TIMEOUT_MS).optional(),
    /** How arguments are validated (the mode the caller showed the model); default the config's. */
    mode: z.enum(MODES).optional(),
    ...common,
  }),
  z.strictObject({ op: z.literal("get_schema"), server: name, tool: name, ...common }),
  /**
   * Runs a program against the tools (code mode's `run_code`): the body of an async function with
   * one global per server. `limits` are over the config's `[code]`. A `cancel` of the request (or
   * closing the connection) ends the run and aborts its calls in flight.
   */
  z.strictObject({ op: z.literal("run_code"), code: z.string(), limits: codeLimitsSchema.optional(), ...common }),
  /** TypeScript declarations of the tools a task finds (`query`, best `limit`) or of the tools named (`names`): give one. */
  z.strictObject({
    op: z.literal("declare_tools"),
    query: z.string().min(1).max(10_000).optional(),
    names: z.array(name).min(1).max(200).optional(),
    limit: z.number().int().positive().max(50).optional(),
    ...common,
  }),
  z.strictObject({
    op: z.literal("read_output"),
    /** The handle a cut `call_tool` result names (servers with `spill = true`). */
    handle: z.string().min(1).max(1000),
    /** Byte offset to read from, as the result's marker tells (default 0). */
    offset: z.number().int().nonnegative().optional(),
    ...common,
  }),
  /**
   * Sets how this connection is answered. `unordered: true`: each answer is written as soon as it
   * is ready, not after every earlier one, so a slow call does not hold up the calls pipelined
   * behind it (give every request an `id` to match its answer). Applies to the requests after it.
   */
  z.strictObject({ op: z.literal("options"), unordered: z.boolean(), ...common }),
  /**
   * Aborts the request with id `target` that this connection sent and is still running (as closing
   * the connection aborts all of them): the upstream call is cancelled and that request answers
   * CANCELLED. Answers whether such a request was running.
   */
  z.strictObject({ op: z.literal("cancel"), target: requestIdSchema, ...common }),
  z.strictObject({ op: z.literal("stats"), ...common }),
  z.strictObject({ op: z.literal("refresh"), ...common }),
  z.strictObject({ op: z.literal("shutdown"), ...common }),
]);

/** A validated request. */
export type DaemonRequest = z.infer<typeof daemonRequestSchema>;

/**
 * A nonce of the `hello` exchange: 16 to 128 base64url characters (the bundled client and the
 * daemon send 43: 32 random bytes).
 */
export const nonceSchema = z.string().regex(/^[A-Za-z0-9_-]{16,128}$/);

/**
 * The line a client may send first on a connection, before any token: a fresh random nonce.
 * The daemon answers with a proof that it holds the lockfile's token (see daemonProof.ts), so the
 * client can check whom it talks to before the token leaves it. Only a connection's first line
 * may be a `hello`; the daemon answers one per connection.
 */
export const helloRequestSchema = z.strictObject({ op: z.literal("hello"), nonce: nonceSchema, id: requestIdSchema.optional() });
/** A `hello` request. */
export type HelloRequest = z.infer<typeof helloRequestSchema>;

/** The daemon's answer to `hello`: its own fresh nonce and the proof over both nonces and its address. */
export const helloAnswerSchema = z.object({
  id: requestIdSchema.optional(),
  ok: z.literal(true),
  nonce: nonceSchema,
  /** base64url HMAC-SHA256 (43 characters); see daemonProof.ts. */
  proof: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
});
/** The daemon's answer to `hello`. */
export type HelloAnswer = z.infer<typeof helloAnswerSchema>;

/**
 * Validates a parsed request line. A `call_tool` request, the one every tool call sends, is
 * checked by hand and taken as it is (see callChecks.ts); every other request, and any call the
 * hand check does not accept, goes through {@link daemonRequestSchema}, whose issues are returned
 * for the error answer.
 */
export function parseRequest(value: unknown): { success: true; data: DaemonRequest } | { success: false; error: z.ZodError } {
  // Sound: the hand check accepts only what the schema's `call_tool` member accepts, unchanged.
  if (isWellFormedCall(value)) return { success: true, data: value as DaemonRequest };
  return daemonRequestSchema.safeParse(value);
}
/** A request as a client writes it: `id` is the connection's to add. */
export type ClientRequest = DaemonRequest extends infer R ? (R extends unknown ? Omit<R, "id"> : never) : never;
/** The operation names. */
export type DaemonOp = DaemonRequest["op"];
/** The ops a connection answers itself (they concern the connection, not the bridge). */
export type ConnectionOp = "options" | "cancel";
/** A validated request the daemon runs against its bridge. */
export type BridgeRequest = Exclude<DaemonRequest, { op: ConnectionOp }>;

/**
 * Answers. Each op's `ok: true` answer has a body of its own (below); every failure has the same
 * shape. The daemon builds its answers with these types and the client parses every answer with
 * these schemas, so both sides agree on one definition. Objects a later version may grow (results,
 * stats) are loose: fields a client does not know pass through untouched.
 */

const jsonObject = z.record(z.string(), z.unknown());

/** One tool as `list_tools` returns it: what a host needs to show it and to route a call. */
export const daemonToolSchema = z.object({
  server: z.string(),
  /** The upstream's own tool name (what `call_tool` and `get_schema` take). */
  name: z.string(),
  /** `mcp://<server>/<tool>`. */
  uri: z.string(),
  /** The exposed name (`<server>_<tool>`), safe as a function name for model APIs. */
  exposedName: z.string(),
  description: z.string(),
  /** The tool's input schema in the requested mode (a minimal one in `compact`). */
  parameters: jsonObject,
  annotations: jsonObject.optional(),
});
/** One tool as `list_tools` returns it. */
export type DaemonTool = z.infer<typeof daemonToolSchema>;

/** A tool call's result as the upstream (or the output limits) made it: MCP's `CallToolResult`. */
export const toolResultSchema = z.looseObject({
  content: z.array(z.unknown()).optional(),
  isError: z.boolean().optional(),
});

/** What a `run_code` run produced (the runtime's `CodeRunResult`); codes a client does not know pass. */
export const runResultSchema = z.looseObject({
  runId: z.string(),
  ok: z.boolean(),
  console: z.array(z.looseObject({ level: z.string(), text: z.string() })),
  consoleDropped: z.number().int().nonnegative(),
  returnJson: z.string().optional(),
  error: z.looseObject({ code: z.string(), message: z.string() }).optional(),
  calls: z.array(z.looseObject({ tool: z.string(), ok: z.boolean(), code: z.string().optional(), ms: z.number() })),
  durationMs: z.number(),
  /** Set when the console lines and the return value were left out to keep the answer within its line or message. */
  cut: z.boolean().optional(),
});

/** What a `run_code` run produced. */
export type DaemonRunResult = z.infer<typeof runResultSchema>;

/** A run's result as the runtime makes it (`CodeRunResult`), described here so the wire needs no runtime code. */
interface RunResultLike {
  console: readonly { level: string; text: string }[];
  calls: readonly { tool: string; ok: boolean; code?: string; ms: number }[];
  error?: { code: string; message: string } | undefined;
  runId: string;
  ok: boolean;
  consoleDropped: number;
  returnJson?: string;
  durationMs: number;
}

/**
 * A run's result as the wire's open objects take it: plain copies of its parts (interfaces have no
 * index signature). Past `maxBytes` of JSON, its console lines and return value are left out
 * (`cut: true`, the lines counted in `consoleDropped`): a program may print megabytes, and the
 * answer must still fit in a line or a message. The answer text beside it holds them, cut at
 * `max_output_bytes`.
 */
export function wireRun(result: RunResultLike, maxBytes = Number.POSITIVE_INFINITY): DaemonRunResult {
  const { error, console: lines, calls, ...rest } = result;
  const run = {
    ...rest,
    console: lines.map((line) => ({ ...line })),
    calls: calls.map((call) => ({ ...call })),
    ...(error !== undefined ? { error: { ...error } } : {}),
  };
  if (!Number.isFinite(maxBytes) || Buffer.byteLength(JSON.stringify(run)) <= maxBytes) return run;
  const { returnJson: _left, ...kept } = run;
  return { ...kept, console: [], consoleDropped: run.consoleDropped + lines.length, cut: true };
}

/** What `get_schema` answers: the tool's full, original schema and description. */
export const toolSchemaSchema = z.object({
  /** The exposed name. */
  name: z.string(),
  server: z.string(),
  uri: z.string(),
  /** The upstream's original description. */
  description: z.string().optional(),
  /** The upstream's original, full input schema. */
  inputSchema: jsonObject,
  outputSchema: jsonObject.optional(),
  annotations: jsonObject.optional(),
});
/** The `schema` of a `get_schema` answer. */
export type DaemonToolSchema = z.infer<typeof toolSchemaSchema>;

/** One server's counts of a `refresh`. */
export const discoverySchema = z.object({
  server: z.string(),
  tools: z.number(),
  /** Tools whose summary came from the cache. */
  hits: z.number(),
  /** Tools without a usable summary: a summary job was queued. */
  queued: z.number(),
});
/** One server's counts of a `refresh`. */
export type DaemonDiscovery = z.infer<typeof discoverySchema>;

const count = z.number().int().nonnegative();

/** One upstream in `stats`: its state, tool count and the last error. */
export const upstreamStatusSchema = z.looseObject({
  name: z.string(),
  transport: z.string(),
  /** `connecting`, `ready`, `failed`, ... */
  state: z.string(),
  toolCount: count,
  restarts: count,
  startedAt: z.string().optional(),
  error: z.looseObject({ code: z.string(), message: z.string() }).optional(),
});

/** What `stats` answers: the bridge's counters and the daemon's own. */
export const daemonStatsSchema = z.looseObject({
  version: z.string(),
  uptimeMs: z.number(),
  upstreams: z.array(upstreamStatusSchema),
  catalog: z.looseObject({ tools: count, summarized: count, hits: count, misses: count }),
  queue: z.looseObject({ queued: count, running: count }),
  cache: z.looseObject({ entries: count, invalidLines: count, writeErrors: count }),
  calls: z.looseObject({ total: count, failed: count, invalidArguments: count, inFlight: count }),
  pid: z.number().int(),
  address: z.string(),
  started: z.string(),
  /** Summary jobs waiting or running. */
  queueDepth: count,
  /** Tokens of the configured mode's list against full mode's (`saved` may be negative). */
  tokens: z.looseObject({ mode: z.enum(MODES), full: z.number(), current: z.number(), saved: z.number(), ratioOfFull: z.number() }),
  /** The config file the daemon serves (absent when it could not be read at start). */
  config: z.looseObject({ path: z.string(), hash: z.string() }).optional(),
  daemon: z.looseObject({
    connections: count,
    requests: count,
    refused: count,
    badRequests: count,
    evicted: count,
    openConnections: count,
    activeRequests: count,
    idleTimeoutMs: z.number(),
    bufferedBytes: count,
    peakBufferedBytes: count,
    pausedConnections: count,
  }),
  /** Per server, the call timeout the daemon applies. */
  timeoutsMs: z.record(z.string(), z.number()),
  /** Per server, how long a request may wait for it to start. */
  connectTimeoutsMs: z.record(z.string(), z.number()),
  /** A `run_code` run's time limit unless its request says otherwise (`[code] timeout_ms`). */
  codeTimeoutMs: z.number().optional(),
});
/** The `stats` of a `stats` answer. */
export type DaemonStats = z.infer<typeof daemonStatsSchema>;

/** The body of each op's `ok: true` answer (besides `ok` and `id`). */
export const answerBodySchemas = {
  list_tools: z.object({
    tools: z.array(daemonToolSchema),
    /** Servers still starting when the list was taken (absent when none). */
    starting: z.array(z.string()).optional(),
  }),
  call_tool: z.object({ result: toolResultSchema }),
  get_schema: z.object({ schema: toolSchemaSchema }),
  /** `run`: what the run produced; `answer`: the text a model reads (`isError` when the run failed). */
  run_code: z.object({ run: runResultSchema, answer: toolResultSchema }),
  declare_tools: z.object({ declarations: z.string() }),
  read_output: z.object({ result: toolResultSchema }),
  options: z.object({}),
  cancel: z.object({ cancelled: z.boolean() }),
  stats: z.object({ stats: daemonStatsSchema }),
  refresh: z.object({ discovery: z.array(discoverySchema) }),
  shutdown: z.object({}),
} satisfies Record<DaemonOp, z.ZodType>;

/** The body of `op`'s `ok: true` answer. */
export type DaemonAnswerBody<Op extends DaemonOp = DaemonOp> = z.infer<(typeof answerBodySchemas)[Op]>;

/** The error part of a failed answer. A client takes codes it does not know too (a newer daemon's). */
export const wireErrorSchema = z.object({ code: z.string().min(1), message: z.string(), retryable: z.boolean() });
/** The error part of a failed answer. */
export type WireError = z.infer<typeof wireErrorSchema>;

/**
 * A failed answer. `id` is the request's; `null` when the daemon gave up on the whole connection
 * (a line it could not frame or parse), absent when the request had none.
 */
export const errorAnswerSchema = z.object({ id: requestIdSchema.optional(), ok: z.literal(false), error: wireErrorSchema });
/** A failed answer. */
export type DaemonErrorAnswer = z.infer<typeof errorAnswerSchema>;

/** `op`'s successful answer: its body, `id` and `ok: true`. */
function okAnswerSchema<Shape extends z.core.$ZodShape>(body: z.ZodObject<Shape>) {
  return body.extend({ id: requestIdSchema.optional(), ok: z.literal(true) });
}

const okAnswerSchemas = {
  list_tools: okAnswerSchema(answerBodySchemas.list_tools),
  call_tool: okAnswerSchema(answerBodySchemas.call_tool),
  get_schema: okAnswerSchema(answerBodySchemas.get_schema),
  run_code: okAnswerSchema(answerBodySchemas.run_code),
  declare_tools: okAnswerSchema(answerBodySchemas.declare_tools),
  read_output: okAnswerSchema(answerBodySchemas.read_output),
  options: okAnswerSchema(answerBodySchemas.options),
  cancel: okAnswerSchema(answerBodySchemas.cancel),
  stats: okAnswerSchema(answerBodySchemas.stats),
  refresh: okAnswerSchema(answerBodySchemas.refresh),
  shutdown: okAnswerSchema(answerBodySchemas.shutdown),
} satisfies Record<DaemonOp, z.ZodType>;

/** Each op's whole answer: its successful answer or a failure, told apart by `ok`. */
const answerSchemas = {
  list_tools: z.discriminatedUnion("ok", [okAnswerSchemas.list_tools, errorAnswerSchema]),
  call_tool: z.discriminatedUnion("ok", [okAnswerSchemas.call_tool, errorAnswerSchema]),
  get_schema: z.discriminatedUnion("ok", [okAnswerSchemas.get_schema, errorAnswerSchema]),
  run_code: z.discriminatedUnion("ok", [okAnswerSchemas.run_code, errorAnswerSchema]),
  declare_tools: z.discriminatedUnion("ok", [okAnswerSchemas.declare_tools, errorAnswerSchema]),
  read_output: z.discriminatedUnion("ok", [okAnswerSchemas.read_output, errorAnswerSchema]),
  options: z.discriminatedUnion("ok", [okAnswerSchemas.options, errorAnswerSchema]),
  cancel: z.discriminatedUnion("ok", [okAnswerSchemas.cancel, errorAnswerSchema]),
  stats: z.discriminatedUnion("ok", [okAnswerSchemas.stats, errorAnswerSchema]),
  refresh: z.discriminatedUnion("ok", [okAnswerSchemas.refresh, errorAnswerSchema]),
  shutdown: z.discriminatedUnion("ok", [okAnswerSchemas.shutdown, errorAnswerSchema]),
} satisfies Record<DaemonOp, z.ZodType>;

/** A successful answer to `op`. */
export type DaemonOkAnswer<Op extends DaemonOp = DaemonOp> = z.infer<(typeof okAnswerSchemas)[Op]>;

/** An answer line to `op`: its successful answer, or a failure. */
export type DaemonResponse<Op extends DaemonOp = DaemonOp> = DaemonOkAnswer<Op> | DaemonErrorAnswer;

/** The first look at an answer line: enough to match it to its request. */
export const answerEnvelopeSchema = z.looseObject({ id: requestIdSchema.optional(), ok: z.boolean() });

/** What {@link answerEnvelopeSchema} reads of an answer line. */
export type AnswerEnvelope = { id?: RequestId | undefined; ok: boolean };

/**
 * Reads an answer line's envelope (its `id` and `ok`), by hand when it is well-formed.
 *
 * @throws z.ZodError from {@link answerEnvelopeSchema} when it is not.
 */
export function readAnswerEnvelope(value: unknown): AnswerEnvelope {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const { id, ok } = value as Record<string, unknown>;
    if (typeof ok === "boolean" && isRequestIdOrAbsent(id)) return { id: id as RequestId | undefined, ok };
  }
  return answerEnvelopeSchema.parse(value);
}

/** The first five problems zod found in a request or answer, each with its field (or `root`). */
export function describeIssues(error: z.ZodError, root: string): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length > 0 ? i.path.join(".") : root}: ${i.message}`)
    .join("; ");
}

/**
 * Checks a parsed answer line against `op`'s answer schema.
 *
 * @throws AbridgeError DAEMON_BAD_RESPONSE naming the op and the first fields that were wrong.
 */
export function parseAnswer<Op extends DaemonOp>(op: Op, value: unknown): DaemonResponse<Op> {
  // A tool's result is handed to the caller as the line parsed it: walking and copying it with
  // zod cost more than the rest of the client's work on a call. Sound: the hand check accepts
  // only what the op's schema accepts (unknown members aside, which the schema would drop).
  if ((op === "call_tool" || op === "read_output") && isWellFormedResultAnswer(value)) return value as DaemonResponse<Op>;
  const parsed = answerSchemas[op].safeParse(value);
  if (!parsed.success) {
    const detail = describeIssues(parsed.error, "answer");
    throw new AbridgeError(ErrorCode.DAEMON_BAD_RESPONSE, `malformed answer from the daemon to ${op}: ${detail}`, { cause: parsed.error });
  }
  // Sound: the schema picked by `op` is the one `DaemonResponse<Op>` is inferred from (a generic
  // index does not let the compiler follow that).
  return parsed.data as DaemonResponse<Op>;
}

/** One answer as the line the daemon writes (newline included). */
export function answerLine(answer: DaemonResponse): string {
  return `${JSON.stringify(answer)}\n`;
}

/** Reads the `id` of a parsed line before validation, so even a rejected request gets it back. */
export function requestIdOf(value: unknown): RequestId | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const id = (value as Record<string, unknown>).id;
  // The same rules as `requestIdSchema`, checked by hand: this runs on every request line.
  return isRequestIdOrAbsent(id) ? (id as RequestId | undefined) : undefined;
}

/** A daemon address: `127.0.0.1:<port>` or `unix:<path>`. */
export type DaemonAddress = { kind: "tcp"; host: string; port: number } | { kind: "unix"; path: string };

/** Formats an address for the lockfile. */
export function formatAddress(address: DaemonAddress): string {
  return address.kind === "unix" ? `unix:${address.path}` : `${address.host}:${address.port}`;
}

/** Parses a lockfile address; undefined when malformed. */
export function parseAddress(text: string): DaemonAddress | undefined {
  if (text.startsWith("unix:")) {
    const path = text.slice("unix:".length);
    return path === "" ? undefined : { kind: "unix", path };
  }
  const colon = text.lastIndexOf(":");
  if (colon <= 0) return undefined;
  const port = Number(text.slice(colon + 1));
  if (!Number.isInteger(port) || port <= 0 || port > 65_535) return undefined;
  return { kind: "tcp", host: text.slice(0, colon), port };
}
