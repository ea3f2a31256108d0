import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LineIndex } from "../../src/cache/lineIndex.js";

type Op =
  | { kind: "set"; key: string; offset: number }
  | { kind: "setBytes"; key: string; offset: number }
  | { kind: "delete"; key: string }
  | { kind: "clear" };

describe("LineIndex", () => {
  it("answers as a Map would for any sequence of sets, deletes and clears", () => {
    const key = fc.constantFrom("a:b:0", "a:b:1", "gïthub:crée:2", "😀:x:3", "k", "", "a:b:00");
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant("set" as const), key, offset: fc.nat(1e12) }),
      fc.record({ kind: fc.constant("setBytes" as const), key, offset: fc.nat(1e12) }),
      fc.record({ kind: fc.constant("delete" as const), key }),
      fc.record({ kind: fc.constant("clear" as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const index = new LineIndex();
        const model = new Map<string, number>();
        ops.forEach((o, step) => {
          if (o.kind === "set") {
            index.set(o.key, o.offset, step, step + 1);
            model.set(o.key, o.offset);
          } else if (o.kind === "setBytes") {
            // The key inside a longer line, as the loader hands it on.
            const line = Buffer.from(`{"key":"${o.key}",...}`);
            index.setKeyBytes(line, 8, 8 + Buffer.byteLength(o.key), o.offset, step, step + 1);
            model.set(o.key, o.offset);
          } else if (o.kind === "delete") {
            index.delete(o.key);
            model.delete(o.key);
          } else {
            index.clear();
            model.clear();
          }
        });
        expect(index.size).toBe(model.size);
        expect([...index.keys()]).toEqual([...model.keys()]);
        for (const [k, offset] of model) {
          expect(index.has(k)).toBe(true);
          expect(index.find(k)?.offset).toBe(offset);
        }
        expect(index.find("missing")).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it("keeps every key and its newest place while it grows past many doublings", () => {
    const index = new LineIndex();
    const count = 50_000;
    for (let i = 0; i < count; i++) index.set(`server:tool_${i}:${i.toString(16).padStart(16, "0")}`, i * 500, 400, i + 1);
    // Newer lines for every third key.
    for (let i = 0; i < count; i += 3) index.set(`server:tool_${i}:${i.toString(16).padStart(16, "0")}`, 1e10 + i, 123, count + i + 1);
    expect(index.size).toBe(count);
    for (let i = 0; i < count; i++) {
      const at = index.find(`server:tool_${i}:${i.toString(16).padStart(16, "0")}`);
      expect(at).toEqual(i % 3 === 0 ? { offset: 1e10 + i, length: 123, lineNumber: count + i + 1 } : { offset: i * 500, length: 400, lineNumber: i + 1 });
    }
    const keys = [...index.keys()];
    expect(keys).toHaveLength(count);
    expect(keys[0]).toBe(`server:tool_0:${"0".repeat(16)}`);
    expect(keys[count - 1]).toBe(`server:tool_${count - 1}:${(count - 1).toString(16).padStart(16, "0")}`);
  });
});
