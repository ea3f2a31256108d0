import { globToRegExp } from "../model/glob.js";

/**
 * How a tool result's text reaches the model:
 * - `as-is`: exactly as the upstream wrote it;
 * - `compact`: JSON text minified and arrays of objects sharing their keys written as tables
 *   (jsonTable.ts); lossless, {@link decodeShapedText} gives the original value back;
 * - `lean`: `compact`, and null or empty object fields left out, said in a note at the end.
 */
export const RESULT_FORMATS = ["as-is", "compact", "lean"] as const;
export type ResultFormat = (typeof RESULT_FORMATS)[number];

/** The built-in `result_format`. */
export const DEFAULT_RESULT_FORMAT: ResultFormat = "compact";

/**
 * What to do with `structuredContent` when a text block only repeats it: `both` passes both on,
 * `text-only` drops the structured copy for clients that show both to the model.
 */
export const STRUCTURED_MODES = ["both", "text-only"] as const;
export type StructuredMode = (typeof STRUCTURED_MODES)[number];

/** The parts of a server's config that choose a result's shape. */
export interface ResultShapeConfig {
  result_format?: ResultFormat | undefined;
  /** Tool name (or glob) -> format, overriding `result_format` for those tools. */
  result_format_tools?: Record<string, ResultFormat> | undefined;
  structured?: StructuredMode | undefined;
}

/** Compiled globs of `result_format_tools` maps, by map: configs are reused for many calls. */
const compiled = new WeakMap<Record<string, ResultFormat>, { exact: Map<string, ResultFormat>; globs: [RegExp, ResultFormat][] }>();

function compile(map: Record<string, ResultFormat>): { exact: Map<string, ResultFormat>; globs: [RegExp, ResultFormat][] } {
  let found = compiled.get(map);
  if (found === undefined) {
    const exact = new Map<string, ResultFormat>();
    const globs: [RegExp, ResultFormat][] = [];
    for (const [pattern, format] of Object.entries(map)) {
      if (/[*?]/.test(pattern)) globs.push([globToRegExp(pattern), format]);
      else exact.set(pattern, format);
    }
    found = { exact, globs };
    compiled.set(map, found);
  }
  return found;
}

/**
 * The format of one tool's results: its own name in `result_format_tools`, else the first glob
 * there that matches it (in the order the file lists them), else the server's `result_format`
 * (which inherits the top-level one), else {@link DEFAULT_RESULT_FORMAT}.
 */
export function resultFormatFor(server: ResultShapeConfig | undefined, tool: string): ResultFormat {
  if (server === undefined) return DEFAULT_RESULT_FORMAT;
  const map = server.result_format_tools;
  if (map !== undefined && Object.keys(map).length > 0) {
    const { exact, globs } = compile(map);
    const own = exact.get(tool);
    if (own !== undefined) return own;
    for (const [re, format] of globs) if (re.test(tool)) return format;
  }
  return server.result_format ?? DEFAULT_RESULT_FORMAT;
}
