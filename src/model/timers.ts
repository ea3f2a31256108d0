import { AbridgeError, ErrorCode } from "./errors.js";

/**
 * Waits `ms` milliseconds; rejects with `CANCELLED` as soon as `signal` aborts, so a closing queue,
 * client or connection never waits out a long backoff. The timer keeps the process alive unless
 * `unref` is set: a script whose only work is `await queue.drain()` or `await ensureDaemon()` must
 * not exit in the middle of a wait (an unref'd timer would let Node end the process with the await
 * unsettled); closing aborts the wait instead.
 */
export function delay(ms: number, signal?: AbortSignal, options: { unref?: boolean } = {}): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const cancelled = (): AbridgeError => new AbridgeError(ErrorCode.CANCELLED, "wait cancelled", { cause: signal?.reason });
    if (signal?.aborted) {
      reject(cancelled());
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(cancelled());
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    if (options.unref) timer.unref();
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
