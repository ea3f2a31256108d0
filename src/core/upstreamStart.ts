import type { DiscoveryCounts, DiscoverOptions } from "../catalog/toolCatalog.js";
import { ErrorCode, isAbridgeError } from "../model/errors.js";
import type { Logger } from "../log/logger.js";
import type { UpstreamPool } from "../upstream/upstreamPool.js";

/**
 * The start of the upstreams and what waits on it: one start however often it is asked for, the
 * discovery that ends it, and the grace lists give servers still making their first connection.
 */
export class UpstreamStart {
  private startPromise: Promise<DiscoveryCounts[]> | undefined;
  private startedAtMs: number | undefined;
  /** The start has settled (every server ready or failed once). */
  private settled = false;
  /** A front end serves while the start runs ({@link begin}): discover each server as it comes up. */
  private serving = false;

  constructor(
    private readonly pool: UpstreamPool,
    private readonly discover: (options?: DiscoverOptions) => DiscoveryCounts[],
    private readonly logger: Logger,
  ) {}

  /**
   * True when a server's changed tools should be discovered at once. While a plain start() runs,
   * its own discovery at the end counts every server once (what `summarize warm` and `tools`
   * report); a front end that serves during the start (begin()) needs each server's tools as
   * soon as it is ready.
   */
  get followsChanges(): boolean {
    return this.settled || this.serving;
  }

  /** Connects every upstream once and resolves with the discovery of them all. Idempotent. */
  start(signal?: AbortSignal, discover: DiscoverOptions = {}): Promise<DiscoveryCounts[]> {
    this.startedAtMs ??= Date.now();
    this.startPromise ??= this.pool.start(signal).then(() => {
      this.settled = true;
      return this.discover(discover);
    });
    return this.startPromise;
  }

  /**
   * {@link start} without waiting for it. A start that fails as a whole (a name collision of
   * `prefix = false` servers, a cancelled start) is logged; servers that fail are in the pool's status.
   */
  begin(signal?: AbortSignal): void {
    this.serving = true;
    this.start(signal).catch((err: unknown) => {
      if (!isAbridgeError(err, ErrorCode.CANCELLED)) this.logger.error("upstreams failed to start", { error: err instanceof Error ? err.message : String(err) });
    });
  }

  /**
   * Waits until no upstream is still making its first connection, at most until `graceMs` after
   * the start. Resolves true when every server settled.
   *
   * @throws AbridgeError CANCELLED when `signal` aborts first.
   */
  waitReady(graceMs: number, signal?: AbortSignal): Promise<boolean> {
    // The grace counts from the start, not from each request: once it has passed, lists answer
    // at once with what is ready, however many servers still hang.
    const leftMs = (this.startedAtMs ?? Date.now()) + graceMs - Date.now();
    if (leftMs <= 0) return Promise.resolve(this.pool.servers().every((s) => s.state !== "connecting"));
    return this.pool.waitSettled(undefined, leftMs, signal);
  }
}
