/** Settings of the restart backoff. */
export interface BackoffOptions {
  /** Delay ceiling of the first retry. */
  baseMs: number;
  /** Growth of the ceiling per attempt. */
  factor: number;
  /** Largest ceiling. */
  capMs: number;
  /** A connection that stayed up this long starts again from attempt 0. */
  resetAfterMs: number;
}

/** base 250 ms, factor 2, cap 30 s; reset after 30 s of uptime. */
export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 250, factor: 2, capMs: 30_000, resetAfterMs: 30_000 };

/**
 * Delay before restart attempt `attempt` (0-based) with "full jitter": uniform in
 * `[0, min(cap, base * factor^attempt))`. Jitter spreads restarts of many servers that died
 * together (e.g. after a network blip) instead of hammering them in lockstep.
 */
export function backoffDelayMs(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const ceiling = Math.min(options.capMs, options.baseMs * options.factor ** Math.max(0, attempt));
  return Math.floor(random() * ceiling);
}
