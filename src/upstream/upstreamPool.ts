import { EventEmitter } from "node:events";
import type { ServerConfig } from "../config/schema.js";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import { silentLogger } from "../log/logger.js";
import type { Logger } from "../log/logger.js";
import { compareStrings } from "../model/json.js";
import { ChildWatchdog } from "./process/childWatchdog.js";
import { ExposedNames } from "./exposedNames.js";
import { connectionShape } from "./liveServerFields.js";
import type { Upstream } from "./upstream.js";
import { createUpstream } from "./upstreamFactory.js";
import type { UpstreamFactoryOptions } from "./upstreamFactory.js";
import type { CallToolResult, ExposedTool, ForwardOptions, JsonObject, ServerStatus, UpstreamNotification } from "../model/types.js";

/** Events of an {@link UpstreamPool}. */
export interface UpstreamPoolEvents {
  /** A server's tool list changed after discovery (list_changed, or different tools after a restart). */
  toolsChanged: [server: string];
  /** A server's status changed (state, error, tool count). */
  statusChanged: [status: ServerStatus];
  /** A notification of a server that no call took (resources/updated, list_changed, logs outside calls). */
  notification: [server: string, notification: UpstreamNotification];
}

/** What {@link UpstreamPool.reconfigure} did. */
export interface ReconfigureResult {
  /** Servers new in the config, connected. */
  added: string[];
  /** Servers gone from the config, closed. */
  removed: string[];
  /** Servers whose connection settings changed, reconnected. */
  changed: string[];
  /** Servers whose other settings changed (filters, prefix, timeouts, policy), applied in place. */
  updated: string[];
}

/** Options of an {@link UpstreamPool}: the servers, plus what every connection is given as it is. */
export interface UpstreamPoolOptions
  extends Pick<
    UpstreamFactoryOptions,
    | "clientInfo"
    | "backoff"
    | "random"
    | "stderrLogLevel"
    | "listChangedDebounceMs"
    | "sandboxHide"
    | "childEnv"
    | "exposes"
    | "retryFailedStart"
    | "jsonRpcMaxLineBytes"
  > {
  /** Where the pool and every upstream log (default: nowhere). */
  logger?: Logger;
  /** Every configured server, enabled or not. */
  servers: ServerConfig[];
  /** Between server and tool in exposed names (config `separator`). */
  separator: string;
  /** Server names in config-file order (name collisions go to the first); default: `servers` order. */
  serverOrder?: readonly string[];
}

/**
 * Every upstream MCP server abridge talks to: starts them in parallel, keeps their filtered tool
 * lists and exposed names, forwards calls and requests, restarts what dies, and closes it all.
 */
export class UpstreamPool extends EventEmitter<UpstreamPoolEvents> {
  private readonly connections = new Map<string, Upstream>();
  private readonly options: UpstreamPoolOptions;
  private readonly separator: string;
  private readonly logger: Logger;
  /** The exposed names of the tools, recomputed whenever a list changes. */
  private readonly exposed: ExposedNames;
  private startPromise: Promise<void> | undefined;
  /** Every server was ready or failed once: the first start is over. */
  private started = false;
  /** Servers whose tools changed during the first start, not yet renamed and announced (see {@link connectionToolsChanged}). */
  private pendingChanged: string[] | undefined;
  private closePromise: Promise<void> | undefined;
  /** Resource subscriptions per `server\0uri`, counted: clients share one upstream subscription. */
  private readonly subscriptions = new Map<string, number>();
  /** Each server's position in the config: on a name collision the earlier one keeps the name. */
  private configOrder = new Map<string, number>();
  /** Ends the stdio servers if this process dies without closing them (SIGKILL, a crash). */
  private readonly watchdog: ChildWatchdog;

  constructor(options: UpstreamPoolOptions) {
    super();
    // Every serve session listens for notifications; dozens of sessions are normal, not a leak.
    this.setMaxListeners(0);
    this.options = options;
    this.separator = options.separator;
    this.logger = options.logger ?? silentLogger;
    this.watchdog = new ChildWatchdog({ logger: this.logger });
    this.exposed = new ExposedNames(this.separator, this.logger);
    this.configOrder = orderOf(options.servers, options.serverOrder);
    for (const config of options.servers) {
      if (this.connections.has(config.name)) {
        throw new AbridgeError(ErrorCode.CONFIG_INVALID, `server "${config.name}" is configured twice`);
      }
      this.connections.set(config.name, this.createConnection(config));
    }
  }

  /** The upstream of one config entry (see {@link createUpstream}), wired to the pool's events. */
  private createConnection(config: ServerConfig): Upstream {
    const { servers: _servers, separator: _separator, serverOrder: _order, ...shared } = this.options;
    let wasReady = false;
    const connection: Upstream = createUpstream(config, {
      ...shared,
      logger: this.logger,
      watchdog: this.watchdog,
      onStatusChanged: (status) => {
        const ready = status.state === "ready";
        // A new process (restart, reconnect after a reload) knows nothing of the old one's
        // subscriptions: without renewing them, subscribers silently stop getting updates.
        if (ready && !wasReady && connection.resubscribeOnReady) this.renewSubscriptions(connection);
        wasReady = ready;
        this.emit("statusChanged", status);
      },
      onToolsChanged: () => this.connectionToolsChanged(config.name),
      onNotification: (notification) => this.emit("notification", config.name, notification),
    });
    return connection;
  }

  /** Sends `resources/subscribe` again for every URI of `connection`'s server that has subscribers. */
  private renewSubscriptions(connection: Upstream): void {
    const prefix = `${connection.name}\0`;
    const uris = [...this.subscriptions.keys()].filter((key) => key.startsWith(prefix)).map((key) => key.slice(prefix.length));
    if (uris.length === 0 || connection.config.lifecycle === "per_call") return;
    void Promise.allSettled(uris.map((uri) => connection.request("resources/subscribe", { uri }))).then((results) => {
      const failed = results.flatMap((r, i) => (r.status === "rejected" ? [`${uris[i]}: ${messageOf(r.reason)}`] : []));
      if (failed.length > 0) this.logger.warn("renewing resource subscriptions failed", { server: connection.name, failed: failed.join("; ") });
      this.logger.debug("resource subscriptions renewed", { server: connection.name, renewed: uris.length - failed.length });
    });
  }

  /**
   * Applies a new server list without a restart: removed servers are closed, added ones started,
   * ones whose connection settings changed (command, args, env, url, headers, sandbox, lifecycle,
   * ...) reconnected. A server where only filters, prefix, timeouts or policy settings changed
   * keeps its connection and the calls in flight on it: the new filters and names apply at once
   * to its last listed tools. Removals and in-place updates show in {@link tools} (and
   * `toolsChanged` fires) before this awaits anything; it resolves when the new and reconnected
   * servers are ready or failed, with a second `toolsChanged`.
   */
  async reconfigure(servers: readonly ServerConfig[], signal?: AbortSignal, serverOrder?: readonly string[]): Promise<ReconfigureResult> {
    if (this.closePromise) throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, "the upstream pool is closed");
    const next = new Map(servers.map((s) => [s.name, s]));
    this.configOrder = orderOf(servers, serverOrder);
    const added: string[] = [];
    const removed: string[] = [];
    const changed: string[] = [];
    const updated: string[] = [];
    const closing: Promise<void>[] = [];
    const starting: Upstream[] = [];
    for (const [name, connection] of this.connections) {
      const config = next.get(name);
      if (config === undefined) {
        removed.push(name);
        this.connections.delete(name);
        closing.push(connection.close());
      } else if (connectionShape(config) !== connectionShape(connection.config)) {
        changed.push(name);
        closing.push(connection.close());
        const fresh = this.createConnection(config);
        this.connections.set(name, fresh);
        starting.push(fresh);
      } else if (JSON.stringify(config) !== JSON.stringify(connection.config)) {
        updated.push(name);
        connection.updateConfig(config);
      }
    }
    for (const [name, config] of next) {
      if (this.connections.has(name)) continue;
      added.push(name);
      const fresh = this.createConnection(config);
      this.connections.set(name, fresh);
      starting.push(fresh);
    }
    // Right away, not after the new servers connected (up to connect_timeout_ms): a front end
    // that re-lists now must not keep showing a removed server's tools or a tool just denied.
    if (removed.length + updated.length > 0) this.handleToolsChanged([...removed, ...updated].join(","));
    await Promise.all([...starting.map((c) => c.start(signal)), ...closing.map((p) => p.catch(() => undefined))]);
    if (added.length + changed.length > 0) this.handleToolsChanged([...added, ...changed].join(","));
    if (added.length + removed.length + changed.length + updated.length > 0) {
      this.logger.info("upstream servers reconfigured", { added, removed, changed, updated });
    }
    return { added, removed, changed, updated };
  }

  /**
   * Connects every enabled server in parallel and resolves when each is ready or has failed; one
   * server's failure or hang never holds up the others. Idempotent.
   *
   * @throws AbridgeError CANCELLED when `signal` aborted the start.
   */
  start(signal?: AbortSignal): Promise<void> {
    this.startPromise ??= this.doStart(signal);
    return this.startPromise;
  }

  private async doStart(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.start(signal)));
    this.started = true;
    this.flushToolsChanged();
    if (signal?.aborted) throw new AbridgeError(ErrorCode.CANCELLED, "starting the upstream pool was cancelled", { cause: signal.reason });
    // A recorded file or a manifests folder that cannot be read is a mistake in the config, like a
    // bad field: say so at start rather than serve on without the server. (A hot reload only
    // marks it failed; a bad manifest only costs its own tools.)
    const badFiles = [...this.connections.values()].flatMap((c) => {
      const error = c.startError();
      return error?.code === ErrorCode.CONFIG_INVALID ? [error.message] : [];
    });
    if (badFiles.length > 0) throw new AbridgeError(ErrorCode.CONFIG_INVALID, badFiles.join("\n"));
    this.renameAll();
    const ready = this.servers().filter((s) => s.state === "ready").length;
    this.logger.info("upstream pool started", { ready, servers: this.connections.size });
  }

  /** True while `server` is making its first connection (or its reconnection after a config change). */
  isStarting(server: string): boolean {
    return this.connections.get(server)?.status().state === "connecting";
  }

  /**
   * Waits until none of `servers` (default: every server) is still connecting, at most
   * `timeoutMs`. Resolves true when they all settled (ready or failed), false at the bound.
   *
   * @throws AbridgeError CANCELLED when `signal` aborts first.
   */
  async waitSettled(servers: readonly string[] | undefined, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    const names = servers ?? [...this.connections.keys()];
    const pending = (): boolean => names.some((name) => this.isStarting(name));
    // Whoever waited reads the tools next: those of the servers that just came up must be in.
    this.flushToolsChanged();
    if (!pending()) return true;
    return new Promise<boolean>((resolve, reject) => {
      const finish = (value: boolean | Error): void => {
        clearTimeout(timer);
        this.off("statusChanged", onStatus);
        signal?.removeEventListener("abort", onAbort);
        if (value instanceof Error) {
          reject(value);
          return;
        }
        // A server reports its tools right after its "ready" status, in the same run of code:
        // apply them once that run is over, then let the waiter go on.
        queueMicrotask(() => {
          this.flushToolsChanged();
          resolve(value);
        });
      };
      const onStatus = (): void => {
        if (!pending()) finish(true);
      };
      const onAbort = (): void => finish(new AbridgeError(ErrorCode.CANCELLED, "cancelled while upstreams were starting", { cause: signal?.reason }));
      const timer = setTimeout(() => finish(!pending()), timeoutMs);
      timer.unref();
      this.on("statusChanged", onStatus);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Recomputes every exposed name from the current tool lists. */
  private renameAll(): void {
    this.exposed.assign(this.connections.values(), this.configOrder);
  }

  /**
   * A connection's tools changed. During the first start, servers come up one after another and
   * each used to rename every tool of every server and have the catalog discover them all again:
   * quadratic work (50 servers, 50 passes over up to 350 tools) on the CPU the servers still
   * starting needed. So during the first start the changes of one turn of the event loop are
   * taken together, and anyone who waits for servers to settle ({@link waitSettled}) gets them
   * applied before going on. After the start, each change applies at once.
   */
  private connectionToolsChanged(server: string): void {
    if (this.started || this.closePromise) {
      this.handleToolsChanged(server);
      return;
    }
    if (this.pendingChanged === undefined) {
      this.pendingChanged = [];
      setImmediate(() => this.flushToolsChanged());
    }
    if (!this.pendingChanged.includes(server)) this.pendingChanged.push(server);
  }

  /** Applies the tool changes {@link connectionToolsChanged} took together, if any. */
  private flushToolsChanged(): void {
    const servers = this.pendingChanged;
    if (servers === undefined) return;
    this.pendingChanged = undefined;
    this.handleToolsChanged(servers.join(","));
  }

  private handleToolsChanged(server: string): void {
    try {
      this.renameAll();
    } catch (err) {
      // Only a name no suffix could make unique ends here: keep the old names (the new tool stays
      // unexposed) rather than breaking every other server's tools.
      this.logger.error("tool names could not be assigned after a change; keeping the previous names", {
        server,
        error: messageOf(err),
      });
    }
    this.emit("toolsChanged", server);
  }

  /** Re-lists every ready server's tools now; `toolsChanged` fires for each whose list changed. */
  async refresh(): Promise<void> {
    await Promise.allSettled([...this.connections.values()].map((c) => c.refresh()));
  }

  /** Status of every configured server, in name order. */
  servers(): ServerStatus[] {
    return [...this.connections.values()].map((c) => c.status()).sort((a, b) => compareStrings(a.name, b.name));
  }

  /** Status of one server, or `undefined` for an unknown name. */
  status(server: string): ServerStatus | undefined {
    return this.connections.get(server)?.status();
  }

  /** Every exposed tool (the `exposes` decision applied) with its exposed name and URI, sorted by server then tool. */
  tools(): ExposedTool[] {
    const out: ExposedTool[] = [];
    for (const connection of this.connections.values()) {
      for (const tool of connection.tools()) {
        const assigned = this.exposed.of(connection.name, tool.name);
        if (assigned) out.push({ server: connection.name, tool, name: assigned.name, uri: assigned.uri });
      }
    }
    return out.sort((a, b) => compareStrings(a.server, b.server) || compareStrings(a.tool.name, b.tool.name));
  }

  /** Maps an exposed name back to its origin. */
  resolve(exposedName: string): { server: string; tool: string } | undefined {
    const assigned = this.exposed.named(exposedName);
    return assigned ? { server: assigned.server, tool: assigned.tool } : undefined;
  }

  /** The exposed name of a tool, or `undefined` when it is not exposed. */
  exposedName(server: string, tool: string): string | undefined {
    return this.exposed.of(server, tool)?.name;
  }

  /** Pids of the stdio children currently alive under the pool (for tests and stats). */
  pids(): number[] {
    return [...this.connections.values()].flatMap((c) => c.pids());
  }

  private connection(server: string): Upstream {
    const connection = this.connections.get(server);
    if (!connection) throw new AbridgeError(ErrorCode.SERVER_NOT_FOUND, `no server named "${server}"`);
    return connection;
  }

  /**
   * Calls a tool on a server by its original (upstream) name. Timeout defaults to the server's
   * `timeout_ms` (`UPSTREAM_TIMEOUT`, retryable); the caller's abort cancels upstream and rejects
   * with `CANCELLED`; a call in flight when the server dies rejects with `UPSTREAM_EXITED`
   * (retryable); a call while it restarts fails fast with `UPSTREAM_UNAVAILABLE` (retryable).
   * `isError: true` results are returned, not thrown.
   */
  async callTool(server: string, tool: string, args: JsonObject | undefined, options: ForwardOptions = {}): Promise<CallToolResult> {
    return this.connection(server).callTool(tool, args, options);
  }

  /**
   * A server's own `tools/list` answer, every page joined, as sent (no allow/deny, nothing
   * normalized): what `abridge record` writes. A recorded server gives its file's tools.
   */
  async recordTools(server: string, options: ForwardOptions = {}): Promise<JsonObject[]> {
    return this.connection(server).recordTools(options);
  }

  /**
   * Forwards another request (`resources/read`, `prompts/get`, ...) to one server and returns
   * the result as sent.
   */
  async request(server: string, method: string, params?: JsonObject, options: ForwardOptions = {}): Promise<JsonObject> {
    return this.connection(server).request(method, params, options);
  }

  /**
   * Every item of a paginated list of one server, cursors followed, e.g.
   * `listAll("docs", "resources/list", "resources")`. `[]` when the server lacks the capability.
   */
  async listAll(server: string, method: string, key: string, options: ForwardOptions = {}): Promise<JsonObject[]> {
    return this.connection(server).listAll(method, key, options);
  }

  /**
   * Subscribes to updates of `uri` on `server`; the upstream is asked once however many clients
   * subscribe. Pair every call with {@link unsubscribeResource}.
   */
  async subscribeResource(server: string, uri: string, options: ForwardOptions = {}): Promise<void> {
    const key = `${server}\0${uri}`;
    const count = this.subscriptions.get(key) ?? 0;
    this.subscriptions.set(key, count + 1);
    if (count > 0) return;
    try {
      await this.connection(server).request("resources/subscribe", { uri }, options);
    } catch (err) {
      this.releaseSubscription(key);
      throw err;
    }
  }

  /** Drops one subscription to `uri`; the upstream is told when the last one goes. */
  async unsubscribeResource(server: string, uri: string, options: ForwardOptions = {}): Promise<void> {
    const key = `${server}\0${uri}`;
    if (!this.subscriptions.has(key)) return;
    if (this.releaseSubscription(key) > 0) return;
    await this.connection(server).request("resources/unsubscribe", { uri }, options);
  }

  /** Decrements a subscription count and returns what is left. */
  private releaseSubscription(key: string): number {
    const left = (this.subscriptions.get(key) ?? 1) - 1;
    if (left > 0) this.subscriptions.set(key, left);
    else this.subscriptions.delete(key);
    return left;
  }

  /** Closes every connection and ends every child process; idempotent, resolves when all are gone. */
  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    const results = await Promise.allSettled([...this.connections.values()].map((c) => c.close()));
    for (const result of results) {
      if (result.status === "rejected") this.logger.warn("closing an upstream failed", { error: String(result.reason) });
    }
    // Every child is gone: the watchdog has nothing left to guard and exits.
    this.watchdog.close();
  }
}

/** Each server's rank for name collisions: its place in `serverOrder`, else in `servers`. */
function orderOf(servers: readonly ServerConfig[], serverOrder: readonly string[] | undefined): Map<string, number> {
  const names = serverOrder ?? servers.map((s) => s.name);
  return new Map(names.map((name, i) => [name, i]));
}
