import { searchResultText } from "../../src/catalog/metaTools.js";
import { renderTools, toOpenAiFunctions } from "../../src/catalog/renderTools.js";
import type { SearchResult } from "../../src/catalog/searchIndex.js";
import type { CatalogTool } from "../../src/catalog/types.js";
import { DEFAULT_WORD_BUDGET, ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";
import type { Summarizer } from "../../src/summarize/types.js";
import { countJsonTokens, countTokens } from "../../src/tokens/countTokens.js";
import { summarizedCatalog, type CorpusQuery, type CorpusServer } from "../corpus.js";
import { assignFolds, DEFAULT_FOLDS, serverOfKey, type Fold } from "./folds.js";
import { paretoFrontier } from "./pareto.js";
import { Bm25Proxy, type RankDoc, type SelectionProxy } from "./proxies.js";
import { compressorListAnswer, views, viewTokens, type View } from "./views.js";

/** Results per `search_tools` answer in the lazy evaluation (what the tool answers by default). */
export const SEARCH_LIMIT = 8;
/**
 * A candidate setting is acceptable on the training servers when its compact top-5 keeps at
 * least this share of full's (the product target); the cheapest acceptable one is chosen.
 */
export const KEEP_SHARE = 0.95;

/** One setting of what is tuned: today, the extractive summarizer's word budgets. */
export interface Candidate {
  id: string;
  /** The setting the product ships. */
  isDefault: boolean;
  summarizer: () => Summarizer;
}

/**
 * What the engine has that is tuned: the extractive summarizer's word budget (default 24, chosen
 * by hand) and whether a summary may add one distinctive clause to its lead sentence. The grid
 * spans shorter and longer summaries, with and without that clause.
 */
export function summarizerCandidates(): Candidate[] {
  const out: Candidate[] = [];
  for (const wordBudget of [12, 16, 24, 32]) {
    for (const distinctClauses of [false, true]) {
      out.push({
        id: `words ${wordBudget}, ${distinctClauses ? "with" : "no"} second clause`,
        isDefault: wordBudget === DEFAULT_WORD_BUDGET && distinctClauses,
        summarizer: () => new ExtractiveSummarizer({ wordBudget, distinctClauses }),
      });
    }
  }
  return out;
}

/** Hits of one view under one proxy over a set of queries. */
export interface Score {
  queries: number;
  top1: number;
  top5: number;
  top1Hits: number;
  top5Hits: number;
}

/** One point of the frontier table. */
export interface ViewFigures {
  id: string;
  label: string;
  note?: string;
  usesSummaries: boolean;
  /** o200k tokens of the pooled list (for summary-based views: each server summarized with its fold's setting). */
  tokens: number;
  shareOfFull: number;
  /** Held-out (leave-servers-out) scores per proxy id. */
  heldOut: Record<string, Score>;
  /** Scores with the shipped default setting on every query (in-sample for the tuned views). */
  inSample: Record<string, Score>;
  /** Whether the point is on the tokens-vs-fidelity frontier, per `<proxy> top-1|top-5`. */
  onFrontier: Record<string, boolean>;
}

/** One fold's figures. */
export interface FoldFigures {
  index: number;
  test: string[];
  trainServers: number;
  trainQueries: number;
  testQueries: number;
  chosen: string;
  /** Training compact top-5 over full top-5 (BM25) of the chosen setting. */
  trainKeep: number;
  /** Held-out scores of this fold's queries, per view id then proxy id. */
  scores: Record<string, Record<string, Score>>;
}

/** Result of {@link runHeldOut}. */
export interface HeldOutResult {
  method: string;
  k: number;
  servers: number;
  tools: number;
  queries: number;
  /** Queries whose expected server is not in the corpus (left out). */
  queriesLeftOut: number;
  candidates: { id: string; isDefault: boolean; compactTokens: number; chosenInFolds: number }[];
  proxies: string[];
  proxiesNotAvailable: { proxy: string; reason: string }[];
  folds: FoldFigures[];
  views: ViewFigures[];
  lazy: {
    searchLimit: number;
    /** Share of queries whose right tool is anywhere in the `search_tools` answer (held-out). */
    answerRecall: number;
    /** The answer in the product's own order, no proxy: right tool first / among the first five (held-out). */
    ownOrderTop1: number;
    ownOrderTop5: number;
    meanAnswerTokens: number;
    /** mcpproxy-go's break-even: (full tokens - lazy tokens) / mean tokens of one search answer. */
    breakEvenSearches: number;
  };
  /** Mean o200k tokens of one `max`-level list answer (one server's tools in the `medium` form). */
  compressorMaxListTokensPerServer: number;
}

/** Options of {@link runHeldOut}. */
export interface HeldOutOptions {
  corpus: readonly CorpusServer[];
  queries: readonly CorpusQuery[];
  proxies: SelectionProxy[];
  proxiesNotAvailable?: { proxy: string; reason: string }[];
  /** The proxy settings are chosen with on the training servers (default BM25). */
  selectionProxy?: SelectionProxy;
  k?: number;
  candidates?: Candidate[];
  signal?: AbortSignal;
  log?: (line: string) => void;
}

interface Prepared {
  tools: CatalogTool[];
  search: (query: string, limit?: number) => SearchResult[];
}

function rightKeys(q: CorpusQuery): Set<string> {
  return new Set([q.expect, ...q.also_ok]);
}

/** Per query: [top-1 hit, top-5 hit]. */
function hitsOf(rankings: readonly string[][], queries: readonly CorpusQuery[]): [boolean, boolean][] {
  return queries.map((q, i) => {
    const right = rightKeys(q);
    const ranked = rankings[i] ?? [];
    return [ranked[0] !== undefined && right.has(ranked[0]), ranked.slice(0, 5).some((k) => right.has(k))];
  });
}

function score(hits: readonly [boolean, boolean][]): Score {
  const top1Hits = hits.filter((h) => h[0]).length;
  const top5Hits = hits.filter((h) => h[1]).length;
  const n = hits.length;
  return { queries: n, top1: n === 0 ? Number.NaN : top1Hits / n, top5: n === 0 ? Number.NaN : top5Hits / n, top1Hits, top5Hits };
}

/** The lazy view: each query's `search_tools` answer, and the lines the model reads of it. */
function lazyDocs(prepared: Prepared, queries: readonly CorpusQuery[]): { docs: RankDoc[]; restrict: string[][] } {
  const lines = new Map<string, string>();
  const restrict = queries.map((q) =>
    prepared.search(q.query, SEARCH_LIMIT).map((r) => {
      const key = `${r.server}:${r.tool}`;
      lines.set(key, searchResultText([r]));
      return key;
    }),
  );
  return { docs: [...lines].map(([key, text]) => ({ key, text })), restrict };
}

const LAZY_VIEW_ID = "lazy";

/**
 * Leave-servers-out selection fidelity. Servers are split into k folds; for each fold the tuned
 * setting is chosen on the other folds' servers alone (their tools, their queries, BM25: the
 * cheapest candidate whose compact top-5 keeps {@link KEEP_SHARE} of full's), then the fold's
 * queries are scored against the whole catalog rendered with that setting. Every query is scored
 * once, by the setting chosen without its server. Views that nothing tuned touches (full, the
 * references) score the same in and out of sample; their per-fold figures are still reported.
 */
export async function runHeldOut(options: HeldOutOptions): Promise<HeldOutResult> {
  const log = options.log ?? (() => {});
  const candidates = options.candidates ?? summarizerCandidates();
  const defaultCandidate = candidates.find((c) => c.isDefault) ?? candidates[0];
  if (defaultCandidate === undefined) throw new Error("held-out fidelity: no candidate settings");
  const servers = options.corpus.map((s) => s.server);
  const serverSet = new Set(servers);
  const queries = options.queries.filter((q) => serverSet.has(serverOfKey(q.expect)));
  const folds = assignFolds(servers, options.k ?? DEFAULT_FOLDS);
  const foldOfServer = new Map<string, Fold>();
  for (const f of folds) for (const s of f.test) foldOfServer.set(s, f);
  const foldOfQuery = queries.map((q) => foldOfServer.get(serverOfKey(q.expect)) as Fold);

  // 1. Summarize the corpus with every candidate (the real pipeline: hash, store, queue, catalog).
  const prepared = new Map<string, Prepared>();
  for (const c of candidates) {
    options.signal?.throwIfAborted();
    const { tools, search } = await summarizedCatalog(options.corpus, c.summarizer(), options.signal ? { signal: options.signal } : {});
    prepared.set(c.id, { tools, search });
  }
  const allViews = views();
  const full = allViews.find((v) => v.id === "full") as View;
  const compact = allViews.find((v) => v.id === "compact") as View;
  const bm25 = options.selectionProxy ?? new Bm25Proxy();

  // 2. Choose a setting per fold on its training servers only.
  const chosen = new Map<number, Candidate>();
  const trainKeep = new Map<number, number>();
  for (const fold of folds) {
    const train = new Set(fold.train);
    const trainQueries = queries.filter((q) => train.has(serverOfKey(q.expect)));
    const texts = trainQueries.map((q) => q.query);
    const fullTools = (prepared.get(defaultCandidate.id) as Prepared).tools.filter((t) => train.has(t.server));
    const fullTop5 = score(hitsOf(await bm25.rankAll(full.docs(fullTools), texts), trainQueries)).top5Hits;
    let best: { c: Candidate; keep: number; tokens: number; ok: boolean } | undefined;
    for (const c of candidates) {
      const tools = (prepared.get(c.id) as Prepared).tools.filter((t) => train.has(t.server));
      const top5 = score(hitsOf(await bm25.rankAll(compact.docs(tools), texts), trainQueries)).top5Hits;
      const keep = fullTop5 === 0 ? 1 : top5 / fullTop5;
      const tokens = viewTokens(compact, tools);
      const ok = keep >= KEEP_SHARE;
      const better =
        best === undefined ||
        (ok && !best.ok) ||
        (ok && best.ok && tokens < best.tokens) ||
        (!ok && !best.ok && (keep > best.keep || (keep === best.keep && tokens < best.tokens)));
      if (better) best = { c, keep, tokens, ok };
    }
    if (best === undefined) throw new Error("held-out fidelity: no candidate scored");
    chosen.set(fold.index, best.c);
    trainKeep.set(fold.index, best.keep);
    log(
      `fold ${fold.index + 1}/${folds.length}: held out ${fold.test.length} servers, chose "${best.c.id}" (training compact/full top-5 ${best.keep.toFixed(3)})`,
    );
  }
  const candidateOfQuery = foldOfQuery.map((f) => chosen.get(f.index) as Candidate);
  const usedCandidates = candidates.filter((c) => c === defaultCandidate || [...chosen.values()].includes(c));

  // 3. Rank every query once per (view, proxy, candidate used); pick per query by its fold's candidate.
  const texts = queries.map((q) => q.query);
  const viewIds = [...allViews.map((v) => v.id), LAZY_VIEW_ID];
  /** hits[viewId][proxyId] per query: held-out and in-sample. */
  const heldHits: Record<string, Record<string, [boolean, boolean][]>> = {};
  const inHits: Record<string, Record<string, [boolean, boolean][]>> = {};
  let lazyRecallHits = 0;
  let ownTop1Hits = 0;
  let ownTop5Hits = 0;
  const answerTokens: number[] = [];
  for (const proxy of options.proxies) {
    for (const id of viewIds) {
      options.signal?.throwIfAborted();
      const view = allViews.find((v) => v.id === id);
      const perCandidate = new Map<string, [boolean, boolean][]>();
      const tuned = view === undefined || view.usesSummaries;
      for (const c of tuned ? usedCandidates : [defaultCandidate]) {
        const p = prepared.get(c.id) as Prepared;
        if (view === undefined) {
          const { docs, restrict } = lazyDocs(p, queries);
          perCandidate.set(c.id, hitsOf(await proxy.rankAll(docs, texts, { restrict }), queries));
        } else {
          perCandidate.set(c.id, hitsOf(await proxy.rankAll(view.docs(p.tools), texts), queries));
        }
        log(`${proxy.id}: ${id}${tuned ? ` (${c.id})` : ""} ranked`);
      }
      const pick = (c: Candidate, i: number): [boolean, boolean] =>
        (perCandidate.get(tuned ? c.id : defaultCandidate.id) as [boolean, boolean][])[i] as [boolean, boolean];
      (heldHits[id] ??= {})[proxy.id] = queries.map((_, i) => pick(candidateOfQuery[i] as Candidate, i));
      (inHits[id] ??= {})[proxy.id] = queries.map((_, i) => pick(defaultCandidate, i));
    }
  }
  // The search answers themselves (held-out setting per query): recall and size.
  queries.forEach((q, i) => {
    const p = prepared.get((candidateOfQuery[i] as Candidate).id) as Prepared;
    const results = p.search(q.query, SEARCH_LIMIT);
    const right = rightKeys(q);
    const keys = results.map((r) => `${r.server}:${r.tool}`);
    if (keys.some((k) => right.has(k))) lazyRecallHits += 1;
    if (keys[0] !== undefined && right.has(keys[0])) ownTop1Hits += 1;
    if (keys.slice(0, 5).some((k) => right.has(k))) ownTop5Hits += 1;
    answerTokens.push(countTokens(searchResultText(results)));
  });

  // 4. Tokens: each server's tools rendered with the setting chosen without it.
  const heldTools = options.corpus.flatMap((s) => {
    const c = chosen.get((foldOfServer.get(s.server) as Fold).index) as Candidate;
    return (prepared.get(c.id) as Prepared).tools.filter((t) => t.server === s.server);
  });
  const defaultTools = (prepared.get(defaultCandidate.id) as Prepared).tools;
  const fullTokens = viewTokens(full, defaultTools);
  const lazyTokens = countJsonTokens(toOpenAiFunctions(renderTools(heldTools, "lazy")));
  const figures: ViewFigures[] = viewIds.map((id) => {
    const view = allViews.find((v) => v.id === id);
    const tokens = view === undefined ? lazyTokens : viewTokens(view, view.usesSummaries ? heldTools : defaultTools);
    const heldOut: Record<string, Score> = {};
    const inSample: Record<string, Score> = {};
    for (const proxy of options.proxies) {
      heldOut[proxy.id] = score(heldHits[id]?.[proxy.id] ?? []);
      inSample[proxy.id] = score(inHits[id]?.[proxy.id] ?? []);
    }
    return {
      id,
      label: view?.label ?? "abridge lazy",
      ...(view?.note !== undefined
        ? { note: view.note }
        : {
            ...(view === undefined
              ? { note: `tools are seen only through a search_tools answer (${SEARCH_LIMIT} results, one call per request), which the proxy re-ranks` }
              : {}),
          }),
      usesSummaries: view === undefined || view.usesSummaries,
      tokens,
      shareOfFull: tokens / fullTokens,
      heldOut,
      inSample,
      onFrontier: {},
    };
  });
  for (const proxy of options.proxies) {
    for (const metric of ["top1", "top5"] as const) {
      const on = paretoFrontier(figures.map((f) => ({ id: f.id, tokens: f.tokens, fidelity: f.heldOut[proxy.id]?.[metric] ?? Number.NaN })));
      for (const f of figures) f.onFrontier[`${proxy.id} ${metric === "top1" ? "top-1" : "top-5"}`] = on.has(f.id);
    }
  }

  // 5. Per-fold figures.
  const foldFigures: FoldFigures[] = folds.map((fold) => {
    const idx = queries.map((_, i) => i).filter((i) => foldOfQuery[i] === fold);
    const scores: Record<string, Record<string, Score>> = {};
    for (const id of viewIds) {
      for (const proxy of options.proxies) {
        const all = heldHits[id]?.[proxy.id] ?? [];
        (scores[id] ??= {})[proxy.id] = score(idx.map((i) => all[i] as [boolean, boolean]));
      }
    }
    const train = new Set(fold.train);
    return {
      index: fold.index,
      test: fold.test,
      trainServers: fold.train.length,
      trainQueries: queries.filter((q) => train.has(serverOfKey(q.expect))).length,
      testQueries: idx.length,
      chosen: (chosen.get(fold.index) as Candidate).id,
      trainKeep: trainKeep.get(fold.index) ?? Number.NaN,
      scores,
    };
  });

  const meanAnswerTokens = answerTokens.length === 0 ? Number.NaN : answerTokens.reduce((a, b) => a + b, 0) / answerTokens.length;
  const perServerMaxList = options.corpus.map((s) => countTokens(compressorListAnswer(defaultTools.filter((t) => t.server === s.server))));
  return {
    method:
      `leave-servers-out, ${folds.length} folds by server (SHA-256 of the name, dealt round-robin); per fold the summarizer setting is chosen on the training servers alone ` +
      `(BM25, cheapest compact list whose top-5 keeps >= ${KEEP_SHARE} of full's, else the best keep), and the fold's queries are ranked against the whole catalog rendered with it. ` +
      `Top-k: the expected tool or an also_ok one among the first k. Tokens: o200k of the pooled OpenAI function-tool list.`,
    k: folds.length,
    servers: servers.length,
    tools: defaultTools.length,
    queries: queries.length,
    queriesLeftOut: options.queries.length - queries.length,
    candidates: candidates.map((c) => ({
      id: c.id,
      isDefault: c.isDefault,
      compactTokens: viewTokens(compact, (prepared.get(c.id) as Prepared).tools),
      chosenInFolds: [...chosen.values()].filter((x) => x === c).length,
    })),
    proxies: options.proxies.map((p) => p.id),
    proxiesNotAvailable: options.proxiesNotAvailable ?? [],
    folds: foldFigures,
    views: figures,
    lazy: {
      searchLimit: SEARCH_LIMIT,
      answerRecall: queries.length === 0 ? Number.NaN : lazyRecallHits / queries.length,
      ownOrderTop1: queries.length === 0 ? Number.NaN : ownTop1Hits / queries.length,
      ownOrderTop5: queries.length === 0 ? Number.NaN : ownTop5Hits / queries.length,
      meanAnswerTokens,
      breakEvenSearches: (fullTokens - lazyTokens) / meanAnswerTokens,
    },
    compressorMaxListTokensPerServer: perServerMaxList.length === 0 ? 0 : perServerMaxList.reduce((a, b) => a + b, 0) / perServerMaxList.length,
  };
}
