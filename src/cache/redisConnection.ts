import { Redis } from "ioredis";
import type { RedisTarget } from "../config/redisUrl.js";

/** Options of {@link createRedisClient}. */
export interface RedisClientOptions {
  /** Time to establish a connection before it counts as failed (default 2,000). */
  connectTimeoutMs?: number;
  /** Time a command may take before it fails (default 5,000): a stalled server must not stall a bridge. */
  commandTimeoutMs?: number;
  /** Longest wait between two reconnection attempts (default 5,000). */
  maxReconnectDelayMs?: number;
}

/**
 * A Redis client for the summary cache, built to never hold a bridge up: it connects only when
 * asked (`connect()`), a command sent while disconnected fails at once instead of waiting in an
 * offline queue, every command has a timeout, and a lost connection is tried again with
 * exponential backoff (100 ms doubling, with jitter, up to `maxReconnectDelayMs`) forever.
 */
export function createRedisClient(target: RedisTarget, options: RedisClientOptions = {}): Redis {
  const maxDelay = options.maxReconnectDelayMs ?? 5_000;
  return new Redis({
    host: target.host,
    port: target.port,
    db: target.db,
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
    ...(target.tls ? { tls: {} } : {}),
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: options.connectTimeoutMs ?? 2_000,
    commandTimeout: options.commandTimeoutMs ?? 5_000,
    // Commands issued in one tick (claims of a batch, a load's pages) travel in one round trip.
    enableAutoPipelining: true,
    retryStrategy: (attempt: number) => {
      const exponential = Math.min(maxDelay, 100 * 2 ** Math.min(attempt - 1, 16));
      return Math.round(exponential / 2 + (Math.random() * exponential) / 2);
    },
  });
}
