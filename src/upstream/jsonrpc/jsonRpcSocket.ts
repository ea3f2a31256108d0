import { connect, type Socket } from "node:net";
import type { BackendAddress } from "../../config/backendAddress.js";
import type { Logger } from "../../log/logger.js";
import { RateLimitedLog } from "../../log/rateLimitedLog.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { isObject } from "../../model/json.js";
import { BoundedLineReader } from "../../util/boundedLineReader.js";
import type { DroppedLine } from "../../util/boundedLineReader.js";
import { responseIdOfDroppedLine } from "../process/childStdioTransport.js";

/**
 * Longest line a JSON-RPC backend may send by default (16 MiB, newline excluded), as for requests
 * to `serve` over stdio and lines of the daemon's protocol. A line is held whole until its
 * newline, so this is what one connection may make abridge hold; a line that goes past it ends
 * the connection (see {@link JsonRpcSocket}).
 */
export const DEFAULT_JSONRPC_MAX_LINE_BYTES = 16 * 1024 * 1024;

/** A JSON-RPC 2.0 error object as the backend sent it. */
export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** What a request came back with: the backend's result, or its error object. */
export type RpcOutcome = { ok: true; result: unknown } | { ok: false; error: RpcErrorObject };

/** Options of {@link JsonRpcSocket.open}. */
export interface JsonRpcSocketOptions {
  address: BackendAddress;
  /** How the address is shown in messages (`unix:/run/x.sock`). */
  label: string;
  /** Largest line accepted from the backend; one that goes past it ends the connection. */
  maxLineBytes: number;
  /** Bound of the connect. */
  timeoutMs: number;
  logger: Logger;
  signal?: AbortSignal;
}

interface Pending {
  method: string;
  resolve: (outcome: RpcOutcome) => void;
  reject: (err: AbridgeError) => void;
}

/**
 * One connection to a JSON-RPC 2.0 backend speaking newline-delimited JSON: requests are written
 * as one line each and may be pipelined (many in flight at once); answers are matched to requests
 * by id, in whatever order they come. A line that is not a JSON-RPC answer is skipped and counted,
 * never fatal; an answer with an unknown id (a call abandoned meanwhile) is ignored. A line that
 * goes past `maxLineBytes` ends the connection as soon as it does, without waiting for a newline
 * that may never come (a backend streaming bytes without one would otherwise be read forever):
 * the request it answers, when its id can be read from the line's start, fails with
 * `UPSTREAM_ERROR` naming the limit; the others on the connection fail as for any closed
 * connection. When the socket closes, every request still waiting fails with
 * `UPSTREAM_UNAVAILABLE` (retryable): nothing waits forever on a connection that is gone.
 */
export class JsonRpcSocket {
  private readonly pending = new Map<number, Pending>();
  private readonly reader: BoundedLineReader;
  private readonly garbageLog: RateLimitedLog;
  private nextId = 0;
  private isClosed = false;
  private lastError: string | undefined;
  private readonly closeListeners: (() => void)[] = [];
  /** Lines that were not a JSON-RPC answer (stats, tests). */
  garbageLines = 0;

  private constructor(
    private readonly socket: Socket,
    private readonly options: JsonRpcSocketOptions,
  ) {
    this.reader = new BoundedLineReader(options.maxLineBytes);
    this.garbageLog = new RateLimitedLog(options.logger, "backend sent a line that is not a JSON-RPC answer; skipped");
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", (err) => {
      this.lastError = err.message;
    });
    socket.once("close", () => this.onClose());
  }

  /**
   * Connects within `timeoutMs`.
   *
   * @throws AbridgeError UPSTREAM_UNAVAILABLE (retryable) naming the address and the reason, or CANCELLED.
   */
  static open(options: JsonRpcSocketOptions): Promise<JsonRpcSocket> {
    return new Promise<JsonRpcSocket>((resolve, reject) => {
      if (options.signal?.aborted) {
        reject(new AbridgeError(ErrorCode.CANCELLED, `connecting to ${options.label} was cancelled`, { cause: options.signal.reason }));
        return;
      }
      const { address } = options;
      const socket = address.kind === "unix" ? connect({ path: address.path }) : connect({ host: address.host, port: address.port });
      const finish = (err: AbridgeError | undefined): void => {
        clearTimeout(timer);
        socket.off("error", onError);
        socket.off("connect", onConnect);
        options.signal?.removeEventListener("abort", onAbort);
        if (err === undefined) {
          resolve(new JsonRpcSocket(socket, options));
          return;
        }
        socket.destroy();
        reject(err);
      };
      const onError = (err: NodeJS.ErrnoException): void =>
        finish(
          new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `cannot connect to ${options.label}: ${err.code ?? err.message}`, { cause: err, retryable: true }),
        );
      const onConnect = (): void => finish(undefined);
      const onAbort = (): void =>
        finish(new AbridgeError(ErrorCode.CANCELLED, `connecting to ${options.label} was cancelled`, { cause: options.signal?.reason }));
      const timer = setTimeout(
        () =>
          finish(
            new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `cannot connect to ${options.label}: no connection within ${options.timeoutMs} ms`, {
              retryable: true,
            }),
          ),
        options.timeoutMs,
      );
      timer.unref();
      socket.once("error", onError);
      socket.once("connect", onConnect);
      options.signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Requests written and not yet answered. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** True once the socket has closed (or {@link close} was called). */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Runs `listener` once when the socket closes. */
  onClosed(listener: () => void): void {
    if (this.isClosed) listener();
    else this.closeListeners.push(listener);
  }

  /**
   * Sends `method` with `params` and resolves with the backend's result or error object. `signal`
   * aborting drops the request: it rejects with the signal's reason (an {@link AbridgeError}
   * when the caller made one) and an answer that comes later is ignored.
   */
  request(method: string, params: unknown, signal?: AbortSignal): Promise<RpcOutcome> {
    if (this.isClosed) {
      return Promise.reject(new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `the connection to ${this.options.label} is closed`, { retryable: true }));
    }
    const id = ++this.nextId;
    return new Promise<RpcOutcome>((resolve, reject) => {
      const onAbort = (): void => {
        this.pending.delete(id);
        const reason: unknown = signal?.reason;
        reject(reason instanceof AbridgeError ? reason : new AbridgeError(ErrorCode.CANCELLED, `${method} was cancelled`, { cause: reason }));
      };
      if (signal?.aborted) {
        onAbort();
        return;
      }
      const settle =
        <T>(fn: (value: T) => void) =>
        (value: T): void => {
          signal?.removeEventListener("abort", onAbort);
          fn(value);
        };
      this.pending.set(id, { method, resolve: settle(resolve), reject: settle(reject) });
      signal?.addEventListener("abort", onAbort, { once: true });
      this.socket.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  }

  /** Closes the socket; requests still waiting fail with `UPSTREAM_UNAVAILABLE`. Idempotent. */
  close(): void {
    this.socket.destroy();
    this.onClose();
  }

  private onData(chunk: Buffer): void {
    if (this.isClosed) return;
    for (const event of this.reader.push(chunk)) {
      if ("dropped" in event) {
        this.onOverLimit(event.dropped);
        return;
      }
      this.onLine(event.line);
    }
    if (this.reader.overflowing) this.onOverLimit({ bytes: this.reader.droppedBytes, head: this.reader.droppedHead, tail: "" });
  }

  private onLine(line: string): void {
    if (line.trim() === "") return;
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      this.garbage(line, "not JSON");
      return;
    }
    if (!isObject(message)) {
      this.garbage(line, "not an object");
      return;
    }
    const id = message.id;
    const pending = typeof id === "number" ? this.pending.get(id) : undefined;
    if (pending === undefined) {
      // Neither an answer we wait for nor garbage: the answer to a call given up (timed out,
      // cancelled), a notification, or the backend's complaint about a request it could not read.
      if (id === null && isObject(message.error)) {
        this.options.logger.warn("backend answered a request it could not read", { error: String(message.error.message) });
      } else if (id !== undefined) {
        this.options.logger.debug("answer to no waiting request ignored", { id: String(id) });
      }
      return;
    }
    this.pending.delete(id as number);
    if (Object.hasOwn(message, "error")) {
      const error = message.error;
      if (isObject(error) && Number.isInteger(error.code) && typeof error.message === "string") {
        pending.resolve({
          ok: false,
          error: { code: error.code as number, message: error.message, ...(Object.hasOwn(error, "data") ? { data: error.data } : {}) },
        });
      } else {
        pending.reject(
          new AbridgeError(
            ErrorCode.UPSTREAM_ERROR,
            `${pending.method}: the backend sent a malformed error object (expected {code: integer, message: string})`,
          ),
        );
      }
      return;
    }
    if (Object.hasOwn(message, "result")) {
      pending.resolve({ ok: true, result: message.result });
      return;
    }
    pending.reject(new AbridgeError(ErrorCode.UPSTREAM_ERROR, `${pending.method}: the backend's answer has neither result nor error`));
  }

  private garbage(line: string, why: string): void {
    this.garbageLines += 1;
    this.garbageLog.warn({ why, line: line.length > 200 ? `${line.slice(0, 200)}...` : line, count: this.garbageLines });
  }

  /**
   * A line went past the bound: the connection ends now, not at a newline that may never come.
   * The request it answers (when its id can be read from the line's start) fails with the limit;
   * the rest fail as on any closed connection, saying why it closed.
   */
  private onOverLimit(line: DroppedLine): void {
    const limit = this.reader.maxLineBytes;
    const id = responseIdOfDroppedLine(line);
    const pending = typeof id === "number" ? this.pending.get(id) : undefined;
    this.options.logger.warn("backend sent a line over the limit; connection closed", {
      bytes: line.bytes,
      limit,
      ...(pending ? { method: pending.method } : {}),
    });
    if (pending === undefined) this.garbageLines += 1;
    else {
      this.pending.delete(id as number);
      pending.reject(
        new AbridgeError(
          ErrorCode.UPSTREAM_ERROR,
          `${pending.method}: the answer went over the ${limit}-byte limit of a line (${line.bytes} bytes read); dropped, and the connection to ${this.options.label} closed`,
        ),
      );
    }
    this.lastError = `the backend sent a line over the ${limit}-byte limit`;
    this.close();
  }

  private onClose(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.reader.clear();
    const why = this.lastError !== undefined ? ` (${this.lastError})` : "";
    for (const [id, pending] of this.pending) {
      this.pending.delete(id);
      pending.reject(
        new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `the connection to ${this.options.label} closed during ${pending.method}${why}`, { retryable: true }),
      );
    }
    for (const listener of this.closeListeners.splice(0)) listener();
  }
}
