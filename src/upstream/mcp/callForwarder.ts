import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode as RpcErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ServerConfig } from "../../config/schema.js";
import type { Logger, SecretSet } from "../../log/logger.js";
import { AbridgeError, ErrorCode, isAbridgeError } from "../../model/errors.js";
import { isObject } from "../../model/json.js";
import type { CallToolResult, ForwardOptions, JsonObject, ProgressUpdate } from "../../model/types.js";
import { ChildStdioTransport } from "../process/childStdioTransport.js";
import { CallClock } from "./callClock.js";
import { collectPages } from "./collectPages.js";
import type { RequestRelay } from "./requestRelay.js";
import { busyError, callError, neverSent, queueFullError } from "../upstreamErrors.js";
import { answerInput, completeResult, MAX_INPUT_ROUNDS, resultTypeOf, tooManyRounds, unknownResultType } from "./inputRequired.js";
import { UpstreamClient, withEnvelope } from "./upstreamClient.js";

/** setTimeout's ceiling, given to the SDK so that abridge's own timers are what end a call. */
const MAX_TIMER_MS = 2_147_483_647;

/** `tools/list` result, loose: unknown keys of the result and of each tool are kept as sent. */
export const listToolsResult = z.looseObject({ tools: z.array(z.unknown()), nextCursor: z.string().optional() });
/** `tools/call` result, loose: `client.callTool` would validate structured output; a proxy must not. */
const callToolResult = z.looseObject({ content: z.array(z.unknown()).optional(), isError: z.boolean().optional() });
/** Any other result: an object, untouched. */
const anyResult = z.looseObject({});

/**
 * `result` as `schema` reads it. A `tools/call` result of the usual shape (an object whose
 * `content`, if any, is an array and whose `isError`, if any, is a boolean) is what the loose
 * {@link callToolResult} schema passes on, so it is taken as it is; anything else goes through
 * the schema, which gives the same `ZodError` the SDK client would.
 */
function checkedResult<T extends JsonObject>(schema: z.ZodType<T>, result: JsonObject): T {
  if (
    schema === (callToolResult as z.ZodType) &&
    (result.content === undefined || Array.isArray(result.content)) &&
    (result.isError === undefined || typeof result.isError === "boolean")
  ) {
    return result as T;
  }
  return schema.parse(result);
}

/** Capability that must be advertised before a list method is worth asking. */
const LIST_CAPABILITY: Record<string, string> = {
  "resources/list": "resources",
  "resources/templates/list": "resources",
  "prompts/list": "prompts",
  "tools/list": "tools",
};

/** What a {@link CallForwarder} needs of the connection it forwards for. */
export interface ForwardTarget {
  /** Throws why the server takes no request now (disabled, failed, restarting); a per_call server needs no standing client. */
  assertAvailable(): void;
  /** Runs `use` with the client to send over: the standing one, or a fresh per_call process. */
  withClient<T>(signal: AbortSignal | undefined, use: (client: Client) => Promise<T>): Promise<T>;
  /** True when the exposure decision lets `tool` through. */
  isExposed(tool: string): boolean;
  /** True when `tool` is among the exposed tools the server listed. */
  isListed(tool: string): boolean;
  /** True when the server advertised `capability` in `initialize`. */
  advertises(capability: string): boolean;
}

/** Options of a {@link CallForwarder}. */
export interface CallForwarderOptions {
  /** The connection requests are forwarded for. */
  target: ForwardTarget;
  /** The server's logger. */
  logger: Logger;
  /** The server's config entry in force: its name and `timeout_ms` are read at every request. */
  config: () => ServerConfig;
  /** The server's secrets, redacted from error messages. */
  secrets: SecretSet;
  /** Learns which client each tools/call comes from, for the upstream's requests during it. */
  relay: RequestRelay;
  /** A request never reached the server (its transport's send failed). */
  onUnreachable?: (err: unknown) => void;
}

/**
 * Requests during which an upstream may ask the caller's client (sampling, elicitation, roots):
 * their caller is made known to the relay for as long as they run.
 */
const RELAYED_METHODS: ReadonlySet<string> = new Set(["tools/call", "prompts/get", "resources/read"]);

/**
 * Forwards requests to an upstream over a client it is handed and owns what happens per request:
 * the bound on requests waiting for the server (`max_pending_requests`, past which a request
 * fails at once with `UPSTREAM_BUSY`), the caller's abort passed on, abridge's own timeout (idle,
 * reset by progress if asked, and a total bound), the progress of the call, the caller of each
 * tools/call, prompts/get and resources/read for the relay, the mapping of failures to
 * {@link AbridgeError}, and the per-call lifecycle (a fresh process for one use). Results go through loose schemas, so an upstream's
 * answer reaches the model as sent.
 */
export class CallForwarder {
  private readonly target: ForwardTarget;
  private readonly logger: Logger;
  private readonly config: () => ServerConfig;
  private readonly secrets: SecretSet;
  private readonly relay: RequestRelay;
  private readonly onUnreachable: ((err: unknown) => void) | undefined;
  private nextCallId = 0;
  /** Requests to the server not yet answered: in flight, or waiting to be written. */
  private pending = 0;
  /** Requests refused since the server last had room, for one warning per stretch. */
  private refusedInStretch = 0;
  /** Our own progress tokens -> the caller's callback (see {@link forward} for why not the SDK's). */
  private readonly progressHandlers = new Map<string, (update: ProgressUpdate) => void>();

  constructor(options: CallForwarderOptions) {
    this.target = options.target;
    this.logger = options.logger;
    this.config = options.config;
    this.secrets = options.secrets;
    this.relay = options.relay;
    this.onUnreachable = options.onUnreachable;
  }

  /**
   * Forwards `tools/call`. A tool hidden by the exposure decision is refused with
   * `TOOL_FILTERED` before anything is sent, even when the caller guessed its name; a tool the
   * server did not list is `TOOL_NOT_FOUND`. An upstream tool error (`isError: true`) is a
   * result, not an exception.
   */
  async callTool(tool: string, args: JsonObject | undefined, options: ForwardOptions = {}): Promise<CallToolResult> {
    if (!this.target.isExposed(tool)) {
      throw new AbridgeError(ErrorCode.TOOL_FILTERED, `${this.config().name}: tool "${tool}" is not allowed by allow/deny`);
    }
    // Fail fast with the reason (disabled, failed, restarting).
    this.target.assertAvailable();
    if (!this.target.isListed(tool)) {
      throw new AbridgeError(ErrorCode.TOOL_NOT_FOUND, `${this.config().name}: no tool "${tool}"`);
    }
    const params: JsonObject = { name: tool, arguments: args ?? {} };
    return this.admitted(options.signal, (client) => this.forward(client, "tools/call", params, callToolResult, options) as Promise<CallToolResult>);
  }

  /**
   * Forwards any other request (`resources/read`, `prompts/get`, ...) and returns the result
   * object as sent. `tools/call` goes through {@link callTool} so the exposure cannot be bypassed.
   */
  async request(method: string, params: JsonObject | undefined, options: ForwardOptions = {}): Promise<JsonObject> {
    if (method === "tools/call") {
      const name = params?.name;
      if (typeof name !== "string") throw new AbridgeError(ErrorCode.INVALID_ARGUMENTS, "tools/call needs a tool name");
      const args = isObject(params?.arguments) ? params.arguments : undefined;
      return this.callTool(name, args, options);
    }
    return this.admitted(options.signal, (client) => this.forward(client, method, params ?? {}, anyResult, options));
  }

  /**
   * Every item of a paginated list method (`resources/list` -> `resources`, ...). A server that
   * does not advertise the capability gets no request and yields `[]`.
   */
  async listAll(method: string, key: string, options: ForwardOptions = {}): Promise<JsonObject[]> {
    this.target.assertAvailable();
    const capability = LIST_CAPABILITY[method];
    if (capability !== undefined && !this.target.advertises(capability)) return [];
    const items = await this.pages(method, anyResult, options, (result) => {
      const page = result[key];
      return { items: Array.isArray(page) ? page : [], nextCursor: typeof result.nextCursor === "string" ? result.nextCursor : undefined };
    });
    return items.filter(isObject);
  }

  /**
   * The server's own `tools/list` answer, every page joined, exactly as sent: nothing dropped,
   * normalized or filtered (`abridge record`). Listed afresh, not from the start-up list, which
   * has already been cleaned.
   */
  async recordTools(options: ForwardOptions = {}): Promise<JsonObject[]> {
    this.target.assertAvailable();
    const items = await this.pages("tools/list", listToolsResult, options, (result) => ({ items: result.tools, nextCursor: result.nextCursor }));
    return items as JsonObject[];
  }

  /** Every page of `method`, cursors followed, over one client. */
  private pages<T extends JsonObject>(
    method: string,
    schema: z.ZodType<T>,
    options: ForwardOptions,
    read: (result: T) => { items: unknown[]; nextCursor: string | undefined },
  ): Promise<unknown[]> {
    return this.admitted(options.signal, (client) =>
      collectPages(
        async (cursor) => read(await this.forward(client, method, cursor === undefined ? {} : { cursor }, schema, options)),
        this.logger,
        method,
        options.signal,
      ),
    );
  }

  /**
   * Runs `use` with a client (see {@link ForwardTarget.withClient}) as one of the requests waiting
   * for the server, or fails at once with `UPSTREAM_BUSY` (retryable) when `max_pending_requests`
   * of them already wait: a server that stops reading, or answers slowly, while a client keeps
   * sending, costs bounded memory, and the calls past the bound get an answer they can retry.
   */
  private async admitted<T>(signal: AbortSignal | undefined, use: (client: Client) => Promise<T>): Promise<T> {
    const { name, max_pending_requests: limit } = this.config();
    if (this.pending >= limit) {
      this.refusedInStretch += 1;
      if (this.refusedInStretch === 1) this.logger.warn("server busy: refusing requests past max_pending_requests", { pending: this.pending, limit });
      throw busyError(name, this.pending, limit);
    }
    this.pending += 1;
    try {
      return await this.target.withClient(signal, use);
    } finally {
      this.pending -= 1;
      if (this.refusedInStretch > 0 && this.pending < limit) {
        this.logger.warn("server has room again", { refused: this.refusedInStretch, limit });
        this.refusedInStretch = 0;
      }
    }
  }

  /** A progress notification of the upstream: to the call that carries `token`, if it still runs. */
  progress(token: string, update: ProgressUpdate): void {
    this.progressHandlers.get(token)?.(update);
  }

  /**
   * Sends `method` over `client` and resolves with the result `schema` accepts.
   *
   * @throws AbridgeError as mapped by {@link mapError}.
   */
  async forward<T extends JsonObject>(client: Client, method: string, params: JsonObject, schema: z.ZodType<T>, options: ForwardOptions): Promise<T> {
    const callerSignal = options.signal;
    if (callerSignal?.aborted) {
      throw new AbridgeError(ErrorCode.CANCELLED, `${method} was cancelled before it was sent`, { cause: callerSignal.reason });
    }
    // A child that does not read its stdin, with its queue of requests full: refused here, before
    // the SDK keeps a handler for a request that would not be written.
    const transport = client.transport;
    if (transport instanceof ChildStdioTransport && transport.backlogged) throw queueFullError(this.config().name, transport.queuedBytes);
    const timeoutMs = options.timeoutMs ?? this.config().timeout_ms;
    const clock = new CallClock(timeoutMs, callerSignal, options.resetTimeoutOnProgress ? options.maxTotalTimeoutMs : undefined);
    const onProgress = options.onProgress;
    const callId = ++this.nextCallId;
    // Progress goes through our own token, not the SDK's `onprogress`: the SDK drops its progress
    // handler as soon as the response arrives, and a notification read from the same chunk just
    // before the response is delivered a microtask later, so the last update (often "100 of 100")
    // was lost. Ours is removed only after the response has been awaited.
    const progressToken = onProgress || options.resetTimeoutOnProgress ? `abridge-${callId}` : undefined;
    if (progressToken !== undefined) {
      this.progressHandlers.set(progressToken, (update) => {
        if (options.resetTimeoutOnProgress) clock.arm();
        onProgress?.(update);
      });
    }
    if (RELAYED_METHODS.has(method)) this.relay.enter(callId, options.relay);
    const sent = progressToken === undefined ? params : { ...params, _meta: { ...(isObject(params._meta) ? params._meta : {}), progressToken } };
    // A tools/call to a stdio server skips the SDK client's request bookkeeping (see DirectRequests).
    const direct = method === "tools/call" && transport instanceof ChildStdioTransport ? transport.direct : undefined;
    try {
      let result: T;
      if (direct !== undefined) {
        const call = direct.send(method, withEnvelope(client, sent));
        clock.cancelDirect = call.cancel;
        result = checkedResult(schema, await call.answer);
      } else {
        result = await client.request({ method, params: withEnvelope(client, sent) }, schema, { signal: clock.signal(), timeout: MAX_TIMER_MS });
      }
      // A stateless server that needs the user (sampling, elicitation, roots) answers
      // input_required: the client behind the call is asked, and the request is sent again with
      // the answers, until the server gives a complete result.
      for (let round = 0; resultTypeOf(result) === "input_required"; round++) {
        if (round >= MAX_INPUT_ROUNDS) throw tooManyRounds(this.config().name, method);
        const answers = await answerInput(result, { server: this.config().name, method, relay: options.relay, signal: clock.signal() });
        result = await client.request({ method, params: withEnvelope(client, { ...sent, ...answers }) }, schema, {
          signal: clock.signal(),
          timeout: MAX_TIMER_MS,
        });
      }
      const kind = resultTypeOf(result);
      if (kind !== "complete") throw unknownResultType(this.config().name, method, kind);
      return completeResult(result);
    } catch (err) {
      // Raised here, not by the SDK: already what the caller should see (unless the caller gave up).
      if (isAbridgeError(err) && !callerSignal?.aborted && (err.code === ErrorCode.UPSTREAM_INPUT_REQUIRED || err.code === ErrorCode.UPSTREAM_ERROR)) throw err;
      throw this.mapError(err, method, timeoutMs, callerSignal, clock.timedOut !== undefined && err === clock.timedOut, client.transport === undefined, sent);
    } finally {
      clock.stop();
      if (progressToken !== undefined) this.progressHandlers.delete(progressToken);
      this.relay.leave(callId);
    }
  }

  /**
   * Runs `use` over a fresh process for `lifecycle = "per_call"`: `client` is connected over
   * `transport` (initialize within `connect_timeout_ms`), used once, and `retire`d right after,
   * so the least-trusted servers keep no state between calls.
   */
  async withFreshClient<T>(
    transport: Transport,
    client: Client,
    retire: (transport: Transport, client: Client) => void,
    lifetime: AbortSignal,
    signal: AbortSignal | undefined,
    use: (client: Client) => Promise<T>,
  ): Promise<T> {
    const timeoutMs = this.config().connect_timeout_ms;
    // Our own timer, as in forward(): an upstream's -32001 answer to initialize is not a timeout.
    let timedOut: McpError | undefined;
    const clock = new AbortController();
    const timer = setTimeout(() => clock.abort((timedOut = new McpError(RpcErrorCode.RequestTimeout, `no answer within ${timeoutMs} ms`))), timeoutMs);
    timer.unref();
    try {
      const signals = [lifetime, clock.signal];
      if (signal) signals.push(signal);
      // A stateless server (known from the listing) has no handshake: the process is only started.
      if (client instanceof UpstreamClient && client.era === "stateless") await client.attach(transport);
      else await client.connect(transport, { signal: AbortSignal.any(signals), timeout: MAX_TIMER_MS });
    } catch (err) {
      const closed = client.transport === undefined;
      retire(transport, client);
      throw this.mapError(err, "initialize", timeoutMs, signal, timedOut !== undefined && err === timedOut, closed);
    } finally {
      clearTimeout(timer);
    }
    try {
      return await use(client);
    } finally {
      retire(transport, client);
    }
  }

  /**
   * Maps a failed request with {@link callError}; one that never reached the server is reported.
   * `params`: what was sent, for telling a local failure to write it (no JSON form) from the
   * server's.
   */
  private mapError(
    err: unknown,
    method: string,
    timeoutMs: number,
    callerSignal: AbortSignal | undefined,
    timedOut: boolean,
    connectionClosed: boolean,
    params?: JsonObject,
  ): AbridgeError {
    const mapped = callError(err, {
      server: this.config().name,
      method,
      timeoutMs,
      callerSignal,
      timedOut,
      connectionClosed,
      secrets: this.secrets,
      ...(params !== undefined ? { params } : {}),
    });
    if (neverSent(mapped)) this.onUnreachable?.(err);
    return mapped;
  }
}
