import { didYouMean } from "../util/suggest.js";
import type { core } from "zod";
import { describeExpected, schemaAt } from "./configJsonSchema.js";

/**
 * One thing wrong with a config file. Rendered as `<file>: <path>: <message>`, or
 * `<file>:<line>:<column>: <message>` for a syntax error, so editors and terminals can jump to it.
 */
export interface ConfigProblem {
  file: string;
  /** Dotted field path as the user wrote it (`servers.github.timeout_ms`); "" for the whole file. */
  path: string;
  message: string;
  line?: number;
  column?: number;
}

/** Renders a problem as the single line that goes into the error message. */
export function renderProblem(problem: ConfigProblem): string {
  if (problem.line !== undefined) return `${problem.file}:${problem.line}:${problem.column ?? 1}: ${problem.message}`;
  return problem.path === "" ? `${problem.file}: ${problem.message}` : `${problem.file}: ${problem.path}: ${problem.message}`;
}

const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;

/**
 * `["servers", "my.server", "args", 2]` -> `servers."my.server".args[2]`. Keys that are not plain
 * are quoted, as TOML would need them quoted, so the path can be pasted back into the file.
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") {
      out += `[${segment}]`;
      continue;
    }
    const key = String(segment);
    const part = PLAIN_KEY.test(key) ? key : JSON.stringify(key);
    out += out === "" ? part : `.${part}`;
  }
  return out;
}

/** Short words for a value in an error message; strings are quoted and cut at 60 characters. */
export function describeValue(value: unknown, format: "toml" | "json", hide = false): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (value instanceof Date) return "a date";
  switch (typeof value) {
    case "string":
      if (hide) return "a string";
      return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
    case "number":
    case "bigint":
      return hide ? "a number" : String(value);
    case "boolean":
      return hide ? "a boolean" : String(value);
    case "object":
      // smol-toml returns its own date class for TOML dates and times.
      if (value.constructor !== Object && value.constructor !== undefined) return "a date";
      return format === "toml" ? "a table" : "an object";
    default:
      return typeof value;
  }
}

/** `unknown key "timout_ms"; did you mean "timeout_ms"?` (the suggestion only when one is close). */
export function unknownKeyMessage(key: string, candidates: readonly string[]): string {
  const suggestion = didYouMean(key, candidates);
  return suggestion === undefined ? `unknown key ${JSON.stringify(key)}` : `unknown key ${JSON.stringify(key)}; did you mean ${JSON.stringify(suggestion)}?`;
}

/** Options of {@link formatIssues}. */
export interface FormatIssuesOptions {
  /** File name shown at the start of each line. */
  file: string;
  format: "toml" | "json";
  /** The value that was validated, to show what was found at a failing path. */
  input: unknown;
  /** Maps a path of the validated value to the path the user wrote (client files rename keys). */
  displayPath?: (path: readonly PropertyKey[]) => PropertyKey[];
  /** True for paths whose values must not be shown (env and headers hold secrets). */
  isSecretPath?: (path: readonly PropertyKey[]) => boolean;
}

/**
 * Turns zod issues from `configFileSchema` into one problem each, worded as
 * `expected X, got Y` with X taken from the schema itself (zod's own messages say "expected
 * number" where the user needs "a positive integer"). Unknown keys become one problem per key.
 */
export function formatIssues(issues: readonly core.$ZodIssue[], options: FormatIssuesOptions): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const show = (path: readonly PropertyKey[]): string => formatPath(options.displayPath?.(path) ?? path);
  const push = (path: readonly PropertyKey[], message: string): void => {
    problems.push({ file: options.file, path: show(path), message });
  };
  for (const issue of issues) {
    const path = issue.path;
    const got = (): string => describeValue(valueAt(options.input, path), options.format, options.isSecretPath?.(path) ?? false);
    switch (issue.code) {
      case "unrecognized_keys": {
        const candidates = Object.keys(schemaAt(path)?.properties ?? {});
        for (const key of issue.keys) push(path, unknownKeyMessage(key, candidates));
        break;
      }
      case "invalid_key": {
        const key = path[path.length - 1];
        const inner = issue.issues[0]?.message;
        const expected = inner?.startsWith("expected") ? inner : "expected a valid key";
        push(path, `${expected}, got ${JSON.stringify(String(key))}`);
        break;
      }
      case "custom":
        push(path, issue.message);
        break;
      case "invalid_format":
        // A schema-supplied message ("expected 1 to 3 of ...") is already in our words.
        if (issue.message.startsWith("expected")) {
          push(path, `${issue.message}, got ${got()}`);
          break;
        }
        push(path, expectedAt(path, options.format, issue.message, got()));
        break;
      case "invalid_type":
      case "too_small":
      case "too_big":
      case "invalid_value":
      case "not_multiple_of":
        push(path, expectedAt(path, options.format, issue.message, got()));
        break;
      default:
        push(path, issue.message);
    }
  }
  return problems;
}

function expectedAt(path: readonly PropertyKey[], format: "toml" | "json", fallback: string, got: string): string {
  const node = schemaAt(path);
  return node === undefined ? `${fallback}, got ${got}` : `expected ${describeExpected(node, format)}, got ${got}`;
}

/** The value at `path` inside `root`, or undefined. */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const segment of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[segment];
  }
  return node;
}
