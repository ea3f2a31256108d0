import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { parseRedisUrl } from "../config/redisUrl.js";
import type { RedisTarget } from "../config/redisUrl.js";
import { silentLogger } from "../log/logger.js";
import type { Logger } from "../log/logger.js";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import { delay } from "../model/timers.js";
import type { CacheEntry } from "./cacheEntry.js";
import type { JsonlStore } from "./jsonlStore.js";
import { bytesOver, clampCreatedAt, MAX_ENTRY_BYTES, oversizedReason, parseStoredLine } from "./entryLimits.js";
import { checkCacheEntry } from "./parseCacheLine.js";
import { createRedisClient } from "./redisConnection.js";
import { DEFAULT_REDIS_PREFIX, redisLayout, type RedisLayout } from "./redisLayout.js";
import { RedisMemory } from "./redisMemory.js";
import { readEntryField, scanEntries } from "./redisReads.js";
import { redisLease } from "./redisLease.js";
import { CLAIM_SCRIPT } from "./redisScripts.js";
import { RedisSpool, writeEntries } from "./redisSpool.js";
import { RedisStoreLogs } from "./redisStoreLogs.js";
import { LOCAL_LEASE } from "./summaryStore.js";
import type { AppendOptions, CacheEntryInput, ClaimResult, RemoteEntryListener, SummaryStore } from "./summaryStore.js";
import {
  DEFAULT_LEASE_MS,
  FLUSH_CHUNK,
  MEMORY_BYTES,
  MEMORY_ENTRIES,
  RETRY_FLUSH_MS,
  type RedisStoreOptions,
  type RedisStoreStats,
  START_WAIT_MS,
  SUBSCRIBE_WAIT_MS,
} from "./redisStoreOptions.js";

export { DEFAULT_LEASE_MS, MEMORY_BYTES, MEMORY_ENTRIES, type RedisStoreOptions, type RedisStoreStats } from "./redisStoreOptions.js";

/**
 * The summary cache on a Redis shared by a fleet of bridges (config `cache_url`); the key layout
 * is in `redisLayout.ts`. Like {@link JsonlStore}, entries are held in memory, so lookups stay
 * synchronous: the cache is loaded when the connection comes up (and again after every
 * reconnection, since entries published meanwhile were missed), and entries other hosts write
 * arrive through pub/sub. An entry written here goes to memory first; if Redis cannot take it, it
 * is kept in the spool until the connection is back, so nothing a bridge generated is lost to an
 * outage. Opening never waits on an unreachable Redis beyond a short start wait: a bridge serves
 * what it has (the spool, the original descriptions) and loads the rest when Redis comes.
 *
 * Anyone who can reach Redis can write to the hash and publish on the channel, so what is read
 * is bounded: an entry over {@link MAX_ENTRY_BYTES} never leaves Redis and is counted, an entry
 * dated beyond the clock-skew allowance is invalid, and memory keeps the entries of keys asked
 * for plus at most {@link MEMORY_ENTRIES} others ({@link MEMORY_BYTES}).
 *
 * Claims ({@link claim}) are `SET NX PX` leases with a random token, renewed and released by
 * scripts that compare the token first, so a host can never extend or drop another's lease.
 */
export class RedisStore implements SummaryStore {
  readonly leaseMs: number;
  /** The URL without its password. */
  readonly location: string;
  private readonly layout: RedisLayout;
  private readonly logger: Logger;
  private readonly client: Redis;
  private readonly subscriber: Redis;
  /** Entries in memory; keys asked for ({@link get}, {@link has}, {@link latest}) or written here are always kept. */
  private readonly memory: RedisMemory;
  /** Entries written here and not yet in Redis. */
  private readonly spool = new RedisSpool();
  /**
   * Counts entries heard and written here. A read from Redis (a page of the load, a field) is
   * Redis's word for its fields only when nothing was heard or written while it travelled: an
   * entry published after the read ran may arrive before the read's answer, and the older value
   * must not replace it.
   */
  private news = 0;
  private readonly logs: RedisStoreLogs;
  private readonly listeners = new Set<RemoteEntryListener>();
  private readonly writes = new Set<Promise<unknown>>();
  private counters = { entries: 0, invalidLines: 0, appended: 0, writeErrors: 0, loads: 0, oversized: 0, notKept: 0 };
  private down = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly retryFlushMs: number;
  private syncing: Promise<void> | undefined;
  private syncAgain = false;
  private closed = false;
  private closing: Promise<void> | undefined;
  private firstSettled: () => void = () => undefined;
  private readonly firstSync: Promise<void>;
  /** Resolved when the subscriber first listens on the channel. */
  private readonly firstSubscription: Promise<void>;
  private markSubscribed: () => void = () => undefined;
  /** Loads begun so far: a subscription that comes after one must be followed by another. */
  private loadsStarted = 0;

  private constructor(target: RedisTarget, options: RedisStoreOptions) {
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.retryFlushMs = options.retryFlushMs ?? RETRY_FLUSH_MS;
    this.location = target.display;
    this.layout = redisLayout(options.prefix ?? DEFAULT_REDIS_PREFIX, target.db);
    this.logger = (options.logger ?? silentLogger).child({ cache: target.display });
    this.logs = new RedisStoreLogs(this.logger);
    this.memory = new RedisMemory(options.memoryEntries ?? MEMORY_ENTRIES, options.memoryBytes ?? MEMORY_BYTES);
    this.client = createRedisClient(target, options.client);
    this.subscriber = createRedisClient(target, options.client);
    this.firstSync = new Promise((resolve) => (this.firstSettled = resolve));
    this.firstSubscription = new Promise((resolve) => (this.markSubscribed = resolve));
  }

  /**
   * Connects and loads every entry, waiting at most `startWaitMs`: when Redis is down or slow the
   * store is returned anyway, serving what the spool holds, and loads once the connection is up.
   *
   * @throws AbridgeError CONFIG_INVALID for a malformed URL; CACHE_IO when the spool cannot be read.
   */
  static async open(options: RedisStoreOptions): Promise<RedisStore> {
    const parsed = parseRedisUrl(options.url);
    if (!parsed.ok) throw new AbridgeError(ErrorCode.CONFIG_INVALID, `cache_url: ${parsed.message}`, { details: { field: "cache_url" } });
    const store = new RedisStore(parsed.target, options);
    if (options.spoolFile !== undefined) {
      // Entries a previous run could not write: served now, written when Redis is reachable.
      for (const entry of await store.spool.open(options.spoolFile, options.logger ?? silentLogger)) {
        store.memory.keepWritten(entry, JSON.stringify(entry).length);
      }
    }
    store.connect();
    const wait = new AbortController();
    await Promise.race([store.firstSync, delay(options.startWaitMs ?? START_WAIT_MS, wait.signal, { unref: true }).catch(() => undefined)]);
    wait.abort();
    return store;
  }

  get size(): number {
    return this.memory.size;
  }

  /** The entry of `key` in memory; asking marks the key as one this bridge keeps. */
  get(key: string): CacheEntry | undefined {
    this.memory.want(key);
    return this.memory.get(key);
  }

  has(key: string): boolean {
    this.memory.want(key);
    return this.memory.has(key);
  }

  *entries(): IterableIterator<CacheEntry> {
    yield* this.memory.entries();
  }

  forServer(server: string): CacheEntry[] {
    return [...this.entries()].filter((entry) => entry.server === server);
  }

  servers(): string[] {
    return [...new Set([...this.entries()].map((entry) => entry.server))];
  }

  stats(): RedisStoreStats {
    const { loads, ...counts } = this.counters;
    return { ...counts, liveKeys: this.memory.size, connected: this.client.status === "ready", spooled: this.spool.size, loads };
  }

  /** Resolves once the spool is empty (every entry written here is in Redis); false on timeout. */
  async flushed(timeoutMs: number): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    while (this.spool.size > 0 || this.syncing !== undefined) {
      if (Date.now() >= end) return false;
      await delay(20);
    }
    return true;
  }

  onRemoteEntry(listener: RemoteEntryListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /**
   * Validates `entry`, dates it no later than this host's clock, serves it from memory at once and
   * writes it through. With `force` it replaces whatever Redis holds for its key, however new;
   * without, an entry Redis holds with a later date stays.
   *
   * @throws AbridgeError INPUT_INVALID for an entry that fails the schema or is over
   *   {@link MAX_ENTRY_BYTES}; CACHE_IO when the store is closed or the entry could be kept nowhere.
   */
  async append(entry: CacheEntryInput, options: AppendOptions = {}): Promise<void> {
    if (this.closed) throw new AbridgeError(ErrorCode.CACHE_IO, `cache ${this.location} is closed`);
    const checked = checkCacheEntry(entry);
    if (!checked.ok) throw new AbridgeError(ErrorCode.INPUT_INVALID, `cache entry rejected: ${checked.reason}`);
    const stored = clampCreatedAt(checked.entry);
    const line = JSON.stringify(stored);
    const over = bytesOver(line);
    if (over !== undefined) throw new AbridgeError(ErrorCode.INPUT_INVALID, `cache entry ${stored.key} rejected: ${oversizedReason(over)}`);
    this.news++;
    this.memory.keepWritten(stored, line.length);
    await this.tracked(this.writeThrough(stored, options.force === true));
  }

  /** Runs a write close() waits for before it disconnects. */
  private async tracked(work: Promise<unknown>): Promise<void> {
    this.writes.add(work);
    try {
      await work;
    } finally {
      this.writes.delete(work);
    }
  }

  /**
   * Claims `key` (`SET NX PX` with a random token, in a script that also takes over a claim
   * without an expiry: abridge never sets one, so something else left it there for good).
   */
  async claim(key: string): Promise<ClaimResult> {
    // Unreachable: granted here, so an outage costs duplicate work at worst, never a stall.
    if (this.closed || this.client.status !== "ready") return { granted: true, lease: LOCAL_LEASE };
    const claimKey = this.layout.claim(key);
    const token = randomUUID();
    try {
      const answer = await this.client.eval(CLAIM_SCRIPT, 1, claimKey, token, this.leaseMs);
      return answer === 1 ? { granted: true, lease: redisLease(this.client, claimKey, token, this.leaseMs, (work) => this.tracked(work)) } : { granted: false };
    } catch (err) {
      this.noteDown(err);
      return { granted: true, lease: LOCAL_LEASE };
    }
  }

  async latest(key: string): Promise<CacheEntry | undefined> {
    this.memory.want(key);
    if (this.client.status === "ready") {
      try {
        const news = this.news;
        const read = await readEntryField(this.client, this.layout, key);
        if (read.oversized !== undefined) this.noteOversized(key, read.oversized);
        else if (read.text !== undefined) this.admit(read.text, key, news === this.news && !this.spool.has(key));
      } catch (err) {
        this.noteDown(err);
      }
    }
    return this.memory.get(key);
  }

  /** Writes what it can, stops listening and disconnects. Idempotent. */
  close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.closing ??= (async () => {
      await Promise.allSettled([...this.writes]);
      if (this.syncing !== undefined) await this.syncing.catch(() => undefined);
      if (this.spool.size > 0 && this.client.status === "ready") await this.flush().catch(() => undefined);
      if (this.spool.size > 0) {
        this.logger.warn("closing with summaries not yet written to Redis; they are kept in the spool for the next run", { count: this.spool.size });
      }
      this.listeners.clear();
      await Promise.allSettled([quit(this.subscriber), quit(this.client)]);
      await this.spool.close();
      this.firstSettled();
    })();
    return this.closing;
  }

  private connect(): void {
    this.client.on("ready", () => void this.sync());
    this.client.on("error", (err: unknown) => this.noteDown(err));
    this.client.on("end", () => this.firstSettled());
    this.subscriber.on("ready", () => {
      this.subscriber.subscribe(this.layout.channel).then(
        () => {
          this.markSubscribed();
          // What was published between a load and this (re)subscription reached nobody: the first
          // load waits for the subscription, so this is a late one or a resubscription after an
          // outage of the subscriber's own; load again.
          if (this.loadsStarted > 0 && this.client.status === "ready" && !this.closed) void this.sync();
        },
        (err: unknown) => this.logger.debug("subscribe failed", { error: messageOf(err) }),
      );
    });
    this.subscriber.on("message", (_channel: string, message: string) => this.heard(message));
    // The main connection reports outages; the subscriber's errors would repeat them.
    this.subscriber.on("error", () => undefined);
    this.client.connect().catch(() => this.firstSettled());
    this.subscriber.connect().catch(() => undefined);
  }

  /** Records an outage and logs it once per outage. */
  private noteDown(err: unknown): void {
    this.logs.failure(err, this.down);
    this.down = true;
    this.firstSettled();
  }

  /**
   * Tries the spool again later when Redis refused a write while the connection stayed up (out of
   * memory, a read-only replica): a reconnection, which also flushes, may then never come.
   */
  private retryLater(): void {
    if (this.retryTimer !== undefined || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.spool.size > 0 && this.client.status === "ready" && !this.closed) void this.sync();
    }, this.retryFlushMs);
    this.retryTimer.unref();
  }

  /** On every (re)connection: write the spool, then load everything (what was missed meanwhile). */
  private sync(): Promise<void> {
    if (this.syncing !== undefined) {
      this.syncAgain = true;
      return this.syncing;
    }
    this.syncing = (async () => {
      try {
        do {
          this.syncAgain = false;
          const flushed = await this.flush();
          await this.untilSubscribed();
          this.loadsStarted++;
          await this.load();
          this.counters.loads++;
          if (this.down) {
            this.down = false;
            this.logger.info("summary cache on Redis is reachable again", { flushed, entries: this.memory.size });
          }
        } while (this.syncAgain && !this.closed);
      } catch (err) {
        this.noteDown(err);
        if (this.spool.size > 0) this.retryLater();
      } finally {
        this.syncing = undefined;
        this.firstSettled();
      }
    })();
    return this.syncing;
  }

  /**
   * Waits for the first subscription (at most {@link SUBSCRIBE_WAIT_MS}), so that the first load
   * reads everything published before the store listens and the channel brings everything after:
   * a store loaded first and subscribed later missed what landed in between.
   */
  private async untilSubscribed(): Promise<void> {
    const wait = new AbortController();
    await Promise.race([this.firstSubscription, delay(SUBSCRIBE_WAIT_MS, wait.signal, { unref: true }).catch(() => undefined)]);
    wait.abort();
  }

  /**
   * Reads every entry of the hash, a page per round trip ({@link scanEntries}: values over the
   * size bound are counted, never sent). What Redis holds replaces what memory holds, unless
   * something was heard or written while the page travelled (then the newer entry of the two
   * stays) or the entry is one of this host's not yet written.
   */
  private async load(): Promise<void> {
    let valid = 0;
    let invalid = 0;
    let news = this.news;
    await scanEntries(this.client, this.layout, {
      page: () => {
        news = this.news;
      },
      value: (field, text) => {
        if (this.admit(text, field, news === this.news && !this.spool.has(field))) valid++;
        else invalid++;
      },
      oversized: (field, bytes) => {
        invalid++;
        this.noteOversized(field, bytes);
      },
    });
    this.counters.entries = valid;
    if (invalid > 0 && invalid !== this.counters.invalidLines) {
      this.logger.warn("skipped invalid entries in the summary cache; `abridge cache verify` lists them", { count: invalid });
    }
    this.counters.invalidLines = invalid;
  }

  /**
   * An entry published by any host (this one included). The channel carries what the write script
   * wrote, in the order Redis wrote it, so the last entry heard of a key is what Redis holds: it
   * replaces memory's even when older (a forced write).
   */
  private heard(message: string): void {
    this.news++;
    this.admit(message, undefined, true);
  }

  /**
   * Takes a value read from Redis or heard on the channel into memory, if it is an entry a bridge
   * may serve ({@link parseStoredLine}: within the size bound, valid, its key the field it was
   * read from, dated no later than the clock-skew allowance). `authoritative` means it is what
   * Redis holds now: it replaces memory's entry whatever their dates; otherwise the newer stays.
   * Returns whether the value is a valid entry (kept or not).
   */
  private admit(text: string, field: string | undefined, authoritative: boolean): boolean {
    const parsed = parseStoredLine(text);
    if (!parsed.ok) {
      if ("oversized" in parsed) this.noteOversized(field, parsed.oversized);
      else if (field === undefined) this.logger.debug("ignored an invalid entry on the summary channel", { reason: parsed.reason });
      return false;
    }
    if (field !== undefined && parsed.entry.key !== field) return false;
    this.take(parsed.entry, text.length, authoritative);
    return true;
  }

  /**
   * Takes an entry into memory ({@link RedisMemory.offer}: unless it has it, a newer one, or no
   * room for it). Returns whether it was taken; listeners hear of every entry taken.
   */
  private take(entry: CacheEntry, bytes: number, authoritative: boolean): boolean {
    const outcome = this.memory.offer(entry, bytes, authoritative);
    if (outcome === "stale") return false;
    if (outcome === "noRoom") {
      this.counters.notKept++;
      this.logs.notKept.warn({ notKept: this.counters.notKept, kept: this.memory.size, keptBytes: this.memory.bytes });
      return false;
    }
    for (const listener of this.listeners) {
      try {
        listener(entry);
      } catch (err) {
        this.logger.error("summary entry listener threw", { key: entry.key, error: messageOf(err) });
      }
    }
    return true;
  }

  /** Counts a value over the size bound, logged at most once a minute. */
  private noteOversized(field: string | undefined, bytes: number): void {
    this.counters.oversized++;
    this.logs.oversized.warn({ ...(field !== undefined ? { field } : { source: "channel" }), bytes, oversized: this.counters.oversized });
  }

  private async writeThrough(entry: CacheEntry, force: boolean): Promise<void> {
    if (this.client.status === "ready") {
      try {
        await writeEntries(this.client, this.layout, [entry], force ? new Set([entry.key]) : undefined);
        this.counters.appended++;
        return;
      } catch (err) {
        this.counters.writeErrors++;
        this.noteDown(err);
      }
    }
    await this.keep(entry, force);
  }

  /** Keeps an entry Redis could not take: in memory, and in the spool file when there is one. */
  private async keep(entry: CacheEntry, force: boolean): Promise<void> {
    this.spool.hold(entry, force);
    if (this.client.status === "ready") this.retryLater();
    await this.spool.save(entry);
  }

  /** Writes the spooled entries to Redis and empties the spool of them. Returns how many. */
  private async flush(): Promise<number> {
    if (this.spool.size === 0) return 0;
    const { entries: batch, forced } = this.spool.batch();
    for (let i = 0; i < batch.length; i += FLUSH_CHUNK) await writeEntries(this.client, this.layout, batch.slice(i, i + FLUSH_CHUNK), forced);
    this.spool.written(batch);
    this.counters.appended += batch.length;
    await this.spool.compact();
    this.logger.info("wrote spooled summaries to Redis", { count: batch.length });
    return batch.length;
  }
}

/** Ends a connection: politely when it is up, at once otherwise (QUIT cannot be sent to nobody). */
async function quit(client: Redis): Promise<void> {
  if (client.status === "ready") {
    await client.quit().catch(() => client.disconnect());
  } else {
    client.disconnect();
  }
}
