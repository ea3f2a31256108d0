import { cacheEntrySchema, cacheKey } from "./cacheEntry.js";
import type { CacheEntry } from "./cacheEntry.js";

/** Result of {@link parseCacheLine}: the entry, or why the line was rejected. */
export type ParsedCacheLine = { ok: true; entry: CacheEntry } | { ok: false; reason: string };

/** Keys every entry has; `params` and `fallback` may be missing. */
const REQUIRED_KEYS = 10;
const COLON = 0x3a;

/**
 * Checks a value decoded by `JSON.parse` against {@link cacheEntrySchema} without zod, for the
 * load path: zod's `safeParse` builds a new object, a payload and an issue list per field, which
 * made it half of the time of loading a 100k-entry cache, mostly in garbage collection.
 *
 * It accepts a subset of what the schema accepts and returns what zod would return for it (the
 * same object with `params` defaulted), so it may only ever say "yes, and here is the entry" or
 * "ask zod": `undefined` means "not decided here", never "invalid". Anything unusual (unknown keys,
 * which zod would strip; a `__proto__` parameter, which zod drops; a key under 10 UTF-16 units,
 * which zod measures in code points) is left to zod, which stays the
 * single definition of the format and writes the error message. `test/cache/fastCheck.test.ts`
 * checks that both agree on many valid and mutated lines.
 *
 * The value must come from `JSON.parse` (plain objects, arrays and primitives only): getters,
 * prototypes and symbol keys are not considered. Mutates `value` (adds the `params` default).
 */
export function fastCheckCacheEntry(value: unknown): CacheEntry | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const { key, server, tool, hash, summary, summarizer, prompt, tokensBefore, tokensAfter, createdAt } = v;
  if (
    typeof key !== "string" ||
    // zod counts code points when a string has fewer than twice its minimum in UTF-16 units; any
    // real key has at least 20 units, so a shorter one is left to zod.
    key.length < 10 ||
    typeof server !== "string" ||
    server.length < 1 ||
    typeof tool !== "string" ||
    tool.length < 1 ||
    typeof hash !== "string" ||
    !isLowerHex16(hash) ||
    typeof summary !== "string" ||
    typeof summarizer !== "string" ||
    summarizer.length < 1 ||
    typeof prompt !== "string" ||
    prompt.length < 1 ||
    typeof tokensBefore !== "number" ||
    !Number.isSafeInteger(tokensBefore) ||
    tokensBefore < 0 ||
    typeof tokensAfter !== "number" ||
    !Number.isSafeInteger(tokensAfter) ||
    tokensAfter < 0 ||
    typeof createdAt !== "string" ||
    createdAt.length < 1
  ) {
    return undefined;
  }
  // Count the keys this check knows, then compare with the keys the object has: a difference
  // means keys zod would strip.
  let known = REQUIRED_KEYS;
  const params = v.params;
  if (params !== undefined) {
    if (!isStringRecord(params)) return undefined;
    known += 1;
  }
  const fallback = v.fallback;
  if (fallback !== undefined) {
    if (typeof fallback !== "string") return undefined;
    known += 1;
  }
  let own = 0;
  for (const name in v) {
    // JSON.parse makes plain objects, so every enumerated key is own; counting is cheaper than
    // Object.keys, which allocates an array per line.
    if (name === "__proto__") return undefined;
    own += 1;
  }
  if (own !== known) return undefined;
  if (params === undefined) v.params = {};
  return value as CacheEntry;
}

/** `^[0-9a-f]{16}$` without the regex machinery. */
function isLowerHex16(text: string): boolean {
  if (text.length !== 16) return false;
  for (let i = 0; i < 16; i++) {
    const c = text.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

/** A plain JSON object whose values are all strings and that has no `__proto__` key (zod drops it). */
function isStringRecord(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  for (const name in record) {
    if (name === "__proto__" || typeof record[name] !== "string") return false;
  }
  return true;
}

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
    return { ok: false, reason: `not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  const entry = fastCheckCacheEntry(value);
  if (entry === undefined) return checkCacheEntry(value);
  if (!keyMatches(entry.key, entry.server, entry.tool, entry.hash)) return keyMismatch(entry);
  return { ok: true, entry };
}
