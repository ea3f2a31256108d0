/**
 * The options and tuning of a daemon (`daemon.ts`): its bounds, where it listens, why it stops and
 * what it counts. Kept apart so the daemon's module holds its start-up, requests and shutdown.
 */
import { resolve } from "node:path";
import type { Config } from "../../config/schema.js";
import type { BridgeOptions } from "../../core/bridge.js";
import type { Logger } from "../../log/logger.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { hasUnixSockets, SOCKET_FILE_NAME, socketPathProblem, type ListenTarget } from "./daemonListener.js";

/** Default heartbeat of the lockfile. */
export const DEFAULT_HEARTBEAT_MS = 5_000;
/** Default time `close` lets calls in flight finish before aborting them. */
export const DEFAULT_GRACE_MS = 10_000;
/** At most one "request refused" line per this window; the rest are counted. */
export const REFUSAL_LOG_WINDOW_MS = 10_000;
/**
 * Connections that have not shown the token yet, at most (64). Past it the oldest of them is
 * closed to make room: a flood of idle connections (1,100 under `ulimit -n 1024` used every
 * descriptor) cannot lock the token holder out, whose connection shows the token in its first
 * bytes and so never stays long among them. Node cannot read a unix socket's peer uid, so the
 * bound is for all peers together.
 */
export const MAX_UNAUTHENTICATED_CONNECTIONS = 64;
/** Connections that have shown the token, at most; past it a new one is refused (the OS limit is near). */
export const MAX_AUTHENTICATED_CONNECTIONS = 512;

/** Options of {@link Daemon.start}. */
export interface DaemonOptions {
  config: Config;
  /** Holds the lockfile; created (0700) if missing. */
  stateDir: string;
  /** Path of `summaries.jsonl`. */
  cacheFile: string;
  /** Environment for the summarizer's API key. */
  env: Record<string, string | undefined>;
  logger?: Logger;
  /**
   * Listen on this unix socket. By default the daemon listens on `<stateDir>/daemon.sock` where the
   * platform has unix sockets and that path fits one, else on a free loopback TCP port.
   */
  socketPath?: string;
  /** Listen on a free loopback TCP port even where a unix socket is available. */
  tcp?: boolean;
  /** Exit after this long without a request or a call in flight (default: config `idle_timeout_minutes`). */
  idleTimeoutMs?: number;
  /** How often the lockfile's heartbeat is rewritten (default 5 s). */
  heartbeatMs?: number;
  /** Longest request line (default 16 MiB). */
  maxLineBytes?: number;
  /** How long a connection may stay without showing the token (default 10 s). */
  preAuthDeadlineMs?: number;
  /** Extra options of the {@link Bridge} (a summarizer, a shorter backoff in tests). */
  bridge?: Omit<BridgeOptions, "config" | "cacheFile" | "env" | "logger">;
  signal?: AbortSignal;
}

/**
 * Where a daemon listens: `socketPath` when given; loopback TCP when asked for (`tcp`) or where
 * the platform has no unix sockets; else `<stateDir>/daemon.sock`, unless that path is too long
 * for a unix socket, when TCP is used and a warning says why.
 */
export function listenTarget(options: DaemonOptions, logger: Logger): ListenTarget {
  if (options.socketPath !== undefined) {
    if (options.tcp) throw new AbridgeError(ErrorCode.INPUT_INVALID, "choose one of a unix socket path and TCP, not both");
    return { kind: "unix", path: options.socketPath };
  }
  if (options.tcp || !hasUnixSockets()) return { kind: "tcp" };
  const path = resolve(options.stateDir, SOCKET_FILE_NAME);
  const problem = socketPathProblem(path);
  if (problem === undefined) return { kind: "unix", path };
  logger.warn("listening on loopback TCP instead of a unix socket", { reason: problem });
  return { kind: "tcp" };
}

/** Why a daemon stopped. */
export type DaemonCloseReason = "idle" | "shutdown" | "signal" | "lost-lock" | "closed";

/** Options of {@link Daemon.close}. */
export interface DaemonCloseOptions {
  /** How long calls in flight may take to finish before they are aborted (default 10 s). */
  graceMs?: number;
  reason?: DaemonCloseReason;
}

/** Counters the daemon keeps besides the bridge's. */
export interface DaemonCounters {
  connections: number;
  requests: number;
  refused: number;
  badRequests: number;
  /** Connections closed without a token to make room for new ones. */
  evicted: number;
}
