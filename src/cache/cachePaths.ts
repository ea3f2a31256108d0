import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Config } from "../config/schema.js";

/** Name of the summary cache file inside the cache directory. */
export const CACHE_FILE_NAME = "summaries.jsonl";

/**
 * The npm package name that marks abridge's own root when walking up from this module. Scoped:
 * `abridge` on the registry is an unrelated package.
 */
export const PACKAGE_NAME = "@abridge-mcp/abridge";

/** abridge's folder under the XDG cache and state homes (the config lookup uses the same name). */
export const APP_DIR_NAME = "abridge";

/** Environment lookups the resolvers use; `process.env` fits. */
export type PathEnv = Readonly<Record<string, string | undefined>>;

/** Inputs of {@link resolveCacheDir} and {@link resolveCacheFile}, highest precedence first. */
export interface CachePathOptions {
  /** `--cache-dir` from the command line. */
  flag?: string;
  /** Reads `ABRIDGE_CACHE_DIR`, `XDG_CACHE_HOME` and `HOME`. */
  env: PathEnv;
  /** `cache_dir` from the config file (resolve it against the config's folder first if wanted). */
  configCacheDir?: string;
  /** Relative paths are resolved against this. */
  cwd: string;
  /** Home directory; defaults to `env.HOME`, then `os.homedir()`. */
  home?: string;
  /**
   * abridge's package root. Undefined: found by walking up from this module. `null`: treat abridge
   * as installed (no checkout), which tests use to reach the XDG default.
   */
  packageRoot?: string | null;
}

/** Inputs of {@link resolveStateDir}, highest precedence first. */
export interface StatePathOptions {
  /** `--state-dir` from the command line. */
  flag?: string;
  /** Reads `ABRIDGE_STATE_DIR`, `XDG_STATE_HOME` and `HOME`. */
  env: PathEnv;
  /** `state_dir` from the config file. */
  configStateDir?: string;
  cwd: string;
  home?: string;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}

function homeOf(options: { env: PathEnv; home?: string }): string {
  return options.home ?? nonEmpty(options.env.HOME) ?? homedir();
}

/** Resolves a user-given path: `~` and `~/...` expand to the home directory, relative to `cwd`. */
function userPath(path: string, cwd: string, home: string): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return resolve(cwd, path);
}

/**
 * An XDG base directory, or its fallback. The XDG spec says a relative value is invalid and must
 * be ignored, so a stray `XDG_CACHE_HOME=cache` does not scatter caches over working directories.
 */
function xdgDir(value: string | undefined, fallback: string): string {
  const dir = nonEmpty(value);
  return dir !== undefined && isAbsolute(dir) ? dir : fallback;
}

/**
 * Walks up from `startDir` to the first folder whose `package.json` is named `name`; undefined
 * when there is none (e.g. abridge bundled into another program).
 */
export function findPackageRoot(startDir: string, name: string = PACKAGE_NAME): string | undefined {
  let dir = resolve(startDir);
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      try {
        const parsed = JSON.parse(readFileSync(manifest, "utf8")) as { name?: unknown };
        if (parsed.name === name) return dir;
      } catch {
        // An unreadable or broken package.json of some other folder: keep walking.
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/**
 * `<root>/cache` when `root` is a git checkout (a `.git` folder, or a `.git` file in a worktree):
 * a developer running abridge from its repository keeps the cache next to the code, where
 * `.gitignore` covers it, instead of mixing it with an installed abridge's cache.
 */
function checkoutCacheDir(root: string | undefined): string | undefined {
  return root !== undefined && existsSync(join(root, ".git")) ? join(root, "cache") : undefined;
}

/**
 * The cache directory: `--cache-dir`, then `$ABRIDGE_CACHE_DIR`, then config `cache_dir`, then
 * `<repo>/cache/` when abridge runs from its own git checkout, else `$XDG_CACHE_HOME/abridge/`
 * (default `~/.cache/abridge/`). Always absolute.
 */
export function resolveCacheDir(options: CachePathOptions): string {
  const home = homeOf(options);
  const explicit = nonEmpty(options.flag) ?? nonEmpty(options.env.ABRIDGE_CACHE_DIR) ?? nonEmpty(options.configCacheDir);
  if (explicit !== undefined) return userPath(explicit, options.cwd, home);
  const root = options.packageRoot === null ? undefined : (options.packageRoot ?? findPackageRoot(dirname(fileURLToPath(import.meta.url))));
  return checkoutCacheDir(root) ?? join(xdgDir(options.env.XDG_CACHE_HOME, join(home, ".cache")), APP_DIR_NAME);
}

/** The path of `summaries.jsonl` in {@link resolveCacheDir}'s directory. */
export function resolveCacheFile(options: CachePathOptions): string {
  return join(resolveCacheDir(options), CACHE_FILE_NAME);
}

/**
 * The state directory (daemon lockfile, spilled outputs): `--state-dir`, then
 * `$ABRIDGE_STATE_DIR`, then config `state_dir`, else `$XDG_STATE_HOME/abridge`
 * (default `~/.local/state/abridge`). Always absolute.
 */
export function resolveStateDir(options: StatePathOptions): string {
  const home = homeOf(options);
  const explicit = nonEmpty(options.flag) ?? nonEmpty(options.env.ABRIDGE_STATE_DIR) ?? nonEmpty(options.configStateDir);
  if (explicit !== undefined) return userPath(explicit, options.cwd, home);
  return join(xdgDir(options.env.XDG_STATE_HOME, join(home, ".local", "state")), APP_DIR_NAME);
}

/**
 * The spool of a Redis summary cache: `<state_dir>/redis-spool/<host>-<port>-<db>.jsonl`, one per
 * server and database, so bridges of one machine using different caches never flush into the
 * wrong one. `identity` is `host:port/db` (no credentials: the name is visible in listings).
 */
export function redisSpoolFile(stateDir: string, identity: string): string {
  return join(stateDir, "redis-spool", `${identity.replace(/[^A-Za-z0-9.]+/g, "-")}.jsonl`);
}

/**
 * The state dir of a bridge on `config` when none is given: `$ABRIDGE_STATE_DIR`, then config
 * `state_dir`, then the default; relative paths are taken from the config file's folder. The
 * spilled outputs and a shared cache's spool both live under it.
 */
export function bridgeStateDir(config: Pick<Config, "state_dir" | "source">, env: PathEnv): string {
  return resolveStateDir({
    env,
    ...(config.state_dir !== undefined ? { configStateDir: config.state_dir } : {}),
    cwd: isAbsolute(config.source) ? dirname(config.source) : resolve("."),
  });
}
