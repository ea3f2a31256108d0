/**
 * The summary pipeline's measure: a summary written again unchanged (a forced redo by the local
 * summarizer, as the catalog does once for an entry the guard refuses) keeps the counts of the
 * entry it repeats instead of counting, so a bridge redoing it does not load the tokenizer; a new
 * text, or counts of another renderer version, are counted.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { CacheEntry, FormTokens } from "../../src/cache/cacheEntry.js";
import { RENDERER_VERSION } from "../../src/catalog/renderTools.js";
import type { AdmittedExposedTool } from "../../src/catalog/types.js";
import { openSummaryPipeline } from "../../src/core/summaryPipeline.js";
import { ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";
import { admitted } from "../helpers/admitted.js";
import { useTempDir } from "../helpers/tempDir.js";

const TOOLS: AdmittedExposedTool[] = ["search", "fetch", "store"].map((name) => ({
  server: "docs",
  name: `docs_${name}`,
  uri: `mcp://docs/${name}`,
  tool: admitted({
    name,
    description: `Runs ${name} over the documentation index. Returns matching pages with their titles and addresses, most relevant first.`,
    inputSchema: { type: "object", properties: { query: { type: "string", description: `What to ${name}.` } }, required: ["query"] },
  }),
}));

/** Counts no renderer would write, so a reused one is told from a counted one. */
const MARKED: FormTokens = { renderer: RENDERER_VERSION, full: 7, summary: 7, names: 7, types: 7, none: 7 };

async function lastEntries(file: string): Promise<Map<string, CacheEntry>> {
  const lines = (await readFile(file, "utf8")).split("\n").filter((l) => l !== "");
  return new Map(lines.map((l) => JSON.parse(l) as CacheEntry).map((e) => [e.tool, e]));
}

describe("counts of a repeated summary", () => {
  const temp = useTempDir();

  it("are reused when the text is the same and counted anew otherwise", async () => {
    const cacheFile = path.join(temp.path, "summaries.jsonl");
    const summarizer = new ExtractiveSummarizer();
    const first = await openSummaryPipeline({ cacheFile, env: {}, summarizer });
    first.catalog.setTools(TOOLS);
    await first.queue.drain();
    await first.close();
    const written = await lastEntries(cacheFile);
    expect([...written.values()].every((e) => e.formTokens?.renderer === RENDERER_VERSION)).toBe(true);

    // search: same text, marked counts. fetch: another text, marked counts. store: same text,
    // marked counts of another renderer version.
    const planted = [...written.values()].map((e) => {
      if (e.tool === "search") return { ...e, formTokens: MARKED };
      if (e.tool === "fetch") return { ...e, summary: "Fetches a page.", formTokens: MARKED };
      return { ...e, formTokens: { ...MARKED, renderer: RENDERER_VERSION + 1 } };
    });
    await writeFile(cacheFile, planted.map((e) => `${JSON.stringify(e)}\n`).join(""));

    const second = await openSummaryPipeline({ cacheFile, env: {}, summarizer });
    second.catalog.setTools(TOOLS, { force: true });
    await second.queue.drain();
    await second.close();
    // Each tool was written again: a line of its own after the planted one.
    expect((await readFile(cacheFile, "utf8")).split("\n").filter((l) => l !== "")).toHaveLength(2 * TOOLS.length);
    const again = await lastEntries(cacheFile);
    const search = again.get("search")!;
    expect(search.summary).toBe(written.get("search")!.summary);
    expect(search.formTokens).toEqual(MARKED);
    expect(again.get("fetch")!.formTokens).toEqual(written.get("fetch")!.formTokens);
    expect(again.get("store")!.formTokens).toEqual(written.get("store")!.formTokens);
    expect(again.get("store")!.formTokens?.full).not.toBe(7);
  });
});
