/**
 * What `JSON.parse` cannot tell: whether writing its value back loses anything the text said.
 * Two things can be lost. A number with more significant digits than a double keeps (an ID such
 * as 12345678901234567890, a price with 20 decimals) comes back rounded; a key written twice in
 * one object keeps only its last value. One pass over the text finds both: every number literal
 * outside strings is checked, and every `:` outside strings (one per object member written) is
 * counted, to be compared with the members of the parsed value.
 */

/** Significant digits every decimal of this many digits or fewer keeps through a double. */
const SAFE_DIGITS = 15;

/** What {@link scanJsonText} found in a text that parses. */
export interface JsonTextScan {
  /** Object members written in the text (`:` outside strings). */
  members: number;
  /** False when some number would not come back as written (too many digits, out of range, `-0`). */
  numbersSafe: boolean;
}

/**
 * Scans a text that `JSON.parse` accepted. Strings are skipped with `indexOf` (the bulk of most
 * results), so the cost is a loop over the structure only.
 */
export function scanJsonText(text: string): JsonTextScan {
  let members = 0;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      i = stringEnd(text, i + 1);
      continue;
    }
    if (c === 58) {
      members += 1;
      i += 1;
      continue;
    }
    if (c === 45 || (c >= 48 && c <= 57)) {
      const end = numberEnd(text, i);
      if (!numberSafe(text, i, end)) return { members, numbersSafe: false };
      i = end;
      continue;
    }
    i += 1;
  }
  return { members, numbersSafe: true };
}

/** Index just past the closing quote of the string whose body starts at `from`. */
function stringEnd(text: string, from: number): number {
  let j = from;
  for (;;) {
    const q = text.indexOf('"', j);
    if (q === -1) return text.length;
    let backslashes = 0;
    for (let b = q - 1; b >= from && text.charCodeAt(b) === 92; b--) backslashes += 1;
    if (backslashes % 2 === 0) return q + 1;
    j = q + 1;
  }
}

function numberEnd(text: string, from: number): number {
  let j = from + 1;
  for (; j < text.length; j++) {
    const c = text.charCodeAt(j);
    // digits . + - e E
    if (!((c >= 48 && c <= 57) || c === 46 || c === 43 || c === 45 || c === 101 || c === 69)) break;
  }
  return j;
}

/**
 * True when the literal `text[from, end)` comes back as the same number from a double: at most
 * {@link SAFE_DIGITS} significant digits, finite, not flushed to zero or into the subnormals, and
 * not `-0` (written back as `0`).
 */
function numberSafe(text: string, from: number, end: number): boolean {
  let i = from;
  const negative = text.charCodeAt(i) === 45;
  if (negative) i += 1;
  let significant = 0;
  let pendingZeros = 0;
  let leading = true;
  for (; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) continue;
    if (c < 48 || c > 57) break;
    if (c === 48) {
      if (!leading) pendingZeros += 1;
      continue;
    }
    leading = false;
    significant += pendingZeros + 1;
    pendingZeros = 0;
  }
  if (significant > SAFE_DIGITS) return false;
  const hasExponent = i < end;
  if (significant === 0) return !negative;
  // Without an exponent, 15 digits cannot leave a double's range unless the literal is very long.
  if (!hasExponent && end - from < 300) return true;
  const value = Math.abs(Number(text.slice(from, end)));
  return Number.isFinite(value) && value >= 2.2250738585072014e-308;
}
