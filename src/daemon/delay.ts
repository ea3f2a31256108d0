import { AbridgeError, ErrorCode } from "../errors.js";

/**
 * Waits `ms` milliseconds, rejecting with CANCELLED when `signal` aborts. Unlike the summarizer's
 * `sleep`, the timer is not unref'd: a script whose only work is `await ensureDaemon()` must not
 * have its process exit in the middle of the wait.
 */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(new AbridgeError(ErrorCode.CANCELLED, "wait cancelled", { cause: signal.reason }));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new AbridgeError(ErrorCode.CANCELLED, "wait cancelled", { cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
