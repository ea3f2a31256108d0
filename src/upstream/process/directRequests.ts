import { ErrorCode as RpcCode, McpError, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { isObject } from "../../model/json.js";
import type { JsonObject } from "../../model/types.js";

/**
 * Ids of direct requests start here and count up: far above the ids the SDK client gives its own
 * requests on the same pipe (it counts from 0, one per initialize, list or ping), and below
 * 2^31, since servers written in languages with 32-bit integers read ids as such.
 */
export const DIRECT_ID_FIRST = 1_000_000_000;
const DIRECT_ID_LAST = 2_147_483_647;

interface Waiting {
  resolve: (result: JsonObject) => void;
  reject: (error: unknown) => void;
}

/** A request under way: its answer, and how to give up on it. */
export interface DirectCall {
  answer: Promise<JsonObject>;
  cancel(reason: unknown): void;
}

const ignore = (): void => undefined;

/**
 * Requests written to a stdio server without the SDK client's bookkeeping, and their answers.
 *
 * The SDK client's `request()` is general: a response handler and a progress map per request, its
 * own timer (abridge passes the longest one and keeps its own clock), an abort listener it never
 * removes, and every answer checked twice by zod (as a JSON-RPC response, then against the result
 * schema). A profile of `serve` relaying calls to a stdio server found that work, and the garbage
 * it leaves, to be a large share of a call: about 9 KB of the 26 KB allocated per call. A
 * `tools/call` needs none of it: abridge keeps the clock, the progress token and the abort, so
 * here a request is an id in a map, one line written, and its answer taken off the line before
 * the SDK's parsing sees it. What the SDK client does that a caller can see is kept: an error
 * answer rejects with the SDK's `McpError` for its code, message and data; an abort sends
 * `notifications/cancelled` for the id and rejects with the abort's reason; the end of the
 * connection rejects every waiting request with `ConnectionClosed`. Requests of the server itself
 * (sampling, elicitation, roots) and its notifications still go to the SDK client.
 */
export class DirectRequests {
  private readonly waiting = new Map<number, Waiting>();
  private nextId = DIRECT_ID_FIRST;
  private closed = false;

  constructor(private readonly write: (message: JSONRPCMessage) => Promise<void>) {}

  /** Requests waiting for their answer. */
  get size(): number {
    return this.waiting.size;
  }

  /**
   * Writes `method` with `params`. Its `answer` resolves with the result object of the answer;
   * it rejects with what the write rejected with (nothing was sent), an `McpError` for an error
   * answer, the reason given to `cancel`, or `ConnectionClosed` when the connection ends first.
   * `cancel(reason)` (a timeout, the caller's abort) tells the server with
   * `notifications/cancelled` and fails the request at once; once it is answered, cancel does
   * nothing. A caller's abort is passed to `cancel` by the caller: no listener is kept here.
   */
  send(method: string, params: JsonObject): DirectCall {
    if (this.closed) return { answer: Promise.reject(new Error("Not connected")), cancel: ignore };
    const id = this.nextId;
    this.nextId = id === DIRECT_ID_LAST ? DIRECT_ID_FIRST : id + 1;
    const answer = new Promise<JsonObject>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.write({ jsonrpc: "2.0", id, method, params }).catch((err: unknown) => {
        if (this.waiting.delete(id)) reject(err);
      });
    });
    return { answer, cancel: (reason) => this.cancel(id, reason) };
  }

  /**
   * Takes a parsed line when it answers a direct request: true when it did (the caller passes it
   * on no further). An answer of another shape (no object result, a malformed error) is left to
   * the caller's own parsing, as are all other messages.
   */
  take(value: unknown): boolean {
    if (this.waiting.size === 0 || !isObject(value) || value.method !== undefined) return false;
    const id = numericId(value.id);
    const entry = this.waiting.get(id);
    if (entry === undefined) return false;
    const { result, error } = value;
    if (isObject(result)) {
      this.waiting.delete(id);
      entry.resolve(result);
      return true;
    }
    if (isObject(error) && typeof error.code === "number" && Number.isInteger(error.code) && typeof error.message === "string") {
      this.waiting.delete(id);
      entry.reject(McpError.fromError(error.code, error.message, error.data));
      return true;
    }
    return false;
  }

  /** Fails the request `id` (true when it was a direct request that still waited). */
  fail(id: unknown, error: unknown): boolean {
    const key = numericId(id);
    const entry = this.waiting.get(key);
    if (entry === undefined) return false;
    this.waiting.delete(key);
    entry.reject(error);
    return true;
  }

  /** The connection ended: every waiting request fails as the SDK client fails its own. */
  close(): void {
    this.closed = true;
    const error = McpError.fromError(RpcCode.ConnectionClosed, "Connection closed");
    const entries = [...this.waiting.values()];
    this.waiting.clear();
    for (const entry of entries) entry.reject(error);
  }

  /** Tells the server the caller gave up on `id`, and fails it with the abort's reason. */
  private cancel(id: number, reason: unknown): void {
    const entry = this.waiting.get(id);
    if (entry === undefined) return;
    this.waiting.delete(id);
    this.write({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: String(reason) } }).catch(() => undefined);
    // As the SDK client does: a reason that is not an McpError is wrapped in one.
    entry.reject(reason instanceof McpError ? reason : new McpError(RpcCode.RequestTimeout, String(reason)));
  }
}

/** An answer's id as the map holds it: the SDK client also reads a numeric string as its number. */
function numericId(id: unknown): number {
  return typeof id === "number" ? id : typeof id === "string" ? Number(id) : Number.NaN;
}
