/**
 * When a server's tools are listed again: a burst of `tools/list_changed` notifications settles
 * for a quiet time and gives one re-list; one that arrives during a re-list gives one more after
 * it; an explicit {@link now} waits for a re-list in progress, then runs its own, and callers of
 * {@link now} who arrive while one is already waiting share that one. Never two at once.
 */
export class RelistScheduler {
  private readonly debounceMs: number;
  private readonly relist: () => Promise<void>;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** The re-list {@link now} callers wait for once the running one ends. */
  private queued: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  /** `relist` must not reject (it logs its own failures). */
  constructor(debounceMs: number, relist: () => Promise<void>) {
    this.debounceMs = debounceMs;
    this.relist = relist;
  }

  /** `tools/list_changed`: wait for the burst to settle, then re-list once. */
  schedule(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // A re-list started by now() while the burst settled: the change comes after it began.
      if (this.running) this.again = true;
      else void this.start();
    }, this.debounceMs);
    this.timer.unref();
  }

  /** Re-lists now, after the re-list in progress if there is one; resolves when the new list is in. */
  now(): Promise<void> {
    // This re-list answers the notifications a pending debounce was waiting to settle.
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    const queued = this.running.then(() => {
      this.queued = undefined;
      return this.start();
    });
    this.queued = queued;
    return queued;
  }

  /** No more scheduled re-lists (the connection closes). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private start(): Promise<void> {
    const run = this.relist().finally(() => {
      if (this.running === run) this.running = undefined;
      // A queued now() runs next and covers the changes seen meanwhile.
      if (this.again && !this.queued) {
        this.again = false;
        this.schedule();
      } else if (this.queued) this.again = false;
    });
    this.running = run;
    return run;
  }
}
