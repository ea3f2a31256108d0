/**
 * The way entries written on this host travel to Redis: the write itself (one round trip of the
 * write script per batch) and the spool that keeps what Redis could not take until the
 * connection is back. Kept apart from `redisStore.ts`, which decides when to write and flush,
 * because holding entries through an outage (in memory and in a JSONL file that survives a
 * restart) is a job of its own.
 */
import type { Redis } from "ioredis";
import type { Logger } from "../log/logger.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import type { CacheEntry } from "./cacheEntry.js";
import { clearCache, compactCache } from "./cacheMaintenance.js";
import { latestAcceptedCreatedAt, MAX_ENTRY_BYTES } from "./entryLimits.js";
import { JsonlStore } from "./jsonlStore.js";
import type { RedisLayout } from "./redisLayout.js";
import { WRITE_SCRIPT } from "./redisScripts.js";

/**
 * One round trip: each entry set unless Redis has a newer one for its key (or its key is in
 * `forced`), and published. Dates beyond this host's clock plus the skew allowance do not count
 * as newer.
 */
export async function writeEntries(client: Redis, layout: RedisLayout, entries: readonly CacheEntry[], forced?: ReadonlySet<string>): Promise<void> {
  const batch = client.multi();
  const latest = latestAcceptedCreatedAt();
  for (const entry of entries) {
    const force = forced?.has(entry.key) === true ? "1" : "0";
    batch.eval(WRITE_SCRIPT, 1, layout.entries, entry.key, JSON.stringify(entry), entry.createdAt, layout.channel, latest, force, MAX_ENTRY_BYTES);
  }
  const results = await batch.exec();
  if (results === null) throw new AbridgeError(ErrorCode.CACHE_UNAVAILABLE, "Redis discarded the write");
  for (const [err] of results) if (err) throw err;
}

/** Entries written here and not yet in Redis: in memory, and in the spool file when there is one. */
export class RedisSpool {
  /** Entries not yet written to Redis, by key. */
  private readonly pending = new Map<string, CacheEntry>();
  /** Keys of pending entries written with force (replacing whatever Redis holds). */
  private readonly forced = new Set<string>();
  private store: JsonlStore | undefined;

  /** Opens the spool file; returns the entries a previous run could not write, now pending. */
  async open(file: string, logger: Logger): Promise<CacheEntry[]> {
    this.store = await JsonlStore.open({ file, logger });
    const left = [...this.store.entries()];
    for (const entry of left) this.pending.set(entry.key, entry);
    return left;
  }

  get size(): number {
    return this.pending.size;
  }

  has(key: string): boolean {
    return this.pending.has(key);
  }

  /** Marks an entry Redis could not take as pending (forced or not, as its last write was). */
  hold(entry: CacheEntry, force: boolean): void {
    this.pending.set(entry.key, entry);
    if (force) this.forced.add(entry.key);
    else this.forced.delete(entry.key);
  }

  /**
   * Appends a held entry to the spool file, when there is one.
   *
   * @throws AbridgeError CACHE_IO when the file cannot be written (the entry stays in memory).
   */
  async save(entry: CacheEntry): Promise<void> {
    if (this.store === undefined) return;
    try {
      await this.store.append(entry);
    } catch (err) {
      throw new AbridgeError(
        ErrorCode.CACHE_IO,
        `cannot write ${entry.key} to Redis or to the spool ${this.store.file}; it is kept in memory until Redis is back`,
        { cause: err },
      );
    }
  }

  /** The pending entries, and the keys among them to write with force. */
  batch(): { entries: CacheEntry[]; forced: Set<string> } {
    return { entries: [...this.pending.values()], forced: new Set(this.forced) };
  }

  /** Drops entries Redis now holds, unless one was held again while they were written. */
  written(entries: readonly CacheEntry[]): void {
    for (const entry of entries) {
      if (this.pending.get(entry.key) !== entry) continue;
      this.pending.delete(entry.key);
      this.forced.delete(entry.key);
    }
  }

  /** Rewrites the spool file to hold what is still pending. */
  async compact(): Promise<void> {
    if (this.store === undefined) return;
    const file = this.store.file;
    // Entries spooled during the flush stay in the file.
    if (this.pending.size === 0) await clearCache(file);
    else await compactCache(file, { keep: (entry) => this.pending.get(entry.key)?.createdAt === entry.createdAt });
  }

  async close(): Promise<void> {
    await this.store?.close();
  }
}
