import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ErrorCode as RpcCode,
  JSONRPCRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
} from "@modelcontextprotocol/sdk/types.js";
import { isObject } from "../model/json.js";
import type { JsonObject } from "../model/types.js";
import type { ToolCallParams } from "./mcpFrontend.js";

/**
 * The SDK's checks of a tools/call and, beside each, the hand-written check the stdio fast path
 * (fastToolCalls.ts) uses in its place. The SDK schemas stay the definition: each hand check takes
 * only what its schema accepts and leaves every shape it does not serve to the SDK path, and
 * `test/serve/toolCallChecks.test.ts` holds each pair to agreement.
 */

/**
 * What the SDK checks of a tools/call request, in its order: the transport reads the line as a
 * JSON-RPC request ({@link JSONRPCRequestSchema}), then the server's handler parses it as a
 * `CallToolRequest` ({@link CallToolRequestSchema}). {@link plainToolCall} stands in for both.
 */
export const SDK_TOOL_CALL_SCHEMAS = [JSONRPCRequestSchema, CallToolRequestSchema] as const;

/** The SDK's schema of a tools/call result; {@link isPlainTextResult} stands in for it. */
export { CallToolResultSchema };

/** A JSON-RPC request id as the SDK reads it: a string or a safe integer. */
export type RequestId = string | number;

/** Keys a JSON-RPC request may carry for the fast path to take it. */
const REQUEST_KEYS = new Set(["jsonrpc", "id", "method", "params"]);
/** Keys of tools/call params the fast path understands; anything else (e.g. `task`) goes to the SDK. */
const PARAM_KEYS = new Set(["name", "arguments", "_meta"]);

/** An id or progress token as the SDK's schemas take it: a string or a safe integer (zod's `int`). */
function isStringOrInteger(value: unknown): value is string | number {
  return typeof value === "string" || (typeof value === "number" && Number.isSafeInteger(value));
}

/**
 * The id and params of `message` when it is a tools/call of the plain shape the fast path takes,
 * else undefined. The checks are those of {@link SDK_TOOL_CALL_SCHEMAS} for that shape: JSON-RPC
 * 2.0, a string or integer id, no other request member, a string name, arguments an object when
 * present, `_meta` holding at most a string or integer progress token. Other params or `_meta`
 * keys (a task, a related task) are the SDK's.
 */
export function plainToolCall(message: unknown): { id: RequestId; params: ToolCallParams } | undefined {
  if (!isObject(message) || message.jsonrpc !== "2.0" || message.method !== "tools/call") return undefined;
  const id = message.id;
  if (!isStringOrInteger(id)) return undefined;
  for (const key in message) if (!REQUEST_KEYS.has(key)) return undefined;
  const params = message.params;
  if (!isObject(params) || typeof params.name !== "string") return undefined;
  for (const key in params) if (!PARAM_KEYS.has(key)) return undefined;
  const args = params.arguments;
  if (args !== undefined && !isObject(args)) return undefined;
  const meta = params._meta;
  if (meta !== undefined) {
    if (!isObject(meta)) return undefined;
    for (const key in meta) if (key !== "progressToken") return undefined;
    const token = meta.progressToken;
    if (token !== undefined && !isStringOrInteger(token)) return undefined;
  }
  return { id, params: params as unknown as ToolCallParams };
}

/**
 * True when `result` is of the common form {@link CallToolResultSchema} returns unchanged: text
 * blocks only, an optional boolean `isError`, a `_meta` of untyped keys, no structured content.
 * False sends the result through the schema.
 */
export function isPlainTextResult(result: JsonObject): boolean {
  for (const key in result) if (key !== "content" && key !== "isError" && key !== "_meta") return false;
  if (result.isError !== undefined && typeof result.isError !== "boolean") return false;
  // `_meta` is a loose object in the schema: kept as is, except the two keys it gives a type and
  // an own `__proto__` key (from JSON.parse), which zod drops.
  const meta = result._meta;
  if (meta !== undefined) {
    if (!isObject(meta)) return false;
    for (const key in meta) if (key === "progressToken" || key === RELATED_TASK_META_KEY || key === "__proto__") return false;
  }
  const content = result.content;
  if (!Array.isArray(content)) return false;
  for (const block of content) {
    if (!isObject(block) || block.type !== "text" || typeof block.text !== "string") return false;
    for (const key in block) if (key !== "type" && key !== "text") return false;
  }
  return true;
}

/**
 * The result as the SDK server would send it: the plain text form passed without a parse,
 * anything else through {@link CallToolResultSchema}, which may normalize it or refuse it as the
 * SDK path does (-32602 "Invalid tools/call result").
 */
export function checkedResult(result: JsonObject): { result: JsonObject } | { error: McpError } {
  if (isPlainTextResult(result)) return { result };
  const parsed = CallToolResultSchema.safeParse(result);
  if (parsed.success) return { result: parsed.data as JsonObject };
  return { error: new McpError(RpcCode.InvalidParams, `Invalid tools/call result: ${parsed.error.message}`) };
}
