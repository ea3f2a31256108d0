import { describe, expect, it } from "vitest";
import { CodeNames } from "../../src/code/declarations/codeNames.js";
import { declarations, OBSERVED_MARK, toolDeclaration, type DeclaredTool } from "../../src/code/declarations/declarations.js";
import { ObservedShapes } from "../../src/code/declarations/observedShapes.js";
import { TYPE_BOUNDS } from "../../src/code/declarations/schemaTypes.js";
import type { RawTool } from "../../src/model/types.js";
import { typecheck } from "./typecheck.js";
import { admitted } from "../helpers/admitted.js";

/** An input schema that names no argument. */
const NONE = { type: "object", properties: {} };

function tool(name: string, inputSchema: unknown, extra: Partial<RawTool> = {}, server = "s"): DeclaredTool {
  return { server, key: `${server}:${name}:h`, tool: admitted({ name, inputSchema: inputSchema as RawTool["inputSchema"], ...extra }) };
}

/** The function line of a tool `t` with `inputSchema` (no doc comment, no named types). */
function fn(inputSchema: unknown, extra: Partial<RawTool> = {}): string {
  const text = toolDeclaration(tool("t", inputSchema, extra), "t");
  const line = text.split("\n").find((l) => l.startsWith("  function "));
  if (line === undefined) throw new Error(`no function line in ${text}`);
  return line.trim();
}

/** The argument type of {@link fn}'s line. */
function args(properties: Record<string, unknown>, more: Record<string, unknown> = {}): string {
  const line = fn({ type: "object", properties, ...more });
  const match = /^function t\(args\??: (.*)\): Promise<.*>;$/.exec(line);
  if (match === null) throw new Error(`unexpected line ${line}`);
  return match[1] as string;
}

describe("declarations", () => {
  it("writes one namespace per server with each tool's summary as a doc comment", () => {
    const readText = tool(
      "read_text_file",
      { type: "object", properties: { path: { type: "string" }, head: { type: "integer" }, tail: { type: "number" } }, required: ["path"] },
      {},
      "filesystem",
    );
    const text = declarations([{ ...readText, summary: { summary: "Read a file as text.", params: {} } }]);
    expect(text).toBe(
      "declare namespace filesystem {\n" +
        "  /** Read a file as text. */\n" +
        "  function read_text_file(args: { path: string; head?: number; tail?: number }): Promise<unknown>;\n" +
        "}\n",
    );
  });

  it("orders servers and tools by name and keeps each schema's property order", () => {
    const text = declarations([
      tool("b", { type: "object", properties: { z: { type: "string" }, a: { type: "string" } } }, {}, "two"),
      tool("a", NONE, {}, "two"),
      tool("x", NONE, {}, "one"),
    ]);
    expect(text).toBe(
      "declare namespace one {\n  function x(args?: {}): Promise<unknown>;\n}\n" +
        "declare namespace two {\n  function a(args?: {}): Promise<unknown>;\n  function b(args?: { z?: string; a?: string }): Promise<unknown>;\n}\n",
    );
  });

  it("declares a tool listed twice once", () => {
    const twice = tool("t", {
      type: "object",
      properties: { a: { $ref: "#/$defs/A" } },
      $defs: { A: { type: "object", properties: { n: { $ref: "#/$defs/A" } } } },
    });
    expect(declarations([twice, { ...twice, tool: { ...twice.tool } }])).toBe(declarations([twice]));
  });

  it("falls back to the start of the description when no summary is written yet, and escapes */", () => {
    const text = toolDeclaration(tool("t", NONE, { description: "Ends a */ comment early. Then more text." }), "t");
    expect(text).toBe("  /** Ends a *\\/ comment early. */\n  function t(args?: {}): Promise<unknown>;\n");
    expect(toolDeclaration(tool("t", NONE), "t")).toBe("  function t(args?: {}): Promise<unknown>;\n");
  });

  it("types required and optional properties, integer as number, and quotes names that are not identifiers", () => {
    expect(args({ a: { type: "string" }, b: { type: "integer" }, c: { type: "boolean" }, d: { type: "null" } }, { required: ["a", "b"] })).toBe(
      "{ a: string; b: number; c?: boolean; d?: null }",
    );
    expect(args({ "a-b": { type: "string" }, "0": { type: "string" }, $x: { type: "string" }, default: { type: "string" } })).toBe(
      '{ "0"?: string; "a-b"?: string; $x?: string; default?: string }',
    );
    // A required name the properties forget is still required, of whatever type.
    expect(args({ a: { type: "string" } }, { required: ["a", "b"] })).toBe("{ a: string; b: unknown }");
  });

  it("makes the argument optional only when the input schema plainly requires nothing", () => {
    expect(fn({ type: "object", properties: { a: { type: "string" } } })).toBe("function t(args?: { a?: string }): Promise<unknown>;");
    expect(fn({ type: "object", properties: { a: { type: "string" } }, required: ["a"] })).toBe("function t(args: { a: string }): Promise<unknown>;");
    expect(fn({ $ref: "#/$defs/A", $defs: { A: { type: "object", properties: { a: { type: "string" } } } } })).toMatch(/^function t\(args: /);
    expect(fn({ type: "object", properties: { a: { type: "string" } }, minProperties: 1 })).toBe("function t(args: { a?: string }): Promise<unknown>;");
    expect(fn({ type: "object", properties: { a: { type: "string" } }, if: { properties: { a: { const: "x" } } }, then: { required: ["b"] } })).toMatch(
      /^function t\(args: /,
    );
    // No argument named: any object. No schema to speak of: an object of anything.
    expect(fn(NONE)).toBe("function t(args?: {}): Promise<unknown>;");
    expect(fn({ type: "object", properties: {}, additionalProperties: false })).toBe("function t(args?: {}): Promise<unknown>;");
    expect(fn({})).toBe("function t(args?: { [key: string]: unknown }): Promise<unknown>;");
    expect(fn({ type: "object" })).toBe("function t(args?: { [key: string]: unknown }): Promise<unknown>;");
    expect(fn({ type: "object", properties: {}, patternProperties: { "^x": {} } })).toBe("function t(args?: { [key: string]: unknown }): Promise<unknown>;");
    expect(fn({ type: "object", additionalProperties: { type: "number" } })).toBe("function t(args?: { [key: string]: number }): Promise<unknown>;");
  });

  it("writes enums and const as literal unions, filtered by the declared type, and widens long enums", () => {
    expect(args({ a: { enum: ["x", 1, null, true, -2.5] }, b: { const: "c" }, c: { type: "string", enum: ["p", 2] }, d: { enum: [] } })).toBe(
      '{ a?: "x" | 1 | null | true | -2.5; b?: "c"; c?: "p"; d?: never }',
    );
    expect(args({ a: { enum: ['say "hi"', "back\\slash", "line\nbreak"] } })).toBe('{ a?: "say \\"hi\\"" | "back\\\\slash" | "line\\nbreak" }');
    // Object and array values are typed by their shape (wider than the value).
    expect(args({ a: { enum: [{ k: 1 }, [1, "x"]] } })).toBe("{ a?: { k: number } | (string | number)[] }");
    const many = Array.from({ length: TYPE_BOUNDS.enumValues + 1 }, (_, i) => `v${i}`);
    expect(args({ a: { enum: many }, b: { enum: [...many, 1] } })).toBe("{ a?: string; b?: string | number }");
    // A literal beside its own kind says nothing more.
    expect(args({ a: { anyOf: [{ type: "string" }, { const: "" }] } })).toBe("{ a?: string }");
  });

  it("writes type arrays and nullable as unions", () => {
    expect(
      args(
        { a: { type: ["string", "number", "null"] }, b: { type: "string", nullable: true }, c: { $ref: "#/$defs/X", nullable: true } },
        { $defs: { X: { type: "string" } } },
      ),
    ).toBe("{ a?: string | number | null; b?: string | null; c?: string | null }");
    // A type name that is no JSON type says nothing: anything.
    expect(args({ a: { type: "file" } })).toBe("{ a?: unknown }");
  });

  it("writes arrays, and tuples from prefixItems or an items array", () => {
    expect(
      args({
        a: { type: "array", items: { type: ["string", "number"] } },
        b: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }], minItems: 1, items: false },
        c: { type: "array", items: [{ type: "string" }], additionalItems: { type: "boolean" } },
        d: { type: "array" },
        e: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }], minItems: 2 },
        f: { type: "array", items: false },
        g: { type: "array", items: { type: "array", items: { type: "string" } } },
      }),
    ).toBe(
      "{ a?: (string | number)[]; b?: [string, number?]; c?: [string?, ...boolean[]]; d?: unknown[]; e?: [string, number, ...unknown[]]; f?: []; g?: string[][] }",
    );
    // Items keywords without a type: an array.
    expect(args({ a: { items: { type: "string" } } })).toBe("{ a?: string[] }");
  });

  it("writes nested objects inline, down to a bound", () => {
    expect(args({ a: { type: "object", properties: { b: { type: "object", properties: { c: { type: "string" } }, required: ["c"] } } } })).toBe(
      "{ a?: { b?: { c: string } } }",
    );
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < TYPE_BOUNDS.depth + 2; i++) deep = { type: "object", properties: { n: deep }, required: ["n"] };
    const text = args({ d: deep });
    const levels = text.split("{ n: ").length - 1;
    expect(levels).toBe(TYPE_BOUNDS.depth - 1);
    expect(text).toContain("{ [key: string]: unknown }");
    expect(text).not.toContain("string }");
  });

  it("writes additionalProperties as index signatures that every member fits", () => {
    expect(
      args({
        m: { type: "object", additionalProperties: { type: "number" } },
        n: { type: "object", properties: { x: { type: "string" } }, additionalProperties: { type: "number" } },
        o: { type: "object", properties: { x: { type: "string" } }, additionalProperties: true },
        p: { type: "object", properties: { x: { type: "string" } }, additionalProperties: false },
        q: { type: "object", properties: { x: { type: "string" } } },
        r: { type: "object" },
        s: { type: "object", additionalProperties: false },
      }),
    ).toBe(
      "{ m?: { [key: string]: number }; n?: { x?: string; [key: string]: number | string | undefined }; o?: { x?: string; [key: string]: unknown }; " +
        "p?: { x?: string }; q?: { x?: string }; r?: { [key: string]: unknown }; s?: { [key: string]: never } }",
    );
  });

  it("widens what a type cannot say: not, if/then, patternProperties, dependentSchemas", () => {
    expect(
      args({
        a: { not: { type: "string" } },
        b: { type: "string", not: { const: "x" } },
        c: { if: { type: "string" }, then: { minLength: 1 } },
        d: { type: "object", properties: { x: { type: "string" } }, patternProperties: { "^y": { type: "number" } }, additionalProperties: false },
        e: { type: "object", properties: { x: { type: "string" } }, if: { required: ["x"] }, then: { properties: { y: { type: "string" } } } },
        f: { type: "object", properties: { x: { type: "string" } }, dependentSchemas: { x: { properties: { y: { type: "string" } } } } },
      }),
    ).toBe(
      "{ a?: unknown; b?: string; c?: unknown; d?: { x?: string; [key: string]: unknown }; e?: { x?: string; [key: string]: unknown }; f?: { x?: string; [key: string]: unknown } }",
    );
  });

  it("writes anyOf and oneOf as unions and allOf as intersections, with the node's own keywords", () => {
    expect(args({ a: { anyOf: [{ type: "string" }, { type: "array", items: { type: "string" } }] }, b: { oneOf: [{ const: "x" }, { type: "number" }] } })).toBe(
      '{ a?: string | string[]; b?: "x" | number }',
    );
    // Branches that only require keys narrow the object the node declares.
    expect(fn({ type: "object", properties: { a: { type: "string" }, b: { type: "string" } }, oneOf: [{ required: ["a"] }, { required: ["b"] }] })).toBe(
      "function t(args: { a?: string; b?: string } & ({ a: unknown } | { b: unknown })): Promise<unknown>;",
    );
    expect(fn({ allOf: [{ type: "object", properties: { a: { type: "string" } }, required: ["a"] }, { properties: { b: { type: "number" } } }] })).toBe(
      "function t(args: { a: string } & { b?: number }): Promise<unknown>;",
    );
    // A branch's keywords for another kind say nothing about this one: no object is made up.
    expect(args({ a: { allOf: [{ type: "string" }, { properties: { x: { type: "number" } } }] } })).toBe("{ a?: string }");
    // The parent's type limits its branches' kinds.
    expect(args({ a: { type: "string", anyOf: [{ type: ["string", "null"] }, { type: "number" }] } })).toBe("{ a?: string }");
    // Unions an intersection would multiply past the bound are dropped (wider).
    const branches = (prefix: string) => ({ anyOf: Array.from({ length: 10 }, (_, i) => ({ const: `${prefix}${i}` })) });
    const wide = args({ a: { allOf: [branches("x"), branches("y")] } });
    expect(wide).toBe(`{ a?: ${Array.from({ length: 10 }, (_, i) => `"x${i}"`).join(" | ")} }`);
  });

  it("declares $ref targets as named types in a namespace of the tool, recursive ones included", () => {
    const text = toolDeclaration(
      tool("refs", {
        type: "object",
        properties: {
          node: { $ref: "#/$defs/Node" },
          old: { $ref: "#/definitions/Old" },
          ext: { $ref: "https://example.com/schema.json" },
          anchor: { $ref: "#node" },
          bad: { $ref: "#/$defs/Nope" },
          self: { $ref: "#" },
          deep: { $ref: "#/properties/node" },
        },
        $defs: {
          Node: {
            type: "object",
            properties: { children: { type: "array", items: { $ref: "#/$defs/Node" } }, label: { $ref: "#/$defs/Label" } },
            required: ["label"],
          },
          Label: { type: "string" },
        },
        definitions: { Old: { type: "object", properties: { x: { type: "number" } } } },
      }),
      "refs",
    );
    expect(text).toBe(
      "  function refs(args?: { node?: refs.Node; old?: { x?: number }; ext?: unknown; anchor?: unknown; bad?: unknown; self?: refs.Input; deep?: refs.Node }): Promise<unknown>;\n" +
        "  namespace refs {\n" +
        "    type Node = { children?: Node[]; label: string };\n" +
        "    type Input = { node?: Node; old?: { x?: number }; ext?: unknown; anchor?: unknown; bad?: unknown; self?: Input; deep?: Node };\n" +
        "  }\n",
    );
  });

  it("names named types uniquely and as identifiers, and breaks cycles no alias can hold", () => {
    const text = toolDeclaration(
      tool("t", {
        type: "object",
        properties: {
          a: { $ref: "#/$defs/a/properties/item" },
          b: { $ref: "#/$defs/b/properties/item" },
          c: { $ref: "#/$defs/my-type" },
          d: { $ref: "#/$defs/string" },
          e: { $ref: "#/$defs/Loop" },
        },
        $defs: {
          a: { properties: { item: { type: "object", properties: { x: { $ref: "#/$defs/a/properties/item" } } } } },
          b: { properties: { item: { type: "object", properties: { y: { $ref: "#/$defs/b/properties/item" } } } } },
          "my-type": { type: "object", properties: { z: { $ref: "#/$defs/my-type" } } },
          string: { type: "array", items: { $ref: "#/$defs/string" } },
          Loop: { anyOf: [{ type: "number" }, { $ref: "#/$defs/Loop2" }] },
          Loop2: { $ref: "#/$defs/Loop" },
        },
      }),
      "t",
    );
    expect(text).toBe(
      "  function t(args?: { a?: t.item; b?: t.item_2; c?: t.my_type; d?: t.string_; e?: t.Loop }): Promise<unknown>;\n" +
        "  namespace t {\n" +
        "    type item = { x?: item };\n" +
        "    type item_2 = { y?: item_2 };\n" +
        "    type my_type = { z?: my_type };\n" +
        "    type string_ = string_[];\n" +
        "    type Loop = number | unknown;\n" +
        "  }\n",
    );
  });

  it("declares only the named types the declaration uses", () => {
    const schema = {
      type: "object",
      properties: { a: { anyOf: [{ $ref: "#/$defs/A" }, {}] }, b: { type: "string" } },
      $defs: { A: { type: "object", properties: { n: { $ref: "#/$defs/A" } } } },
    };
    expect(toolDeclaration(tool("t", schema), "t")).toBe("  function t(args?: { a?: unknown; b?: string }): Promise<unknown>;\n");
  });

  it("writes short notes from property descriptions, or the summary's parameter notes at the top", () => {
    const schema = {
      type: "object",
      properties: {
        a: { type: "string", description: "Has */ inside.\nSecond sentence." },
        b: { type: "string", description: `A long line ${"word ".repeat(30)}end` },
        c: { type: "object", properties: { d: { type: "number", description: "Nested note." } } },
      },
    };
    const base = tool("t", schema);
    expect(toolDeclaration(base, "t")).toBe(
      "  function t(args?: { /** Has *\\/ inside. */ a?: string; /** A long line word word word word word word word word word word word word word... */ b?: string; c?: { /** Nested note. */ d?: number } }): Promise<unknown>;\n",
    );
    const summarized = { ...base, summary: { summary: "Does it.", params: { a: "From the summary." } } };
    expect(toolDeclaration(summarized, "t")).toContain("/** From the summary. */ a?: string; /** A long line");
    expect(toolDeclaration(base, "t", { noteChars: 0 })).toBe("  function t(args?: { a?: string; b?: string; c?: { d?: number } }): Promise<unknown>;\n");
  });

  it("takes no kind for granted: a schema of another type is typed as it says", () => {
    expect(fn({ type: "array", items: { type: "string" } })).toBe("function t(args: string[]): Promise<unknown>;");
    expect(fn(NONE, { outputSchema: { type: "array", items: { type: "number" } } })).toBe("function t(args?: {}): Promise<number[]>;");
  });

  it("takes the result type from outputSchema, else from observed results, marked", () => {
    const out = tool("t", NONE, {
      outputSchema: { type: "object", properties: { id: { type: "integer" }, tags: { type: "array", items: { type: "string" } } }, required: ["id"] },
    });
    expect(toolDeclaration(out, "t")).toBe("  function t(args?: {}): Promise<{ id: number; tags?: string[] }>;\n");
    const observed = new ObservedShapes();
    const plain = tool("p", NONE);
    expect(toolDeclaration(plain, "p", { observed })).toBe("  function p(args?: {}): Promise<unknown>;\n");
    observed.observe(plain.key, { id: 1, name: "x" });
    expect(toolDeclaration(plain, "p", { observed })).toBe(`  function p(args?: {}): Promise<{ id: number; name: string }>; ${OBSERVED_MARK}\n`);
    observed.observe(plain.key, { id: 2, extra: [true] });
    expect(toolDeclaration(plain, "p", { observed })).toBe(
      `  function p(args?: {}): Promise<{ id: number; name?: string; extra?: boolean[] }>; ${OBSERVED_MARK}\n`,
    );
    // A declared output wins over anything observed.
    observed.observe(out.key, { other: "x" });
    expect(toolDeclaration(out, "t", { observed })).toBe("  function t(args?: {}): Promise<{ id: number; tags?: string[] }>;\n");
  });

  it("is deterministic and never serves a stale form: another summary, name or observation is another form", () => {
    const make = (): DeclaredTool =>
      tool("t", { type: "object", properties: { a: { $ref: "#/$defs/A" } }, $defs: { A: { type: "object", properties: { n: { $ref: "#/$defs/A" } } } } });
    const first = declarations([make()]);
    expect(declarations([make()])).toBe(first);
    const same = make();
    expect(toolDeclaration(same, "t")).toBe(toolDeclaration(same, "t"));
    expect(toolDeclaration({ ...same, summary: { summary: "One.", params: {} } }, "t")).toContain("/** One. */");
    expect(toolDeclaration({ ...same, summary: { summary: "Two.", params: {} } }, "t")).toContain("/** Two. */");
    expect(toolDeclaration(same, "u")).toContain("function u(args?: { a?: u.A })");
    const observed = new ObservedShapes();
    observed.observe(same.key, [1]);
    expect(toolDeclaration(same, "t", { observed })).toContain("Promise<number[]>");
    observed.observe(same.key, ["x"]);
    expect(toolDeclaration(same, "t", { observed })).toContain("Promise<(string | number)[]>");
  });

  it("uses the names settled over the whole catalog, and refuses a tool they lack", () => {
    const all = [tool("get_item", NONE), tool("get-item", NONE), tool("x", NONE, {}, "my-server")];
    const names = CodeNames.of(all.map((t) => ({ server: t.server, tool: t.tool.name })));
    expect(declarations([all[1] as DeclaredTool], { names })).toBe("declare namespace s {\n  function get_item_2(args?: {}): Promise<unknown>;\n}\n");
    // Alone, the same tool would take the plain name.
    expect(declarations([all[1] as DeclaredTool])).toContain("function get_item(");
    expect(declarations([all[2] as DeclaredTool], { names })).toContain("declare namespace my_server {");
    expect(() => declarations([tool("other", NONE)], { names })).toThrow(/no name for tool "s:other"/);
  });

  it("compiles: valid arguments typecheck, invalid ones do not", async () => {
    const tools = [
      tool("basic", { type: "object", properties: { path: { type: "string" }, head: { type: "integer" } }, required: ["path"] }),
      tool("lits", { type: "object", properties: { mode: { enum: ["a", "b"] }, n: { const: 3 } }, required: ["mode"] }),
      tool("tuple", {
        type: "object",
        properties: { p: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }], minItems: 1, items: false } },
        required: ["p"],
      }),
      tool("map", { type: "object", properties: { x: { type: "string" }, y: { type: "boolean" } }, additionalProperties: { type: "number" } }),
      tool("tree", {
        type: "object",
        properties: { root: { $ref: "#/$defs/Node" } },
        required: ["root"],
        $defs: { Node: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/Node" } }, v: { type: "string" } }, required: ["v"] } },
      }),
      tool("either", { type: "object", properties: { a: { type: "string" }, b: { type: "string" } }, oneOf: [{ required: ["a"] }, { required: ["b"] }] }),
      tool("loop", {
        type: "object",
        properties: { l: { $ref: "#/$defs/L" } },
        $defs: { L: { anyOf: [{ type: "number" }, { $ref: "#/$defs/M" }] }, M: { $ref: "#/$defs/L" } },
      }),
      tool(
        "delete",
        { type: "object", properties: { "odd-name": { type: ["string", "null"] } }, required: ["odd-name"] },
        { outputSchema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] } },
      ),
    ];
    const source = declarations(tools);
    const usage = [
      'const a1: Parameters<typeof s.basic>[0] = { path: "x" };',
      'const a2: Parameters<typeof s.basic>[0] = { path: "x", head: 3 };',
      "// @ts-expect-error path is required",
      "const a3: Parameters<typeof s.basic>[0] = { head: 3 };",
      "// @ts-expect-error head is a number",
      'const a4: Parameters<typeof s.basic>[0] = { path: "x", head: "3" };',
      "// @ts-expect-error no such property",
      'const a5: Parameters<typeof s.basic>[0] = { path: "x", haed: 3 };',
      'const b1: Parameters<typeof s.lits>[0] = { mode: "b", n: 3 };',
      "// @ts-expect-error not in the enum",
      'const b2: Parameters<typeof s.lits>[0] = { mode: "c" };',
      'const c1: Parameters<typeof s.tuple>[0] = { p: ["x"] };',
      'const c2: Parameters<typeof s.tuple>[0] = { p: ["x", 1] };',
      "// @ts-expect-error no third element",
      'const c3: Parameters<typeof s.tuple>[0] = { p: ["x", 1, 2] };',
      'const d1: Parameters<typeof s.map>[0] = { x: "s", y: true, other: 4 };',
      "// @ts-expect-error extra keys are numbers",
      "const d2: Parameters<typeof s.map>[0] = { other: [] };",
      'const e1: Parameters<typeof s.tree>[0] = { root: { v: "r", kids: [{ v: "k", kids: [] }] } };',
      "// @ts-expect-error a nested node lacks v",
      'const e2: Parameters<typeof s.tree>[0] = { root: { v: "r", kids: [{ kids: [] }] } };',
      'const f1: Parameters<typeof s.either>[0] = { a: "x" };',
      'const f2: Parameters<typeof s.either>[0] = { b: "x" };',
      "// @ts-expect-error one of a, b is required",
      "const f3: Parameters<typeof s.either>[0] = {};",
      "const g1: Parameters<typeof s.loop>[0] = { l: 1 };",
      'const h1: Parameters<typeof s.delete_>[0] = { "odd-name": null };',
      'async function use(): Promise<boolean> { const r = await s.delete_({ "odd-name": "x" }); return r.ok; }',
      "// @ts-expect-error the argument object is required",
      "s.basic();",
      "s.loop();",
    ].join("\n");
    const result = await typecheck({ "decl.ts": source, "use.ts": `${usage}\nexport {};\n` });
    expect(result.output).toBe("");
    expect(result.exitCode).toBe(0);
  });
});
