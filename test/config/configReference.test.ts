import { describe, expect, it } from "vitest";
import { configReference } from "../../src/config/configReference.js";
import { configFileSchema } from "../../src/config/schema.js";

describe("configReference", () => {
  it("has one row per field with the schema's descriptions", () => {
    const table = configReference();
    const rows = table.trim().split("\n");
    expect(rows[0]).toBe("| Field | Type | Default | Description |");
    const fields = rows.slice(2).map((row) => /^\| `([^`]+)`/.exec(row)?.[1]);
    const top = Object.keys(configFileSchema.shape).filter((k) => k !== "summary" && k !== "code" && k !== "servers");
    for (const key of top) expect(fields).toContain(key);
    expect(fields).toContain("summary.word_budget");
    expect(fields).toContain("code.timeout_ms");
    expect(fields).toContain("servers.<name>.timeout_ms");
    expect(table).toContain("| `servers.<name>.timeout_ms` | integer > 0 | `30000` | Per-call timeout |");
  });
});
