/**
 * Callers of the summarize queue waiting for it to fall idle (`drain`, `close`). Kept apart from
 * `summarizeQueue.ts` because a wait that its caller may cancel, and that must not stay
 * registered once cancelled, is bookkeeping of its own; the queue only says when it is idle.
 */
import { AbridgeError, ErrorCode } from "../model/errors.js";

/** Waiters woken together when the queue falls idle. */
export class IdleWaiters {
  private waiters: Array<() => void> = [];

  /** Resolves at the next {@link wake}; rejects with `CANCELLED` if `signal` aborts first. */
  wait(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new AbridgeError(ErrorCode.CANCELLED, "drain cancelled", { cause: signal?.reason }));
      };
      const waiter = (): void => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      if (signal?.aborted) {
        onAbort();
        return;
      }
      this.waiters.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Calls `waiter` at the next {@link wake}. */
  add(waiter: () => void): void {
    this.waiters.push(waiter);
  }

  /** Wakes every waiter registered so far. */
  wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}
