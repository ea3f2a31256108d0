import { open, rm, stat } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import { delay } from "../model/timers.js";
import type { CacheEntry } from "./cacheEntry.js";
import { parseStoredLine } from "./entryLimits.js";
import { MAX_LINE_BYTES, readLines } from "./readLines.js";
import { writeFileAtomic } from "./writeFileAtomic.js";

/** One problem line found by {@link verifyCache}. */
export interface InvalidLine {
  /** 1-based physical line number (in a Redis cache: the field's place in the scan). */
  line: number;
  /** The hash field (`server:tool:hash`) of an invalid entry in a Redis cache. */
  field?: string;
  reason: string;
}

/** Report of {@link verifyCache}. */
export interface VerifyReport {
  /** Whether the file exists (a missing cache is an empty, valid one). */
  exists: boolean;
  /** Non-blank lines, valid or not. */
  lines: number;
  /** Lines that parse and match the schema. */
  valid: number;
  invalid: InvalidLine[];
  /** Distinct keys: what a store would serve. */
  liveKeys: number;
  /** Valid lines overridden by a later line with the same key (what `compact` removes). */
  superseded: number;
}

/** Report of {@link compactCache}. */
export interface CompactReport {
  /** Non-blank lines before, invalid ones included. */
  before: number;
  /** Lines written: one per kept live key. */
  after: number;
}

/** Report of {@link clearCache}. */
export interface ClearReport {
  /** Lines removed. */
  removed: number;
}

/** Options shared by the maintenance functions. */
export interface MaintenanceOptions {
  signal?: AbortSignal;
}

/** Options of {@link verifyCache}. */
export interface VerifyOptions extends MaintenanceOptions {
  /**
   * Further checks of a valid entry (the summary guard's): reasons it must not be served, or an
   * empty list. A line with reasons counts as invalid.
   */
  check?: (entry: CacheEntry) => readonly string[];
}

/** Options of {@link compactCache}. */
export interface CompactOptions extends MaintenanceOptions {
  /** Return false to drop a live entry (e.g. a tool no server lists any more). */
  keep?: (entry: CacheEntry) => boolean;
}

/** Options of {@link clearCache}. */
export interface ClearOptions extends MaintenanceOptions {
  /** Remove only this server's entries; all lines when absent. */
  server?: string;
}

interface ScannedLine {
  lineNumber: number;
  /** Raw text; undefined for a line over the size limit. */
  text: string | undefined;
  /** Whether the line had no terminating newline (last bytes of the file). */
  torn: boolean;
  entry: CacheEntry | undefined;
  reason: string | undefined;
}

interface ScannedFile {
  size: number;
  /** Where the scan's complete lines end: the start of an unterminated last line, else `size`. */
  complete: number;
  dev: number;
  ino: number;
  lines: ScannedLine[];
}

/** How often a rewrite re-reads a file that grew while it was being read. */
const REWRITE_ATTEMPTS = 5;

function ioError(action: string, file: string, err: unknown): AbridgeError {
  if (err instanceof AbridgeError) return err;
  const message = messageOf(err);
  return new AbridgeError(ErrorCode.CACHE_IO, `cannot ${action} cache ${file}: ${message}`, { cause: err });
}

async function openIfExists(file: string): Promise<FileHandle | undefined> {
  try {
    return await open(file, "r");
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw err;
  }
}

/** Reads and classifies every line of `file`; undefined when the file does not exist. */
async function scanFile(file: string, signal: AbortSignal | undefined): Promise<ScannedFile | undefined> {
  const handle = await openIfExists(file);
  if (handle === undefined) return undefined;
  try {
    return await scanHandle(handle, signal);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * Reads and classifies every line of an open cache file, up to its size now. A line is an entry
 * when a store would serve it ({@link parseStoredLine}): within the size bound, valid, and dated no
 * later than the clock-skew allowance past now.
 */
async function scanHandle(handle: FileHandle, signal: AbortSignal | undefined): Promise<ScannedFile> {
  const info = await handle.stat();
  const now = Date.now();
  const lines: ScannedLine[] = [];
  const classify = (text: string | undefined, lineNumber: number, torn: boolean): void => {
    if (text === undefined) {
      lines.push({ lineNumber, text, torn, entry: undefined, reason: `line longer than ${MAX_LINE_BYTES} bytes` });
      return;
    }
    const parsed = parseStoredLine(text, now);
    if (parsed.ok) lines.push({ lineNumber, text: text.trim(), torn, entry: parsed.entry, reason: undefined });
    else lines.push({ lineNumber, text, torn, entry: undefined, reason: torn ? `torn last line (${parsed.reason})` : parsed.reason });
  };
  const result = await readLines(handle, {
    start: 0,
    end: info.size,
    firstLineNumber: 1,
    signal,
    onLine: (line) => classify(line.text, line.lineNumber, false),
    onOversized: (lineNumber) => classify(undefined, lineNumber, false),
  });
  if (result.tail !== undefined) classify(result.tail.text, result.tail.lineNumber, true);
  return { size: info.size, complete: result.tail?.offset ?? info.size, dev: info.dev, ino: info.ino, lines };
}

/** Newest line per key, in file order of those newest lines. */
function newestPerKey(lines: ScannedLine[]): ScannedLine[] {
  const newest = new Map<string, ScannedLine>();
  for (const line of lines) {
    if (line.entry !== undefined) newest.set(line.entry.key, line);
  }
  return [...newest.values()].sort((a, b) => a.lineNumber - b.lineNumber);
}

/**
 * Rewrites `file` atomically with what `build` makes of its current lines, safe while other
 * processes append. The old file stays open across the rename; whatever was appended to it after
 * it was read (complete lines, byte for byte) is then copied onto the new file. A writer that
 * appended to the old file after that copy finds the path replaced when it checks after its write
 * ({@link JsonlStore}) and writes its line again, so no line is lost whichever comes first; at
 * worst a line is there twice, and the newest per key wins anyway. Two maintenance runs take turns
 * through a lock file, since one would replace the file the other is copying into.
 */
async function rewrite<T>(
  file: string,
  signal: AbortSignal | undefined,
  build: (scanned: ScannedFile) => { content: string | undefined; report: T },
  emptyReport: T,
): Promise<T> {
  return withMaintenanceLock(file, signal, async () => {
    const old = await openIfExists(file);
    if (old === undefined) return emptyReport;
    try {
      const scanned = await scanHandle(old, signal);
      const { content, report } = build(scanned);
      if (content === undefined) return report; // Nothing to change.
      await writeFileAtomic(file, content, signal);
      // From the start of a last line the scan saw unfinished: it may have been a write landing.
      const arrived = await completeLinesAfter(old, scanned.complete);
      if (arrived.length > 0) await appendToPath(file, arrived);
      return report;
    } finally {
      await old.close().catch(() => undefined);
    }
  });
}

/**
 * The complete lines of `handle` from `offset` to its end. A last line without its newline may be
 * a write still landing (a write spanning pages grows the file page by page): it is looked at again
 * until it ends, and dropped as torn when it stops growing without ending.
 */
async function completeLinesAfter(handle: FileHandle, offset: number): Promise<Buffer> {
  let previousSize = -1;
  for (;;) {
    const { size } = await handle.stat();
    if (size <= offset) return Buffer.alloc(0);
    const bytes = Buffer.alloc(size - offset);
    const { bytesRead } = await handle.read(bytes, 0, bytes.length, offset);
    const read = bytes.subarray(0, bytesRead);
    const lastNewline = read.lastIndexOf(0x0a);
    if (lastNewline === read.length - 1 || size === previousSize) return read.subarray(0, lastNewline + 1);
    previousSize = size;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Appends `bytes` to whatever file `file` names now, again if it was replaced meanwhile. */
async function appendToPath(file: string, bytes: Buffer): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const handle = await open(file, "a");
    let written: { ino: number; dev: number };
    try {
      written = await handle.stat();
      const { bytesWritten } = await handle.write(bytes, 0, bytes.length, null);
      if (bytesWritten !== bytes.length) throw Object.assign(new Error(`short write: ${bytesWritten} of ${bytes.length} bytes`), { code: "EIO" });
    } finally {
      await handle.close().catch(() => undefined);
    }
    const now = await stat(file).catch(() => undefined);
    if ((now !== undefined && now.ino === written.ino && now.dev === written.dev) || attempt >= REWRITE_ATTEMPTS) return;
  }
}

/** A maintenance lock older than this was left by a run that died. */
const MAINTENANCE_LOCK_STALE_MS = 60_000;
/** How long a maintenance run waits for another to finish. */
const MAINTENANCE_LOCK_WAIT_MS = 30_000;

/** Runs `action` holding `<file>.maintenance.lock` (O_EXCL), waiting for another holder to finish. */
async function withMaintenanceLock<T>(file: string, signal: AbortSignal | undefined, action: () => Promise<T>): Promise<T> {
  const lock = `${file}.maintenance.lock`;
  const deadline = Date.now() + MAINTENANCE_LOCK_WAIT_MS;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const handle = await open(lock, "wx", 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      break;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      // No folder, so no cache file: nothing to maintain, nothing to lock.
      if (code === "ENOENT" || code === "ENOTDIR") return action();
      if (code !== "EEXIST") throw err;
    }
    const info = await stat(lock).catch(() => undefined);
    if (info !== undefined && Date.now() - info.mtimeMs > MAINTENANCE_LOCK_STALE_MS) {
      await rm(lock, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new AbridgeError(ErrorCode.CACHE_IO, `cache ${file} is being maintained by another process (${lock}); try again later`, { retryable: true });
    }
    await delay(20);
  }
  try {
    return await action();
  } finally {
    await rm(lock, { force: true }).catch(() => undefined);
  }
}

function joinLines(texts: string[]): string {
  return texts.length === 0 ? "" : `${texts.join("\n")}\n`;
}

/**
 * Checks every line of a cache file without changing it.
 *
 * @throws AbridgeError CACHE_IO when the file exists but cannot be read.
 */
export async function verifyCache(file: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  let scanned: ScannedFile | undefined;
  try {
    scanned = await scanFile(file, options.signal);
  } catch (err) {
    throw ioError("verify", file, err);
  }
  if (scanned === undefined) return { exists: false, lines: 0, valid: 0, invalid: [], liveKeys: 0, superseded: 0 };
  const invalid: InvalidLine[] = [];
  const keys = new Set<string>();
  let valid = 0;
  for (const line of scanned.lines) {
    const rejected = line.entry === undefined ? undefined : options.check?.(line.entry);
    if (line.entry === undefined) {
      invalid.push({ line: line.lineNumber, reason: line.reason ?? "invalid" });
    } else if (rejected !== undefined && rejected.length > 0) {
      invalid.push({ line: line.lineNumber, reason: `${line.entry.key}: ${rejected.join("; ")}` });
    } else {
      valid += 1;
      keys.add(line.entry.key);
    }
  }
  return { exists: true, lines: scanned.lines.length, valid, invalid, liveKeys: keys.size, superseded: valid - keys.size };
}

/**
 * Rewrites a cache file with one line per live key (the newest), dropping superseded and invalid
 * lines and entries `keep` rejects. Lines are kept byte for byte (minus surrounding blanks), so
 * fields a newer abridge added survive an older one's compaction. A missing file stays missing.
 *
 * @throws AbridgeError CACHE_IO when the file cannot be read or replaced.
 */
export async function compactCache(file: string, options: CompactOptions = {}): Promise<CompactReport> {
  const keep = options.keep;
  try {
    return await rewrite(
      file,
      options.signal,
      (scanned) => {
        // An unterminated last line is left to the copy of what arrived (see rewrite).
        const kept = newestPerKey(scanned.lines.filter((line) => !line.torn)).filter(
          (line) => line.entry !== undefined && (keep === undefined || keep(line.entry)),
        );
        const texts = kept.map((line) => line.text ?? "");
        return { content: joinLines(texts), report: { before: scanned.lines.length, after: kept.length } };
      },
      { before: 0, after: 0 },
    );
  } catch (err) {
    throw ioError("compact", file, err);
  }
}

/**
 * Removes all lines of a cache file, or only the valid lines of one server (every other line is
 * kept as it is, superseded and unparsable ones included). The file is replaced atomically and not
 * created when missing.
 *
 * @throws AbridgeError CACHE_IO when the file cannot be read or replaced.
 */
export async function clearCache(file: string, options: ClearOptions = {}): Promise<ClearReport> {
  const server = options.server;
  try {
    return await rewrite(
      file,
      options.signal,
      (scanned) => {
        if (server === undefined) {
          if (scanned.size === 0) return { content: undefined, report: { removed: 0 } };
          return { content: "", report: { removed: scanned.lines.length } };
        }
        const others = scanned.lines.filter((line) => line.entry?.server !== server && !line.torn);
        if (others.length === scanned.lines.length) return { content: undefined, report: { removed: 0 } };
        // An oversized line cannot be kept verbatim without holding it in memory; it goes too.
        const texts = others.flatMap((line) => (line.text === undefined ? [] : [line.text]));
        return { content: joinLines(texts), report: { removed: scanned.lines.length - texts.length } };
      },
      { removed: 0 },
    );
  } catch (err) {
    throw ioError("clear", file, err);
  }
}

/** What {@link readCacheEntries} found in a cache file. */
export interface CacheFileEntries {
  /** Whether the file exists. */
  exists: boolean;
  /** The newest valid entry per key, in file order of those lines. */
  entries: CacheEntry[];
  /** Lines that are not valid entries (torn, unparsable, oversized, not matching the schema). */
  invalid: InvalidLine[];
}

/**
 * Reads every valid entry of a cache file (newest per key) and lists the lines that are not, for
 * `abridge cache import` and `export`.
 *
 * @throws AbridgeError CACHE_IO when the file exists but cannot be read.
 */
export async function readCacheEntries(file: string, options: MaintenanceOptions = {}): Promise<CacheFileEntries> {
  let scanned: ScannedFile | undefined;
  try {
    scanned = await scanFile(file, options.signal);
  } catch (err) {
    throw ioError("read", file, err);
  }
  if (scanned === undefined) return { exists: false, entries: [], invalid: [] };
  const invalid = scanned.lines.flatMap((line) => (line.entry === undefined ? [{ line: line.lineNumber, reason: line.reason ?? "invalid" }] : []));
  return { exists: true, entries: newestPerKey(scanned.lines).flatMap((line) => (line.entry === undefined ? [] : [line.entry])), invalid };
}
