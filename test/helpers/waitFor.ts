/**
 * Waiting in tests without fixed sleeps. {@link Watch} waits for a condition over what event
 * handlers collect (stream output, notifications), checked again on each event; {@link settled}
 * bounds a wait for an event that is a promise already; {@link waitFor} polls a state that no
 * event announces (a pid's death, a file appearing, a counter in another process or connection).
 * All are hang guards, never timing checks: on timeout they fail naming what they waited for.
 */

/** Options of {@link waitFor} and {@link settled}. */
export interface WaitOptions {
  /** What is waited for, named in the error on timeout ("the worker to reconnect"). */
  what: string;
  /** Generous: only a hang ends the wait this way. Default 30 s. */
  timeoutMs?: number;
  /** More for the timeout error, read when it happens (e.g. a child's stderr). */
  detail?: () => string;
}

/** Options of {@link waitFor}. */
export interface PollOptions extends WaitOptions {
  /** Between two checks. Default 25 ms. */
  intervalMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;

function timeoutError(options: WaitOptions, timeoutMs: number): Error {
  const detail = options.detail?.() ?? "";
  return new Error(`timed out after ${timeoutMs} ms waiting for ${options.what}${detail === "" ? "" : `\n${detail}`}`);
}

/**
 * Resolves once `predicate` holds, checking it now and then every `intervalMs`; rejects after
 * `timeoutMs` with what it waited for. A predicate that throws ends the wait with its error.
 */
export async function waitFor(predicate: () => boolean | Promise<boolean>, options: PollOptions): Promise<void> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const intervalMs = options.intervalMs ?? 25;
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() >= deadline) throw timeoutError(options, timeoutMs);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** `promise`, or a rejection naming what it was waiting for if it has not settled after `timeoutMs`. */
export function settled<T>(promise: Promise<T>, options: WaitOptions): Promise<T> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timeoutError(options, timeoutMs)), timeoutMs);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/**
 * Conditions over state that event handlers update: a handler calls {@link changed} after it
 * records something (a chunk of output, a notification), and every pending {@link until} checks
 * its condition again then. No polling: a condition is only checked when something happened.
 */
export class Watch {
  private readonly waiters = new Set<() => void>();

  /** Checks every pending condition again. */
  changed(): void {
    for (const check of [...this.waiters]) check();
  }

  /** Resolves once `condition` holds (checked now and on every {@link changed}). */
  until(condition: () => boolean, options: WaitOptions): Promise<void> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    return new Promise<void>((resolve, reject) => {
      const check = (): void => {
        let holds: boolean;
        try {
          holds = condition();
        } catch (err) {
          done();
          reject(err);
          return;
        }
        if (!holds) return;
        done();
        resolve();
      };
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(timeoutError(options, timeoutMs));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }
}
