import path from "node:path";
import { clearCache, compactCache, verifyCache, type ClearReport, type CompactReport, type VerifyReport } from "../cache/cacheMaintenance.js";
import { resolveCacheFile, resolveStateDir, type PathEnv } from "../cache/cachePaths.js";
import type { Config } from "../config/schema.js";
import { guardCachedEntry } from "../summarize/guard.js";

export type { ClearReport, CompactReport, VerifyReport } from "../cache/cacheMaintenance.js";

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
export function verifySummaryCache(file: string, options: { signal?: AbortSignal } = {}): Promise<VerifyReport> {
  return verifyCache(file, {
    ...options,
    check: (entry) => {
      const verdict = guardCachedEntry(entry);
      return verdict.ok ? [] : verdict.reasons;
    },
  });
}

/** Rewrites a summary cache atomically with one line per live key (invalid and superseded lines go). */
export function compactSummaryCache(file: string, options: { signal?: AbortSignal } = {}): Promise<CompactReport> {
  return compactCache(file, options);
}

/** Removes every line of a summary cache, or only those of `server`. */
export function clearSummaryCache(file: string, options: { server?: string; signal?: AbortSignal } = {}): Promise<ClearReport> {
  return clearCache(file, options);
}
