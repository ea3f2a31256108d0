import { mkdir, open, stat } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { silentLogger } from "../log/logger.js";
import type { Logger } from "../log/logger.js";
import type { CacheEntry } from "./cacheEntry.js";
import { checkCacheEntry, parseCacheLine } from "./parseCacheLine.js";
import { MAX_LINE_BYTES, readLines } from "./readLines.js";
import { LOCAL_LEASE } from "./summaryStore.js";
import type { CacheEntryInput, ClaimResult, SummaryStore, SummaryStoreStats } from "./summaryStore.js";

export type { CacheEntryInput } from "./summaryStore.js";

/** Options of {@link JsonlStore.open}. */
export interface JsonlStoreOptions {
  /** Path of `summaries.jsonl`; see `resolveCacheFile`. */
  file: string;
  logger?: Logger;
  /** Serve what is in the file but refuse to append (e.g. `abridge render`). */
  readOnly?: boolean;
  signal?: AbortSignal;
}

/** Counters of a {@link JsonlStore}, for `abridge stats` and the daemon. */
export type JsonlStoreStats = SummaryStoreStats;

/** How many line numbers the once-per-load warning names. */
const REPORTED_LINE_NUMBERS = 5;

/** How often an append is written again to a file that replaced the one it went to. */
const REWRITE_ATTEMPTS = 5;

/** Errors after which the same append may work later (space freed, descriptors released). */
const RETRYABLE_IO = new Set(["ENOSPC", "EDQUOT", "EAGAIN", "EBUSY", "EMFILE", "ENFILE", "EINTR", "EIO"]);

function errnoCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** A missing file, or a path through a non-directory, means there is no cache yet. */
function isMissing(err: unknown): boolean {
  const code = errnoCode(err);
  return code === "ENOENT" || code === "ENOTDIR";
}

interface LoadReport {
  invalid: number;
  lineNumbers: number[];
}

/**
 * The summary cache: one JSON object per line in `summaries.jsonl`, last line for a key wins.
 *
 * Lookups are served from memory. Appends go to memory first and then to the file as exactly one
 * `write` on an `O_APPEND` descriptor, so several abridge processes can share one file without
 * interleaving or losing lines. A broken line never stops a load; it is skipped, counted and
 * reported once per load.
 */
export class JsonlStore implements SummaryStore {
  /** Path of the file this store reads and appends to. */
  readonly file: string;
  /** Claims are granted at once: processes sharing a file on one machine do not coordinate. */
  readonly leaseMs = 0;
  /** Whether {@link append} is refused. */
  readonly readOnly: boolean;
  private readonly logger: Logger;

  /**
   * Newest entry per key. A line read from the file is kept as its text until first asked for: it
   * was fully validated when read, and turned into an object on first access. Holding 100,000
   * parsed entries (objects, parameter maps and a dozen strings each) made the garbage collector
   * copy them between generations during the load, which took longer than parsing them; the text
   * of a line is a view on the chunk it was read in. A bridge asks for the few hundred tools it
   * serves, so almost all of that work would be for entries nobody reads.
   */
  private readonly byKey = new Map<string, CacheEntry | string>();
  /**
   * Entries by server, built on the first {@link forServer} call and kept up to date after that.
   * Not built during a load: a second map insert per line costs a fifth of the load time, and
   * only maintenance and status output ask by server.
   */
  private byServer: Map<string, Map<string, CacheEntry>> | undefined;

  /** Where the next read starts: just after the last newline read. */
  private offset = 0;
  private nextLineNumber = 1;
  /** Identity of the file read so far; a different inode means it was replaced (compacted). */
  private identity: { dev: number; ino: number } | undefined;
  /** An unterminated last fragment already counted, so that re-reading it does not count it twice. */
  private countedTail: { offset: number; valid: boolean } | undefined;

  private entriesRead = 0;
  private invalidLines = 0;
  private appendedCount = 0;
  private writeErrorCount = 0;

  private appendHandle: FileHandle | undefined;
  private appendIdentity: { dev: number; ino: number } | undefined;
  /**
   * Whether the next append must look for a torn last line first. Only after (re)opening the file
   * or a failed write: lines written by abridge always end in a newline, and checking before every
   * append would race with other processes' writes in progress and add needless blank lines.
   */
  private checkTail = true;
  /** Writes and reloads run one at a time, in call order, so the file order matches memory order. */
  private queue: Promise<void> = Promise.resolve();
  private closed = false;
  private closing: Promise<void> | undefined;

  private constructor(options: JsonlStoreOptions) {
    this.file = options.file;
    this.readOnly = options.readOnly ?? false;
    this.logger = (options.logger ?? silentLogger).child({ cache: options.file });
  }

  /**
   * Loads `options.file` into a new store. A missing file is an empty store (the directory is
   * created on the first append).
   *
   * @throws AbridgeError CACHE_IO when the file exists but cannot be read; CANCELLED on abort.
   */
  static async open(options: JsonlStoreOptions): Promise<JsonlStore> {
    const store = new JsonlStore(options);
    await store.ingest(options.signal);
    return store;
  }

  /** The file path. */
  get location(): string {
    return this.file;
  }

  /** Number of distinct keys served. */
  get size(): number {
    return this.byKey.size;
  }

  /** Always granted: the queue of this process runs one job per key already. */
  claim(): Promise<ClaimResult> {
    return Promise.resolve({ granted: true, lease: LOCAL_LEASE });
  }

  /** What memory holds: the file is read again by {@link reload}, not per claim. */
  latest(key: string): Promise<CacheEntry | undefined> {
    return Promise.resolve(this.get(key));
  }

  /** A file tells nobody about lines others append; {@link reload} reads them. */
  onRemoteEntry(): () => void {
    return () => undefined;
  }

  /** The newest entry for `key` (`server:tool:hash`), if any. */
  get(key: string): CacheEntry | undefined {
    const value = this.byKey.get(key);
    return typeof value === "string" ? this.materialize(key, value) : value;
  }

  /** Whether an entry exists for `key`. */
  has(key: string): boolean {
    return this.byKey.has(key);
  }

  /** Every live entry (the newest per key). */
  entries(): IterableIterator<CacheEntry> {
    return this.liveEntries();
  }

  /** Live entries of one server, any tool and hash (old hashes included until compaction). */
  forServer(server: string): CacheEntry[] {
    const entries = this.serverIndex().get(server);
    return entries === undefined ? [] : [...entries.values()];
  }

  /** Names of the servers that have at least one entry. */
  servers(): string[] {
    return [...this.serverIndex().keys()];
  }

  /** Counters for status output. */
  stats(): JsonlStoreStats {
    return {
      entries: this.entriesRead,
      liveKeys: this.byKey.size,
      invalidLines: this.invalidLines,
      appended: this.appendedCount,
      writeErrors: this.writeErrorCount,
    };
  }

  /**
   * Validates `entry`, serves it from memory at once, then appends it to the file as one line.
   * When the write fails the entry stays served from memory for the life of this store.
   *
   * @throws AbridgeError INPUT_INVALID for an entry that fails the schema or is too large;
   *   CACHE_IO when the store is closed or read-only, or the write fails; CANCELLED on abort
   *   before anything was changed.
   */
  async append(entry: CacheEntryInput, options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.closed) throw new AbridgeError(ErrorCode.CACHE_IO, `cache ${this.file} is closed`);
    if (this.readOnly) throw new AbridgeError(ErrorCode.CACHE_IO, `cache ${this.file} was opened read-only`);
    const checked = checkCacheEntry(entry);
    if (!checked.ok) {
      throw new AbridgeError(ErrorCode.INPUT_INVALID, `cache entry rejected: ${checked.reason}`);
    }
    const line = `${JSON.stringify(checked.entry)}\n`;
    const lineBytes = Buffer.byteLength(line);
    if (lineBytes > MAX_LINE_BYTES) {
      // A line the reader would skip must not be written: it would be lost on the next load.
      throw new AbridgeError(
        ErrorCode.INPUT_INVALID,
        `cache entry ${checked.entry.key} is ${lineBytes} bytes, over the ${MAX_LINE_BYTES}-byte line limit`,
      );
    }
    throwIfAborted(options.signal, "append");
    this.set(checked.entry);
    return this.enqueue(() => this.writeLine(line, checked.entry.key));
  }

  /**
   * Reads lines appended since the last load (by this or another process). When the file was
   * replaced (compacted or cleared by another process) or truncated, it is read again from the start
   * and memory is rebuilt from it (entries whose append had failed are then gone from memory too:
   * the file is the truth).
   *
   * @throws AbridgeError CACHE_IO when the file cannot be read; CANCELLED on abort.
   */
  reload(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.closed) return Promise.reject(new AbridgeError(ErrorCode.CACHE_IO, `cache ${this.file} is closed`));
    return this.enqueue(() => this.ingest(options.signal));
  }

  /** Waits for pending appends and releases the file. Idempotent: later calls get the same promise. */
  close(): Promise<void> {
    this.closed = true;
    this.closing ??= (async () => {
      await this.queue;
      const handle = this.appendHandle;
      this.appendHandle = undefined;
      if (handle !== undefined) await handle.close().catch(() => undefined);
    })();
    return this.closing;
  }

  private enqueue(op: () => Promise<void>): Promise<void> {
    const run = this.queue.then(op);
    this.queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private set(entry: CacheEntry): void {
    this.byKey.set(entry.key, entry);
    if (this.byServer !== undefined) addToIndex(this.byServer, entry);
  }

  /**
   * Serves a line read from the file if it is a valid entry, kept as text for {@link materialize}
   * (the parsed object is dropped while it is still young, which costs the collector nothing). The
   * by-server view, once built, holds objects, so it gets the parsed one.
   */
  private applyLine(text: string): boolean {
    const parsed = parseCacheLine(text);
    if (!parsed.ok) return false;
    if (this.byServer === undefined) this.byKey.set(parsed.entry.key, text);
    else this.set(parsed.entry);
    return true;
  }

  /** Parses a line kept by {@link applyLine} again and keeps the object for later lookups. */
  private materialize(key: string, text: string): CacheEntry | undefined {
    const parsed = parseCacheLine(text);
    if (!parsed.ok || parsed.entry.key !== key) {
      // Unreachable: the same text passed the same check when it was read.
      this.logger.error("a validated cache line no longer parses; dropping it", { key });
      this.byKey.delete(key);
      return undefined;
    }
    this.byKey.set(key, parsed.entry);
    return parsed.entry;
  }

  private *liveEntries(): IterableIterator<CacheEntry> {
    // Replacing the value of an existing key does not disturb a Map iteration.
    for (const [key, value] of this.byKey) {
      const entry = typeof value === "string" ? this.materialize(key, value) : value;
      if (entry !== undefined) yield entry;
    }
  }

  private serverIndex(): Map<string, Map<string, CacheEntry>> {
    if (this.byServer === undefined) {
      const index = new Map<string, Map<string, CacheEntry>>();
      for (const entry of this.liveEntries()) addToIndex(index, entry);
      this.byServer = index;
    }
    return this.byServer;
  }

  private resetView(): void {
    this.byKey.clear();
    this.byServer = undefined;
    this.offset = 0;
    this.nextLineNumber = 1;
    this.countedTail = undefined;
    this.entriesRead = 0;
    this.invalidLines = 0;
  }

  /** Reads from {@link offset} to the end of the file into memory. */
  private async ingest(signal: AbortSignal | undefined): Promise<void> {
    throwIfAborted(signal, "load");
    let handle: FileHandle;
    try {
      handle = await open(this.file, "r");
    } catch (err) {
      if (isMissing(err)) {
        if (this.identity !== undefined) {
          // The file was deleted (e.g. `rm`): the file is the truth, so forget what it held.
          this.logger.info("cache file disappeared; starting empty");
          this.resetView();
          this.identity = undefined;
        }
        return;
      }
      throw new AbridgeError(ErrorCode.CACHE_IO, `cannot read cache ${this.file}: ${errorMessage(err)}`, {
        cause: err,
        retryable: RETRYABLE_IO.has(errnoCode(err) ?? ""),
      });
    }
    try {
      const info = await handle.stat();
      if (
        this.identity !== undefined &&
        (info.ino !== this.identity.ino || info.dev !== this.identity.dev || info.size < this.offset)
      ) {
        this.logger.debug("cache file was replaced or truncated; reading it again");
        this.resetView();
      }
      this.identity = { dev: info.dev, ino: info.ino };
      const report: LoadReport = { invalid: 0, lineNumbers: [] };
      const result = await readLines(handle, {
        start: this.offset,
        end: info.size,
        firstLineNumber: this.nextLineNumber,
        signal,
        onLine: (line) => this.ingestLine(line.text, line.lineNumber, line.offset, report, false),
        onOversized: (lineNumber, offset) => this.ingestLine(undefined, lineNumber, offset, report, false),
      });
      this.offset = result.nextOffset;
      this.nextLineNumber = result.nextLineNumber;
      if (result.tail !== undefined) {
        const { text, lineNumber, offset } = result.tail;
        this.ingestLine(text, lineNumber, offset, report, true);
      }
      if (report.invalid > 0) {
        this.logger.warn("skipped invalid lines in the summary cache", {
          count: report.invalid,
          lines: report.lineNumbers,
        });
      }
    } catch (err) {
      if (err instanceof AbridgeError) throw err;
      throw new AbridgeError(ErrorCode.CACHE_IO, `cannot read cache ${this.file}: ${errorMessage(err)}`, {
        cause: err,
        retryable: RETRYABLE_IO.has(errnoCode(err) ?? ""),
      });
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /**
   * Applies one line; `text` undefined means oversized. An unterminated tail is applied too (a
   * complete entry without its newline is still an entry) but remembered, because the next read
   * starts at it again once it is terminated.
   */
  private ingestLine(text: string | undefined, lineNumber: number, offset: number, report: LoadReport, isTail: boolean): void {
    let wasInvalid = false;
    if (this.countedTail !== undefined && this.countedTail.offset === offset) {
      // Undo the earlier count of this fragment; it is counted again below as what it is now.
      if (this.countedTail.valid) this.entriesRead -= 1;
      else {
        this.invalidLines -= 1;
        wasInvalid = true;
      }
      this.countedTail = undefined;
    }
    const valid = text !== undefined && this.applyLine(text);
    if (valid) {
      this.entriesRead += 1;
    } else {
      this.invalidLines += 1;
      // A fragment already reported by an earlier load is not reported again.
      if (!wasInvalid) {
        report.invalid += 1;
        if (report.lineNumbers.length < REPORTED_LINE_NUMBERS) report.lineNumbers.push(lineNumber);
      }
    }
    if (isTail) this.countedTail = { offset, valid };
  }

  /** Whether the path still names the file the append descriptor writes to. */
  private async pathStillOpen(): Promise<boolean> {
    const known = this.appendIdentity;
    const current = await stat(this.file).catch(() => undefined);
    return current !== undefined && known !== undefined && current.ino === known.ino && current.dev === known.dev;
  }

  /** Opens (or re-opens, when the path now names another file) the append descriptor. */
  private async handleForAppend(): Promise<FileHandle> {
    if (this.appendHandle !== undefined) {
      let current: { dev: number; ino: number } | undefined;
      try {
        current = await stat(this.file);
      } catch (err) {
        if (!isMissing(err)) throw err;
      }
      const known = this.appendIdentity;
      if (current !== undefined && known !== undefined && current.ino === known.ino && current.dev === known.dev) {
        return this.appendHandle;
      }
      // Replaced by a compaction or deleted: appending to the old inode would lose the line.
      const stale = this.appendHandle;
      this.appendHandle = undefined;
      await stale.close().catch(() => undefined);
    }
    await mkdir(dirname(this.file), { recursive: true });
    // "a+" is O_RDWR | O_APPEND | O_CREAT: every write lands at the end whatever other processes
    // wrote, and the descriptor can also read the last byte to detect a torn line.
    const handle = await open(this.file, "a+");
    try {
      const info = await handle.stat();
      this.appendIdentity = { dev: info.dev, ino: info.ino };
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
    this.appendHandle = handle;
    this.checkTail = true;
    return handle;
  }

  private async writeLine(line: string, key: string): Promise<void> {
    try {
      const handle = await this.handleForAppend();
      let prefix = "";
      if (this.checkTail) {
        // A torn last line (crash, full disk) must not swallow this one: start a fresh line.
        if (await endsTorn(handle)) prefix = "\n";
        this.checkTail = false;
      }
      const bytes = Buffer.from(prefix + line);
      // Exactly one write call: O_APPEND makes it atomic with respect to the end-of-file offset, so
      // lines from several processes never interleave. Retrying the rest of a short write would be a
      // second call that another process could interleave with, so a short write is an error.
      const { bytesWritten } = await handle.write(bytes, 0, bytes.length, null);
      if (bytesWritten !== bytes.length) {
        throw Object.assign(new Error(`short write: ${bytesWritten} of ${bytes.length} bytes`), { code: "EIO" });
      }
      // A compaction may have renamed a new file over the path just before this write landed in
      // the old one, after its copy of what arrived late: the line would be lost with the old file.
      // Still the same file after the write means the rename comes later and the copy takes it.
      for (let again = 0; again < REWRITE_ATTEMPTS && !(await this.pathStillOpen()); again++) {
        const fresh = await this.handleForAppend();
        const { bytesWritten: rewritten } = await fresh.write(Buffer.from(line), 0, Buffer.byteLength(line), null);
        if (rewritten !== Buffer.byteLength(line)) {
          throw Object.assign(new Error(`short write: ${rewritten} of ${Buffer.byteLength(line)} bytes`), { code: "EIO" });
        }
      }
      this.appendedCount += 1;
    } catch (err) {
      this.writeErrorCount += 1;
      // A failed or short write may have left a partial line behind.
      this.checkTail = true;
      const handle = this.appendHandle;
      this.appendHandle = undefined;
      if (handle !== undefined) await handle.close().catch(() => undefined);
      const code = errnoCode(err);
      this.logger.warn("could not append to the summary cache; the entry is served from memory only", {
        key,
        code,
        error: errorMessage(err),
      });
      throw new AbridgeError(ErrorCode.CACHE_IO, `cannot append to cache ${this.file}: ${errorMessage(err)}`, {
        cause: err,
        retryable: RETRYABLE_IO.has(code ?? ""),
        details: { key, ...(code === undefined ? {} : { errno: code }) },
      });
    }
  }
}

function addToIndex(index: Map<string, Map<string, CacheEntry>>, entry: CacheEntry): void {
  let server = index.get(entry.server);
  if (server === undefined) {
    server = new Map();
    index.set(entry.server, server);
  }
  server.set(entry.key, entry);
}

/**
 * Whether the file's last byte is not a newline. A different process's write can be caught half
 * done (a write spanning pages grows the size page by page), so a missing newline only counts when
 * a second look sees the same size: a torn line stays, a write in progress moves on.
 */
async function endsTorn(handle: FileHandle): Promise<boolean> {
  const last = Buffer.alloc(1);
  let previousSize = -1;
  for (let look = 0; look < 3; look++) {
    const { size } = await handle.stat();
    if (size === 0) return false;
    const { bytesRead } = await handle.read(last, 0, 1, size - 1);
    if (bytesRead === 1 && last[0] === 0x0a) return false;
    if (size === previousSize) return true;
    previousSize = size;
  }
  return true;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) {
    throw new AbridgeError(ErrorCode.CANCELLED, `cache ${what} was cancelled`, { cause: signal.reason });
  }
}
