/**
 * A logger that keeps its lines for assertions, and waits on them: a condition over the lines is
 * checked again on every line logged.
 */
import { createLogger, type Logger, type SecretSet } from "../../src/log/logger.js";
import { Watch } from "./waitFor.js";

/** What {@link memoryLogger} returns. */
export interface MemoryLogger {
  logger: Logger;
  lines: string[];
  /** Resolves once `condition` over the lines holds (checked now and on every line logged). */
  until(condition: () => boolean, what: string, timeoutMs?: number): Promise<void>;
}

/** A {@link MemoryLogger} at debug level; `secrets` are redacted from its lines as the CLI's logger does. */
export function memoryLogger(options: { secrets?: SecretSet } = {}): MemoryLogger {
  const lines: string[] = [];
  const logged = new Watch();
  const sink = (line: string): void => {
    lines.push(line);
    logged.changed();
  };
  return {
    logger: createLogger({ level: "debug", sink, ...(options.secrets ? { secrets: options.secrets } : {}) }),
    lines,
    until: (condition, what, timeoutMs) =>
      logged.until(condition, { what, ...(timeoutMs !== undefined ? { timeoutMs } : {}), detail: () => `last lines:\n${lines.slice(-20).join("\n")}` }),
  };
}
