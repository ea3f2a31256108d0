import { createRequire } from "node:module";
import type { RE2JS as Re2 } from "re2js";
import { messageOf } from "../model/errors.js";

let re2: typeof Re2 | undefined;

/**
 * The RE2 engine, loaded on the first pattern compiled: 270 kB of JavaScript that a bridge only
 * needs once it validates arguments against a schema with a `pattern`, not to start. Required (its
 * CommonJS build, the same engine) so that the compile stays synchronous, as ajv calls it.
 */
function engine(): typeof Re2 {
  re2 ??= (createRequire(import.meta.url)("re2js") as { RE2JS: typeof Re2 }).RE2JS;
  return re2;
}

/** The `test` half of a RegExp, which is all ajv asks of a pattern engine. */
export interface PatternTester {
  test(text: string): boolean;
  /** ajv keys its compiled patterns by this: it must tell patterns apart. */
  toString(): string;
}

/**
 * Compiles a JSON Schema `pattern` (ECMA-262 syntax) for a linear-time engine: RE2's algorithm
 * (the re2js port, pure JavaScript), which never backtracks. V8's engine backtracks: a schema's
 * `"^(a+)+$"` against thirty `a`s and a `!` took seconds and blocked every other call, and each
 * added character doubled that. Here matching costs time linear in the text, whatever the pattern.
 *
 * RE2 has no lookaround and no backreferences. A pattern that uses them (valid for JavaScript,
 * refused by RE2) comes back as `unsupported`: the caller does not check that one keyword (the
 * upstream server still does) and says so, rather than run it on a backtracking engine. A pattern
 * JavaScript refuses too is an invalid schema, and this throws as `new RegExp` would.
 */
export function compileLinearPattern(pattern: string, unicode: boolean): { tester: PatternTester } | { unsupported: string } {
  const label = `/${pattern}/${unicode ? "u" : ""}`;
  try {
    // JavaScript escapes RE2 spells differently (`\u00e9`, `\cA`, `/`) are rewritten first.
    const RE2JS = engine();
    const compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
    return { tester: { test: (text) => compiled.test(text), toString: () => label } };
  } catch (err) {
    // Throws for a pattern JavaScript cannot read either: an invalid schema, not a limit of RE2.
    new RegExp(pattern, unicode ? "u" : "");
    return { unsupported: messageOf(err) };
  }
}
