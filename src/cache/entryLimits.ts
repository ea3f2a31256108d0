import type { CacheEntry } from "./cacheEntry.js";
import { parseCacheLine, type ParsedCacheLine } from "./parseCacheLine.js";

/**
 * Largest cache entry, as its JSON line in UTF-8 (newline not counted). An entry is a summary of a
 * tool plus its parameters' summaries: the largest tool of the 129 corpus servers (draw.io's
 * `open_drawio_xml`) is 38 KB even with its whole original description as the "summary", and the
 * median entry is under 1 KB. An entry over this is refused at write and skipped at load, in
 * verify and when heard on the channel, so one value cannot cost a bridge its memory.
 */
export const MAX_ENTRY_BYTES = 64 * 1024;

/**
 * How far past a reader's clock an entry's `createdAt` may be: the clocks of two hosts may
 * disagree by this much. A writer never dates an entry after its own clock (see
 * {@link clampCreatedAt}), so an entry dated later than this is forged or corrupt, and since
 * the newest `createdAt` of a key wins, serving it would pin it over every later summary.
 */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;

/**
 * `createdAt` as abridge writes it: ISO-8601 in UTC (`Date.toISOString`, milliseconds optional).
 * Only in this shape does comparing the strings (as the Redis write script does) compare times.
 */
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** Why `createdAt` cannot be served at `now`, or undefined when it can. */
export function createdAtProblem(createdAt: string, now: number = Date.now()): string | undefined {
  const at = ISO_UTC.test(createdAt) ? Date.parse(createdAt) : Number.NaN;
  if (Number.isNaN(at)) return `createdAt ${JSON.stringify(createdAt.slice(0, 40))} is not an ISO-8601 UTC time`;
  if (at > now + MAX_CLOCK_SKEW_MS) return `createdAt ${createdAt} is more than ${MAX_CLOCK_SKEW_MS / 60_000} minutes ahead of this host's clock`;
  return undefined;
}

/** The latest `createdAt` a reader at `now` accepts, in the same shape (for the Redis write script). */
export function latestAcceptedCreatedAt(now: number = Date.now()): string {
  return new Date(now + MAX_CLOCK_SKEW_MS).toISOString();
}

/**
 * `entry` dated no later than the writer's clock: a `createdAt` after `now`, or not an ISO-8601
 * UTC time, becomes `now`. Applied to every entry a store writes, so a summarizer's clock or an
 * imported file cannot date an entry into the future.
 */
export function clampCreatedAt<T extends { createdAt: string }>(entry: T, now: number = Date.now()): T {
  const at = ISO_UTC.test(entry.createdAt) ? Date.parse(entry.createdAt) : Number.NaN;
  if (!Number.isNaN(at) && at <= now) return entry;
  return { ...entry, createdAt: new Date(now).toISOString() };
}

/**
 * The UTF-8 length of `text` when it is over `limit` bytes, else undefined; measures only strings
 * whose UTF-16 length leaves it in doubt.
 */
export function bytesOver(text: string, limit: number = MAX_ENTRY_BYTES): number | undefined {
  if (text.length > limit) return Buffer.byteLength(text);
  if (text.length * 3 <= limit) return undefined;
  const bytes = Buffer.byteLength(text);
  return bytes > limit ? bytes : undefined;
}

/** Why an entry of `bytes` bytes is refused. */
export function oversizedReason(bytes: number): string {
  return `entry of ${bytes} bytes, over the ${MAX_ENTRY_BYTES}-byte bound`;
}

/** Result of {@link parseStoredLine}: `oversized` is set (with the byte count) for an entry over the bound. */
export type StoredLine = ParsedCacheLine | { ok: false; reason: string; oversized: number };

/**
 * A stored entry as a store may serve it: the line within {@link MAX_ENTRY_BYTES}, a valid entry
 * ({@link parseCacheLine}), dated no later than the clock-skew allowance past `now`. What every
 * load, every entry heard from other hosts, `cache verify` and `compact` go through.
 */
export function parseStoredLine(text: string, now: number = Date.now()): StoredLine {
  const over = bytesOver(text);
  if (over !== undefined) return { ok: false, reason: oversizedReason(over), oversized: over };
  const parsed = parseCacheLine(text);
  if (!parsed.ok) return parsed;
  const dated = createdAtProblem(parsed.entry.createdAt, now);
  return dated === undefined ? parsed : { ok: false, reason: dated };
}

/** {@link parseStoredLine}'s checks for an entry already parsed (its line `bytes` long). */
export function storedEntryProblem(entry: CacheEntry, bytes: number, now: number = Date.now()): string | undefined {
  if (bytes > MAX_ENTRY_BYTES) return oversizedReason(bytes);
  return createdAtProblem(entry.createdAt, now);
}
