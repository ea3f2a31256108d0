import path from "node:path";
import type { CallCounts } from "../cache/callCounts.js";
import type { JsonlStore } from "../cache/jsonlStore.js";
import { CALL_TOOL, GET_SCHEMA, getSchemaResult, isMetaTool, SEARCH_TOOLS, searchResultText } from "../catalog/metaTools.js";
import { ToolCatalog, type DiscoveryCounts, type DiscoverOptions } from "../catalog/toolCatalog.js";
import type { CatalogTool, ListedTool, Mode } from "../catalog/types.js";
import type { SearchResult } from "../catalog/searchIndex.js";
import type { Config } from "../config/schema.js";
import { AbridgeError, ErrorCode, isAbridgeError } from "../model/errors.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { CallGuard, READ_OUTPUT } from "../policy/callGuard.js";
import { extraMetaTools } from "../policy/readOutputTool.js";
import type { SummarizeQueue, SummarizeQueueStats } from "../summarize/summarizeQueue.js";
import type { Summarizer } from "../summarize/types.js";
import type { BackoffOptions } from "../upstream/backoff.js";
import { clientPrefixedMatches, isClientPrefix, parseToolUri, sanitizeName } from "../model/names.js";
import { assertNotNested, childMarkerEnv } from "../upstream/nestedAbridge.js";
import type { CallToolResult, JsonObject, ServerStatus } from "../model/types.js";
import { UpstreamPool } from "../upstream/upstreamPool.js";
import { openSummaryPipeline } from "./summaryPipeline.js";
import { closestNames } from "../util/suggest.js";
import { VERSION } from "../model/version.js";

/**
 * How much longer than a server's `connect_timeout_ms` a request waits for that server to be
 * ready or failed: the connection's own timer fires first and its error is the better answer.
 */
export const START_WAIT_SLACK_MS = 1_000;

/** Options of {@link Bridge.open}. */
export interface BridgeOptions {
  config: Config;
  /** Path of `summaries.jsonl`. */
  cacheFile: string;
  /** Environment for the summarizer's API key. */
  env: Record<string, string | undefined>;
  logger?: Logger;
  /** Use this summarizer instead of the one `[summary]` names (tests, `--summarizer`). */
  summarizer?: Summarizer;
  /** Quiet time that turns a burst of new summaries into one list change (default 250 ms). */
  changeDebounceMs?: number;
  /** Restart backoff of the upstream pool (tests shorten it). */
  backoff?: BackoffOptions;
  /** Base backoff of summarizer retries (tests shorten it). */
  summaryBackoffMs?: number;
  /** `--read-only` on `serve`/`daemon`: only tools annotated readOnlyHint: true, everywhere. */
  forceReadOnly?: boolean;
  /** State dir for spilled outputs (default: `--state-dir`/config/XDG lookup from `env`). */
  stateDir?: string;
}

/** Options of a call made through the bridge. */
export interface BridgeCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  onProgress?: (update: { progress: number; total?: number; message?: string }) => void;
  /**
   * The mode the caller was shown. In `compact` and `lazy` the model saw no full schema, so
   * arguments are validated against it before forwarding; in `full` and `summary` it did.
   */
  mode?: Mode;
  /** Who is calling, for the audit log (`stdio`, `http`, `daemon`, `cli`). */
  client?: string;
}

/** What `stats` reports. */
export interface BridgeStats {
  version: string;
  uptimeMs: number;
  upstreams: ServerStatus[];
  catalog: { tools: number; summarized: number; hits: number; misses: number };
  queue: SummarizeQueueStats;
  cache: { entries: number; invalidLines: number; writeErrors: number };
  calls: { total: number; failed: number; invalidArguments: number; inFlight: number };
}

/**
 * The core every front end shares (`serve`, the daemon, the CLI): the upstream pool, the summary
 * cache and its background queue, and the tool catalog with its views. A front end is a thin
 * translation of its protocol onto these methods.
 */
export class Bridge {
  private currentConfig: Config;
  readonly pool: UpstreamPool;
  readonly store: JsonlStore;
  readonly queue: SummarizeQueue;
  readonly catalog: ToolCatalog;
  readonly summarizer: Summarizer;
  /** Permission policy, output limits, trust marking and audit of every call. */
  readonly guard: CallGuard;
  private readonly logger: Logger;
  private readonly startedAt = Date.now();
  private readonly calls = { total: 0, failed: 0, invalidArguments: 0, inFlight: 0 };
  private closePromise: Promise<void> | undefined;
  private startPromise: Promise<DiscoveryCounts[]> | undefined;
  private startedAtMs: number | undefined;
  /** The start has settled (every server ready or failed once). */
  private startSettled = false;
  /** A front end serves while the start runs ({@link begin}): discover each server as it comes up. */
  private serving = false;
  private lastDiscovery: DiscoveryCounts[] = [];
  /** Calls per tool, kept beside the cache for `mode = "auto"`. */
  readonly callCounts: CallCounts;
  /** Hands the call counts to the catalog every `auto_update_minutes` (auto mode only). */
  private readonly countsTimer: NodeJS.Timeout | undefined;

  private constructor(
    options: BridgeOptions,
    store: JsonlStore,
    catalog: ToolCatalog,
    queue: SummarizeQueue,
    summarizer: Summarizer,
    guard: CallGuard,
    callCounts: CallCounts,
  ) {
    this.currentConfig = options.config;
    this.callCounts = callCounts;
    catalog.setCallCounts(callCounts.snapshot());
    if (options.config.mode === "auto") {
      // The auto list follows the counts only at this pace, so a client's prompt cache holds
      // between two updates however busy the tools are.
      this.countsTimer = setInterval(() => catalog.setCallCounts(callCounts.snapshot()), options.config.auto_update_minutes * 60_000);
      this.countsTimer.unref();
    }
    this.guard = guard;
    this.logger = options.logger ?? silentLogger;
    this.store = store;
    this.catalog = catalog;
    this.queue = queue;
    this.summarizer = summarizer;
    this.pool = new UpstreamPool({
      servers: options.config.servers,
      separator: options.config.separator,
      ...(options.config.serverOrder !== undefined ? { serverOrder: options.config.serverOrder } : {}),
      // What a sandboxed server must not read: the summary cache, spilled outputs of every server,
      // the state dir (the daemon's lockfile holds its token), the audit log and the config file.
      // Folders end in a separator: one not there yet is created as a folder before the spawn.
      sandboxHide: [
        `${path.dirname(options.cacheFile)}${path.sep}`,
        `${path.dirname(guard.spillDir)}${path.sep}`,
        ...(options.config.audit_log !== undefined ? [options.config.audit_log] : []),
        ...(path.isAbsolute(options.config.source) ? [options.config.source] : []),
      ],
      logger: this.logger,
      // The policy's allow/deny: a tool it hides is not listed, counted or forwarded by the pool.
      exposes: (server, tool) => guard.exposes(server, tool),
      // Lets an abridge among the servers see that it would serve this config again.
      childEnv: childMarkerEnv(options.config.source, options.env),
      clientInfo: { name: "abridge", version: VERSION },
      ...(options.backoff ? { backoff: options.backoff } : {}),
    });
    // While a plain start() runs, its own discovery at the end counts every server once (what
    // `summarize warm` and `tools` report); a front end that serves during the start (begin())
    // needs each server's tools as soon as it is ready.
    this.pool.on("toolsChanged", () => {
      if (this.startSettled || this.serving) this.discover();
    });
  }

  /** Opens the cache and builds every part; upstreams connect on {@link start}. */
  static async open(options: BridgeOptions): Promise<Bridge> {
    // First, before any file is opened: an abridge started by one serving the same config must
    // stop at once, so that its parent hears of it at once and not after a timeout.
    assertNotNested(options.config.source, options.env);
    const logger = options.logger ?? silentLogger;
    const { store, catalog, queue, summarizer, callCounts } = await openSummaryPipeline({
      cacheFile: options.cacheFile,
      summary: options.config.summary,
      env: options.env,
      logger,
      separator: options.config.separator,
      compactSchema: options.config.compact_schema,
      auto: { tokenBudget: options.config.token_budget, pins: options.config.pin },
      ...(options.summarizer !== undefined ? { summarizer: options.summarizer } : {}),
      ...(options.summaryBackoffMs !== undefined ? { summaryBackoffMs: options.summaryBackoffMs } : {}),
      ...(options.changeDebounceMs !== undefined ? { changeDebounceMs: options.changeDebounceMs } : {}),
    });
    let bridge: Bridge | undefined;
    // Follows the config in force, so a reloaded config's gates apply from the next call on.
    const guard = await CallGuard.open({
      config: () => bridge?.config ?? options.config,
      env: options.env,
      logger,
      ...(options.stateDir !== undefined ? { stateDir: options.stateDir } : {}),
      ...(options.forceReadOnly ? { forceReadOnly: true } : {}),
    });
    bridge = new Bridge(options, store, catalog, queue, summarizer, guard, callCounts);
    return bridge;
  }

  /**
   * Connects every upstream (in parallel; failures are reported in {@link servers}) and resolves
   * once each is ready or failed, with the discovery of them all. Tools of each server enter the
   * catalog as soon as that server is ready, so a front end may serve before this resolves (see
   * {@link begin}). Idempotent.
   */
  start(signal?: AbortSignal, discover: DiscoverOptions = {}): Promise<DiscoveryCounts[]> {
    this.startedAtMs ??= Date.now();
    this.startPromise ??= this.pool.start(signal).then(() => {
      this.startSettled = true;
      return this.discover(discover);
    });
    return this.startPromise;
  }

  /**
   * {@link start} without waiting for it: what front ends do, so that a client is answered at once
   * while slow upstreams connect. A start that fails as a whole (a name collision of `prefix =
   * false` servers, a cancelled start) is logged; servers that fail are in {@link servers}.
   */
  begin(signal?: AbortSignal): void {
    this.serving = true;
    this.start(signal).catch((err: unknown) => {
      if (!isAbridgeError(err, ErrorCode.CANCELLED)) this.logger.error("upstreams failed to start", { error: err instanceof Error ? err.message : String(err) });
    });
  }

  /**
   * Waits until no upstream is still making its first connection, at most until `graceMs` after
   * the start: a front end answering its first `tools/list` gives slow servers this long, then lists what is ready (the
   * rest follow with a list change). Resolves true when every server settled.
   *
   * @throws AbridgeError CANCELLED when `signal` aborts first.
   */
  waitForUpstreams(graceMs: number, signal?: AbortSignal): Promise<boolean> {
    // The grace counts from the start, not from each request: once it has passed, lists answer
    // at once with what is ready, however many servers still hang.
    const leftMs = (this.startedAtMs ?? Date.now()) + graceMs - Date.now();
    if (leftMs <= 0) return Promise.resolve(this.pool.servers().every((s) => s.state !== "connecting"));
    return this.pool.waitSettled(undefined, leftMs, signal);
  }

  /** Re-reads the pool's tools into the catalog, queueing summaries for misses. */
  discover(options: DiscoverOptions = {}): DiscoveryCounts[] {
    // Tools the permission policy hides never reach the catalog (nor search, get_schema, lists).
    this.lastDiscovery = this.catalog.setTools(this.guard.visibleTools(this.pool.tools()), options);
    return this.lastDiscovery;
  }

  /** The config in force (replaced by {@link applyConfig}). */
  get config(): Config {
    return this.currentConfig;
  }

  /**
   * Applies an edited config without a restart: servers added, removed or changed are connected,
   * closed or reconnected (calls in flight to unchanged servers go on), filters re-applied, and
   * the catalog re-discovered, which tells clients once. `mode`, `separator` and `[summary]` keep
   * their running values until a restart (front ends and cache keys depend on them); the returned
   * list names what was kept. Servers where only filters, prefix, timeouts or policy settings
   * changed are `updated` in place, without a reconnect.
   */
  async applyConfig(
    config: Config,
    signal?: AbortSignal,
  ): Promise<{ added: string[]; removed: string[]; changed: string[]; updated: string[]; needsRestart: string[] }> {
    const needsRestart: string[] = [];
    const running = this.currentConfig;
    if (config.mode !== running.mode) needsRestart.push("mode");
    if (config.separator !== running.separator) needsRestart.push("separator");
    if (JSON.stringify(config.summary) !== JSON.stringify(running.summary)) needsRestart.push("summary");
    // Opened once at start: the audit log (and whether it records argument values), the state dir
    // (spilled outputs) and the cache. The config in force keeps their running values, so nothing
    // claims a setting that is not applied (turning audit_arguments off must not look done).
    const fixedAtStart = [
      "audit_log",
      "audit_arguments",
      "state_dir",
      "cache_dir",
      "compact_schema",
      "token_budget",
      "auto_update_minutes",
    ] as const;
    for (const key of fixedAtStart) if (config[key] !== running[key]) needsRestart.push(key);
    if (JSON.stringify(config.pin) !== JSON.stringify(running.pin)) needsRestart.push("pin");
    this.currentConfig = {
      ...config,
      mode: running.mode,
      separator: running.separator,
      summary: running.summary,
      audit_log: running.audit_log,
      audit_arguments: running.audit_arguments,
      state_dir: running.state_dir,
      cache_dir: running.cache_dir,
      compact_schema: running.compact_schema,
      token_budget: running.token_budget,
      auto_update_minutes: running.auto_update_minutes,
      pin: running.pin,
    };
    // The guard follows `config` and so applies the new policy from now on; the list must follow
    // now as well, not once new servers have connected (up to connect_timeout_ms), or a tool just
    // made read-only stays listed and a tool just allowed stays hidden meanwhile. reconfigure
    // applies removals and filter edits before its first await, so this discovery sees them.
    const reconfigured = this.pool.reconfigure(config.servers, signal, config.serverOrder);
    this.discover();
    const result = await reconfigured;
    this.discover();
    return { ...result, needsRestart };
  }

  /** Re-lists every upstream and re-discovers (the daemon's `refresh`). */
  async refresh(): Promise<DiscoveryCounts[]> {
    await this.pool.refresh();
    return this.discover();
  }

  /** Per-server counts of the last discovery. */
  discovery(): DiscoveryCounts[] {
    return this.lastDiscovery;
  }

  /** Status of every upstream. */
  servers(): ServerStatus[] {
    return this.pool.servers();
  }

  /**
   * The tools that best fit a task description, best first, ranked as the `search_tools`
   * meta-tool ranks them (it calls this); `limit` is clamped as there.
   */
  search(query: string, limit?: number): SearchResult[] {
    return this.catalog.search(query, limit);
  }

  /** The tool list a client sees in `mode`. */
  list(mode: Mode = this.config.mode): ListedTool[] {
    const extra = extraMetaTools(this.config);
    return extra.length === 0 ? this.catalog.list(mode) : [...this.catalog.list(mode), ...extra];
  }

  /** A digest of {@link list}(mode): equal digests, equal lists. Computed once per list change. */
  listDigest(mode: Mode = this.config.mode): string {
    const extra = extraMetaTools(this.config);
    // The extra meta tools follow the config; their names tell which are there.
    return extra.length === 0 ? this.catalog.listDigest(mode) : `${this.catalog.listDigest(mode)}+${extra.map((t) => t.name).join(",")}`;
  }

  /** Calls `listener` (debounced) whenever the tool list may have changed. */
  onListChanged(listener: () => void): () => void {
    return this.catalog.onChange(listener);
  }

  /**
   * The tool a name refers to: an exposed name, `mcp://server/tool`, `server/tool`, or an exposed
   * name behind the prefix a client added to it (`mcp__abridge__everything_echo`, see
   * {@link clientPrefixedMatches}) when exactly one tool matches that way.
   *
   * @throws AbridgeError TOOL_NOT_FOUND with the closest names (or the several that matched) in the message.
   */
  resolveTool(name: string): CatalogTool {
    const direct = this.catalog.get(name);
    if (direct) return direct;
    const origin = parseToolUri(name) ?? splitServerTool(name);
    const byOrigin = origin ? this.catalog.find(origin.server, origin.tool) : undefined;
    if (byOrigin) return byOrigin;
    const prefixed = clientPrefixedMatches(name, this.catalog.names());
    const single = prefixed.length === 1 ? this.catalog.get(prefixed[0] as string) : undefined;
    if (single) return single;
    const near = prefixed.length > 1 ? prefixed : closestNames(name, this.catalog.names());
    const hint = prefixed.length > 1 ? `; it ends with the names of several tools, use one of: ` : "; closest: ";
    throw new AbridgeError(
      ErrorCode.TOOL_NOT_FOUND,
      `unknown tool "${name}"${near.length > 0 ? `${hint}${near.join(", ")}` : ""}`,
      { details: { tool: name, suggestions: near } },
    );
  }

  /**
   * Calls a tool by the name the client was shown, meta-tools included. Argument errors in
   * `compact`/`lazy` come back as a tool error carrying the full schema, so the model can correct
   * itself in one step; upstream tool errors stay tool results.
   */
  async callTool(name: string, args: JsonObject | undefined, options: BridgeCallOptions = {}): Promise<CallToolResult> {
    const mode = options.mode ?? this.config.mode;
    if (isMetaTool(name) && (mode === "compact" || mode === "lazy" || mode === "auto") && !this.catalog.get(name)) {
      return this.callMetaTool(name, args ?? {}, options);
    }
    if (name === READ_OUTPUT && this.guard.spills && !this.catalog.get(name)) return this.guard.readOutput(args ?? {});
    const resolved = await this.resolveOrRefuse(name, args, options);
    if ("refused" in resolved) return resolved.refused;
    return this.callResolved(resolved.tool, args, { ...options, mode });
  }

  /**
   * {@link resolveTool}, except that a name the policy hides (the model guessed it, or kept it
   * from before a reload) gets the refusal naming the rule, audited, instead of "unknown tool".
   * Only tools the server really listed, or names a deny/allow glob covers, are refused; a typo
   * stays TOOL_NOT_FOUND with suggestions.
   */
  private async resolveOrRefuse(name: string, args: JsonObject | undefined, options: BridgeCallOptions): Promise<{ tool: CatalogTool } | { refused: CallToolResult }> {
    try {
      return { tool: await this.resolveWhenStarted(name, options.signal) };
    } catch (err) {
      if (!(err instanceof AbridgeError) || err.code !== ErrorCode.TOOL_NOT_FOUND) throw err;
      const candidates: { server: string; tool: string }[] = [];
      const exposed = this.pool.resolve(name);
      if (exposed) candidates.push(exposed);
      const origin = parseToolUri(name) ?? splitServerTool(name);
      if (origin) candidates.push(origin);
      for (const server of this.config.servers) {
        const prefix = `${server.name}${this.config.separator}`;
        if (!server.prefix) candidates.push({ server: server.name, tool: name });
        else if (name.startsWith(prefix) && name.length > prefix.length) candidates.push({ server: server.name, tool: name.slice(prefix.length) });
      }
      for (const candidate of candidates) {
        const decision = this.guard.check(candidate.server, candidate.tool);
        if (decision.allowed) continue;
        const byGlob = decision.rule.startsWith(`servers.${candidate.server}.deny[`) || decision.rule === `servers.${candidate.server}.allow`;
        if (!byGlob && !this.guard.known(candidate.server, candidate.tool)) continue;
        const refused = await this.guard.refuse(decision, {
          ...(options.client !== undefined ? { client: options.client } : {}),
          ...candidate,
          args: args ?? {},
          startedMs: Date.now(),
        });
        return { refused };
      }
      throw this.unavailableServerError(name) ?? err;
    }
  }

  /**
   * {@link resolveTool}, but a name that no listed tool has yet, while the server it points into
   * is still making its first connection, waits for that server (at most its
   * `connect_timeout_ms`, whose own timer fails it first): a client served before every upstream
   * was up may call a tool it learned of elsewhere. A name that points into no server waits for
   * the `prefix = false` servers still starting, which could own any name.
   */
  private async resolveWhenStarted(name: string, signal?: AbortSignal): Promise<CatalogTool> {
    const exact = this.catalog.get(name);
    if (exact) return exact;
    // Any other form (a URI, a client's prefix, a typo) may also be claimed by a `prefix = false`
    // server still starting: resolving it before that server is up could pick one tool where
    // there will be two, so those servers are waited for too.
    const owner = this.serverOfName(name);
    const waitFor = this.config.servers.filter((s) => (s.name === owner || !s.prefix) && this.pool.isStarting(s.name));
    if (waitFor.length > 0) {
      const boundMs = Math.max(...waitFor.map((s) => s.connect_timeout_ms)) + START_WAIT_SLACK_MS;
      await this.pool.waitSettled(waitFor.map((s) => s.name), boundMs, signal);
    }
    return this.resolveTool(name);
  }

  /**
   * The configured server a name points into: from `mcp://server/tool`, `server/tool`, or the
   * longest `<server><separator>` prefix of the name (with servers `a` and `a_b`, `a_b_x` belongs
   * to `a_b`), also behind a client's own prefix. Names of `prefix = false` servers carry no
   * server: `undefined`.
   */
  private serverOfName(name: string): string | undefined {
    const servers = this.config.servers;
    const origin = parseToolUri(name) ?? splitServerTool(name);
    let server = origin !== undefined && servers.some((s) => s.name === origin.server) ? origin.server : undefined;
    if (server === undefined) {
      for (const candidate of servers) {
        if (!candidate.prefix) continue;
        // Exposed names are sanitized, prefix included (`my.server` -> `my_server_`).
        const prefix = sanitizeName(`${candidate.name}${this.config.separator}`);
        // Our name as is, or behind a client's own prefix (`mcp__abridge__everything_echo`).
        const at = name.startsWith(prefix) ? 0 : clientPrefixedStart(name, prefix);
        if (at >= 0 && name.length > at + prefix.length && (server === undefined || candidate.name.length > server.length)) server = candidate.name;
      }
    }
    return server;
  }

  /**
   * For a name that no listed tool has but that points into a configured server which is not
   * ready (failed at start, restarting, still connecting, disabled): the error naming that server
   * and why, since its tools are missing only because it is down and "unknown tool" would send the
   * model looking for another name (see {@link serverOfName}).
   */
  private unavailableServerError(name: string): AbridgeError | undefined {
    const server = this.serverOfName(name);
    if (server === undefined) return undefined;
    const status = this.pool.status(server);
    if (status === undefined || status.state === "ready") return undefined;
    const why = status.error !== undefined ? `: ${status.error.message}` : "";
    const retryable = status.state !== "disabled" && status.state !== "closed";
    return new AbridgeError(
      ErrorCode.UPSTREAM_UNAVAILABLE,
      `server "${server}" is ${status.state}${why}; "${name}" cannot be called until it is ready${retryable ? " (abridge keeps trying to connect)" : ""}`,
      { retryable, details: { server, tool: name, state: status.state, ...(status.error !== undefined ? { error: status.error } : {}) } },
    );
  }

  /** Calls `tool` of `server` (the daemon's and the CLI's form), validating like {@link callTool}. */
  async callServerTool(server: string, tool: string, args: JsonObject | undefined, options: BridgeCallOptions = {}): Promise<CallToolResult> {
    let found = this.catalog.find(server, tool);
    if (!found) {
      // Let the pool give the precise reason (unknown server, filtered tool, server down).
      const config = this.config.servers.find((s) => s.name === server);
      if (!config || !this.pool.status(server)) {
        throw new AbridgeError(ErrorCode.SERVER_NOT_FOUND, `unknown server "${server}"`, { details: { server } });
      }
      // Still connecting: wait for it (its own connect timer ends the wait with the reason).
      if (this.pool.isStarting(server)) await this.pool.waitSettled([server], config.connect_timeout_ms + START_WAIT_SLACK_MS, options.signal);
      found = this.catalog.find(server, tool);
      if (!found) return this.forward(server, tool, args, options);
    }
    return this.callResolved(found, args, options);
  }

  /**
   * {@link getSchema}, waiting first for a server that is still starting and owns the name (as a
   * call does).
   */
  async schemaWhenStarted(name: string, signal?: AbortSignal): Promise<ReturnType<typeof getSchemaResult>> {
    try {
      return getSchemaResult(await this.resolveWhenStarted(name, signal));
    } catch (err) {
      if (isAbridgeError(err, ErrorCode.TOOL_NOT_FOUND)) throw this.unavailableServerError(name) ?? err;
      throw err;
    }
  }

  /** The full original schema and description of a tool (`get_schema`). */
  getSchema(name: string): ReturnType<typeof getSchemaResult> {
    try {
      return getSchemaResult(this.resolveTool(name));
    } catch (err) {
      // A tool of a server that is down is missing for that reason, not because the name is wrong.
      if (isAbridgeError(err, ErrorCode.TOOL_NOT_FOUND)) throw this.unavailableServerError(name) ?? err;
      throw err;
    }
  }

  /** Counters and states for `stats`. */
  stats(): BridgeStats {
    const store = this.store.stats();
    return {
      version: VERSION,
      uptimeMs: Date.now() - this.startedAt,
      upstreams: this.pool.servers(),
      catalog: this.catalog.stats(),
      queue: this.queue.stats(),
      cache: { entries: store.liveKeys, invalidLines: store.invalidLines, writeErrors: store.writeErrors },
      calls: { ...this.calls },
    };
  }

  /**
   * Ends everything in order: no new list changes, the summary queue (entries are whole lines, so
   * an aborted job loses nothing already written), the upstreams (children are killed), the cache.
   * Idempotent.
   */
  close(): Promise<void> {
    this.closePromise ??= (async () => {
      if (this.countsTimer !== undefined) clearInterval(this.countsTimer);
      this.catalog.close();
      const results = await Promise.allSettled([this.queue.close({ abortRunning: true }), this.pool.close(), this.callCounts.close()]);
      await this.store.close();
      await this.guard.close();
      for (const result of results) {
        if (result.status === "rejected") this.logger.warn("error while closing", { error: String(result.reason) });
      }
    })();
    return this.closePromise;
  }

  private async callResolved(tool: CatalogTool, args: JsonObject | undefined, options: BridgeCallOptions): Promise<CallToolResult> {
    const mode = options.mode ?? this.config.mode;
    if (mode === "compact" || mode === "lazy" || mode === "auto") {
      const result = this.catalog.validate(tool, args ?? {});
      if (!result.ok) {
        this.calls.invalidArguments += 1;
        await this.guard.audit({
          ...(options.client !== undefined ? { client: options.client } : {}),
          server: tool.server,
          tool: tool.tool.name,
          args: args ?? {},
          outcome: "invalid_arguments",
          startedMs: Date.now(),
        });
        const schema = getSchemaResult(tool);
        return {
          isError: true,
          content: [
            {
              type: "text",
              text: `${result.text}\nThe call was not forwarded. Full schema of ${tool.name}:\n${JSON.stringify(schema.inputSchema)}`,
            },
          ],
        };
      }
    }
    return this.forward(tool.server, tool.tool.name, args, options);
  }

  /**
   * Every upstream call ends here: the permission gate first (a refusal is a tool error naming
   * the rule, never forwarded), then the call, then the trust marking and output limit; each
   * outcome is audited.
   */
  private async forward(server: string, tool: string, args: JsonObject | undefined, options: BridgeCallOptions): Promise<CallToolResult> {
    const event = {
      ...(options.client !== undefined ? { client: options.client } : {}),
      server,
      tool,
      args: args ?? {},
      startedMs: Date.now(),
    };
    const decision = this.guard.check(server, tool);
    if (!decision.allowed) return this.guard.refuse(decision, event);
    this.calls.total += 1;
    this.callCounts.increment(server, tool);
    this.calls.inFlight += 1;
    try {
      const result = await this.pool.callTool(server, tool, args, {
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      });
      const finished = await this.guard.finish(server, result, options.signal);
      await this.guard.audit({ ...event, outcome: result.isError === true ? "tool_error" : "ok" });
      return finished;
    } catch (err) {
      this.calls.failed += 1;
      const code = err instanceof AbridgeError ? err.code : ErrorCode.INTERNAL;
      await this.guard.audit({ ...event, outcome: code === ErrorCode.CANCELLED ? "cancelled" : "error", errorCode: code });
      throw err;
    } finally {
      this.calls.inFlight -= 1;
    }
  }

  private async callMetaTool(name: string, args: JsonObject, options: BridgeCallOptions): Promise<CallToolResult> {
    const text = (value: string, isError = false): CallToolResult => ({
      content: [{ type: "text", text: value }],
      ...(isError ? { isError: true } : {}),
    });
    const stringArg = (key: string): string | undefined => (typeof args[key] === "string" ? (args[key] as string) : undefined);
    try {
      switch (name) {
        case GET_SCHEMA: {
          const target = stringArg("tool");
          if (target === undefined) return text('get_schema needs {"tool": "<tool name>"}', true);
          return text(JSON.stringify(await this.schemaWhenStarted(target, options.signal)));
        }
        case SEARCH_TOOLS: {
          const query = stringArg("query");
          if (query === undefined) return text('search_tools needs {"query": "<what you want to do>"}', true);
          const limit = typeof args.limit === "number" ? args.limit : undefined;
          // Searching is listing: upstreams still starting get the same grace as a first tools/list.
          await this.waitForUpstreams(this.config.startup_grace_ms, options.signal);
          const results = this.search(query, limit);
          return text(results.length > 0 ? searchResultText(results) : `No tool matches "${query}".`);
        }
        case CALL_TOOL: {
          const target = stringArg("tool");
          if (target === undefined) return text('call_tool needs {"tool": "<tool name>", "arguments": {...}}', true);
          const inner = args.arguments;
          if (inner !== undefined && (typeof inner !== "object" || inner === null || Array.isArray(inner))) {
            return text("call_tool: `arguments` must be an object", true);
          }
          const resolved = await this.resolveOrRefuse(target, inner as JsonObject | undefined, options);
          if ("refused" in resolved) return resolved.refused;
          return await this.callResolved(resolved.tool, inner as JsonObject | undefined, options);
        }
        default:
          throw new AbridgeError(ErrorCode.TOOL_NOT_FOUND, `unknown meta-tool "${name}"`);
      }
    } catch (err) {
      // A wrong inner tool name is the model's mistake to correct, not a protocol error.
      if (err instanceof AbridgeError && err.code === ErrorCode.TOOL_NOT_FOUND) return text(err.message, true);
      throw err;
    }
  }
}

/** Where `prefix` starts in `name` behind a client's own prefix (see {@link isClientPrefix}), or -1. */
function clientPrefixedStart(name: string, prefix: string): number {
  for (let at = name.indexOf(prefix, 1); at > 0; at = name.indexOf(prefix, at + 1)) {
    if (isClientPrefix(name.slice(0, at))) return at;
  }
  return -1;
}

function splitServerTool(name: string): { server: string; tool: string } | undefined {
  const slash = name.indexOf("/");
  if (slash <= 0 || slash === name.length - 1) return undefined;
  return { server: name.slice(0, slash), tool: name.slice(slash + 1) };
}
