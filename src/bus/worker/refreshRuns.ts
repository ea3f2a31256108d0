/**
 * The coalescing of refresh requests (`tool.refresh.mcp[.<agent>]`): a flood of them costs one
 * re-list of the upstreams and one publish of the list per interval. Kept apart from
 * `busWorker.ts` because the bookkeeping of who waits for which run, and when the next may start,
 * is a small state machine of its own; the worker only hands requests in and answers from it.
 */
import type { Logger } from "../../log/logger.js";
import type { RateLimitedLog } from "../../log/rateLimitedLog.js";
import type { BusError, BusId, RefreshError } from "../wire/busProtocol.js";
import { busError, busErrorOf } from "./busErrors.js";

/** Refresh requests with a reply subject that may wait for the next re-list; past it they are answered `busy`. */
export const MAX_REFRESH_WAITERS = 1_000;

/** A refresh request with a reply subject, waiting for the next re-list. */
interface RefreshWaiter {
  reply: string;
  id: BusId | undefined;
}

/** What the refresh runs need of their worker. */
export interface RefreshHost {
  agent: string;
  /** The worker's id, named in the answers. */
  worker: string;
  /** Runs start at most once per this many ms. */
  intervalMs: number;
  logger: Logger;
  /** Where refreshes answered `busy` are logged, rate-limited. */
  busyLog: RateLimitedLog;
  /** Re-lists the upstreams. */
  relist(): Promise<unknown>;
  /** Publishes the list for everyone, carrying `id`. */
  publish(id: BusId | undefined): void;
  /** Answers one request with the list, carrying its id. */
  answerList(reply: string, id: BusId | undefined): void;
  /** Publishes JSON marked untrusted; false when it could not be sent. */
  send(subject: string, body: unknown, what: string): boolean;
  /** Tracks a run, so a shutdown waits for it. */
  track(task: Promise<void>): void;
  /** Whether the worker is shutting down: the next run then starts at once. */
  closing(): boolean;
}

/**
 * Refresh requests waiting for the next run, which re-lists the upstreams once, publishes the
 * list once and answers every request that waited for it: runs start at most once per interval,
 * one after another. At most {@link MAX_REFRESH_WAITERS} requests with a reply subject wait.
 */
export class RefreshRuns {
  private readonly host: RefreshHost;
  /** Refresh requests with a reply subject that the next re-list answers. */
  private waiters: RefreshWaiter[] = [];
  /** A refresh without a reply subject is waiting: the next run publishes the list. */
  private publishPending = false;
  /** Some waiting refresh asked for a re-list (not only for the list as it is). */
  private relistPending = false;
  /** The id of the first waiting refresh request that had one: the published list carries it. */
  private pendingId: BusId | undefined;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private lastStart = Number.NEGATIVE_INFINITY;

  constructor(host: RefreshHost) {
    this.host = host;
  }

  /** Whether a request waits for a run. */
  get waiting(): boolean {
    return this.waiters.length > 0 || this.publishPending;
  }

  /**
   * A refresh request that waits for the next run (`reply`: its reply subject, if any; `relist`:
   * whether it asked for a re-list). Past {@link MAX_REFRESH_WAITERS} one with a reply subject is
   * answered `busy`.
   */
  request(id: BusId | undefined, relist: boolean, reply: string | undefined): void {
    const host = this.host;
    if (reply !== undefined) {
      if (this.waiters.length >= MAX_REFRESH_WAITERS) {
        const error = busError("busy", `worker ${host.worker} has ${MAX_REFRESH_WAITERS} refresh requests waiting for its next re-list; try again`, true);
        const answer: RefreshError = { id: id ?? null, agent: host.agent, worker: host.worker, ok: false, error };
        host.busyLog.warn({ refreshesWaiting: this.waiters.length });
        host.send(reply, answer, "error answer");
        return;
      }
      this.waiters.push({ reply, id });
    } else {
      this.publishPending = true;
    }
    if (relist) this.relistPending = true;
    this.pendingId ??= id;
    this.schedule(false);
  }

  /** Starts the next run now, or sets its timer for when the interval allows (`now`: at once, at shutdown). */
  schedule(now: boolean): void {
    if (this.running || !this.waiting) return;
    const wait = this.lastStart + this.host.intervalMs - performance.now();
    if (wait > 0 && !now) {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.schedule(false);
      }, wait);
      return;
    }
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.running = true;
    this.lastStart = performance.now();
    const waiters = this.waiters;
    const relist = this.relistPending;
    const id = this.pendingId;
    this.waiters = [];
    this.publishPending = false;
    this.relistPending = false;
    this.pendingId = undefined;
    this.host.track(
      this.run(waiters, relist, id).finally(() => {
        this.running = false;
        this.schedule(this.host.closing());
      }),
    );
  }

  private async run(waiters: RefreshWaiter[], relist: boolean, id: BusId | undefined): Promise<void> {
    const host = this.host;
    if (relist) {
      try {
        await host.relist();
      } catch (err) {
        const error: BusError = busErrorOf(err);
        for (const waiter of waiters) {
          const answer: RefreshError = { id: waiter.id ?? null, agent: host.agent, worker: host.worker, ok: false, error };
          host.send(waiter.reply, answer, "error answer");
        }
        host.logger.warn("re-listing the upstreams failed", { error: error.message });
        return;
      }
    }
    // Everyone hears of the run once; each request with a reply subject gets the list too, with its own id.
    host.publish(id);
    for (const waiter of waiters) host.answerList(waiter.reply, waiter.id);
  }
}
