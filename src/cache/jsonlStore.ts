import { readSync } from "node:fs";
import { open } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import { silentLogger } from "../log/logger.js";
import type { Logger } from "../log/logger.js";
import type { CacheEntry } from "./cacheEntry.js";
import { CacheAppender } from "./cacheAppender.js";
import { isMissing, readError, throwIfAborted } from "./cacheIo.js";
import { formatCacheLine, KEY_OFFSET, quickKeyEnd } from "./cacheLineKey.js";
import { LineIndex } from "./lineIndex.js";
import { clampCreatedAt, MAX_ENTRY_BYTES, oversizedReason, parseStoredLine } from "./entryLimits.js";
import { checkCacheEntry } from "./parseCacheLine.js";
import { scanLineBytes } from "./scanLineBytes.js";
import { LOCAL_LEASE } from "./summaryStore.js";
import type { AppendOptions, CacheEntryInput, ClaimResult, SummaryStore, SummaryStoreStats } from "./summaryStore.js";

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

interface LoadReport {
  invalid: number;
  lineNumbers: number[];
}

/**
 * The summary cache: one JSON object per line in `summaries.jsonl`, last line for a key wins.
 *
 * A load indexes the file instead of parsing it: per line it reads the key from the line's first
 * bytes (lines are written key first) and keeps where the line is ({@link LineIndex}). An entry is
 * read (one positioned read on the descriptor the index was built from), parsed and validated the
 * first time it is asked for, and kept. Parsing and validating every line was nine tenths of a
 * load, and a bridge asks for the few hundred tools it serves out of however many the file holds.
 *
 * What "valid" means therefore comes in two steps:
 * - at load, a line is invalid when it is over {@link MAX_ENTRY_BYTES}, or not a JSON object line
 *   whose key can be read: its key cannot be extracted from the key-first layout and a full parse
 *   (the path for lines of any other layout, which are validated completely right there) fails.
 *   Such lines are skipped, counted and reported once per load with their line numbers, and do
 *   not hide an earlier line of the same key;
 * - a line that passed the quick check but fails full validation (the schema, its key, a
 *   `createdAt` beyond the clock-skew allowance: `parseStoredLine`) when first asked for is reported
 *   then (once, with its line number), counted as invalid instead of read, and its key is a miss
 *   from then on: it was the newest line for that key, so an earlier line is not served instead.
 * `abridge cache verify` validates every line fully, as before.
 *
 * Appends go to memory first and then to the file as exactly one `write` on an `O_APPEND`
 * descriptor ({@link CacheAppender}), so several abridge processes can share one file.
 */
export class JsonlStore implements SummaryStore {
  /** Path of the file this store reads and appends to. */
  readonly file: string;
  /** Claims are granted at once: processes sharing a file on one machine do not coordinate. */
  readonly leaseMs = 0;
  /** Whether {@link append} is refused. */
  readonly readOnly: boolean;
  private readonly logger: Logger;

  /** Every live key and where its newest line is (offset -1: appended, in {@link parsed} only). */
  private readonly index = new LineIndex();
  /** Entries asked for (parsed and validated), and entries appended by this store. */
  private readonly parsed = new Map<string, CacheEntry>();
  /**
   * Entries by server, built on the first {@link forServer} call and kept up to date after that.
   * Not built during a load: only maintenance and status output ask by server.
   */
  private byServer: Map<string, Map<string, CacheEntry>> | undefined;

  /**
   * The file the index was built from, kept open for positioned reads: after a compaction renamed
   * a new file over the path, the offsets still point into this one until a reload re-indexes.
   */
  private reader: FileHandle | undefined;
  /** Where the next read starts: just after the last newline read. */
  private offset = 0;
  private nextLineNumber = 1;
  /** Identity of the file read so far; a different inode means it was replaced (compacted). */
  private identity: { dev: number; ino: number } | undefined;
  /** An unterminated last fragment already counted, so that re-reading it does not count it twice. */
  private countedTail: { offset: number; valid: boolean } | undefined;

  private entriesRead = 0;
  private invalidLines = 0;

  private readonly appender: CacheAppender;
  /** Writes and reloads run one at a time, in call order, so the file order matches memory order. */
  private queue: Promise<void> = Promise.resolve();
  private closed = false;
  private closing: Promise<void> | undefined;

  private constructor(options: JsonlStoreOptions) {
    this.file = options.file;
    this.readOnly = options.readOnly ?? false;
    this.logger = (options.logger ?? silentLogger).child({ cache: options.file });
    this.appender = new CacheAppender(this.file, this.logger);
  }

  /**
   * Loads `options.file` into a new store. A missing file is an empty store (the directory is
   * created on the first append).
   *
   * @throws AbridgeError CACHE_IO when the file exists but cannot be read; CANCELLED on abort.
   */
  static async open(options: JsonlStoreOptions): Promise<JsonlStore> {
    const store = new JsonlStore(options);
    try {
      await store.ingest(options.signal);
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  /** The file path. */
  get location(): string {
    return this.file;
  }

  /** Number of distinct keys indexed (a key whose line turns out invalid when read leaves). */
  get size(): number {
    return this.index.size;
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

  /** The newest entry for `key` (`server:tool:hash`), if any; read and validated on first use. */
  get(key: string): CacheEntry | undefined {
    const known = this.parsed.get(key);
    if (known !== undefined) return known;
    const entry = this.readIndexed(key);
    if (entry !== undefined) this.parsed.set(key, entry);
    return entry;
  }

  /** Whether a valid entry exists for `key` (validates it, as {@link get} does). */
  has(key: string): boolean {
    return this.get(key) !== undefined;
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
      liveKeys: this.index.size,
      invalidLines: this.invalidLines,
      appended: this.appender.appended,
      writeErrors: this.appender.writeErrors,
    };
  }

  /**
   * Validates `entry`, dates it no later than this host's clock, serves it from memory at once,
   * then appends it to the file as one line. The last line of a key wins, so every append
   * replaces what the file held, forced (`options.force`) or not. When the write fails the entry
   * stays served from memory for the life of this store.
   *
   * @throws AbridgeError INPUT_INVALID for an entry that fails the schema or is over
   *   {@link MAX_ENTRY_BYTES}; CACHE_IO when the store is closed or read-only, or the write fails;
   *   CANCELLED on abort before anything was changed.
   */
  async append(entry: CacheEntryInput, options: AppendOptions = {}): Promise<void> {
    if (this.closed) throw new AbridgeError(ErrorCode.CACHE_IO, `cache ${this.file} is closed`);
    if (this.readOnly) throw new AbridgeError(ErrorCode.CACHE_IO, `cache ${this.file} was opened read-only`);
    const checked = checkCacheEntry(entry);
    if (!checked.ok) {
      throw new AbridgeError(ErrorCode.INPUT_INVALID, `cache entry rejected: ${checked.reason}`);
    }
    const stored = clampCreatedAt(checked.entry);
    const line = formatCacheLine(stored);
    // Newline aside. A line the reader would skip must not be written: it would be lost on the next load.
    const lineBytes = Buffer.byteLength(line) - 1;
    if (lineBytes > MAX_ENTRY_BYTES) {
      throw new AbridgeError(ErrorCode.INPUT_INVALID, `cache entry ${stored.key} rejected: ${oversizedReason(lineBytes)}`);
    }
    throwIfAborted(options.signal, "append");
    this.set(stored);
    return this.enqueue(() => this.appender.write(line, stored.key));
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

  /**
   * Waits for pending appends and releases the file. Idempotent: later calls get the same promise.
   * Entries not asked for before are no longer read after this.
   */
  close(): Promise<void> {
    this.closed = true;
    this.closing ??= (async () => {
      await this.queue;
      await this.appender.close();
      await this.setReader(undefined);
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
    this.index.set(entry.key, -1, 0, 0);
    this.parsed.set(entry.key, entry);
    if (this.byServer !== undefined) addToIndex(this.byServer, entry);
  }

  /** Reads, parses and validates the indexed line of `key`; a line that fails is reported and dropped. */
  private readIndexed(key: string): CacheEntry | undefined {
    const at = this.index.find(key);
    const reader = this.reader;
    // Offset -1 is an appended entry, which lives in `parsed`; once closed, nothing is read.
    if (at === undefined || at.offset < 0 || reader === undefined) return undefined;
    let reason: string;
    try {
      const bytes = Buffer.allocUnsafe(at.length);
      const bytesRead = readSync(reader.fd, bytes, 0, at.length, at.offset);
      if (bytesRead === at.length) {
        const parsed = parseStoredLine(bytes.toString("utf8"));
        if (parsed.ok && parsed.entry.key === key) return parsed.entry;
        reason = parsed.ok ? `its key is ${JSON.stringify(parsed.entry.key)}, not the one read at load` : parsed.reason;
      } else {
        reason = `only ${bytesRead} of its ${at.length} bytes are left (the file was truncated)`;
      }
    } catch (err) {
      reason = `cannot read it: ${messageOf(err)}`;
    }
    this.dropInvalid(key, at.offset, at.lineNumber, reason);
    return undefined;
  }

  /** Turns an indexed key whose line failed full validation into a miss, reported once. */
  private dropInvalid(key: string, offset: number, lineNumber: number, reason: string): void {
    this.index.delete(key);
    this.entriesRead -= 1;
    this.invalidLines += 1;
    if (this.countedTail?.offset === offset) this.countedTail.valid = false;
    this.logger.warn("skipped an invalid line in the summary cache", { line: lineNumber, key, reason });
  }

  private *liveEntries(): IterableIterator<CacheEntry> {
    // Deleting the current key (an invalid line) does not disturb a Map iteration. Entries read
    // here are not kept: walking a large cache must not hold all of it.
    for (const key of this.index.keys()) {
      const entry = this.parsed.get(key) ?? this.readIndexed(key);
      if (entry !== undefined) yield entry;
    }
  }

  private serverIndex(): Map<string, Map<string, CacheEntry>> {
    if (this.byServer === undefined) {
      const index = new Map<string, Map<string, CacheEntry>>();
      for (const entry of this.liveEntries()) {
        // The view holds every entry anyway; keeping them lets get() return the same objects.
        this.parsed.set(entry.key, entry);
        addToIndex(index, entry);
      }
      this.byServer = index;
    }
    return this.byServer;
  }

  private resetView(): void {
    this.index.clear();
    this.parsed.clear();
    this.byServer = undefined;
    this.offset = 0;
    this.nextLineNumber = 1;
    this.countedTail = undefined;
    this.entriesRead = 0;
    this.invalidLines = 0;
  }

  /** Makes `handle` the descriptor entries are read from, closing the one before. */
  private async setReader(handle: FileHandle | undefined): Promise<void> {
    const previous = this.reader;
    this.reader = handle;
    if (previous !== undefined && previous !== handle) await previous.close().catch(() => undefined);
  }

  /** Indexes the file from {@link offset} to its end. */
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
          await this.setReader(undefined);
        }
        return;
      }
      throw readError(this.file, err);
    }
    let kept = false;
    try {
      const info = await handle.stat();
      if (this.identity !== undefined && (info.ino !== this.identity.ino || info.dev !== this.identity.dev || info.size < this.offset)) {
        this.logger.debug("cache file was replaced or truncated; reading it again");
        this.resetView();
      }
      this.identity = { dev: info.dev, ino: info.ino };
      // Same file or a new one, this descriptor reads what the index (re)built from now points at.
      await this.setReader(handle);
      kept = true;
      const report: LoadReport = { invalid: 0, lineNumbers: [] };
      const result = await scanLineBytes(handle, {
        start: this.offset,
        end: info.size,
        firstLineNumber: this.nextLineNumber,
        signal,
        onLine: (bytes, from, to, lineNumber, offset) => this.ingestLine(bytes, from, to, lineNumber, offset, report, false),
        onOversized: (lineNumber, offset) => this.ingestLine(undefined, 0, 0, lineNumber, offset, report, false),
      });
      this.offset = result.nextOffset;
      this.nextLineNumber = result.nextLineNumber;
      if (result.tail !== undefined) {
        const { bytes, lineNumber, offset } = result.tail;
        this.ingestLine(bytes, 0, bytes?.length ?? 0, lineNumber, offset, report, true);
      }
      if (report.invalid > 0) {
        this.logger.warn("skipped invalid lines in the summary cache", {
          count: report.invalid,
          lines: report.lineNumbers,
        });
      }
    } catch (err) {
      throw readError(this.file, err);
    } finally {
      if (!kept) await handle.close().catch(() => undefined);
    }
  }

  /**
   * Indexes one line, `bytes[from..to)`; `bytes` undefined means oversized. An unterminated tail
   * is indexed too (a complete entry without its newline is still an entry) but remembered,
   * because the next read starts at it again once it is terminated.
   */
  private ingestLine(bytes: Buffer | undefined, from: number, to: number, lineNumber: number, offset: number, report: LoadReport, isTail: boolean): void {
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
    const valid = bytes !== undefined && this.indexLine(bytes, from, to, lineNumber, offset);
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

  /**
   * Indexes a line under its key: read from its first bytes when it is laid out as this store
   * writes, else from a full parse (lines of older or foreign writers; such a line is validated
   * completely here). Once the by-server view exists it holds parsed entries, so every line is
   * then parsed and validated as it arrives. Returns whether the line was indexed.
   */
  private indexLine(bytes: Buffer, from: number, to: number, lineNumber: number, offset: number): boolean {
    // An entry over the bound is never read, whatever its layout.
    if (to - from > MAX_ENTRY_BYTES) return false;
    const keyEnd = this.byServer === undefined ? quickKeyEnd(bytes, from, to) : -1;
    if (keyEnd >= 0) {
      this.index.setKeyBytes(bytes, from + KEY_OFFSET, keyEnd, offset, to - from, lineNumber);
      // An entry kept from before may be older than this line.
      if (this.parsed.size > 0) this.parsed.delete(bytes.toString("utf8", from + KEY_OFFSET, keyEnd));
      return true;
    }
    const parsed = parseStoredLine(bytes.toString("utf8", from, to));
    if (!parsed.ok) return false;
    const entry = parsed.entry;
    this.index.set(entry.key, offset, to - from, lineNumber);
    this.parsed.delete(entry.key);
    if (this.byServer !== undefined) {
      this.parsed.set(entry.key, entry);
      addToIndex(this.byServer, entry);
    }
    return true;
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
