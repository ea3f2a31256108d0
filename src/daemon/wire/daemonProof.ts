import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { connect, type Socket } from "node:net";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { errorAnswerSchema, helloAnswerSchema, parseAddress } from "./protocol.js";

/**
 * The daemon proves that it holds the lockfile's token before a client sends it the token.
 *
 * A lockfile outlives the listener it names in ordinary ways: a daemon that idles out frees its
 * loopback port, and a client that read the lock earlier (or a lock whose pid lives on in another
 * program) would connect to whatever holds that port now. Any local user can bind a freed port,
 * so a client that led with its token would hand it, and its calls, to that user, and take a tool
 * list from them. So every connection starts with a proof, once, before the first request:
 *
 *     client -> {"op":"hello","nonce":Nc,"id":0}          no token
 *     daemon -> {"id":0,"ok":true,"nonce":Nd,"proof":P}
 *     P = base64url(HMAC-SHA256(key: token, "abridge-daemon-proof-v1\n" Nc "\n" Nd "\n" address))
 *
 * Nc and Nd are 32 fresh random bytes each (base64url); `address` is the daemon's address as its
 * lockfile names it. The client compares P with its own in constant time and sends requests
 * carrying the token only once it matches. Only the token's holder can compute P for a nonce it
 * has never seen, so a peer without the token learns a nonce and nothing else. Binding the
 * address means a proof obtained by relaying the hello to the daemon at another address does not
 * pass either.
 */

/** The label of the proof's MAC input, so it can never be confused with another use of the token. */
const PROOF_LABEL = "abridge-daemon-proof-v1";
/** The id of the `hello` request (a connection's requests are numbered from 1). */
export const HELLO_ID = 0;
/** Bytes of a `hello` answer read at most, newline included: a real one is about 140. */
export const MAX_HELLO_ANSWER_BYTES = 4096;

/** A fresh nonce: 32 random bytes, base64url (43 characters). */
export function newNonce(): string {
  return randomBytes(32).toString("base64url");
}

/** The proof for one exchange: what only a holder of `token` can compute. */
export function daemonProof(token: string, clientNonce: string, daemonNonce: string, address: string): string {
  return createHmac("sha256", token).update(`${PROOF_LABEL}\n${clientNonce}\n${daemonNonce}\n${address}`, "utf8").digest("base64url");
}

/** Compares a proof with the expected one in constant time. */
export function proofMatches(given: string, expected: string): boolean {
  const a = Buffer.from(given, "utf8");
  const b = Buffer.from(expected, "utf8");
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The `hello` line a client sends first (newline included). */
export function helloLine(nonce: string): string {
  return `${JSON.stringify({ op: "hello", nonce, id: HELLO_ID })}\n`;
}

/** Where the daemon is and what it must prove it holds: the lockfile's address and token. */
export interface DaemonIdentity {
  address: string;
  token: string;
}

/** DAEMON_UNTRUSTED: what answered at `address` did not prove it holds the token. */
export function untrustedDaemon(address: string, reason: string): AbridgeError {
  return new AbridgeError(
    ErrorCode.DAEMON_UNTRUSTED,
    `refusing the daemon at ${address}: it did not prove that it holds the lockfile's token (${reason}). ` +
      `Another program may hold that address (the daemon that wrote the lockfile may be gone); the token was not sent to it. ` +
      `An abridge daemon older than this client cannot give the proof either: stop it and let a new one start`,
    { details: { address } },
  );
}

/** What a `hello` answer line says: proven, or why not. */
function judgeAnswer(line: string, daemon: DaemonIdentity, nonce: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return "its answer is not JSON";
  }
  const answer = helloAnswerSchema.safeParse(value);
  if (!answer.success) {
    const refusal = errorAnswerSchema.safeParse(value);
    if (refusal.success) return `it answered ${refusal.data.error.code.slice(0, 60)}: ${refusal.data.error.message.slice(0, 200)}`;
    return "its answer is not a proof";
  }
  if (answer.data.id !== HELLO_ID) return "its answer is not to the hello";
  return proofMatches(answer.data.proof, daemonProof(daemon.token, nonce, answer.data.nonce, daemon.address)) ? undefined : "its proof is wrong";
}

/** Options of {@link openProvenSocket}. */
export interface ProveOptions {
  /** Bound of the connect. */
  connectTimeoutMs: number;
  /** Bound of the wait for the proof once connected. */
  proofTimeoutMs: number;
  signal?: AbortSignal;
}

/**
 * Connects to the daemon `daemon` names, sends `hello` and resolves with the socket once the
 * peer has proven that it holds the token (nothing else has been sent on it). The socket is
 * paused: its new owner adds its listeners, then resumes it.
 *
 * @throws AbridgeError DAEMON_UNTRUSTED when the peer answers with anything but the right proof
 *   (the socket is destroyed, the token never sent); DAEMON_UNAVAILABLE (retryable) when nothing
 *   accepts the connection or the peer closes it before answering (`details.phase` "connect"), or
 *   no answer comes within `proofTimeoutMs` (`details.phase` "hello"); CANCELLED when `signal`
 *   aborts.
 */
export function openProvenSocket(daemon: DaemonIdentity, options: ProveOptions): Promise<Socket> {
  const address = parseAddress(daemon.address);
  if (!address) return Promise.reject(new AbridgeError(ErrorCode.DAEMON_UNAVAILABLE, `lockfile has a malformed address "${daemon.address}"`));
  const where = daemon.address;
  return new Promise<Socket>((resolve, reject) => {
    if (options.signal?.aborted) {
      reject(new AbridgeError(ErrorCode.CANCELLED, "cancelled", { cause: options.signal.reason }));
      return;
    }
    const socket = address.kind === "unix" ? connect({ path: address.path }) : connect({ host: address.host, port: address.port });
    const nonce = newNonce();
    let connected = false;
    let settled = false;
    let received: Buffer = Buffer.alloc(0);
    const cleanup = (): void => {
      settled = true;
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("error", onError);
      socket.off("close", onClose);
      options.signal?.removeEventListener("abort", onAbort);
    };
    const fail = (err: AbridgeError): void => {
      if (settled) return;
      cleanup();
      socket.destroy();
      reject(err);
    };
    const lost = (what: string, cause?: unknown): AbridgeError =>
      new AbridgeError(ErrorCode.DAEMON_UNAVAILABLE, `cannot connect to the daemon at ${where}: ${what}`, {
        retryable: true,
        details: { phase: "connect" },
        ...(cause !== undefined ? { cause } : {}),
      });
    const onError = (err: Error): void => fail(lost(err.message, err));
    const onClose = (): void => fail(lost(connected ? "it closed the connection before proving that it holds the token" : "the connection closed"));
    const onAbort = (): void => fail(new AbridgeError(ErrorCode.CANCELLED, "cancelled", { cause: options.signal?.reason }));
    const onData = (chunk: Buffer): void => {
      received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
      const newline = received.indexOf(10);
      if (newline < 0) {
        if (received.length >= MAX_HELLO_ANSWER_BYTES) fail(untrustedDaemon(where, `no answer line in its first ${MAX_HELLO_ANSWER_BYTES} bytes`));
        return;
      }
      if (newline >= MAX_HELLO_ANSWER_BYTES) {
        fail(untrustedDaemon(where, `an answer over ${MAX_HELLO_ANSWER_BYTES} bytes`));
        return;
      }
      // Nothing was asked besides the hello: anything after its answer is not from the daemon.
      if (newline !== received.length - 1) {
        fail(untrustedDaemon(where, "it sent more than an answer to the hello"));
        return;
      }
      const reason = judgeAnswer(received.subarray(0, newline).toString("utf8"), daemon, nonce);
      if (reason !== undefined) {
        fail(untrustedDaemon(where, reason));
        return;
      }
      cleanup();
      // Held until its new owner listens: nothing the daemon sends later is lost, and an error
      // meanwhile does not go unhandled.
      socket.pause();
      socket.on("error", () => undefined);
      resolve(socket);
    };
    let timer = setTimeout(() => fail(lost(`no connection within ${options.connectTimeoutMs} ms`)), options.connectTimeoutMs);
    socket.on("error", onError);
    socket.on("close", onClose);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    socket.once("connect", () => {
      if (settled) return;
      connected = true;
      clearTimeout(timer);
      timer = setTimeout(
        () =>
          fail(
            new AbridgeError(ErrorCode.DAEMON_UNAVAILABLE, `no proof from the daemon at ${where} within ${options.proofTimeoutMs} ms`, {
              retryable: true,
              details: { phase: "hello" },
            }),
          ),
        options.proofTimeoutMs,
      );
      socket.setNoDelay(true);
      socket.on("data", onData);
      socket.write(helloLine(nonce));
    });
  });
}
