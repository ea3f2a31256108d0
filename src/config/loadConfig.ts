import { readFile } from "node:fs/promises";
import path from "node:path";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import { silentLogger } from "../log/logger.js";
import type { Logger, SecretSet } from "../log/logger.js";
import type { EnvMap } from "./expandVars.js";
import { findConfigFile, throwIfCancelled } from "./findConfigPath.js";
import { parseConfigText } from "./parseConfigText.js";
import type { Config } from "./schema.js";

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /** From `--config`; otherwise the file is looked for (see `findConfigPath`). */
  configPath?: string | undefined;
  /** Folder `./abridge.toml` and relative `--config` paths are taken from. */
  cwd: string;
  /** Environment for `${VAR}` expansion and the lookup (`ABRIDGE_CONFIG`, `XDG_CONFIG_HOME`, `HOME`). */
  env: EnvMap;
  /** Filled with values expanded into `env` and `headers`; share it with the logger. */
  secrets?: SecretSet;
  logger?: Logger;
  signal?: AbortSignal;
}

/**
 * Finds, reads, expands and validates the config file. Errors: `CONFIG_NOT_FOUND` (nothing to
 * read), `CONFIG_INVALID` (one error listing every problem), `CANCELLED`.
 */
export async function loadConfig(options: LoadConfigOptions): Promise<Config> {
  const logger = options.logger ?? silentLogger;
  const found = await findConfigFile(options);
  const file = found.path;
  let text: string;
  try {
    text = await readFile(file, { encoding: "utf8", ...(options.signal ? { signal: options.signal } : {}) });
  } catch (err) {
    throwIfCancelled(options.signal);
    const code = (err as NodeJS.ErrnoException).code;
    // Deleted between lookup and read: still "not found", not "invalid".
    const errorCode = code === "ENOENT" ? ErrorCode.CONFIG_NOT_FOUND : ErrorCode.CONFIG_INVALID;
    throw new AbridgeError(errorCode, `cannot read config file ${file}: ${messageOf(err)}`, { cause: err });
  }
  const config = parseConfigText(text, {
    file,
    displayName: found.fromCwd ? displayName(file, options.cwd) : file,
    env: options.env,
    logger,
    ...(options.secrets ? { secrets: options.secrets } : {}),
  });
  if (config.servers.length === 0) logger.warn("config has no servers", { source: file });
  logger.debug("config loaded", { source: file, servers: config.servers.length });
  return config;
}

/** A path relative to `cwd` when the file is inside it (shorter lines), else the absolute path. */
function displayName(file: string, cwd: string): string {
  const relative = path.relative(cwd, file);
  return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative) ? relative : file;
}

// Re-exported so callers that load config find the pure parser and the lookup in one place.
export { parseConfigText } from "./parseConfigText.js";
export type { ParseConfigOptions } from "./parseConfigText.js";
export { findConfigPath } from "./findConfigPath.js";
export type { FindConfigPathOptions } from "./findConfigPath.js";
