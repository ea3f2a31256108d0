import { describe, expect, it } from "vitest";
import { parseJsonText } from "../../src/config/parseJsonText.js";

describe("parseJsonText", () => {
  it("accepts comments and trailing commas but not a lone comma", () => {
    expect(parseJsonText('{ "a": [1, 2,], // note\n "s": "// not a comment", }')).toEqual({
      ok: true,
      value: { a: [1, 2], s: "// not a comment" },
    });
    const bad = parseJsonText("{ ,}");
    expect(bad).toMatchObject({ ok: false, line: 1, column: 3 });
  });

  it("gives line and column of a raw line break in a string", () => {
    expect(parseJsonText('{\n  "a": "x\ny"\n}')).toMatchObject({ ok: false, line: 2, column: 10 });
  });
});
