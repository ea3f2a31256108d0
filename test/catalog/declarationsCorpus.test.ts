import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CodeNames } from "../../src/code/declarations/codeNames.js";
import { declarations, type DeclaredTool } from "../../src/code/declarations/declarations.js";
import type { RawTool } from "../../src/model/types.js";
import { CORPUS_DIR } from "./corpusTools.js";
import { typecheck } from "./typecheck.js";
import { admitted } from "../helpers/admitted.js";

/** Every server of the corpus (all of them, not only the unit-test slice), parsed anew. */
function corpusTools(): DeclaredTool[] {
  const dir = path.join(CORPUS_DIR, "servers");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .flatMap((file) => {
      const data = JSON.parse(readFileSync(path.join(dir, file), "utf8")) as { server: string; tools: RawTool[] };
      return data.tools.map((tool) => ({ server: data.server, key: `${data.server}:${tool.name}:corpus`, tool: admitted(tool) }));
    });
}

describe("declarations over the corpus", () => {
  it("the compiler run reports errors where there are some", async () => {
    const result = await typecheck({ "a.ts": "declare namespace n { function f(args: { a: string }): Promise<unknown>; }\nn.f({ a: 1 });\n" });
    expect(result.exitCode).not.toBe(0);
    expect(result.diagnostics).toEqual([expect.objectContaining({ file: "a.ts", line: 2, code: 2322 })]);
  });

  it("declares every tool of every server, and the compiler accepts all of it in strict mode", async () => {
    const tools = corpusTools();
    const servers = new Set(tools.map((t) => t.server));
    expect(servers.size).toBe(129);
    expect(tools.length).toBe(3675);
    const names = CodeNames.of(tools.map((t) => ({ server: t.server, tool: t.tool.name })));
    const text = declarations(tools, { names });
    expect(text.match(/^declare namespace /gm)?.length).toBe(servers.size);
    expect(text.match(/^ {2}function /gm)?.length).toBe(tools.length);
    // Same content, new objects (no memo to lean on): the same bytes.
    expect(declarations(corpusTools(), { names })).toBe(text);

    // Every tool is reachable under the names the runtime binds, with an argument type.
    const uses = tools.map((t, i) => {
      const ns = names.namespaceOf(t.server) as string;
      const fn = names.functionOf(t.server, t.tool.name) as string;
      return `type A${i} = Parameters<typeof ${ns}.${fn}>[0]; type R${i} = Awaited<ReturnType<typeof ${ns}.${fn}>>;`;
    });
    const result = await typecheck({ "corpus.ts": text, "uses.ts": `${uses.join("\n")}\nexport {};\n` });
    expect(result.diagnostics.slice(0, 20)).toEqual([]);
    expect(result.exitCode).toBe(0);
  });
});
