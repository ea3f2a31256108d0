import type { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode as RpcErrorCode,
  LoggingMessageNotificationSchema,
  McpError,
  ProgressNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ServerConfig } from "../config/schema.js";
import { AbridgeError, ErrorCode, isAbridgeError } from "../model/errors.js";
import { urlSecrets } from "../config/urlSecrets.js";
import type { ProcessGroupWatch } from "./childWatchdog.js";
import { SecretSet, silentLogger } from "../log/logger.js";
import type { Logger } from "../log/logger.js";
import { backoffDelayMs, DEFAULT_BACKOFF } from "./backoff.js";
import type { BackoffOptions } from "./backoff.js";
import { ChildStdioTransport, childEnvironment, DEFAULT_MAX_MESSAGE_BYTES, SHUTDOWN_CLOSE_GRACE } from "./childStdioTransport.js";
import { boundedFetch } from "./boundedFetch.js";
import { collectPages } from "./collectPages.js";
import { recursionRefused, RECURSION_EXIT_CODE } from "./nestedAbridge.js";
import { normalizeTool } from "./normalizeTool.js";
import { schemaTooDeep } from "./schemaDepth.js";
import { sandboxCommand } from "./sandbox.js";
import { createToolFilter } from "./toolFilter.js";
import { forEachBoundedLine } from "../util/boundedLines.js";
import type { ToolFilter } from "./toolFilter.js";
import type { CallToolResult, ForwardOptions, JsonObject, ProgressUpdate, RawTool, ServerState, ServerStatus } from "../model/types.js";
import { compareStrings, isObject } from "../model/json.js";
import { delay } from "../model/timers.js";

/** Name and version abridge introduces itself with in `initialize`. */
export interface ClientInfo {
  name: string;
  version: string;
}

/** Default `clientInfo`. */
export const DEFAULT_CLIENT_INFO: ClientInfo = { name: "abridge", version: "0.1.0" };

/**
 * The client a forwarded call came from, as far as the upstream needs it: where to send the
 * requests (`sampling/createMessage`, `elicitation/create`) and log lines the upstream makes while
 * the call runs. A front end sets one per call (see `UpstreamPool.withRelay`).
 */
export interface CallRelay {
  /** Identifies the downstream client (one per session): calls of one client may share answers. */
  client: string;
  /** Sends a request to that client, related to the call, and resolves with its answer. */
  request(method: string, params: JsonObject, signal: AbortSignal): Promise<JsonObject>;
  /** Sends a notification to that client, related to the call. */
  notify(method: string, params: JsonObject): void;
}

/** A notification from an upstream that no single call owns (resources/updated, list_changed, logs). */
export interface UpstreamNotification {
  method: string;
  params: JsonObject;
}

/** Options of an {@link UpstreamConnection}. */
export interface UpstreamConnectionOptions {
  logger?: Logger;
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
  /** Called whenever {@link UpstreamConnection.status} changes. */
  onStatusChanged?: (status: ServerStatus) => void;
  /** Called when the (filtered) tool list changed after the first discovery. */
  onToolsChanged?: () => void;
  /** The relay of the call being forwarded now, if its caller set one (read when a call starts). */
  currentRelay?: () => CallRelay | undefined;
  /** Notifications no call took: resources/updated, list_changed, log lines outside a call. */
  onNotification?: (notification: UpstreamNotification) => void;
}

/** Stands in for the caller of a call that came without a relay (CLI, daemon). */
const NO_RELAY_CLIENT = "\0no-relay";

/** setTimeout's ceiling, given to the SDK so that abridge's own timers are what end a call. */
const MAX_TIMER_MS = 2_147_483_647;

/** `tools/list` result, loose: unknown keys of the result and of each tool are kept as sent. */
const listToolsResult = z.looseObject({ tools: z.array(z.unknown()), nextCursor: z.string().optional() });
/** `tools/call` result, loose: `client.callTool` would validate structured output; a proxy must not. */
const callToolResult = z.looseObject({ content: z.array(z.unknown()).optional(), isError: z.boolean().optional() });
/** Any other result: an object, untouched. */
const anyResult = z.looseObject({});

/** Kept stderr lines per server, for failure messages. */
const STDERR_TAIL_LINES = 20;
/**
 * Longest stderr line kept whole (8 KiB, newline excluded). stderr is a log, not a protocol: a
 * longer line is cut to its first 4 KiB and its size, never held whole.
 */
export const MAX_STDERR_LINE_BYTES = 8 * 1024;

/** Capability that must be advertised before a list method is worth asking. */
const LIST_CAPABILITY: Record<string, string> = {
  "resources/list": "resources",
  "resources/templates/list": "resources",
  "prompts/list": "prompts",
  "tools/list": "tools",
};


function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}


/**
 * One upstream MCP server: its SDK client and transport, its tool list, and its lifecycle
 * (start, restart with backoff, close). Everything it forwards goes through `client.request` with
 * loose result schemas so the upstream's answers reach the model exactly as sent.
 */
export class UpstreamConnection {
  private currentConfig: ServerConfig;
  private readonly logger: Logger;
  private readonly clientInfo: ClientInfo;
  private readonly backoff: BackoffOptions;
  private readonly random: () => number;
  private readonly stderrLogLevel: "info" | "debug";
  private readonly listChangedDebounceMs: number;
  private readonly sandboxHide: readonly string[];
  private readonly childEnv: Record<string, string>;
  private readonly watchdog: ProcessGroupWatch | undefined;
  private filter: ToolFilter;
  private readonly onStatusChanged: ((status: ServerStatus) => void) | undefined;
  private readonly onToolsChanged: (() => void) | undefined;
  private readonly currentRelay: (() => CallRelay | undefined) | undefined;
  private readonly onNotification: ((notification: UpstreamNotification) => void) | undefined;

  private state: ServerState;
  private error: { code: ErrorCode; message: string } | undefined;
  private restarts = 0;
  private attempt = 0;
  private readySinceMs: number | undefined;
  private startedAt: string | undefined;
  private serverInfo: { name: string; version: string } | undefined;
  private capabilities: JsonObject | undefined;
  private instructions: string | undefined;
  /** What the server listed (malformed and duplicate tools dropped), before allow/deny. */
  private listedTools: RawTool[] = [];
  /** {@link listedTools} after allow/deny: what the pool exposes. */
  private toolList: RawTool[] = [];
  /**
   * True once the pool has been shown a list for this server, even an empty one after a failed
   * start: a later list that differs is then a change the pool must hear about.
   */
  private discovered = false;

  private client: Client | undefined;
  /** Bumped for every connection attempt; callbacks of an older attempt are ignored. */
  private generation = 0;
  private readonly transports = new Set<Transport>();
  private readonly stderrTail: string[] = [];
  /** stderr lines of this server cut at {@link MAX_STDERR_LINE_BYTES} (the first cut is logged at warn). */
  private stderrLinesCut = 0;
  /**
   * This server's `env` and `headers` values: a server that prints its token (on stderr, in an
   * error) must not have it copied into status, errors or logs. Literal values count too, not only
   * `${VAR}` ones: a token written into the config is just as secret.
   */
  private readonly secrets = new SecretSet();
  private readonly lifetime = new AbortController();
  private startPromise: Promise<void> | undefined;
  private closePromise: Promise<void> | undefined;
  private restartTask: Promise<void> | undefined;
  private relistTimer: NodeJS.Timeout | undefined;
  private relisting: Promise<void> | undefined;
  private relistAgain = false;
  /**
   * tools/call requests in flight, in start order, with who made them: an upstream's request or
   * log line carries no reference to the call it belongs to (stdio has no such field), so it is
   * routed by elimination (see {@link relayTarget}).
   */
  private readonly inFlight = new Map<number, { client: string; relay: CallRelay | undefined }>();
  private nextCallId = 0;
  /** Our own progress tokens -> the caller's callback (see {@link forward} for why not the SDK's). */
  private readonly progressHandlers = new Map<string, (update: ProgressUpdate) => void>();

  constructor(config: ServerConfig, options: UpstreamConnectionOptions = {}) {
    this.currentConfig = config;
    this.logger = (options.logger ?? silentLogger).child({ server: config.name });
    this.clientInfo = options.clientInfo ?? DEFAULT_CLIENT_INFO;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.random = options.random ?? Math.random;
    this.stderrLogLevel = options.stderrLogLevel ?? "debug";
    this.listChangedDebounceMs = options.listChangedDebounceMs ?? 50;
    this.sandboxHide = options.sandboxHide ?? [];
    this.childEnv = options.childEnv ?? {};
    this.watchdog = options.watchdog;
    this.filter = createToolFilter(config.allow, config.deny);
    for (const value of [...Object.values(config.env), ...Object.values(config.headers)]) {
      this.secrets.add(value);
      // "Bearer <token>": the token alone may show up too.
      for (const word of value.split(/\s+/)) if (word.length >= 8) this.secrets.add(word);
    }
    // A key in the URL's query string or userinfo shows in every "cannot connect" message.
    if (config.url !== undefined) for (const secret of urlSecrets(config.url)) this.secrets.add(secret);
    this.onStatusChanged = options.onStatusChanged;
    this.onToolsChanged = options.onToolsChanged;
    this.currentRelay = options.currentRelay;
    this.onNotification = options.onNotification;
    this.state = config.enabled ? "connecting" : "disabled";
  }

  /** The server's config entry (replaced by {@link updateConfig}). */
  get config(): ServerConfig {
    return this.currentConfig;
  }

  /** Server name. */
  get name(): string {
    return this.config.name;
  }

  /**
   * Takes a config entry that differs from the current one only in fields a running process does
   * not depend on (allow/deny, prefix, timeouts, policy and output settings): the filter is
   * re-applied to the last listed tools at once, with no reconnect, so calls in flight go on.
   * Returns true when the exposed tool list changed; the caller re-assigns names and tells its
   * listeners (one event for a whole reload rather than one per server).
   */
  updateConfig(config: ServerConfig): boolean {
    if (config.name !== this.currentConfig.name) {
      throw new AbridgeError(ErrorCode.INTERNAL, `config of "${config.name}" given to the connection of "${this.currentConfig.name}"`);
    }
    this.currentConfig = config;
    this.filter = createToolFilter(config.allow, config.deny);
    const before = JSON.stringify(this.toolList);
    this.toolList = this.filtered(this.listedTools);
    const changed = JSON.stringify(this.toolList) !== before;
    if (changed) this.onStatusChanged?.(this.status());
    return changed;
  }

  /** Current status (a fresh object). */
  status(): ServerStatus {
    const status: ServerStatus = {
      name: this.config.name,
      transport: this.config.transport,
      state: this.state,
      toolCount: this.toolList.length,
      restarts: this.restarts,
    };
    if (this.startedAt !== undefined) status.startedAt = this.startedAt;
    if (this.error !== undefined) status.error = { ...this.error };
    if (this.serverInfo !== undefined) status.serverInfo = { ...this.serverInfo };
    if (this.capabilities !== undefined) status.capabilities = this.capabilities;
    if (this.instructions !== undefined) status.instructions = this.instructions;
    if (this.stderrLinesCut > 0) status.stderrLinesCut = this.stderrLinesCut;
    return status;
  }

  /**
   * Tools after allow/deny filtering, sorted by name. While the server restarts, the last known
   * list stays, so a model's tool list does not flap; calls fail fast meanwhile.
   */
  tools(): RawTool[] {
    return [...this.toolList];
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
   * (neither gets better by waiting). Idempotent.
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
      const error = this.startError(err, signal);
      const retry = error.code !== ErrorCode.CANCELLED && error.code !== ErrorCode.CONFIG_INVALID && error.code !== ErrorCode.CONFIG_RECURSION;
      this.error = { code: error.code, message: error.message };
      this.logger.warn("upstream failed to start", { code: error.code, error: error.message, ...(retry ? { retrying: "in the background" } : {}) });
      // The pool now exposes no tools for this server; a later successful start is a change.
      this.discovered = true;
      this.setState("failed");
      if (retry) this.restartTask = this.restartLoop("start");
    }
  }

  /** Maps a connect/list failure to the code the status shows. */
  private startError(err: unknown, signal?: AbortSignal): AbridgeError {
    if (signal?.aborted) return new AbridgeError(ErrorCode.CANCELLED, "start was cancelled", { cause: err });
    if (isAbridgeError(err)) return err;
    const tail = this.stderrTail.slice(-3).join(" | ");
    const message = this.secrets.redact(`${this.config.name}: ${messageOf(err)}${tail ? ` (stderr: ${tail})` : ""}`);
    return new AbridgeError(ErrorCode.UPSTREAM_START_FAILED, message, {
      cause: err,
      retryable: true,
      details: { stderr: [...this.stderrTail] },
    });
  }

  /**
   * One attempt: new transport and client, `initialize`, then the full tool list, all within
   * `connect_timeout_ms` (each tools/list page is also bounded by `timeout_ms`). On failure everything this attempt started is closed before rethrowing.
   */
  private async connectOnce(signal?: AbortSignal): Promise<void> {
    const generation = ++this.generation;
    this.stderrTail.length = 0;
    const transport = this.createTransport();
    this.transports.add(transport);
    const client = this.newClient();
    client.onerror = (err) => {
      // Parse errors of garbage on stdout land here; they are survivable, so only logged.
      if (generation === this.generation) this.logger.debug("upstream transport error", { error: this.secrets.redact(messageOf(err)) });
    };
    client.onclose = () => this.handleClosed(generation, transport);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (generation === this.generation) this.scheduleRelist();
    });

    const timeoutMs = this.config.connect_timeout_ms;
    const timeout = new AbortController();
    const timer = setTimeout(() => {
      timeout.abort(
        new AbridgeError(ErrorCode.UPSTREAM_TIMEOUT, `${this.config.name}: not ready within ${timeoutMs} ms (start-up, initialize and tools/list)`, {
          retryable: true,
        }),
      );
    }, timeoutMs);
    timer.unref();
    const signals = [timeout.signal, this.lifetime.signal];
    if (signal) signals.push(signal);
    const connectSignal = AbortSignal.any(signals);
    try {
      // Raced against the signal as well: the SDK only watches it once `initialize` is sent,
      // not while the transport starts.
      await Promise.race([
        client.connect(transport, { signal: connectSignal, timeout: timeoutMs }),
        new Promise<never>((_resolve, reject) => {
          const onAbort = (): void => reject(connectSignal.reason as Error);
          if (connectSignal.aborted) onAbort();
          else connectSignal.addEventListener("abort", onAbort, { once: true });
        }),
      ]);
      this.client = client;
      const tools = await this.listTools(client, connectSignal);
      clearTimeout(timer);
      if (generation !== this.generation || this.closePromise) throw new Error("connection closed while starting");

      this.serverInfo = client.getServerVersion() ? { ...client.getServerVersion()! } : undefined;
      this.capabilities = client.getServerCapabilities() as JsonObject | undefined;
      this.instructions = client.getInstructions();
      this.error = undefined;
      this.readySinceMs = Date.now();
      this.startedAt = new Date(this.readySinceMs).toISOString();
      const firstList = !this.discovered && tools.length > 0;
      const changed = this.replaceTools(tools);
      if (this.config.lifecycle === "per_call") {
        // per_call: the process that listed the tools is not kept; every call starts its own.
        client.onclose = undefined;
        this.client = undefined;
        this.retire(transport, client);
      }
      this.logger.info("upstream ready", { tools: this.toolList.length, restarts: this.restarts });
      this.setState("ready");
      // The first list of a server counts as a change too: front ends serve before every upstream
      // is up, and a server that comes up late must reach their lists (one list_changed).
      if (changed || firstList) this.onToolsChanged?.();
    } catch (err) {
      clearTimeout(timer);
      if (this.client === client) this.client = undefined;
      // Not awaited: ending a hung child takes the SDK's grace periods, and a failed start must
      // not wait for that. close() still waits, through the transports set.
      this.retire(transport, client);
      // A nested abridge that found its own config above it exits at once with this code: the
      // entry would start abridge again and again, which no retry or timeout can mend.
      if (transport instanceof ChildStdioTransport && transport.exitCode === RECURSION_EXIT_CODE) {
        throw recursionRefused(this.config.name);
      }
      if (timeout.signal.aborted && isAbridgeError(timeout.signal.reason)) throw timeout.signal.reason;
      if (err instanceof McpError && err.code === (RpcErrorCode.RequestTimeout as number) && !this.lifetime.signal.aborted && !signal?.aborted) {
        throw new AbridgeError(ErrorCode.UPSTREAM_TIMEOUT, `${this.config.name}: ${err.message}`, { cause: err, retryable: true });
      }
      throw err;
    }
  }

  /**
   * A client that can take what an upstream sends back during a call: sampling and elicitation
   * requests (relayed to the calling client, so they are declared as capabilities), progress,
   * log lines and resource notifications.
   */
  private newClient(): Client {
    const client = new Client(this.clientInfo, { capabilities: { sampling: {}, elicitation: {} } });
    client.setNotificationHandler(ProgressNotificationSchema, (n) => {
      const { progressToken, progress, total, message } = n.params;
      this.progressHandlers.get(String(progressToken))?.({
        progress,
        ...(total !== undefined ? { total } : {}),
        ...(message !== undefined ? { message } : {}),
      });
    });
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      const target = this.relayTarget();
      // A log line during one client's calls belongs to that client; anything else is server-wide.
      if (typeof target === "object" && target.relay) target.relay.notify(n.method, n.params as JsonObject);
      else this.onNotification?.({ method: n.method, params: n.params as JsonObject });
    });
    for (const schema of [ResourceUpdatedNotificationSchema, ResourceListChangedNotificationSchema, PromptListChangedNotificationSchema]) {
      client.setNotificationHandler(schema, (n) => this.onNotification?.({ method: n.method, params: (n.params ?? {}) as JsonObject }));
    }
    client.setRequestHandler(CreateMessageRequestSchema, (request, extra) => this.relayRequest(request.method, request.params as JsonObject, extra.signal) as never);
    client.setRequestHandler(ElicitRequestSchema, (request, extra) => this.relayRequest(request.method, request.params as JsonObject, extra.signal) as never);
    return client;
  }

  /**
   * Whom an upstream request or log line made now belongs to: the most recent call when every
   * call in flight comes from the same client; `ambiguous` when calls of several clients overlap
   * (guessing could show one user's prompt to another); `none` with no call in flight.
   */
  private relayTarget(): { client: string; relay: CallRelay | undefined } | "none" | "ambiguous" {
    const calls = [...this.inFlight.values()];
    const last = calls.at(-1);
    if (last === undefined) return "none";
    return calls.every((c) => c.client === last.client) ? last : "ambiguous";
  }

  /** Relays a server->client request of the upstream to the client whose call it is part of. */
  private async relayRequest(method: string, params: JsonObject, signal: AbortSignal): Promise<JsonObject> {
    const target = this.relayTarget();
    const name = this.config.name;
    if (target === "ambiguous") {
      this.logger.warn("refused an upstream request: calls of several clients are in flight", { method });
      throw new McpError(
        RpcErrorCode.InvalidRequest,
        `abridge: ${method} from ${name} arrived while calls of several clients were in flight; abridge cannot tell which client to ask, so it refuses rather than ask the wrong one`,
      );
    }
    if (target === "none" || target.relay === undefined) {
      throw new McpError(RpcErrorCode.InvalidRequest, `abridge: ${method} from ${name} arrived outside any tool call of a client that can answer it`);
    }
    return target.relay.request(method, params, signal);
  }

  private createTransport(): Transport {
    const config = this.config;
    if (config.transport === "stdio") {
      if (config.command === undefined) {
        throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${config.name}: a stdio server needs a command`);
      }
      const env = childEnvironment({ ...config.env, ...this.childEnv });
      // sandbox = "bwrap": the same server, confined; a missing bwrap throws UPSTREAM_START_FAILED.
      const spawn = config.sandbox === "bwrap" ? sandboxCommand(config, env, this.sandboxHide) : { command: config.command, args: config.args, env };
      const transport = new ChildStdioTransport({
        ...spawn,
        ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
        ...(this.watchdog !== undefined ? { watchdog: this.watchdog } : {}),
        stderr: "pipe",
      });
      const stderr = transport.stderr;
      if (stderr) {
        // Bounded like stdout: a server writing hundreds of MB without a newline cost readline
        // one ever-growing string until V8 refused it, and that ended abridge (serve and daemon).
        forEachBoundedLine(stderr as Readable, MAX_STDERR_LINE_BYTES, ({ text, cut }) => {
          let line = this.secrets.redact(text);
          if (cut === true) {
            this.stderrLinesCut += 1;
            line = `${line} ... [line cut: over ${MAX_STDERR_LINE_BYTES} bytes; the rest is skipped]`;
            if (this.stderrLinesCut === 1) {
              this.logger.warn("upstream stderr line over the limit: cut (later cuts are counted in status, not warned about)", { limitBytes: MAX_STDERR_LINE_BYTES });
            }
          }
          this.stderrTail.push(line);
          if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
          this.logger[this.stderrLogLevel]("upstream stderr", { line });
        });
      }
      return transport;
    }
    if (config.url === undefined) {
      throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${config.name}: an ${config.transport} server needs a url`);
    }
    const url = new URL(config.url);
    const requestInit: RequestInit = { headers: { ...config.headers } };
    // Every message from the server is bounded as on stdio: the SDK reads HTTP answers and events whole.
    const bounded = boundedFetch(DEFAULT_MAX_MESSAGE_BYTES, (dropped) =>
      this.logger.warn("dropped an oversized message from the server", { bytes: dropped.bytes, limit: dropped.limit, request: dropped.id }),
    );
    if (config.transport === "sse") {
      // The GET event stream does not use requestInit, so headers go through a custom fetch too.
      return new SSEClientTransport(url, {
        requestInit,
        fetch: bounded,
        eventSourceInit: {
          fetch: (input, init) => bounded(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...config.headers } }),
        },
      });
    }
    return new StreamableHTTPClientTransport(url, { requestInit, fetch: bounded });
  }

  /** Every page of `tools/list`, filtered, kept as sent. */
  private async listTools(client: Client, signal?: AbortSignal): Promise<RawTool[]> {
    const items = await collectPages(
      async (cursor) => {
        const result = await client.request(
          { method: "tools/list", params: cursor === undefined ? {} : { cursor } },
          listToolsResult,
          { timeout: this.config.timeout_ms, ...(signal ? { signal } : {}) },
        );
        return { items: result.tools, nextCursor: result.nextCursor };
      },
      this.logger,
      "tools/list",
      signal,
    );
    const byName = new Map<string, RawTool>();
    // A tool nested too deep would overflow the stack of every later walk (normalizing, hashing,
    // rendering, validating): quarantined here, first, with a reason; its siblings are served.
    const sane = items.filter((item) => {
      const tooDeep = isObject(item) ? schemaTooDeep(item) : undefined;
      if (tooDeep === undefined) return true;
      const name = isObject(item) && typeof item.name === "string" ? item.name : undefined;
      this.logger.warn("tool quarantined", { tool: name, reason: tooDeep });
      return false;
    });
    // `null` members mean absent (see normalizeTool): dropped here, before anything reads them.
    for (const item of sane.map((i) => (isObject(i) ? normalizeTool(i) : i))) {
      if (!isObject(item) || typeof item.name !== "string" || !isObject(item.inputSchema)) {
        this.logger.warn("skipping a malformed tool (no name or inputSchema)", {
          tool: isObject(item) && typeof item.name === "string" ? item.name : undefined,
        });
        continue;
      }
      const tool = item as RawTool;
      if (byName.has(tool.name)) {
        this.logger.warn("skipping a duplicate tool", { tool: tool.name });
        continue;
      }
      byName.set(tool.name, tool);
    }
    return [...byName.values()].sort((a, b) => compareStrings(a.name, b.name));
  }

  /** The tools allow/deny let through. */
  private filtered(tools: readonly RawTool[]): RawTool[] {
    return tools.filter((tool) => {
      if (this.filter(tool.name)) return true;
      this.logger.debug("tool filtered out by allow/deny", { tool: tool.name });
      return false;
    });
  }

  /**
   * Installs a new listing (unfiltered; the filter is applied here and kept re-appliable by
   * {@link updateConfig}); true when the exposed list differs from the previous one.
   */
  private replaceTools(listed: RawTool[]): boolean {
    const before = JSON.stringify(this.toolList);
    const wasDiscovered = this.discovered;
    this.listedTools = listed;
    this.toolList = this.filtered(listed);
    this.discovered = true;
    return wasDiscovered && JSON.stringify(this.toolList) !== before;
  }

  private setState(state: ServerState): void {
    this.state = state;
    this.onStatusChanged?.(this.status());
  }

  /** `tools/list_changed`: wait for the burst to settle, then re-list once. */
  private scheduleRelist(): void {
    if (this.closePromise) return;
    if (this.relisting) {
      this.relistAgain = true;
      return;
    }
    if (this.relistTimer) clearTimeout(this.relistTimer);
    this.relistTimer = setTimeout(() => {
      this.relistTimer = undefined;
      this.relisting = this.relist().finally(() => {
        this.relisting = undefined;
        if (this.relistAgain) {
          this.relistAgain = false;
          this.scheduleRelist();
        }
      });
    }, this.listChangedDebounceMs);
    this.relistTimer.unref();
  }

  /**
   * Re-lists the tools now (the daemon's `refresh`, `abridge` after a config change). Resolves
   * when the new list is in; a server that is not ready is left as it is.
   */
  async refresh(): Promise<void> {
    if (this.relisting) await this.relisting;
    this.relisting = this.relist().finally(() => {
      this.relisting = undefined;
    });
    await this.relisting;
  }

  private async relist(): Promise<void> {
    const client = this.client;
    if (!client || this.state !== "ready") return;
    try {
      const tools = await this.listTools(client, this.lifetime.signal);
      if (client !== this.client) return;
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
        const error = this.startError(err);
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
    const name = this.config.name;
    switch (this.state) {
      case "disabled":
        throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${name} is disabled`);
      case "closed":
        throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${name} is closed`);
      case "failed":
        // Retried in the background (see start), so a later call may well succeed.
        throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${name} failed to start: ${this.error?.message ?? "unknown"}`, {
          retryable: true,
          details: { server: name, state: this.state, ...(this.error ? { error: { ...this.error } } : {}) },
        });
      default:
        throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${name} is ${this.state}; try again shortly`, { retryable: true });
    }
  }

  /**
   * Forwards `tools/call`. A tool hidden by allow/deny is refused with `TOOL_FILTERED` before
   * anything is sent, even when the caller guessed its name; a tool the server did not list is
   * `TOOL_NOT_FOUND`. An upstream tool error (`isError: true`) is a result, not an exception.
   */
  async callTool(tool: string, args: JsonObject | undefined, options: ForwardOptions = {}): Promise<CallToolResult> {
    if (!this.filter(tool)) {
      throw new AbridgeError(ErrorCode.TOOL_FILTERED, `${this.config.name}: tool "${tool}" is not allowed by allow/deny`);
    }
    // Fail fast with the reason (disabled, failed, restarting); per_call has no standing client.
    if (this.config.lifecycle !== "per_call" || this.state !== "ready") this.readyClient();
    if (!this.toolList.some((t) => t.name === tool)) {
      throw new AbridgeError(ErrorCode.TOOL_NOT_FOUND, `${this.config.name}: no tool "${tool}"`);
    }
    const params: JsonObject = { name: tool, arguments: args ?? {} };
    return this.withClient(options.signal, async (client) => (await this.forward(client, "tools/call", params, callToolResult, options)) as CallToolResult);
  }

  /**
   * Runs `use` with the ready client, or for `lifecycle = "per_call"` with a fresh process that
   * is initialized for this one use and ended right after (the least-trusted servers keep no
   * state between calls).
   */
  private async withClient<T>(signal: AbortSignal | undefined, use: (client: Client) => Promise<T>): Promise<T> {
    if (this.config.lifecycle !== "per_call") return use(this.readyClient());
    if (this.state !== "ready") this.readyClient();
    const transport = this.createTransport();
    this.transports.add(transport);
    const client = this.newClient();
    client.onerror = (err) => this.logger.debug("per-call transport error", { error: this.secrets.redact(messageOf(err)) });
    const timeoutMs = this.config.connect_timeout_ms;
    // Our own timer, as in forward(): an upstream's -32001 answer to initialize is not a timeout.
    const timedOut = new McpError(RpcErrorCode.RequestTimeout, `no answer within ${timeoutMs} ms`);
    const clock = new AbortController();
    const timer = setTimeout(() => clock.abort(timedOut), timeoutMs);
    timer.unref();
    try {
      const signals = [this.lifetime.signal, clock.signal];
      if (signal) signals.push(signal);
      await client.connect(transport, { signal: AbortSignal.any(signals), timeout: MAX_TIMER_MS });
    } catch (err) {
      const closed = client.transport === undefined;
      this.retire(transport, client);
      throw this.callError(err, "initialize", timeoutMs, signal, err === timedOut, closed);
    } finally {
      clearTimeout(timer);
    }
    try {
      return await use(client);
    } finally {
      this.retire(transport, client);
    }
  }

  /**
   * Forwards any other request (`resources/read`, `prompts/get`, ...) and returns the result
   * object as sent. `tools/call` goes through {@link callTool} so the filter cannot be bypassed.
   */
  async request(method: string, params: JsonObject | undefined, options: ForwardOptions = {}): Promise<JsonObject> {
    if (method === "tools/call") {
      const name = params?.name;
      if (typeof name !== "string") throw new AbridgeError(ErrorCode.INVALID_ARGUMENTS, "tools/call needs a tool name");
      const args = isObject(params?.arguments) ? params.arguments : undefined;
      return this.callTool(name, args, options);
    }
    return this.withClient(options.signal, (client) => this.forward(client, method, params ?? {}, anyResult, options));
  }

  /**
   * Every item of a paginated list method (`resources/list` -> `resources`, ...). A server that
   * does not advertise the capability gets no request and yields `[]`.
   */
  async listAll(method: string, key: string, options: ForwardOptions = {}): Promise<JsonObject[]> {
    if (method === "tools/list") return this.tools();
    if (this.config.lifecycle !== "per_call" || this.state !== "ready") this.readyClient();
    const capability = LIST_CAPABILITY[method];
    if (capability !== undefined && !isObject(this.capabilities?.[capability])) return [];
    const items = await this.withClient(options.signal, (client) => collectPages(
      async (cursor) => {
        const result = await this.forward(client, method, cursor === undefined ? {} : { cursor }, anyResult, options);
        const page = result[key];
        const nextCursor = typeof result.nextCursor === "string" ? result.nextCursor : undefined;
        return { items: Array.isArray(page) ? page : [], nextCursor };
      },
      this.logger,
      method,
      options.signal,
    ));
    return items.filter(isObject);
  }

  /**
   * The server's own `tools/list` answer, every page joined, exactly as sent: nothing dropped,
   * normalized or filtered by allow/deny (`abridge record`). Listed afresh, not from the start-up
   * list, which has already been cleaned.
   */
  async recordTools(options: ForwardOptions = {}): Promise<JsonObject[]> {
    if (this.config.lifecycle !== "per_call" || this.state !== "ready") this.readyClient();
    const items = await this.withClient(options.signal, (client) => collectPages(
      async (cursor) => {
        const result = await this.forward(client, "tools/list", cursor === undefined ? {} : { cursor }, listToolsResult, options);
        return { items: result.tools, nextCursor: result.nextCursor };
      },
      this.logger,
      "tools/list",
      options.signal,
    ));
    return items as JsonObject[];
  }

  private async forward<T extends JsonObject>(
    client: Client,
    method: string,
    params: JsonObject,
    schema: z.ZodType<T>,
    options: ForwardOptions,
  ): Promise<T> {
    const callerSignal = options.signal;
    if (callerSignal?.aborted) {
      throw new AbridgeError(ErrorCode.CANCELLED, `${method} was cancelled before it was sent`, { cause: callerSignal.reason });
    }
    // A private controller per call: the SDK never removes its abort listener, so handing it a
    // long-lived caller signal would pile up listeners. Aborting it makes the SDK send
    // notifications/cancelled upstream, so an abandoned call does not keep the server busy.
    const perCall = new AbortController();
    const onAbort = (): void => perCall.abort(callerSignal?.reason);
    callerSignal?.addEventListener("abort", onAbort, { once: true });
    const timeoutMs = options.timeoutMs ?? this.config.timeout_ms;
    const onProgress = options.onProgress;
    const callId = ++this.nextCallId;
    // Progress goes through our own token, not the SDK's `onprogress`: the SDK drops its progress
    // handler as soon as the response arrives, and a notification read from the same chunk just
    // before the response is delivered a microtask later, so the last update (often "100 of 100")
    // was lost. Ours is removed only after the response has been awaited.
    const progressToken = onProgress || options.resetTimeoutOnProgress ? `abridge-${callId}` : undefined;
    // abridge keeps its own clock instead of the SDK's: the SDK reports its timeout as an McpError
    // with code -32001, the same code an upstream may send in its own error response (a quota, a
    // gateway), so only the identity of our abort reason tells "we gave up" from "it answered -32001".
    const timedOut = new McpError(RpcErrorCode.RequestTimeout, `no answer within ${timeoutMs} ms`);
    let idleTimer: NodeJS.Timeout | undefined;
    const armIdleTimer = (): void => {
      if (idleTimer) clearTimeout(idleTimer);
      idleTimer = setTimeout(() => perCall.abort(timedOut), timeoutMs);
      idleTimer.unref();
    };
    const totalTimer =
      options.resetTimeoutOnProgress && options.maxTotalTimeoutMs !== undefined
        ? setTimeout(() => perCall.abort(timedOut), options.maxTotalTimeoutMs)
        : undefined;
    totalTimer?.unref();
    if (progressToken !== undefined) {
      this.progressHandlers.set(progressToken, (update) => {
        if (options.resetTimeoutOnProgress) armIdleTimer();
        onProgress?.(update);
      });
    }
    armIdleTimer();
    if (method === "tools/call") {
      const relay = this.currentRelay?.();
      this.inFlight.set(callId, { client: relay?.client ?? NO_RELAY_CLIENT, relay });
    }
    const meta = isObject(params._meta) ? params._meta : {};
    const sent = progressToken === undefined ? params : { ...params, _meta: { ...meta, progressToken } };
    try {
      return await client.request({ method, params: sent }, schema, { signal: perCall.signal, timeout: MAX_TIMER_MS });
    } catch (err) {
      throw this.callError(err, method, timeoutMs, callerSignal, err === timedOut, client.transport === undefined);
    } finally {
      if (idleTimer) clearTimeout(idleTimer);
      if (totalTimer) clearTimeout(totalTimer);
      if (progressToken !== undefined) this.progressHandlers.delete(progressToken);
      this.inFlight.delete(callId);
      callerSignal?.removeEventListener("abort", onAbort);
    }
  }

  /** Maps what the SDK threw for a forwarded request to an {@link AbridgeError}. */
  private callError(
    err: unknown,
    method: string,
    timeoutMs: number,
    callerSignal: AbortSignal | undefined,
    timedOut: boolean,
    connectionClosed: boolean,
  ): AbridgeError {
    const name = this.config.name;
    if (callerSignal?.aborted) return new AbridgeError(ErrorCode.CANCELLED, `${name}: ${method} was cancelled`, { cause: err });
    if (err instanceof McpError) {
      // -32001 and -32000 mean a timeout and a closed connection only when the SDK or abridge made
      // them; the same numbers in an upstream's error response are that upstream's own answer, and
      // keep their code and message (retrying a refusal would not help).
      if (timedOut) {
        return new AbridgeError(ErrorCode.UPSTREAM_TIMEOUT, `${name}: ${method} timed out after ${timeoutMs} ms`, {
          cause: err,
          retryable: true,
        });
      }
      if (connectionClosed && err.code === (RpcErrorCode.ConnectionClosed as number)) {
        return new AbridgeError(ErrorCode.UPSTREAM_EXITED, `${name}: the server went away during ${method}`, {
          cause: err,
          retryable: true,
        });
      }
      return new AbridgeError(ErrorCode.UPSTREAM_ERROR, this.secrets.redact(`${name}: ${err.message}`), { cause: err, details: { rpcCode: err.code } });
    }
    if (err instanceof z.ZodError) {
      return new AbridgeError(ErrorCode.UPSTREAM_ERROR, `${name}: malformed ${method} result`, { cause: err });
    }
    // The request never made it (transport send failed: "Not connected", fetch failed). An HTTP
    // or SSE transport does not report a dead server through onclose, so close it here to get
    // the restart path going.
    if (this.config.transport !== "stdio" && this.state === "ready") {
      this.logger.warn("upstream unreachable; reconnecting", { error: messageOf(err) });
      void this.client?.close().catch(() => undefined);
    }
    return new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, this.secrets.redact(`${name}: ${messageOf(err)}`), { cause: err, retryable: true });
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
    if (this.relistTimer) clearTimeout(this.relistTimer);
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
