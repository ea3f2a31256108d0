import { readFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { silentLogger, type Logger } from "../log/logger.js";
import { writeFileAtomic } from "./writeFileAtomic.js";
import { messageOf } from "../model/errors.js";

/** File name of the call counts, beside `summaries.jsonl` in the cache dir. */
export const CALL_COUNTS_FILE = "calls.json";

/** How long increments gather before they are written (one write per burst of calls). */
export const CALL_COUNTS_WRITE_DELAY_MS = 5_000;

const callCountsFileSchema = z.strictObject({
  version: z.literal(1),
  counts: z.record(z.string(), z.number().int().nonnegative()),
});

/** The call counts file of the cache file `cacheFile` (same folder). */
export function callCountsFileFor(cacheFile: string): string {
  return path.join(path.dirname(cacheFile), CALL_COUNTS_FILE);
}

/** Options of {@link CallCounts.open}. */
export interface CallCountsOptions {
  file: string;
  logger?: Logger;
  /** Delay between the first unsaved increment and the write (default {@link CALL_COUNTS_WRITE_DELAY_MS}). */
  writeDelayMs?: number;
}

/**
 * How often each tool was called, by `server:tool` (not by cache key: a tool whose schema changes
 * keeps its history), kept in `calls.json` beside the summary cache so `mode = "auto"` can list
 * the most used tools when not all fit. Written atomically (a reader sees the old or the new
 * file, never half of one) and debounced (one write per burst of calls). A missing file is an
 * empty count; an unreadable or invalid one is logged and replaced on the next write, because
 * counts only order tools and losing them loses nothing else.
 */
export class CallCounts {
  private readonly file: string;
  private readonly logger: Logger;
  private readonly writeDelayMs: number;
  private readonly counts: Map<string, number>;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private dirty = false;
  private closed = false;
  /** A read-only cache dir fails every write: said once, not per burst of calls. */
  private warned = false;

  private constructor(options: CallCountsOptions, counts: Map<string, number>) {
    this.file = options.file;
    this.logger = options.logger ?? silentLogger;
    this.writeDelayMs = options.writeDelayMs ?? CALL_COUNTS_WRITE_DELAY_MS;
    this.counts = counts;
  }

  /** Reads `file` (missing or invalid: starts empty, the latter with a warning). */
  static async open(options: CallCountsOptions): Promise<CallCounts> {
    return new CallCounts(options, await readCounts(options.file, options.logger ?? silentLogger));
  }

  /** Counts one call of `tool` of `server`; the file is written within the write delay. */
  increment(server: string, tool: string): void {
    if (this.closed) return;
    const key = callKey(server, tool);
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    this.dirty = true;
    if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, this.writeDelayMs);
      this.timer.unref();
    }
  }

  /** A copy of every count, by `server:tool`. */
  snapshot(): Map<string, number> {
    return new Map(this.counts);
  }

  /** Writes unsaved counts now (no-op when there are none). Never throws: a failed write is logged. */
  flush(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.dirty) return this.writing;
    this.dirty = false;
    const content = `${JSON.stringify({ version: 1, counts: Object.fromEntries([...this.counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) })}\n`;
    // Chained: two writes never race, and the last one holds the latest counts.
    this.writing = this.writing.then(() =>
      writeFileAtomic(this.file, content).catch((err: unknown) => {
        if (this.warned) return;
        this.warned = true;
        this.logger.warn("cannot write call counts; auto mode keeps them in memory", {
          file: this.file,
          error: messageOf(err),
        });
      }),
    );
    return this.writing;
  }

  /** Writes what is unsaved and stops counting. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }
}

/** `server:tool`, the key counts are kept under. */
export function callKey(server: string, tool: string): string {
  return `${server}:${tool}`;
}

async function readCounts(file: string, logger: Logger): Promise<Map<string, number>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
      logger.warn("cannot read call counts; starting from none", { file, error: (err as NodeJS.ErrnoException).code ?? String(err) });
    }
    return new Map();
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    logger.warn("call counts file is not JSON; starting from none", { file, error: messageOf(err) });
    return new Map();
  }
  const result = callCountsFileSchema.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0];
    logger.warn("call counts file is invalid; starting from none", {
      file,
      error: `${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`,
    });
    return new Map();
  }
  return new Map(Object.entries(result.data.counts));
}
