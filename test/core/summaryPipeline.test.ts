import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { listedToolTokens } from "../../src/catalog/renderTools.js";
import { openSummaryPipeline } from "../../src/core/summaryPipeline.js";
import { assignNames } from "../../src/model/names.js";
import type { AdmittedExposedTool } from "../../src/catalog/types.js";
import { admitted } from "../helpers/admitted.js";
import { loadCorpus } from "../catalog/corpusTools.js";
import { useTempDir } from "../helpers/tempDir.js";

/** The tools of one corpus server as discovery exposes them. */
function exposed(serverName: string): AdmittedExposedTool[] {
  const server = loadCorpus().find((s) => s.server === serverName);
  if (server === undefined) throw new Error(`corpus server ${serverName} missing`);
  const names = assignNames(
    server.tools.map((t) => ({ server: server.server, tool: t.name, prefix: true })),
    "_",
  );
  return server.tools.map((tool, i) => ({ server: server.server, tool: admitted(tool), name: names[i]!.name, uri: names[i]!.uri }));
}

describe("summary pipeline", () => {
  const temp = useTempDir();

  it("summarizes what the catalog misses into the cache and serves it; a second pipeline on that cache hits", async () => {
    const cacheFile = path.join(temp.path, "summaries.jsonl");
    const tools = exposed("github");
    const first = await openSummaryPipeline({ cacheFile, env: {} });
    let entries: number;
    try {
      const [counts] = first.catalog.setTools(tools);
      expect(counts).toMatchObject({ server: "github", tools: tools.length, hits: 0, queued: tools.length });
      await first.queue.drain();
      expect(first.catalog.stats()).toMatchObject({ tools: tools.length, summarized: tools.length });
      // Every stored entry reached the catalog that serves the lists.
      for (const tool of first.catalog.tools()) {
        expect(tool.summary, tool.key).toBeDefined();
        expect(tool.summary?.summary).toBe(first.store.get(tool.key)?.summary);
      }
      entries = (await readFile(cacheFile, "utf8")).split("\n").filter((l) => l !== "").length;
      expect(entries).toBe(tools.length);
    } finally {
      await first.close();
    }
    const second = await openSummaryPipeline({ cacheFile, env: {} });
    try {
      const [counts] = second.catalog.setTools(tools);
      expect(counts).toMatchObject({ tools: tools.length, hits: tools.length, queued: 0 });
      // Each pipeline owns the memo its catalog keeps records in: the first one's is not shared.
      expect(second.memo).not.toBe(first.memo);
      expect(second.memo.tools.size).toBe(tools.length);
      expect(second.catalog.tools().every((t) => t.record !== undefined && second.memo.tools.get(t.record.fingerprint) === t.record)).toBe(true);
      expect(second.queue.stats()).toMatchObject({ queued: 0, running: 0 });
    } finally {
      await second.close();
      await second.close();
    }
    expect((await readFile(cacheFile, "utf8")).split("\n").filter((l) => l !== "")).toHaveLength(entries);
  });

  it("records in each entry the tokens of the tool as summary mode lists it, under its exposed name", async () => {
    const pipeline = await openSummaryPipeline({ cacheFile: path.join(temp.path, "summaries.jsonl"), env: {}, separator: "__" });
    try {
      const names = assignNames(
        exposed("notion").map((t) => ({ server: t.server, tool: t.tool.name, prefix: true })),
        "__",
      );
      const tools = exposed("notion").map((t, i) => ({ ...t, name: names[i]!.name }));
      pipeline.catalog.setTools(tools);
      await pipeline.queue.drain();
      const served = new Map(pipeline.catalog.list("summary").map((t) => [t.name, t]));
      const full = new Map(pipeline.catalog.list("full").map((t) => [t.name, t]));
      for (const tool of pipeline.catalog.tools()) {
        const entry = pipeline.store.get(tool.key);
        expect(entry, tool.key).toBeDefined();
        expect([tool.name, entry!.tokensAfter]).toEqual([tool.name, listedToolTokens(served.get(tool.name)!)]);
        expect([tool.name, entry!.tokensBefore]).toEqual([tool.name, listedToolTokens(full.get(tool.name)!)]);
        expect(entry!.tokensAfter).toBeLessThanOrEqual(entry!.tokensBefore);
      }
    } finally {
      await pipeline.close();
    }
  });
});
