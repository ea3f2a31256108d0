import { describe, expect, it } from "vitest";
import { boundedJson } from "../../../src/code/runtime/boundedJson.js";

describe("bounded JSON", () => {
  it("writes what JSON.stringify writes", () => {
    const values: unknown[] = [
      { a: 1, b: [true, null, 'x\n"y"', 1.5e300], c: { d: undefined, e: () => 1, f: Symbol("s") }, g: [undefined, () => 1] },
      "ünïcödé ✓",
      [NaN, Infinity, -0],
      { toJSON: () => ({ replaced: true }) },
      new Date(0),
      JSON.parse('{"__proto__": {"polluted": true}}'),
    ];
    for (const value of values) {
      const result = boundedJson(value, 1_000_000);
      expect(result).toEqual({ ok: true, json: JSON.stringify(value), bytes: Buffer.byteLength(JSON.stringify(value)) });
    }
    expect(boundedJson(undefined, 10)).toEqual({ ok: true, json: "null", bytes: 4 });
  });

  it("gives up past the bound without writing the rest", () => {
    const big = "x".repeat(100_000_000);
    const result = boundedJson({ data: big }, 16 * 1024 * 1024);
    expect(result).toMatchObject({ ok: false, reason: "too-large" });
    expect(
      boundedJson(
        Array.from({ length: 1000 }, () => "y".repeat(100)),
        10_000,
      ),
    ).toMatchObject({ ok: false, reason: "too-large" });
    // Bytes are UTF-8: 4 characters of 3 bytes each plus quotes are 14 bytes.
    expect(boundedJson("€€€€", 13)).toMatchObject({ ok: false, reason: "too-large" });
    expect(boundedJson("€€€€", 14)).toMatchObject({ ok: true, bytes: 14 });
  });

  it("refuses what JSON cannot hold", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(boundedJson(cyclic, 1000)).toMatchObject({ ok: false, reason: "not-json", message: expect.stringContaining("cycle") });
    expect(boundedJson({ n: 1n }, 1000)).toMatchObject({ ok: false, reason: "not-json", message: expect.stringContaining("BigInt") });
    let deep: unknown = 1;
    for (let i = 0; i < 300; i++) deep = [deep];
    expect(boundedJson(deep, 10_000)).toMatchObject({ ok: false, reason: "not-json", message: expect.stringContaining("256") });
    // The same object twice, side by side, is no cycle.
    const shared = { x: 1 };
    expect(boundedJson([shared, shared], 1000)).toMatchObject({ ok: true, json: '[{"x":1},{"x":1}]' });
  });
});
