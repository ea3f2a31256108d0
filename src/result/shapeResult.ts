/**
 * Shapes a tool result for the model (`result_format`, `structured`): each text block whose whole
 * text is a JSON object or array goes through {@link shapeJsonTextDetailed}; images, audio,
 * resources, resource links and text that is not JSON are passed on untouched, and so is
 * `structuredContent` unless `structured = "text-only"` and a text block only repeats it. Pure
 * and total: whatever it is given (cycles included), it returns a result and never throws.
 */
import { isObject } from "../model/json.js";
import type { CallToolResult } from "../model/types.js";
import type { ResultFormat, StructuredMode } from "./resultFormat.js";
import { decodeShapedText, SHAPE_MAX_TEXT_CHARS, shapeJsonTextDetailed } from "./shapeJsonText.js";

/**
 * `_meta` key of a shaped result: the format and the indices of the content blocks rewritten, so
 * a client (or the round-trip test) knows which texts to decode.
 */
export const SHAPED_META_KEY = "abridge/shaped";
/** `_meta` key set when `structuredContent` was dropped because a text block repeated it. */
export const STRUCTURED_META_KEY = "abridge/structured";

/** What {@link SHAPED_META_KEY} holds. */
export interface ShapedMeta {
  format: ResultFormat;
  blocks: number[];
}

/** Options of {@link shapeResult}. */
export interface ShapeResultOptions {
  /** `text-only`: drop `structuredContent` when a text block only repeats it. Default `both`. */
  structured?: StructuredMode;
  /** Texts longer than this (UTF-16 code units) are passed on unshaped; default and cap {@link SHAPE_MAX_TEXT_CHARS}. */
  maxTextChars?: number;
}

/**
 * True when `text` says nothing but `structured`: the JSON of it, or of its one field (server-memory
 * writes `{"entities": [...]}` as the bare array), or the one string field itself
 * (server-filesystem's `{"content": "<the text>"}`).
 */
export function repeatsStructured(text: string, structured: unknown): boolean {
  if (!isObject(structured)) return false;
  const keys = Object.keys(structured);
  const only = keys.length === 1 ? structured[keys[0]!] : undefined;
  if (typeof only === "string") return only === text;
  const first = text.trimStart().charCodeAt(0);
  if (first !== 123 && first !== 91) return false;
  try {
    // The same serialization in the same key order; a cycle in `structured` throws and is no match.
    const written = JSON.stringify(JSON.parse(text));
    return written === JSON.stringify(structured) || (only !== undefined && written === JSON.stringify(only));
  } catch {
    return false;
  }
}

function textOf(block: unknown): string | undefined {
  return isObject(block) && block.type === "text" && typeof block.text === "string" ? block.text : undefined;
}

/**
 * `result` shaped by `format` and `options.structured`; the same object when nothing changes.
 * A `lean` result that left fields out ends with a text block saying how many.
 */
export function shapeResult(result: CallToolResult, format: ResultFormat, options: ShapeResultOptions = {}): CallToolResult {
  try {
    return shapeUnsafe(result, format, options.structured ?? "both", options.maxTextChars ?? SHAPE_MAX_TEXT_CHARS);
  } catch {
    // A getter that throws, a proxy, a frozen oddity: the result goes on as it came.
    return result;
  }
}

function shapeUnsafe(result: CallToolResult, format: ResultFormat, structured: StructuredMode, maxTextChars: number): CallToolResult {
  if (!isObject(result)) return result;
  const content = Array.isArray(result.content) ? result.content : undefined;
  const dropStructured =
    structured === "text-only" &&
    result.structuredContent !== undefined &&
    content?.some((block) => {
      const text = textOf(block);
      return text !== undefined && repeatsStructured(text, result.structuredContent);
    });
  if (format === "as-is" && !dropStructured) return result;

  let blocks: unknown[] | undefined;
  const shapedIndices: number[] = [];
  let dropped = 0;
  if (content !== undefined && format !== "as-is") {
    for (let i = 0; i < content.length; i++) {
      const block = content[i];
      const text = textOf(block);
      if (text === undefined) continue;
      const shaped = shapeJsonTextDetailed(text, format, maxTextChars);
      if (!shaped.changed) continue;
      blocks ??= content.slice();
      blocks[i] = { ...(block as object), text: shaped.text };
      shapedIndices.push(i);
      dropped += shaped.dropped;
    }
  }
  if (blocks === undefined && !dropStructured) return result;

  const out: CallToolResult = { ...result };
  if (blocks !== undefined) {
    if (dropped > 0) {
      blocks.push({ type: "text", text: `[abridge: result_format "lean": ${dropped} null or empty field${dropped === 1 ? "" : "s"} left out]` });
    }
    out.content = blocks;
  }
  const meta: Record<string, unknown> = isObject(result._meta) ? { ...result._meta } : {};
  if (shapedIndices.length > 0) meta[SHAPED_META_KEY] = { format, blocks: shapedIndices } satisfies ShapedMeta;
  if (dropStructured) {
    delete out.structuredContent;
    meta[STRUCTURED_META_KEY] = "text-only";
  }
  out._meta = meta;
  return out;
}

/**
 * The result a `compact` {@link shapeResult} was given, from what it returned: the blocks it
 * rewrote (named in `_meta`) decoded and written back as the JSON value they stood for (as
 * `JSON.stringify` writes it; the upstream's whitespace is not kept, its values are), and the
 * shaping's `_meta` keys removed. `structuredContent` dropped by `text-only` is not recovered.
 */
export function decodeResult(result: CallToolResult): CallToolResult {
  const meta = isObject(result._meta) ? result._meta : undefined;
  const shaped = meta?.[SHAPED_META_KEY];
  if (!isObject(shaped) || !Array.isArray(shaped.blocks) || !Array.isArray(result.content)) return result;
  const content = result.content.slice();
  for (const index of shaped.blocks) {
    if (typeof index !== "number") continue;
    const block = content[index];
    const text = textOf(block);
    if (text === undefined) continue;
    const value = decodeShapedText(text);
    if (value !== undefined) content[index] = { ...(block as object), text: JSON.stringify(value) };
  }
  const { [SHAPED_META_KEY]: _shaped, ...restMeta } = meta ?? {};
  const out: CallToolResult = { ...result, content };
  if (Object.keys(restMeta).length > 0) out._meta = restMeta;
  else delete out._meta;
  return out;
}
