import type { DiscoveryCounts, DiscoverOptions } from "../catalog/toolCatalog.js";
import { ErrorCode, isAbridgeError, messageOf } from "../model/errors.js";
import type { Logger } from "../log/logger.js";
import type { UpstreamPool } from "../upstream/upstreamPool.js";

/** Summary jobs that can be held back while the upstreams start (see heldJobs.ts). */
export interface HoldableJobs {
  hold(): void;
  release(): void;
}

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
  /** Releases the held summary jobs once `startup_grace_ms` has passed with servers still starting. */
  private graceTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: UpstreamPool,
    private readonly discover: (options?: DiscoverOptions) => DiscoveryCounts[],
    private readonly logger: Logger,
    private readonly jobs?: HoldableJobs,
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
    this.startPromise ??= this.pool.start(signal).then(
      () => {
        this.settled = true;
        const counts = this.discover(discover);
        this.releaseJobs();
        return counts;
      },
      (err: unknown) => {
        this.releaseJobs();
        throw err;
      },
    );
    return this.startPromise;
  }

  /**
   * {@link start} without waiting for it. A start that fails as a whole (a name collision of
   * `prefix = false` servers, a cancelled start) is logged; servers that fail are in the pool's status.
   *
   * Summary jobs for the tools of servers that come up meanwhile are held until every server
   * settled, at most `graceMs`: summarizing (and loading the tokenizer for the figures of each new
   * entry) took the CPU that the servers still starting and the first tools/list needed, and a
   * client is served the original descriptions until a summary lands anyway.
   */
  begin(signal?: AbortSignal, graceMs?: number): void {
    this.serving = true;
    if (this.startPromise === undefined && this.jobs !== undefined) {
      this.jobs.hold();
      if (graceMs !== undefined) {
        this.graceTimer = setTimeout(() => this.releaseJobs(), graceMs);
        this.graceTimer.unref();
      }
    }
    this.start(signal).catch((err: unknown) => {
      if (!isAbridgeError(err, ErrorCode.CANCELLED)) this.logger.error("upstreams failed to start", { error: messageOf(err) });
    });
  }

  /** Hands held summary jobs to the queue and stops holding them. Idempotent. */
  private releaseJobs(): void {
    this.stopGrace();
    this.jobs?.release();
  }

  /** Stops the grace timer: a closing bridge neither waits for it nor summarizes what is held. */
  stopGrace(): void {
    if (this.graceTimer !== undefined) clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
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
