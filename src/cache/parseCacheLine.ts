import { cacheEntrySchema, cacheKey } from "./cacheEntry.js";
import type { CacheEntry } from "./cacheEntry.js";

/** Result of {@link parseCacheLine}: the entry, or why the line was rejected. */
export type ParsedCacheLine = { ok: true; entry: CacheEntry } | { ok: false; reason: string };

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
  const expected = cacheKey(entry.server, entry.tool, entry.hash);
  if (entry.key !== expected) {
    return { ok: false, reason: `key ${JSON.stringify(entry.key)} does not match server:tool:hash ${JSON.stringify(expected)}` };
  }
  return { ok: true, entry };
}

/** Parses one line of `summaries.jsonl`: JSON, then {@link checkCacheEntry}. Never throws. */
export function parseCacheLine(text: string): ParsedCacheLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  return checkCacheEntry(value);
}
