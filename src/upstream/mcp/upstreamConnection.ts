import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { ServerConfig } from "../../config/schema.js";
import { AbridgeError, ErrorCode, messageOf } from "../../model/errors.js";
import type { ProcessGroupWatch } from "../process/childWatchdog.js";
import type { SecretSet } from "../../log/logger.js";
import { backoffDelayMs, DEFAULT_BACKOFF } from "../backoff.js";
import type { BackoffOptions } from "../backoff.js";
import { ChildStdioTransport, SHUTDOWN_CLOSE_GRACE } from "../process/childStdioTransport.js";
import { CallForwarder } from "./callForwarder.js";
import { attemptProtocol, connectAndList, ProbeClosedError } from "./connectAttempt.js";
import { listTools } from "./listTools.js";
import { RelistScheduler } from "../relistScheduler.js";
import { RequestRelay } from "./requestRelay.js";
import { serverSecrets } from "./serverSecrets.js";
import { StderrTail } from "../process/stderrTail.js";
import { createTransport } from "./transportFactory.js";
import type { TransportContext } from "./transportFactory.js";
import { UpstreamBase } from "../upstreamBase.js";
import type { StatusExtras, UpstreamBaseOptions } from "../upstreamBase.js";
import { createUpstreamClient, DEFAULT_CLIENT_INFO } from "./upstreamClient.js";
import type { ClientInfo, UpstreamClient } from "./upstreamClient.js";
import type { ProtocolEra } from "./protocolEra.js";
import { StatelessState } from "./statelessState.js";
import type { Upstream } from "../upstream.js";
import { notReadyError, startError } from "../upstreamErrors.js";
import type { AdmittedTool, CallToolResult, ForwardOptions, JsonObject, ServerStatus, UpstreamNotification } from "../../model/types.js";
import { isObject } from "../../model/json.js";
import { delay } from "../../model/timers.js";

/** Options of an {@link UpstreamConnection}. */
export interface UpstreamConnectionOptions extends UpstreamBaseOptions {
  clientInfo?: ClientInfo;
  /** Restart backoff; tests shorten it. */
  backoff?: BackoffOptions;
  /** Source of jitter for the backoff (default `Math.random`). */
  random?: () => number;
  /** Level of the child's stderr lines in the log (default `debug`). */
  stderrLogLevel?: "info" | "debug";
  /** Quiet time that coalesces a burst of `tools/list_changed` into one re-list (default 50 ms). */
  listChangedDebounceMs?: number;
  /** abridge's own files and folders a sandboxed server must not read (state dir, cache, audit log, config). */
  sandboxHide?: readonly string[];
  /**
   * Added to the environment of every stdio server, after its own `env`: the marker that lets a
   * nested abridge see which configs the abridge processes above it serve (see nestedAbridge.ts).
   */
  childEnv?: Record<string, string>;
  /** Ends stdio servers when abridge dies without closing them (see childWatchdog.ts). */
  watchdog?: ProcessGroupWatch;
  /** Shortest wait before a re-list asked for by a stateless server's `ttlMs` (see ttlRelist.ts). */
  minTtlRelistMs?: number;
  /** Notifications no call took: resources/updated, list_changed, log lines outside a call. */
  onNotification?: (notification: UpstreamNotification) => void;
  /**
   * Whether a failed first start is retried in the background (default true, for what keeps
   * running: serve, the daemon). false for a one-shot command, which ends before a retry could
   * help: the failure is final, and it is the caller's to report (only logged at info here).
   */
  retryFailedStart?: boolean;
}

/**
 * One upstream MCP server and its lifecycle: the state machine of start, restart with backoff
 * and close, each attempt's transport and client, and the tool list with its debounced re-lists.
 * What it sends is forwarded by its {@link CallForwarder}; what the server asks back goes through
 * its {@link RequestRelay}.
 */
export class UpstreamConnection extends UpstreamBase implements Upstream {
  /** A restarted process or a new session knows nothing of the old one's subscriptions. */
  readonly resubscribeOnReady = true;
  private readonly clientInfo: ClientInfo;
  private readonly backoff: BackoffOptions;
  private readonly random: () => number;
  /** What each attempt's transport is made with (see transportFactory.ts). */
  private readonly transportContext: TransportContext;
  private readonly onNotification: ((notification: UpstreamNotification) => void) | undefined;
  private readonly retryFailedStart: boolean;

  private restarts = 0;
  private attempt = 0;
  private readySinceMs: number | undefined;
  private capabilities: JsonObject | undefined;
  private instructions: string | undefined;
  /**
   * True once the pool has been shown a list for this server, even an empty one after a failed
   * start: a later list that differs is then a change the pool must hear about.
   */
  private discovered = false;

  private client: UpstreamClient | undefined;
  /**
   * The revision the last successful start spoke: a `per_call` process speaks it with no new
   * probe; a stdio server that quit on the probe is started with `initialize` from then on.
   */
  private era: ProtocolEra | undefined;
  /** The stdio server quit on the `server/discover` probe once: `auto` goes straight to `initialize`. */
  private skipProbe = false;
  /** The tool list's `ttlMs`, its change subscription and its call headers, for a stateless server. */
  private readonly stateless: StatelessState;
  /** Bumped for every connection attempt; callbacks of an older attempt are ignored. */
  private generation = 0;
  private readonly transports = new Set<Transport>();
  /** This server's secrets (see serverSecrets.ts): never copied into status, errors or logs. */
  private readonly secrets: SecretSet;
  private readonly stderr: StderrTail;
  private readonly relay: RequestRelay;
  private readonly calls: CallForwarder;
  private readonly lifetime = new AbortController();
  private startPromise: Promise<void> | undefined;
  private closePromise: Promise<void> | undefined;
  private restartTask: Promise<void> | undefined;
  private readonly relists: RelistScheduler;

  constructor(config: ServerConfig, options: UpstreamConnectionOptions) {
    super(config, options);
    this.clientInfo = options.clientInfo ?? DEFAULT_CLIENT_INFO;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.random = options.random ?? Math.random;
    this.onNotification = options.onNotification;
    this.retryFailedStart = options.retryFailedStart ?? true;
    this.secrets = serverSecrets(config);
    this.stderr = new StderrTail({ logger: this.logger, secrets: this.secrets, level: options.stderrLogLevel ?? "debug" });
    this.transportContext = {
      logger: this.logger,
      stderr: this.stderr,
      childEnv: options.childEnv ?? {},
      sandboxHide: options.sandboxHide ?? [],
      watchdog: options.watchdog,
      liveConfig: () => this.config,
      paramHeaders: (tool, args) => this.stateless.headers(tool, args),
    };
    this.relay = new RequestRelay({ server: config.name, logger: this.logger, ...(options.onNotification ? { onNotification: options.onNotification } : {}) });
    this.relists = new RelistScheduler(options.listChangedDebounceMs ?? 50, () => this.relist());
    this.stateless = new StatelessState(() => this.relists.schedule(), options.minTtlRelistMs);
    this.calls = new CallForwarder({
      target: {
        assertAvailable: () => {
          if (this.config.lifecycle !== "per_call" || this.state !== "ready") this.readyClient();
        },
        withClient: (signal, use) => this.withClient(signal, use),
        isExposed: (tool) => this.isExposed(tool),
        isListed: (tool) => this.isListedTool(tool),
        advertises: (capability) => isObject(this.capabilities?.[capability]),
      },
      logger: this.logger,
      config: () => this.config,
      secrets: this.secrets,
      relay: this.relay,
      onUnreachable: (err) => this.handleUnreachable(err),
    });
  }

  protected override get transportName(): ServerStatus["transport"] {
    return this.config.transport;
  }

  protected override get restartCount(): number {
    return this.restarts;
  }

  protected override statusExtras(): StatusExtras {
    return {
      ...(this.capabilities !== undefined ? { capabilities: this.capabilities } : {}),
      ...(this.instructions !== undefined ? { instructions: this.instructions } : {}),
      stderrLinesCut: this.stderr.linesCut,
    };
  }

  /** Pids of stdio children this connection has spawned and not yet seen exit (for tests, stats). */
  pids(): number[] {
    const pids: number[] = [];
    for (const transport of this.transports) {
      if (transport instanceof ChildStdioTransport && transport.childPid !== undefined) pids.push(transport.childPid);
    }
    return pids;
  }

  /**
   * Connects and discovers tools. Never rejects: a failure leaves the state `failed` with its
   * reason (`UPSTREAM_START_FAILED`, `UPSTREAM_TIMEOUT` or `CANCELLED`) and resolves at once.
   * A server that failed is then retried in the background with the restart backoff (a slow
   * `npx` or a network blip at start-up must not cost the server for the whole session); the
   * state stays `failed`, with the last attempt's error, until an attempt succeeds, so a status
   * does not flap between `failed` and `restarting` every few seconds. When it comes up, its
   * tools appear through `onToolsChanged`. Not retried: a cancelled start and a config error
   * (neither gets better by waiting), and any failure when `retryFailedStart` is false. Idempotent.
   */
  start(signal?: AbortSignal): Promise<void> {
    this.startPromise ??= this.firstStart(signal);
    return this.startPromise;
  }

  private async firstStart(signal?: AbortSignal): Promise<void> {
    if (!this.config.enabled || this.closePromise) return;
    try {
      await this.connectOnce(signal);
    } catch (err) {
      if (this.closePromise) return;
      const error = startError(err, this.config.name, this.stderr.lines(), this.secrets, signal);
      const retry =
        this.retryFailedStart && error.code !== ErrorCode.CANCELLED && error.code !== ErrorCode.CONFIG_INVALID && error.code !== ErrorCode.CONFIG_RECURSION;
      this.error = { code: error.code, message: error.message };
      // Without retries the caller reports the failure (a one-shot command prints it once, with
      // its result); a warning here would say it twice.
      this.logger[this.retryFailedStart ? "warn" : "info"]("upstream failed to start", {
        code: error.code,
        error: error.message,
        ...(retry ? { retrying: "in the background" } : {}),
      });
      // The pool now exposes no tools for this server; a later successful start is a change.
      this.discovered = true;
      this.setState("failed");
      if (retry) this.restartTask = this.restartLoop("start");
    }
  }

  /**
   * One attempt: new transport and client, `initialize`, then the full tool list, all within
   * `connect_timeout_ms` (each tools/list page is also bounded by `timeout_ms`). On failure everything this attempt started is closed before rethrowing.
   */
  private async connectOnce(signal?: AbortSignal): Promise<void> {
    try {
      await this.connectAttempt(signal);
    } catch (err) {
      if (!(err instanceof ProbeClosedError) || this.closePromise) throw err;
      // A stdio server that quits on any request before initialize: a new process, initialize only.
      this.logger.info("upstream closed on server/discover; starting it again with initialize");
      this.skipProbe = true;
      await this.connectAttempt(signal);
    }
  }

  private async connectAttempt(signal?: AbortSignal): Promise<void> {
    const generation = ++this.generation;
    this.stderr.clear();
    const transport = this.newTransport();
    const client = this.newClient();
    client.onerror = (err) => {
      // Parse errors of garbage on stdout land here; they are survivable, so only logged.
      if (generation === this.generation) this.logger.debug("upstream transport error", { error: this.secrets.redact(messageOf(err)) });
    };
    client.onclose = () => this.handleClosed(generation, transport);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (generation === this.generation) this.relists.schedule();
    });

    try {
      const tools = await connectAndList(client, transport, {
        server: this.config.name,
        timeoutMs: this.config.connect_timeout_ms,
        pageTimeoutMs: this.config.timeout_ms,
        logger: this.logger,
        lifetime: this.lifetime.signal,
        signal,
        protocol: attemptProtocol(this.config, this.skipProbe),
        onInitialized: () => {
          this.client = client;
        },
      });
      if (generation !== this.generation || this.closePromise) throw new Error("connection closed while starting");

      this.serverInfo = client.getServerVersion() ? { ...client.getServerVersion()! } : undefined;
      this.capabilities = client.getServerCapabilities() as JsonObject | undefined;
      this.instructions = client.getInstructions();
      this.era = client.era;
      this.error = undefined;
      this.readySinceMs = Date.now();
      this.startedAt = new Date(this.readySinceMs).toISOString();
      const firstList = !this.discovered && tools.length > 0;
      const changed = this.replaceTools(tools);
      if (this.config.lifecycle === "per_call") {
        // per_call: the process that listed the tools is not kept; every call starts its own.
        client.onclose = () => {};
        this.client = undefined;
        this.retire(transport, client);
      }
      this.logger.info("upstream ready", { tools: this.toolList.length, restarts: this.restarts, protocol: client.era });
      if (this.config.lifecycle !== "per_call") this.stateless.started(client, this.lifetime.signal, this.logger, () => generation === this.generation);
      this.setState("ready");
      // The first list of a server counts as a change too: front ends serve before every upstream
      // is up, and a server that comes up late must reach their lists (one list_changed).
      if (changed || firstList) this.onToolsChanged?.();
    } catch (err) {
      if (this.client === client) this.client = undefined;
      // Not awaited: ending a hung child takes the SDK's grace periods, and a failed start must
      // not wait for that. close() still waits, through the transports set.
      this.retire(transport, client);
      throw err;
    }
  }

  /** A client whose progress, log lines, notifications and requests reach this server's callers. */
  private newClient(): UpstreamClient {
    return createUpstreamClient(this.clientInfo, {
      forwarder: this.calls,
      relay: this.relay,
      ...(this.onNotification ? { onNotification: this.onNotification } : {}),
    });
  }

  /** A transport for a new attempt (or a per-call process), kept until it has closed. */
  private newTransport(): Transport {
    const transport = createTransport(this.config, this.transportContext);
    this.transports.add(transport);
    return transport;
  }

  /**
   * Installs a new listing (all listed tools; the exposure is decided here and again by
   * {@link updateConfig}); true when the exposed list differs from the previous one.
   */
  private replaceTools(listed: AdmittedTool[]): boolean {
    const before = JSON.stringify(this.toolList);
    const wasDiscovered = this.discovered;
    this.listedTools = listed;
    this.toolList = this.exposed(listed);
    this.discovered = true;
    return wasDiscovered && JSON.stringify(this.toolList) !== before;
  }

  /**
   * Re-lists the tools now (the daemon's `refresh`, `abridge` after a config change). Resolves
   * when the new list is in; a server that is not ready is left as it is.
   */
  refresh(): Promise<void> {
    return this.relists.now();
  }

  private async relist(): Promise<void> {
    const client = this.client;
    if (!client || this.state !== "ready") return;
    try {
      const tools = await listTools(client, this.logger, this.config.timeout_ms, this.lifetime.signal);
      if (client !== this.client) return;
      this.stateless.listed(client);
      const changed = this.replaceTools(tools);
      this.logger.info("upstream tools re-listed", { tools: this.toolList.length, changed });
      if (changed) {
        this.onStatusChanged?.(this.status());
        this.onToolsChanged?.();
      }
    } catch (err) {
      if (!this.closePromise) this.logger.warn("re-listing tools failed", { error: messageOf(err) });
    }
  }

  /** The transport of the current attempt closed (child exited, HTTP transport closed). */
  private handleClosed(generation: number, transport: Transport): void {
    if (generation !== this.generation || this.closePromise || this.state !== "ready") return;
    this.stateless.stop();
    const client = this.client;
    this.client = undefined;
    this.logger.warn("upstream connection closed; restarting");
    this.error = { code: ErrorCode.UPSTREAM_EXITED, message: `${this.config.name}: the connection closed` };
    // State first: retiring closes the client, and HTTP transports call onclose synchronously.
    this.setState("restarting");
    this.retire(transport, client);
    this.restartTask = this.restartLoop("close");
  }

  /**
   * Reconnects with exponential backoff and full jitter until it works or the connection closes:
   * after a ready connection closed (`close`; state `restarting`, each attempt counted in
   * `restarts`), or after a failed first start (`start`; state stays `failed`, attempts are not
   * restarts of a running server). Only the first failure is a warning: a server that stays down
   * is tried every `capMs` for as long as abridge runs, and a warning each time would bury
   * everything else in the log; later failures are logged at debug, with the attempt number.
   */
  private async restartLoop(after: "close" | "start"): Promise<void> {
    if (this.readySinceMs !== undefined && Date.now() - this.readySinceMs >= this.backoff.resetAfterMs) this.attempt = 0;
    this.readySinceMs = undefined;
    // After a failed start the warning has been given already.
    let warned = after === "start";
    while (!this.closePromise) {
      const waitMs = backoffDelayMs(this.attempt, this.backoff, this.random);
      this.attempt++;
      try {
        await delay(waitMs, this.lifetime.signal, { unref: true });
      } catch {
        return;
      }
      if (after === "close") {
        this.restarts++;
        this.logger.info("restarting upstream", { attempt: this.attempt, restarts: this.restarts, delayMs: waitMs });
      } else {
        this.logger.debug("retrying the upstream start", { attempt: this.attempt, delayMs: waitMs });
      }
      try {
        await this.connectOnce();
        if (after === "start") this.logger.info("upstream started after failing at first", { attempts: this.attempt + 1 });
        return;
      } catch (err) {
        if (this.closePromise) return;
        const error = startError(err, this.config.name, this.stderr.lines(), this.secrets);
        this.error = { code: error.code, message: error.message };
        const message = after === "close" ? "restart failed" : "upstream start failed again";
        this.logger[warned ? "debug" : "warn"](message, { code: error.code, error: error.message, attempt: this.attempt });
        warned = true;
        this.onStatusChanged?.(this.status());
      }
    }
  }

  /** Ends a finished attempt's client and transport in the background; forgets it once the child is gone. */
  private retire(transport: Transport, client: Client | undefined): void {
    void Promise.allSettled([client?.close(), transport.close()]).then(() => this.transports.delete(transport));
  }

  /** The ready client, or the reason there is none. */
  private readyClient(): Client {
    if (this.state === "ready" && this.client) return this.client;
    throw notReadyError(this.config.name, this.state, this.error);
  }

  /** Forwards `tools/call` (see {@link CallForwarder.callTool}). */
  callTool(tool: string, args: JsonObject | undefined, options: ForwardOptions = {}): Promise<CallToolResult> {
    return this.calls.callTool(tool, args, options);
  }

  /** Forwards any other request and returns the result object as sent (see {@link CallForwarder.request}). */
  request(method: string, params: JsonObject | undefined, options: ForwardOptions = {}): Promise<JsonObject> {
    return this.calls.request(method, params, options);
  }

  /** Every item of a paginated list method; `tools/list` gives the exposed tools (see {@link CallForwarder.listAll}). */
  async listAll(method: string, key: string, options: ForwardOptions = {}): Promise<JsonObject[]> {
    if (method === "tools/list") return this.tools();
    return this.calls.listAll(method, key, options);
  }

  /** The server's own `tools/list` answer, as sent (see {@link CallForwarder.recordTools}). */
  recordTools(options: ForwardOptions = {}): Promise<JsonObject[]> {
    return this.calls.recordTools(options);
  }

  /**
   * Runs `use` with the ready client, or for `lifecycle = "per_call"` with a fresh process that
   * is initialized for this one use and ended right after (the least-trusted servers keep no
   * state between calls).
   */
  /** `use` with the standing client (not async: one promise less per call; a throw reaches the caller's await), or a fresh process's. */
  private withClient<T>(signal: AbortSignal | undefined, use: (client: Client) => Promise<T>): Promise<T> {
    return this.config.lifecycle === "per_call" ? this.withFreshProcess(signal, use) : use(this.readyClient());
  }

  private async withFreshProcess<T>(signal: AbortSignal | undefined, use: (client: Client) => Promise<T>): Promise<T> {
    if (this.state !== "ready") this.readyClient();
    const transport = this.newTransport();
    const client = this.newClient();
    // The process speaks what the listing one spoke: stateless needs no handshake and no new probe.
    client.era = this.era;
    client.onerror = (err) => this.logger.debug("per-call transport error", { error: this.secrets.redact(messageOf(err)) });
    return this.calls.withFreshClient(transport, client, (t, c) => this.retire(t, c), this.lifetime.signal, signal, use);
  }

  /**
   * A request never reached the server (transport send failed: "Not connected", fetch failed).
   * An HTTP or SSE transport does not report a dead server through onclose, so close it here to
   * get the restart path going.
   */
  private handleUnreachable(err: unknown): void {
    if (this.config.transport !== "stdio" && this.state === "ready") {
      this.logger.warn("upstream unreachable; reconnecting", { error: messageOf(err) });
      void this.client?.close().catch(() => undefined);
    }
  }

  /**
   * Closes the connection and every process it spawned; resolves once each is gone. Idempotent.
   */
  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    this.lifetime.abort(new AbridgeError(ErrorCode.CANCELLED, `${this.config.name} is closing`));
    this.relists.stop();
    this.stateless.close();
    const wasState = this.state;
    this.generation++;
    const client = this.client;
    this.client = undefined;
    await Promise.allSettled([
      client?.close(),
      this.startPromise,
      this.restartTask,
      // Short steps: closing a connection is abridge stopping, or a server removed from the config.
      ...[...this.transports].map((t) => (t instanceof ChildStdioTransport ? t.close(SHUTDOWN_CLOSE_GRACE) : t.close())),
    ]);
    this.transports.clear();
    if (wasState !== "disabled") {
      this.state = "closed";
      this.onStatusChanged?.(this.status());
    }
  }
}
