import type { z } from "zod";
import type { CacheEntry, cacheEntrySchema } from "./cacheEntry.js";

/** What {@link SummaryStore.append} accepts: an entry before schema defaults (`params`) are applied. */
export type CacheEntryInput = z.input<typeof cacheEntrySchema>;

/** Options of {@link SummaryStore.append}. */
export interface AppendOptions {
  signal?: AbortSignal;
  /**
   * Replace whatever the store holds for the key, however new (`summarize warm --force`, a
   * summary the guard refused). Without it a shared store keeps an entry with a later date.
   */
  force?: boolean;
}

/** Counters every summary store keeps, for `abridge stats` and the daemon. */
export interface SummaryStoreStats {
  /** Valid entries read (from the file: superseded lines included). */
  entries: number;
  /** Distinct keys served. */
  liveKeys: number;
  /** Lines or fields skipped as unparsable, oversized or not matching the schema. */
  invalidLines: number;
  /** Entries this store wrote successfully. */
  appended: number;
  /** Writes that failed (the entry is still served from memory). */
  writeErrors: number;
  /** Entries skipped for being over the size bound (a shared store; a file counts them as invalid lines). */
  oversized?: number;
  /** Valid entries a shared store left out of memory, past its bound of entries not asked for. */
  notKept?: number;
}

/** A lease on one cache key: this process is the one summarizing it until it is released or lost. */
export interface ClaimLease {
  /** Extends the lease by its length; false when it was lost (expired and taken by another host). */
  renew(): Promise<boolean>;
  /** Gives the key up (only if this lease still holds it). Never throws. */
  release(): Promise<void>;
}

/** The answer of {@link SummaryClaims.claim}. */
export type ClaimResult = { granted: true; lease: ClaimLease } | { granted: false };

/**
 * Single flight of summary generation across every process sharing a store: one claim per cache
 * key at a time, held by a lease that expires when its holder dies. A store shared by one machine
 * grants every claim (the queue of that process already runs one job per key).
 */
export interface SummaryClaims {
  /** Lease length in milliseconds: how long a dead holder keeps others waiting. */
  readonly leaseMs: number;
  /**
   * Claims `key`. Resolves `granted: false` when another process holds it. When the shared store
   * cannot be reached the claim is granted locally: an outage must not stop summaries.
   */
  claim(key: string): Promise<ClaimResult>;
  /**
   * The newest entry of `key` as the shared store has it now (not only what this process has
   * heard of): a claim taken just after another process finished must see its entry.
   */
  latest(key: string): Promise<CacheEntry | undefined>;
}

/** Called with an entry another process wrote, once this store holds it. */
export type RemoteEntryListener = (entry: CacheEntry) => void;

/**
 * The summary cache as everything above it sees it: entries keyed by `server:tool:hash`, served
 * synchronously from memory, written through to a JSONL file ({@link JsonlStore}, the embedded
 * default) or a Redis shared by a fleet of bridges (`RedisStore`, config `cache_url`).
 */
export interface SummaryStore extends SummaryClaims {
  /** Where the entries live, safe to print: the file path, or the URL without its password. */
  readonly location: string;
  /** Number of distinct keys served. */
  readonly size: number;
  /** The newest entry for `key`, if any. */
  get(key: string): CacheEntry | undefined;
  has(key: string): boolean;
  /** Every live entry (the newest per key). */
  entries(): IterableIterator<CacheEntry>;
  /** Live entries of one server. */
  forServer(server: string): CacheEntry[];
  /** Names of the servers that have at least one entry. */
  servers(): string[];
  stats(): SummaryStoreStats;
  /**
   * Validates `entry`, dates it no later than this host's clock, serves it from memory at once,
   * then writes it through.
   *
   * @throws AbridgeError INPUT_INVALID for an entry that fails the schema or is over the size
   *   bound; CACHE_IO when the write fails and the entry could not be kept anywhere but in memory.
   */
  append(entry: CacheEntryInput, options?: AppendOptions): Promise<void>;
  /** Listens for entries other processes wrote (a shared store); returns the unsubscribe. */
  onRemoteEntry(listener: RemoteEntryListener): () => void;
  /** Waits for pending writes and lets go of files and connections. Idempotent. */
  close(): Promise<void>;
}

/** A lease that holds nothing: what a store no other process shares hands out. */
export const LOCAL_LEASE: ClaimLease = {
  renew: () => Promise.resolve(true),
  release: () => Promise.resolve(),
};
