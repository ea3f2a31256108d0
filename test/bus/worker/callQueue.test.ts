/**
 * The bus worker's admission of calls, on its own: limits, turns among requesters, and which call
 * is refused when the queue is full. (The worker's tests show the same through a real bus.)
 */
import { describe, expect, it } from "vitest";
import { CallQueue } from "../../../src/bus/worker/callQueue.js";

/** Offers `items` from `key` in order; what was started and what was refused. */
function offerAll(queue: CallQueue<string>, key: string, items: string[]): { started: string[]; refused: string[] } {
  const started: string[] = [];
  const refused: string[] = [];
  for (const item of items) {
    const admission = queue.offer(key, item);
    if (admission.start) started.push(item);
    if (admission.refused !== undefined) refused.push(admission.refused);
  }
  return { started, refused };
}

describe("CallQueue", () => {
  it("runs one requester's calls up to seven eighths of the slots, queues up to the bound, refuses the rest", () => {
    const queue = new CallQueue<string>({ maxConcurrent: 16, maxQueued: 3 });
    expect(queue.perRequester).toBe(14);
    const a = offerAll(
      queue,
      "a",
      Array.from({ length: 20 }, (_, i) => `a${i}`),
    );
    expect(a.started).toHaveLength(14);
    expect(a.refused).toEqual(["a17", "a18", "a19"]);
    expect([queue.running, queue.waiting]).toEqual([14, 3]);
    // Another requester finds a slot at once.
    expect(queue.offer("b", "b0")).toEqual({ start: true });
    expect(queue.next()).toBeUndefined();
  });

  it("keeps one slot for others even at small limits, and a single slot for everyone at 1", () => {
    expect(new CallQueue({ maxConcurrent: 2, maxQueued: 0 }).perRequester).toBe(1);
    expect(new CallQueue({ maxConcurrent: 1, maxQueued: 0 }).perRequester).toBe(1);
    expect(new CallQueue({ maxConcurrent: 64, maxQueued: 0 }).perRequester).toBe(56);
  });

  it("starts waiting calls in turn among requesters, each requester's in order", () => {
    const queue = new CallQueue<string>({ maxConcurrent: 2, maxQueued: 10 });
    offerAll(queue, "x", ["x0"]);
    offerAll(queue, "y", ["y0"]);
    offerAll(queue, "a", ["a0", "a1", "a2"]);
    offerAll(queue, "b", ["b0", "b1"]);
    const order: string[] = [];
    for (const done of ["x", "y", "a", "b", "a", "b", "a"]) {
      queue.done(done);
      const next = queue.next();
      if (next !== undefined) order.push(next.item);
    }
    expect(order).toEqual(["a0", "b0", "a1", "b1", "a2"]);
  });

  it("when full, refuses the newest call of the requester holding the most of the queue, not a newcomer", () => {
    const queue = new CallQueue<string>({ maxConcurrent: 1, maxQueued: 4 });
    offerAll(queue, "a", ["a0", "a1", "a2", "a3", "a4"]);
    expect(queue.offer("b", "b0")).toEqual({ start: false, refused: "a4" });
    expect(queue.offer("b", "b1")).toEqual({ start: false, refused: "a3" });
    // Now a and b hold two each: a newcomer of b's is refused itself.
    expect(queue.offer("b", "b2")).toEqual({ start: false, refused: "b2" });
    expect(queue.takeWaiting().sort()).toEqual(["a1", "a2", "b0", "b1"]);
    expect(queue.waiting).toBe(0);
  });
});
