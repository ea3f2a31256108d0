import type { IncomingMessage, ServerResponse } from "node:http";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, MessageExtraInfo, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { accepts, SSE_HEADERS, SSE_KEEP_ALIVE, sendJsonError, sseEvent } from "./httpWire.js";

/** How often an open SSE stream with nothing to say gets a comment line (as the SDK's transport). */
export const SSE_KEEP_ALIVE_MS = 15_000;

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
  /** The response is an SSE stream (its headers are sent). */
  sse: boolean;
}

/** A message that is a request (has a method and an id). */
function isRequest(message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId; method: string } {
  return "method" in message && "id" in message;
}

/** A message that answers a request (a result or an error, no method). */
function isResponse(message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId } {
  return !("method" in message) && "id" in message;
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
 */
export class HttpSessionTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

  /** Exchanges by the id of each request they still wait to answer. */
  private readonly exchanges = new Map<RequestId, Exchange>();
  /** The standalone server-to-client stream (GET), when open. */
  private standalone: ServerResponse | undefined;
  /** Open SSE responses, for the keep-alive comment. */
  private readonly streams = new Set<ServerResponse>();
  private keepAlive: NodeJS.Timeout | undefined;
  private closed = false;
  /** Headers of this session's answers, built once and shared by every response. */
  private readonly jsonHeaders: Record<string, string>;
  private readonly sseHeaders: Record<string, string>;

  constructor(
    readonly sessionId: string,
    private readonly logger: Logger = silentLogger,
    private readonly keepAliveMs = SSE_KEEP_ALIVE_MS,
  ) {
    this.jsonHeaders = { "content-type": "application/json", "mcp-session-id": sessionId };
    this.sseHeaders = { ...SSE_HEADERS, "mcp-session-id": sessionId };
  }

  async start(): Promise<void> {}

  /** Requests of this session waiting for their answer. */
  get inFlight(): number {
    return this.exchanges.size;
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
    for (const message of messages) {
      if (!isRequest(message)) continue;
      if (this.exchanges.has(message.id)) {
        sendJsonError(res, 400, -32600, `Invalid Request: request id ${JSON.stringify(message.id)} is already in use in this session`);
        return;
      }
      requests += 1;
      if (progressTokenOf(message) !== undefined) streamNow = true;
    }
    if (requests === 0) {
      res.writeHead(202).end();
      for (const message of messages) this.onmessage?.(message, extra);
      return;
    }
    const exchange: Exchange = { res, batch, open: requests, answers: undefined, sse: false };
    for (const message of messages) if (isRequest(message)) this.exchanges.set(message.id, exchange);
    res.once("close", () => this.onExchangeClosed(exchange, messages));
    if (streamNow) this.startSse(exchange);
    for (const message of messages) this.onmessage?.(message, extra);
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
    this.standalone = res;
    res.writeHead(200, this.sseHeaders);
    res.flushHeaders();
    this.watch(res);
    res.once("close", () => {
      if (this.standalone === res) this.standalone = undefined;
      this.unwatch(res);
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
      exchange.open -= 1;
      this.answer(exchange, message);
      return;
    }
    const related = options?.relatedRequestId;
    const exchange = related !== undefined ? this.exchanges.get(related) : undefined;
    if (exchange !== undefined) {
      if (!exchange.sse) this.startSse(exchange);
      this.write(exchange.res, message);
      return;
    }
    if (this.standalone !== undefined) {
      this.write(this.standalone, message);
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
    for (const exchange of exchanges) {
      if (exchange.sse) exchange.res.end();
      else sendJsonError(exchange.res, 404, -32001, "session closed");
    }
    this.standalone?.end();
    this.standalone = undefined;
    this.streams.clear();
    if (this.keepAlive !== undefined) clearInterval(this.keepAlive);
    this.keepAlive = undefined;
    this.onclose?.();
  }

  private answer(exchange: Exchange, message: JSONRPCMessage): void {
    const { res } = exchange;
    if (exchange.sse) {
      this.write(res, message);
      if (exchange.open === 0) {
        this.unwatch(res);
        res.end();
      }
      return;
    }
    if (!exchange.batch) {
      res.writeHead(200, this.jsonHeaders).end(JSON.stringify(message));
      return;
    }
    (exchange.answers ??= []).push(message);
    if (exchange.open === 0) res.writeHead(200, this.jsonHeaders).end(JSON.stringify(exchange.answers));
  }

  /** Turns an undecided response into an SSE stream; batch answers already in go out first. */
  private startSse(exchange: Exchange): void {
    exchange.sse = true;
    const { res } = exchange;
    if (res.destroyed) return;
    res.writeHead(200, this.sseHeaders);
    res.flushHeaders();
    this.watch(res);
    for (const answer of exchange.answers ?? []) this.write(res, answer);
    exchange.answers = undefined;
  }

  private write(res: ServerResponse, message: JSONRPCMessage): void {
    if (res.destroyed || res.writableEnded) return;
    res.write(sseEvent(message));
  }

  /**
   * A POST's response closed. Written completely, its requests are finished. Cut before that (the
   * client went away), its unanswered requests are cancelled as the client would have done: the
   * SDK server only aborts a handler on `notifications/cancelled` or when the whole session
   * closes, and the upstream call would run on until its timeout.
   */
  private onExchangeClosed(exchange: Exchange, messages: JSONRPCMessage[]): void {
    this.unwatch(exchange.res);
    if (exchange.open === 0 || this.closed) return;
    this.logger.debug("HTTP client disconnected; cancelling its requests", { session: this.sessionId, requests: exchange.open });
    for (const message of messages) {
      if (!isRequest(message) || this.exchanges.get(message.id) !== exchange) continue;
      this.exchanges.delete(message.id);
      this.onmessage?.({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: message.id, reason: "client disconnected" } });
    }
    exchange.open = 0;
  }

  private watch(res: ServerResponse): void {
    this.streams.add(res);
    // One timer per session, running only while a stream is open: none per call.
    this.keepAlive ??= setInterval(() => {
      for (const stream of this.streams) if (!stream.destroyed && !stream.writableEnded) stream.write(SSE_KEEP_ALIVE);
    }, this.keepAliveMs).unref();
  }

  private unwatch(res: ServerResponse): void {
    if (!this.streams.delete(res) || this.streams.size > 0 || this.keepAlive === undefined) return;
    clearInterval(this.keepAlive);
    this.keepAlive = undefined;
  }
}
