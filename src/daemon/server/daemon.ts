import { mkdir } from "node:fs/promises";
import type { Server, Socket } from "node:net";
import { tokenReport } from "../../core/toolViews.js";
import type { Mode } from "../../config/schema.js";
import type { Config } from "../../config/schema.js";
import { Bridge, START_WAIT_SLACK_MS } from "../../core/bridge.js";
import { silentLogger, type Logger } from "../../log/logger.js";
import { toolUri } from "../../model/names.js";
import { delay } from "../../model/timers.js";
import { VERSION } from "../../model/version.js";
import { configIdentity, type ConfigIdentity } from "../wire/configIdentity.js";
import { RateLimitedLog } from "../../log/rateLimitedLog.js";
import { acquireLock, lockFilePath, newToken, refreshLock, releaseLock, type LockInfo } from "../wire/lockfile.js";
import { bindListener, closeServer, publishSocket, removeSocket, type SocketFile, type WaitingRoom } from "./daemonListener.js";
import { DaemonSession, type HandlerResult, type SessionHost } from "./daemonSession.js";
import { daemonTools, declarationRequest } from "./daemonTools.js";
import {
  DEFAULT_GRACE_MS,
  DEFAULT_HEARTBEAT_MS,
  listenTarget,
  MAX_AUTHENTICATED_CONNECTIONS,
  MAX_UNAUTHENTICATED_CONNECTIONS,
  REFUSAL_LOG_WINDOW_MS,
  type DaemonCloseOptions,
  type DaemonCloseReason,
  type DaemonCounters,
  type DaemonOptions,
} from "./daemonOptions.js";
import { currentPid } from "../wire/processInfo.js";
import { formatAddress, MAX_LINE_BYTES, wireRun, type BridgeRequest, type DaemonStats } from "../wire/protocol.js";

export {
  DEFAULT_GRACE_MS,
  DEFAULT_HEARTBEAT_MS,
  MAX_AUTHENTICATED_CONNECTIONS,
  MAX_UNAUTHENTICATED_CONNECTIONS,
  type DaemonCloseOptions,
  type DaemonCloseReason,
  type DaemonOptions,
} from "./daemonOptions.js";

/** Outcome of {@link Daemon.start}: running now, or another daemon already holds the state dir. */
export type DaemonStartResult = { status: "started"; daemon: Daemon } | { status: "running"; holder: LockInfo };

/**
 * The long-running local front end for host applications that are not MCP clients. A second
 * front end over the same {@link Bridge} `serve` uses: it translates the line protocol of
 * docs/daemon-protocol.md onto `list`, `callServerTool`, `getSchema`, `stats`, `refresh` and `readOutput`.
 *
 * Start-up order makes "one daemon per state dir" cheap to enforce: bind the listener (so the
 * address is known), take the lockfile, and only then open the bridge and spawn upstreams; a
 * daemon that loses the lock race has started nothing.
 */
export class Daemon implements SessionHost {
  readonly token: string;
  readonly maxLineBytes: number;
  readonly preAuthDeadlineMs: number | undefined;
  readonly logger: Logger;
  readonly lockFile: string;
  readonly bridge: Bridge;
  /** Settles with the reason once the daemon has fully stopped. */
  readonly closed: Promise<DaemonCloseReason>;
  private lock: LockInfo;
  private readonly server: Server;
  private readonly config: Config;
  private readonly identity: ConfigIdentity | undefined;
  private readonly refusals: RateLimitedLog;
  private readonly sessions = new Set<DaemonSession>();
  /** Every socket the listener accepted and that is not closed yet, session or not. */
  private readonly sockets = new Set<Socket>();
  private readonly counters: DaemonCounters = { connections: 0, requests: 0, refused: 0, badRequests: 0, evicted: 0 };
  private readonly idleTimeoutMs: number;
  /** The unix socket's file, removed on stop if it is still this daemon's. */
  private readonly socketFile: SocketFile | undefined;
  private active = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private closePromise: Promise<void> | undefined;
  private resolveClosed!: (reason: DaemonCloseReason) => void;
  private tokens: { key: unknown; value: DaemonStats["tokens"] } | undefined;
  private tokensDirty = true;
  private nextSession = 1;

  private constructor(init: {
    options: DaemonOptions;
    server: Server;
    waiting: WaitingRoom;
    lock: LockInfo;
    lockFile: string;
    socketFile: SocketFile | undefined;
    bridge: Bridge;
    logger: Logger;
    identity: ConfigIdentity | undefined;
  }) {
    const { options } = init;
    this.token = init.lock.token;
    this.lock = init.lock;
    this.lockFile = init.lockFile;
    this.server = init.server;
    this.bridge = init.bridge;
    this.logger = init.logger;
    this.config = options.config;
    this.identity = init.identity;
    this.refusals = new RateLimitedLog(this.logger, "request refused: wrong or missing token", REFUSAL_LOG_WINDOW_MS);
    this.maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
    this.preAuthDeadlineMs = options.preAuthDeadlineMs;
    this.idleTimeoutMs = options.idleTimeoutMs ?? Math.round(options.config.idle_timeout_minutes * 60_000);
    this.socketFile = init.socketFile;
    this.closed = new Promise<DaemonCloseReason>((resolve) => (this.resolveClosed = resolve));
    this.bridge.onListChanged(() => (this.tokensDirty = true));
    const adopt = (socket: Socket): void => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
      this.accept(socket);
    };
    this.server.on("connection", adopt);
    for (const socket of init.waiting.release()) adopt(socket);
    const heartbeatMs = init.lock.heartbeatMs;
    this.heartbeatTimer = setInterval(() => void this.beat(), heartbeatMs);
    this.heartbeatTimer.unref();
    this.armIdle();
  }

  /**
   * Binds, takes the lock, opens the bridge and starts the upstreams (in the background; requests
   * that need them wait). Resolves `{status: "running"}` without starting anything when a live
   * daemon already holds the state dir.
   */
  static async start(options: DaemonOptions): Promise<DaemonStartResult> {
    const logger = (options.logger ?? silentLogger).child({ component: "daemon" });
    await mkdir(options.stateDir, { recursive: true, mode: 0o700 });
    const lockFile = lockFilePath(options.stateDir);
    const { server, waiting, address, socketFile } = await bindListener(listenTarget(options, logger));

    // Which config this daemon serves, so a client asking for another one is told instead of
    // silently served (the default state dir is per user, not per config).
    const identity = await configIdentity(options.config.source).catch((err: unknown) => {
      logger.warn("config file not readable: the lock will not name it", { source: options.config.source, error: err });
      return undefined;
    });
    const now = new Date().toISOString();
    const lock: LockInfo = {
      ...(identity ?? {}),
      pid: currentPid(),
      address: formatAddress(address),
      token: newToken(),
      started: now,
      version: VERSION,
      heartbeat: now,
      heartbeatMs: options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    };
    let acquired;
    try {
      acquired = await acquireLock(lockFile, lock, options.signal ? { signal: options.signal } : {});
    } catch (err) {
      await waiting.close();
      throw err;
    }
    if (!acquired.acquired) {
      await waiting.close();
      logger.info("another daemon holds the state dir", { pid: acquired.holder.pid, address: acquired.holder.address });
      return { status: "running", holder: acquired.holder };
    }
    if (socketFile) {
      try {
        await publishSocket(socketFile);
      } catch (err) {
        await waiting.close();
        await releaseLock(lockFile, lock.token);
        throw err;
      }
    }

    let bridge: Bridge;
    try {
      bridge = await Bridge.open({
        ...options.bridge,
        // Spilled outputs (read_output) live with the daemon's other state, as the CLI arranges too.
        stateDir: options.bridge?.stateDir ?? options.stateDir,
        config: options.config,
        cacheFile: options.cacheFile,
        env: options.env,
        logger: options.logger ?? silentLogger,
        // Requests are answered while upstreams start (lists give them startup_grace_ms, calls and
        // get_schema wait for their own server only); they are spawned first, and the cache and
        // the rest open while they start.
        begin: options.signal !== undefined ? { signal: options.signal } : {},
      });
    } catch (err) {
      await waiting.close();
      if (socketFile) await removeSocket(socketFile);
      await releaseLock(lockFile, lock.token);
      throw err;
    }
    const daemon = new Daemon({ options, server, waiting, lock, lockFile, socketFile, bridge, logger, identity });
    logger.info("daemon listening", { address: lock.address, pid: lock.pid, lockfile: lockFile });
    return { status: "started", daemon };
  }

  /** `127.0.0.1:<port>` or `unix:<path>`. */
  get address(): string {
    return this.lock.address;
  }

  /** The lockfile's content as this daemon wrote it. */
  get info(): LockInfo {
    return { ...this.lock };
  }

  /**
   * Stops: no new connections, calls in flight get up to `graceMs` to finish (then are aborted
   * and answered CANCELLED), connections are ended, the bridge closes (upstream children end),
   * the lockfile is removed. Idempotent.
   */
  close(options: DaemonCloseOptions = {}): Promise<void> {
    this.closePromise ??= this.shutdown(options.graceMs ?? DEFAULT_GRACE_MS, options.reason ?? "closed");
    return this.closePromise;
  }

  begin(): void {
    this.active += 1;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  end(): void {
    this.active -= 1;
    this.armIdle();
  }

  admitAuthenticated(): boolean {
    let authenticated = 0;
    for (const session of this.sessions) if (session.authenticated) authenticated += 1;
    return authenticated < MAX_AUTHENTICATED_CONNECTIONS;
  }

  logRefusal(fields: Record<string, unknown>): void {
    this.refusals.warn(fields);
  }

  count(event: "request" | "refused" | "badRequest"): void {
    if (event === "request") this.counters.requests += 1;
    else if (event === "refused") this.counters.refused += 1;
    else this.counters.badRequests += 1;
  }

  async execute(request: BridgeRequest, signal: AbortSignal): Promise<HandlerResult> {
    switch (request.op) {
      case "stats":
        return { body: { stats: this.stats() } };
      case "shutdown":
        this.logger.info("shutdown requested");
        return { body: {}, afterWrite: () => void this.close({ reason: "shutdown" }) };
      case "list_tools": {
        // Like a first tools/list over MCP: servers still starting get `startup_grace_ms`, then
        // the list is what is ready; those still starting are named in `starting`.
        await this.bridge.waitReady(this.config.startup_grace_ms, signal);
        const starting = this.bridge
          .servers()
          .filter((s) => s.state === "connecting")
          .map((s) => s.name);
        return { body: { tools: daemonTools(this.bridge, request.mode ?? this.config.mode), ...(starting.length > 0 ? { starting } : {}) } };
      }
      case "get_schema":
        // A server still starting is waited for (at most its connect_timeout_ms), not the others.
        return { body: { schema: await this.bridge.schemaWhenStarted(toolUri(request.server, request.tool), signal) } };
      case "refresh":
        return { body: { discovery: await this.bridge.refresh() } };
      case "call_tool": {
        const result = await this.bridge.callServerTool(request.server, request.tool, request.args, {
          signal,
          mode: request.mode ?? this.config.mode,
          ...(request.timeout_ms !== undefined ? { timeoutMs: request.timeout_ms } : {}),
        });
        return { body: { result } };
      }
      case "run_code": {
        // A program's failure (an exception, its timeout, a limit, a cancel) is in `run`, not an error answer.
        const { result, answer } = await this.bridge.runCode(request.code, { signal, client: "daemon", ...(request.limits ? { limits: request.limits } : {}) });
        // Half a line at most: the answer text beside it holds the same output, cut at max_output_bytes.
        return { body: { run: wireRun(result, MAX_LINE_BYTES / 2), answer } };
      }
      case "declare_tools":
        return { body: { declarations: await this.bridge.declareTools(declarationRequest(request), signal) } };
      case "read_output":
        // The bridge's own read_output handling: the same pages, markers and errors as over MCP.
        return { body: { result: await this.bridge.readOutput(request.handle, request.offset ?? 0) } };
    }
  }

  /** What the `stats` op answers. */
  stats(): DaemonStats {
    const bridgeStats = this.bridge.stats();
    return {
      ...bridgeStats,
      // Copied into plain objects: the wire's open (loose) objects take those, not interfaces.
      upstreams: bridgeStats.upstreams.map((upstream) => ({ ...upstream })),
      queue: { ...bridgeStats.queue },
      calls: { ...bridgeStats.calls },
      pid: this.lock.pid,
      address: this.lock.address,
      started: this.lock.started,
      queueDepth: bridgeStats.queue.queued + bridgeStats.queue.running,
      tokens: this.tokenStats(),
      ...(this.identity ? { config: { path: this.identity.configPath, hash: this.identity.configHash } } : {}),
      daemon: {
        ...this.counters,
        openConnections: this.sessions.size,
        activeRequests: this.active,
        idleTimeoutMs: this.idleTimeoutMs,
        // Answer bytes waiting in sockets, and connections not read because of that (backpressure).
        bufferedBytes: [...this.sessions].reduce((sum, s) => sum + s.bufferedBytes, 0),
        peakBufferedBytes: [...this.sessions].reduce((max, s) => Math.max(max, s.peakBufferedBytes), 0),
        pausedConnections: [...this.sessions].filter((s) => s.paused).length,
      },
      // Per-server call and start timeouts, so a client can wait longer than the daemon does (a
      // call may first wait for its server to start) and receive the daemon's own
      // UPSTREAM_TIMEOUT / UPSTREAM_UNAVAILABLE instead of a bare client-side timeout.
      timeoutsMs: Object.fromEntries(this.config.servers.map((s) => [s.name, s.timeout_ms])),
      connectTimeoutsMs: Object.fromEntries(this.config.servers.map((s) => [s.name, s.connect_timeout_ms + START_WAIT_SLACK_MS])),
      codeTimeoutMs: this.config.code.timeout_ms,
    };
  }

  /**
   * Tokens of the configured mode's list against full mode's; recounted only after a change.
   * `saved` is not clamped: on a handful of tiny tools compact's `get_schema` costs more than it
   * saves, and stats should say so.
   */
  private tokenStats(): DaemonStats["tokens"] {
    const tools = this.bridge.tools();
    if (this.tokens && !this.tokensDirty && this.tokens.key === tools) return this.tokens.value;
    const mode: Mode = this.config.mode;
    const report = tokenReport(tools, { separator: this.config.separator });
    const full = report.full.openAiTokens;
    const current = report[mode].openAiTokens;
    const value = { mode, full, current, saved: full - current, ratioOfFull: report[mode].ratioOfFull };
    this.tokens = { key: tools, value };
    this.tokensDirty = false;
    return value;
  }

  private accept(socket: Socket): void {
    if (this.closePromise) {
      socket.destroy();
      return;
    }
    this.counters.connections += 1;
    let unauthenticated = 0;
    let oldest: DaemonSession | undefined;
    for (const open of this.sessions) {
      if (open.authenticated) continue;
      unauthenticated += 1;
      oldest ??= open;
    }
    if (unauthenticated >= MAX_UNAUTHENTICATED_CONNECTIONS && oldest) {
      this.counters.evicted += 1;
      this.refusals.warn({ reason: `over ${MAX_UNAUTHENTICATED_CONNECTIONS} connections without a token: the oldest closed` });
      oldest.evict();
      this.sessions.delete(oldest);
    }
    const session = new DaemonSession(socket, this, this.nextSession++);
    this.sessions.add(session);
    void session.done.then(() => this.sessions.delete(session));
  }

  private armIdle(): void {
    if (this.active > 0 || this.closePromise) return;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.active > 0) return;
      this.logger.info("idle timeout: exiting", { idleTimeoutMs: this.idleTimeoutMs });
      void this.close({ reason: "idle" });
    }, this.idleTimeoutMs);
  }

  private async beat(): Promise<void> {
    if (this.closePromise) return;
    const next = { ...this.lock, heartbeat: new Date().toISOString() };
    try {
      if (await refreshLock(this.lockFile, next)) {
        this.lock = next;
        return;
      }
    } catch (err) {
      // A transient I/O error: the next beat tries again; staleness needs several missed beats.
      this.logger.warn("heartbeat failed", { error: err });
      return;
    }
    this.logger.error("lockfile was taken over or removed: stopping", { lockfile: this.lockFile });
    void this.close({ reason: "lost-lock" });
  }

  private async shutdown(graceMs: number, reason: DaemonCloseReason): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.idleTimer = undefined;
    this.heartbeatTimer = undefined;
    this.logger.info("daemon stopping", { reason, activeRequests: this.active });
    const serverClosed = closeServer(this.server);
    await waitUntil(() => this.active === 0, graceMs);
    await Promise.allSettled([...this.sessions].map((s) => s.close()));
    // The listener reports closed only once every accepted socket is: one that no session owns
    // any more (evicted, refused) or that lingers must not hold the shutdown, and with it the
    // upstream children, for good.
    for (const socket of this.sockets) socket.destroy();
    this.logger.debug("sessions closed", { sessions: this.sessions.size });
    await serverClosed;
    this.logger.debug("listener closed");
    const results = await Promise.allSettled([this.bridge.close()]);
    this.logger.debug("bridge closed");
    for (const result of results) {
      if (result.status === "rejected") this.logger.warn("error while closing the bridge", { error: result.reason });
    }
    if (reason !== "lost-lock") {
      // The socket first, while the lock still keeps a new daemon from putting its own there;
      // after a takeover the path may be the new daemon's already, and is left alone.
      if (this.socketFile) await removeSocket(this.socketFile).catch(() => undefined);
      await releaseLock(this.lockFile, this.token).catch(() => false);
    }
    this.logger.info("daemon stopped", { reason });
    this.resolveClosed(reason);
  }
}

/** Resolves once `done()` holds (checked every 20 ms) or after `timeoutMs`, whichever is first. */
async function waitUntil(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) {
    await delay(20);
  }
}
