import type { CacheEntry } from "../cache/cacheEntry.js";
import { cacheEntrySchema, cacheKey } from "../cache/cacheEntry.js";
import { AbridgeError, ErrorCode, isAbridgeError, toAbridgeError } from "../model/errors.js";
import type { Logger } from "../log/logger.js";
import { silentLogger } from "../log/logger.js";
import { buildCacheEntry } from "./buildCacheEntry.js";
import type { EntryOrigin } from "./buildCacheEntry.js";
import { ExtractiveSummarizer, summaryFromName } from "./extractiveSummarizer.js";
import { stripControl } from "../util/stripControl.js";
import { guardSummary } from "./guard.js";
import { RateLimiter } from "./rateLimiter.js";
import { delay } from "../model/timers.js";
import type { MeasureSummary, SummarizeInput, SummarizeOutcome, Summarizer, ToolSummary } from "./types.js";
import { ClaimGate } from "./claimGate.js";
import { IdleWaiters } from "./idleWaiters.js";
import { CAP_REASON, GUARD_REASON, storedReason } from "./fallbackReasons.js";
import { backoffMs } from "./retryBackoff.js";
import type { CloseOptions, EnqueueOptions, EntryListener, SummarizeQueueOptions, SummarizeQueueStats, SummarySink } from "./summarizeQueueTypes.js";

export type { CloseOptions, EnqueueOptions, EntryListener, SummarizeQueueOptions, SummarizeQueueStats, SummarySink } from "./summarizeQueueTypes.js";
export { queueLimitsFromConfig } from "./summarizeQueueTypes.js";
export { fallbackCause, type FallbackCause } from "./fallbackReasons.js";

const HASH_PATTERN = /^[0-9a-f]{16}$/;

type Counters = Omit<SummarizeQueueStats, "queued" | "running" | "waiting">;

/**
 * Background summarization: one job per cache key, jobs of one server batched, a bounded number of
 * batches in flight, retries with exponential backoff and jitter (honouring `retry-after`) for
 * retryable failures only, a guard on every summary, and the extractive fallback whenever the
 * summarizer fails, is rejected or the spend cap is reached, so that every enqueued tool ends with
 * a stored entry unless the queue is closed first. Given `claims`, a job runs only while this
 * process holds its key's claim, and a job another process holds ends with that process's entry
 * (see {@link ClaimGate}): one summary per key across a fleet sharing the store.
 */
export class SummarizeQueue {
  private readonly summarizer: Summarizer;
  private readonly fallback: Summarizer;
  private readonly sink: SummarySink;
  private readonly measure: MeasureSummary;
  private readonly concurrency: number;
  private readonly maxRequests: number | undefined;
  private readonly maxRetries: number;
  private readonly baseBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly rateLimiter: RateLimiter | undefined;
  /** The summarizer is the fallback itself (offline): no spend cap or rate limit applies. */
  private readonly local: boolean;

  private readonly pending: SummarizeInput[] = [];
  /** Keys queued or running: the dedup set. */
  private readonly active = new Set<string>();
  private readonly runningKeys = new Set<string>();
  private readonly doneKeys = new Set<string>();
  /** Queued or running keys enqueued with force: their entries replace what the cache holds. */
  private readonly forcedKeys = new Set<string>();
  private readonly listeners = new Set<EntryListener>();
  /** Callers of drain() and close() waiting for the queue to fall idle. */
  private readonly idle = new IdleWaiters();
  private activeBatches = 0;
  private pumpScheduled = false;
  private closed = false;
  private closePromise: Promise<void> | undefined;
  private capLogged = false;
  /** Aborted by close(): backoff sleeps and rate-limit waits end at once. */
  private readonly waitAbort = new AbortController();
  /** Aborted by close() when asked to: requests in flight end at once. */
  private readonly requestAbort = new AbortController();
  private readonly counters: Counters = {
    done: 0,
    generated: 0,
    fallbacks: 0,
    guardRejections: 0,
    failed: 0,
    retries: 0,
    requests: 0,
    rateLimited: 0,
    capReached: 0,
    sinkErrors: 0,
    fromPeers: 0,
  };
  private readonly gate: ClaimGate | undefined;

  constructor(options: SummarizeQueueOptions) {
    this.summarizer = options.summarizer;
    this.fallback = options.fallback ?? new ExtractiveSummarizer();
    this.sink = options.sink;
    this.measure = options.measure;
    this.concurrency = Math.max(1, Math.floor(options.concurrency ?? 4));
    this.maxRequests = options.maxRequests;
    this.maxRetries = Math.max(0, Math.floor(options.maxRetries ?? 4));
    this.baseBackoffMs = Math.max(0, options.baseBackoffMs ?? 500);
    this.maxBackoffMs = Math.max(this.baseBackoffMs, options.maxBackoffMs ?? 60_000);
    this.logger = options.logger ?? silentLogger;
    this.now = options.now ?? (() => new Date());
    this.local = this.summarizer === this.fallback || this.summarizer.id === this.fallback.id;
    this.rateLimiter = options.requestsPerMinute !== undefined && !this.local ? new RateLimiter(options.requestsPerMinute) : undefined;
    this.gate =
      options.claims &&
      new ClaimGate({
        source: options.claims,
        logger: this.logger,
        events: { landed: (input, entry) => this.landed(input, entry), resume: (input) => this.resume(input) },
      });
  }

  /**
   * Queues a tool. Returns false when it is not queued: the key is already queued or running, was
   * done in this process (unless `force`), or the queue is closed. Throws `INPUT_INVALID` when the
   * key is not `server:tool:hash` of this input.
   */
  enqueue(input: SummarizeInput, options: EnqueueOptions = {}): boolean {
    const hash = input.key.slice(input.key.lastIndexOf(":") + 1);
    if (!HASH_PATTERN.test(hash) || input.key !== cacheKey(input.server, input.tool.name, hash)) {
      throw new AbridgeError(ErrorCode.INPUT_INVALID, `expected key "${input.server}:${input.tool.name}:<16 hex digits>", got "${input.key}"`);
    }
    if (this.closed) return false;
    if (this.active.has(input.key)) return false;
    if (this.doneKeys.has(input.key) && !options.force) return false;
    this.active.add(input.key);
    if (options.force) this.forcedKeys.add(input.key);
    this.gate?.noteQueued(input.key);
    this.pending.push(input);
    this.schedulePump();
    return true;
  }

  /** Adds a listener for stored entries; returns a function that removes it. */
  onEntry(listener: EntryListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** A snapshot of the counters. */
  stats(): SummarizeQueueStats {
    return { queued: this.pending.length, running: this.runningKeys.size, waiting: this.gate?.parkedCount ?? 0, ...this.counters };
  }

  /** Resolves when nothing is queued or running; rejects with `CANCELLED` if `signal` aborts first. */
  drain(signal?: AbortSignal): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return this.idle.wait(signal);
  }

  /**
   * Stops taking jobs, drops queued ones, ends backoff sleeps and rate-limit waits at once (those
   * jobs get no entry), and lets requests in flight finish (their entries are stored) unless
   * `abortRunning` is set or `signal` fires. Resolves when no batch is left. Idempotent.
   */
  close(options: CloseOptions = {}): Promise<void> {
    if (this.closePromise) return this.closePromise;
    this.closed = true;
    for (const input of [...this.pending, ...(this.gate?.dropParked() ?? [])]) {
      this.active.delete(input.key);
      this.forcedKeys.delete(input.key);
    }
    this.pending.length = 0;
    this.waitAbort.abort();
    let detach = (): void => {};
    if (options.abortRunning || options.signal?.aborted) {
      this.requestAbort.abort();
    } else if (options.signal) {
      const signal = options.signal;
      const onAbort = (): void => this.requestAbort.abort();
      signal.addEventListener("abort", onAbort, { once: true });
      detach = () => signal.removeEventListener("abort", onAbort);
    }
    this.closePromise = new Promise<void>((resolve) => {
      const done = (): void => {
        detach();
        this.gate?.close();
        resolve();
      };
      if (this.isIdle()) done();
      else this.idle.add(done);
    });
    return this.closePromise;
  }

  /** True while jobs are queued or running (summaries are still to land). */
  busy(): boolean {
    return !this.isIdle();
  }

  private isIdle(): boolean {
    return this.pending.length === 0 && this.activeBatches === 0 && (this.gate?.parkedCount ?? 0) === 0;
  }

  private notifyIdle(): void {
    if (!this.isIdle()) return;
    this.idle.wake();
  }

  /** Pumps on a microtask, so tools enqueued in one synchronous loop share batches. */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    queueMicrotask(() => this.pump());
  }

  private pump(): void {
    this.pumpScheduled = false;
    while (!this.closed && this.activeBatches < this.concurrency && this.pending.length > 0) {
      const batch = this.takeBatch();
      this.activeBatches++;
      for (const input of batch) this.runningKeys.add(input.key);
      void this.runBatch(batch)
        .catch((err: unknown) => {
          this.logger.error("summarize batch failed unexpectedly", { error: toAbridgeError(err) });
        })
        .finally(() => {
          this.activeBatches--;
          // Jobs that ended without an entry (closed, or an unexpected error) leave the sets here.
          for (const input of batch) this.finishJob(input.key);
          this.pump();
          this.notifyIdle();
        });
    }
    this.notifyIdle();
  }

  /** Up to `maxBatch` queued jobs of the server of the oldest job, in queue order. */
  private takeBatch(): SummarizeInput[] {
    const server = this.pending[0]?.server;
    const size = Math.max(1, Math.floor(this.summarizer.maxBatch));
    const batch: SummarizeInput[] = [];
    for (let i = 0; i < this.pending.length && batch.length < size; ) {
      const input = this.pending[i];
      if (input !== undefined && input.server === server) {
        batch.push(input);
        this.pending.splice(i, 1);
      } else {
        i++;
      }
    }
    return batch;
  }

  private finishJob(key: string): void {
    this.runningKeys.delete(key);
    if (this.gate?.isParked(key)) return; // waits for another process; still queued here
    this.active.delete(key);
    this.forcedKeys.delete(key);
    this.gate?.release(key);
  }

  /** A parked job whose key another process summarized: done here without a request. */
  private landed(input: SummarizeInput, entry: CacheEntry): void {
    this.counters.fromPeers++;
    this.counters.done++;
    if (entry.key === input.key) this.doneKeys.add(input.key);
    this.finishJob(input.key);
    this.notifyIdle();
  }

  /** A parked job whose claim's holder went away: it runs here. */
  private resume(input: SummarizeInput): void {
    if (this.closed) this.finishJob(input.key);
    else this.pending.push(input);
    this.schedulePump();
  }

  private capReached(): boolean {
    return !this.local && this.maxRequests !== undefined && this.counters.requests >= this.maxRequests;
  }

  private async runBatch(batch: SummarizeInput[]): Promise<void> {
    let remaining = this.gate ? await this.gate.acquire(batch) : batch;
    let attempt = 0;
    while (remaining.length > 0) {
      if (this.capReached()) {
        await this.capFallback(remaining);
        return;
      }
      if (this.rateLimiter) {
        try {
          await this.rateLimiter.acquire(this.waitAbort.signal);
        } catch {
          return; // closed while waiting: the jobs are dropped
        }
        // Another batch may have used the last request while this one waited.
        if (this.capReached()) {
          await this.capFallback(remaining);
          return;
        }
      }
      if (this.closed && attempt > 0) return;

      this.counters.requests++;
      let results: Map<string, SummarizeOutcome> | undefined;
      let batchError: AbridgeError | undefined;
      try {
        results = await this.summarizer.summarize(remaining, { signal: this.requestAbort.signal });
      } catch (err) {
        batchError = toAbridgeError(err, ErrorCode.SUMMARIZER_FAILED);
      }
      if (this.requestAbort.signal.aborted) return; // closed with abort: nothing is stored

      const retry: SummarizeInput[] = [];
      let retryError: AbridgeError | undefined;
      if (batchError) {
        if (batchError.code === ErrorCode.SUMMARIZER_RATE_LIMITED) this.counters.rateLimited++;
        if (batchError.retryable) {
          retry.push(...remaining);
          retryError = batchError;
        } else {
          this.logger.warn("summarizer request failed", { summarizer: this.summarizer.id, error: batchError, tools: remaining.length });
          for (const input of remaining) await this.failThenFallback(input, batchError);
        }
      } else {
        let sawRateLimit = false;
        for (const input of remaining) {
          const outcome = results?.get(input.key);
          if (outcome === undefined) {
            await this.failThenFallback(input, new AbridgeError(ErrorCode.SUMMARIZER_FAILED, `summarizer returned no outcome for ${input.key}`));
          } else if (outcome.ok) {
            await this.accept(input, outcome.value);
          } else {
            const error = toAbridgeError(outcome.error, ErrorCode.SUMMARIZER_FAILED);
            if (error.code === ErrorCode.SUMMARIZER_RATE_LIMITED) sawRateLimit = true;
            if (error.retryable) {
              retry.push(input);
              retryError = error;
            } else {
              await this.failThenFallback(input, error);
            }
          }
        }
        if (sawRateLimit) this.counters.rateLimited++;
      }

      remaining = retry;
      if (remaining.length === 0 || retryError === undefined) return;
      if (this.closed) return; // no new attempts once closed
      if (attempt >= this.maxRetries) {
        this.logger.warn("summarizer retries exhausted; using the fallback", {
          summarizer: this.summarizer.id,
          error: retryError,
          attempts: attempt + 1,
          tools: remaining.length,
        });
        for (const input of remaining) await this.failThenFallback(input, retryError, "retries exhausted: ");
        return;
      }
      attempt++;
      this.counters.retries++;
      const retryAfterMs = retryError.details?.["retryAfterMs"];
      const delayMs = backoffMs(attempt, typeof retryAfterMs === "number" ? retryAfterMs : undefined, this.baseBackoffMs, this.maxBackoffMs);
      this.logger.info("summarizer request failed; retrying", {
        summarizer: this.summarizer.id,
        code: retryError.code,
        attempt,
        delayMs,
        tools: remaining.length,
      });
      try {
        await delay(delayMs, this.waitAbort.signal);
      } catch (err) {
        if (isAbridgeError(err, ErrorCode.CANCELLED)) return; // closed while sleeping: dropped
        throw err;
      }
    }
  }

  private async capFallback(inputs: SummarizeInput[]): Promise<void> {
    if (!this.capLogged) {
      this.capLogged = true;
      this.logger.warn("summarizer spend cap reached; remaining tools use the fallback", {
        maxRequests: this.maxRequests,
      });
    }
    for (const input of inputs) {
      this.counters.capReached++;
      await this.useFallback(input, `${CAP_REASON}spend cap of ${this.maxRequests} requests reached`);
    }
  }

  private async failThenFallback(input: SummarizeInput, error: AbridgeError, prefix = ""): Promise<void> {
    this.counters.failed++;
    await this.useFallback(input, `${prefix}${error.code}: ${error.message}`);
  }

  /** Guards a summarizer's text; a rejected one is replaced by the fallback's. */
  private async accept(input: SummarizeInput, given: ToolSummary): Promise<void> {
    const value = withoutControl(given);
    const verdict = guardSummary(input.tool, value);
    if (verdict.ok) {
      this.counters.generated++;
      await this.store(input, value, { summarizer: this.summarizer.id, prompt: this.summarizer.promptId });
      return;
    }
    if (this.local) {
      // The fallback would write the same text again: keep it and say why it is imperfect.
      this.logger.warn("summary does not pass the guard", { key: input.key, reasons: verdict.reasons });
      this.counters.generated++;
      await this.store(input, value, { summarizer: this.summarizer.id, prompt: this.summarizer.promptId });
      return;
    }
    this.counters.guardRejections++;
    this.logger.info("summary rejected by the guard; using the fallback", { key: input.key, reasons: verdict.reasons });
    await this.useFallback(input, `${GUARD_REASON}${verdict.reasons.join("; ")}`);
  }

  private async useFallback(input: SummarizeInput, reason: string): Promise<void> {
    let value: ToolSummary | undefined;
    try {
      const outcome = (await this.fallback.summarize([input])).get(input.key);
      if (outcome?.ok) value = outcome.value;
      else this.logger.error("fallback summarizer failed", { key: input.key, error: outcome?.error });
    } catch (err) {
      this.logger.error("fallback summarizer failed", { key: input.key, error: toAbridgeError(err) });
    }
    // Never leave a tool without an entry: its name is a summary of last resort.
    value ??= { summary: summaryFromName(input.tool.name, input.tool.title), params: {} };
    this.counters.fallbacks++;
    await this.store(input, value, {
      summarizer: this.fallback.id,
      prompt: this.fallback.promptId,
      fallback: storedReason(reason),
    });
  }

  private async store(input: SummarizeInput, given: ToolSummary, origin: EntryOrigin): Promise<void> {
    const value = withoutControl(given);
    const entry = buildCacheEntry(input, value, origin, this.measure(input, value), this.now());
    const checked = cacheEntrySchema.safeParse(entry);
    if (!checked.success) {
      // Keys are checked on enqueue, so this means a summarizer returned a malformed value.
      this.counters.failed++;
      this.logger.error("summary entry is invalid; not stored", { key: input.key, error: checked.error.message });
      this.finishJob(input.key);
      return;
    }
    try {
      await this.sink.append(entry, this.forcedKeys.has(input.key) ? { force: true } : {});
    } catch (err) {
      this.counters.sinkErrors++;
      this.logger.error("cannot store summary entry", { key: input.key, error: toAbridgeError(err, ErrorCode.CACHE_IO) });
    }
    this.counters.done++;
    this.doneKeys.add(input.key);
    this.finishJob(input.key);
    for (const listener of this.listeners) {
      try {
        listener(entry);
      } catch (err) {
        this.logger.error("summary entry listener threw", { key: input.key, error: toAbridgeError(err) });
      }
    }
  }
}

/**
 * A summary without terminal control. Every summary passes here before it is guarded and stored: a
 * summarizer may copy an upstream's escape sequences (an extractive one copies its text), and a
 * summary is shown on terminals and to models.
 */
function withoutControl(value: ToolSummary): ToolSummary {
  return {
    summary: stripControl(value.summary),
    params: Object.fromEntries(Object.entries(value.params).map(([name, text]) => [name, stripControl(text)])),
  };
}
