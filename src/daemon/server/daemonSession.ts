import { timingSafeEqual } from "node:crypto";
import type { Socket } from "node:net";
import { AbridgeError, ErrorCode, messageOf, toAbridgeError } from "../../model/errors.js";
import type { Logger } from "../../log/logger.js";
import { daemonProof, newNonce } from "../wire/daemonProof.js";
import { LineSplitter } from "../../util/lineSplitter.js";
import { LineWriter } from "../../util/lineWriter.js";
import {
  answerLine,
  describeIssues,
  helloRequestSchema,
  parseRequest,
  requestIdOf,
  type BridgeRequest,
  type DaemonAnswerBody,
  type DaemonResponse,
  type HelloAnswer,
  type RequestId,
} from "../wire/protocol.js";
import { isObject } from "../../model/json.js";

/** Pipelined requests one connection may have open before the daemon stops reading from it. */
const MAX_PIPELINED = 64;
/**
 * Answer bytes one connection may have waiting in its socket buffer before the daemon stops
 * reading its requests. A client that sends and never reads would otherwise make the daemon hold
 * every answer in memory: `socket.write` queues without limit.
 */
export const MAX_BUFFERED_ANSWER_BYTES = 1024 * 1024;
/** How long a connection whose token was refused stays before it is destroyed (its answer is flushed first). */
const REFUSED_LINGER_MS = 1_000;
/**
 * Bytes a connection may send before it has shown the token (64 KiB). A peer without the token
 * could otherwise make the daemon hold a 16 MiB line per connection: 100 of them sending 15 MiB
 * with no newline took the daemon from 145 MB to 1.6 GB. The token is looked for in these bytes
 * (the client sends it as the first member of its first request), so a large first request from
 * the token holder still goes through.
 */
export const PRE_AUTH_BYTES = 64 * 1024;
/** How long a connection may stay without showing the token before it is closed. */
export const PRE_AUTH_DEADLINE_MS = 10_000;
/** `"token":"..."` members in the first bytes of a connection (any depth; each is checked). */
const TOKEN_MEMBER = /"token"\s*:\s*"((?:[^"\\]|\\.){0,1000})"/g;
/** Longest text {@link TOKEN_MEMBER} can match (whitespace around the colon aside, kept short by real clients). */
const TOKEN_MEMBER_MAX_CHARS = 2_100;

/** What a handled request produced: the body of an `ok` answer (one of the protocol's), and work to do once it is sent. */
export interface HandlerResult {
  body: DaemonAnswerBody;
  afterWrite?: () => void;
}

/** What a session needs from its daemon. */
export interface SessionHost {
  readonly token: string;
  /**
   * The daemon's address as its lockfile names it, bound into the proof a `hello` is answered
   * with (see daemonProof.ts). Without it the proof names no address, which no client accepts.
   */
  readonly address?: string;
  readonly maxLineBytes: number;
  readonly logger: Logger;
  /** Runs a validated, authenticated request; throws for an error answer. */
  execute(request: BridgeRequest, signal: AbortSignal): Promise<HandlerResult>;
  /** A request started / ended (the idle timer counts these). */
  begin(): void;
  end(): void;
  /** Counters for `stats`. */
  count(event: "request" | "refused" | "badRequest"): void;
  /**
   * Logs a refused token. The daemon rate-limits these across connections; without it each
   * refusal is logged at warn on the session's logger.
   */
  logRefusal?(fields: Record<string, unknown>): void;
  /** How long a connection may stay without showing the token (default {@link PRE_AUTH_DEADLINE_MS}). */
  readonly preAuthDeadlineMs?: number | undefined;
  /** Whether one more connection may join those that showed the token (a cap); default yes. */
  admitAuthenticated?(): boolean;
}

/** An answer's line: `id` first, then `ok`, then the body, the order the protocol has always written. */
function replyLine(id: RequestId | undefined, answer: DaemonResponse): string {
  return answerLine(id !== undefined ? { id, ...answer } : answer);
}

/** The error answer of a failed request. */
function failureLine(id: RequestId | undefined, err: unknown): string {
  return replyLine(id, { ok: false, error: toAbridgeError(err).toJSON() });
}

function tokenMatches(given: unknown, expected: Buffer): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given, "utf8");
  // Constant-time compare: a timing side channel would leak the token a byte at a time.
  return a.length === expected.length && timingSafeEqual(a, expected);
}

/**
 * One client connection: frames lines, authenticates and validates each request, runs requests
 * concurrently but writes answers strictly in request order, and aborts its own calls when the
 * client goes away (a proxied call inherits its caller's lifetime; without that, a host that gave
 * up would keep the upstream busy). A bad request gets an error answer and the connection stays
 * usable; an unframeable stream (over-long line, invalid JSON) ends this connection only, and so
 * does a wrong or missing token (after its answer): a peer without the token has nothing more to
 * say, and must not be able to keep the daemon busy.
 *
 * Reading stops while {@link MAX_PIPELINED} requests are open or more than
 * {@link MAX_BUFFERED_ANSWER_BYTES} of answers wait (in the socket's buffer and the writer's
 * queue), and resumes on `drain`, so a client that writes and never reads costs bounded memory.
 */
export class DaemonSession {
  private readonly splitter: LineSplitter;
  private readonly controller = new AbortController();
  private tail: Promise<void> = Promise.resolve();
  private open = 0;
  private broken = false;
  private readPaused = false;
  /** Lines of the last chunk not yet handled because reading was paused in its middle. */
  private backlog: string[] = [];
  private peakBuffered = 0;
  /**
   * Writes answers: those ready in one turn of the event loop leave in one `writev`, and while the
   * client does not read they wait behind one `drain` listener. Unbounded in bytes: reading stops
   * instead (see {@link updateFlow}).
   */
  private readonly writer: LineWriter;
  /** The token as bytes, for the constant-time compare each request needs. */
  private readonly token: Buffer;
  /** Set by the `options` op: answers are written as they are ready, not in request order. */
  private unordered = false;
  /** Requests with an id sent while unordered and still running: what `cancel` aborts. */
  private readonly running = new Map<RequestId, AbortController>();
  private readonly logger: Logger;
  /** Set once the peer has shown the token; until then reading is bounded to {@link PRE_AUTH_BYTES}. */
  private authenticatedFlag = false;
  /** Lines handled so far: only the first may be a `hello`. */
  private linesSeen = 0;
  /**
   * The token string a request of this connection carried that matched, compared with later
   * requests' as a plain string: the constant-time check (which makes a buffer per request) is
   * for a peer that has not shown it holds the token; this one has.
   */
  private acceptedToken: string | undefined;
  /** The connection's first bytes (up to {@link PRE_AUTH_BYTES}) while the token has not been seen. */
  private preAuthHead = "";
  private preAuthTimer: NodeJS.Timeout | undefined;
  /** Settles when the socket has closed. */
  readonly done: Promise<void>;

  constructor(
    private readonly socket: Socket,
    private readonly host: SessionHost,
    readonly id: number,
  ) {
    this.splitter = new LineSplitter(host.maxLineBytes);
    this.token = Buffer.from(host.token, "utf8");
    // A pipelining client's answers often complete together (one read from an upstream delivers
    // several): gathered over the whole turn, they cost one system call instead of one each, and
    // loopback TCP makes the writer pay for the reader's side too.
    this.writer = new LineWriter(socket, { maxQueuedBytes: Number.POSITIVE_INFINITY, batch: "turn" });
    // Closing the connection (or the daemon) aborts every request on it, each with its own signal.
    this.controller.signal.addEventListener("abort", () => {
      for (const running of this.running.values()) running.abort(this.controller.signal.reason);
    });
    this.logger = host.logger.child({ connection: id });
    this.done = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    // Answers leave when the writer's batch does, not when Nagle's algorithm lets them.
    if (typeof socket.setNoDelay === "function") socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", (err) => this.logger.debug("connection error", { error: err }));
    socket.once("close", () => {
      if (this.preAuthTimer) clearTimeout(this.preAuthTimer);
      this.controller.abort(new AbridgeError(ErrorCode.CANCELLED, "client disconnected"));
      this.logger.debug("connection closed");
    });
    // A connection that never shows the token (silent, or trickling bytes) holds a descriptor
    // and a slot: it gets this long.
    this.preAuthTimer = setTimeout(() => {
      if (!this.authenticatedFlag && !this.broken) this.refuse(undefined, undefined, "no token before the deadline");
    }, host.preAuthDeadlineMs ?? PRE_AUTH_DEADLINE_MS);
    this.preAuthTimer.unref();
  }

  /** True once the peer has shown the token. */
  get authenticated(): boolean {
    return this.authenticatedFlag;
  }

  /** Ends a connection that never showed the token at once, without an answer (to make room). */
  evict(): void {
    if (this.authenticatedFlag) return;
    this.broken = true;
    this.backlog = [];
    this.host.count("refused");
    this.socket.destroy();
  }

  /** Requests read but not yet answered. */
  get pending(): number {
    return this.open;
  }

  /** Answer bytes written but not yet taken by the client's side of the socket. */
  get bufferedBytes(): number {
    return this.socket.writableLength + this.writer.queuedBytes;
  }

  /** The most answer bytes this connection ever had waiting (for `stats`). */
  get peakBufferedBytes(): number {
    return this.peakBuffered;
  }

  /** True while the daemon is not reading this connection (backpressure). */
  get paused(): boolean {
    return this.readPaused;
  }

  /**
   * Ends the connection: calls still running are aborted (they answer CANCELLED), answers already
   * queued are written, then the socket is ended; it is destroyed if it does not close in
   * `flushMs`.
   */
  async close(flushMs = 1_000): Promise<void> {
    this.broken = true;
    this.controller.abort(new AbridgeError(ErrorCode.CANCELLED, "daemon shutting down", { retryable: true }));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.tail, new Promise<void>((resolve) => (timer = setTimeout(resolve, flushMs)))]);
    // After the answers still queued, if the client takes them before the socket is destroyed.
    this.writer.end();
    const destroy = setTimeout(() => this.socket.destroy(), flushMs);
    destroy.unref();
    await Promise.race([this.done, new Promise<void>((resolve) => setTimeout(resolve, flushMs).unref())]);
    if (timer) clearTimeout(timer);
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.broken) return;
    if (!this.authenticatedFlag && !this.preAuthorize(chunk)) return;
    const { lines, error } = this.splitter.push(chunk);
    this.backlog.push(...lines);
    this.drainBacklog();
    if (error && !this.broken) {
      // Lines before the over-long one are still answered (they may wait in the backlog).
      this.backlog = [];
      this.fail(error, null);
    }
  }

  /**
   * Looks for the token in the connection's first {@link PRE_AUTH_BYTES}. Returns false (and
   * refuses the connection) when they have passed without a newline or the token; true while the
   * first line may still turn out well (its token is then checked exactly, like every request's).
   */
  private preAuthorize(chunk: Buffer): boolean {
    const room = PRE_AUTH_BYTES - this.preAuthHead.length;
    const seen = chunk.subarray(0, Math.max(0, room)).toString("latin1");
    // Only the new bytes and a member's length before them are searched again: a peer trickling
    // a byte at a time must not make each byte cost a scan of everything before it.
    const from = Math.max(0, this.preAuthHead.length - TOKEN_MEMBER_MAX_CHARS);
    this.preAuthHead += seen;
    TOKEN_MEMBER.lastIndex = from;
    for (let match = TOKEN_MEMBER.exec(this.preAuthHead); match !== null; match = TOKEN_MEMBER.exec(this.preAuthHead)) {
      let given: unknown;
      try {
        given = JSON.parse(`"${match[1]}"`);
      } catch {
        continue;
      }
      if (tokenMatches(given, this.token)) return this.markAuthenticated();
    }
    // The first line is complete: its token is checked exactly when it is handled, right after.
    if (seen.includes("\n")) return true;
    if (chunk.length > room) {
      this.refuse(undefined, undefined, `no token in the first ${PRE_AUTH_BYTES} bytes`);
      return false;
    }
    return true;
  }

  /** Counts the connection among those that showed the token; false (and closed) when they are at their cap. */
  private markAuthenticated(): boolean {
    if (this.authenticatedFlag) return true;
    if (this.preAuthTimer) clearTimeout(this.preAuthTimer);
    this.preAuthTimer = undefined;
    this.preAuthHead = "";
    if (this.host.admitAuthenticated && !this.host.admitAuthenticated()) {
      this.broken = true;
      this.backlog = [];
      this.splitter.clear();
      this.socket.pause();
      const error = new AbridgeError(ErrorCode.DAEMON_UNAVAILABLE, "too many connections to the daemon; close some and retry", { retryable: true });
      this.logger.warn("connection refused: too many connections");
      if (!this.socket.destroyed && this.socket.writable) this.writer.end(answerLine({ ok: false, error: error.toJSON() }));
      setTimeout(() => this.socket.destroy(), REFUSED_LINGER_MS).unref();
      return false;
    }
    this.authenticatedFlag = true;
    return true;
  }

  /** Handles buffered lines until reading has to pause. */
  private drainBacklog(): void {
    while (this.backlog.length > 0 && !this.readPaused && !this.broken) {
      this.onLine(this.backlog.shift()!);
    }
  }

  /** Pauses or resumes reading by the open requests and the answer bytes waiting. */
  private updateFlow(): void {
    if (this.broken) return;
    const busy = this.open >= MAX_PIPELINED || this.bufferedBytes > MAX_BUFFERED_ANSWER_BYTES;
    if (busy && !this.readPaused) {
      this.readPaused = true;
      this.socket.pause();
    } else if (!busy && this.readPaused) {
      this.readPaused = false;
      this.socket.resume();
      this.drainBacklog();
    }
  }

  private onLine(line: string): void {
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      this.fail(new AbridgeError(ErrorCode.DAEMON_BAD_REQUEST, `invalid JSON: ${messageOf(err)}`, { cause: err }), null);
      return;
    }
    const id = requestIdOf(value);
    const record = isObject(value) ? (value as Record<string, unknown>) : undefined;
    const first = this.linesSeen === 0;
    this.linesSeen += 1;
    if (first && record?.op === "hello") {
      this.hello(record, id);
      return;
    }
    // Authenticate before anything else is looked at: an unauthenticated peer learns nothing,
    // not even whether its request was well-formed. Nor does it count as activity: a peer
    // without the token must not keep the daemon from going idle.
    if (!this.carriesToken(record?.token)) {
      this.refuse(record, id);
      return;
    }
    if (!this.markAuthenticated()) return;
    this.open += 1;
    this.updateFlow();
    this.host.begin();
    const answer = this.handle(value, id).finally(() => this.host.end());
    this.enqueue(answer);
  }

  private carriesToken(given: unknown): boolean {
    if (this.acceptedToken !== undefined && given === this.acceptedToken) return true;
    if (!tokenMatches(given, this.token)) return false;
    this.acceptedToken = given as string;
    return true;
  }

  /**
   * Answers a connection's first line `{"op":"hello","nonce":...}`, sent before any token: a fresh
   * nonce of the daemon's and the proof over both nonces and the daemon's address, which only the
   * token's holder can compute (see daemonProof.ts). The client checks it before its token leaves.
   * It neither authenticates the connection nor counts as activity: the token must still come in
   * the connection's first {@link PRE_AUTH_BYTES} and before the deadline, and a peer without it
   * gets one proof per connection and nothing else.
   */
  private hello(record: Record<string, unknown>, id: RequestId | undefined): void {
    const parsed = helloRequestSchema.safeParse(record);
    if (!parsed.success) {
      this.refuse(record, id, "malformed hello");
      return;
    }
    const nonce = newNonce();
    const proof = daemonProof(this.host.token, parsed.data.nonce, nonce, this.host.address ?? "");
    this.open += 1;
    this.updateFlow();
    const answer: HelloAnswer = { ...(id !== undefined ? { id } : {}), ok: true, nonce, proof };
    this.enqueue(Promise.resolve({ line: `${JSON.stringify(answer)}\n` }));
  }

  /** Answers a wrong or missing token after everything earlier, then ends the connection. */
  private refuse(record: Record<string, unknown> | undefined, id: RequestId | undefined, reason?: string): void {
    this.broken = true;
    if (this.preAuthTimer) clearTimeout(this.preAuthTimer);
    this.preAuthHead = "";
    this.splitter.clear();
    this.backlog = [];
    // Whatever else the peer sends is not read: it stays in the kernel's buffers until the close.
    this.socket.pause();
    this.host.count("refused");
    const fields = {
      op: typeof record?.op === "string" ? record.op.slice(0, 40) : undefined,
      peer: this.socket.remoteAddress ?? "local",
      ...(reason !== undefined ? { reason } : {}),
    };
    if (this.host.logRefusal) this.host.logRefusal(fields);
    else this.logger.warn("request refused: wrong or missing token", fields);
    const error = new AbridgeError(
      ErrorCode.DAEMON_UNAUTHORIZED,
      `wrong or missing token (read it from the lockfile)${reason !== undefined ? `: ${reason}` : ""}`,
    );
    const line = answerLine({ ...(id !== undefined ? { id } : {}), ok: false, error: error.toJSON() });
    this.tail = this.tail.then(() => {
      if (!this.socket.destroyed && this.socket.writable) this.writer.end(line);
      setTimeout(() => this.socket.destroy(), REFUSED_LINGER_MS).unref();
    });
  }

  private async handle(value: unknown, id: RequestId | undefined): Promise<{ line: string; afterWrite?: () => void }> {
    this.host.count("request");
    const parsed = parseRequest(value);
    if (!parsed.success) {
      this.host.count("badRequest");
      return { line: failureLine(id, new AbridgeError(ErrorCode.DAEMON_BAD_REQUEST, `bad request: ${describeIssues(parsed.error, "request")}`)) };
    }
    const request = parsed.data;
    // The connection's own ops run here, synchronously, so `options` applies from the next line.
    if (request.op === "options") {
      this.unordered = request.unordered;
      return { line: replyLine(id, { ok: true }) };
    }
    if (request.op === "cancel") {
      const running = this.running.get(request.target);
      running?.abort(new AbridgeError(ErrorCode.CANCELLED, "cancelled by the client"));
      return { line: replyLine(id, { ok: true, cancelled: running !== undefined }) };
    }
    // A request that `cancel` can reach gets a signal of its own (closing still aborts it).
    const own = this.unordered && id !== undefined && id !== null ? new AbortController() : undefined;
    if (own && id !== undefined && id !== null) this.running.set(id, own);
    try {
      const result = await this.host.execute(request, own?.signal ?? this.controller.signal);
      const line = replyLine(id, { ok: true, ...result.body });
      return result.afterWrite ? { line, afterWrite: result.afterWrite } : { line };
    } catch (err) {
      return { line: failureLine(id, err) };
    } finally {
      if (own && id !== undefined && id !== null && this.running.get(id) === own) this.running.delete(id);
    }
  }

  /**
   * Queues an answer behind every earlier one: pipelined answers keep request order. On an
   * unordered connection it is written as soon as it is ready; `tail` still settles only once
   * every answer so far has been written, for the error or close that comes after them.
   */
  private enqueue(answer: Promise<{ line: string; afterWrite?: () => void }>): void {
    if (this.unordered) {
      const written = answer.then((ready) => this.writeAnswer(ready));
      this.tail = this.tail.then(() => written);
      return;
    }
    this.tail = this.tail.then(async () => this.writeAnswer(await answer));
  }

  /** Writes one answer (batched), then frees its pipelining slot once the client has room for more. */
  private async writeAnswer({ line, afterWrite }: { line: string; afterWrite?: () => void }): Promise<void> {
    if (!this.socket.destroyed && this.socket.writable) {
      this.writer.write(line);
      this.peakBuffered = Math.max(this.peakBuffered, this.bufferedBytes);
    }
    afterWrite?.();
    if (this.bufferedBytes > MAX_BUFFERED_ANSWER_BYTES && !this.socket.destroyed) {
      // The answer counts as done once the client has taken it, not when it was queued:
      // until then this request holds its pipelining slot and reading stays paused.
      this.writer.flush();
      this.updateFlow();
      // One promise for every answer waiting (the writer's one `drain` listener settles it, or the close).
      await this.writer.drained();
    }
    this.open -= 1;
    this.updateFlow();
  }

  /** An unframeable stream: answer after everything earlier, then end this connection. */
  private fail(error: AbridgeError, id: RequestId | null): void {
    this.broken = true;
    this.readPaused = false;
    // Reading goes on (and is discarded) so a peer still writing its over-long line is not stuck;
    // a peer that never stops is cut off below.
    this.socket.resume();
    this.logger.warn("closing connection", { reason: error.message.slice(0, 200) });
    this.host.count("badRequest");
    this.tail = this.tail.then(() => {
      if (!this.socket.destroyed && this.socket.writable) this.writer.end(answerLine({ id, ok: false, error: error.toJSON() }));
      setTimeout(() => this.socket.destroy(), 5_000).unref();
    });
  }
}
