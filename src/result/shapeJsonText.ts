/**
 * One text block's JSON, shaped: minified, arrays of objects sharing their keys written as tables
 * (jsonTable.ts), and under `lean` null or empty fields left out. A text that is not a JSON object
 * or array, whose numbers a double would round, that writes a key twice, that nests past the
 * stack or that is larger than {@link SHAPE_MAX_TEXT_CHARS} is returned unchanged: the function
 * never throws.
 */
import { scanJsonText } from "./jsonScan.js";
import { tableValue, untableValue } from "./jsonTable.js";
import { leanValue } from "./leanValue.js";
import type { ResultFormat } from "./resultFormat.js";

/**
 * Largest text shaped (UTF-16 code units, 4 Mi): shaping takes some 40-100 ms per MB of pretty JSON
 * (parse, scan, tables, write) on one core, and a text larger than this is far past any
 * `max_output_bytes` worth having; it is cut or spilled as it is.
 */
export const SHAPE_MAX_TEXT_CHARS = 4 * 1024 * 1024;

/** What {@link shapeJsonTextDetailed} did to one text. */
export interface ShapedText {
  text: string;
  /** True when `text` differs from the input. */
  changed: boolean;
  /** Arrays written as tables. */
  tables: number;
  /** Fields `lean` left out (always 0 under `compact`). */
  dropped: number;
}

/** First character that is not JSON whitespace, or -1. */
function firstSignificant(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) return c;
  }
  return -1;
}

/**
 * {@link shapeJsonText} with what it did. `maxChars` (at most {@link SHAPE_MAX_TEXT_CHARS}) bounds
 * the texts shaped: the call pipeline passes four times the server's `max_output_bytes`, past which
 * even a compact form would be cut, so a large result costs no parse.
 */
export function shapeJsonTextDetailed(text: string, format: ResultFormat, maxChars = SHAPE_MAX_TEXT_CHARS): ShapedText {
  const unchanged: ShapedText = { text, changed: false, tables: 0, dropped: 0 };
  if (format === "as-is" || text.length > Math.min(maxChars, SHAPE_MAX_TEXT_CHARS)) return unchanged;
  const first = firstSignificant(text);
  // Only objects and arrays: a bare string or number has nothing to shape.
  if (first !== 123 && first !== 91) return unchanged;
  try {
    const value: unknown = JSON.parse(text);
    const scan = scanJsonText(text);
    if (!scan.numbersSafe) return unchanged;
    let input = value;
    let dropped = 0;
    if (format === "lean") {
      const lean = { dropped: 0 };
      input = leanValue(value, lean);
      dropped = lean.dropped;
    }
    const stats = { members: 0, tables: 0 };
    const tabled = tableValue(input, stats);
    // Fewer members than the text writes: a key was written twice, and JSON.parse kept the last.
    if (stats.members + dropped < scan.members) return unchanged;
    const out = JSON.stringify(tabled);
    if (out === text) return unchanged;
    return { text: out, changed: true, tables: stats.tables, dropped };
  } catch {
    // Not JSON, or nested past the stack: passed on as the upstream wrote it.
    return unchanged;
  }
}

/**
 * `text` shaped by `format` (`as-is`: unchanged). Pure and total: any input that cannot be shaped
 * without loss comes back as it was.
 */
export function shapeJsonText(text: string, format: ResultFormat): string {
  return shapeJsonTextDetailed(text, format).text;
}

/**
 * The JSON value a `compact` text stands for: tables back to arrays of objects. A text that is
 * not JSON comes back as `undefined`.
 */
export function decodeShapedText(text: string): unknown {
  try {
    return untableValue(JSON.parse(text));
  } catch {
    return undefined;
  }
}
