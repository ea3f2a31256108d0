/** What a program gets back from a tool call: the value a tool result stands for. */
import { isObject } from "../../model/json.js";

/**
 * The value of a successful tool result, as a program sees it:
 *
 * - `structuredContent` when the result has it (not null);
 * - else a single text block: its text parsed as JSON when it parses (`"42"` is 42, `"{...}"` an
 *   object), else the text itself;
 * - else no content: null;
 * - else the content blocks, as they came (an array of plain objects: images, resources, several
 *   text blocks).
 *
 * A result with `isError: true` is the host's to throw as an error with a code and message; this
 * reads only what a successful call returned. The value is copied as JSON when it enters a program,
 * so nothing of the host's objects is shared.
 */
export function toolResultValue(result: { content?: unknown; structuredContent?: unknown }): unknown {
  if (result.structuredContent !== undefined && result.structuredContent !== null) return result.structuredContent;
  const content = Array.isArray(result.content) ? (result.content as unknown[]) : [];
  if (content.length === 0) return null;
  const only = content[0];
  if (content.length === 1 && isObject(only) && only.type === "text" && typeof only.text === "string") {
    try {
      return JSON.parse(only.text) as unknown;
    } catch {
      return only.text;
    }
  }
  return content;
}
