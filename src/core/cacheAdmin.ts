import path from "node:path";
import type { CacheEntry } from "../cache/cacheEntry.js";
import {
  clearCache,
  compactCache,
  readCacheEntries,
  verifyCache,
  type ClearReport,
  type CompactReport,
  type InvalidLine,
  type VerifyReport,
} from "../cache/cacheMaintenance.js";
import { resolveCacheFile, resolveStateDir, type PathEnv } from "../cache/cachePaths.js";
import { JsonlStore } from "../cache/jsonlStore.js";
import { writeFileAtomic } from "../cache/writeFileAtomic.js";
import { parseRedisUrl } from "../config/redisUrl.js";
import type { Config } from "../config/schema.js";
import { guardCachedEntry } from "../summarize/guard.js";

export type { ClearReport, CompactReport, InvalidLine, VerifyReport } from "../cache/cacheMaintenance.js";

/** A summary cache to maintain: the path of a `summaries.jsonl`, or a Redis `cache_url`. */
export type CacheLocation = string | { url: string };

/** Report of {@link exportSummaryCache}. */
export interface ExportReport {
  /** Where the entries came from (a file path, or the URL without its password). */
  from: string;
  /** Entries written to the file. */
  entries: number;
}

/** Report of {@link importSummaryCache}. */
export interface ImportReport {
  /** Where the entries went. */
  to: string;
  /** Valid entries in the file (newest per key). */
  read: number;
  /** Entries written into the cache. */
  imported: number;
  /** Entries left out because the cache holds a newer summary of the same key. */
  kept: number;
  /** Lines of the file that are not valid entries (nothing is imported from them). */
  invalid: InvalidLine[];
}

/** The Redis side (and ioredis with it), loaded only when a command names a Redis cache. */
function redisMaintenance(): Promise<typeof import("../cache/redisMaintenance.js")> {
  return import("../cache/redisMaintenance.js");
}

/** Where a location is, for messages: the path, or the URL without its password. */
export function describeLocation(cache: CacheLocation): string {
  if (typeof cache === "string") return cache;
  const parsed = parseRedisUrl(cache.url);
  return parsed.ok ? parsed.target.display : "cache_url";
}

/** Where a command looks for the summary cache or the state dir, highest precedence first. */
export interface LocationOptions {
  /** `--cache-dir` or `--state-dir` from the command line. */
  flag?: string;
  /** Reads `ABRIDGE_CACHE_DIR`/`ABRIDGE_STATE_DIR`, the XDG variables and `HOME`. */
  env: PathEnv;
  /** The config's `cache_dir`/`state_dir`, taken relative to the config file's folder. */
  config?: Pick<Config, "cache_dir" | "state_dir" | "source">;
  /** Relative paths (the flag, the variables) are resolved against this. */
  cwd: string;
}

/** A folder the config names, resolved against the folder of the config file that names it. */
function configRelative(config: LocationOptions["config"], dir: string | undefined): string | undefined {
  return dir === undefined || config === undefined ? undefined : path.resolve(path.dirname(config.source), dir);
}

/** The `summaries.jsonl` a command uses: the flag, `$ABRIDGE_CACHE_DIR`, config `cache_dir`, the default. */
export function summaryCacheFile(options: LocationOptions): string {
  const configCacheDir = configRelative(options.config, options.config?.cache_dir);
  return resolveCacheFile({
    ...(options.flag !== undefined ? { flag: options.flag } : {}),
    env: options.env,
    ...(configCacheDir !== undefined ? { configCacheDir } : {}),
    cwd: options.cwd,
  });
}

/** The state dir (daemon lockfile and log, spilled outputs): the flag, `$ABRIDGE_STATE_DIR`, config `state_dir`, the default. */
export function stateDir(options: LocationOptions): string {
  const configStateDir = configRelative(options.config, options.config?.state_dir);
  return resolveStateDir({
    ...(options.flag !== undefined ? { flag: options.flag } : {}),
    env: options.env,
    ...(configStateDir !== undefined ? { configStateDir } : {}),
    cwd: options.cwd,
  });
}

/**
 * Checks every line of a summary cache: torn or invalid lines, and entries the summary guard would
 * refuse to serve whatever the tool (a line edited to give the model instructions, or carrying
 * terminal escape sequences). The checks that need the tool itself (longer than the original,
 * parameters it lacks) run when a bridge loads the entry. A missing file is
 * an empty, valid cache.
 */
export function verifySummaryCache(cache: CacheLocation, options: { signal?: AbortSignal } = {}): Promise<VerifyReport> {
  const check = (entry: CacheEntry): string[] => {
    const verdict = guardCachedEntry(entry);
    return verdict.ok ? [] : verdict.reasons;
  };
  return typeof cache === "string" ? verifyCache(cache, { ...options, check }) : redisMaintenance().then((redis) => redis.verifyRedisCache(cache, { check }));
}

/**
 * Rewrites a summary cache atomically with one line per live key (invalid and superseded lines
 * go); on Redis, removes the fields that are not valid entries.
 */
export function compactSummaryCache(cache: CacheLocation, options: { signal?: AbortSignal } = {}): Promise<CompactReport> {
  return typeof cache === "string" ? compactCache(cache, options) : redisMaintenance().then((redis) => redis.compactRedisCache(cache));
}

/** Removes every entry of a summary cache, or only those of `server`. */
export function clearSummaryCache(cache: CacheLocation, options: { server?: string; signal?: AbortSignal } = {}): Promise<ClearReport> {
  return typeof cache === "string"
    ? clearCache(cache, options)
    : redisMaintenance().then((redis) => redis.clearRedisCache(cache, options.server === undefined ? {} : { server: options.server }));
}

/**
 * Writes every valid entry of a cache (file or Redis) to `file` as JSONL, atomically: what
 * `import` reads, and what a JSONL store serves as it is.
 */
export async function exportSummaryCache(cache: CacheLocation, file: string, options: { signal?: AbortSignal } = {}): Promise<ExportReport> {
  const { from, entries } =
    typeof cache === "string"
      ? { from: cache, entries: (await readCacheEntries(cache, options)).entries }
      : await (await redisMaintenance()).readRedisEntries(cache).then((read) => ({ from: read.location, entries: read.entries }));
  await writeFileAtomic(file, entries.map((entry) => `${JSON.stringify(entry)}\n`).join(""), options.signal);
  return { from, entries: entries.length };
}

/**
 * Reads the entries of a JSONL file into a cache (file or Redis). Newest wins: an entry is left
 * out where the cache holds a newer summary of its key. Invalid lines are reported, not imported.
 */
export async function importSummaryCache(cache: CacheLocation, file: string, options: { signal?: AbortSignal } = {}): Promise<ImportReport> {
  const read = await readCacheEntries(file, options);
  const base = { to: describeLocation(cache), read: read.entries.length, invalid: read.invalid };
  if (typeof cache !== "string") {
    const written = await (await redisMaintenance()).writeRedisEntries(cache, read.entries);
    return { ...base, imported: written.written, kept: written.kept };
  }
  const store = await JsonlStore.open({ file: cache, ...(options.signal ? { signal: options.signal } : {}) });
  let imported = 0;
  try {
    for (const entry of read.entries) {
      const current = store.get(entry.key);
      if (current !== undefined && current.createdAt >= entry.createdAt) continue;
      await store.append(entry);
      imported += 1;
    }
  } finally {
    await store.close();
  }
  return { ...base, imported, kept: read.entries.length - imported };
}
