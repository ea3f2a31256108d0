import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  inferShape,
  OBSERVED_BOUNDS,
  ObservedShapes,
  shapeDepth,
  shapeType,
  widenShape,
  type ObservedShape,
} from "../../src/code/declarations/observedShapes.js";
import { AbridgeError } from "../../src/model/errors.js";
import { typecheck } from "./typecheck.js";
import { isObject } from "../../src/model/json.js";

const typeOf = (value: unknown): string => shapeType(inferShape(value));

/** JSON values whose keys are plain data to TypeScript too (not `__proto__`, not Object.prototype's members). */
const jsonValue = (maxDepth: number) =>
  fc.jsonValue({ maxDepth }).filter((v) => {
    const keys: string[] = [];
    JSON.stringify(v, (key, val: unknown) => {
      keys.push(key);
      return val;
    });
    return keys.every((k) => k === "" || !(k in Object.prototype));
  });

describe("inferShape and shapeType", () => {
  it("types scalars, objects by their keys and arrays by their elements", () => {
    expect(typeOf("x")).toBe("string");
    expect(typeOf(1.5)).toBe("number");
    expect(typeOf(false)).toBe("boolean");
    expect(typeOf(null)).toBe("null");
    expect(typeOf({ id: 1, name: "n", "odd-key": true, nested: { list: [1, "a", null] } })).toBe(
      '{ id: number; name: string; "odd-key": boolean; nested: { list: (string | number | null)[] } }',
    );
    expect(typeOf([])).toBe("unknown[]");
    expect(typeOf({})).toBe("{ [key: string]: unknown }");
    expect(typeOf([{ a: 1 }, { a: 2, b: "x" }])).toBe("{ a: number; b?: string }[]");
  });

  it("looks at the first elements of an array only", () => {
    const list: unknown[] = Array.from({ length: OBSERVED_BOUNDS.elements }, () => 1);
    list.push("late");
    expect(typeOf(list)).toBe("number[]");
  });

  it("stops at the depth bound, the key bound and the node bound", () => {
    let deep: unknown = "leaf";
    for (let i = 0; i < OBSERVED_BOUNDS.depth + 2; i++) deep = { d: deep };
    const shape = inferShape(deep);
    expect(shapeDepth(shape)).toBe(OBSERVED_BOUNDS.depth);
    expect(shapeType(shape)).toBe("{ d: { d: { d: { d: unknown } } } }");

    const wide = Object.fromEntries(Array.from({ length: OBSERVED_BOUNDS.keys + 5 }, (_, i) => [`k${i}`, i]));
    const wideShape = inferShape(wide);
    expect(wideShape.object?.keys.length).toBe(OBSERVED_BOUNDS.keys);
    expect(wideShape.object?.more).toBe(true);
    expect(shapeType(wideShape)).toMatch(/; k31: number; \[key: string\]: unknown \}$/);

    const big = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, Object.fromEntries(Array.from({ length: 30 }, (_, j) => [`j${j}`, j]))]));
    const bigShape = inferShape(big);
    // Past the budget every node is `unknown`, so the count of described nodes is bounded.
    const described = (s: ObservedShape): number => (s.unknown === true ? 0 : 1 + (s.object?.keys ?? []).reduce((n, k) => n + described(k.shape), 0));
    expect(described(bigShape)).toBe(OBSERVED_BOUNDS.nodes);
  });
});

describe("widenShape", () => {
  it("unions kinds, merges keys and marks keys some objects lack as optional", () => {
    const a = inferShape({ id: 1, name: "x", tags: ["a"] });
    const b = inferShape({ id: "2", tags: [], extra: null });
    expect(shapeType(widenShape(a, b))).toBe("{ id: string | number; name?: string; tags: string[]; extra?: null }");
    expect(shapeType(widenShape(inferShape(1), inferShape({ a: 1 })))).toBe("number | { a: number }");
    expect(widenShape(a, a)).toEqual(a);
  });

  it("anything unknown makes the place unknown", () => {
    let deep: unknown = 1;
    for (let i = 0; i < OBSERVED_BOUNDS.depth + 1; i++) deep = [deep];
    expect(shapeType(widenShape(inferShape(deep), inferShape([[[["x"]]]])))).toBe("unknown[][][][]");
  });

  it("stays within the bounds whatever it is fed, and is deterministic", () => {
    fc.assert(
      fc.property(fc.array(jsonValue(8), { minLength: 1, maxLength: 8 }), (values) => {
        const widen = (list: unknown[]): ObservedShape => list.map(inferShape).reduce((acc, s) => widenShape(acc, s));
        const shape = widen(values);
        expect(shapeDepth(shape)).toBeLessThanOrEqual(OBSERVED_BOUNDS.depth);
        const described = (s: ObservedShape): number =>
          s.unknown === true ? 0 : 1 + (s.array === undefined ? 0 : described(s.array)) + (s.object?.keys ?? []).reduce((n, k) => n + described(k.shape), 0);
        expect(described(shape)).toBeLessThanOrEqual(OBSERVED_BOUNDS.nodes);
        const keyCounts = (s: ObservedShape): number[] => [
          s.object?.keys.length ?? 0,
          ...(s.array ? keyCounts(s.array) : []),
          ...(s.object?.keys ?? []).flatMap((k) => keyCounts(k.shape)),
        ];
        expect(Math.max(...keyCounts(shape))).toBeLessThanOrEqual(OBSERVED_BOUNDS.keys);
        expect(JSON.stringify(widen(values))).toBe(JSON.stringify(shape));
      }),
      { numRuns: 200 },
    );
  });

  it("the compiler accepts every value under its inferred and widened types, and refuses a missing key", async () => {
    const cases = fc.sample(fc.tuple(jsonValue(6), jsonValue(6)), { numRuns: 120 });
    const lines: string[] = [];
    let refusals = 0;
    cases.forEach(([a, b], i) => {
      lines.push(`const v${i}: ${typeOf(a)} = ${JSON.stringify(a)};`);
      const wide = shapeType(widenShape(inferShape(a), inferShape(b)));
      lines.push(`const wa${i}: ${wide} = ${JSON.stringify(a)};`, `const wb${i}: ${wide} = ${JSON.stringify(b)};`);
      // An object's keys are all required in its own inferred type (within the key bound).
      if (isObject(a)) {
        const keys = Object.keys(a);
        if (keys.length > 0 && keys.length <= OBSERVED_BOUNDS.keys) {
          const { [keys[0] as string]: _dropped, ...rest } = a as Record<string, unknown>;
          lines.push("// @ts-expect-error", `const m${i}: ${typeOf(a)} = ${JSON.stringify(rest)};`);
          refusals++;
        }
      }
    });
    expect(refusals).toBeGreaterThan(0);
    const result = await typecheck({ "shapes.ts": `${lines.join("\n")}\nexport {};\n` });
    expect(result.diagnostics.slice(0, 10)).toEqual([]);
    expect(result.exitCode).toBe(0);
  });
});

describe("ObservedShapes", () => {
  it("keeps a shape per key, widened by later results, and says when it changed", () => {
    const store = new ObservedShapes();
    expect(store.get("s:t:h")).toBeUndefined();
    expect(store.observe("s:t:h", { a: 1 })).toBe(true);
    expect(store.observe("s:t:h", { a: 2 })).toBe(false);
    expect(store.observe("s:t:h", { a: 2, b: "x" })).toBe(true);
    expect(shapeType(store.get("s:t:h") as ObservedShape)).toBe("{ a: number; b?: string }");
    // Another hash is another tool: it starts afresh.
    store.observe("s:t:other", [true]);
    expect(shapeType(store.get("s:t:other") as ObservedShape)).toBe("boolean[]");
  });

  it("holds at most its limit, dropping the least recently used", () => {
    const store = new ObservedShapes(2);
    store.observe("a", 1);
    store.observe("b", 2);
    store.get("a");
    store.observe("c", 3);
    expect(store.size).toBe(2);
    expect(store.get("b")).toBeUndefined();
    expect(store.get("a")).toBeDefined();
    expect(store.get("c")).toBeDefined();
    expect(() => new ObservedShapes(0)).toThrow(RangeError);
  });

  it("serializes and deserializes to the same store", () => {
    const store = new ObservedShapes();
    store.observe("x:one:1", { id: 1, list: [{ k: "v" }], more: null });
    store.observe("x:one:1", { id: 2, list: [] });
    store.observe("x:two:2", ["a", 1]);
    const text = store.serialize();
    const back = ObservedShapes.deserialize(text);
    expect(back.serialize()).toBe(text);
    expect(back.get("x:one:1")).toEqual(store.get("x:one:1"));
    // A smaller limit keeps the most recent entries.
    const small = ObservedShapes.deserialize(text, 1);
    expect(small.size).toBe(1);
    expect(small.get("x:two:2")).toBeDefined();
  });

  it("drops entries that are not shapes, bounds the rest again, and refuses other files", () => {
    let deep: ObservedShape = { string: true };
    for (let i = 0; i < OBSERVED_BOUNDS.depth + 3; i++) deep = { array: deep };
    const text = JSON.stringify({
      version: 1,
      shapes: [
        ["ok", { number: true }],
        ["bad-kind", { number: "yes" }],
        ["bad-member", { weird: true }],
        ["bad-keys", { object: { keys: [{ name: 1, shape: {} }] } }],
        [
          "dup-keys",
          {
            object: {
              keys: [
                { name: "a", shape: {} },
                { name: "a", shape: {} },
              ],
            },
          },
        ],
        ["too-deep", deep],
        ["wide", { object: { keys: Array.from({ length: OBSERVED_BOUNDS.keys + 8 }, (_, i) => ({ name: `k${i}`, shape: { number: true } })) } }],
        "not an entry",
      ],
    });
    const store = ObservedShapes.deserialize(text);
    expect(store.size).toBe(2);
    expect(store.get("ok")).toEqual({ number: true });
    const wide = store.get("wide");
    expect(wide?.object?.keys.length).toBe(OBSERVED_BOUNDS.keys);
    expect(wide?.object?.more).toBe(true);
    expect(() => ObservedShapes.deserialize("{")).toThrow(AbridgeError);
    expect(() => ObservedShapes.deserialize(JSON.stringify({ version: 2, shapes: [] }))).toThrow(/expected \{"version": 1/);
  });
});
