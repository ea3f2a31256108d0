import { isObject } from "../model/json.js";
import type { CallToolResult, JsonObject } from "../model/types.js";
import { limitOutput } from "./outputLimit.js";

/**
 * `max_output_bytes` for what is not a tool result: a `resources/read` result (`contents`) and a
 * `prompts/get` result (`messages`). Both are measured and cut as a tool result's content is
 * ({@link limitOutput}: whole items only, binary counted by its decoded bytes), by viewing each
 * resource content as an embedded resource block and each message by its content block. A cut
 * result ends with the same marker, as a text resource content or as a user message; nothing is
 * spilled (a resource can be read again, and `read_output` pages tool results).
 */

/** Cuts a `resources/read` result over `maxBytes`; a result within the limit is returned as is. */
export function limitResourceResult(result: JsonObject, uri: string, maxBytes: number): JsonObject {
  const { contents, ...rest } = result;
  const items = Array.isArray(contents) ? contents : [];
  const asCall: CallToolResult = { ...rest, content: items.map((item) => ({ type: "resource", resource: item })) };
  const limited = limitOutput(asCall, { maxBytes });
  if (!limited.cut) return result;
  const { content, ...limitedRest } = limited.result;
  const blocks = content ?? [];
  const kept = blocks.slice(0, -1).map((block) => (isObject(block) && isObject(block.resource) ? block.resource : block));
  const marker = markerText(blocks.at(-1));
  return { ...limitedRest, contents: [...kept, { uri, mimeType: "text/plain", text: marker }] };
}

/** Cuts a `prompts/get` result over `maxBytes`; a result within the limit is returned as is. */
export function limitPromptResult(result: JsonObject, maxBytes: number): JsonObject {
  const { messages, ...rest } = result;
  const items = Array.isArray(messages) ? messages : [];
  const asCall: CallToolResult = { ...rest, content: items.map((m) => (isObject(m) ? m.content : m)) };
  const limited = limitOutput(asCall, { maxBytes });
  if (!limited.cut) return result;
  const { content, ...limitedRest } = limited.result;
  const blocks = content ?? [];
  // Kept blocks are the leading messages' (maybe without decoration): each goes back to its role.
  const kept = blocks.slice(0, -1).map((block, i) => {
    const message = items[i];
    return isObject(message) ? { ...message, content: block } : message;
  });
  return { ...limitedRest, messages: [...kept, { role: "user", content: { type: "text", text: markerText(blocks.at(-1)) } }] };
}

function markerText(block: unknown): string {
  return isObject(block) && typeof block.text === "string" ? block.text : "[abridge: output cut]";
}
