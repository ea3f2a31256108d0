import type { BackendAddress } from "../../config/backendAddress.js";
import type { Logger } from "../../log/logger.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { backoffDelayMs } from "../backoff.js";
import type { BackoffOptions } from "../backoff.js";
import { JsonRpcSocket } from "./jsonRpcSocket.js";
import type { RpcOutcome } from "./jsonRpcSocket.js";

/** Connections a backend gets at most: enough to spread a burst, few enough for a local service. */
export const DEFAULT_MAX_CONNECTIONS = 4;

/** Whether the backend can be reached, as the last connect attempt found. */
export type BackendHealth = { up: true } | { up: false; error: AbridgeError };

/** Options of a {@link JsonRpcClient}. */
export interface JsonRpcClientOptions {
  address: BackendAddress;
  label: string;
  logger: Logger;
  backoff: BackoffOptions;
  random: () => number;
  maxLineBytes: number;
  maxConnections?: number;
  /** Bound of one connect (the server's `connect_timeout_ms`, read at each attempt). */
  connectTimeoutMs: () => number;
  /** Told when the backend goes down or comes back. */
  onHealth: (health: BackendHealth) => void;
}

/** Options of one {@link JsonRpcClient.call}. */
export interface RpcCallOptions {
  signal?: AbortSignal;
  timeoutMs: number;
}

/**
 * The connections to one JSON-RPC backend. A call goes over the open connection with the fewest
 * requests in flight (pipelined: many calls share a connection); when every one is busy and
 * fewer than `maxConnections` are open, one more is opened beside it. A connection that closes
 * fails only its own calls. When none is open and a connect fails, the backend is down: calls
 * fail at once with `UPSTREAM_UNAVAILABLE` (retryable) while reconnect attempts follow the
 * restart backoff, so a dead socket is neither hammered nor waited on.
 */
export class JsonRpcClient {
  private readonly sockets = new Set<JsonRpcSocket>();
  private opening: Promise<JsonRpcSocket> | undefined;
  private health: BackendHealth | undefined;
  private attempt = 0;
  private retryAtMs = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly lifetime = new AbortController();
  private readonly maxConnections: number;
  /** Garbage lines of connections already closed. */
  private garbage = 0;

  constructor(private readonly options: JsonRpcClientOptions) {
    this.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  }

  /** Open connections (stats, tests). */
  get connections(): number {
    return this.sockets.size;
  }

  /** Lines the backend sent that were not JSON-RPC answers, over every connection so far. */
  get garbageLines(): number {
    return this.garbage + [...this.sockets].reduce((sum, s) => sum + s.garbageLines, 0);
  }

  /** Opens the first connection; resolves whether or not it worked (the health says which). */
  async start(): Promise<void> {
    await this.openSocket().catch(() => undefined);
  }

  /**
   * Calls `method` with `params`. Resolves with the backend's result or error object; rejects
   * with `UPSTREAM_UNAVAILABLE` (retryable: down, or the connection closed during the call),
   * `UPSTREAM_TIMEOUT` (retryable: no answer within `timeoutMs`; the request is dropped, a late
   * answer ignored), `CANCELLED` (the caller's signal), `UPSTREAM_ERROR` (a malformed answer).
   */
  async call(method: string, params: unknown, options: RpcCallOptions): Promise<RpcOutcome> {
    const { signal, timeoutMs } = options;
    if (signal?.aborted) throw new AbridgeError(ErrorCode.CANCELLED, `${method} was cancelled before it was sent`, { cause: signal.reason });
    // The timer's reason is the error a timed-out call fails with. Joined with AbortSignal.any
    // rather than a listener on the caller's signal: one front-end signal may carry hundreds of
    // pipelined calls, and a listener each would pile up on it.
    const clock = new AbortController();
    const timer = setTimeout(
      () =>
        clock.abort(
          new AbridgeError(ErrorCode.UPSTREAM_TIMEOUT, `${method}: no answer from ${this.options.label} within ${timeoutMs} ms`, { retryable: true }),
        ),
      timeoutMs,
    );
    timer.unref();
    const callSignal = signal === undefined ? clock.signal : AbortSignal.any([signal, clock.signal]);
    try {
      const socket = await this.socketFor(callSignal);
      const outcome = await socket.request(method, params, callSignal);
      // An answer, not just an accepted connect, proves the backend works: only now does the
      // backoff start over (a backend that accepts and at once hangs up must not be reconnected
      // to in a tight loop).
      this.attempt = 0;
      return outcome;
    } catch (err) {
      // The caller gave up (whatever reason its signal carries): CANCELLED, unless our clock was first.
      if (signal?.aborted && !(clock.signal.aborted && err === clock.signal.reason)) {
        throw new AbridgeError(ErrorCode.CANCELLED, `${method} was cancelled`, { cause: signal.reason });
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The connection for the next call (see the class). */
  private async socketFor(signal: AbortSignal): Promise<JsonRpcSocket> {
    let best: JsonRpcSocket | undefined;
    for (const socket of this.sockets) if (best === undefined || socket.inFlight < best.inFlight) best = socket;
    if (best !== undefined) {
      // All busy: open one more for the calls to come, but do not wait for it.
      if (best.inFlight > 0 && this.sockets.size < this.maxConnections && this.opening === undefined) void this.openSocket().catch(() => undefined);
      return best;
    }
    if (this.health?.up === false && Date.now() < this.retryAtMs) throw this.downError();
    return abortable(this.opening ?? this.openSocket(), signal);
  }

  private downError(): AbridgeError {
    const cause = this.health?.up === false ? this.health.error : undefined;
    const waitMs = Math.max(0, this.retryAtMs - Date.now());
    return new AbridgeError(
      ErrorCode.UPSTREAM_UNAVAILABLE,
      `${this.options.label} is down${cause ? `: ${cause.message}` : ""}; next connect attempt in ${waitMs} ms`,
      { cause, retryable: true },
    );
  }

  /** One connect attempt, shared by every caller while it runs; success or failure sets the health. */
  private openSocket(): Promise<JsonRpcSocket> {
    if (this.opening) return this.opening;
    const attempt = JsonRpcSocket.open({
      address: this.options.address,
      label: this.options.label,
      maxLineBytes: this.options.maxLineBytes,
      timeoutMs: this.options.connectTimeoutMs(),
      logger: this.options.logger,
      signal: this.lifetime.signal,
    }).then(
      (socket) => {
        this.opening = undefined;
        if (this.lifetime.signal.aborted) {
          socket.close();
          throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${this.options.label}: closed`);
        }
        this.sockets.add(socket);
        socket.onClosed(() => this.onSocketClosed(socket));
        this.setHealth({ up: true });
        return socket;
      },
      (err: unknown) => {
        this.opening = undefined;
        const error = err instanceof AbridgeError ? err : new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, String(err), { cause: err, retryable: true });
        if (!this.lifetime.signal.aborted && this.sockets.size === 0) this.markDown(error);
        throw error;
      },
    );
    this.opening = attempt;
    return attempt;
  }

  /** No connection and the last attempt failed: calls fail fast until the next attempt, which the backoff times. */
  private markDown(error: AbridgeError): void {
    const waitMs = backoffDelayMs(this.attempt, this.options.backoff, this.options.random);
    this.attempt += 1;
    this.retryAtMs = Date.now() + waitMs;
    this.setHealth({ up: false, error });
    this.scheduleRetry(waitMs);
  }

  /** A connect attempt in `waitMs`, unless a connection is open by then. */
  private scheduleRetry(waitMs: number): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.sockets.size === 0 && !this.lifetime.signal.aborted) void this.openSocket().catch(() => undefined);
    }, waitMs);
    this.retryTimer.unref();
  }

  private onSocketClosed(socket: JsonRpcSocket): void {
    this.garbage += socket.garbageLines;
    this.sockets.delete(socket);
    if (this.lifetime.signal.aborted || this.sockets.size > 0) return;
    // The last connection went: find out soon whether the backend is still there, so the status
    // says so without waiting for a call. Through the backoff, so a backend that hangs up on
    // every connection is not reconnected to in a tight loop; a call meanwhile connects itself.
    const waitMs = backoffDelayMs(this.attempt, this.options.backoff, this.options.random);
    this.attempt += 1;
    this.options.logger.debug("the last connection to the backend closed; reconnecting", { delayMs: waitMs });
    this.scheduleRetry(waitMs);
  }

  private setHealth(health: BackendHealth): void {
    const was = this.health;
    this.health = health;
    if (was?.up !== health.up || (!health.up && was?.up === false && was.error.message !== health.error.message)) this.options.onHealth(health);
  }

  /** Closes every connection; calls still waiting fail with `UPSTREAM_UNAVAILABLE`. Idempotent. */
  close(): void {
    this.lifetime.abort();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    for (const socket of this.sockets) socket.close();
    this.sockets.clear();
  }
}

/** `promise`, or the signal's reason as soon as it aborts (the promise itself goes on). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
