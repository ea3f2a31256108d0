/**
 * A program's TypeScript turned into JavaScript the engine runs: its types stripped by sucrase,
 * and its text wrapped as the body of an async function, so top-level `await` and `return` work.
 *
 * The wrapper's head has a line of its own and sucrase keeps every line where it was, so line N of
 * the program is line N + 1 of what runs. Columns move where types were stripped; an error's column
 * is mapped back through sucrase's source map, built again only for a run that failed.
 *
 * This runs on the program's worker thread, which loads it without the rest of the project: it
 * imports nothing, and takes sucrase's `transform` from its caller.
 */
import type { transform as sucraseTransform } from "sucrase";

/**
 * The message of a caught value. The code worker's thread loads no module of the project but this
 * one (from source its imports are rewritten by hand), so it takes its copy of the model's
 * `messageOf` from here.
 */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** sucrase's `transform`. */
export type Transform = typeof sucraseTransform;

/** The file name the engine gives the program in stack traces. */
export const PROGRAM_FILE = "program.ts";

const HEAD = "(async function () {\n";
const TAIL = "\n})";

/** A place in the program the user wrote: 1-based line and column. */
export interface ProgramPosition {
  line: number;
  column: number;
}

/**
 * The program as JavaScript (an expression whose value is its async function), or its syntax
 * error, or `tooDeep` when it nests deeper than the parser's stack.
 */
export type Compiled = { ok: true; js: string } | { ok: false; message: string; position?: ProgramPosition; tooDeep?: true };

/** Strips the program's types; a syntax error comes back with its line and column in the program. */
export function compileProgram(transform: Transform, code: string): Compiled {
  const source = HEAD + code + TAIL;
  try {
    return { ok: true, js: transform(source, { transforms: ["typescript"], disableESTransforms: true }).code };
  } catch (err) {
    if (err instanceof RangeError) return { ok: false, message: "SyntaxError: the program nests too deeply to be parsed", tooDeep: true };
    const pos = (err as { pos?: unknown }).pos;
    const message = `SyntaxError: ${messageOf(err).replace(/\s*\(\d+:\d+\)$/, "")}`;
    if (typeof pos === "number" && pos >= 0 && pos <= source.length) {
      const before = source.slice(0, pos);
      const position = userPosition(code, before.split("\n").length, pos - (before.lastIndexOf("\n") + 1) + 1);
      if (position !== undefined) return { ok: false, message, position };
    }
    return { ok: false, message };
  }
}

/** `line 3, column 7`. */
export function positionText(position: ProgramPosition): string {
  return `line ${position.line}, column ${position.column}`;
}

/** A line and column of the wrapped source (1-based) as a position in the program, if it is in it. */
function userPosition(code: string, line: number, column: number): ProgramPosition | undefined {
  const userLine = line - 1;
  const lines = code.split("\n");
  if (userLine < 1 || userLine > lines.length) return undefined;
  return { line: userLine, column: Math.max(1, Math.min(column, lines[userLine - 1]!.length + 1)) };
}

/**
 * A position in the JavaScript that ran (1-based line and column, as the engine reports them) as a
 * position in the program written, or undefined when it is in the wrapper. Runs the transform
 * again with a source map: only a failed run pays for it.
 */
export function mapToProgram(transform: Transform, code: string, line: number, column: number): ProgramPosition | undefined {
  let mappings: string;
  try {
    const options = {
      transforms: ["typescript" as const],
      disableESTransforms: true,
      sourceMapOptions: { compiledFilename: "program.js" },
      filePath: PROGRAM_FILE,
    };
    mappings = transform(HEAD + code + TAIL, options).sourceMap?.mappings ?? "";
  } catch {
    return undefined;
  }
  const segments = decodeMappings(mappings)[line - 1] ?? [];
  let mapped = column;
  for (const segment of segments) {
    // Source-map columns are 0-based; the engine's are 1-based. Lines stay put.
    if (segment.generated > column - 1) break;
    mapped = segment.source + (column - 1 - segment.generated) + 1;
  }
  return userPosition(code, line, mapped);
}

/** The first place in the program a stack trace names (as the engine wrote it), mapped back to the program. */
export function stackPosition(transform: Transform, code: string, stack: string): ProgramPosition | undefined {
  const match = /program\.ts:(\d+):(\d+)/.exec(stack);
  return match === null ? undefined : mapToProgram(transform, code, Number(match[1]), Number(match[2]));
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** One mapping of a generated line: its column there and in the source (both 0-based, same line: sucrase keeps lines). */
interface Segment {
  generated: number;
  source: number;
}

/** Source map `mappings` (base64 VLQ) as each generated line's segments, in column order. */
export function decodeMappings(mappings: string): Segment[][] {
  const lines: Segment[][] = [];
  let sourceColumn = 0;
  for (const lineText of mappings.split(";")) {
    const segments: Segment[] = [];
    let generatedColumn = 0;
    for (const segmentText of lineText.split(",")) {
      if (segmentText === "") continue;
      const fields: number[] = [];
      let value = 0;
      let shift = 0;
      for (const char of segmentText) {
        const digit = BASE64.indexOf(char);
        if (digit === -1) return lines;
        value += (digit & 31) << shift;
        if (digit & 32) {
          shift += 5;
        } else {
          fields.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      generatedColumn += fields[0] ?? 0;
      if (fields.length >= 4) {
        sourceColumn += fields[3]!;
        segments.push({ generated: generatedColumn, source: sourceColumn });
      }
    }
    lines.push(segments);
  }
  return lines;
}
