import path from "node:path";
import { describe, expect, it } from "vitest";
import { cacheKey } from "../../src/cache/cacheEntry.js";
import { JsonlStore } from "../../src/cache/jsonlStore.js";
import { createToolHasher } from "../../src/catalog/toolHash.js";
import { ToolCatalog } from "../../src/catalog/toolCatalog.js";
import { ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";
import type { SummarizeInput } from "../../src/summarize/types.js";
import type { AdmittedExposedTool } from "../../src/catalog/types.js";
import { makeEntry } from "../helpers/cacheEntries.js";
import { useTempDir } from "../helpers/tempDir.js";
import { admitted } from "../helpers/admitted.js";

describe("summaries of an older summarizer version", () => {
  const temp = useTempDir();

  it("are served at once and summarized again, without waiting for warm --stale", async () => {
    const hasher = await createToolHasher();
    const tools: AdmittedExposedTool[] = ["old", "current", "llm"].map((name) => ({
      server: "s",
      name: `s_${name}`,
      uri: `mcp://s/${name}`,
      tool: admitted({ name, description: `Does the ${name} thing.`, inputSchema: { type: "object" } }),
    }));
    const store = await JsonlStore.open({ file: path.join(temp.path, "summaries.jsonl") });
    const summarizerId = new ExtractiveSummarizer().id;
    const by = ["extractive@2", summarizerId, "openai:gpt-4o-mini"];
    for (const [i, exposed] of tools.entries()) {
      const key = cacheKey("s", exposed.tool.name, hasher.hash(exposed.tool));
      await store.append({
        ...makeEntry("s", exposed.tool.name, `Cached ${exposed.tool.name}.`),
        key,
        hash: key.split(":")[2] as string,
        summarizer: by[i] as string,
      });
    }
    const queued: SummarizeInput[] = [];
    const catalog = new ToolCatalog({ store, hasher, jobs: { enqueue: (input) => queued.push(input) }, summarizerIds: [summarizerId] });
    try {
      const [counts] = catalog.setTools(tools);
      expect(counts).toMatchObject({ tools: 3, hits: 3, queued: 1 });
      expect(queued.map((q) => q.tool.name)).toEqual(["old"]);
      expect(catalog.get("s_old")?.summary?.summary).toBe("Cached old.");
    } finally {
      catalog.close();
      await store.close();
    }
  });
});
