/**
 * How long the summarize queue waits before it tries a failed batch again: exponential backoff
 * with jitter, honouring (within a bound) the `retry-after` the summarizer's server asked for.
 * A pure function kept apart from `summarizeQueue.ts`, so the retry policy reads in one place.
 */

/** A `retry-after` longer than this is cut: a summary is not worth waiting hours for. */
const MAX_RETRY_AFTER_MS = 5 * 60_000;

/** The wait before retry `attempt` (1 for the first), between `baseMs` doubled per attempt and `maxMs`. */
export function backoffMs(attempt: number, retryAfterMs: number | undefined, baseMs: number, maxMs: number): number {
  const exponential = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
  // "Equal jitter": at least half the backoff, so retries of many batches spread out but never rush.
  const jittered = exponential / 2 + (Math.random() * exponential) / 2;
  const serverAsked = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  return Math.round(Math.max(jittered, serverAsked));
}
