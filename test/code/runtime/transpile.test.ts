import { transform } from "sucrase";
import { describe, expect, it } from "vitest";
import { compileProgram, decodeMappings, mapToProgram, stackPosition } from "../../../src/code/runtime/transpile.js";

function js(code: string): string {
  const compiled = compileProgram(transform, code);
  if (!compiled.ok) throw new Error(compiled.message);
  return compiled.js;
}

describe("program transpiling", () => {
  it("strips types and keeps every line of the program where it was (one line down, under the wrapper's head)", async () => {
    const code = [
      "interface Item { id: number }",
      "const items: Item[] = [];",
      "enum Color { Red }",
      "function pick<T>(x: T): T { return x; }",
      "return pick<number>(items.length) as number;",
    ].join("\n");
    const out = js(code);
    const lines = out.split("\n");
    expect(lines[0]).toBe("(async function () {");
    expect(lines[2]).toBe("const items = [];");
    expect(lines[5]).toContain("return pick(items.length)");
    expect(lines[5]).not.toContain(" as ");
    expect(lines.length).toBe(code.split("\n").length + 2);
    // The result is an expression whose value is the async function.
    // biome-ignore lint/security/noGlobalEval: the test runs the transpiled program text, which is what it checks
    const fn = globalThis.eval(out) as () => Promise<unknown>;
    await expect(fn()).resolves.toBe(0);
  });

  it("reports a syntax error at its line and column in the program as written", () => {
    expect(compileProgram(transform, "const a = 1;\nconst b: = 2;")).toEqual({
      ok: false,
      message: "SyntaxError: Unexpected token",
      position: { line: 2, column: 10 },
    });
    expect(compileProgram(transform, "let x = (1;")).toMatchObject({ ok: false, position: { line: 1 } });
    // Nesting deeper than the parser's stack on this thread is told apart from a syntax error.
    expect(compileProgram(transform, `return ${"[".repeat(100000)}${"]".repeat(100000)};`)).toMatchObject({ ok: false, tooDeep: true });
  });

  it("maps a column past stripped types back to the column written", () => {
    const line = "const a: Record<string, number> = {}; const b = (a as any).missing.deeper;";
    const code = `// first line\n${line}`;
    const generated = js(code).split("\n")[2]!;
    // The engine would point at `.deeper` in the generated line; it is further left there.
    const generatedColumn = generated.indexOf(".deeper") + 1;
    const writtenColumn = line.indexOf(".deeper") + 1;
    expect(generatedColumn).toBeLessThan(writtenColumn);
    expect(mapToProgram(transform, code, 3, generatedColumn)).toEqual({ line: 2, column: writtenColumn });
    expect(stackPosition(transform, code, `    at f (abridge:prelude:9:3)\n    at <anonymous> (program.ts:3:${generatedColumn})\n`)).toEqual({
      line: 2,
      column: writtenColumn,
    });
    // The wrapper's own lines are no place in the program, and a stack without the program names none.
    expect(mapToProgram(transform, code, 1, 1)).toBeUndefined();
    expect(stackPosition(transform, code, "    at f (abridge:prelude:9:3)\n")).toBeUndefined();
  });

  it("decodes source-map segments", () => {
    // Line 1: columns 0->0 and 4->8; line 2: 2->3 (source columns are cumulative across lines).
    expect(decodeMappings("AAAA,IAAQ;EAAL")).toEqual([
      [
        { generated: 0, source: 0 },
        { generated: 4, source: 8 },
      ],
      [{ generated: 2, source: 3 }],
    ]);
  });
});
