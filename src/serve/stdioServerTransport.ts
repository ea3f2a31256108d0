import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode as RpcCode, JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { BoundedLineReader, type DroppedLine } from "../util/boundedLineReader.js";
import { LineWriter } from "../util/lineWriter.js";
import { DEFAULT_MAX_QUEUED_NOTIFICATIONS, NotificationBacklog } from "./notificationBacklog.js";

export { DEFAULT_MAX_QUEUED_NOTIFICATIONS };

/** Default bound of one request line (16 MiB, like the HTTP front end's body limit). */
export const DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024;
/**
 * Bytes of answers that may wait for a client that does not read before requests stop being
 * handled (8 MiB). Requests read meanwhile wait as lines, and past {@link MAX_WAITING_REQUEST_BYTES}
 * stdin is no longer read: a client that pipelines and never reads costs bounded memory.
 */
export const DEFAULT_MAX_QUEUED_BYTES = 8 * 1024 * 1024;
/** Request bytes read but not yet handled while answers wait, before stdin is paused (16 MiB). */
const MAX_WAITING_REQUEST_BYTES = 16 * 1024 * 1024;

/** Options of a {@link StdioServerTransport}. */
export interface StdioServerTransportOptions {
  /** Largest request line accepted, newline excluded (default 16 MiB). */
  maxLineBytes?: number;
  /** Notifications kept waiting for a slow client (default 1,000); the rest are dropped and counted. */
  maxQueuedNotifications?: number;
  /** Answer bytes kept waiting before requests stop being handled (default 8 MiB). */
  maxQueuedBytes?: number;
  /** Where dropped notifications are reported (once per stretch of dropping). */
  logger?: Logger;
}

/**
 * The server side of MCP over stdio, in place of the SDK's `StdioServerTransport`, which closes
 * itself when a line exceeds its 10 MiB `ReadBuffer` (so one huge request ended `abridge serve`)
 * and reports unreadable lines only to `onerror` (so the client waits forever for an answer).
 * Here every line is answered: a line over `maxLineBytes` is discarded as it streams in (never
 * held whole) and answered -32600 "request too large"; a line that is not JSON -32700; JSON that
 * is not a JSON-RPC message -32600. Those answers carry `id: null`, as JSON-RPC requires when the
 * id could not be read, and serving goes on. The failures still reach `onerror`, for the log.
 *
 * Writing: once stdout pushes back (the client reads slowly, or not at all), messages wait in one
 * queue behind one `drain` listener (a {@link LineWriter}; notifications are its marked lines);
 * the SDK's transport, and this one before, added three
 * listeners per waiting write, and with 100k of them each drain was a quadratic walk (calls to
 * healthy servers timed out, RSS reached 3.4 GB). While the queue holds more than
 * `maxQueuedNotifications` notifications, new ones are dropped and counted (a log flood from an
 * upstream must not cost unbounded memory; the rule of every HTTP stream too, see
 * {@link NotificationBacklog}); responses and requests are never dropped. While it
 * holds more than `maxQueuedBytes`, requests read are not handled yet, so a client that pipelines
 * without reading cannot make answers pile up. `close()` does not wait for the queue: a client
 * that ended stdin is not waited for.
 */
export class StdioServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /**
   * Sees every parsed line before the JSON-RPC schema check and `onmessage`; returning true
   * consumes it (the stdio fast path of tools/call, fastToolCalls.ts).
   */
  intercept?: (message: unknown) => boolean;

  private readonly reader: BoundedLineReader;
  private readonly logger: Logger;
  private readonly notifications: NotificationBacklog;
  private readonly maxQueuedBytes: number;
  private started = false;
  private closed = false;
  /**
   * Writes to stdout, made by start(): one `writev` per tick, one `drain` listener; unbounded in
   * bytes (past `maxQueuedBytes` requests are held instead, see {@link holdingRequests}).
   */
  private writer: LineWriter | undefined;
  /** Request lines read while answers wait, handled once they have gone out. */
  private waitingLines: string[] = [];
  private waitingLineBytes = 0;
  private inputPaused = false;

  constructor(
    private readonly stdin: Readable,
    private readonly stdout: Writable,
    options: StdioServerTransportOptions = {},
  ) {
    this.reader = new BoundedLineReader(options.maxLineBytes ?? DEFAULT_MAX_REQUEST_BYTES);
    this.logger = options.logger ?? silentLogger;
    this.notifications = new NotificationBacklog({ logger: this.logger, limit: options.maxQueuedNotifications ?? DEFAULT_MAX_QUEUED_NOTIFICATIONS });
    this.maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
  }

  /** Notifications dropped so far because the client was not reading. */
  get droppedNotifications(): number {
    return this.notifications.dropped;
  }

  /** Messages waiting for stdout to drain. */
  get queuedMessages(): number {
    return this.writer?.queuedLines ?? 0;
  }

  // Arrow functions: the same function objects are removed again in close().
  private readonly onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    for (const event of this.reader.push(bytes)) {
      if (this.closed) return;
      if ("dropped" in event) this.tooLarge(event.dropped);
      else if (this.holdingRequests()) this.holdLine(event.line);
      else this.onLine(event.line);
    }
  };

  private readonly onStreamError = (error: Error): void => {
    this.onerror?.(error);
  };

  // A client that stops reading (killed mid-call) turns the next write into EPIPE. Unheard, that
  // error ends the process before the bridge can end its upstream children; heard, it closes the
  // transport and `serve` shuts down in order.
  private readonly onOutputGone = (error?: Error): void => {
    if (error) this.onerror?.(error);
    void this.close();
  };

  async start(): Promise<void> {
    if (this.started) throw new Error("StdioServerTransport already started");
    this.started = true;
    this.stdin.on("data", this.onData);
    this.stdin.on("error", this.onStreamError);
    this.stdout.on("error", this.onOutputGone);
    this.stdout.on("close", this.onOutputGone);
    this.writer = new LineWriter(this.stdout, { maxQueuedBytes: Number.POSITIVE_INFINITY, afterDrain: this.afterDrain });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stdin.off("data", this.onData);
    this.stdin.off("error", this.onStreamError);
    this.stdout.off("close", this.onOutputGone);
    // The error listener stays: a write still in flight may fail after close, and an unheard
    // 'error' would end the process.
    // Pause only if nobody else reads stdin: pausing a shared stream would starve them.
    if (this.stdin.listenerCount("data") === 0) this.stdin.pause();
    this.reader.clear();
    // What still waits is let go: the client ended its side (or serving stops), and waiting for
    // a reader that may never come would keep the process alive.
    const undelivered = this.writer?.close() ?? 0;
    this.waitingLines = [];
    this.waitingLineBytes = 0;
    this.notifications.settle();
    if (undelivered > 0) this.logger.warn("stdio front end closed with messages the client had not read", { undelivered });
    this.onclose?.();
  }

  /**
   * Writes a message, or queues it while stdout pushes back. Resolves once the message is handed
   * to stdout or queued (or dropped, for a notification over the queue's bound); rejects when
   * the transport is closed.
   */
  send(message: JSONRPCMessage): Promise<void> {
    const writer = this.writer;
    if (this.closed || !writer || !this.stdout.writable) return Promise.reject(new Error("Not connected"));
    const notification = !("id" in message);
    if (notification && writer.pushingBack && !this.notifications.admit(writer.queuedMarked)) return Promise.resolve();
    writer.write(`${JSON.stringify(message)}\n`, notification);
    return Promise.resolve();
  }

  /** After stdout drained: the stretch of dropped notifications ends once nothing waits, and held requests are handled. */
  private readonly afterDrain = (): void => {
    if (this.closed) return;
    if (this.queuedMessages === 0) this.notifications.settle();
    this.releaseRequests();
  };

  /** True while answers wait beyond the bound: requests read now wait too. */
  private holdingRequests(): boolean {
    return this.waitingLines.length > 0 || this.answersOverBound();
  }

  /** True while more answer bytes wait for stdout than `maxQueuedBytes`. */
  private answersOverBound(): boolean {
    return (this.writer?.queuedBytes ?? 0) > this.maxQueuedBytes;
  }

  private holdLine(line: string): void {
    this.waitingLines.push(line);
    this.waitingLineBytes += line.length;
    if (this.waitingLineBytes > MAX_WAITING_REQUEST_BYTES && !this.inputPaused) {
      // Past this the client's requests stay in the pipe: stdin is read again once answers go out.
      this.inputPaused = true;
      this.stdin.pause();
    }
  }

  /** Handles requests held back, while the answers' queue stays under its bound. */
  private releaseRequests(): void {
    let index = 0;
    while (index < this.waitingLines.length && !this.closed && !this.answersOverBound()) {
      const line = this.waitingLines[index]!;
      index += 1;
      this.waitingLineBytes -= line.length;
      this.onLine(line);
    }
    if (index > 0) this.waitingLines = this.waitingLines.slice(index);
    if (this.inputPaused && this.waitingLineBytes <= MAX_WAITING_REQUEST_BYTES / 2 && !this.closed) {
      this.inputPaused = false;
      this.stdin.resume();
    }
  }

  private onLine(line: string): void {
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      this.answerUnreadable(RpcCode.ParseError, `Parse error: ${error.message}`, error);
      return;
    }
    if (this.intercept?.(value)) return;
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      this.answerUnreadable(RpcCode.InvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message", parsed.error);
      return;
    }
    this.onmessage?.(parsed.data);
  }

  private tooLarge(line: DroppedLine): void {
    const limit = this.reader.maxLineBytes;
    this.answerUnreadable(
      RpcCode.InvalidRequest,
      `Invalid Request: request too large (${line.bytes} bytes; the limit is ${limit})`,
      new Error(`request line of ${line.bytes} bytes dropped: over the ${limit}-byte limit`),
    );
  }

  private answerUnreadable(code: number, message: string, cause: Error): void {
    this.send({ jsonrpc: "2.0", id: null, error: { code, message } } as unknown as JSONRPCMessage).catch((err: unknown) =>
      this.onerror?.(new Error(`error answer not delivered: ${String(err)}`, { cause: err })),
    );
    this.onerror?.(cause);
  }
}
