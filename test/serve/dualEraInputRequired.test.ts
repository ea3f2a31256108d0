import { describe, expect, it } from "vitest";
import { ParkedCalls, StatelessCall } from "../../src/serve/inputRequired.js";

/** A call whose upstream work is a promise the test settles. */
function pendingCall(): { call: StatelessCall; finish(result: Record<string, unknown>): void } {
  const call = new StatelessCall();
  let finish!: (result: Record<string, unknown>) => void;
  call.run(new Promise((resolve) => (finish = resolve)));
  return { call, finish };
}

const never = new AbortController().signal;

describe("StatelessCall: an upstream's requests to the client as input_required rounds", () => {
  it("sends requests made at once in one round, keyed as the upstream named them, and resumes with the answers", async () => {
    const { call, finish } = pendingCall();
    // As the front end does: its request waits on the call's next step, then the upstream asks.
    const next = call.next(never);
    const elicited = call.request("elicitation/create", { message: "name?", _meta: { "abridge/inputKey": "user_name", other: 1 } }, never);
    const sampled = call.request("sampling/createMessage", { messages: [], maxTokens: 5 }, never);
    const step = await next;
    expect(step).toEqual({
      input: {
        // abridge's key is taken out of the meta the client sees; other meta stays.
        user_name: { method: "elicitation/create", params: { message: "name?", _meta: { other: 1 } } },
        "sampling-1": { method: "sampling/createMessage", params: { messages: [], maxTokens: 5 } },
      },
    });
    // An answer for one of them: the other is still asked for.
    expect(call.answer({ user_name: { action: "accept", content: { name: "Ada" } }, unknown: { x: 1 } })).toBe(1);
    expect(await elicited).toEqual({ action: "accept", content: { name: "Ada" } });
    expect(call.pending()).toEqual({ "sampling-1": { method: "sampling/createMessage", params: { messages: [], maxTokens: 5 } } });
    // Parked meanwhile: a request now cannot be this call's, and is refused.
    await expect(call.request("roots/list", {}, never)).rejects.toThrow("waits for its client's answers");
    expect(call.answer({ "sampling-1": { role: "assistant", content: { type: "text", text: "hi" } } })).toBe(0);
    await sampled;
    const last = call.next(never);
    finish({ content: [] });
    expect(await last).toEqual({ done: { content: [] } });
  });

  it("answers a request at once from answers that came with the first request, each once", async () => {
    const { call } = pendingCall();
    call.preanswer({ user_name: { action: "accept", content: { name: "early" } } });
    const next = call.next(never);
    expect(await call.request("elicitation/create", { _meta: { "abridge/inputKey": "user_name" } }, never)).toEqual({
      action: "accept",
      content: { name: "early" },
    });
    // The same key asked again is a new question.
    void call.request("elicitation/create", { _meta: { "abridge/inputKey": "user_name" } }, never);
    expect(await next).toMatchObject({ input: { user_name: { method: "elicitation/create" } } });
  });

  it("tells two requests with the same key apart, and refuses waiting requests when aborted", async () => {
    const { call } = pendingCall();
    const next = call.next(never);
    const first = call.request("roots/list", { _meta: { "abridge/inputKey": "k" } }, never);
    const second = call.request("roots/list", { _meta: { "abridge/inputKey": "k" } }, never);
    const step = await next;
    expect(Object.keys((step as { input: object }).input).sort()).toEqual(["k", "k-1"]);
    const reason = new Error("gone");
    call.abort(reason);
    await expect(first).rejects.toBe(reason);
    await expect(second).rejects.toBe(reason);
    expect(call.controller.signal.aborted).toBe(true);
  });

  it("stops waiting for the next step when the client goes away", async () => {
    const { call } = pendingCall();
    const client = new AbortController();
    const waiting = call.next(client.signal);
    client.abort(new Error("client left"));
    await expect(waiting).rejects.toThrow("client left");
  });
});

describe("ParkedCalls: requestState", () => {
  it("gives a call back once, for the same method and name only", () => {
    const parked = new ParkedCalls();
    const { call } = pendingCall();
    const state = parked.park(call, "tools/call", "t");
    expect(state).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(parked.take(`${state}-TAMPERED`, "tools/call", "t")).toBeUndefined();
    expect(parked.take(state, "tools/call", "other")).toBeUndefined();
    expect(parked.take(state, "tools/call", "t")).toBe(call);
    expect(parked.take(state, "tools/call", "t")).toBeUndefined();
    parked.clear();
  });

  it("cancels a parked call whose client does not come back in time", async () => {
    // Time passing is what this is about: a short keep, and the abort it causes is awaited.
    const parked = new ParkedCalls(20);
    const { call } = pendingCall();
    const state = parked.park(call, "tools/call", "t");
    await new Promise((resolve) => call.controller.signal.addEventListener("abort", resolve, { once: true }));
    expect(parked.take(state, "tools/call", "t")).toBeUndefined();
    expect(parked.size).toBe(0);
  });
});
