import type { CacheEntry } from "../../src/cache/cacheEntry.js";

/** A deterministic 16-hex-digit hash for test entries (not an xxhash: only its shape matters here). */
export function fakeHash(seed: number): string {
  return (BigInt(seed + 1) * 0x9e3779b97f4a7c15n).toString(16).padStart(16, "0").slice(-16);
}

/** A valid cache entry for `server:tool` with the given summary. */
export function makeEntry(server: string, tool: string, summary = `Summary of ${tool}.`, seed = 0): CacheEntry {
  const hash = fakeHash(seed);
  return {
    key: `${server}:${tool}:${hash}`,
    server,
    tool,
    hash,
    summary,
    params: {},
    summarizer: "extractive@1",
    prompt: "none",
    tokensBefore: 100,
    tokensAfter: 12,
    createdAt: "2026-11-21T10:00:00Z",
  };
}

/** The line `JsonlStore.append` writes for `entry`. */
export function lineOf(entry: CacheEntry): string {
  return `${JSON.stringify(entry)}\n`;
}
