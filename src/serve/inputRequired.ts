import { randomBytes } from "node:crypto";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { isObject } from "../model/json.js";
import type { JsonObject } from "../model/types.js";
import { META_INPUT_KEY } from "./statelessWire.js";

/** What a stateless call does next: ends with a result or a failure, or waits on the client's answers. */
export type CallStep = { done: JsonObject } | { failed: unknown } | { input: Record<string, { method: string; params: JsonObject }> };

/** A request of the upstream to the client that waits for its answer. */
interface Waiter {
  method: string;
  params: JsonObject;
  resolve(result: JsonObject): void;
  reject(error: unknown): void;
}

/** How long after an upstream's first request to the client its burst is taken (see {@link StatelessCall}). */
export const BURST_MS = 10;

/** Kinds of relayed request, for the keys abridge makes up when the upstream names none. */
const KIND: Record<string, string> = { "elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots" };

/**
 * One call of a stateless (2026-07-28) client that may need the client's answers on the way. The
 * revision has no server-to-client requests: where an upstream asks the calling client for a
 * sampling, an elicitation or its roots during the call, the client's request is answered
 * `input_required` with those requests, and the client sends them back answered in a retry of the
 * same request (`inputResponses`, with the `requestState` it was given). The upstream call is not
 * redone: it stays parked on its request to abridge, and the answer resumes it.
 *
 * Requests the upstream makes in one burst go out together as one `input_required` result. A key the upstream gives in `params._meta["abridge/inputKey"]` is
 * the key the client sees (that meta key is taken out); otherwise abridge numbers them per kind.
 */
export class StatelessCall {
  /** Aborts the upstream call: the client went away or the parked call expired. */
  readonly controller = new AbortController();
  private readonly waiting = new Map<string, Waiter>();
  /** Answers that came with the first request (no requestState), used by key once. */
  private early: JsonObject = {};
  /** How the call ended, once it has. */
  private terminal: CallStep | undefined;
  /** A burst of requests is complete and not yet handed to the client. */
  private inputReady = false;
  private wake: (() => void) | undefined;
  private burst = false;
  /** A request of the client is waiting on this call's next step (it is not parked). */
  private listening = false;
  private numbered = 0;
  private settled = false;

  /** Answers given before the upstream asked (the first request carried `inputResponses`). */
  preanswer(responses: JsonObject): void {
    this.early = { ...responses };
  }

  /** Runs `call` as this call's upstream work; its end is the last step. */
  run(call: Promise<JsonObject>): void {
    call.then(
      (result) => this.finish({ done: result }),
      (error: unknown) => this.finish({ failed: error }),
    );
  }

  /** The relay's request of the upstream: waits for the client's answer in a later request. */
  request(method: string, params: JsonObject, signal: AbortSignal): Promise<JsonObject> {
    // Parked (its round handed out, its client not back yet), the call is waiting on answers, not
    // asking: a request now is most likely another call's, routed here because an older
    // upstream's requests name no call. Refused, as an ambiguous one is, rather than held for a
    // client that may never come back.
    if (!this.listening && !this.burst) {
      return Promise.reject(
        new McpError(
          -32600,
          `abridge: ${method} arrived while the call it was routed to waits for its client's answers; it cannot be tied to a call, so it is refused`,
        ),
      );
    }
    const { key, forwarded } = this.keyOf(method, params);
    const early = this.early[key];
    if (isObject(early)) {
      delete this.early[key];
      return Promise.resolve(early);
    }
    return new Promise<JsonObject>((resolve, reject) => {
      const onAbort = (): void => {
        if (this.waiting.get(key)?.resolve === settle) this.waiting.delete(key);
        reject(signal.reason ?? new McpError(-32800, "Request cancelled"));
      };
      const settle = (result: JsonObject): void => {
        signal.removeEventListener("abort", onAbort);
        resolve(result);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiting.set(key, { method, params: forwarded, resolve: settle, reject });
      this.announce();
    });
  }

  /** Hands the client's answers to the requests waiting for them; returns how many still wait. */
  answer(responses: JsonObject): number {
    for (const [key, waiter] of [...this.waiting]) {
      const response = responses[key];
      if (!isObject(response)) continue;
      this.waiting.delete(key);
      waiter.resolve(response);
    }
    return this.waiting.size;
  }

  /** The requests still waiting for an answer, as an `input_required` result lists them. */
  pending(): Record<string, { method: string; params: JsonObject }> {
    const requests: Record<string, { method: string; params: JsonObject }> = {};
    for (const [key, { method, params }] of this.waiting) requests[key] = { method, params };
    return requests;
  }

  /**
   * The next step: the call's end, or the requests waiting for the client once a burst of them is
   * complete (listed as they stand when taken, so an answer given meanwhile is not asked again).
   */
  async next(signal: AbortSignal): Promise<CallStep> {
    this.listening = true;
    try {
      return await this.nextStep(signal);
    } finally {
      this.listening = false;
    }
  }

  private async nextStep(signal: AbortSignal): Promise<CallStep> {
    for (;;) {
      if (this.terminal !== undefined) return this.terminal;
      if (this.inputReady && this.waiting.size > 0) {
        this.inputReady = false;
        return { input: this.pending() };
      }
      if (signal.aborted) throw signal.reason;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          signal.removeEventListener("abort", done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal.addEventListener("abort", done, { once: true });
      });
    }
  }

  /** Ends the call: its upstream work is aborted and requests still waiting are refused. */
  abort(reason: unknown): void {
    this.controller.abort(reason);
    for (const waiter of this.waiting.values()) waiter.reject(reason);
    this.waiting.clear();
  }

  get finished(): boolean {
    return this.settled;
  }

  private finish(step: CallStep): void {
    this.settled = true;
    this.terminal = step;
    this.wake?.();
  }

  /**
   * Requests that arrive together go out together: the burst is taken {@link BURST_MS} after its
   * first request. An upstream of the handshake era writes requests it makes at once one line
   * each, and a pipe may hand them over in more than one read; a request that still comes later
   * is simply asked in the next round.
   */
  private announce(): void {
    if (this.burst) return;
    this.burst = true;
    setTimeout(() => {
      this.burst = false;
      if (this.waiting.size === 0 || this.settled) return;
      this.inputReady = true;
      this.wake?.();
    }, BURST_MS).unref();
  }

  private keyOf(method: string, params: JsonObject): { key: string; forwarded: JsonObject } {
    const meta = isObject(params._meta) ? params._meta : undefined;
    const named = meta?.[META_INPUT_KEY];
    let forwarded = params;
    if (meta !== undefined && named !== undefined) {
      const { [META_INPUT_KEY]: _named, ...rest } = meta;
      const { _meta: _old, ...others } = params;
      forwarded = Object.keys(rest).length > 0 ? { ...others, _meta: rest } : others;
    }
    let key = typeof named === "string" && named !== "" ? named : `${KIND[method] ?? "input"}-${++this.numbered}`;
    while (this.waiting.has(key)) key = `${key}-${++this.numbered}`;
    return { key, forwarded };
  }
}

/** How long a call waiting on its client's answers is kept (10 minutes): then it is aborted. */
export const PARKED_CALL_MS = 10 * 60_000;
/** Calls kept waiting at most; past it the oldest is aborted. */
export const MAX_PARKED_CALLS = 1000;

/** A parked call, and what it was: a retry must be the same request. */
interface Parked {
  call: StatelessCall;
  method: string;
  name: string;
  timer: NodeJS.Timeout;
}

/**
 * Calls waiting for their client's answers, by the `requestState` the client was given. The state
 * is 24 random bytes: a state abridge did not issue, or one altered on the way, names no call and
 * is refused. Each state is good for one retry (the answer to it carries a new one if more is
 * needed).
 */
export class ParkedCalls {
  private readonly parked = new Map<string, Parked>();

  constructor(private readonly keepMs = PARKED_CALL_MS) {}

  get size(): number {
    return this.parked.size;
  }

  /** Parks `call` and returns its state. */
  park(call: StatelessCall, method: string, name: string): string {
    if (this.parked.size >= MAX_PARKED_CALLS) {
      const [oldest] = this.parked.keys();
      if (oldest !== undefined) this.expire(oldest);
    }
    const state = randomBytes(24).toString("base64url");
    const timer = setTimeout(() => this.expire(state), this.keepMs);
    timer.unref();
    this.parked.set(state, { call, method, name, timer });
    return state;
  }

  /** Takes the call parked under `state`, if it is one of `method` and `name`. */
  take(state: string, method: string, name: string): StatelessCall | undefined {
    const parked = this.parked.get(state);
    if (parked === undefined || parked.method !== method || parked.name !== name) return undefined;
    this.parked.delete(state);
    clearTimeout(parked.timer);
    return parked.call;
  }

  /** Aborts every parked call (the front end is closing). */
  clear(): void {
    for (const state of [...this.parked.keys()]) this.expire(state);
  }

  private expire(state: string): void {
    const parked = this.parked.get(state);
    if (parked === undefined) return;
    this.parked.delete(state);
    clearTimeout(parked.timer);
    parked.call.abort(new McpError(-32001, "the call waited too long for its client's answers"));
  }
}
