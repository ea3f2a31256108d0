import { z } from "zod";
import { MODES } from "../../config/schema.js";
import { codeLimitsSchema, describeIssues, runResultSchema, toolResultSchema } from "../../daemon/wire/protocol.js";
import { messageOf } from "../../model/errors.js";

/**
 * The message-bus protocol (docs/fleet.md, "Bus worker (NATS)"): JSON messages on NATS subjects, shared by
 * the worker (`abridge bus`) and the host-side `BusClient`, so both parse with one definition.
 * This module imports no worker code, so the library's client can use it alone.
 */

/**
 * The shared subjects every worker also listens on, for requesters that name the agent only in
 * the body. Anyone allowed to subscribe to them reads every agent's calls: a bus with
 * permissions grants them to nobody and uses the per-agent subjects ({@link invokeSubject},
 * {@link refreshSubject}), which a permission can give to one agent's workers alone.
 */
export const BUS_SUBJECTS = {
  /** Tool calls of every agent; each agent's workers share them in one queue group. */
  invoke: "tool.invoke.mcp",
  /** Asks the workers (of one agent, or all) to re-list and publish their tools. */
  refresh: "tool.meta.mcp.refresh",
} as const;

/** Where calls to `agent` go: only its workers listen, in their queue group. */
export function invokeSubject(agent: string): string {
  return `${BUS_SUBJECTS.invoke}.${agent}`;
}

/** Where refresh requests for `agent` go: every worker of the agent listens (no queue group). */
export function refreshSubject(agent: string): string {
  return `${BUS_SUBJECTS.refresh}.${agent}`;
}

/** Where the workers of `agent` publish their tool list. */
export function metaSubject(agent: string): string {
  return `tool.meta.mcp.${agent}`;
}

/** Where programs for `agent` go (`run_code` over the bus): only its workers listen, in their queue group. */
export function runSubject(agent: string): string {
  return `tool.run.mcp.${agent}`;
}

/** Where the results of calls that came without a reply subject are published. */
export function resultSubject(agent: string): string {
  return `tool.result.${agent}`;
}

/**
 * The queue group of an agent's workers on {@link invokeSubject} and {@link BUS_SUBJECTS.invoke}:
 * one group per agent, so a call reaches exactly one worker of its agent. On the shared subject
 * every agent's group sees every call (a worker drops calls for other agents without a word).
 */
export function queueGroup(agent: string): string {
  return `abridge-${agent}`;
}

/** The header every bus message carries, saying how far its content may be trusted. */
export const CONTENT_TRUST_HEADER = "Content-Trust";

/**
 * Values of {@link CONTENT_TRUST_HEADER}: a request is what a host chose to send; everything a
 * worker sends (results, errors, tool lists) carries text made by upstream servers and is
 * untrusted. A worker refuses a request without `tool-request`, so an output that was fed back
 * onto a request subject is never run.
 */
export const CONTENT_TRUST = { request: "tool-request", output: "tool-output" } as const;

/** The worker's per-call timeout unless `--timeout-ms` says otherwise. */
export const DEFAULT_WORKER_TIMEOUT_MS = 30_000;
/** The requester's own timeout (BusClient) unless the call says otherwise: above the worker's, so the worker's typed error arrives first. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/** Agent names: one subject token, so no dots, spaces or wildcards. */
const AGENT_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Why `name` cannot be an agent name, or undefined when it can. */
export function agentNameProblem(name: string): string | undefined {
  if (!AGENT_PATTERN.test(name)) return `expected 1 to 64 letters, digits, "_" or "-" (one NATS subject token), got ${JSON.stringify(name)}`;
  // tool.meta.mcp.refresh is the refresh subject, so an agent of that name could not publish its tools.
  if (name === "refresh") return `"refresh" is reserved (${BUS_SUBJECTS.refresh} is the refresh subject)`;
  return undefined;
}

const agentSchema = z.string().superRefine((value, ctx) => {
  const problem = agentNameProblem(value);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
});

/** The id a requester gives a call, echoed in its result so results on `tool.result.<agent>` can be matched. */
export const busIdSchema = z.union([z.string().min(1).max(200), z.number().finite()]);
export type BusId = z.infer<typeof busIdSchema>;

/** A tool call. Strict: a typo (`args` for `arguments`) is reported instead of calling with no arguments. */
export const invokeRequestSchema = z.strictObject({
  id: busIdSchema,
  agent: agentSchema,
  /** The tool's name as the agent's tool list shows it (meta-tools included). */
  tool: z.string().min(1).max(1000),
  arguments: z.record(z.string(), z.unknown()).optional(),
});
export type InvokeRequest = z.infer<typeof invokeRequestSchema>;

/** A program to run against the agent's tools (code mode's `run_code`). Strict, like a call. */
export const runRequestSchema = z.strictObject({
  id: busIdSchema,
  agent: agentSchema,
  /** The body of an async function: one global per server, a method per tool. */
  code: z.string(),
  /** Limits of this run, each over the worker's config `[code]` value. */
  limits: codeLimitsSchema.optional(),
});
export type RunRequest = z.infer<typeof runRequestSchema>;

/** A refresh request; an empty body means every agent, re-listing. */
export const refreshRequestSchema = z.strictObject({
  /** Only this agent's workers answer; the others ignore the request. */
  agent: agentSchema.optional(),
  id: busIdSchema.optional(),
  /** false: publish the tool list as it is, without asking the upstreams again (default true). */
  relist: z.boolean().optional(),
});
export type RefreshRequest = z.infer<typeof refreshRequestSchema>;

/**
 * Codes of bus errors: a family of their own (the bus is an edge), each with a fixed meaning.
 * `retryable` says whether the same call may succeed on another try (or another worker).
 */
export const BUS_ERROR_CODES = [
  /** The message was not JSON, not of the schema, or lacked the trust header. */
  "bad_request",
  /** No tool of that name in the agent's catalog. */
  "tool_not_found",
  /** The arguments are not what the tool takes (when the worker rejects them before forwarding). */
  "invalid_arguments",
  /** The agent's policy does not allow the tool (allow/deny). */
  "refused",
  /** The call did not finish within the worker's timeout (or, at the requester, its own). */
  "timeout",
  /** The upstream serving the tool is not connected (starting, exited, failed), or no worker answered. */
  "unavailable",
  /** The worker was stopping and gave up on the call. */
  "shutting_down",
  /** The worker is at its limit of calls running and waiting; the call was not run. */
  "busy",
  /** The answer would exceed the NATS server's max_payload. */
  "too_large",
  /** The upstream failed the request (a JSON-RPC error, not a tool error result). */
  "upstream_error",
  /** A program failed: an uncaught exception or a syntax error (the answer's `run` says where). */
  "code_error",
  /** Anything else; the message says what. */
  "internal",
] as const;
export type BusErrorCode = (typeof BUS_ERROR_CODES)[number];

/** A typed bus error. `abridge_code` is the worker's own error code (ErrorCode) when there was one. */
export const busErrorSchema = z.object({
  code: z.enum(BUS_ERROR_CODES),
  message: z.string(),
  retryable: z.boolean(),
  abridge_code: z.string().optional(),
});
export type BusError = z.infer<typeof busErrorSchema>;

const resultCommon = {
  /** The request's id; null when the request was too malformed to read one. */
  id: busIdSchema.nullable(),
  agent: z.string(),
  /** The worker that answered (`host/pid/n`). */
  worker: z.string(),
  tool: z.string().optional(),
};

/** The answer to a call: the tool's result (a tool error is a result with `isError`), or a bus error. */
export const invokeResultSchema = z.discriminatedUnion("ok", [
  z.object({ ...resultCommon, ok: z.literal(true), result: toolResultSchema }),
  z.object({ ...resultCommon, ok: z.literal(false), error: busErrorSchema }),
]);
export type InvokeResult = z.infer<typeof invokeResultSchema>;

/**
 * The answer to a program: `ok` when it ran and succeeded. A program that ran and failed is
 * `ok: false` with the bus code of its failure beside `run` (the runtime's result) and `answer`
 * (the text a model reads); a run that did not happen (malformed, busy, stopping) has `error` only.
 */
export const runResultMessageSchema = z.discriminatedUnion("ok", [
  z.object({ ...resultCommon, ok: z.literal(true), run: runResultSchema, answer: toolResultSchema }),
  z.object({ ...resultCommon, ok: z.literal(false), error: busErrorSchema, run: runResultSchema.optional(), answer: toolResultSchema.optional() }),
]);
export type RunResultMessage = z.infer<typeof runResultMessageSchema>;

/** One tool of a published list, as `tools/list` shows it in the worker's mode. */
export const busToolSchema = z.looseObject({
  name: z.string(),
  description: z.string().optional(),
  inputSchema: z.record(z.string(), z.unknown()),
});

/** Why a worker published its tool list. */
export const DISCOVERY_REASONS = ["start", "refresh", "config", "list_changed", "reconnect"] as const;

/** A worker's tool list, published on `tool.meta.mcp.<agent>` (and the answer to a refresh request). */
export const discoveryMessageSchema = z.object({
  agent: z.string(),
  worker: z.string(),
  mode: z.enum(MODES),
  reason: z.enum(DISCOVERY_REASONS),
  /** The refresh request's id, when this answers one. */
  id: busIdSchema.optional(),
  /** Equal digests, equal lists: a subscriber can skip a list it already has. */
  digest: z.string(),
  tools: z.array(busToolSchema),
});
export type DiscoveryMessage = z.infer<typeof discoveryMessageSchema>;

/** An error answer to a refresh request (malformed, or the re-list failed). */
export const refreshErrorSchema = z.object({
  agent: z.string(),
  worker: z.string(),
  id: busIdSchema.nullable(),
  ok: z.literal(false),
  error: busErrorSchema,
});
export type RefreshError = z.infer<typeof refreshErrorSchema>;

/** What a message's body is once read: the parsed JSON, or why it is not JSON. */
export function readJson(data: Uint8Array): { ok: true; value: unknown } | { ok: false; problem: string } {
  const text = new TextDecoder("utf-8", { fatal: false }).decode(data);
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, problem: `not JSON: ${messageOf(err)}` };
  }
}

/** Checks `value` against `schema`; the problem names the first wrong fields. */
export function checkMessage<T>(schema: z.ZodType<T>, value: unknown, root: string): { ok: true; value: T } | { ok: false; problem: string } {
  const parsed = schema.safeParse(value);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, problem: describeIssues(parsed.error, root) };
}
