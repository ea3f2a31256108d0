import type { CacheEntry } from "./cacheEntry.js";

/** `{"key":"`: how every line {@link formatCacheLine} writes begins. */
const PREFIX = Buffer.from('{"key":"', "latin1");
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;

/**
 * The line `JsonlStore` appends for `entry`, newline included, with `key` as the first field: the
 * loader reads the key of such a line from its first bytes ({@link quickLineKey}) instead of
 * parsing the whole line. zod's output already follows the schema's field order (key first); the
 * explicit `key` first keeps that true whatever produced `entry`.
 */
export function formatCacheLine(entry: CacheEntry): string {
  const { key, ...fields } = entry;
  return `${JSON.stringify({ key, ...fields })}\n`;
}

/** Where the key of a line {@link quickKeyEnd} accepts begins: this many bytes after the line's start. */
export const KEY_OFFSET = PREFIX.length;

/**
 * Where the key of the cache line in `bytes[from..to)` ends (exclusive; it begins at
 * `from + KEY_OFFSET`) when the line has the layout {@link formatCacheLine} writes:
 * `{"key":"<ASCII key without escapes>",...}`. Returns -1 for any other layout (another key order,
 * whitespace, an escaped or non-ASCII key, not an object): such a line needs a full `JSON.parse`.
 * The key's bytes are then its text verbatim.
 *
 * Only the key is looked at, so a line this accepts may still be broken further on; the store
 * validates it fully when it is first asked for.
 */
export function quickKeyEnd(bytes: Uint8Array, from: number, to: number): number {
  const keyStart = from + PREFIX.length;
  // The shortest line of this shape is {"key":"k",} plus at least one more field.
  if (to - from < PREFIX.length + 3 || bytes[to - 1] !== CLOSE_BRACE) return -1;
  for (let i = 0; i < PREFIX.length; i++) {
    if (bytes[from + i] !== PREFIX[i]) return -1;
  }
  let at = keyStart;
  for (; at < to; at++) {
    const byte = bytes[at] as number;
    if (byte === QUOTE) break;
    // An escape (the key text differs from its bytes), a raw control character (not JSON), or a
    // non-ASCII byte: bytes that are not valid UTF-8 would index a key no string lookup can name,
    // so such keys (rare: server and tool names are nearly always ASCII) take the full parse.
    if (byte === BACKSLASH || byte < 0x20 || byte >= 0x80) return -1;
  }
  if (at === keyStart || at + 1 >= to || bytes[at + 1] !== COMMA) return -1;
  return at;
}

/** The key {@link quickKeyEnd} finds, as a string; undefined when the line needs a full parse. */
export function quickLineKey(bytes: Buffer, from: number, to: number): string | undefined {
  const end = quickKeyEnd(bytes, from, to);
  return end < 0 ? undefined : bytes.toString("latin1", from + PREFIX.length, end);
}
