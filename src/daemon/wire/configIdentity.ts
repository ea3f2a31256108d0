import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { AbridgeError, ErrorCode, messageOf } from "../../model/errors.js";

/**
 * Which config a daemon serves: the absolute path of its file and a hash of the file's bytes.
 * Recorded in the lockfile and in `stats`, so a client that asks for one config is never
 * silently served by a daemon started for another one in the same (per-user) state dir.
 */
export interface ConfigIdentity {
  configPath: string;
  /** `sha256:<hex>` of the file's bytes as the daemon read them at start. */
  configHash: string;
}

/** Hashes bytes the way {@link ConfigIdentity.configHash} does. */
export function hashConfigText(bytes: Buffer | string): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/**
 * The identity of the config file at `file` (resolved against the working directory).
 *
 * @throws AbridgeError CONFIG_NOT_FOUND when the file cannot be read.
 */
export async function configIdentity(file: string): Promise<ConfigIdentity> {
  const configPath = resolve(file);
  let bytes: Buffer;
  try {
    bytes = await readFile(configPath);
  } catch (err) {
    throw new AbridgeError(ErrorCode.CONFIG_NOT_FOUND, `cannot read config ${configPath}: ${messageOf(err)}`, { cause: err });
  }
  return { configPath, configHash: hashConfigText(bytes) };
}

/**
 * The DAEMON_CONFIG_MISMATCH error when the running daemon (`running`, from its lockfile) serves
 * another config than `wanted`, else undefined. The same path with other content is a mismatch
 * too: the daemon read the file once, at start, and would go on serving the old servers; it is
 * stopped and started again (not reloaded behind the user's back) so that `mode`, `[summary]` and
 * environment references take effect as well. A lock without identity (written by an older
 * daemon) is accepted: nothing can be compared.
 */
export function configMismatch(
  running: { pid: number; configPath?: string | undefined; configHash?: string | undefined },
  wanted: ConfigIdentity,
  stateDir: string,
): AbridgeError | undefined {
  if (running.configPath === undefined || running.configHash === undefined) return undefined;
  if (running.configPath === wanted.configPath && running.configHash === wanted.configHash) return undefined;
  const what =
    running.configPath === wanted.configPath
      ? `${wanted.configPath} has changed since the daemon (pid ${running.pid}) loaded it`
      : `the daemon running for state dir ${stateDir} (pid ${running.pid}) serves ${running.configPath}, not ${wanted.configPath}`;
  return new AbridgeError(
    ErrorCode.DAEMON_CONFIG_MISMATCH,
    `${what}; stop it (\`abridge daemon stop --state-dir ${stateDir}\`) or use another --state-dir for this config`,
    { details: { stateDir, runningConfig: running.configPath, wantedConfig: wanted.configPath } },
  );
}
