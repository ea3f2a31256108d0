import { mkdir, open, readFile, stat, unlink } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import type { Config } from "../../config/schema.js";
import { configIdentity, configMismatch } from "../wire/configIdentity.js";
import { judgeLock, lockFilePath, readLock, type LockInfo } from "../wire/lockfile.js";
import { currentPid, isPidAlive } from "../wire/processInfo.js";
import type { DaemonStats } from "../wire/protocol.js";
import { AbridgeError, ErrorCode, isAbridgeError } from "../../model/errors.js";
import { silentLogger, type Logger } from "../../log/logger.js";
import { delay } from "../../model/timers.js";
import { ClientConnection } from "./clientConnection.js";
import { spawnDaemon, type SpawnedDaemon } from "./spawnDaemon.js";

/** Name of the marker one spawner holds while it starts a daemon. */
const SPAWN_LOCK_NAME = "abridge.spawn.lock";
/** How often the lockfile is looked at while waiting. */
const POLL_MS = 50;

/** Options of {@link ensureDaemon}. */
export interface EnsureDaemonOptions {
  /** The daemon's state directory (lockfile, log); created 0700 if missing. */
  stateDir: string;
  /** The config file the daemon loads: a path, or a loaded config (its `source` is used). */
  config: string | Config;
  signal?: AbortSignal;
  /** How long to wait for a daemon to answer, spawn included (default 30 s). */
  timeoutMs?: number;
  /** Environment of a spawned daemon (default: this process's). */
  env?: Record<string, string | undefined>;
  /** `--log-level` of a spawned daemon (default `info`, written to `<stateDir>/daemon.log`). */
  logLevel?: string;
  /**
   * More `abridge daemon` arguments for a spawned daemon (`--socket PATH`, `--tcp`, `--heartbeat-ms N`,
   * `--read-only`, `--cache-dir DIR`). Paths should be absolute: the daemon runs in the config's folder.
   */
  daemonArgs?: readonly string[];
  logger?: Logger;
}

/** A daemon that answered. */
export interface DaemonHandle {
  /** The lockfile's content: pid, address, token, started, version, heartbeat. */
  info: LockInfo;
  /** Its `stats` answer to the ping. */
  stats: DaemonStats;
  /** True when this call started it. */
  spawned: boolean;
}

/**
 * Has the daemon at the lock's address prove that it holds the lock's token, then sends `stats`
 * with the token: the daemon is alive, it is the lock's, and the token is its own.
 *
 * @throws AbridgeError DAEMON_UNTRUSTED when the peer cannot prove it (the token is not sent),
 *   DAEMON_UNAVAILABLE when nothing answers, DAEMON_UNAUTHORIZED when the token is refused.
 */
export async function pingDaemon(info: LockInfo, options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<DaemonStats> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const connection = await ClientConnection.connect(info, { timeoutMs, ...(options.signal ? { signal: options.signal } : {}) });
  try {
    const response = await connection.request({ token: info.token, op: "stats" }, { timeoutMs, ...(options.signal ? { signal: options.signal } : {}) });
    if (!response.ok) {
      const code = response.error.code === ErrorCode.DAEMON_UNAUTHORIZED ? ErrorCode.DAEMON_UNAUTHORIZED : ErrorCode.DAEMON_UNAVAILABLE;
      throw new AbridgeError(code, `daemon refused the ping: ${response.error.message}`);
    }
    return response.stats;
  } finally {
    connection.close();
  }
}

function configPathOf(config: string | Config): string {
  if (typeof config === "string") return resolve(config);
  if (config.source === "<built-in>" || config.source === "") {
    throw new AbridgeError(ErrorCode.INPUT_INVALID, "ensureDaemon needs a config loaded from a file: the daemon loads it itself");
  }
  return config.source;
}

/**
 * Takes the spawn marker: only its holder spawns, the others wait for the lockfile. It is an
 * optimisation, not the guarantee (the daemon's own lock is): without it ten clients starting at
 * once would start ten daemons, nine of which would find the lock taken and exit.
 */
async function takeSpawnLock(file: string, staleMs: number): Promise<boolean> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(file, "wx", 0o600);
      await handle.writeFile(`${currentPid()}\n`);
      await handle.close();
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const [text, info] = await Promise.all([readFile(file, "utf8").catch(() => ""), stat(file).catch(() => undefined)]);
    const pid = Number.parseInt(text, 10);
    const abandoned = info !== undefined && (Date.now() - info.mtimeMs > staleMs || (Number.isInteger(pid) && !isPidAlive(pid)));
    if (!abandoned) return false;
    await unlink(file).catch(() => undefined);
  }
  return false;
}

async function logTail(file: string): Promise<string> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text.trim().split("\n").slice(-5).join("\n");
}

/**
 * Makes sure a daemon serves `stateDir` and returns it: reads the lockfile, checks the pid and
 * the token with a `stats` ping, spawns the daemon (detached) when none answers, and waits until
 * one does. Safe when many clients, in one process or several, call it at the same moment: one
 * of them spawns, the daemon's O_EXCL lock settles any remaining race, and everyone ends up
 * talking to the same daemon.
 *
 * A live daemon started for another config file, or for an older content of this one, is not
 * used: DAEMON_CONFIG_MISMATCH names both and says what to do (see {@link configMismatch}).
 *
 * @throws AbridgeError DAEMON_UNAVAILABLE when no daemon answers within `timeoutMs` (with the
 * tail of the daemon's log when it exited), DAEMON_CONFIG_MISMATCH, CANCELLED when `signal` aborts.
 */
export async function ensureDaemon(options: EnsureDaemonOptions): Promise<DaemonHandle> {
  const logger = options.logger ?? silentLogger;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  const stateDir = resolve(options.stateDir);
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const lockFile = lockFilePath(stateDir);
  const spawnLock = join(stateDir, SPAWN_LOCK_NAME);
  let spawned: SpawnedDaemon | undefined;
  let holdsSpawnLock = false;
  let lastError: unknown;
  const wanted = await configIdentity(configPathOf(options.config));
  try {
    for (;;) {
      if (options.signal?.aborted) throw new AbridgeError(ErrorCode.CANCELLED, "ensureDaemon cancelled", { cause: options.signal.reason });
      const seen = await readLock(lockFile);
      if (seen.state === "ok" && (await judgeLock(seen)) === "live") {
        const mismatch = configMismatch(seen.lock, wanted, stateDir);
        if (mismatch) throw mismatch;
        try {
          const stats = await pingDaemon(seen.lock, {
            timeoutMs: Math.max(500, Math.min(5_000, deadline - Date.now())),
            ...(options.signal ? { signal: options.signal } : {}),
          });
          return { info: seen.lock, stats, spawned: spawned !== undefined };
        } catch (err) {
          if (isAbridgeError(err, ErrorCode.CANCELLED)) throw err;
          if (isAbridgeError(err, ErrorCode.DAEMON_UNTRUSTED)) {
            // Only a nonce was sent. A daemon that replaced this lock's since it was read proves
            // its own token, not this one: looked at again. The same lock still there is not.
            const again = await readLock(lockFile);
            if (again.state === "ok" && again.lock.token === seen.lock.token) throw err;
          }
          // Starting up, shutting down, or the lock was just replaced: look again.
          lastError = err;
          logger.debug("daemon did not answer the ping", { error: err });
        }
      } else if (spawned === undefined || spawned.exitCode() === 0) {
        // No daemon, or ours lost a race to one that has since gone: spawn (if we get the marker).
        holdsSpawnLock ||= await takeSpawnLock(spawnLock, timeoutMs);
        if (holdsSpawnLock) {
          const configPath = configPathOf(options.config);
          spawned = spawnDaemon({
            stateDir,
            configPath,
            cwd: dirname(configPath),
            ...(options.env ? { env: options.env } : {}),
            ...(options.logLevel ? { logLevel: options.logLevel } : {}),
            ...(options.daemonArgs ? { extraArgs: options.daemonArgs } : {}),
          });
          logger.info("daemon spawned", { pid: spawned.pid, stateDir });
        }
      } else if (spawned.exitCode() !== undefined) {
        const tail = await logTail(spawned.logFile);
        throw new AbridgeError(
          ErrorCode.DAEMON_UNAVAILABLE,
          `the daemon exited with code ${String(spawned.exitCode())} before answering (log ${spawned.logFile})${tail ? `:\n${tail}` : ""}`,
        );
      }
      if (Date.now() >= deadline) {
        throw new AbridgeError(ErrorCode.DAEMON_UNAVAILABLE, `no daemon answered within ${timeoutMs} ms (state dir ${stateDir})`, {
          retryable: true,
          ...(lastError !== undefined ? { cause: lastError } : {}),
        });
      }
      await delay(POLL_MS, options.signal);
    }
  } finally {
    if (holdsSpawnLock) await unlink(spawnLock).catch(() => undefined);
  }
}
