/** Default shortest wait between re-lists asked for by `ttlMs`: a server's `ttlMs: 1` must not become a busy loop. */
export const DEFAULT_MIN_TTL_RELIST_MS = 1_000;

/** setTimeout's ceiling. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The `ttlMs` of a stateless server's tool list as a re-list hint. A server of the 2026-07-28
 * revision sends no `tools/list_changed` unless a client listens for it; instead each list says
 * how long it may be kept. abridge holds the list for its own clients, so when that time runs
 * out it lists again (through the connection's RelistScheduler, so never two at once), and its
 * clients hear `list_changed` only if the list did change. `ttlMs: 0` (the SDK's default, "do not
 * cache") is no hint: re-listing a server without end helps nobody, so nothing is scheduled.
 */
export class TtlRelist {
  private readonly relist: () => void;
  private readonly minMs: number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(relist: () => void, minMs: number = DEFAULT_MIN_TTL_RELIST_MS) {
    this.relist = relist;
    this.minMs = minMs;
  }

  /** A list came in with `ttlMs` (undefined: the server gave none): the next re-list is planned from now. */
  listed(ttlMs: number | undefined): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.stopped || ttlMs === undefined || !Number.isFinite(ttlMs) || ttlMs <= 0) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.relist();
      },
      Math.min(MAX_TIMER_MS, Math.max(this.minMs, ttlMs)),
    );
    this.timer.unref();
  }

  /** True while a re-list is planned. */
  get scheduled(): boolean {
    return this.timer !== undefined;
  }

  /** No more re-lists (the connection closed or is restarting). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Stops for good (the connection is closing). */
  close(): void {
    this.stopped = true;
    this.stop();
  }
}
