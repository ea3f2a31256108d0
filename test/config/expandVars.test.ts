import { describe, expect, it } from "vitest";
import { configReference } from "../../src/config/configReference.js";
import { expandVars } from "../../src/config/expandVars.js";
import { didYouMean } from "../../src/util/suggest.js";
import { parseJsonText } from "../../src/config/parseJsonText.js";
import { configFileSchema } from "../../src/config/schema.js";

describe("expandVars", () => {
  it("reports what it substituted and leaves failed references as written", () => {
    const result = expandVars("a=${A} b=${B:-x${A}} c=${C} $${D} $E", { A: "1" });
    expect(result.value).toBe("a=1 b=x1 c=${C} ${D} $E");
    expect(result.substituted).toEqual(["1", "1"]);
    expect(result.problems).toEqual([expect.objectContaining({ variable: "C" })]);
  });

  it("treats ${env:NAME} as ${NAME}", () => {
    expect(expandVars("${env:HOME_DIR}", { HOME_DIR: "/h" }).value).toBe("/h");
  });
});

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

describe("didYouMean", () => {
  it("finds close keys and refuses far ones", () => {
    expect(didYouMean("comand", ["command", "args"])).toBe("command");
    expect(didYouMean("connectTimeoutMs", ["connect_timeout_ms", "timeout_ms"])).toBe("connect_timeout_ms");
    expect(didYouMean("zzz", ["command", "args"])).toBeUndefined();
  });
});

describe("configReference", () => {
  it("has one row per field with the schema's descriptions", () => {
    const table = configReference();
    const rows = table.trim().split("\n");
    expect(rows[0]).toBe("| Field | Type | Default | Description |");
    const fields = rows.slice(2).map((row) => /^\| `([^`]+)`/.exec(row)?.[1]);
    const top = Object.keys(configFileSchema.shape).filter((k) => k !== "summary" && k !== "servers");
    for (const key of top) expect(fields).toContain(key);
    expect(fields).toContain("summary.word_budget");
    expect(fields).toContain("servers.<name>.timeout_ms");
    expect(table).toContain("| `servers.<name>.timeout_ms` | integer > 0 | `30000` | Per-call timeout |");
  });
});
