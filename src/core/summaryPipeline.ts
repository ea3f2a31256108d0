import { CallCounts, callCountsFileFor } from "../cache/callCounts.js";
import { JsonlStore } from "../cache/jsonlStore.js";
import type { SummaryStore } from "../cache/summaryStore.js";
import { repeatedSummaryTokens, summaryTokens, type CompactSchema } from "../catalog/renderTools.js";
import { ToolCatalog } from "../catalog/toolCatalog.js";
import { CatalogMemo } from "../catalog/catalogMemo.js";
import { createToolHasher, type ToolHasher } from "../catalog/toolHash.js";
import { HeldJobs } from "./heldJobs.js";
import { summarySchema, type SummaryConfig } from "../config/schema.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { createSummarizer } from "../summarize/createSummarizer.js";
import { ExtractiveSummarizer } from "../summarize/extractiveSummarizer.js";
import { queueLimitsFromConfig, SummarizeQueue } from "../summarize/summarizeQueue.js";
import type { Summarizer } from "../summarize/types.js";

export type { DiscoverOptions } from "../catalog/toolCatalog.js";
export type { Summarizer } from "../summarize/types.js";
export { fallbackCause, type FallbackCause } from "../summarize/summarizeQueue.js";

/** Options of {@link openSummaryPipeline}. */
export interface SummaryPipelineOptions {
  /** Path of `summaries.jsonl`; the call counts live beside it. */
  cacheFile: string;
  /** Config `cache_url`: the summaries live on this Redis instead of in `cacheFile`. */
  cacheUrl?: string;
  /** Config `cache_lease_ms`: lease of a summary claim on the shared cache. */
  leaseMs?: number;
  /** Where entries Redis could not take yet are kept (see `RedisStore`). */
  spoolFile?: string;
  /** The `[summary]` section: summarizer, extractive word budget, queue limits (default: its defaults). */
  summary?: SummaryConfig;
  /** Environment for the summarizer's API key. */
  env: Record<string, string | undefined>;
  logger?: Logger;
  /** Use this summarizer instead of the one `summary` names (tests, `--summarizer`, benchmarks). */
  summarizer?: Summarizer;
  /** Summarize batches in flight at once, instead of `summary.max_concurrency`. */
  concurrency?: number;
  /** Base backoff of summarizer retries (tests shorten it). */
  summaryBackoffMs?: number;
  /** Between server and tool in exposed names (config `separator`). */
  separator?: string;
  /** Input schema compact lists (config `compact_schema`). */
  compactSchema?: CompactSchema;
  /** `mode = "auto"`: token budget and pins (config `token_budget`, `pin`). */
  auto?: { tokenBudget?: number; pins?: readonly string[] };
  /** Quiet time that turns a burst of new summaries into one list change (default 250 ms). */
  changeDebounceMs?: number;
  /** Where what is derived per tool is kept (default: a new one, this pipeline's own; see {@link SummaryPipeline.memo}). */
  memo?: CatalogMemo;
}

/**
 * The summary cache, the background queue that fills it, and the catalog that serves from it,
 * wired together: a miss found by the catalog is queued, an entry the queue stores reaches the
 * catalog, and every entry's token counts are measured by the renderers that serve the lists.
 * Built here alone, for the bridge, `render` and the benchmarks.
 */
export interface SummaryPipeline {
  readonly store: SummaryStore;
  readonly hasher: ToolHasher;
  /** The summarizer `[summary]` names (or the one given). */
  readonly summarizer: Summarizer;
  readonly queue: SummarizeQueue;
  /** The catalog's way into {@link queue}, which can hold jobs back while the upstreams start. */
  readonly jobs: HeldJobs;
  readonly catalog: ToolCatalog;
  /**
   * The records of every tool its catalogs met (see {@link CatalogMemo}): owned here, handed to
   * the catalog made here and to any other made over this pipeline (a benchmark's re-list), so a
   * re-list of tools met before hashes and renders nothing again.
   */
  readonly memo: CatalogMemo;
  /** Calls per tool kept beside the cache; the catalog starts from its snapshot (auto mode). */
  readonly callCounts: CallCounts;
  /**
   * Ends it in order: no more list changes, the queue (requests in flight aborted; entries are
   * whole lines, so nothing written is lost), the call counts, the cache. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Opens the cache and the call counts beside it, and builds the summarizer, its extractive
 * fallback, the queue and the catalog around them (see {@link SummaryPipeline}).
 */
export async function openSummaryPipeline(options: SummaryPipelineOptions): Promise<SummaryPipeline> {
  const logger = options.logger ?? silentLogger;
  const summary = options.summary ?? summarySchema.parse({});
  const summarizer = options.summarizer ?? createSummarizer(summary, { env: options.env, logger });
  const [store, hasher, callCounts] = await Promise.all([
    openStore(options, logger),
    createToolHasher(),
    CallCounts.open({ file: callCountsFileFor(options.cacheFile), logger }),
  ]);
  const fallback = new ExtractiveSummarizer({ wordBudget: summary.word_budget });
  const queue = new SummarizeQueue({
    summarizer,
    fallback,
    sink: store,
    claims: store,
    // A summary written again unchanged keeps the counts of the entry it repeats: counting loads
    // the tokenizer, which a bridge serving a warm cache otherwise never does.
    measure: (input, summary) => repeatedSummaryTokens(store.get(input.key), summary) ?? summaryTokens(input, summary),
    logger,
    ...queueLimitsFromConfig(summary),
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
    ...(options.summaryBackoffMs !== undefined ? { baseBackoffMs: options.summaryBackoffMs } : {}),
  });
  const jobs = new HeldJobs(queue);
  const memo = options.memo ?? new CatalogMemo();
  const catalog = new ToolCatalog({
    store,
    hasher,
    memo,
    jobs,
    logger,
    summarizerIds: [summarizer.id, fallback.id],
    ...(options.separator !== undefined ? { separator: options.separator } : {}),
    ...(options.compactSchema !== undefined ? { compactSchema: options.compactSchema } : {}),
    ...(options.auto !== undefined ? { auto: options.auto } : {}),
    ...(options.changeDebounceMs !== undefined ? { changeDebounceMs: options.changeDebounceMs } : {}),
  });
  catalog.setCallCounts(callCounts.snapshot());
  queue.onEntry((entry) => catalog.applyEntry(entry));
  // Entries other bridges wrote to a shared cache reach the catalog as this bridge's own do.
  store.onRemoteEntry((entry) => catalog.applyEntry(entry));
  let closing: Promise<void> | undefined;
  return {
    store,
    hasher,
    summarizer,
    queue,
    jobs,
    catalog,
    memo,
    callCounts,
    close() {
      closing ??= (async () => {
        catalog.close();
        const results = await Promise.allSettled([queue.close({ abortRunning: true }), callCounts.close()]);
        await store.close();
        for (const result of results) {
          if (result.status === "rejected") logger.warn("error while closing the summary pipeline", { error: String(result.reason) });
        }
      })();
      return closing;
    },
  };
}

/**
 * The JSONL file, or the Redis of `cache_url`. The Redis store (and ioredis with it) is loaded only
 * for a `cache_url`: a bridge on its file does not carry the client in memory.
 */
async function openStore(options: SummaryPipelineOptions, logger: Logger): Promise<SummaryStore> {
  if (options.cacheUrl === undefined) return JsonlStore.open({ file: options.cacheFile, logger });
  const { RedisStore } = await import("../cache/redisStore.js");
  return RedisStore.open({
    url: options.cacheUrl,
    logger,
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    ...(options.spoolFile !== undefined ? { spoolFile: options.spoolFile } : {}),
  });
}
