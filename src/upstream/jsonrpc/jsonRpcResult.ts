import { isObject } from "../../model/json.js";
import type { CallToolResult } from "../../model/types.js";
import type { RpcOutcome } from "./jsonRpcSocket.js";

/** `_meta` key of a tool error made from a backend's JSON-RPC error: `{code, message, data?}` as sent. */
export const RPC_ERROR_META_KEY = "abridge/jsonrpc-error";

/**
 * A backend's answer as an MCP tool result. A result becomes one text block: a string as it is,
 * anything else (`null` included) as compact JSON, so the model always sees what came back; a
 * JSON object is also `structuredContent`. A JSON-RPC error becomes a tool error (`isError: true`)
 * whose text carries the code and message (and `data`, as JSON, when sent), with the error object
 * under `_meta["abridge/jsonrpc-error"]` for programs: the backend answered, and a model can read
 * why and try otherwise, which an MCP protocol error would hide from it.
 */
export function toolResultOf(outcome: RpcOutcome): CallToolResult {
  if (outcome.ok) {
    const { result } = outcome;
    const text = typeof result === "string" ? result : (JSON.stringify(result) ?? "null");
    return {
      content: [{ type: "text", text }],
      ...(isObject(result) ? { structuredContent: result } : {}),
    };
  }
  const { code, message, data } = outcome.error;
  const dataLine = data === undefined ? "" : `\ndata: ${JSON.stringify(data)}`;
  return {
    isError: true,
    content: [{ type: "text", text: `JSON-RPC error ${code}: ${message}${dataLine}` }],
    _meta: { [RPC_ERROR_META_KEY]: { ...outcome.error } },
  };
}
