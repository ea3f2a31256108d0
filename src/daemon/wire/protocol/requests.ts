import { z } from "zod";
import { MODES } from "../../../config/schema.js";
import { isObject } from "../../../model/json.js";

/**
 * The requests of the daemon's protocol: their zod schemas and, beside the schema of the message
 * every tool call sends (`call_tool`), the hand-written check that stands in for it on that path.
 * A zod parse of a call cost more than the rest of the daemon's own work on it (it walks and
 * copies the arguments, which nothing in between needs copied). Each hand check accepts a strict
 * subset of what its schema accepts and takes the value as it is; anything it does not accept
 * goes to the schema, so a rejected message gets exactly the schema's error.
 * `test/daemon/wire/protocolChecks.test.ts` holds each pair to agreement.
 */

/** Longest call timeout a request may ask for (one day). */
export const MAX_CALL_TIMEOUT_MS = 24 * 3_600_000;
/** Longest string `id`. */
export const MAX_ID_CHARS = 200;
/** Longest server or tool name. */
export const MAX_NAME_CHARS = 1000;

/** An `id` the client may attach to a request; echoed back in its response. */
export const requestIdSchema = z.union([z.string().max(MAX_ID_CHARS), z.number().finite(), z.null()]);
export type RequestId = z.infer<typeof requestIdSchema>;

/** True when `value` is a valid request or answer `id` (or absent): {@link requestIdSchema}, optional, by hand. */
export function isRequestIdOrAbsent(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value === "string") return value.length <= MAX_ID_CHARS;
  return typeof value === "number" && Number.isFinite(value);
}

/** Reads the `id` of a parsed line before validation, so even a rejected request gets it back. */
export function requestIdOf(value: unknown): RequestId | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const id = (value as Record<string, unknown>).id;
  // The same rules as `requestIdSchema`, checked by hand: this runs on every request line.
  return isRequestIdOrAbsent(id) ? (id as RequestId | undefined) : undefined;
}

const common = {
  /** The token from the lockfile: proves the caller can read the 0600 file. */
  token: z.string(),
  id: requestIdSchema.optional(),
};
const name = z.string().min(1).max(MAX_NAME_CHARS);
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

const CALL_KEYS = new Set(["op", "token", "id", "server", "tool", "args", "timeout_ms", "mode"]);
const MODE_NAMES: ReadonlySet<unknown> = new Set(MODES);

/** A record as `z.record` takes it: a plain object (JSON.parse makes only those). */
function isPlainRecord(value: unknown): boolean {
  if (!isObject(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function isName(value: unknown): value is string {
  return typeof value === "string" && value.length >= 1 && value.length <= MAX_NAME_CHARS;
}

/**
 * True when `value` is a well-formed `call_tool` request, by the same rules as the `call_tool`
 * member of {@link daemonRequestSchema} (strict: no member besides the known ones). False sends
 * it to the schema.
 */
export function isWellFormedCall(value: unknown): boolean {
  if (!isObject(value) || value.op !== "call_tool") return false;
  for (const key in value) if (!CALL_KEYS.has(key)) return false;
  if (typeof value.token !== "string" || !isName(value.server) || !isName(value.tool)) return false;
  if (!isRequestIdOrAbsent(value.id)) return false;
  if (value.args !== undefined && !isPlainRecord(value.args)) return false;
  const timeout = value.timeout_ms;
  if (timeout !== undefined && !(typeof timeout === "number" && Number.isSafeInteger(timeout) && timeout > 0 && timeout <= MAX_CALL_TIMEOUT_MS)) return false;
  return value.mode === undefined || MODE_NAMES.has(value.mode);
}

/**
 * Validates a parsed request line. A `call_tool` request, the one every tool call sends, is
 * checked by hand ({@link isWellFormedCall}) and taken as it is; every other request, and any call
 * the hand check does not accept, goes through {@link daemonRequestSchema}, whose issues are returned
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

/** The first five problems zod found in a request or answer, each with its field (or `root`). */
export function describeIssues(error: z.ZodError, root: string): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length > 0 ? i.path.join(".") : root}: ${i.message}`)
    .join("; ");
}
