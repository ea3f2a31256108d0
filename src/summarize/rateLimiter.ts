import { delay } from "../model/timers.js";

/**
 * Spaces request starts evenly: at most `requestsPerMinute` per minute, one every
 * `60_000 / requestsPerMinute` ms. No burst: a summarizer backlog is long-running background work,
 * and an even pace stays clear of provider limits that count over shorter windows.
 */
export class RateLimiter {
  readonly intervalMs: number;
  private nextSlotMs = Number.NEGATIVE_INFINITY;
  private readonly nowMs: () => number;

  constructor(requestsPerMinute: number, nowMs: () => number = Date.now) {
    if (!(requestsPerMinute > 0)) throw new RangeError(`requestsPerMinute must be positive, got ${requestsPerMinute}`);
    this.intervalMs = 60_000 / requestsPerMinute;
    this.nowMs = nowMs;
  }

  /** Books the next free slot and returns how long to wait for it (0 when it is now). */
  reserve(): number {
    const now = this.nowMs();
    const slot = Math.max(now, this.nextSlotMs);
    this.nextSlotMs = slot + this.intervalMs;
    return slot - now;
  }

  /** Waits for the next free slot; rejects with `CANCELLED` when `signal` aborts. */
  async acquire(signal?: AbortSignal): Promise<void> {
    const waitMs = this.reserve();
    if (waitMs > 0) await delay(waitMs, signal);
    else signal?.throwIfAborted();
  }
}
