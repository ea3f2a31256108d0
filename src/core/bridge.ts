import type { CacheEntry } from "../cache/cacheEntry.js";
import { extraMetaTools, type SchemaResult } from "../catalog/metaTools.js";
import type { ToolCatalog, DiscoveryCounts, DiscoverOptions } from "../catalog/toolCatalog.js";
import type { CatalogTool, ListedTool, Mode } from "../catalog/types.js";
import type { SearchResult } from "../catalog/searchIndex.js";
import type { Config } from "../config/schema.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { CallGuard } from "../policy/callGuard.js";
import { bridgeStateDir } from "../cache/cachePaths.js";
import { assertNotNested } from "../upstream/mcp/nestedAbridge.js";
import type { CallToolResult, JsonObject, ServerStatus } from "../model/types.js";
import type { UpstreamPool } from "../upstream/upstreamPool.js";
import { VERSION } from "../model/version.js";
import { CallPipeline, type BridgeCallOptions } from "./callPipeline.js";
import type { UpstreamNotification } from "../model/types.js";
import { reloadedConfig } from "./hotReload.js";
import { ResourceAccess, type ResourceRequestOptions, type ResourceSubscription } from "./resourceAccess.js";
import { ToolResolver } from "./toolResolver.js";
import { UpstreamStart } from "./upstreamStart.js";
import { newPool } from "./bridgePool.js";
import { openSummaryPipeline, type SummaryPipeline } from "./summaryPipeline.js";
import type { BridgeOptions, BridgeStats } from "./bridgeOptions.js";
import { sharedCacheOptions } from "./sharedCache.js";
import { CodeView, type RunCodeAnswer, type RunCodeOptions } from "../code/view/codeView.js";
import { ObservedFile, observedFileFor } from "../code/view/observedFile.js";
import type { DeclarationRequest } from "../catalog/metaTools.js";

export { START_WAIT_SLACK_MS } from "./toolResolver.js";
export type { BridgeOptions, BridgeStats } from "./bridgeOptions.js";
export type { BridgeCallOptions } from "./callPipeline.js";
export type { RunCodeAnswer, RunCodeOptions } from "../code/view/codeView.js";
export type { ResourceRequestOptions, ResourceSubscription } from "./resourceAccess.js";

/**
 * The core every front end shares (`serve`, the daemon, the CLI): the upstream pool, the summary
 * cache and its background queue, the tool catalog with its views, and the guard (policy, output
 * limits, trust marking, audit). Its parts are its own: a front end is a thin translation of its
 * protocol onto these methods, so every rule applies the same way to every front end.
 */
export class Bridge {
  private currentConfig: Config;
  private readonly pool: UpstreamPool;
  /** The summary cache, its queue, the catalog serving from it and the call counts beside it. */
  private readonly summaries: SummaryPipeline;
  private readonly catalog: ToolCatalog;
  /** Permission policy, output limits, trust marking and audit of every call. */
  private readonly guard: CallGuard;
  /** Name resolution: what a name a client used means, and why it means nothing. */
  private readonly resolver: ToolResolver;
  /** Every tool call's way: meta-tools, resolution, validation, gate, call, limits, audit. */
  private readonly pipeline: CallPipeline;
  /** Resources, prompts, completion and subscriptions, with the guard applied. */
  private readonly resources: ResourceAccess;
  /** Code mode: declarations and program runs. */
  private readonly code: CodeView;
  private readonly observed: ObservedFile;
  private readonly logger: Logger;
  private readonly startedAt = Date.now();
  private closePromise: Promise<void> | undefined;
  /** The one start of the upstreams, and the grace lists give servers still starting. */
  private readonly startup: UpstreamStart;
  private lastDiscovery: DiscoveryCounts[] = [];
  /** Hands the call counts to the catalog every `auto_update_minutes` (auto mode only). */
  private readonly countsTimer: NodeJS.Timeout | undefined;

  private constructor(
    options: BridgeOptions,
    pool: UpstreamPool,
    summaries: SummaryPipeline,
    guard: CallGuard,
    observed: ObservedFile,
    startedAtMs: number | undefined,
  ) {
    this.currentConfig = options.config;
    this.observed = observed;
    const { catalog, callCounts } = summaries;
    if (options.config.mode === "auto") {
      // The auto list follows the counts only at this pace, so a client's prompt cache holds
      // between two updates however busy the tools are.
      this.countsTimer = setInterval(() => catalog.setCallCounts(callCounts.snapshot()), options.config.auto_update_minutes * 60_000);
      this.countsTimer.unref();
    }
    this.guard = guard;
    this.logger = options.logger ?? silentLogger;
    this.summaries = summaries;
    this.catalog = catalog;
    this.pool = pool;
    this.pool.on("toolsChanged", () => {
      if (this.startup.followsChanges) this.discover();
    });
    this.startup = new UpstreamStart(this.pool, (discover) => this.discover(discover), this.logger, summaries.jobs, startedAtMs);
    const config = (): Config => this.currentConfig;
    const waitReady = (graceMs: number, signal?: AbortSignal): Promise<boolean> => this.waitReady(graceMs, signal);
    this.resolver = new ToolResolver(catalog, this.pool, config);
    this.code = new CodeView({
      catalog,
      guard,
      config,
      call: (name, args, callOptions) => this.pipeline.callUpstream(name, args, callOptions),
      waitReady,
      observed,
      logger: this.logger,
    });
    this.pipeline = new CallPipeline({ pool: this.pool, catalog, guard, callCounts, resolver: this.resolver, config, waitReady, code: () => this.code });
    this.resources = new ResourceAccess({ pool: this.pool, guard, config, waitReady });
  }

  /**
   * Opens the cache and builds every part. Upstreams connect on {@link start} or {@link begin};
   * with `options.begin` they are spawned here, before anything is opened (see {@link BridgeOptions.begin}).
   */
  static async open(options: BridgeOptions): Promise<Bridge> {
    // First, before any file is opened: an abridge started by one serving the same config must
    // stop at once, so that its parent hears of it at once and not after a timeout.
    assertNotNested(options.config.source, options.env);
    const logger = options.logger ?? silentLogger;
    const stateDir = options.stateDir ?? bridgeStateDir(options.config, options.env);
    const pool = newPool(options, stateDir, logger);
    // Spawned before the cache and the rest open: a child's own start-up (node or npx loading, an
    // interpreter, a connection) takes far longer than this bridge's, and now runs beside it. A
    // start that fails as a whole is reported by begin() below, on the same promise.
    const startedAtMs = options.begin !== undefined ? Date.now() : undefined;
    if (options.begin !== undefined) pool.start(options.begin.signal).catch(() => undefined);
    let summaries: SummaryPipeline | undefined;
    let bridge: Bridge | undefined;
    try {
      logger.debug("opening the summary cache", { file: options.cacheFile, upstreamsStarted: options.begin !== undefined });
      summaries = await openSummaryPipeline({
        cacheFile: options.cacheFile,
        ...sharedCacheOptions(options),
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
      // Follows the config in force, so a reloaded config's gates apply from the next call on.
      const guard = await CallGuard.open({
        config: () => bridge?.config ?? options.config,
        env: options.env,
        logger,
        stateDir,
        ...(options.forceReadOnly ? { forceReadOnly: true } : {}),
      });
      const observed = await ObservedFile.open(observedFileFor(options.cacheFile), logger);
      bridge = new Bridge(options, pool, summaries, guard, observed, startedAtMs);
    } catch (err) {
      // The children spawned above must not outlive a bridge that never opened.
      await Promise.allSettled([pool.close(), summaries?.close()]);
      throw err;
    }
    if (options.begin !== undefined) {
      bridge.begin(options.begin.signal);
      // Servers that came up while the cache opened told no one: the bridge was not listening yet.
      if (bridge.pool.tools().length > 0) bridge.discover();
    }
    return bridge;
  }

  /**
   * Connects every upstream (in parallel; failures are reported in {@link servers}) and resolves
   * once each is ready or failed, with the discovery of them all. Tools of each server enter the
   * catalog as soon as that server is ready, so a front end may serve before this resolves (see
   * {@link begin}). Idempotent.
   */
  start(signal?: AbortSignal, discover: DiscoverOptions = {}): Promise<DiscoveryCounts[]> {
    return this.startup.start(signal, discover);
  }

  /**
   * {@link start} without waiting for it: what front ends do, so that a client is answered at once
   * while slow upstreams connect. A start that fails as a whole (a name collision of `prefix =
   * false` servers, a cancelled start) is logged; servers that fail are in {@link servers}.
   */
  begin(signal?: AbortSignal): void {
    this.startup.begin(signal, this.currentConfig.startup_grace_ms);
  }

  /**
   * Waits until no upstream is still making its first connection, at most until `graceMs` after
   * the start: a front end answering its first `tools/list` gives slow servers this long, then
   * lists what is ready (the rest follow with a list change). Resolves true when every server settled.
   *
   * @throws AbridgeError CANCELLED when `signal` aborts first.
   */
  waitReady(graceMs: number, signal?: AbortSignal): Promise<boolean> {
    return this.startup.waitReady(graceMs, signal);
  }

  /** Re-reads the pool's tools into the catalog, queueing summaries for misses. */
  private discover(options: DiscoverOptions = {}): DiscoveryCounts[] {
    // Tools the permission policy hides never reach the catalog (nor search, get_schema, lists).
    // The upstreams admitted every tool where it entered (see admitTool); the type says so.
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
   * the catalog re-discovered, which tells clients once. Settings fixed at start (`mode`,
   * `separator`, `[summary]`, the audit log, state and cache dirs, see {@link reloadedConfig})
   * keep their running values until a restart; the returned list names what was kept. Servers
   * where only filters, prefix, timeouts or policy settings changed are `updated` in place,
   * without a reconnect.
   */
  async applyConfig(
    config: Config,
    signal?: AbortSignal,
  ): Promise<{ added: string[]; removed: string[]; changed: string[]; updated: string[]; needsRestart: string[] }> {
    const reloaded = reloadedConfig(this.currentConfig, config);
    this.currentConfig = reloaded.config;
    // The guard follows `config` and so applies the new policy from now on; the list must follow
    // now as well, not once new servers have connected (up to connect_timeout_ms), or a tool just
    // made read-only stays listed and a tool just allowed stays hidden meanwhile. reconfigure
    // applies removals and filter edits before its first await, so this discovery sees them.
    const reconfigured = this.pool.reconfigure(config.servers, signal, config.serverOrder);
    this.discover();
    const result = await reconfigured;
    this.discover();
    return { ...result, needsRestart: reloaded.needsRestart };
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

  /** Status of one upstream, or `undefined` when no such server is configured. */
  status(server: string): ServerStatus | undefined {
    return this.pool.status(server);
  }

  /**
   * Process ids of the upstream children running now (server processes and per-call sandboxed
   * ones), for a supervisor that must see that none outlives the bridge.
   */
  childPids(): number[] {
    return this.pool.pids();
  }

  /** Calls `listener` whenever a server's status changes (state, error, tool count). Returns the unsubscribe. */
  onStatus(listener: (status: ServerStatus) => void): () => void {
    this.pool.on("statusChanged", listener);
    return () => void this.pool.off("statusChanged", listener);
  }

  /**
   * Calls `listener` with every upstream notification no call took (`resources/updated`,
   * resource and prompt list changes, log lines outside calls). Returns the unsubscribe.
   */
  onNotification(listener: (server: string, notification: UpstreamNotification) => void): () => void {
    this.pool.on("notification", listener);
    return () => void this.pool.off("notification", listener);
  }

  /** How many listeners of {@link onStatus} or {@link onNotification} are attached (a front end that closed must leave none). */
  listenerCount(event: "status" | "notification"): number {
    return this.pool.listenerCount(event === "status" ? "statusChanged" : "notification");
  }

  /**
   * The tools that best fit a task description, best first, ranked as the `search_tools`
   * meta-tool ranks them; `limit` is clamped as there.
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
   * The catalog's tools (every server's, or `server`'s), with original schemas and summaries: what
   * the daemon's `list_tools` and the CLI's token tables are made from. The array is the same
   * object until the catalog changes.
   */
  tools(server?: string): readonly CatalogTool[] {
    const all = this.catalog.tools();
    return server === undefined ? all : all.filter((t) => t.server === server);
  }

  /**
   * Calls a tool by the name the client was shown, meta-tools included. Argument errors in
   * `compact`/`lazy` come back as a tool error carrying the full schema, so the model can correct
   * itself in one step; upstream tool errors stay tool results.
   */
  callTool(name: string, args: JsonObject | undefined, options: BridgeCallOptions = {}): Promise<CallToolResult> {
    return this.pipeline.callTool(name, args, options);
  }

  /**
   * Runs a program against the tools (code mode's `run_code`, the daemon's `run_code` op, the bus's
   * run request, `abridge run`): every call it makes takes the way of {@link callTool}. Never
   * throws for what the program does: a failed run has `result.ok` false and an `isError` answer.
   *
   * @throws AbridgeError INPUT_INVALID when `options.limits` holds an invalid limit.
   */
  runCode(code: string, options: RunCodeOptions = {}): Promise<RunCodeAnswer> {
    return this.code.run(code, options);
  }

  /**
   * TypeScript declarations of the tools a query finds or of the tools named, as code mode's
   * `search_tools` answers: one namespace per server, named as a program's globals are.
   */
  declareTools(request: DeclarationRequest, signal?: AbortSignal): Promise<string> {
    return this.code.declare(request, signal);
  }

  /** Calls `tool` of `server` (the daemon's and the CLI's form), validating like {@link callTool}. */
  callServerTool(server: string, tool: string, args: JsonObject | undefined, options: BridgeCallOptions = {}): Promise<CallToolResult> {
    return this.pipeline.callServerTool(server, tool, args, options);
  }

  /** One page of a spilled output (`read_output`): the same pages, markers and errors on every front end. */
  readOutput(handle: string, offset = 0): Promise<CallToolResult> {
    return this.pipeline.readOutput({ handle, offset });
  }

  /** The full original schema and description of a tool (`get_schema`). */
  getSchema(name: string): SchemaResult {
    return this.resolver.schema(name);
  }

  /**
   * {@link getSchema}, waiting first for a server that is still starting and owns the name (as a
   * call does).
   */
  schemaWhenStarted(name: string, signal?: AbortSignal): Promise<SchemaResult> {
    return this.resolver.schemaWhenStarted(name, signal);
  }

  /** Every upstream's resources; names prefixed, URIs kept. */
  listResources(signal?: AbortSignal): Promise<JsonObject[]> {
    return this.resources.listResources(signal);
  }

  /** Every upstream's resource templates. */
  listResourceTemplates(signal?: AbortSignal): Promise<JsonObject[]> {
    return this.resources.listResourceTemplates(signal);
  }

  /** Reads a resource: audited, marked untrusted and held to its server's `max_output_bytes` like a tool result. */
  readResource(params: JsonObject & { uri: string }, options: ResourceRequestOptions = {}): Promise<JsonObject> {
    return this.resources.readResource(params, options);
  }

  /** Every upstream's prompts under exposed names. */
  listPrompts(signal?: AbortSignal): Promise<JsonObject[]> {
    return this.resources.listPrompts(signal);
  }

  /** Gets a prompt: audited, marked untrusted and held to its server's `max_output_bytes` like a tool result. */
  getPrompt(params: JsonObject & { name: string }, options: ResourceRequestOptions = {}): Promise<JsonObject> {
    return this.resources.getPrompt(params, options);
  }

  /** `completion/complete` for a prompt or a resource template, asked of its server. */
  complete(params: JsonObject & { ref: { type: string; name?: string; uri?: string } }, signal?: AbortSignal): Promise<JsonObject> {
    return this.resources.complete(params, signal);
  }

  /** Subscribes to updates of a resource at the server that owns it. Pair with {@link unsubscribe}. */
  subscribe(uri: string, signal?: AbortSignal): Promise<ResourceSubscription> {
    return this.resources.subscribe(uri, signal);
  }

  /** Ends a subscription of {@link subscribe}. */
  unsubscribe(subscription: ResourceSubscription, signal?: AbortSignal): Promise<void> {
    return this.resources.unsubscribe(subscription, signal);
  }

  /** The summarizer and prompt version new summaries are written with (`summarize status`, `--stale`). */
  summarizerIdentity(): { summarizer: string; prompt: string } {
    return { summarizer: this.summaries.summarizer.id, prompt: this.summaries.summarizer.promptId };
  }

  /** The cached summary of a catalog tool, when there is one (`summarize status`). */
  cachedEntry(tool: CatalogTool): CacheEntry | undefined {
    return this.summaries.store.get(tool.key);
  }

  /** Where the summary cache is: the path of `summaries.jsonl`, or the Redis URL without its password. */
  get cacheFile(): string {
    return this.summaries.store.location;
  }

  /** Calls `listener` with every summary the background queue writes. Returns the unsubscribe. */
  onSummary(listener: (entry: CacheEntry) => void): () => void {
    return this.summaries.queue.onEntry(listener);
  }

  /**
   * Resolves once the summary queue is empty (every queued tool summarized and written, or given
   * up on): what `summarize warm` waits for.
   *
   * @throws AbridgeError CANCELLED when `signal` aborts first (what was written stays).
   */
  drainSummaries(signal?: AbortSignal): Promise<void> {
    return this.summaries.queue.drain(signal);
  }

  /** Counters and states for `stats`. */
  stats(): BridgeStats {
    const store = this.summaries.store.stats();
    return {
      version: VERSION,
      uptimeMs: Date.now() - this.startedAt,
      upstreams: this.pool.servers(),
      catalog: this.catalog.stats(),
      queue: this.summaries.queue.stats(),
      cache: {
        entries: store.liveKeys,
        invalidLines: store.invalidLines,
        writeErrors: store.writeErrors,
        ...(store.oversized !== undefined ? { oversized: store.oversized } : {}),
        ...(store.notKept !== undefined ? { notKept: store.notKept } : {}),
      },
      calls: this.pipeline.stats(),
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
      // Summary jobs still held are dropped with the queue, not summarized into a closing cache.
      this.startup.stopGrace();
      const results = await Promise.allSettled([this.summaries.close(), this.pool.close()]);
      await this.guard.close();
      await this.observed.close();
      for (const result of results) {
        if (result.status === "rejected") this.logger.warn("error while closing", { error: String(result.reason) });
      }
    })();
    return this.closePromise;
  }
}
