import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CodeNames } from "../../src/code/declarations/codeNames.js";
import { declarations, type DeclaredTool } from "../../src/code/declarations/declarations.js";
import type { RawTool } from "../../src/model/types.js";
import { typecheck, type TypecheckResult } from "./typecheck.js";
import { admitted } from "../helpers/admitted.js";

/**
 * A schema as the generator thinks of it: every model gives a JSON Schema and, separately, values
 * that schema surely accepts and values it surely refuses, so the declarations can be checked
 * against both with the real compiler.
 */
type Primitive = "string" | "number" | "integer" | "boolean" | "null";
type Model =
  | { k: Primitive }
  | { k: "enum"; values: (string | number | boolean | null)[] }
  | { k: "const"; value: string | number | boolean }
  | { k: "types"; types: Primitive[] }
  | { k: "nullable"; of: Model; style: "anyOf" | "openapi" }
  | { k: "array"; items: Model }
  | { k: "tuple"; items: Model[]; min: number; rest: Model | false | undefined; style: "prefixItems" | "items" }
  | ObjectModel
  | { k: "union"; of: Model[]; keyword: "anyOf" | "oneOf" }
  | { k: "ref"; def: number };

interface ObjectModel {
  k: "object";
  props: { name: string; model: Model; required: boolean; description: string | null }[];
  extra: Model | boolean | undefined;
}

interface Case {
  defs: Model[];
  root: ObjectModel;
  /** The root is a `$ref` to a def holding it, rather than inline. */
  rootRef: boolean;
  container: "$defs" | "definitions";
}

// Not `constructor`, `toString` and the like: TypeScript finds those on every object through
// Object.prototype, so a missing one is not refused when its declared type takes the inherited member.
const PROPERTY_NAMES = ["a", "b", "id", "name", "a-b", "with space", "0", "1x", "$ref", "default", "class", "type", "ünï", "_", "enum"];
const EXTRA_NAMES = ["x1", "x2", "extra-key"];
const DEF_NAMES = ["Node", "my-def", "string", "0start", "a b", "x/y", "t~1", "Input", "Promise"];
const TOOL_NAMES = ["read", "delete", "string", "my-tool", "2fa", "Promise", "a.b", "keyof", "fn"];

const descriptions = fc.option(fc.oneof(fc.constantFrom("plain note", "has */ inside", "multi\nline\r\ntext", "x".repeat(120)), fc.string({ maxLength: 12 })), {
  nil: null,
});
const scalar = fc.oneof(fc.string({ maxLength: 5, unit: "binary" }), fc.integer({ min: -5, max: 5 }), fc.boolean(), fc.constant(null));
const primitive = fc.constantFrom<Primitive>("string", "number", "integer", "boolean", "null");

const leaf: fc.Arbitrary<Model> = fc.oneof(
  { arbitrary: primitive.map((k) => ({ k })), weight: 4 },
  {
    arbitrary: fc.uniqueArray(scalar, { minLength: 1, maxLength: 4, selector: (v) => JSON.stringify(v) }).map((values) => ({ k: "enum" as const, values })),
    weight: 1,
  },
  { arbitrary: fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.boolean()).map((value) => ({ k: "const" as const, value })), weight: 1 },
  { arbitrary: fc.uniqueArray(primitive, { minLength: 2, maxLength: 3 }).map((types) => ({ k: "types" as const, types })), weight: 1 },
);

function objectArb(sub: fc.Arbitrary<Model>, minRequired = 0): fc.Arbitrary<ObjectModel> {
  return fc
    .record({
      props: fc.uniqueArray(fc.record({ name: fc.constantFrom(...PROPERTY_NAMES), model: sub, required: fc.boolean(), description: descriptions }), {
        maxLength: 4,
        selector: (p) => p.name,
      }),
      extra: fc.option(fc.oneof(sub, fc.boolean()), { nil: undefined }),
    })
    .filter((o) => o.props.filter((p) => p.required).length >= minRequired)
    .map((o) => ({ k: "object" as const, ...o }));
}

/** Models that may refer to the defs in `refs` anywhere, and to def `self` as array items only. */
function modelArb(refs: readonly number[], self: number | undefined, depth: number): fc.Arbitrary<Model> {
  const options: fc.WeightedArbitrary<Model>[] = [{ arbitrary: leaf, weight: 4 }];
  if (refs.length > 0) options.push({ arbitrary: fc.constantFrom(...refs).map((def) => ({ k: "ref" as const, def })), weight: 2 });
  if (self !== undefined) options.push({ arbitrary: fc.constant<Model>({ k: "array", items: { k: "ref", def: self } }), weight: 1 });
  if (depth > 0) {
    const sub = modelArb(refs, self, depth - 1);
    options.push(
      { arbitrary: sub.map((items) => ({ k: "array" as const, items })), weight: 2 },
      { arbitrary: objectArb(sub), weight: 3 },
      {
        arbitrary: fc
          .record({
            items: fc.array(sub, { minLength: 1, maxLength: 3 }),
            min: fc.nat(3),
            rest: fc.option(fc.oneof(sub, fc.constant(false as const)), { nil: undefined }),
            style: fc.constantFrom("prefixItems" as const, "items" as const),
          })
          .map((t) => ({ k: "tuple" as const, ...t, min: Math.min(t.min, t.items.length) })),
        weight: 1,
      },
      {
        arbitrary: fc
          .record({ of: fc.array(sub, { minLength: 2, maxLength: 3 }), keyword: fc.constantFrom("anyOf" as const, "oneOf" as const) })
          .map((u) => ({ k: "union" as const, ...u })),
        weight: 1,
      },
      {
        arbitrary: fc.record({ of: sub, style: fc.constantFrom("anyOf" as const, "openapi" as const) }).map((n) => ({ k: "nullable" as const, ...n })),
        weight: 1,
      },
    );
  }
  return fc.oneof(...options);
}

/** Defs first (each may use those before it, and itself through arrays), then a root object. */
const caseArb: fc.Arbitrary<Case> = fc.nat(3).chain((count) => {
  const defs = Array.from({ length: count }, (_, i) =>
    i === 0
      ? objectArb(modelArb([], 0, 1), 0)
      : modelArb(
          Array.from({ length: i }, (_, j) => j),
          i,
          2,
        ),
  );
  return fc.record({
    defs: fc.tuple(...defs) as fc.Arbitrary<Model[]>,
    root: objectArb(
      modelArb(
        Array.from({ length: count }, (_, j) => j),
        undefined,
        2,
      ),
    ),
    rootRef: fc.boolean(),
    container: fc.constantFrom("$defs" as const, "definitions" as const),
  });
});

function defName(i: number): string {
  return `${DEF_NAMES[i % DEF_NAMES.length] as string}${i >= DEF_NAMES.length ? i : ""}`;
}

function pointer(container: string, name: string): string {
  return `#/${container}/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

function schemaOf(m: Model, c: Case): Record<string, unknown> {
  switch (m.k) {
    case "enum":
      return { enum: m.values };
    case "const":
      return { const: m.value };
    case "types":
      return { type: m.types };
    case "nullable":
      return m.style === "anyOf" ? { anyOf: [schemaOf(m.of, c), { type: "null" }] } : { ...schemaOf(m.of, c), nullable: true };
    case "array":
      return { type: "array", items: schemaOf(m.items, c) };
    case "tuple": {
      const items = m.items.map((i) => schemaOf(i, c));
      const rest = m.rest === undefined ? undefined : m.rest === false ? false : schemaOf(m.rest, c);
      const out: Record<string, unknown> = { type: "array", minItems: m.min };
      if (m.style === "prefixItems") Object.assign(out, { prefixItems: items }, rest === undefined ? {} : { items: rest });
      else Object.assign(out, { items }, rest === undefined ? {} : { additionalItems: rest });
      return out;
    }
    case "object": {
      const properties = Object.fromEntries(
        m.props.map((p) => [p.name, { ...schemaOf(p.model, c), ...(p.description === null ? {} : { description: p.description }) }]),
      );
      const out: Record<string, unknown> = { type: "object", properties };
      const required = m.props.filter((p) => p.required).map((p) => p.name);
      if (required.length > 0) out.required = required;
      if (m.extra !== undefined) out.additionalProperties = typeof m.extra === "boolean" ? m.extra : schemaOf(m.extra, c);
      return out;
    }
    case "union":
      return { [m.keyword]: m.of.map((b) => schemaOf(b, c)) };
    case "ref":
      return { $ref: pointer(c.container, defName(m.def)) };
    default:
      return { type: m.k };
  }
}

function inputSchema(c: Case): Record<string, unknown> {
  const defs = Object.fromEntries(c.defs.map((d, i) => [defName(i), schemaOf(d, c)]));
  if (c.rootRef) {
    defs.Root = schemaOf(c.root, c);
    return { $ref: pointer(c.container, "Root"), [c.container]: defs };
  }
  return { ...schemaOf(c.root, c), [c.container]: defs };
}

const json = fc.jsonValue({ maxDepth: 2 }).filter((v) => !JSON.stringify(v).includes('"__proto__"'));

function primitiveValue(k: Primitive): fc.Arbitrary<unknown> {
  switch (k) {
    case "string":
      return fc.string({ maxLength: 6, unit: "binary" });
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case "integer":
      return fc.integer();
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
  }
}

/** Values the schema of `m` accepts; `fuel` bounds how deep recursive defs go. */
function validValue(m: Model, c: Case, fuel: number): fc.Arbitrary<unknown> {
  switch (m.k) {
    case "enum":
      return fc.constantFrom(...m.values);
    case "const":
      return fc.constant(m.value);
    case "types":
      return fc.oneof(...m.types.map(primitiveValue));
    case "nullable":
      return fc.oneof(validValue(m.of, c, fuel), fc.constant(null));
    case "array":
      return fuel <= 0 ? fc.constant([]) : fc.array(validValue(m.items, c, fuel - 1), { maxLength: 2 });
    case "tuple": {
      const items = m.items.map((i) => validValue(i, c, fuel - 1));
      const rest = m.rest === undefined ? json : m.rest === false ? undefined : validValue(m.rest, c, fuel - 1);
      return fc
        .tuple(fc.tuple(...items), fc.integer({ min: m.min, max: m.items.length }), rest === undefined ? fc.constant([]) : fc.array(rest, { maxLength: 2 }))
        .map(([all, length, more]) => (length === m.items.length ? [...all, ...more] : all.slice(0, length)));
    }
    case "object": {
      const declared = new Set(m.props.map((p) => p.name));
      const members = m.props.map((p) => {
        const value = validValue(p.model, c, fuel - 1);
        return p.required
          ? value.map((v) => [[p.name, v]])
          : fuel <= 0
            ? fc.constant([])
            : fc.option(value, { nil: undefined }).map((v) => (v === undefined ? [] : [[p.name, v]]));
      });
      const extraValue = m.extra === true ? json : m.extra === undefined || m.extra === false ? undefined : validValue(m.extra, c, fuel - 1);
      const extras =
        extraValue === undefined
          ? fc.constant([])
          : fc.uniqueArray(fc.tuple(fc.constantFrom(...EXTRA_NAMES.filter((n) => !declared.has(n))), extraValue), { maxLength: 2, selector: (e) => e[0] });
      return fc.tuple(fc.tuple(...members), extras).map(([parts, more]) => Object.fromEntries([...parts.flat(), ...more] as [string, unknown][]));
    }
    case "union":
      return fc.oneof(...m.of.map((b) => validValue(b, c, fuel)));
    case "ref":
      return validValue(c.defs[m.def] as Model, c, fuel - 1);
    default:
      return primitiveValue(m.k);
  }
}

/**
 * Values the schema of `m` surely refuses: an object without one of its required properties, or
 * with one holding such a value, an array with one such element. Undefined when `m` has none of
 * those (a union could take the value through another branch).
 */
function invalidValue(m: Model, c: Case, fuel: number, seen: ReadonlySet<number> = new Set()): fc.Arbitrary<unknown> | undefined {
  switch (m.k) {
    case "object": {
      const required = m.props.filter((p) => p.required);
      const options: fc.Arbitrary<unknown>[] = [];
      if (required.length > 0) {
        options.push(
          fc.tuple(validValue(m, c, fuel), fc.nat(required.length - 1)).map(([value, i]) => {
            const copy = { ...(value as Record<string, unknown>) };
            delete copy[(required[i] as { name: string }).name];
            return copy;
          }),
        );
      }
      for (const p of required) {
        const bad = invalidValue(p.model, c, fuel - 1, seen);
        if (bad !== undefined)
          options.push(fc.tuple(validValue(m, c, fuel), bad).map(([value, v]) => ({ ...(value as Record<string, unknown>), [p.name]: v })));
      }
      return options.length === 0 ? undefined : fc.oneof(...options);
    }
    case "array": {
      const bad = invalidValue(m.items, c, fuel - 1, seen);
      return bad === undefined ? undefined : fc.tuple(fc.array(validValue(m.items, c, fuel - 1), { maxLength: 1 }), bad).map(([good, v]) => [...good, v]);
    }
    case "ref":
      return seen.has(m.def) ? undefined : invalidValue(c.defs[m.def] as Model, c, fuel - 1, new Set([...seen, m.def]));
    default:
      return undefined;
  }
}

/** A case with sample arguments: valid ones, and an invalid one when the root can have one. */
const sampleArb = caseArb.chain((c) => {
  const bad = invalidValue(c.root, c, 3);
  return fc.record({
    c: fc.constant(c),
    valid: fc.array(validValue(c.root, c, 3), { minLength: 1, maxLength: 2 }),
    invalid: bad === undefined ? fc.constant<unknown[]>([]) : fc.array(bad, { minLength: 1, maxLength: 2 }),
  });
});

const SERVER = "prop-server.v2";

function toolsOf(samples: readonly { c: Case }[]): DeclaredTool[] {
  return samples.map((s, i) => {
    const name = `${TOOL_NAMES[i % TOOL_NAMES.length] as string}${i >= TOOL_NAMES.length ? `-${i}` : ""}`;
    const tool: RawTool = { name, inputSchema: inputSchema(s.c) };
    return { server: SERVER, key: `${SERVER}:${name}:h`, tool: admitted(tool) };
  });
}

function failure(result: TypecheckResult, files: Record<string, string>): string {
  const lines = (files["use.ts"] ?? "").split("\n");
  return (
    result.diagnostics.map((d) => `${d.file}:${d.line} TS${d.code} ${d.message}\n    ${d.file === "use.ts" ? lines[d.line - 1] : ""}`).join("\n") ||
    result.output
  );
}

describe("declarations (property)", () => {
  it("accept every schema-valid argument and refuse arguments missing a required property", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(sampleArb, { minLength: 25, maxLength: 25 }), async (samples) => {
        const tools = toolsOf(samples);
        const names = CodeNames.of(tools.map((t) => ({ server: t.server, tool: t.tool.name })));
        const ns = names.namespaceOf(SERVER) as string;
        const lines: string[] = [];
        let invalid = 0;
        samples.forEach((s, i) => {
          const fn = names.functionOf(SERVER, (tools[i] as DeclaredTool).tool.name) as string;
          s.valid.forEach((v, j) => {
            lines.push(`const ok_${i}_${j}: Parameters<typeof ${ns}.${fn}>[0] = ${JSON.stringify(v)};`);
          });
          s.invalid.forEach((v, j) => {
            invalid++;
            lines.push("// @ts-expect-error", `const bad_${i}_${j}: Parameters<typeof ${ns}.${fn}>[0] = ${JSON.stringify(v)};`);
          });
        });
        const files = { "decl.ts": declarations(tools, { names }), "use.ts": `${lines.join("\n")}\nexport {};\n` };
        const result = await typecheck(files);
        expect(result.diagnostics.length, failure(result, files)).toBe(0);
        expect(result.exitCode, result.output).toBe(0);
        // Each batch checks refusals too (most roots have a required property).
        expect(invalid).toBeGreaterThan(0);
      }),
      { numRuns: 3, endOnFailure: true },
    );
  });

  it("an invalid argument the declarations accepted would fail the run", async () => {
    // The same harness with an argument the type does take under an @ts-expect-error: the
    // unused directive is itself an error, so a declaration too wide to refuse fails the property.
    const tools: DeclaredTool[] = [
      { server: "s", key: "s:t:h", tool: admitted({ name: "t", inputSchema: { type: "object", properties: { a: { type: "string" } } } }) },
    ];
    const result = await typecheck({
      "decl.ts": declarations(tools),
      "use.ts": '// @ts-expect-error\nconst bad: Parameters<typeof s.t>[0] = { a: "x" };\nexport {};\n',
    });
    expect(result.diagnostics.map((d) => d.code)).toEqual([2578]);
  });

  it("are the same bytes for the same schemas, whatever order the tools come in", () => {
    fc.assert(
      fc.property(fc.array(caseArb, { minLength: 1, maxLength: 6 }), (cases) => {
        const tools = toolsOf(cases.map((c) => ({ c })));
        const again = toolsOf(cases.map((c) => ({ c }))).reverse();
        expect(declarations(again)).toBe(declarations(tools));
      }),
      { numRuns: 50 },
    );
  });
});
