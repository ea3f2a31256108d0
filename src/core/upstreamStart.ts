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
  /** Summary jobs are held (by {@link begin}) until {@link releaseJobs}. */
  private holding = false;
  /** The release of the held jobs, once asked for; see {@link releaseJobs}. */
  private released: Promise<void> | undefined;
  private releaseTimer: NodeJS.Immediate | undefined;
  /** Settles {@link released} when a closing bridge drops the release. */
  private dropRelease: (() => void) | undefined;

  constructor(
    private readonly pool: UpstreamPool,
    private readonly discover: (options?: DiscoverOptions) => DiscoveryCounts[],
    private readonly logger: Logger,
    private readonly jobs?: HoldableJobs,
    /** When the pool was started before this was made (a bridge that spawned its upstreams first): the grace counts from then. */
    startedAtMs?: number,
  ) {
    this.startedAtMs = startedAtMs;
  }

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
      async () => {
        this.settled = true;
        const counts = this.discover(discover);
        await this.releaseJobs();
        return counts;
      },
      async (err: unknown) => {
        await this.releaseJobs();
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
    // Once: a second begin would hold nothing more and report a failed start twice.
    if (this.serving) return;
    this.serving = true;
    if (this.startPromise === undefined && this.jobs !== undefined) {
      this.jobs.hold();
      this.holding = true;
      if (graceMs !== undefined) {
        const leftMs = this.startedAtMs === undefined ? graceMs : Math.max(0, this.startedAtMs + graceMs - Date.now());
        this.graceTimer = setTimeout(() => void this.releaseJobs(), leftMs);
        this.graceTimer.unref();
      }
    }
    this.start(signal).catch((err: unknown) => {
      if (!isAbridgeError(err, ErrorCode.CANCELLED)) this.logger.error("upstreams failed to start", { error: messageOf(err) });
    });
  }

  /**
   * Hands held summary jobs to the queue and stops holding them, one turn of the event loop later:
   * a tools/list that waited for the same moment (the last server up, or the grace over) is
   * answered and written first. Released at once, the jobs ran first: summarizing every new tool
   * and loading the tokenizer for their entries' figures held the first list's answer back (about
   * 0.3 s with 10 cold upstreams on a loaded machine, over a second with 50). Resolves once they
   * are handed over (or dropped by {@link stopGrace}). Idempotent.
   */
  private releaseJobs(): Promise<void> {
    if (this.graceTimer !== undefined) clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
    if (!this.holding) return Promise.resolve();
    this.released ??= new Promise<void>((resolve) => {
      this.dropRelease = resolve;
      this.releaseTimer = setImmediate(() => {
        this.releaseTimer = undefined;
        this.jobs?.release();
        resolve();
      });
    });
    return this.released;
  }

  /** Stops the grace timer and a release not yet made: a closing bridge neither waits for them nor summarizes what is held. */
  stopGrace(): void {
    if (this.graceTimer !== undefined) clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
    if (this.releaseTimer !== undefined) {
      clearImmediate(this.releaseTimer);
      this.releaseTimer = undefined;
      this.dropRelease?.();
    }
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
