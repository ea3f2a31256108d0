import type { CacheEntry } from "../cache/cacheEntry.js";
import type { SummaryConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import type { ClaimSource } from "./claimGate.js";
import type { MeasureSummary, Summarizer } from "./types.js";

/** Where finished entries go: the JSONL store, or anything with the same `append`. */
export interface SummarySink {
  /** `force`: the job was queued with force; the entry replaces whatever the sink holds, however new. */
  append(entry: CacheEntry, options?: { force?: boolean }): Promise<void>;
}

/** Called with every stored entry (the catalog updates its list from it). */
export type EntryListener = (entry: CacheEntry) => void;

/** Options of {@link SummarizeQueue}. */
export interface SummarizeQueueOptions {
  summarizer: Summarizer;
  /** Writes the entry when the summarizer fails or is rejected (default: extractive). */
  fallback?: Summarizer;
  sink: SummarySink;
  /**
   * The token counts of each entry: the catalog's `summaryTokens`, so that an entry's `tokensAfter`
   * is what summary mode serves for its tool.
   */
  measure: MeasureSummary;
  /** Batches in flight at once (config `max_concurrency`; default 4). */
  concurrency?: number;
  /** Summarizer requests per minute (config `requests_per_minute`). */
  requestsPerMinute?: number;
  /** Spend cap: summarizer calls in this process; later jobs use the fallback (config `max_requests`). */
  maxRequests?: number;
  /** Retries of a retryable failure before falling back (config `max_retries`; default 4). */
  maxRetries?: number;
  /** First backoff; doubles per attempt, with jitter (default 500). */
  baseBackoffMs?: number;
  /** Longest backoff between two attempts, `retry-after` aside (default 60,000). */
  maxBackoffMs?: number;
  /**
   * Fleet-wide single flight: a job runs only while this process holds its key's claim; jobs
   * another process holds wait for its entry (see `ClaimGate`). Absent: every job runs here.
   */
  claims?: ClaimSource;
  logger?: Logger;
  /** Clock of `createdAt` (tests pin it). */
  now?: () => Date;
}

/** Options of {@link SummarizeQueue.enqueue}. */
export interface EnqueueOptions {
  /**
   * Summarize again even if this key was already done in this process, and write the entry over
   * whatever the cache holds for the key, however new.
   */
  force?: boolean;
}

/** Options of {@link SummarizeQueue.close}. */
export interface CloseOptions {
  /** Abort requests in flight instead of letting them finish. */
  abortRunning?: boolean;
  /** Aborts requests still in flight when it fires (e.g. a shutdown deadline). */
  signal?: AbortSignal;
}

/** Counters of a {@link SummarizeQueue}. */
export interface SummarizeQueueStats {
  /** Jobs waiting for a slot. */
  queued: number;
  /** Jobs in batches being worked on (requests, backoff sleeps, rate-limit waits). */
  running: number;
  /** Jobs that ended with an entry. */
  done: number;
  /** Entries written by the summarizer and accepted by the guard. */
  generated: number;
  /** Entries written by the fallback (guard rejection, failure, spend cap). */
  fallbacks: number;
  /** Summaries the guard rejected. */
  guardRejections: number;
  /** Jobs whose summarizer call failed for good (after retries, or not retryable). */
  failed: number;
  /** Retry attempts (one per batch re-sent). */
  retries: number;
  /** Summarizer calls made. */
  requests: number;
  /** Rate-limited (429) answers. */
  rateLimited: number;
  /** Jobs handed to the fallback because the spend cap was reached. */
  capReached: number;
  /** Entries the sink failed to store (they still reached the listeners). */
  sinkErrors: number;
  /** Jobs that ended with the entry another process wrote while this one waited for its claim. */
  fromPeers: number;
  /** Jobs waiting for another process that holds their key's claim. */
  waiting: number;
}

/** The queue's limits from the `[summary]` config section. */
export function queueLimitsFromConfig(config: SummaryConfig): Pick<SummarizeQueueOptions, "concurrency" | "requestsPerMinute" | "maxRequests" | "maxRetries"> {
  return {
    concurrency: config.max_concurrency,
    maxRetries: config.max_retries,
    ...(config.requests_per_minute === undefined ? {} : { requestsPerMinute: config.requests_per_minute }),
    ...(config.max_requests === undefined ? {} : { maxRequests: config.max_requests }),
  };
}
