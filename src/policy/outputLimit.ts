import type { CallToolResult, JsonObject } from "../model/types.js";
import { isObject } from "../model/json.js";

/** `_meta` key that marks a result as third-party output, not abridge's own words. */
export const TRUST_META_KEY = "abridge/trust";
/** `_meta` key naming the server a result came from. */
export const SERVER_META_KEY = "abridge/server";
/** `_meta` key of the spill handle when a result was cut and kept. */
export const SPILL_META_KEY = "abridge/output-handle";
/** The value of {@link TRUST_META_KEY} on every forwarded tool result. */
export const UNTRUSTED_TOOL_OUTPUT = "untrusted-tool-output";

/** UTF-8 size of a string (counted, not encoded: every forwarded result is measured). */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/** The longest start of `text` within `maxBytes` UTF-8 bytes, never splitting a character. */
export function utf8Head(text: string, maxBytes: number): string {
  if (utf8Bytes(text) <= maxBytes) return text;
  const bytes = Buffer.from(text, "utf8");
  let end = Math.max(0, maxBytes);
  // A continuation byte (10xxxxxx) is inside a character: back off to where that character starts.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}

/** Decoded size of base64 text without decoding it (padding and whitespace discounted). */
export function base64DecodedBytes(data: string): number {
  const clean = data.replace(/[\s=]/g, "");
  return Math.floor((clean.length * 3) / 4);
}

/** UTF-8 size of a value's JSON text. */
function jsonBytes(value: unknown): number {
  return utf8Bytes(JSON.stringify(value) ?? "");
}

/**
 * The size a content block counts for: its JSON, every key included (`annotations`, `_meta`,
 * keys the spec does not know), since all of it reaches the client; except that a binary
 * payload (`image`/`audio` `data`, a resource `blob`) counts by its decoded bytes, not by its
 * base64 text, so `max_output_bytes` means the same for an image as for a file's bytes.
 */
export function blockBytes(block: unknown): number {
  if (!isObject(block)) return jsonBytes(block);
  if ((block.type === "image" || block.type === "audio") && typeof block.data === "string") {
    return base64DecodedBytes(block.data) + jsonBytes({ ...block, data: "" });
  }
  if (block.type === "resource" && isObject(block.resource) && typeof block.resource.blob === "string") {
    return base64DecodedBytes(block.resource.blob) + jsonBytes({ ...block, resource: { ...block.resource, blob: "" } });
  }
  return jsonBytes(block);
}

/** `_meta` keys abridge writes itself: its own words, not upstream output, so never counted or cut. */
const OWN_META_KEYS: ReadonlySet<string> = new Set([TRUST_META_KEY, SERVER_META_KEY, SPILL_META_KEY]);

/** One piece of a result besides its content: a top-level key, or one key of the upstream's `_meta`. */
interface RestEntry {
  key: string;
  /** True for a key inside `_meta`. */
  inMeta: boolean;
  value: unknown;
  /** Size of `"key":value`. */
  bytes: number;
}

/** Everything of a result except `content` and abridge's own `_meta` keys, piece by piece. */
function restEntries(result: CallToolResult): RestEntry[] {
  const entries: RestEntry[] = [];
  for (const [key, value] of Object.entries(result)) {
    if (key === "content") continue;
    if (key === "_meta" && isObject(value)) {
      for (const [metaKey, metaValue] of Object.entries(value)) {
        if (OWN_META_KEYS.has(metaKey)) continue;
        entries.push({ key: metaKey, inMeta: true, value: metaValue, bytes: jsonBytes(metaKey) + 1 + jsonBytes(metaValue) });
      }
      continue;
    }
    entries.push({ key, inMeta: false, value, bytes: jsonBytes(key) + 1 + jsonBytes(value) });
  }
  return entries;
}

/**
 * Total size of a result: its content blocks ({@link blockBytes}) plus everything else it carries
 * (`structuredContent`, the upstream's `_meta`, `isError`, unknown top-level keys) by its JSON.
 * Counting only the content would let an upstream pass anything through a field nobody measures.
 */
export function resultBytes(result: CallToolResult): number {
  const blocks = Array.isArray(result.content) ? result.content : [];
  let total = 0;
  for (const block of blocks) total += blockBytes(block);
  for (const entry of restEntries(result)) total += entry.bytes;
  return total;
}

/** Keys of each standard content block type that carry its content; the rest is decoration. */
const ESSENTIAL_BLOCK_KEYS: Record<string, readonly string[]> = {
  text: ["type", "text"],
  image: ["type", "data", "mimeType"],
  audio: ["type", "data", "mimeType"],
  resource: ["type", "resource"],
  resource_link: ["type", "uri", "name", "title", "description", "mimeType", "size"],
};

/** A block without its `annotations`, `_meta` and unknown keys, or `undefined` when it has none of those. */
function bareBlock(block: unknown): JsonObject | undefined {
  if (!isObject(block) || typeof block.type !== "string") return undefined;
  const essential = ESSENTIAL_BLOCK_KEYS[block.type];
  if (essential === undefined) return undefined;
  const bare: JsonObject = {};
  for (const key of essential) if (key in block) bare[key] = block[key];
  if (block.type === "resource" && isObject(block.resource)) {
    const { _meta: _resourceMeta, ...resource } = block.resource;
    bare.resource = resource;
  }
  return Object.keys(bare).length < Object.keys(block).length || bare.resource !== block.resource ? bare : undefined;
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
 * are kept whole (no image or JSON is ever cut in half); a block that fits only without its
 * decoration (`annotations`, `_meta`, unknown keys) is kept without it, so a small text with a
 * huge `annotations` field still reaches the model. `structuredContent` is dropped (it usually
 * repeats the text and has no boundary to cut at); the upstream's `_meta` keys and unknown
 * top-level keys are kept while they fit in what is left. A text block at the end says how much
 * was cut, what was dropped and, with spill, how to read the rest. A result within the limit is
 * returned as is.
 */
export function limitOutput(result: CallToolResult, options: OutputLimitOptions): LimitedOutput {
  const totalBytes = resultBytes(result);
  if (totalBytes <= options.maxBytes) return { result, cut: false, totalBytes, keptBytes: totalBytes };
  const blocks = Array.isArray(result.content) ? result.content : [];
  const kept: unknown[] = [];
  let keptBytes = 0;
  let stripped = 0;
  for (const block of blocks) {
    const size = blockBytes(block);
    if (keptBytes + size <= options.maxBytes) {
      kept.push(block);
      keptBytes += size;
      continue;
    }
    const bare = bareBlock(block);
    const bareSize = bare === undefined ? undefined : blockBytes(bare);
    if (bareSize === undefined || keptBytes + bareSize > options.maxBytes) break;
    kept.push(bare);
    keptBytes += bareSize;
    stripped += 1;
  }

  const limited: CallToolResult = {};
  const meta: JsonObject = {};
  const dropped: string[] = [];
  for (const entry of restEntries(result)) {
    const fits = entry.key !== "structuredContent" && keptBytes + entry.bytes <= options.maxBytes;
    // isError stays whatever it costs: dropping it would turn a failure into a success.
    if (fits || (!entry.inMeta && entry.key === "isError")) {
      if (entry.inMeta) meta[entry.key] = entry.value;
      else limited[entry.key] = entry.value;
      keptBytes += entry.bytes;
    } else {
      dropped.push(
        entry.inMeta ? `_meta ${JSON.stringify(entry.key)}` : entry.key === "structuredContent" ? "structuredContent" : `field ${JSON.stringify(entry.key)}`,
      );
    }
  }
  if (stripped > 0) dropped.push(`annotations and extra fields of ${stripped} block${stripped === 1 ? "" : "s"}`);
  const cutBytes = totalBytes - keptBytes;
  let marker =
    `[abridge: output cut: ${cutBytes} of ${totalBytes} bytes left out (limit ${options.maxBytes}); ` +
    `kept ${kept.length} of ${blocks.length} content blocks${dropped.length > 0 ? `; dropped ${dropped.join(", ")}` : ""}.`;
  if (options.spill) {
    const offset = options.spill.offsetOf(kept.length);
    marker += ` The whole output is kept: call read_output with {"handle":"${options.spill.handle}","offset":${offset}} to read on.]`;
  } else {
    marker += "]";
  }
  limited.content = [...kept, { type: "text", text: marker }];
  // abridge's own keys (trust marking) always stay: they are what makes the output safe to show.
  const ownMeta = isObject(result._meta) ? Object.entries(result._meta).filter(([key]) => OWN_META_KEYS.has(key)) : [];
  for (const [key, value] of ownMeta) meta[key] = value;
  if (options.spill) meta[SPILL_META_KEY] = options.spill.handle;
  if (Object.keys(meta).length > 0) limited._meta = meta;
  return { result: limited, cut: true, totalBytes, keptBytes };
}
