import type { CallToolResult, JsonObject } from "../upstream/types.js";

/** `_meta` key that marks a result as third-party output, not abridge's own words. */
export const TRUST_META_KEY = "abridge/trust";
/** `_meta` key naming the server a result came from. */
export const SERVER_META_KEY = "abridge/server";
/** `_meta` key of the spill handle when a result was cut and kept. */
export const SPILL_META_KEY = "abridge/output-handle";
/** The value of {@link TRUST_META_KEY} on every forwarded tool result. */
export const UNTRUSTED_TOOL_OUTPUT = "untrusted-tool-output";

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const encoder = new TextEncoder();

/** UTF-8 size of a string. */
export function utf8Bytes(text: string): number {
  return encoder.encode(text).length;
}

/** Decoded size of base64 text without decoding it (padding and whitespace discounted). */
export function base64DecodedBytes(data: string): number {
  const clean = data.replace(/[\s=]/g, "");
  return Math.floor((clean.length * 3) / 4);
}

/**
 * The size a content block counts for: text by its UTF-8 bytes, binary (`image`, `audio`, a
 * resource `blob`) by its decoded bytes, anything else by its JSON.
 */
export function blockBytes(block: unknown): number {
  if (!isObject(block)) return utf8Bytes(JSON.stringify(block) ?? "");
  if (block.type === "text" && typeof block.text === "string") return utf8Bytes(block.text);
  if ((block.type === "image" || block.type === "audio") && typeof block.data === "string") return base64DecodedBytes(block.data);
  if (block.type === "resource" && isObject(block.resource)) {
    const resource = block.resource;
    if (typeof resource.text === "string") return utf8Bytes(resource.text);
    if (typeof resource.blob === "string") return base64DecodedBytes(resource.blob);
  }
  return utf8Bytes(JSON.stringify(block) ?? "");
}

/** Total size of a result: its content blocks plus its `structuredContent` as JSON. */
export function resultBytes(result: CallToolResult): number {
  const blocks = Array.isArray(result.content) ? result.content : [];
  let total = 0;
  for (const block of blocks) total += blockBytes(block);
  if (result.structuredContent !== undefined) total += utf8Bytes(JSON.stringify(result.structuredContent) ?? "");
  return total;
}

/**
 * Adds abridge's trust marking to a result's `_meta`, keeping the upstream's own keys; abridge's
 * keys are written last, so an upstream cannot pass its output off as trusted.
 */
export function markUntrusted(result: CallToolResult, server: string): CallToolResult {
  const upstreamMeta = isObject(result._meta) ? result._meta : {};
  return { ...result, _meta: { ...upstreamMeta, [TRUST_META_KEY]: UNTRUSTED_TOOL_OUTPUT, [SERVER_META_KEY]: server } };
}

/** Options of {@link limitOutput}. */
export interface OutputLimitOptions {
  /** Largest result passed on whole (`max_output_bytes`). */
  maxBytes: number;
  /**
   * Set when the whole result was kept (`spill = true`): the handle and the offset of the
   * first dropped block in the spilled text, for the marker.
   */
  spill?: { handle: string; offsetOf: (blockIndex: number) => number };
}

/** What {@link limitOutput} did. */
export interface LimitedOutput {
  result: CallToolResult;
  cut: boolean;
  totalBytes: number;
  keptBytes: number;
}

/**
 * Cuts a result larger than `maxBytes` at a content-block boundary: the leading blocks that fit
 * are kept whole (no image or JSON is ever cut in half), `structuredContent` is dropped (it
 * usually repeats the text and has no boundary to cut at), and a text block at the end says how
 * much was cut and, with spill, how to read the rest. A result within the limit is returned as is.
 */
export function limitOutput(result: CallToolResult, options: OutputLimitOptions): LimitedOutput {
  const totalBytes = resultBytes(result);
  if (totalBytes <= options.maxBytes) return { result, cut: false, totalBytes, keptBytes: totalBytes };
  const blocks = Array.isArray(result.content) ? result.content : [];
  const kept: unknown[] = [];
  let keptBytes = 0;
  for (const block of blocks) {
    const size = blockBytes(block);
    if (keptBytes + size > options.maxBytes) break;
    kept.push(block);
    keptBytes += size;
  }
  const cutBytes = totalBytes - keptBytes;
  let marker =
    `[abridge: output cut: ${cutBytes} of ${totalBytes} bytes left out (limit ${options.maxBytes}); ` +
    `kept ${kept.length} of ${blocks.length} content blocks${result.structuredContent !== undefined ? ", structuredContent dropped" : ""}.`;
  if (options.spill) {
    const offset = options.spill.offsetOf(kept.length);
    marker += ` The whole output is kept: call read_output with {"handle":"${options.spill.handle}","offset":${offset}} to read on.]`;
  } else {
    marker += "]";
  }
  const { structuredContent: _dropped, ...rest } = result;
  const limited: CallToolResult = { ...rest, content: [...kept, { type: "text", text: marker }] };
  if (options.spill) {
    const meta = isObject(limited._meta) ? limited._meta : {};
    limited._meta = { ...meta, [SPILL_META_KEY]: options.spill.handle };
  }
  return { result: limited, cut: true, totalBytes, keptBytes };
}
