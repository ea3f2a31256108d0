import path from "node:path";
import { describe, expect, it } from "vitest";
import { JsonlStore } from "../../src/cache/jsonlStore.js";
import { ToolCatalog } from "../../src/catalog/toolCatalog.js";
import { createToolHasher } from "../../src/catalog/toolHash.js";
import { createLogger } from "../../src/log/logger.js";
import type { AdmittedExposedTool } from "../../src/catalog/types.js";
import { admitted } from "../helpers/admitted.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("ToolCatalog.validate", () => {
  const temp = useTempDir();

  it("warns once per tool key that calls are forwarded unvalidated, not on every call", async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: "warn", sink: (line) => lines.push(line) });
    const store = await JsonlStore.open({ file: path.join(temp.path, "summaries.jsonl"), readOnly: true });
    const catalog = new ToolCatalog({ store, hasher: await createToolHasher(), logger });
    try {
      // A schema that constrains nothing is skipped by the validator, as gitlab's are.
      const exposed = (description: string): AdmittedExposedTool => ({
        server: "loose",
        name: "loose_anything",
        uri: "mcp://loose/anything",
        tool: admitted({ name: "anything", description, inputSchema: { $comment: "accepts anything" } }),
      });
      catalog.setTools([exposed("Does anything.")]);
      const tool = catalog.get("loose_anything");
      expect(tool).toBeDefined();
      for (let i = 0; i < 3; i++) expect(catalog.validate(tool!, { n: i })).toMatchObject({ ok: true, skipped: expect.any(String) });
      const warnings = () => lines.filter((l) => l.includes("forwarded unvalidated"));
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]).toContain("tool=anything");

      // A changed schema is another key, and gets one warning of its own.
      catalog.setTools([exposed("Does anything else.")]);
      const changed = catalog.get("loose_anything")!;
      expect(changed.key).not.toBe(tool!.key);
      catalog.validate(changed, {});
      catalog.validate(changed, {});
      expect(warnings()).toHaveLength(2);
    } finally {
      catalog.close();
      await store.close();
    }
  });
});
