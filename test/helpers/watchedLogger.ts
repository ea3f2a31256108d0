/**
 * A debug logger that keeps its lines and tells waiters as each one is written: tests wait for a
 * line (an upstream's stderr, a warning) as an event, not on a clock.
 */
import { createLogger, type Logger } from "../../src/log/logger.js";

/** The logger, its lines, and a wait for a condition on them. */
export interface WatchedLogger {
  logger: Logger;
  lines: string[];
  /** Resolves once `check()` holds, checked at every line; rejects after `limitMs` (a hang guard). */
  until(check: () => boolean, what: string, limitMs?: number): Promise<void>;
}

export function watchedLogger(): WatchedLogger {
  const lines: string[] = [];
  const waiters: { check: () => boolean; resolve: () => void }[] = [];
  const logger = createLogger({
    level: "debug",
    sink: (line) => {
      lines.push(line);
      for (const waiter of waiters.splice(0)) {
        if (waiter.check()) waiter.resolve();
        else waiters.push(waiter);
      }
    },
  });
  const until = (check: () => boolean, what: string, limitMs = 30_000): Promise<void> =>
    new Promise((resolve, reject) => {
      if (check()) return resolve();
      const timer = setTimeout(() => reject(new Error(`gave up waiting for ${what}; log:\n${lines.slice(-20).join("\n")}`)), limitMs);
      waiters.push({
        check,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  return { logger, lines, until };
}
