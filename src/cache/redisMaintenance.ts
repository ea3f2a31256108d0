import type { Redis } from "ioredis";
import { parseRedisUrl } from "../config/redisUrl.js";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import type { CacheEntry } from "./cacheEntry.js";
import type { ClearReport, CompactReport, InvalidLine, VerifyOptions, VerifyReport } from "./cacheMaintenance.js";
import { clampCreatedAt, latestAcceptedCreatedAt, MAX_ENTRY_BYTES, oversizedReason, parseStoredLine } from "./entryLimits.js";
import { createRedisClient } from "./redisConnection.js";
import { DEFAULT_REDIS_PREFIX, redisLayout, type RedisLayout } from "./redisLayout.js";
import { scanEntries, type ScanOptions } from "./redisReads.js";
import { WRITE_SCRIPT } from "./redisScripts.js";

/** Entries written per round trip by {@link writeRedisEntries}. */
const WRITE_CHUNK = 500;

/** A Redis summary cache to maintain: `cache_url`, and the key prefix (default `abridge`). */
export interface RedisCacheRef {
  url: string;
  prefix?: string;
}

/** Report of {@link writeRedisEntries}. */
export interface WriteReport {
  /** Entries written. */
  written: number;
  /** Entries not written because the cache holds a newer one for their key. */
  kept: number;
}

/**
 * Runs `action` on a fresh connection that must come up: maintenance, unlike serving, has nothing
 * to fall back on, so an unreachable Redis is an error here.
 *
 * @throws AbridgeError CONFIG_INVALID for a malformed URL; CACHE_UNAVAILABLE when Redis cannot be reached.
 */
async function withRedis<T>(ref: RedisCacheRef, action: (client: Redis, layout: RedisLayout, display: string) => Promise<T>): Promise<T> {
  const parsed = parseRedisUrl(ref.url);
  if (!parsed.ok) throw new AbridgeError(ErrorCode.CONFIG_INVALID, `cache_url: ${parsed.message}`, { details: { field: "cache_url" } });
  const { target } = parsed;
  const client = createRedisClient(target, { maxReconnectDelayMs: 1_000 });
  // Errors are answered through the rejected commands; without a listener they would be printed.
  client.on("error", () => undefined);
  try {
    try {
      await client.connect();
    } catch (err) {
      throw new AbridgeError(ErrorCode.CACHE_UNAVAILABLE, `cannot reach the summary cache at ${target.display}: ${messageOf(err)}`, {
        cause: err,
        retryable: true,
      });
    }
    try {
      return await action(client, redisLayout(ref.prefix ?? DEFAULT_REDIS_PREFIX, target.db), target.display);
    } catch (err) {
      if (err instanceof AbridgeError) throw err;
      throw new AbridgeError(ErrorCode.CACHE_UNAVAILABLE, `summary cache at ${target.display}: ${messageOf(err)}`, { cause: err, retryable: true });
    }
  } finally {
    if (client.status === "ready") await client.quit().catch(() => client.disconnect());
    else client.disconnect();
  }
}

/**
 * Calls `visit` with every field of the entries hash and what it holds: the entry, or why it is
 * not one a bridge would serve (a value over {@link MAX_ENTRY_BYTES} is judged by its size alone
 * and never sent), a page per round trip.
 */
async function scan(
  client: Redis,
  layout: RedisLayout,
  visit: (field: string, found: { entry?: CacheEntry; reason?: string; oversized?: boolean }) => void,
  options: ScanOptions = {},
): Promise<void> {
  const now = Date.now();
  await scanEntries(
    client,
    layout,
    {
      value: (field, text) => visit(field, problemOf(field, text, now)),
      oversized: (field, bytes) => visit(field, { reason: oversizedReason(bytes), oversized: true }),
    },
    options,
  );
}

/** Why a field is not a servable entry, or its entry. */
function problemOf(field: string, value: string, now: number): { entry?: CacheEntry; reason?: string } {
  const parsed = parseStoredLine(value, now);
  if (!parsed.ok) return { reason: parsed.reason };
  if (parsed.entry.key !== field) return { reason: `holds the entry of ${parsed.entry.key}` };
  return { entry: parsed.entry };
}

/** {@link verifyCache} for Redis: every field checked; `line` counts fields in scan order. */
export function verifyRedisCache(ref: RedisCacheRef, options: Pick<VerifyOptions, "check"> = {}): Promise<VerifyReport> {
  return withRedis(ref, async (client, layout) => {
    const invalid: InvalidLine[] = [];
    let lines = 0;
    let valid = 0;
    await scan(client, layout, (field, { entry, reason }) => {
      lines += 1;
      const rejected = entry === undefined ? [] : (options.check?.(entry) ?? []);
      if (reason !== undefined) invalid.push({ line: lines, field, reason });
      else if (rejected.length > 0) invalid.push({ line: lines, field, reason: rejected.join("; ") });
      else valid += 1;
    });
    // One field per key: nothing is ever superseded in a hash.
    return { exists: lines > 0, lines, valid, invalid, liveKeys: valid, superseded: 0 };
  });
}

/**
 * {@link compactCache} for Redis: removes fields that are not entries a bridge would serve (over the
 * size bound, deleted inside Redis as the scan meets them; invalid; dated beyond the clock-skew
 * allowance); a hash has no superseded lines.
 */
export function compactRedisCache(ref: RedisCacheRef): Promise<CompactReport> {
  return withRedis(ref, async (client, layout) => {
    const bad: string[] = [];
    let before = 0;
    let dropped = 0;
    await scan(
      client,
      layout,
      (field, { reason, oversized }) => {
        before += 1;
        if (oversized === true) dropped += 1;
        else if (reason !== undefined) bad.push(field);
      },
      { dropOversized: true },
    );
    const removed = dropped + bad.length;
    for (let i = 0; i < bad.length; i += WRITE_CHUNK) await client.hdel(layout.entries, ...bad.slice(i, i + WRITE_CHUNK));
    return { before, after: before - removed };
  });
}

/** {@link clearCache} for Redis: the whole hash, or the fields of one server. */
export function clearRedisCache(ref: RedisCacheRef, options: { server?: string } = {}): Promise<ClearReport> {
  return withRedis(ref, async (client, layout) => {
    const server = options.server;
    if (server === undefined) {
      const removed = await client.hlen(layout.entries);
      await client.del(layout.entries);
      return { removed };
    }
    const fields: string[] = [];
    // Server names have no glob characters (SERVER_NAME_PATTERN), so the pattern is literal.
    await scan(
      client,
      layout,
      (field) => {
        if (field.startsWith(`${server}:`)) fields.push(field);
      },
      { match: `${server}:*` },
    );
    for (let i = 0; i < fields.length; i += WRITE_CHUNK) await client.hdel(layout.entries, ...fields.slice(i, i + WRITE_CHUNK));
    return { removed: fields.length };
  });
}

/** Every valid entry of a Redis cache (invalid fields are left out; `verify` lists them). */
export function readRedisEntries(ref: RedisCacheRef): Promise<{ location: string; entries: CacheEntry[] }> {
  return withRedis(ref, async (client, layout, display) => {
    const entries: CacheEntry[] = [];
    await scan(client, layout, (_field, { entry }) => {
      if (entry !== undefined) entries.push(entry);
    });
    return { location: display, entries };
  });
}

/**
 * Writes entries into a Redis cache, each dated no later than this host's clock and written unless
 * the cache holds a newer one for its key, and publishes each written one so running bridges take
 * it at once.
 */
export function writeRedisEntries(ref: RedisCacheRef, entries: readonly CacheEntry[]): Promise<WriteReport> {
  return withRedis(ref, async (client, layout) => {
    const report: WriteReport = { written: 0, kept: 0 };
    for (let i = 0; i < entries.length; i += WRITE_CHUNK) {
      const batch = client.multi();
      const latest = latestAcceptedCreatedAt();
      for (const given of entries.slice(i, i + WRITE_CHUNK)) {
        const entry = clampCreatedAt(given);
        batch.eval(WRITE_SCRIPT, 1, layout.entries, entry.key, JSON.stringify(entry), entry.createdAt, layout.channel, latest, "0", MAX_ENTRY_BYTES);
      }
      const results = (await batch.exec()) ?? [];
      for (const [err, written] of results) {
        if (err) throw err;
        if (written === 1) report.written += 1;
        else report.kept += 1;
      }
    }
    return report;
  });
}
