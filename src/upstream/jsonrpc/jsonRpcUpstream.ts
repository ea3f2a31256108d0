import { statSync, watch, type FSWatcher } from "node:fs";
import path from "node:path";
import { parseBackendAddress } from "../../config/backendAddress.js";
import type { ServerConfig } from "../../config/schema.js";
import { AbridgeError, ErrorCode, isAbridgeError, messageOf } from "../../model/errors.js";
import { compareStrings, isObject } from "../../model/json.js";
import type { CallToolResult, ForwardOptions, JsonObject, RawTool, ServerStatus } from "../../model/types.js";
import { DEFAULT_BACKOFF } from "../backoff.js";
import type { BackoffOptions } from "../backoff.js";
import { JsonRpcClient } from "./jsonRpcClient.js";
import type { BackendHealth } from "./jsonRpcClient.js";
import { loadManifests, renderManifestProblem } from "./jsonRpcManifests.js";
import type { HiddenTool, ManifestProblem, ParsedManifest } from "./jsonRpcManifests.js";
import { toolResultOf } from "./jsonRpcResult.js";
import { DEFAULT_JSONRPC_MAX_LINE_BYTES } from "./jsonRpcSocket.js";
import { RelistScheduler } from "../relistScheduler.js";
import { UpstreamBase } from "../upstreamBase.js";
import type { StatusExtras, UpstreamBaseOptions } from "../upstreamBase.js";
import { notReadyError } from "../upstreamErrors.js";
import type { Upstream } from "../upstream.js";

/** Quiet time after the last change under the manifests folder before it is read again. */
const DEFAULT_WATCH_DEBOUNCE_MS = 150;

/** Options of a {@link JsonRpcUpstream}. */
export interface JsonRpcUpstreamOptions extends UpstreamBaseOptions {
  /** Reconnect backoff; tests shorten it. */
  backoff?: BackoffOptions;
  /** Source of jitter for the backoff (default `Math.random`). */
  random?: () => number;
  /**
   * Largest line the backend may send (default {@link DEFAULT_JSONRPC_MAX_LINE_BYTES}, 16 MiB); a
   * longer one fails the call it answers and ends its connection.
   */
  maxLineBytes?: number;
  /** Quiet time that coalesces a burst of manifest edits into one re-list (default 150 ms). */
  watchDebounceMs?: number;
}

/**
 * A JSON-RPC 2.0 backend put behind MCP (`jsonrpc = "unix:/run/x.sock"`, `manifests = "dir"`):
 * its tools are what the manifests under `manifests` declare, each mapped to a JSON-RPC method;
 * a call sends that method with the arguments as `params` over a small pool of pipelined socket
 * connections (see {@link JsonRpcClient}) and turns the answer into a tool result (see
 * {@link toolResultOf}). The manifests folder is watched: an edit re-lists the server and the
 * pool tells the front ends (`list_changed`).
 *
 * The tool list does not depend on the socket: the manifests say what the backend offers, so
 * its tools stay listed while the backend is down, and the state says whether it can be reached
 * (`ready`; `failed` when it never could be; `restarting` when it went away), with calls failing
 * fast (`UPSTREAM_UNAVAILABLE`, retryable) until a reconnect, timed by the backoff, works. A
 * manifests folder that cannot be read leaves the server `failed` with `CONFIG_INVALID` (the pool
 * makes that fatal at start, like a bad `recorded` file); a bad manifest only costs its own tools.
 */
export class JsonRpcUpstream extends UpstreamBase implements Upstream {
  /** A JSON-RPC backend has tools only: no resources to subscribe to. */
  readonly resubscribeOnReady = false;
  private readonly client: JsonRpcClient;
  private readonly relists: RelistScheduler;
  private readonly watchDebounceMs: number;
  /** Tool name -> the JSON-RPC method a call sends. */
  private methods = new Map<string, string>();
  /** The manifests that parsed at the last load (stand-ins for files an edit broke). */
  private parsed = new Map<string, ParsedManifest>();
  private problems: ManifestProblem[] = [];
  /** The folder could not be read at start: a config error, the server stays failed. */
  private folderError: AbridgeError | undefined;
  private backendError: AbridgeError | undefined;
  private everUp = false;
  private watcher: FSWatcher | undefined;
  /** Inode of the folder {@link watcher} watches. */
  private watchedIno: number | undefined;
  private parentWatcher: FSWatcher | undefined;
  /** Hidden tools and problems already logged, so a re-list does not repeat them. */
  private readonly logged = new Set<string>();
  private startPromise: Promise<void> | undefined;
  private closed = false;

  constructor(config: ServerConfig, options: JsonRpcUpstreamOptions) {
    const address = config.jsonrpc === undefined ? undefined : parseBackendAddress(config.jsonrpc);
    if (address === undefined || config.manifests === undefined) {
      throw new AbridgeError(ErrorCode.INTERNAL, `server "${config.name}" has no jsonrpc address or manifests folder`);
    }
    super(config, options);
    this.watchDebounceMs = options.watchDebounceMs ?? DEFAULT_WATCH_DEBOUNCE_MS;
    this.client = new JsonRpcClient({
      address,
      label: config.jsonrpc!,
      logger: this.logger,
      backoff: options.backoff ?? DEFAULT_BACKOFF,
      random: options.random ?? Math.random,
      maxLineBytes: options.maxLineBytes ?? DEFAULT_JSONRPC_MAX_LINE_BYTES,
      connectTimeoutMs: () => this.config.connect_timeout_ms,
      onHealth: (health) => this.onHealth(health),
    });
    this.relists = new RelistScheduler(this.watchDebounceMs, () => this.relist());
  }

  protected override get transportName(): ServerStatus["transport"] {
    return "jsonrpc";
  }

  protected override get restartCount(): number {
    return 0;
  }

  protected override statusExtras(): StatusExtras {
    return this.folderError === undefined && this.state !== "disabled" ? { capabilities: { tools: { listChanged: true } } } : {};
  }

  /** The manifests folder (absolute after loading). */
  get manifestsDir(): string {
    return this.config.manifests ?? "";
  }

  /** The error that fails the pool's start: the manifests folder could not be read. */
  override startError(): AbridgeError | undefined {
    return this.folderError;
  }

  /** Lines from the backend that were not JSON-RPC answers (stats, tests). */
  get garbageLines(): number {
    return this.client.garbageLines;
  }

  /** No process of abridge's runs behind a JSON-RPC backend. */
  pids(): number[] {
    return [];
  }

  /**
   * Reads the manifests, starts watching them, and opens the first connection within
   * `connect_timeout_ms`. Never rejects: see the class for the states it leaves. Idempotent.
   */
  start(_signal?: AbortSignal): Promise<void> {
    this.startPromise ??= this.firstStart();
    return this.startPromise;
  }

  private async firstStart(): Promise<void> {
    if (!this.config.enabled || this.closed) return;
    try {
      await this.load();
    } catch (err) {
      if (this.closed) return;
      this.folderError = isAbridgeError(err) ? err : new AbridgeError(ErrorCode.CONFIG_INVALID, String(err), { cause: err });
      this.error = { code: this.folderError.code, message: this.folderError.message };
      this.logger.warn("JSON-RPC backend not started: its manifests cannot be read", { code: this.folderError.code, error: this.folderError.message });
      this.setState("failed");
      return;
    }
    this.watch();
    // Front ends may serve before this server is up: its first list is a change for them. Told
    // now, before connecting: the list does not depend on the socket, and a front end that waits
    // for the state to leave `connecting` must find the tools named by then.
    if (this.toolList.length > 0) this.onToolsChanged?.();
    await this.client.start();
    if (this.closed) return;
    this.logger.info("JSON-RPC backend listed", { tools: this.toolList.length, state: this.state });
  }

  /** Reads the manifests; the exposed list changes in place. True when it differs from before. */
  private async load(): Promise<boolean> {
    const set = await loadManifests(this.manifestsDir, `servers.${this.name}.manifests`, this.parsed);
    if (this.closed) return false;
    const before = JSON.stringify(this.toolList);
    this.parsed = set.parsed;
    this.problems = set.problems;
    const tools = set.tools.sort((a, b) => compareStrings(a.tool.name, b.tool.name));
    this.methods = new Map(tools.map((t) => [t.tool.name, t.method]));
    this.listedTools = tools.map((t) => t.tool);
    this.toolList = this.exposed(this.listedTools);
    this.report(set.hidden, set.problems);
    this.updateError();
    return JSON.stringify(this.toolList) !== before;
  }

  /** Logs each hidden tool and each problem once (again only after it went away and came back). */
  private report(hidden: readonly HiddenTool[], problems: readonly ManifestProblem[]): void {
    const now = new Set<string>();
    for (const h of hidden) {
      const key = `hidden\0${h.file}\0${h.tool}\0${h.reason}`;
      now.add(key);
      // Kept from MCP on purpose is news only at info; a tool with nothing to call is likely a slip.
      if (!this.logged.has(key))
        this.logger[h.kind === "mcpExpose" ? "info" : "warn"]("manifest tool not exposed", { tool: h.tool, file: h.file, reason: h.reason });
    }
    for (const p of problems) {
      const line = renderManifestProblem(p);
      now.add(`problem\0${line}`);
      if (!this.logged.has(`problem\0${line}`)) this.logger.warn(`manifest problem: ${line}`, { code: ErrorCode.CONFIG_INVALID });
    }
    this.logged.clear();
    for (const key of now) this.logged.add(key);
  }

  /** The status error: the backend's when it is down, else the manifests' problems. */
  private updateError(): void {
    if (this.backendError !== undefined) {
      this.error = { code: this.backendError.code, message: this.backendError.message };
    } else if (this.problems.length > 0) {
      this.error = { code: ErrorCode.CONFIG_INVALID, message: this.problems.map(renderManifestProblem).join("\n") };
    } else {
      this.error = undefined;
    }
  }

  private onHealth(health: BackendHealth): void {
    if (this.closed) return;
    if (health.up) {
      if (this.everUp && this.state !== "ready") this.logger.info("JSON-RPC backend reachable again");
      this.everUp = true;
      this.backendError = undefined;
      this.startedAt = new Date().toISOString();
      this.updateError();
      this.setState("ready");
      return;
    }
    this.backendError = health.error;
    this.updateError();
    // Only the change is a warning: a backend that stays down is retried for as long as abridge runs.
    if (this.state === "ready" || this.state === "connecting") this.logger.warn("JSON-RPC backend unreachable", { error: health.error.message });
    this.setState(this.everUp ? "restarting" : "failed");
  }

  /**
   * Watches the manifests folder (recursively) and its parent (for the folder itself being
   * replaced, removed or put back); changes are debounced into one re-list. A watch that fails is
   * logged and the server keeps its tools; {@link refresh} still re-reads them.
   */
  private watch(): void {
    if (this.closed) return;
    const dir = this.manifestsDir;
    if (this.parentWatcher === undefined) {
      const base = path.basename(dir);
      this.parentWatcher = this.watchPath(path.dirname(dir), false, (name) => name === base);
    }
    // A folder replaced by a new one (a deploy renames it into place) is another inode: the old
    // watch would see nothing more, so it is renewed whenever the inode differs.
    let ino: number | undefined;
    try {
      ino = statSync(dir).ino;
    } catch {
      ino = undefined;
    }
    if (ino === this.watchedIno && this.watcher !== undefined) return;
    this.watcher?.close();
    this.watcher = undefined;
    this.watchedIno = ino;
    if (ino !== undefined) this.watcher = this.watchPath(dir, true, () => true);
  }

  private watchPath(target: string, recursive: boolean, relevant: (name: string | null) => boolean): FSWatcher | undefined {
    try {
      const watcher = watch(target, { recursive, persistent: false }, (_event, name) => {
        if (relevant(name === null ? null : name.toString())) this.relists.schedule();
      });
      watcher.on("error", (err) => {
        this.logger.debug("a manifests watch ended", { path: target, error: err.message });
        watcher.close();
        if (this.watcher === watcher) this.watcher = undefined;
        if (this.parentWatcher === watcher) this.parentWatcher = undefined;
      });
      return watcher;
    } catch (err) {
      this.logger.warn("cannot watch the manifests; edits are picked up on the next refresh", { path: target, error: messageOf(err) });
      return undefined;
    }
  }

  /** Reads the manifests again now; `onToolsChanged` fires when the exposed list differs. */
  async refresh(): Promise<void> {
    if (this.startPromise) await this.startPromise;
    if (this.state === "disabled" || this.closed || this.folderError !== undefined) return;
    await this.relists.now();
  }

  private async relist(): Promise<void> {
    if (this.closed || this.folderError !== undefined) return;
    const errorBefore = JSON.stringify(this.error);
    let changed: boolean;
    try {
      changed = await this.load();
      // The folder may have been replaced (a deploy renames a new one into place): watch again.
      this.watch();
    } catch (err) {
      if (this.closed) return;
      // The folder went away: no manifests, no tools (a call to one of them is now unknown).
      const error = isAbridgeError(err) ? err : new AbridgeError(ErrorCode.CONFIG_INVALID, String(err), { cause: err });
      this.logger.warn("manifests cannot be read; the server lists no tools until they can", { code: error.code, error: error.message });
      const before = JSON.stringify(this.toolList);
      this.parsed = new Map();
      this.methods = new Map();
      this.listedTools = [];
      this.toolList = [];
      this.problems = [{ file: this.manifestsDir, field: "", message: error.message }];
      this.updateError();
      // The parent's watch tells when it is back.
      this.watch();
      changed = before !== "[]";
    }
    this.logger.info("manifests re-read", { tools: this.toolList.length, changed });
    // A new problem (or one fixed) changes the status even when the tools stay.
    if (changed || JSON.stringify(this.error) !== errorBefore) this.onStatusChanged?.(this.status());
    if (changed) this.onToolsChanged?.();
  }

  /**
   * Calls `tool`: its mapped method with the arguments as `params` (`{}` when there are none). A
   * tool hidden by the exposure decision is refused with `TOOL_FILTERED` before anything is sent;
   * a tool no manifest exposes is `TOOL_NOT_FOUND`. Failures other than the backend's own error
   * object reject (see {@link JsonRpcClient.call}), their message naming the server.
   */
  async callTool(tool: string, args: JsonObject | undefined, options: ForwardOptions = {}): Promise<CallToolResult> {
    if (!this.isExposed(tool)) throw new AbridgeError(ErrorCode.TOOL_FILTERED, `${this.name}: tool "${tool}" is not allowed by allow/deny`);
    if (this.closed || this.state === "disabled" || this.folderError !== undefined) throw notReadyError(this.name, this.state, this.error);
    const method = this.methods.get(tool);
    if (method === undefined || !this.isListedTool(tool)) throw new AbridgeError(ErrorCode.TOOL_NOT_FOUND, `${this.name}: no tool "${tool}"`);
    try {
      const outcome = await this.client.call(method, args ?? {}, {
        timeoutMs: options.timeoutMs ?? this.config.timeout_ms,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      return toolResultOf(outcome);
    } catch (err) {
      if (!isAbridgeError(err)) throw err;
      throw new AbridgeError(err.code, `${this.name}: ${err.message}`, {
        cause: err,
        retryable: err.retryable,
        ...(err.details ? { details: err.details } : {}),
      });
    }
  }

  /** `tools/call` and `tools/list` are answered; a JSON-RPC backend has no resources or prompts. */
  async request(method: string, params: JsonObject | undefined, options: ForwardOptions = {}): Promise<JsonObject> {
    if (method === "tools/call") {
      const name = params?.name;
      if (typeof name !== "string") throw new AbridgeError(ErrorCode.INVALID_ARGUMENTS, "tools/call needs a tool name");
      const args = params?.arguments;
      return this.callTool(name, isObject(args) ? (args as JsonObject) : undefined, options);
    }
    if (method === "tools/list") return { tools: this.tools() };
    throw new AbridgeError(ErrorCode.CAPABILITY_UNSUPPORTED, `${this.name} is a JSON-RPC backend with tools only; ${method} was not sent`);
  }

  /** `tools/list` gives the exposed tools; nothing else is listed (`[]`). */
  async listAll(method: string, _key: string, _options: object = {}): Promise<JsonObject[]> {
    return method === "tools/list" ? this.tools() : [];
  }

  /** The tools the manifests expose, before allow/deny (what `abridge record` writes). */
  async recordTools(_options: object = {}): Promise<JsonObject[]> {
    if (this.folderError !== undefined) throw notReadyError(this.name, this.state, this.error);
    return this.listedTools.map((tool: RawTool) => ({ ...tool }));
  }

  /** Stops watching and closes every connection; calls still waiting fail. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.relists.stop();
    this.watcher?.close();
    this.watcher = undefined;
    this.parentWatcher?.close();
    this.parentWatcher = undefined;
    this.client.close();
    if (this.state !== "disabled") this.setState("closed");
  }
}
