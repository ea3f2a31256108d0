import { MODES } from "../../config/schema.js";

/**
 * Hand-written checks of the two messages every tool call carries: the `call_tool` request and
 * its answer. A zod parse of them cost more than the rest of the daemon's own work on a call
 * (it walks and copies the arguments and the result, which nothing in between needs copied).
 * Each check accepts a strict subset of what the protocol's zod schema accepts and takes the
 * value as it is; anything it does not accept goes to the zod schema, so a rejected message gets
 * exactly the schema's error code and message.
 */

/** Longest call timeout a request may ask for (one day), as the schema bounds it. */
export const MAX_CALL_TIMEOUT_MS = 24 * 3_600_000;
/** Longest string `id`, as the schema bounds it. */
export const MAX_ID_CHARS = 200;
/** Longest server or tool name, as the schema bounds it. */
export const MAX_NAME_CHARS = 1000;

const CALL_KEYS = new Set(["op", "token", "id", "server", "tool", "args", "timeout_ms", "mode"]);
const MODE_NAMES: ReadonlySet<unknown> = new Set(MODES);

/** A JSON object parsed from a line (not an array, not null). */
function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A record as `z.record` takes it: a plain object (JSON.parse makes only those). */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (!isRecord(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** True when `value` is a valid request or answer `id` (or absent). */
export function isRequestIdOrAbsent(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value === "string") return value.length <= MAX_ID_CHARS;
  return typeof value === "number" && Number.isFinite(value);
}

function isName(value: unknown): value is string {
  return typeof value === "string" && value.length >= 1 && value.length <= MAX_NAME_CHARS;
}

/**
 * True when `value` is a well-formed `call_tool` request, by the same rules as the protocol's
 * strict schema (no member besides the known ones). False sends it to the schema.
 */
export function isWellFormedCall(value: unknown): boolean {
  if (!isRecord(value) || value.op !== "call_tool") return false;
  for (const key in value) if (!CALL_KEYS.has(key)) return false;
  if (typeof value.token !== "string" || !isName(value.server) || !isName(value.tool)) return false;
  if (!isRequestIdOrAbsent(value.id)) return false;
  if (value.args !== undefined && !isPlainRecord(value.args)) return false;
  const timeout = value.timeout_ms;
  if (timeout !== undefined && !(typeof timeout === "number" && Number.isSafeInteger(timeout) && timeout > 0 && timeout <= MAX_CALL_TIMEOUT_MS)) return false;
  return value.mode === undefined || MODE_NAMES.has(value.mode);
}

/**
 * True when `value` is a well-formed successful `call_tool` (or `read_output`) answer: `ok: true`,
 * a valid `id` and an object `result` whose `content` (if any) is an array and whose `isError`
 * (if any) is a boolean. Other members pass, as the schema's open objects let them.
 */
export function isWellFormedResultAnswer(value: unknown): boolean {
  if (!isRecord(value) || value.ok !== true || !isRequestIdOrAbsent(value.id)) return false;
  const result = value.result;
  if (!isRecord(result)) return false;
  if (result.content !== undefined && !Array.isArray(result.content)) return false;
  return result.isError === undefined || typeof result.isError === "boolean";
}
