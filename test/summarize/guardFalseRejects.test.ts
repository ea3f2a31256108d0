/**
 * The guard's meaning checks against the honest summaries of the whole corpus (129 servers): an
 * extractive summary is the tool's own words, so every one the guard refuses is a false reject, and
 * a refused summary is not served (the full description is). At most 1% may be. The figure, its
 * breakdown and the lies caught beside it are in bench/guardFalseRejects.ts.
 */
import { describe, expect, it } from "vitest";
import { loadCorpus } from "../../bench/corpus.js";
import { ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";
import { guardSummary } from "../../src/summarize/guard.js";

describe("the guard over the corpus", () => {
  it("rejects at most 1% of the honest extractive summaries", { timeout: 120_000 }, () => {
    const corpus = loadCorpus();
    const summarizer = new ExtractiveSummarizer();
    let tools = 0;
    const rejected: string[] = [];
    for (const { server, tools: serverTools } of corpus) {
      // As the queue batches them: one server's tools, at most maxBatch at a time.
      for (let start = 0; start < serverTools.length; start += summarizer.maxBatch) {
        const batch = serverTools.slice(start, start + summarizer.maxBatch);
        summarizer.summarizeCatalog(batch).forEach((summary, i) => {
          tools++;
          const verdict = guardSummary(batch[i]!, summary);
          if (!verdict.ok) rejected.push(`${server}:${batch[i]!.name}: ${verdict.reasons.join("; ")}`);
        });
      }
    }
    expect(corpus.length).toBeGreaterThanOrEqual(129);
    expect(tools).toBeGreaterThanOrEqual(3_675);
    expect(rejected.length / tools, rejected.join("\n")).toBeLessThanOrEqual(0.01);
  });
});
