/**
 * When a server's tools are listed again: a burst of `tools/list_changed` notifications settles
 * for a quiet time and gives one re-list; one that arrives during a re-list gives one more after
 * it; an explicit {@link now} waits for a re-list in progress, then runs its own. Never two at once.
 */
export class RelistScheduler {
  private readonly debounceMs: number;
  private readonly relist: () => Promise<void>;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
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
      this.running = this.relist().finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.schedule();
        }
      });
    }, this.debounceMs);
    this.timer.unref();
  }

  /** Re-lists now, after the re-list in progress if there is one; resolves when the new list is in. */
  async now(): Promise<void> {
    if (this.running) await this.running;
    this.running = this.relist().finally(() => {
      this.running = undefined;
    });
    await this.running;
  }

  /** No more scheduled re-lists (the connection closes). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
