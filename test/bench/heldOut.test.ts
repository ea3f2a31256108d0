import { describe, expect, it } from "vitest";
import { loadCorpus, loadQueries, type CorpusQuery, type CorpusServer } from "../../bench/corpus.js";
import { assignFolds, serverOfKey } from "../../bench/frontier/folds.js";
import { runHeldOut, type Candidate } from "../../bench/frontier/heldOut.js";
import { Bm25Proxy, type RankDoc, type RankOptions, type SelectionProxy } from "../../bench/frontier/proxies.js";
import { ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";

/** The real BM25 proxy, recording what each call was given. */
class RecordingProxy implements SelectionProxy {
  readonly id = "bm25";
  readonly calls: { docServers: Set<string>; queries: string[] }[] = [];
  private readonly inner = new Bm25Proxy();

  rankAll(docs: readonly RankDoc[], queries: readonly string[], options?: RankOptions): Promise<string[][]> {
    this.calls.push({ docServers: new Set(docs.map((d) => serverOfKey(d.key))), queries: [...queries] });
    return this.inner.rankAll(docs, queries, options);
  }
}

/**
 * A slice of the corpus that still gives every fold held-out servers and queries: the `count`
 * smallest servers some query expects, every query (those of other servers are left out by
 * runHeldOut itself, and counted). The whole corpus is what `npm run bench` evaluates; the
 * folding here works alike on a slice, summarized and ranked in a fraction of the time.
 */
function corpusSlice(count: number): { corpus: CorpusServer[]; queries: CorpusQuery[] } {
  const queries = loadQueries();
  const expected = new Set(queries.map((q) => serverOfKey(q.expect)));
  const corpus = loadCorpus()
    .filter((s) => expected.has(s.server))
    .sort((a, b) => a.tools.length - b.tools.length || (a.server < b.server ? -1 : 1))
    .slice(0, count);
  return { corpus, queries };
}

describe("runHeldOut (leave-servers-out)", () => {
  it("chooses each fold's setting without its servers' tools or queries, and scores every query once", async () => {
    const { corpus, queries } = corpusSlice(15);
    const candidates: Candidate[] = [
      { id: "words 24, with second clause", isDefault: true, summarizer: () => new ExtractiveSummarizer() },
      { id: "words 12, no second clause", isDefault: false, summarizer: () => new ExtractiveSummarizer({ wordBudget: 12, distinctClauses: false }) },
    ];
    const selection = new RecordingProxy();
    const result = await runHeldOut({ corpus, queries, proxies: [new Bm25Proxy()], selectionProxy: selection, candidates, k: 5 });

    const folds = assignFolds(
      corpus.map((s) => s.server),
      5,
    );
    // Per fold: one ranking of full, then one per candidate, all on the training side only.
    expect(selection.calls).toHaveLength(folds.length * (1 + candidates.length));
    selection.calls.forEach((call, i) => {
      const fold = folds[Math.floor(i / (1 + candidates.length))];
      if (fold === undefined) throw new Error(`call ${i} has no fold`);
      const held = new Set(fold.test);
      expect([...call.docServers].filter((s) => held.has(s))).toEqual([]);
      const heldQueries = new Set(queries.filter((q) => held.has(serverOfKey(q.expect))).map((q) => q.query));
      expect(call.queries.filter((q) => heldQueries.has(q))).toEqual([]);
    });

    expect(result.folds.map((f) => f.test)).toEqual(folds.map((f) => f.test));
    // Every fold holds out servers with queries of their own, and the queries of other servers are left out.
    for (const fold of result.folds) expect(fold.testQueries).toBeGreaterThan(0);
    expect(result.queriesLeftOut).toBeGreaterThan(0);
    expect(result.queries + result.queriesLeftOut).toBe(queries.length);
    expect(result.folds.reduce((n, f) => n + f.testQueries, 0)).toBe(result.queries);
    const full = result.views.find((v) => v.id === "full");
    // Nothing tuned touches full: held out and in sample agree.
    expect(full?.heldOut.bm25).toEqual(full?.inSample.bm25);
    const lazy = result.views.find((v) => v.id === "lazy");
    expect(result.lazy.breakEvenSearches).toBeCloseTo(((full?.tokens ?? 0) - (lazy?.tokens ?? 0)) / result.lazy.meanAnswerTokens, 6);
    expect(Object.keys(full?.onFrontier ?? {}).sort()).toEqual(["bm25 top-1", "bm25 top-5"]);
  });
});
