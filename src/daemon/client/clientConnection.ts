import type { Socket } from "node:net";
import { openProvenSocket, type DaemonIdentity } from "../wire/daemonProof.js";
import {
  errorAnswerSchema,
  MAX_LINE_BYTES,
  parseAnswer,
  readAnswerEnvelope,
  type ClientRequest,
  type DaemonOp,
  type DaemonResponse,
} from "../wire/protocol.js";
import { LineSplitter } from "../../util/lineSplitter.js";
import { LineWriter } from "../../util/lineWriter.js";
import { AbridgeError, ErrorCode, messageOf, toAbridgeError } from "../../model/errors.js";

/** Responses may be larger than requests (a big tool list); still bounded. */
const MAX_RESPONSE_BYTES = 4 * MAX_LINE_BYTES;

/** Options of one request. */
export interface RequestOptions {
  signal?: AbortSignal;
  /** Client-side bound on the wait for the answer. */
  timeoutMs: number;
  /**
   * On an unordered connection: the token to send a `cancel` for this request with when the
   * caller gives up (signal, timeout), so the daemon aborts it while the connection carries on.
   */
  cancelWithToken?: string;
}

/** Thrown when the connection ended with requests unanswered: whether they ran is unknown. */
export class ConnectionLostError extends AbridgeError {
  constructor(message: string, cause?: unknown) {
    super(ErrorCode.DAEMON_UNAVAILABLE, message, { retryable: true, ...(cause !== undefined ? { cause } : {}) });
    this.name = "ConnectionLostError";
  }
}

interface Pending {
  /** Takes the parsed line; checks it against the answer schema of the request's op. */
  resolve: (response: unknown) => void;
  reject: (err: Error) => void;
}

/**
 * One socket to the daemon. Requests are pipelined; each gets a numeric id, so an answer that
 * arrives after its caller gave up (timeout, abort) is recognised and dropped.
 */
export class ClientConnection {
  private readonly pending = new Map<number, Pending>();
  private readonly splitter = new LineSplitter(MAX_RESPONSE_BYTES);
  private nextId = 1;
  private ended: Error | undefined;
  /**
   * Writes requests: those made in one tick leave in one `writev` (callers that pipeline on one
   * connection, a burst of reads or a host firing calls together, cost one system call, not one
   * each; a lone request waits for nothing), and while the daemon does not read they wait behind
   * one `drain` listener. Unbounded in bytes, as the socket's own buffer was: each request is
   * bounded in time by its timeout instead.
   */
  private readonly writer: LineWriter;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    this.writer = new LineWriter(socket, { maxQueuedBytes: Number.POSITIVE_INFINITY });
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", (err) => this.finish(new ConnectionLostError(`connection to the daemon failed: ${err.message}`, err)));
    socket.on("close", () => this.finish(new ConnectionLostError("the daemon closed the connection")));
    // Paused while the proof was checked (see openProvenSocket).
    socket.resume();
  }

  /**
   * Connects to the daemon at `daemon.address` and has it prove that it holds `daemon.token`
   * (see daemonProof.ts) before anything carrying the token can be sent on the connection.
   *
   * @throws AbridgeError DAEMON_UNAVAILABLE (retryable) when nothing accepts the connection or the
   *   peer closes it before its proof (`details.phase` "connect") or gives none in time;
   *   DAEMON_UNTRUSTED when the peer's answer is not the proof (the connection is closed);
   *   CANCELLED when `signal` aborts.
   */
  static async connect(daemon: DaemonIdentity, options: { signal?: AbortSignal; timeoutMs: number; proofTimeoutMs?: number }): Promise<ClientConnection> {
    const socket = await openProvenSocket(daemon, {
      connectTimeoutMs: options.timeoutMs,
      proofTimeoutMs: options.proofTimeoutMs ?? options.timeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return new ClientConnection(socket);
  }

  /** True once the socket is gone; a new request needs a new connection. */
  get closed(): boolean {
    return this.ended !== undefined;
  }

  /** Requests sent and not answered yet. */
  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * Sends `body` (with a fresh `id`) and resolves with the daemon's answer, `ok: false` included,
   * checked against the protocol's answer schema for `body.op`.
   *
   * @throws ConnectionLostError when the connection ends first; AbridgeError DAEMON_UNAVAILABLE
   * on `timeoutMs`; CANCELLED when `signal` aborts; DAEMON_BAD_RESPONSE when the answer is not
   * what the protocol says (the connection is closed: what else it carries cannot be trusted).
   */
  request<Op extends DaemonOp>(body: ClientRequest & { op: Op }, options: RequestOptions): Promise<DaemonResponse<Op>> {
    if (this.ended) return Promise.reject(this.ended);
    const id = this.nextId++;
    const op: Op = body.op;
    return new Promise<DaemonResponse<Op>>((resolve, reject) => {
      const settle = (): void => {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        this.pending.delete(id);
      };
      const onAbort = (): void => {
        settle();
        this.cancel(id, options.cancelWithToken);
        reject(new AbridgeError(ErrorCode.CANCELLED, "request cancelled", { cause: options.signal?.reason }));
      };
      const timer = setTimeout(() => {
        settle();
        this.cancel(id, options.cancelWithToken);
        reject(new AbridgeError(ErrorCode.DAEMON_UNAVAILABLE, `no answer from the daemon within ${options.timeoutMs} ms`, { retryable: true }));
      }, options.timeoutMs);
      if (options.signal?.aborted) {
        // Nothing was sent: nothing to cancel at the daemon.
        settle();
        reject(new AbridgeError(ErrorCode.CANCELLED, "request cancelled", { cause: options.signal.reason }));
        return;
      }
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, {
        resolve: (value) => {
          settle();
          let response: DaemonResponse<Op>;
          try {
            response = parseAnswer(op, value);
          } catch (err) {
            const error = toAbridgeError(err, ErrorCode.DAEMON_BAD_RESPONSE);
            reject(error);
            this.fail(error);
            return;
          }
          resolve(response);
        },
        reject: (err) => {
          settle();
          reject(err);
        },
      });
      this.writer.write(`${JSON.stringify({ ...body, id })}\n`);
    });
  }

  /** Asks the daemon to abort request `id` (sent on an unordered connection); its answers, the cancel's too, are dropped. */
  private cancel(id: number, token: string | undefined): void {
    if (token === undefined || this.ended) return;
    this.writer.write(`${JSON.stringify({ token, op: "cancel", target: id })}\n`);
  }

  /**
   * Marks the connection idle (kept for reuse) or busy. An idle socket does not keep the host's
   * process alive: a script that finished its calls and forgot `close()` still exits.
   */
  setIdle(idle: boolean): void {
    if (idle) this.socket.unref();
    else this.socket.ref();
  }

  /** Ends the connection; the daemon aborts whatever this connection still has running. */
  close(): void {
    this.finish(new ConnectionLostError("connection closed by the client"));
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    const { lines, error } = this.splitter.push(chunk);
    for (const line of lines) {
      if (line.trim() === "") continue;
      let value: unknown;
      let envelope;
      try {
        value = JSON.parse(line);
        envelope = readAnswerEnvelope(value);
      } catch (err) {
        this.fail(new AbridgeError(ErrorCode.DAEMON_BAD_RESPONSE, `unreadable answer from the daemon: ${messageOf(err)}`, { cause: err }));
        return;
      }
      const id = envelope.id;
      const waiting = typeof id === "number" ? this.pending.get(id) : undefined;
      if (waiting) {
        waiting.resolve(value);
        if (this.ended) return;
      } else if (id === null && !envelope.ok) {
        // The daemon gave up on the whole connection (a line it could not frame).
        const failure = errorAnswerSchema.safeParse(value);
        this.fail(
          failure.success
            ? new AbridgeError(ErrorCode.DAEMON_BAD_REQUEST, failure.data.error.message)
            : new AbridgeError(ErrorCode.DAEMON_BAD_RESPONSE, `malformed error answer from the daemon: ${failure.error.message}`, { cause: failure.error }),
        );
        return;
      }
      // Any other id belongs to a request whose caller gave up: dropped.
    }
    if (error) this.fail(error);
  }

  private fail(err: Error): void {
    this.finish(err);
    this.socket.destroy();
  }

  private finish(err: Error): void {
    if (!this.ended) this.ended = err;
    for (const waiting of [...this.pending.values()]) waiting.reject(err);
    this.pending.clear();
  }
}
