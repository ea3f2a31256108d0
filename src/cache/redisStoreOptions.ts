/**
 * The options, counters and tuning constants of the Redis summary cache (`redisStore.ts`), kept
 * apart so the store's module holds its connection, load and write logic only.
 */
import type { Logger } from "../log/logger.js";
import type { RedisClientOptions } from "./redisConnection.js";
import type { SummaryStoreStats } from "./summaryStore.js";

/** Default lease of a summary claim (config `cache_lease_ms`). */
export const DEFAULT_LEASE_MS = 30_000;
/** How long the first load waits for the subscriber to listen (it loads again if it comes later). */
export const SUBSCRIBE_WAIT_MS = 1_000;

/** How long {@link RedisStore.open} waits for the first load before serving without it. */
export const START_WAIT_MS = 3_000;
/** How long after a refused write the spool is tried again over a connection that stayed up. */
export const RETRY_FLUSH_MS = 5_000;
/** Entries written back per round trip when the spool is flushed. */
export const FLUSH_CHUNK = 500;
/**
 * Entries of keys this bridge has not asked for that memory holds at most, and their bytes: the
 * hash is shared by a whole fleet, and anyone who can write to Redis or publish on its channel can
 * add entries by the hundred thousand. Past these, such entries are left in Redis (a bridge that
 * lists the tool later reads its entry when it claims the key). Entries of keys asked for (the
 * tools this bridge lists) and entries written here are always kept.
 */
export const MEMORY_ENTRIES = 20_000;
export const MEMORY_BYTES = 32 * 1024 * 1024;
/** How often skipped entries are logged at most (one line, with counts). */
export const SKIP_LOG_MS = 60_000;

/** Options of {@link RedisStore.open}. */
export interface RedisStoreOptions {
  /** `cache_url`: `redis://[[user]:password@]host[:port][/db]`. */
  url: string;
  /** Lease of a summary claim (config `cache_lease_ms`). */
  leaseMs?: number;
  /** Key prefix (default `abridge`): several caches may share one database. */
  prefix?: string;
  /**
   * JSONL file keeping entries written while Redis could not be reached, until they are written
   * there (`<state_dir>/redis-spool/...`). Without one they wait in memory only.
   */
  spoolFile?: string;
  logger?: Logger;
  /** How long {@link RedisStore.open} waits for the first load (default 3,000 ms). */
  startWaitMs?: number;
  /** How long after a write Redis refused over a live connection the spool is tried again (default 5,000 ms). */
  retryFlushMs?: number;
  /** Entries of keys not asked for kept in memory at most (default {@link MEMORY_ENTRIES}). */
  memoryEntries?: number;
  /** Their bytes at most (default {@link MEMORY_BYTES}). */
  memoryBytes?: number;
  client?: RedisClientOptions;
}

/** Counters of a {@link RedisStore}. */
export interface RedisStoreStats extends SummaryStoreStats {
  /** Whether the connection is up now. */
  connected: boolean;
  /** Entries written here and not yet in Redis (in memory and in the spool file). */
  spooled: number;
  /** Full loads done (the first, and one after every reconnection). */
  loads: number;
  /** Entries over the size bound skipped (loaded, heard or read), each time one was met. */
  oversized: number;
  /** Valid entries left out of memory because it held its bound of entries not asked for. */
  notKept: number;
}
