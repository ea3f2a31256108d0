import { cacheEntrySchema, cacheKey, fastCheckCacheEntry } from "./cacheEntry.js";
import type { CacheEntry } from "./cacheEntry.js";
import { messageOf } from "../model/errors.js";

/** Result of {@link parseCacheLine}: the entry, or why the line was rejected. */
export type ParsedCacheLine = { ok: true; entry: CacheEntry } | { ok: false; reason: string };

const COLON = 0x3a;

/** Whether `key` is exactly `server:tool:hash`, without building that string. */
function keyMatches(key: string, server: string, tool: string, hash: string): boolean {
  const toolAt = server.length + 1;
  const hashAt = toolAt + tool.length + 1;
  return (
    key.length === hashAt + hash.length &&
    key.charCodeAt(server.length) === COLON &&
    key.charCodeAt(hashAt - 1) === COLON &&
    key.startsWith(server) &&
    key.startsWith(tool, toolAt) &&
    key.startsWith(hash, hashAt)
  );
}

function keyMismatch(entry: CacheEntry): ParsedCacheLine {
  const expected = cacheKey(entry.server, entry.tool, entry.hash);
  return { ok: false, reason: `key ${JSON.stringify(entry.key)} does not match server:tool:hash ${JSON.stringify(expected)}` };
}

/**
 * Checks a value against the cache entry schema and that its key is made of its own
 * server, tool and hash: a line whose key disagrees with its parts would serve a summary under a
 * schema it was not written for.
 */
export function checkCacheEntry(value: unknown): ParsedCacheLine {
  const parsed = cacheEntrySchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? "" : `${issue.path.join(".")}: `;
    return { ok: false, reason: `schema: ${where}${issue?.message ?? "invalid"}` };
  }
  const entry = parsed.data;
  if (!keyMatches(entry.key, entry.server, entry.tool, entry.hash)) return keyMismatch(entry);
  return { ok: true, entry };
}

/**
 * Parses one line of `summaries.jsonl`: JSON, then {@link fastCheckCacheEntry}, and
 * {@link checkCacheEntry} (zod) for whatever the fast check does not accept. Never throws.
 */
export function parseCacheLine(text: string): ParsedCacheLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `not JSON: ${messageOf(err)}` };
  }
  const entry = fastCheckCacheEntry(value);
  if (entry === undefined) return checkCacheEntry(value);
  if (!keyMatches(entry.key, entry.server, entry.tool, entry.hash)) return keyMismatch(entry);
  return { ok: true, entry };
}
