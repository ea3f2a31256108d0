import type { IncomingMessage, ServerResponse } from "node:http";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, MessageExtraInfo, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { accepts, SSE_HEADERS, SSE_KEEP_ALIVE, sendJsonError, sseEvent } from "./httpWire.js";
import { DEFAULT_MAX_QUEUED_NOTIFICATIONS, NotificationBacklog } from "./notificationBacklog.js";

/** How often an open SSE stream with nothing to say gets a comment line (as the SDK's transport). */
export const SSE_KEEP_ALIVE_MS = 15_000;
/** A stream whose client has read nothing of what waits for this long is ended (30 s). */
export const DEFAULT_STREAM_STALL_MS = 30_000;
/** Bytes one stream may hold for a client that does not read before its notifications are dropped (8 MiB). */
export const DEFAULT_MAX_STREAM_QUEUED_BYTES = 8 * 1024 * 1024;
/** A session's warnings about dropped notifications: a stretch announced at most once per this window. */
const PUSHBACK_LOG_WINDOW_MS = 10_000;
/** Requests of one session that may reach the upstreams at once (default of `http_max_calls_per_session`). */
export const DEFAULT_MAX_CALLS_IN_FLIGHT = 64;

/**
 * Requests answered by abridge alone, never counted as calls in flight: nothing of theirs waits on
 * an upstream (tools/list waits only for the start-up grace).
 */
const NOT_CALLS: ReadonlySet<string> = new Set(["initialize", "ping", "tools/list", "logging/setLevel"]);

/** Options of an {@link HttpSessionTransport}. */
export interface HttpSessionTransportOptions {
  logger?: Logger;
  /** Comment line on an idle stream this often (default {@link SSE_KEEP_ALIVE_MS}). */
  keepAliveMs?: number;
  /** Notifications one stream may hold for a client that does not read (default 1,000, as stdio). */
  maxQueuedNotifications?: number;
  /** Bytes one stream may hold before notifications are dropped (default {@link DEFAULT_MAX_STREAM_QUEUED_BYTES}). */
  maxQueuedBytes?: number;
  /** A stream not drained for this long is ended (default {@link DEFAULT_STREAM_STALL_MS}). */
  stallMs?: number;
  /** Calls in flight at most; past it a call is answered busy at once (default {@link DEFAULT_MAX_CALLS_IN_FLIGHT}). */
  maxCallsInFlight?: number;
}

/**
 * One SSE response (a POST's that turned into a stream, or the session's GET stream) and what
 * waits in it for a client that does not read. Writing to a response whose client stopped reading
 * buffers in the process without bound: an upstream logging a million lines at a session that held
 * its GET stream and never read it took serve from 142 MB to 1.75 GB. Here, once the response
 * pushes back, notifications follow the stdio rule ({@link NotificationBacklog}: past 1,000
 * waiting, or past `maxQueuedBytes`, they are dropped and counted) while answers always go in; and
 * a stream that is not drained for `stallMs` is ended (the GET stream can be opened again; a POST's
 * stream ending cancels its calls, as a client that goes away does).
 */
class SseStream {
  /** Notifications written since the response pushed back: they wait in its buffer until it drains. */
  private queuedNotifications = 0;
  /** Armed while the response pushes back; ends it when the client does not read on. */
  private stallTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly res: ServerResponse,
    private readonly owner: StreamOwner,
  ) {
    res.on("drain", this.onDrain);
    // Timed until the response is gone, not until its last message is written: an ended response
    // its client does not read still holds the connection and what waits in it.
    res.once("close", () => this.dispose());
  }

  /** True while the response pushes back (its client is not reading what was written). */
  get blocked(): boolean {
    return this.stallTimer !== undefined;
  }

  /** Writes `message`; a notification may be dropped while the client is not reading. */
  send(message: JSONRPCMessage): void {
    const { res } = this;
    if (res.destroyed || res.writableEnded) return;
    if (this.blocked && !("id" in message)) {
      if (!this.owner.backlog.admit(this.queuedNotifications, res.writableLength)) return;
      this.queuedNotifications += 1;
    }
    if (!res.write(sseEvent(message)) && !this.blocked) this.block();
  }

  /** A comment line, unless the client is not reading anyway. */
  keepAlive(): void {
    const { res } = this;
    if (this.blocked || res.destroyed || res.writableEnded) return;
    if (!res.write(SSE_KEEP_ALIVE)) this.block();
  }

  /**
   * Ends the response: at once when its client is not reading (what waits would never be read),
   * else after what was written.
   */
  end(): void {
    if (this.blocked) this.res.destroy();
    else this.res.end();
  }

  /** The response closed: nothing more is written or timed. */
  dispose(): void {
    this.res.off("drain", this.onDrain);
    if (this.stallTimer !== undefined) clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
    this.owner.backlog.settle();
  }

  private block(): void {
    this.stallTimer = setTimeout(this.onStalled, this.owner.stallMs);
    this.stallTimer.unref();
  }

  private readonly onDrain = (): void => {
    if (this.stallTimer !== undefined) clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
    this.queuedNotifications = 0;
    this.owner.backlog.settle();
  };

  private readonly onStalled = (): void => {
    this.stallTimer = undefined;
    this.owner.onStalled(this);
    this.res.destroy();
  };
}

/** What a {@link SseStream} needs of its session. */
interface StreamOwner {
  readonly backlog: NotificationBacklog;
  readonly stallMs: number;
  onStalled(stream: SseStream): void;
}

/**
 * One POST that carried requests: its response, and how it is being answered. It starts
 * undecided; the first message for it decides (see {@link HttpSessionTransport}).
 */
interface Exchange {
  res: ServerResponse;
  /** The body was a JSON array: the answer is one too. */
  batch: boolean;
  /** Requests of this POST not answered yet. */
  open: number;
  /** Answers of a batch held until the last one, unless the response turned into SSE. */
  answers: JSONRPCMessage[] | undefined;
  /** The response as an SSE stream, once it is one (its headers are sent). */
  stream: SseStream | undefined;
}

/** A message that is a request (has a method and an id). */
function isRequest(message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId; method: string } {
  return "method" in message && "id" in message;
}

/** A message that answers a request (a result or an error, no method). */
function isResponse(message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId } {
  return !("method" in message) && "id" in message;
}

/** An error answer to request `id`, given by the transport itself. */
function errorAnswer(id: RequestId, code: number, message: string, data?: Record<string, unknown>): JSONRPCMessage {
  return { jsonrpc: "2.0", id, error: { code, message, ...(data !== undefined ? { data } : {}) } } as JSONRPCMessage;
}

function progressTokenOf(message: JSONRPCMessage): unknown {
  const params = (message as { params?: { _meta?: { progressToken?: unknown } } }).params;
  return params?._meta?.progressToken;
}

/**
 * The server side of one MCP session over streamable HTTP, on node:http, in place of the SDK's
 * `StreamableHTTPServerTransport`, which turns every request into a web `Request`, every answer
 * into a web `ReadableStream` and every call into an SSE stream (a UUID, a stream, an encoder and
 * a keep-alive timer per call). Here a POST is answered with plain `application/json` unless
 * something must reach the client before the answer: then, and only then, the response becomes an
 * SSE stream carrying those messages and the answer last.
 *
 * When to stream: the wording was "the upstream has declared neither sampling nor
 * elicitation use", but an MCP server declares no such thing (sampling and elicitation are
 * capabilities of clients), and what can arrive mid-call for a request is bounded by the client:
 * the front end relays an upstream's sampling or elicitation request only to a client that
 * declared that capability, progress only for a request with a progress token, and log lines of
 * the call whenever the upstream sends them. Rather than predict, the response waits undecided:
 * the first message tied to the request (`relatedRequestId`) that is not its answer turns it into
 * SSE; an answer that comes first is sent as JSON. Nothing can be lost that way, and a client that
 * declared sampling still gets JSON for the calls that never sample. A request with a progress
 * token is streamed at once: progress is the likely next message, and the client sees the stream
 * open while the call runs.
 *
 * Messages not tied to a live request (list_changed, resources/updated, a late log line) go to
 * the session's GET stream when one is open, as the spec has it, and are dropped otherwise.
 *
 * Bounds: what waits in a stream for a client that does not read is bounded (see {@link SseStream});
 * at most `maxCallsInFlight` requests that reach the upstreams run at once, and one past that is
 * answered at once with a retryable busy error (-32000, `data.retryable`), so one client cannot
 * put thousands of calls on the upstreams with a few batches; a request id used twice in one batch
 * gets -32600 for the second use at once (both used to wait for one answer, and the POST hung).
 */
export class HttpSessionTransport implements Transport, StreamOwner {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

  /** Exchanges by the id of each request they still wait to answer. */
  private readonly exchanges = new Map<RequestId, Exchange>();
  /** Ids of the requests in {@link exchanges} that count as calls in flight. */
  private readonly calls = new Set<RequestId>();
  /** The standalone server-to-client stream (GET), when open. */
  private standalone: SseStream | undefined;
  /** Open SSE responses, for the keep-alive comment. */
  private readonly streams = new Set<SseStream>();
  private keepAlive: NodeJS.Timeout | undefined;
  private closed = false;
  /** Headers of this session's answers, built once and shared by every response. */
  private readonly jsonHeaders: Record<string, string>;
  private readonly sseHeaders: Record<string, string>;
  private readonly logger: Logger;
  private readonly keepAliveMs: number;
  private readonly maxCallsInFlight: number;
  readonly backlog: NotificationBacklog;
  readonly stallMs: number;
  /** Streams ended because their client did not read. */
  private stalledStreams = 0;

  constructor(
    readonly sessionId: string,
    options: HttpSessionTransportOptions = {},
  ) {
    this.logger = options.logger ?? silentLogger;
    this.keepAliveMs = options.keepAliveMs ?? SSE_KEEP_ALIVE_MS;
    this.stallMs = options.stallMs ?? DEFAULT_STREAM_STALL_MS;
    this.maxCallsInFlight = options.maxCallsInFlight ?? DEFAULT_MAX_CALLS_IN_FLIGHT;
    this.backlog = new NotificationBacklog({
      logger: this.logger,
      limit: options.maxQueuedNotifications ?? DEFAULT_MAX_QUEUED_NOTIFICATIONS,
      maxBytes: options.maxQueuedBytes ?? DEFAULT_MAX_STREAM_QUEUED_BYTES,
      fields: { session: sessionId },
      windowMs: PUSHBACK_LOG_WINDOW_MS,
    });
    this.jsonHeaders = { "content-type": "application/json", "mcp-session-id": sessionId };
    this.sseHeaders = { ...SSE_HEADERS, "mcp-session-id": sessionId };
  }

  async start(): Promise<void> {}

  /** Requests of this session waiting for their answer. */
  get inFlight(): number {
    return this.exchanges.size;
  }

  /** True while the session's GET stream is open. */
  get streaming(): boolean {
    return this.standalone !== undefined;
  }

  /** Notifications dropped because a stream of this session was not read, and streams ended for it. */
  get pushback(): { droppedNotifications: number; stalledStreams: number } {
    return { droppedNotifications: this.backlog.dropped, stalledStreams: this.stalledStreams };
  }

  /**
   * Handles a POST whose body was read and validated as `messages` (`batch` when it was an
   * array). Only requests wait for an answer; a body without any is accepted with 202.
   */
  handlePost(req: IncomingMessage, res: ServerResponse, messages: JSONRPCMessage[], batch: boolean): void {
    if (this.closed) {
      sendJsonError(res, 404, -32001, "session not found");
      return;
    }
    const extra: MessageExtraInfo = { requestInfo: { headers: req.headers } };
    let requests = 0;
    let streamNow = false;
    let calls = 0;
    const ids = new Set<RequestId>();
    /** What is passed on: everything but the requests answered here. */
    const admitted: JSONRPCMessage[] = [];
    /** Answers given here at once: a second use of an id in this batch, a call past the cap. */
    const refusals: JSONRPCMessage[] = [];
    for (const message of messages) {
      if (!isRequest(message)) {
        admitted.push(message);
        continue;
      }
      if (this.exchanges.has(message.id)) {
        sendJsonError(res, 400, -32600, `Invalid Request: request id ${JSON.stringify(message.id)} is already in use in this session`);
        return;
      }
      requests += 1;
      if (ids.has(message.id)) {
        refusals.push(errorAnswer(message.id, -32600, `Invalid Request: request id ${JSON.stringify(message.id)} is used more than once in this batch`));
        continue;
      }
      ids.add(message.id);
      if (!NOT_CALLS.has(message.method)) {
        if (this.calls.size + calls >= this.maxCallsInFlight) {
          refusals.push(
            errorAnswer(message.id, -32000, `server busy: ${this.maxCallsInFlight} calls of this session are in flight; retry once some are answered`, {
              retryable: true,
              maxCallsInFlight: this.maxCallsInFlight,
            }),
          );
          continue;
        }
        calls += 1;
      }
      admitted.push(message);
      if (progressTokenOf(message) !== undefined) streamNow = true;
    }
    if (requests === 0) {
      res.writeHead(202).end();
      for (const message of messages) this.onmessage?.(message, extra);
      return;
    }
    const exchange: Exchange = { res, batch, open: requests, answers: undefined, stream: undefined };
    for (const message of admitted) {
      if (!isRequest(message)) continue;
      this.exchanges.set(message.id, exchange);
      if (!NOT_CALLS.has(message.method)) this.calls.add(message.id);
    }
    res.once("close", () => this.onExchangeClosed(exchange, admitted));
    if (streamNow) this.startSse(exchange);
    for (const message of admitted) this.onmessage?.(message, extra);
    for (const refusal of refusals) {
      exchange.open -= 1;
      this.answer(exchange, refusal);
    }
  }

  /** Opens the standalone server-to-client SSE stream of this session (one at a time). */
  handleGet(req: IncomingMessage, res: ServerResponse): void {
    if (!accepts(req.headers.accept, "text/event-stream")) {
      sendJsonError(res, 406, -32000, "Not Acceptable: the GET stream needs Accept: text/event-stream");
      return;
    }
    if (this.closed) {
      sendJsonError(res, 404, -32001, "session not found");
      return;
    }
    if (this.standalone !== undefined) {
      sendJsonError(res, 409, -32000, "Conflict: this session already has a GET stream open");
      return;
    }
    res.writeHead(200, this.sseHeaders);
    res.flushHeaders();
    const stream = this.watch(res);
    this.standalone = stream;
    res.once("close", () => {
      if (this.standalone === stream) this.standalone = undefined;
      this.unwatch(stream);
    });
  }

  /** Ends the session at the client's request. */
  handleDelete(res: ServerResponse): void {
    res.writeHead(200).end();
    void this.close();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (isResponse(message)) {
      const exchange = this.exchanges.get(message.id);
      // Its POST is gone (the client left and the request was cancelled): nobody waits for it.
      if (exchange === undefined) return;
      this.exchanges.delete(message.id);
      this.calls.delete(message.id);
      exchange.open -= 1;
      this.answer(exchange, message);
      return;
    }
    const related = options?.relatedRequestId;
    const exchange = related !== undefined ? this.exchanges.get(related) : undefined;
    if (exchange !== undefined) {
      (exchange.stream ?? this.startSse(exchange))?.send(message);
      return;
    }
    if (this.standalone !== undefined) {
      this.standalone.send(message);
      return;
    }
    // A request to the client with no stream to carry it would wait for an answer that cannot
    // come: refuse it now (the SDK's transport throws here too). A notification is dropped.
    if (isRequest(message)) throw new Error(`no open stream to send ${message.method} on (session ${this.sessionId})`);
  }

  /** Ends every open response and the session. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const exchanges = new Set(this.exchanges.values());
    this.exchanges.clear();
    this.calls.clear();
    for (const exchange of exchanges) {
      if (exchange.stream !== undefined) exchange.stream.end();
      else sendJsonError(exchange.res, 404, -32001, "session closed");
    }
    this.standalone?.end();
    this.standalone = undefined;
    this.streams.clear();
    if (this.keepAlive !== undefined) clearInterval(this.keepAlive);
    this.keepAlive = undefined;
    this.onclose?.();
  }

  /** A stream of this session was not read for {@link stallMs}: it is about to be ended. */
  onStalled(stream: SseStream): void {
    this.stalledStreams += 1;
    this.logger.warn("ending an HTTP stream its client has not read", {
      session: this.sessionId,
      stream: stream === this.standalone ? "GET" : "POST",
      stalledMs: this.stallMs,
      waitingBytes: stream.res.writableLength,
    });
  }

  private answer(exchange: Exchange, message: JSONRPCMessage): void {
    const { res } = exchange;
    if (exchange.stream !== undefined) {
      exchange.stream.send(message);
      if (exchange.open === 0) {
        this.unwatch(exchange.stream);
        res.end();
      }
      return;
    }
    if (res.destroyed) return;
    if (!exchange.batch) {
      res.writeHead(200, this.jsonHeaders).end(JSON.stringify(message));
      return;
    }
    (exchange.answers ??= []).push(message);
    if (exchange.open === 0) res.writeHead(200, this.jsonHeaders).end(JSON.stringify(exchange.answers));
  }

  /** Turns an undecided response into an SSE stream; batch answers already in go out first. */
  private startSse(exchange: Exchange): SseStream | undefined {
    const { res } = exchange;
    if (res.destroyed) return undefined;
    res.writeHead(200, this.sseHeaders);
    res.flushHeaders();
    const stream = this.watch(res);
    exchange.stream = stream;
    for (const answer of exchange.answers ?? []) stream.send(answer);
    exchange.answers = undefined;
    return stream;
  }

  /**
   * A POST's response closed. Written completely, its requests are finished. Cut before that (the
   * client went away, or did not read its stream), its unanswered requests are cancelled as the
   * client would have done: the SDK server only aborts a handler on `notifications/cancelled` or
   * when the whole session closes, and the upstream call would run on until its timeout.
   */
  private onExchangeClosed(exchange: Exchange, admitted: JSONRPCMessage[]): void {
    if (exchange.stream !== undefined) this.unwatch(exchange.stream);
    if (exchange.open === 0 || this.closed) return;
    this.logger.debug("HTTP client disconnected; cancelling its requests", { session: this.sessionId, requests: exchange.open });
    for (const message of admitted) {
      if (!isRequest(message) || this.exchanges.get(message.id) !== exchange) continue;
      this.exchanges.delete(message.id);
      this.calls.delete(message.id);
      this.onmessage?.({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: message.id, reason: "client disconnected" } });
    }
    exchange.open = 0;
  }

  private watch(res: ServerResponse): SseStream {
    const stream = new SseStream(res, this);
    this.streams.add(stream);
    // One timer per session, running only while a stream is open: none per call.
    this.keepAlive ??= setInterval(() => {
      for (const open of this.streams) open.keepAlive();
    }, this.keepAliveMs).unref();
    return stream;
  }

  /** Stops the keep-alive comments of `stream` (its stall timer runs until its response closes). */
  private unwatch(stream: SseStream): void {
    if (!this.streams.delete(stream)) return;
    if (this.streams.size > 0 || this.keepAlive === undefined) return;
    clearInterval(this.keepAlive);
    this.keepAlive = undefined;
  }
}
