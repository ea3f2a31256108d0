import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { assignIdentifiers, codeIdentifier, CodeNames, isPlainIdentifier } from "../../src/code/declarations/codeNames.js";
import { declarations } from "../../src/code/declarations/declarations.js";
import { typecheck } from "./typecheck.js";
import { admitted } from "../helpers/admitted.js";

describe("codeIdentifier", () => {
  it("makes any name an identifier: _ for other characters, _ before a digit, _ after a reserved word", () => {
    expect(codeIdentifier("filesystem")).toBe("filesystem");
    expect(codeIdentifier("my-server")).toBe("my_server");
    expect(codeIdentifier("a.b/c d")).toBe("a_b_c_d");
    expect(codeIdentifier("2fa")).toBe("_2fa");
    expect(codeIdentifier("")).toBe("_");
    expect(codeIdentifier("ünï")).toBe("_n_");
    expect(codeIdentifier("$ok")).toBe("$ok");
    for (const reserved of [
      "delete",
      "class",
      "await",
      "yield",
      "eval",
      "arguments",
      "string",
      "unknown",
      "keyof",
      "Promise",
      "Math",
      "JSON",
      "console",
      "tools",
    ]) {
      expect(codeIdentifier(reserved)).toBe(`${reserved}_`);
    }
  });
});

describe("assignIdentifiers", () => {
  it("keeps names that are identifiers and settles collisions in name order", () => {
    const ids = assignIdentifiers(["get.item", "get_item", "get-item", "delete", "delete_"]);
    expect(Object.fromEntries(ids)).toEqual({
      get_item: "get_item",
      "get-item": "get_item_2",
      "get.item": "get_item_3",
      delete_: "delete_",
      delete: "delete__2",
    });
  });

  it("gives distinct, valid identifiers whatever the names and their order", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom("delete", "delete_", "a-b", "a_b", "1", "_1", "Promise")), { maxLength: 12 }),
        fc.nat(),
        (names, seed) => {
          const ids = assignIdentifiers(names);
          const shuffled = [...names].sort((a, b) => ((a.length * 31 + seed) % 7) - ((b.length * 31 + seed) % 7));
          expect(assignIdentifiers(shuffled)).toEqual(ids);
          const values = [...ids.values()];
          expect(new Set(values).size).toBe(names.length);
          for (const id of values) {
            expect(id).toMatch(/^[A-Za-z_$][A-Za-z0-9_$]*$/);
            expect(isPlainIdentifier(id)).toBe(true);
          }
          for (const name of names) if (isPlainIdentifier(name)) expect(ids.get(name)).toBe(name);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("CodeNames", () => {
  it("names servers and tools and resolves a program's names back", () => {
    const names = CodeNames.of([
      { server: "my-server", tool: "read-file" },
      { server: "my-server", tool: "read_file" },
      { server: "my_server", tool: "x" },
      { server: "other", tool: "delete" },
    ]);
    expect(names.servers()).toEqual([
      ["my-server", "my_server_2"],
      ["my_server", "my_server"],
      ["other", "other"],
    ]);
    expect(names.functionOf("my-server", "read-file")).toBe("read_file_2");
    expect(names.functionOf("other", "delete")).toBe("delete_");
    expect(names.toolsOf("my-server")).toEqual([
      ["read-file", "read_file_2"],
      ["read_file", "read_file"],
    ]);
    expect(names.resolve("my_server_2", "read_file_2")).toEqual({ server: "my-server", tool: "read-file" });
    expect(names.resolve("my_server", "x")).toEqual({ server: "my_server", tool: "x" });
    expect(names.resolve("my_server", "read_file")).toBeUndefined();
    expect(names.namespaceOf("nope")).toBeUndefined();
    expect(names.functionOf("other", "nope")).toBeUndefined();
  });

  it("the compiler accepts declarations under any server and tool names", async () => {
    const pairs = fc.sample(
      fc.record({
        server: fc.oneof(fc.string({ maxLength: 5 }), fc.constantFrom("Math", "default", "a-b")),
        tool: fc.oneof(fc.string({ maxLength: 5, unit: "binary" }), fc.constantFrom("delete", "constructor", "Promise", "then")),
      }),
      { numRuns: 80 },
    );
    const tools = pairs.map(({ server, tool }) => ({
      server,
      key: `${server}:${tool}:h`,
      tool: admitted({ name: tool, inputSchema: { type: "object", properties: {} } }),
    }));
    const names = CodeNames.of(tools.map((t) => ({ server: t.server, tool: t.tool.name })));
    const calls = tools.map((t) => `void ${names.namespaceOf(t.server) as string}.${names.functionOf(t.server, t.tool.name) as string}({});`);
    const result = await typecheck({ "decl.ts": declarations(tools, { names }), "use.ts": `${calls.join("\n")}\nexport {};\n` });
    expect(result.diagnostics.slice(0, 10)).toEqual([]);
    expect(result.exitCode).toBe(0);
  });
});
