import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeShapedText, shapeJsonText, shapeJsonTextDetailed, SHAPE_MAX_TEXT_CHARS } from "../../src/result/shapeJsonText.js";

/** Keys that collide with the table form or with object internals. */
const awkwardKey = fc.constantFrom("@columns", "@rows", "@@columns", "@@@rows", "__proto__", "constructor", "", "a b", "\u00e9", "10", "2");
const key = fc.oneof(fc.string({ maxLength: 6 }), awkwardKey);
/** Numbers a double writes back as they came (15 significant digits or fewer). */
const safeNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => Number(d.toPrecision(12))),
);
const leaf = fc.oneof(fc.string({ maxLength: 8 }), safeNumber, fc.boolean(), fc.constant(null));

/** JSON values rich in arrays of objects sharing their keys (the table form's case) and awkward keys. */
const value: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(tie("v"), { maxLength: 4 }),
    fc.dictionary(key, tie("v"), { maxKeys: 4 }),
    fc
      .tuple(fc.uniqueArray(key, { minLength: 1, maxLength: 4 }), fc.integer({ min: 2, max: 6 }))
      .chain(([keys, rows]) =>
        fc
          .array(fc.tuple(...keys.map(() => tie("v"))), { minLength: rows, maxLength: rows })
          .map((cells) => cells.map((row) => Object.fromEntries(keys.map((k, i) => [k, row[i]])))),
      ),
  ),
})).v;

/** The round trip every test below relies on: a rewritten text decodes to the original value. */
function expectLossless(text: string): void {
  const shaped = shapeJsonTextDetailed(text, "compact");
  if (!shaped.changed) {
    expect(shaped.text).toBe(text);
    return;
  }
  // node's deep equality: vitest's reads an own `constructor` key as the object's type.
  const decoded = decodeShapedText(shaped.text);
  expect(isDeepStrictEqual(decoded, JSON.parse(text)), `${text} -> ${shaped.text}`).toBe(true);
}

describe("shapeJsonText compact", () => {
  it("property: any JSON value, pretty or minified, comes back exactly from what compact writes", () => {
    fc.assert(
      fc.property(value, fc.boolean(), (v, pretty) => {
        const text = JSON.stringify(v, null, pretty ? 2 : undefined);
        if (text === undefined) return;
        expectLossless(text);
      }),
      { numRuns: 600 },
    );
  });

  it("property: fast-check's own JSON values (any number, any string) never lose a value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expectLossless(JSON.stringify(v, null, 2));
      }),
      { numRuns: 400 },
    );
  });

  it("property: texts of JSON-like garbage pass through unchanged or lossless, and never throw", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom("{", "}", "[", "]", ",", ":", '"', "1", "a", " ", "\\", "e", "-", ".") }), (text) => {
        expectLossless(text);
      }),
      { numRuns: 600 },
    );
  });

  it("writes an array of objects sharing their keys as a header and rows, and minifies the rest", () => {
    const text = JSON.stringify(
      {
        entities: [
          { name: "Ada", type: "person", tags: ["a"] },
          { name: "Brook", type: "project", tags: [] },
          { name: "Cy", type: "team", tags: [] },
        ],
        total: 3,
      },
      null,
      2,
    );
    expect(shapeJsonText(text, "compact")).toBe(
      '{"entities":{"@columns":["name","type","tags"],"@rows":[["Ada","person",["a"]],["Brook","project",[]],["Cy","team",[]]]},"total":3}',
    );
    // Two rows of three short keys save less than the header costs: written as objects.
    expect(
      shapeJsonText(
        JSON.stringify(
          [
            { a: 1, b: 2 },
            { a: 3, b: 4 },
          ],
          null,
          2,
        ),
        "compact",
      ),
    ).toBe('[{"a":1,"b":2},{"a":3,"b":4}]');
  });

  it("keeps objects whose keys differ as objects, and a single object as an object", () => {
    const text = JSON.stringify(
      [
        { a: 1, b: 2 },
        { a: 1, c: 2 },
      ],
      null,
      2,
    );
    expect(shapeJsonText(text, "compact")).toBe('[{"a":1,"b":2},{"a":1,"c":2}]');
    expect(shapeJsonText('[ {"name": "only"} ]', "compact")).toBe('[{"name":"only"}]');
  });

  it("escapes an upstream's own @columns/@rows keys, so no upstream object reads as a table", () => {
    const upstream = { "@columns": ["x"], "@rows": [[1]] };
    const shaped = shapeJsonText(JSON.stringify(upstream, null, 1), "compact");
    expect(shaped).toBe('{"@@columns":["x"],"@@rows":[[1]]}');
    expect(decodeShapedText(shaped)).toStrictEqual(upstream);
  });

  it("keeps __proto__ an own key on the way back", () => {
    const text = '[{"__proto__": 1, "x": "aaaaaaaaaa"}, {"__proto__": 2, "x": "bbbbbbbbbbb"}, {"__proto__": 3, "x": "c"}]';
    const shaped = shapeJsonText(text, "compact");
    expect(shaped).toContain("@columns");
    expect(decodeShapedText(shaped)).toStrictEqual(JSON.parse(text));
  });

  it("passes on unchanged: numbers a double would round, a key written twice, -0", () => {
    for (const text of [
      '{"id": 12345678901234567890}',
      '{"p": 0.12345678901234567}',
      '{"x": 1e400}',
      '{"x": 1e-400}',
      '{"a": 1, "a": 2}',
      '{"z": -0}',
      '{"ok": "12345678901234567890 in a string is fine", "n": -0.0}',
    ]) {
      expect(shapeJsonText(text, "compact")).toBe(text);
    }
    // Digits inside strings are not numbers.
    expect(shapeJsonText('{ "id": "12345678901234567890" }', "compact")).toBe('{"id":"12345678901234567890"}');
  });

  it("passes on unchanged: text that is not a JSON object or array", () => {
    for (const text of ["", "plain words", "42", '"a string"', "true", "[not json", '{"a": 1} trailing', "[abridge: output cut]", "   "]) {
      expect(shapeJsonText(text, "compact")).toBe(text);
    }
  });

  it("passes on unchanged, without throwing: nesting past the stack and text past the size cap", () => {
    const deep = `${"[".repeat(200_000)}${"]".repeat(200_000)}`;
    expect(shapeJsonText(deep, "compact")).toBe(deep);
    const big = `[${'"x",'.repeat(SHAPE_MAX_TEXT_CHARS / 4)}"x"]`;
    expect(big.length).toBeGreaterThan(SHAPE_MAX_TEXT_CHARS);
    expect(shapeJsonText(big, "compact")).toBe(big);
  });

  it("as-is never changes a text", () => {
    const text = JSON.stringify([{ a: 1 }, { a: 2 }], null, 2);
    expect(shapeJsonText(text, "as-is")).toBe(text);
  });
});

describe("shapeJsonText lean", () => {
  it("leaves out null and empty fields and counts them; a column empty in every row goes, one empty in some rows stays", () => {
    const text = JSON.stringify(
      {
        a: null,
        b: "",
        c: [],
        d: {},
        e: { f: null },
        rows: [
          { id: 1, x: null, y: null },
          { id: 2, x: 5, y: null },
        ],
        keep: [null, ""],
      },
      null,
      2,
    );
    const shaped = shapeJsonTextDetailed(text, "lean");
    expect(JSON.parse(shaped.text)).toStrictEqual({
      rows: [
        { id: 1, x: null },
        { id: 2, x: 5 },
      ],
      keep: [null, ""],
    });
    expect(shaped.dropped).toBe(8);
  });
});
