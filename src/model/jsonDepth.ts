/**
 * How deep JSON from outside may nest, counted in JSON levels (an object or array inside another
 * is one level down). Real documents stay within a few dozen; one thousands of levels deep exists
 * only to cost whatever reads it: the stack of a recursive walk, or, for a body of millions of
 * brackets, seconds of parsing and a gigabyte of nested arrays. A tool's schema is held to it where
 * tools enter (upstream/schemaDepth.ts) and a request body of `serve --http` before it is parsed.
 */
export const MAX_JSON_DEPTH = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * True when the JSON text in `bytes` (UTF-8) has more than `limit` objects and arrays open at
 * once. One pass over the bytes, counting brackets outside strings, with nothing allocated: it runs
 * before `JSON.parse`, so a nesting bomb is refused in the time it takes to read it. Text that is
 * not JSON gets some answer; the parse that follows refuses it either way.
 */
export function jsonTextDeeperThan(bytes: Uint8Array, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (inString) {
      // An escape's next byte is never the end of the string (\" and \\ included).
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
      if (++depth > limit) return true;
    } else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}
