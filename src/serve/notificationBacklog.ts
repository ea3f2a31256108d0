import { silentLogger, type Logger } from "../log/logger.js";

/** Notifications that may wait for a client that does not read; past this they are dropped (and counted). */
export const DEFAULT_MAX_QUEUED_NOTIFICATIONS = 1_000;

/** Options of a {@link NotificationBacklog}. */
export interface NotificationBacklogOptions {
  /** Notifications that may wait at once (default {@link DEFAULT_MAX_QUEUED_NOTIFICATIONS}). */
  limit?: number;
  /** Past this many bytes waiting (of any message), notifications are dropped too (default: no bound). */
  maxBytes?: number;
  /** Where a stretch of dropping is reported. */
  logger?: Logger;
  /** Added to both warnings (which client). */
  fields?: Record<string, unknown>;
  /**
   * A stretch that starts less than this long after the last warning is not announced, and its
   * count joins the next warning that goes out (default 0: every stretch is logged). A client
   * that reads a little slower than a flood starts a stretch each time it falls behind.
   */
  windowMs?: number;
  /** Milliseconds now (default `Date.now`). */
  now?: () => number;
}

/**
 * What happens to notifications for a client that is not reading, on stdio and on every HTTP
 * stream alike: while its output pushes back, at most `limit` notifications wait, and those past
 * that are dropped and counted, with a warning when a stretch of dropping starts and one with its
 * count once the client catches up (or goes). An upstream that logs a million lines must not cost
 * a million lines of memory per client that stopped reading. Responses and requests are never
 * dropped: the caller only asks about notifications.
 */
export class NotificationBacklog {
  /** Notifications that may wait at once. */
  readonly limit: number;
  private readonly maxBytes: number;
  private readonly logger: Logger;
  private readonly fields: Record<string, unknown>;
  private readonly windowMs: number;
  private readonly now: () => number;
  private total = 0;
  private stretch = 0;
  /** Dropped in stretches whose end was not logged: told with the next end that is. */
  private unreported = 0;
  /** Whether the current stretch's start was logged (its end then is too). */
  private announced = false;
  private lastWarning = Number.NEGATIVE_INFINITY;

  constructor(options: NotificationBacklogOptions = {}) {
    this.limit = options.limit ?? DEFAULT_MAX_QUEUED_NOTIFICATIONS;
    this.maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    this.logger = options.logger ?? silentLogger;
    this.fields = options.fields ?? {};
    this.windowMs = options.windowMs ?? 0;
    this.now = options.now ?? Date.now;
  }

  /**
   * Whether one more notification may wait behind `queued` others (holding `queuedBytes` in all);
   * when not, it counts as dropped (the first drop of a stretch is logged).
   */
  admit(queued: number, queuedBytes = 0): boolean {
    if (queued < this.limit && queuedBytes < this.maxBytes) return true;
    this.total += 1;
    this.stretch += 1;
    if (this.stretch === 1 && this.now() - this.lastWarning >= this.windowMs) {
      this.announced = true;
      this.lastWarning = this.now();
      this.logger.warn("client is not reading: dropping notifications until it catches up", { ...this.fields, queued, limit: this.limit });
    }
    return false;
  }

  /** Notifications dropped so far. */
  get dropped(): number {
    return this.total;
  }

  /** The client caught up, or left: how many the stretch dropped is logged, once. */
  settle(): void {
    if (this.stretch === 0) return;
    this.unreported += this.stretch;
    this.stretch = 0;
    if (!this.announced && this.now() - this.lastWarning < this.windowMs) return;
    this.announced = false;
    this.lastWarning = this.now();
    this.logger.warn("notifications dropped while the client was not reading", { ...this.fields, dropped: this.unreported, total: this.total });
    this.unreported = 0;
  }
}
