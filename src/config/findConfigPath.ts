import { stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import type { EnvMap } from "./expandVars.js";

/** Options of {@link findConfigPath}. */
export interface FindConfigPathOptions {
  /** From `--config`; wins over everything else. Relative to `cwd`. */
  configPath?: string | undefined;
  cwd: string;
  env: EnvMap;
  signal?: AbortSignal;
}

/** One place {@link findConfigPath} looks, in order. */
export interface ConfigCandidate {
  path: string;
  /** Where the candidate came from, for messages: `--config`, `$ABRIDGE_CONFIG`, ... */
  origin: string;
  /** An explicit path must exist; a default location is merely tried. */
  explicit: boolean;
  /**
   * The path was given or looked for relative to the current folder (`--config`,
   * `$ABRIDGE_CONFIG`, `./abridge.toml`), so messages may show it relative to that folder; the XDG
   * file is shown by its absolute path, which is where the user finds it from anywhere.
   */
  fromCwd: boolean;
}

/**
 * The places a config file is looked for, in order: `--config`, `$ABRIDGE_CONFIG`,
 * `./abridge.toml`, `$XDG_CONFIG_HOME/abridge/abridge.toml` (XDG default `~/.config`). An explicit
 * path (the first two) stops the list: if the user named a file, silently falling back to another
 * one would run servers they did not ask for.
 */
export function configCandidates(options: Omit<FindConfigPathOptions, "signal">): ConfigCandidate[] {
  if (options.configPath !== undefined && options.configPath !== "") {
    return [{ path: path.resolve(options.cwd, options.configPath), origin: "--config", explicit: true, fromCwd: true }];
  }
  const fromEnv = options.env["ABRIDGE_CONFIG"];
  if (fromEnv !== undefined && fromEnv !== "") {
    return [{ path: path.resolve(options.cwd, fromEnv), origin: "$ABRIDGE_CONFIG", explicit: true, fromCwd: true }];
  }
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
  const xdg = options.env["XDG_CONFIG_HOME"];
  const home = options.env["HOME"] ?? os.homedir();
  const configHome = xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(home, ".config");
  return [
    { path: path.resolve(options.cwd, "abridge.toml"), origin: "./abridge.toml", explicit: false, fromCwd: true },
    { path: path.join(configHome, "abridge", "abridge.toml"), origin: "$XDG_CONFIG_HOME/abridge/abridge.toml", explicit: false, fromCwd: false },
  ];
}

/** Throws `CANCELLED` (keeping the abort reason) when `signal` has fired. */
export function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new AbridgeError(ErrorCode.CANCELLED, "config loading was cancelled", { cause: signal.reason });
  }
}

async function isFile(file: string): Promise<"file" | "dir" | "missing"> {
  try {
    const info = await stat(file);
    return info.isDirectory() ? "dir" : "file";
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return "missing";
    throw new AbridgeError(ErrorCode.CONFIG_NOT_FOUND, `cannot look at config file ${file}: ${messageOf(err)}`, {
      cause: err,
    });
  }
}

/** The example config of a checkout, relative to its root: suggested only where it is there. */
const EXAMPLE_CONFIG = path.join("examples", "abridge.toml");

/**
 * Absolute path of the config file to load (see {@link configCandidates} for the order).
 * Throws `CONFIG_NOT_FOUND` naming an explicit path that does not exist, or listing every place
 * searched when none of the defaults exists.
 */
export async function findConfigPath(options: FindConfigPathOptions): Promise<string> {
  return (await findConfigFile(options)).path;
}

/** The candidate {@link findConfigPath} settles on: its absolute path and where it came from. */
export async function findConfigFile(options: FindConfigPathOptions): Promise<ConfigCandidate> {
  const candidates = configCandidates(options);
  for (const candidate of candidates) {
    throwIfCancelled(options.signal);
    const kind = await isFile(candidate.path);
    if (kind === "file") return candidate;
    if (candidate.explicit) {
      const why = kind === "dir" ? "is a directory" : "does not exist";
      throw new AbridgeError(ErrorCode.CONFIG_NOT_FOUND, `config file ${candidate.path} (from ${candidate.origin}) ${why}`, {
        details: { searched: [candidate.path] },
      });
    }
  }
  const searched = candidates.map((c) => c.path);
  // The example works only from a checkout's root; elsewhere the hint names what works anywhere.
  const example = (await isFile(path.resolve(options.cwd, EXAMPLE_CONFIG))) === "file";
  const xdg = candidates.find((c) => !c.fromCwd)?.path;
  const hint = example
    ? `Pass one with --config <file> (try --config ${EXAMPLE_CONFIG}) or set ABRIDGE_CONFIG.`
    : `Create ${xdg !== undefined ? `${xdg} (found from any folder) or ` : ""}abridge.toml in this folder, pass one with --config <file>, or set ABRIDGE_CONFIG.`;
  throw new AbridgeError(
    ErrorCode.CONFIG_NOT_FOUND,
    ["no config file found; looked in:", ...candidates.map((c) => `  ${c.path}  (${c.origin})`), hint].join("\n"),
    {
      details: { searched },
    },
  );
}
