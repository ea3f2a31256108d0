import { AbridgeError, ErrorCode } from "../errors.js";

/**
 * Waits `ms` milliseconds; rejects with `CANCELLED` as soon as `signal` aborts, so a closing queue
 * never waits out a long backoff. The timer keeps the process alive: a script whose only work is
 * `await queue.drain()` must not exit in the middle of a retry's backoff (an unref'd timer would
 * let Node end the process with the await unsettled); closing the queue aborts the wait instead.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const cancelled = (): AbridgeError =>
      new AbridgeError(ErrorCode.CANCELLED, "wait cancelled", { cause: signal?.reason });
    if (signal?.aborted) {
      reject(cancelled());
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(cancelled());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
