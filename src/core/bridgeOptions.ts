import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import type { ServerStatus } from "../model/types.js";
import type { SummarizeQueueStats } from "../summarize/summarizeQueue.js";
import type { Summarizer } from "../summarize/types.js";
import type { BackoffOptions } from "../upstream/backoff.js";
import type { CallCounters } from "./callPipeline.js";

/** Options of {@link Bridge.open}. */
export interface BridgeOptions {
  config: Config;
  /** Path of `summaries.jsonl`. */
  cacheFile: string;
  /** Environment for the summarizer's API key. */
  env: Record<string, string | undefined>;
  logger?: Logger;
  /** Use this summarizer instead of the one `[summary]` names (tests, `--summarizer`). */
  summarizer?: Summarizer;
  /** Quiet time that turns a burst of new summaries into one list change (default 250 ms). */
  changeDebounceMs?: number;
  /** Restart backoff of the upstream pool (tests shorten it). */
  backoff?: BackoffOptions;
  /**
   * Retry a server that failed to start in the background (default true). false for a one-shot
   * command: it ends before a retry could help, and it reports each failure itself.
   */
  retryFailedStart?: boolean;
  /** Base backoff of summarizer retries (tests shorten it). */
  summaryBackoffMs?: number;
  /** `--read-only` on `serve`/`daemon`: only tools annotated readOnlyHint: true, everywhere. */
  forceReadOnly?: boolean;
  /** State dir for spilled outputs (default: `--state-dir`/config/XDG lookup from `env`). */
  stateDir?: string;
  /**
   * Begin the upstreams' start in {@link Bridge.open} itself, as {@link Bridge.begin} with this
   * signal, before the summary cache, the guard and the rest are opened: what a front end that
   * serves at once wants, since a child's start-up then runs beside the bridge's own.
   */
  begin?: { signal?: AbortSignal };
}

/** What `stats` reports. */
export interface BridgeStats {
  version: string;
  uptimeMs: number;
  upstreams: ServerStatus[];
  catalog: { tools: number; summarized: number; hits: number; misses: number };
  queue: SummarizeQueueStats;
  /**
   * The summary cache: live keys, invalid lines or fields skipped, failed writes; on Redis also
   * entries skipped for their size (`oversized`) and entries left out of memory (`notKept`).
   */
  cache: { entries: number; invalidLines: number; writeErrors: number; oversized?: number; notKept?: number };
  calls: CallCounters;
}
