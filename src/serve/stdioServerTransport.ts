import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode as RpcCode, JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { BoundedLineReader, type DroppedLine } from "../util/boundedLineReader.js";

/** Default bound of one request line (16 MiB, like the HTTP front end's body limit). */
export const DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024;

/** Options of a {@link StdioServerTransport}. */
export interface StdioServerTransportOptions {
  /** Largest request line accepted, newline excluded (default 16 MiB). */
  maxLineBytes?: number;
}

/**
 * The server side of MCP over stdio, in place of the SDK's `StdioServerTransport`, which closes
 * itself when a line exceeds its 10 MiB `ReadBuffer` (so one huge request ended `abridge serve`)
 * and reports unreadable lines only to `onerror` (so the client waits forever for an answer).
 * Here every line is answered: a line over `maxLineBytes` is discarded as it streams in (never
 * held whole) and answered -32600 "request too large"; a line that is not JSON -32700; JSON that
 * is not a JSON-RPC message -32600. Those answers carry `id: null`, as JSON-RPC requires when the
 * id could not be read, and serving goes on. The failures still reach `onerror`, for the log.
 */
export class StdioServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly reader: BoundedLineReader;
  private started = false;
  private closed = false;

  constructor(
    private readonly stdin: Readable,
    private readonly stdout: Writable,
    options: StdioServerTransportOptions = {},
  ) {
    this.reader = new BoundedLineReader(options.maxLineBytes ?? DEFAULT_MAX_REQUEST_BYTES);
  }

  // Arrow functions: the same function objects are removed again in close().
  private readonly onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    for (const event of this.reader.push(bytes)) {
      if (this.closed) return;
      if ("dropped" in event) this.tooLarge(event.dropped);
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
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.closed || !this.stdout.writable) {
        reject(new Error("Not connected"));
        return;
      }
      if (this.stdout.write(`${JSON.stringify(message)}\n`)) {
        resolve();
        return;
      }
      // Wait for the pipe to drain, unless it goes away first.
      const settle = (err?: Error): void => {
        this.stdout.off("drain", onDrain);
        this.stdout.off("close", onGone);
        this.stdout.off("error", onGone);
        if (err) reject(err);
        else resolve();
      };
      const onDrain = (): void => settle();
      const onGone = (err?: Error): void => settle(err ?? new Error("stdout closed"));
      this.stdout.once("drain", onDrain);
      this.stdout.once("close", onGone);
      this.stdout.once("error", onGone);
    });
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
