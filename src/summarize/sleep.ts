import { AbridgeError, ErrorCode } from "../errors.js";

/**
 * Waits `ms` milliseconds; rejects with `CANCELLED` as soon as `signal` aborts, so a closing queue
 * never waits out a long backoff. The timer is unref'd: a pending retry must not keep the process
 * alive on its own.
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
    timer.unref?.();
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
