import type { Mode } from "../../config/schema.js";
import {
  daemonError,
  type DaemonCallOptions,
  type DaemonClientOptions,
  type DaemonRequestOptions,
  type DaemonRunOptions,
  type HostTool,
  type RequestFields,
} from "./daemonClientOptions.js";
import { judgeLock, lockFilePath, readLock, type LockInfo } from "../wire/lockfile.js";
import { isPidAlive } from "../wire/processInfo.js";
import type { ClientRequest, DaemonDiscovery, DaemonOkAnswer, DaemonOp, DaemonResponse, DaemonStats, DaemonTool, DaemonToolSchema } from "../wire/protocol.js";
import { AbridgeError, ErrorCode, isAbridgeError } from "../../model/errors.js";
import { silentLogger, type Logger } from "../../log/logger.js";
import type { CallToolResult, JsonObject } from "../../model/types.js";
import type { RunCodeAnswer } from "../../core/bridge.js";
import { parseToolUri } from "../../model/names.js";
import { VERSION } from "../../model/version.js";
import { ClientConnection, ConnectionLostError } from "./clientConnection.js";
import { ensureDaemon } from "./ensureDaemon.js";

export type { DaemonCallOptions, DaemonClientOptions, DaemonRequestOptions, DaemonRunOptions, HostTool } from "./daemonClientOptions.js";
export { isMcpPath } from "./daemonClientOptions.js";

/**
 * A host application's handle on the daemon. Reads the lockfile (or starts the daemon, with
 * `autoStart`), sends every request with the token, and turns `ok: false` answers into
 * {@link AbridgeError}s carrying the daemon's codes. The token goes only to a proven daemon: each
 * new connection reads the lockfile again (trust checks, same daemon, pid alive), and its peer
 * must prove that it holds the token (a `hello`, see daemonProof.ts) before a request is sent; a
 * peer that cannot is refused with DAEMON_UNTRUSTED naming its address.
 *
 * Read-only requests share one pipelined connection. Calls share up to four unordered
 * connections (see {@link MAX_SHARED_CALL_CONNECTIONS}) when the daemon is of this client's
 * version: a call given up on (signal, timeout) is cancelled by its id, which makes the daemon
 * abort the upstream call without disturbing the others. With a daemon of another version each
 * `callTool` has a connection of its own, and cancelling closes it.
 *
 * When the daemon has restarted (connection refused, connection lost, token refused), the client
 * finds the new one (starting it with `autoStart`) and retries once, but never a `call_tool` that
 * may already have reached the daemon: a tool call is not assumed to be idempotent.
 */
/**
 * Idle call connections kept per client. Each call takes a connection of its own (cancelling a
 * call closes just that connection), so without reuse every call would pay a TCP connect.
 */
const MAX_IDLE_CONNECTIONS = 64;
/**
 * Connections that carry many calls at once, at most. A daemon of this client's own version
 * answers them unordered and cancels a call by its id, so calls share a few connections: their
 * requests and answers leave in one write per turn of the event loop instead of one each (at 64
 * calls in flight that halved the client's CPU per call and cut the daemon's by a quarter).
 */
const MAX_SHARED_CALL_CONNECTIONS = 4;
/** Calls in flight on each shared connection before another one is opened. */
const CALLS_PER_SHARED_CONNECTION = 16;
/** A server's start wait assumed when the daemon did not report it (config default 15 s + slack). */
const DEFAULT_START_WAIT_MS = 16_000;

export class DaemonClient {
  private readonly options: DaemonClientOptions;
  private readonly logger: Logger;
  private info: LockInfo | undefined;
  private timeoutsMs: Record<string, number> = {};
  /** Per server, how long the daemon may wait for it to start before a call (learned from `stats`). */
  private connectTimeoutsMs: Record<string, number> = {};
  private timeoutsLearned = false;
  /** A run's time limit on the daemon unless a request says otherwise (learned from `stats`). */
  private codeTimeoutMs: number | undefined;
  private shared: ClientConnection | undefined;
  private readonly calls = new Set<ClientConnection>();
  /** Call connections that finished cleanly, kept for the next call (of the same daemon). */
  private idle: ClientConnection[] = [];
  /** Unordered connections carrying many calls each (daemons of this client's version). */
  private sharedCalls: ClientConnection[] = [];
  /** A shared call connection being opened, which concurrent calls wait for instead of opening their own. */
  private sharedOpening: Promise<ClientConnection> | undefined;
  private closed = false;
  /** The last pid check, good for the rest of this turn of the event loop (see {@link isAlive}). */
  private liveness: { pid: number; alive: boolean } | undefined;

  constructor(options: DaemonClientOptions) {
    this.options = options;
    this.logger = options.logger ?? silentLogger;
  }

  /** Finds (or starts) the daemon and returns its lockfile content. */
  async connect(options: DaemonRequestOptions = {}): Promise<LockInfo> {
    return this.locate(false, options.signal);
  }

  /** The tool list (`mode` default: the daemon's config mode). */
  async listTools(options: DaemonRequestOptions & { mode?: Mode } = {}): Promise<DaemonTool[]> {
    const response = await this.send({ op: "list_tools", ...(options.mode ? { mode: options.mode } : {}) }, options.signal);
    return response.tools;
  }

  /**
   * Calls `tool` of `server`. A tool that reports an error is a result with `isError: true`; an
   * error the daemon raised (unknown tool, upstream timeout, upstream gone) is thrown with its code.
   */
  async callTool(server: string, tool: string, args: JsonObject = {}, options: DaemonCallOptions = {}): Promise<CallToolResult> {
    const body = {
      op: "call_tool" as const,
      server,
      tool,
      args,
      ...(options.timeoutMs !== undefined ? { timeout_ms: options.timeoutMs } : {}),
      ...(options.mode ? { mode: options.mode } : {}),
    };
    if (options.timeoutMs === undefined && !this.timeoutsLearned) {
      // The server's own timeout is what the daemon will wait; learn it once from `stats`.
      await this.stats(options.signal ? { signal: options.signal } : {}).catch(() => undefined);
    }
    const daemonTimeoutMs = options.timeoutMs ?? this.timeoutsMs[server] ?? this.options.defaultCallTimeoutMs ?? 30_000;
    // Wait longer than the daemon does, so its UPSTREAM_TIMEOUT (with the server named) arrives
    // before this side gives up with a bare "no answer". The daemon's bound is the server's start
    // (a call may come while it is still connecting) plus the call itself.
    const startWaitMs = this.connectTimeoutsMs[server] ?? DEFAULT_START_WAIT_MS;
    const clientTimeoutMs = startWaitMs + daemonTimeoutMs + (this.options.timeoutMarginMs ?? 5_000);
    return (await this.sendRunning(body, clientTimeoutMs, options.signal)).result;
  }

  /**
   * Runs a program against the daemon's tools (code mode's `run_code`): the body of an async
   * function with one global per server. Resolves with what the run produced and the answer a
   * model reads, like `Bridge.runCode`: a program that failed (an exception, its timeout, a limit)
   * has `result.ok` false, it is not thrown. Aborting `signal` cancels the run on the daemon,
   * which aborts its calls in flight, and rejects with CANCELLED.
   *
   * @throws AbridgeError INPUT_INVALID for a limit out of its bounds; the daemon's errors by code.
   */
  async runCode(code: string, options: DaemonRunOptions = {}): Promise<RunCodeAnswer> {
    const body = { op: "run_code" as const, code, ...(options.limits !== undefined ? { limits: options.limits } : {}) };
    if (options.limits?.timeout_ms === undefined && !this.timeoutsLearned) {
      await this.stats(options.signal ? { signal: options.signal } : {}).catch(() => undefined);
    }
    // The run waits for servers still starting (as a first list does), then runs within its time.
    const runMs = options.limits?.timeout_ms ?? this.codeTimeoutMs ?? 30_000;
    const startWaitMs = Math.max(DEFAULT_START_WAIT_MS, ...Object.values(this.connectTimeoutsMs));
    const answer = await this.sendRunning(body, startWaitMs + runMs + (this.options.timeoutMarginMs ?? 5_000), options.signal);
    // Sound as far as the wire goes: the answer was checked against the protocol's schema; an
    // error code a newer daemon has and this client lacks is passed on as the daemon wrote it.
    return { result: answer.run as unknown as RunCodeAnswer["result"], answer: answer.answer as CallToolResult };
  }

  /**
   * TypeScript declarations of the tools a task finds (`query`, best `limit`) or of the tools
   * named (`names`: exposed names or `namespace.function`), as code mode's `search_tools` answers.
   */
  async declareTools(request: { query: string; limit?: number } | { names: string[] }, options: DaemonRequestOptions = {}): Promise<string> {
    const response = await this.send({ op: "declare_tools", ...request }, options.signal);
    return response.declarations;
  }

  /**
   * Sends a request that runs (a call, a run) and may be given up on: on a shared unordered
   * connection (cancelled by id) with a daemon of this version, else on a connection of its own
   * (closed to cancel). Retried once on a restarted daemon only when it cannot have run.
   */
  private async sendRunning<Op extends "call_tool" | "run_code">(
    body: RequestFields & { op: Op },
    clientTimeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<DaemonOkAnswer<Op>> {
    for (let attempt = 0; ; attempt++) {
      // A daemon known to have died since the last call (its pid is gone) is not called through
      // an idle connection whose reset may not have been read yet: a call is not retried once
      // sent, so it would fail where a fresh lookup finds (or starts) the new daemon.
      const known = this.info;
      const gone = attempt === 0 && known !== undefined && !this.isAlive(known.pid);
      const info = await this.locate(attempt > 0 || gone, signal);
      // A daemon of another version may not know `options` and `cancel`: a connection per call.
      const shared = info.version === VERSION;
      let connection: ClientConnection;
      try {
        connection = shared ? await this.takeShared(info) : (this.takeIdle() ?? (await this.open(info, signal)));
      } catch (err) {
        if (attempt === 0 && this.isRestartSign(err)) continue;
        throw err;
      }
      const request = { ...body, token: info.token } as ClientRequest & { op: Op };
      if (shared) {
        const response = await this.callShared<Op>(connection, request, clientTimeoutMs, signal);
        if (!response.ok) {
          // A refused token means nothing ran: a new daemon now holds the address.
          if (attempt === 0 && response.error.code === ErrorCode.DAEMON_UNAUTHORIZED) continue;
          throw daemonError(response.error);
        }
        return response;
      }
      this.calls.add(connection);
      let reusable = false;
      try {
        const response = await connection.request<Op>(request, { timeoutMs: clientTimeoutMs, ...(signal ? { signal } : {}) });
        // Answered, whatever the answer: the connection is in a clean state for the next call.
        reusable = true;
        if (!response.ok) {
          // A refused token means nothing ran: a new daemon now holds the address.
          if (attempt === 0 && response.error.code === ErrorCode.DAEMON_UNAUTHORIZED) {
            reusable = false;
            continue;
          }
          throw daemonError(response.error);
        }
        return response;
      } finally {
        this.calls.delete(connection);
        // A call that was aborted or timed out closes its connection (that is how the daemon
        // learns to cancel it); one that was answered goes back to the idle set.
        if (reusable && !connection.closed && !this.closed && this.idle.length < MAX_IDLE_CONNECTIONS) {
          connection.setIdle(true);
          this.idle.push(connection);
        } else {
          connection.close();
        }
      }
    }
  }

  /** The full, original schema and description of a tool. */
  async getSchema(server: string, tool: string, options: DaemonRequestOptions = {}): Promise<DaemonToolSchema> {
    const response = await this.send({ op: "get_schema", server, tool }, options.signal);
    return response.schema;
  }

  /**
   * One page of an output the daemon kept (`spill = true`): a cut `call_tool` result names the
   * handle and the offset to go on from, and so does each page until the end. An unknown or
   * expired handle, or spill being off, is a result with `isError: true`.
   */
  async readOutput(handle: string, offset = 0, options: DaemonRequestOptions = {}): Promise<CallToolResult> {
    const response = await this.send({ op: "read_output", handle, offset }, options.signal);
    return response.result;
  }

  /** The daemon's counters: uptime, upstream states, cache hits and misses, queue depth, tokens saved. */
  async stats(options: DaemonRequestOptions = {}): Promise<DaemonStats> {
    const response = await this.send({ op: "stats" }, options.signal);
    this.learnTimeouts(response.stats);
    return response.stats;
  }

  /** Re-lists every upstream; returns per-server discovery counts. */
  async refresh(options: DaemonRequestOptions = {}): Promise<DaemonDiscovery[]> {
    const response = await this.send({ op: "refresh" }, options.signal);
    return response.discovery;
  }

  /** Asks the daemon to stop (it finishes calls in flight first). */
  async shutdown(options: DaemonRequestOptions = {}): Promise<void> {
    await this.send({ op: "shutdown" }, options.signal, false);
  }

  /**
   * The daemon's tools as a host keeps them next to its own: each with `path: "mcp://server/tool"`,
   * which {@link executeTool} routes back here.
   */
  async loadTools(options: DaemonRequestOptions & { mode?: Mode } = {}): Promise<HostTool[]> {
    const tools = await this.listTools(options);
    return tools.map((tool) => ({ ...tool, path: tool.uri }));
  }

  /**
   * Runs a tool loaded by {@link loadTools} (or given by its `mcp://server/tool` path).
   *
   * @throws AbridgeError TOOL_NOT_FOUND when the path is not an `mcp://` path: a host routes only
   * those here and runs its own tools itself.
   */
  async executeTool(tool: { path: string } | string, args: JsonObject = {}, options: DaemonCallOptions = {}): Promise<CallToolResult> {
    const path = typeof tool === "string" ? tool : tool.path;
    const target = parseToolUri(path);
    if (!target) throw new AbridgeError(ErrorCode.TOOL_NOT_FOUND, `not an abridge tool path: "${path}" (expected mcp://<server>/<tool>)`);
    return this.callTool(target.server, target.tool, args, options);
  }

  /**
   * Whether the daemon's pid runs, checked once per turn of the event loop. The check (a signal-0
   * probe and a read of /proc for a zombie) cost more than the rest of the client's work on a
   * call when every call made it; calls started in the same turn share one answer, which is as
   * fresh for each of them as a check of its own (a daemon may die right after either). The
   * next turn checks again, so a call made after the daemon was seen gone never trusts an old
   * answer.
   */
  private isAlive(pid: number): boolean {
    if (this.liveness?.pid === pid) return this.liveness.alive;
    const alive = isPidAlive(pid);
    this.liveness = { pid, alive };
    setImmediate(() => (this.liveness = undefined)).unref();
    return alive;
  }

  /**
   * A shared call connection with room: the least busy open one, or a new one while every open
   * one has {@link CALLS_PER_SHARED_CONNECTION} calls in flight and there are fewer than
   * {@link MAX_SHARED_CALL_CONNECTIONS}. A new one is switched to unordered answers first (the
   * `options` line goes out ahead of the call, in the same write).
   */
  private async takeShared(info: LockInfo): Promise<ClientConnection> {
    let best: ClientConnection | undefined;
    let open = 0;
    for (const connection of this.sharedCalls) {
      if (connection.closed) continue;
      open += 1;
      if (!best || connection.inFlight < best.inFlight) best = connection;
    }
    if (open < this.sharedCalls.length) this.sharedCalls = this.sharedCalls.filter((c) => !c.closed);
    if (best && (best.inFlight < CALLS_PER_SHARED_CONNECTION || open >= MAX_SHARED_CALL_CONNECTIONS)) return best;
    if (this.sharedOpening) return this.sharedOpening;
    this.sharedOpening = (async () => {
      // Without the caller's signal: other calls wait for this connection too, and one caller
      // giving up must not fail theirs (the connect has its own timeout).
      const connection = await this.open(info, undefined);
      connection.request({ token: info.token, op: "options", unordered: true }, { timeoutMs: this.options.requestTimeoutMs ?? 60_000 }).catch(() => undefined);
      this.sharedCalls.push(connection);
      return connection;
    })().finally(() => (this.sharedOpening = undefined));
    return this.sharedOpening;
  }

  /**
   * One call on a shared connection. Giving up on it (signal, timeout) sends `cancel` for it
   * rather than closing the connection, which would end the other calls too. The connection
   * keeps the host's process alive only while calls are in flight on it.
   */
  private async callShared<Op extends "call_tool" | "run_code">(
    connection: ClientConnection,
    request: ClientRequest & { op: Op },
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<DaemonResponse<Op>> {
    if (connection.inFlight === 0) connection.setIdle(false);
    try {
      return await connection.request<Op>(request, { timeoutMs, cancelWithToken: request.token, ...(signal ? { signal } : {}) });
    } finally {
      if (connection.inFlight === 0 && !connection.closed) {
        // One dropped from the pool (the daemon was looked up afresh) closes with its last call.
        if (this.sharedCalls.includes(connection)) connection.setIdle(true);
        else connection.close();
      }
    }
  }

  /** An idle call connection that is still open, if any. */
  private takeIdle(): ClientConnection | undefined {
    for (let connection = this.idle.pop(); connection; connection = this.idle.pop()) {
      if (!connection.closed) {
        connection.setIdle(false);
        return connection;
      }
    }
    return undefined;
  }

  private dropIdle(): void {
    for (const connection of this.idle) connection.close();
    this.idle = [];
    // Shared call connections with calls in flight finish them (see callShared), then close.
    for (const connection of this.sharedCalls) if (connection.inFlight === 0) connection.close();
    this.sharedCalls = [];
  }

  /** Closes the client's connections (calls still running are aborted by the daemon). Idempotent. */
  close(): void {
    this.closed = true;
    for (const connection of this.sharedCalls) connection.close();
    this.dropIdle();
    this.shared?.close();
    this.shared = undefined;
    for (const connection of this.calls) connection.close();
    this.calls.clear();
  }

  /** Sends a request on the shared connection, retrying once on a restarted daemon. */
  private async send<Op extends DaemonOp>(body: RequestFields & { op: Op }, signal: AbortSignal | undefined, retryLost = true): Promise<DaemonOkAnswer<Op>> {
    // `list_tools`, `get_schema` and `refresh` may wait for the slowest server's start.
    const slowestStartMs = Math.max(DEFAULT_START_WAIT_MS, ...Object.values(this.connectTimeoutsMs));
    const timeoutMs = this.options.requestTimeoutMs ?? Math.max(60_000, slowestStartMs + (this.options.timeoutMarginMs ?? 5_000));
    for (let attempt = 0; ; attempt++) {
      const info = await this.locate(attempt > 0, signal);
      let response: DaemonResponse<Op>;
      try {
        if (!this.shared || this.shared.closed) this.shared = await this.open(info, signal);
        // The token first: the daemon reads at most 64 KiB of a connection before it has seen it.
        response = await this.shared.request<Op>({ token: info.token, ...body }, { timeoutMs, ...(signal ? { signal } : {}) });
      } catch (err) {
        // These requests only read (or, for refresh, re-read), so repeating one is harmless.
        if (attempt === 0 && retryLost && this.isRestartSign(err)) continue;
        throw err;
      }
      if (!response.ok) {
        if (attempt === 0 && response.error.code === ErrorCode.DAEMON_UNAUTHORIZED) continue;
        throw daemonError(response.error);
      }
      return response;
    }
  }

  private isRestartSign(err: unknown): boolean {
    // A lost connection or a refused connect, not a slow answer: waiting again would only double it.
    return err instanceof ConnectionLostError || (isAbridgeError(err, ErrorCode.DAEMON_UNAVAILABLE) && err.details?.phase === "connect");
  }

  /**
   * A new connection to the daemon `info` describes. The lockfile is read again first (with its
   * trust checks): a daemon that stopped, died or was replaced since `info` was read is noticed
   * before anything is sent (a restart sign: the caller looks the daemon up afresh). The peer then
   * proves that it holds the token before the token is sent (see ClientConnection.connect).
   *
   * @throws AbridgeError DAEMON_UNTRUSTED when what listens at the address cannot prove it holds the
   *   lockfile's token while the lockfile still names it: it is never retried, since only a nonce
   *   was sent and the same lockfile would lead to the same peer.
   */
  private async open(info: LockInfo, signal: AbortSignal | undefined): Promise<ClientConnection> {
    if (this.closed) throw new AbridgeError(ErrorCode.DAEMON_UNAVAILABLE, "the client is closed");
    const file = lockFilePath(this.options.stateDir);
    const seen = await readLock(file);
    const changed =
      seen.state !== "ok"
        ? `its lockfile is ${seen.state}`
        : seen.lock.token !== info.token || seen.lock.address !== info.address
          ? "its lockfile names another daemon now"
          : !this.isAlive(seen.lock.pid)
            ? `its pid ${seen.lock.pid} is gone`
            : undefined;
    if (changed !== undefined) throw new ConnectionLostError(`the daemon at ${info.address} is no longer there: ${changed}`);
    try {
      return await ClientConnection.connect(info, {
        timeoutMs: this.options.connectTimeoutMs ?? 5_000,
        proofTimeoutMs: Math.max(this.options.connectTimeoutMs ?? 5_000, this.options.requestTimeoutMs ?? 60_000),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (isAbridgeError(err, ErrorCode.DAEMON_UNTRUSTED)) {
        // A daemon that replaced this one (same socket path, new token) proves its own token: a
        // fresh lookup finds it. The lockfile still naming this daemon is what an impostor makes.
        const again = await readLock(file);
        if (again.state === "ok" && again.lock.token !== info.token) throw new ConnectionLostError(`the daemon at ${info.address} was replaced`, err);
      }
      throw err;
    }
  }

  /** The daemon to talk to: the one known, or (when `fresh`) the lockfile's or a new one. */
  private async locate(fresh: boolean, signal: AbortSignal | undefined): Promise<LockInfo> {
    if (this.info && !fresh) return this.info;
    if (fresh) {
      this.shared?.close();
      this.shared = undefined;
      this.dropIdle();
    }
    if (this.options.autoStart) {
      const handle = await ensureDaemon({ ...this.options.autoStart, stateDir: this.options.stateDir, ...(signal ? { signal } : {}) });
      this.learnTimeouts(handle.stats);
      if (handle.spawned) this.logger.info("started the daemon", { pid: handle.info.pid });
      this.info = handle.info;
      return handle.info;
    }
    const seen = await readLock(lockFilePath(this.options.stateDir));
    if (seen.state !== "ok" || (await judgeLock(seen)) !== "live") {
      this.info = undefined;
      throw new AbridgeError(ErrorCode.DAEMON_UNAVAILABLE, `no daemon is running for ${this.options.stateDir} (start one with \`abridge daemon start\`)`, {
        retryable: true,
      });
    }
    this.info = seen.lock;
    return seen.lock;
  }

  private learnTimeouts(stats: DaemonStats): void {
    for (const [server, value] of Object.entries(stats.connectTimeoutsMs)) {
      if (value > 0) this.connectTimeoutsMs[server] = value;
    }
    this.timeoutsLearned = true;
    if (stats.codeTimeoutMs !== undefined && stats.codeTimeoutMs > 0) this.codeTimeoutMs = stats.codeTimeoutMs;
    for (const [server, value] of Object.entries(stats.timeoutsMs)) {
      if (value > 0) this.timeoutsMs[server] = value;
    }
  }
}
