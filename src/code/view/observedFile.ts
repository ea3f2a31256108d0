/**
 * The result shapes programs have seen, kept in `shapes.json` beside the summary cache so that a
 * restarted bridge still declares what it learnt. Keyed by `server:tool:hash` like the summaries:
 * a tool whose schema changes starts afresh. Written atomically and at most once per burst of
 * calls; a missing file is an empty store, an unreadable one is logged and replaced on the next
 * write (shapes only make declarations more precise; losing them loses nothing else).
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { writeFileAtomic } from "../../cache/writeFileAtomic.js";
import { ObservedShapes } from "../declarations/observedShapes.js";
import { silentLogger, type Logger } from "../../log/logger.js";
import { isAbridgeError, messageOf } from "../../model/errors.js";

/** File name of the observed shapes, beside `summaries.jsonl`. */
export const OBSERVED_SHAPES_FILE = "shapes.json";

/** How long new shapes gather before they are written. */
const WRITE_DELAY_MS = 2_000;

/** The observed-shapes file of the cache file `cacheFile` (same folder). */
export function observedFileFor(cacheFile: string): string {
  return path.join(path.dirname(cacheFile), OBSERVED_SHAPES_FILE);
}

/** {@link ObservedShapes} with its file: loaded once, written after changes. */
export class ObservedFile {
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    readonly shapes: ObservedShapes,
    private readonly file: string,
    private readonly logger: Logger,
  ) {}

  static async open(file: string, logger: Logger = silentLogger): Promise<ObservedFile> {
    let shapes = new ObservedShapes();
    try {
      shapes = ObservedShapes.deserialize(await readFile(file, "utf8"));
    } catch (err) {
      const missing = (err as NodeJS.ErrnoException).code === "ENOENT";
      if (!missing) logger.warn("observed result shapes unreadable; starting afresh", { file, error: isAbridgeError(err) ? err.message : messageOf(err) });
    }
    return new ObservedFile(shapes, file, logger);
  }

  /** Records a program's value of the tool `key`; schedules a write when the shape changed. */
  observe(key: string, value: unknown): void {
    if (!this.shapes.observe(key, value) || this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.writing = this.write();
    }, WRITE_DELAY_MS);
    this.timer.unref();
  }

  private async write(): Promise<void> {
    try {
      await writeFileAtomic(this.file, this.shapes.serialize());
    } catch (err) {
      this.logger.warn("could not write observed result shapes", { file: this.file, error: messageOf(err) });
    }
  }

  /** Writes what is pending now. */
  async close(): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.writing = this.write();
    }
    await this.writing;
  }
}
