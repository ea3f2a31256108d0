import type { Readable } from "node:stream";
import type { Logger, SecretSet } from "../../log/logger.js";
import { forEachBoundedLine } from "../../util/boundedLines.js";

/** Kept stderr lines per server, for failure messages. */
const STDERR_TAIL_LINES = 20;

/**
 * Longest stderr line kept whole (8 KiB, newline excluded). stderr is a log, not a protocol: a
 * longer line is cut to its first 4 KiB and its size, never held whole.
 */
const MAX_STDERR_LINE_BYTES = 8 * 1024;

/** Options of a {@link StderrTail}. */
export interface StderrTailOptions {
  /** The server's logger: every line is logged at {@link level}. */
  logger: Logger;
  /** Values redacted from every line before it is kept or logged. */
  secrets: SecretSet;
  /** Level of the lines in the log. */
  level: "info" | "debug";
}

/**
 * The stderr of a server's processes: each line redacted, bounded, logged, and the last
 * {@link STDERR_TAIL_LINES} kept for the message of a failed start. Survives restarts; the
 * connection clears the kept lines at each attempt, the count of cut lines stays.
 */
export class StderrTail {
  private readonly logger: Logger;
  private readonly secrets: SecretSet;
  private readonly level: "info" | "debug";
  private readonly kept: string[] = [];
  /** Lines cut at {@link MAX_STDERR_LINE_BYTES} (the first cut is logged at warn). */
  private cut = 0;

  constructor(options: StderrTailOptions) {
    this.logger = options.logger;
    this.secrets = options.secrets;
    this.level = options.level;
  }

  /** Lines cut for going over {@link MAX_STDERR_LINE_BYTES} so far. */
  get linesCut(): number {
    return this.cut;
  }

  /** The kept lines, oldest first (a copy). */
  lines(): string[] {
    return [...this.kept];
  }

  /** Forgets the kept lines (a new attempt starts). */
  clear(): void {
    this.kept.length = 0;
  }

  /** Reads `stream` line by line until it ends. */
  follow(stream: Readable): void {
    // Bounded like stdout: a server writing hundreds of MB without a newline cost readline
    // one ever-growing string until V8 refused it, and that ended abridge (serve and daemon).
    forEachBoundedLine(stream, MAX_STDERR_LINE_BYTES, ({ text, cut }) => {
      let line = this.secrets.redact(text);
      if (cut === true) {
        this.cut += 1;
        line = `${line} ... [line cut: over ${MAX_STDERR_LINE_BYTES} bytes; the rest is skipped]`;
        if (this.cut === 1) {
          this.logger.warn("upstream stderr line over the limit: cut (later cuts are counted in status, not warned about)", {
            limitBytes: MAX_STDERR_LINE_BYTES,
          });
        }
      }
      this.kept.push(line);
      if (this.kept.length > STDERR_TAIL_LINES) this.kept.shift();
      this.logger[this.level]("upstream stderr", { line });
    });
  }
}
