/**
 * JSON parsing for config files with errors a person can act on: `line:column: what was expected`.
 *
 * Comments (`//`, `/* *\/`) and trailing commas are accepted, because VS Code's `mcp.json` is JSONC
 * and users copy it as is; they are blanked out with spaces (offsets unchanged) before
 * `JSON.parse`. V8's own messages are not passed on: on Node 20 many of them carry no position,
 * and they quote a slice of the file, which may hold a pasted token. When `JSON.parse` fails, a
 * small scanner finds the offset and names what it expected there.
 */

/** Result of {@link parseJsonText}. */
export type JsonParseResult = { ok: true; value: unknown } | { ok: false; line: number; column: number; message: string; cause: unknown };

/** Parses JSON (with comments and trailing commas allowed); never throws. */
export function parseJsonText(text: string): JsonParseResult {
  const clean = stripJsonc(text);
  try {
    return { ok: true, value: JSON.parse(clean) as unknown };
  } catch (cause) {
    const found = locateJsonError(clean) ?? { offset: positionFromMessage(cause, clean.length), message: "invalid JSON" };
    const { line, column } = lineColumn(clean, found.offset);
    return { ok: false, line, column, message: found.message, cause };
  }
}

/** 1-based line and column of `offset` in `text`. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(offset, text.length);
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: end - lineStart + 1 };
}

function positionFromMessage(err: unknown, fallback: number): number {
  const match = err instanceof Error ? /position (\d+)/.exec(err.message) : null;
  return match?.[1] !== undefined ? Number(match[1]) : fallback;
}

/** Replaces comments and trailing commas with spaces, leaving strings and offsets intact. */
export function stripJsonc(text: string): string {
  const out = text.split("");
  let i = 0;
  let lastComma = -1;
  // Only a comma after a value can be trailing: `{,}` and `[1,,]` stay errors.
  let afterValue = false;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"') {
      lastComma = -1;
      afterValue = true;
      i++;
      while (i < text.length && text[i] !== '"' && text[i] !== "\n") i += text[i] === "\\" ? 2 : 1;
      i++;
    } else if (ch === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") out[i++] = " ";
    } else if (ch === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end === -1 ? text.length : end + 2;
      for (; i < stop; i++) if (text[i] !== "\n") out[i] = " ";
    } else if (ch === ",") {
      lastComma = afterValue ? i : -1;
      afterValue = false;
      i++;
    } else if (ch === "}" || ch === "]") {
      if (lastComma !== -1) out[lastComma] = " ";
      lastComma = -1;
      afterValue = true;
      i++;
    } else {
      if (ch !== " " && ch !== "\t" && ch !== "\n" && ch !== "\r") {
        lastComma = -1;
        afterValue = ch !== "{" && ch !== "[" && ch !== ":";
      }
      i++;
    }
  }
  return out.join("");
}

class JsonSyntaxError extends Error {
  constructor(
    readonly offset: number,
    message: string,
    /** What was expected there, without what was found (which quotes the file). */
    readonly expected: string,
  ) {
    super(message);
  }
}

/**
 * Where strict JSON `text` (known not to parse) goes wrong and what was expected there, without
 * a byte of it: `invalid JSON at line 3, column 7: expected "," or "}" after a property value`.
 * For files whose content must not reach a log or an error (it may be anything a link points at).
 */
export function describeInvalidJson(text: string): string {
  let found: ReturnType<typeof locateJsonError>;
  try {
    found = locateJsonError(text);
  } catch {
    // Nested past the stack: the scanner recurses per level.
    found = undefined;
  }
  if (found === undefined) return "invalid JSON";
  const { line, column } = lineColumn(text, found.offset);
  return `invalid JSON at line ${line}, column ${column}: expected ${found.expected}`;
}

/** Offset and description of the first syntax error in strict JSON `text`, or undefined. */
export function locateJsonError(text: string): { offset: number; message: string; expected: string } | undefined {
  let pos = 0;
  const what = (): string => {
    if (pos >= text.length) return "the end of the file";
    // One character only: the file may hold secrets, the line and column point at the rest.
    return JSON.stringify(text[pos]);
  };
  const fail = (expected: string): never => {
    throw new JsonSyntaxError(pos, `expected ${expected}, got ${what()}`, expected);
  };
  const ws = (): void => {
    while (pos < text.length && " \t\n\r".includes(text[pos] ?? "")) pos++;
  };
  const string = (): void => {
    pos++;
    for (;;) {
      if (pos >= text.length) fail('a closing "');
      const code = text.charCodeAt(pos);
      if (code === 34) {
        pos++;
        return;
      }
      if (code < 0x20) {
        const expected = 'a closing " or an escape such as \\n';
        throw new JsonSyntaxError(
          pos,
          `expected ${expected}, got a raw control character or line break`,
          `${expected}, not a raw control character or line break`,
        );
      }
      if (code === 92) {
        const next = text[pos + 1] ?? "";
        if ('"\\/bfnrt'.includes(next) && next !== "") pos += 2;
        else if (next === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(pos + 2, pos + 6))) pos += 6;
        else {
          pos++;
          fail('a valid escape (\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)');
        }
        continue;
      }
      pos++;
    }
  };
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  const value = (): void => {
    ws();
    const ch = text[pos];
    if (ch === "{") {
      pos++;
      ws();
      if (text[pos] === "}") {
        pos++;
        return;
      }
      for (;;) {
        ws();
        if (text[pos] !== '"') fail("a property name in double quotes");
        string();
        ws();
        if (text[pos] !== ":") fail('":" after a property name');
        pos++;
        value();
        ws();
        if (text[pos] === ",") {
          pos++;
          continue;
        }
        if (text[pos] === "}") {
          pos++;
          return;
        }
        fail('"," or "}" after a property value');
      }
    }
    if (ch === "[") {
      pos++;
      ws();
      if (text[pos] === "]") {
        pos++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[pos] === ",") {
          pos++;
          continue;
        }
        if (text[pos] === "]") {
          pos++;
          return;
        }
        fail('"," or "]" after an array element');
      }
    }
    if (ch === '"') {
      string();
      return;
    }
    for (const word of ["true", "false", "null"]) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return;
      }
    }
    NUMBER.lastIndex = pos;
    if (NUMBER.exec(text) !== null && NUMBER.lastIndex > pos) {
      pos = NUMBER.lastIndex;
      return;
    }
    fail("a value (string, number, object, array, true, false or null)");
  };
  try {
    value();
    ws();
    if (pos < text.length) fail("the end of the file after the value");
    return undefined;
  } catch (err) {
    if (err instanceof JsonSyntaxError) return { offset: err.offset, message: err.message, expected: err.expected };
    throw err;
  }
}
