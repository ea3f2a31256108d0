/**
 * A run posted to a thread that a computing program holds, before the thread begins it, is moved
 * to another thread as soon as one has room, and runs once.
 */
import { afterEach, describe, expect, it } from "vitest";
import { runProgram, type CodeRunResult } from "../../../src/code/runtime/codeRuntime.js";
import { CodeWorkerPool, type CodeWorkerPoolOptions } from "../../../src/code/runtime/workerPool.js";
import { settled, waitFor } from "../../helpers/waitFor.js";
import { codeHost, deferred } from "./codeHost.js";

let pools: CodeWorkerPool[] = [];
afterEach(async () => {
  await Promise.all(pools.map((p) => p.close()));
  pools = [];
});

async function ownPool(options: CodeWorkerPoolOptions): Promise<CodeWorkerPool> {
  const pool = new CodeWorkerPool({ spareEngines: 1, ...options });
  pools.push(pool);
  await pool.warm();
  return pool;
}

/** One turn of the event loop: answers to a program's calls made in this turn have been posted. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

type Host = ReturnType<typeof codeHost>;

/**
 * A host whose `s.started` tells when the looping program got past it, `s.gate` waits until
 * `open` is called, and `s.count` counts its calls.
 */
function loopHost() {
  const started = deferred();
  const gate = deferred();
  let counted = 0;
  const host = codeHost(
    { s: ["started", "gate", "count"] },
    {
      s_started: () => started.resolve(),
      s_gate: () => gate.promise,
      s_count: () => ++counted,
    },
  );
  return { host, started: started.promise, open: () => gate.resolve(), counted: () => counted };
}

/**
 * Starts a program that calls `s.started` and then loops (timeout_ms 20 s, ended through its
 * signal), and resolves once the answer to that call is on its way: the thread's next slice is
 * the loop.
 */
async function startLoop(pool: CodeWorkerPool, host: Host, started: Promise<void>) {
  const controller = new AbortController();
  let loopResult: CodeRunResult | undefined;
  const looping = runProgram("await s.started({});\nwhile (true) {}", host, { timeout_ms: 20_000 }, { pool, signal: controller.signal }).then((r) => {
    loopResult = r;
    return r;
  });
  await settled(started, { what: "the looping program to call s.started" });
  await nextTurn();
  return {
    loopEnded: () => loopResult !== undefined,
    /** Cancels the loop and checks it ended that way, not at its deadline nor with its thread. */
    async cancel(): Promise<void> {
      controller.abort();
      expect((await looping).error).toMatchObject({ code: "CANCELLED" });
    },
  };
}

/**
 * Two threads of two runs: the loop holds the first; two runs waiting on `s.gate` fill the second.
 * A run placed now can only go to the held thread, behind the loop, and stays unbegun there.
 */
async function heldAndFull() {
  const pool = await ownPool({ maxThreads: 2, runsPerThread: 2, idleThreads: 2 });
  const { host, started, open, counted } = loopHost();
  const loop = await startLoop(pool, host, started);
  await waitFor(() => pool.stats().held === 1, { what: "the loop to hold its thread", intervalMs: 5 });
  const fillers = [1, 2].map(() => runProgram("await s.gate({}); return 0", host, {}, { pool }));
  await waitFor(() => host.calls.filter((c) => c.exposed === "s_gate").length === 2, { what: "both runs to wait on s.gate", intervalMs: 5 });
  expect(pool.stats()).toMatchObject({ threads: 2, runs: 3 });
  // The loop's thread reads as held again once its current slice is long: a loaded machine can
  // catch it between the slice the fillers' placement saw and the next.
  await waitFor(() => pool.stats().held === 1, { what: "the loop to hold its thread again", intervalMs: 5 });
  return { pool, host, loop, open, counted, fillers };
}

describe("a run posted behind a program that computes", () => {
  it("moves to another thread once one has room, and answers while the program still loops", async () => {
    const { pool, host, loop, open, fillers } = await heldAndFull();
    const quick = runProgram("return 2 + 2", host, {}, { pool });
    expect(pool.stats()).toMatchObject({ runs: 4, waiting: 0 });

    open();
    const result = await settled(quick, { what: "the run placed behind the loop to answer" });
    expect(result.error).toBeUndefined();
    expect(result.returnJson).toBe("4");
    expect(loop.loopEnded()).toBe(false);
    expect((await Promise.all(fillers)).map((r) => r.returnJson)).toEqual(["0", "0"]);
    await loop.cancel();
  });

  it("moves a run placed at once behind a program that just began to loop", async () => {
    // The second run is placed within the same turn the loop's answer is posted: the thread is not
    // yet held (unless the machine stalled past LONG_SLICE_MS, and then the pool places it on a
    // new thread at once). Either way it must answer while the loop goes on.
    const pool = await ownPool({ maxThreads: 2, idleThreads: 1 });
    const { host, started } = loopHost();
    const loop = await startLoop(pool, host, started);
    const result = await settled(runProgram("return 2 + 2", host, {}, { pool }), { what: "the run placed behind the loop to answer" });
    expect(result.error).toBeUndefined();
    expect(result.returnJson).toBe("4");
    expect(loop.loopEnded()).toBe(false);
    expect(pool.stats().threads).toBe(2);
    await loop.cancel();
  });

  it("runs a moved program once: its tool call is made once, also after the held thread is free again", async () => {
    const { pool, host, loop, open, counted, fillers } = await heldAndFull();
    const moved = runProgram("return await s.count({});", host, {}, { pool });
    open();
    expect((await settled(moved, { what: "the moved run to answer" })).returnJson).toBe("1");
    expect(loop.loopEnded()).toBe(false);
    await Promise.all(fillers);

    // Once the loop ends, the thread it held gets to the withdrawn run and drops it; runs placed
    // on that thread after it show it got there (a thread takes its messages in order).
    await loop.cancel();
    const after = await Promise.all([1, 2, 3, 4].map((n) => runProgram(`return ${n}`, host, {}, { pool })));
    expect(after.map((r) => r.returnJson)).toEqual(["1", "2", "3", "4"]);
    expect(counted()).toBe(1);
    expect(host.calls.filter((c) => c.exposed === "s_count")).toHaveLength(1);
  });

  it("counts the time spent waiting behind the loop against the run's own timeout_ms, and leaves the loop's thread alone", async () => {
    // One thread at most: the run cannot move; it ends at its own deadline, unbegun.
    const pool = await ownPool({ maxThreads: 1, idleThreads: 1 });
    const { host, started } = loopHost();
    const loop = await startLoop(pool, host, started);
    const waited = await settled(runProgram("return 2 + 2", host, { timeout_ms: 300 }, { pool }), { what: "the waiting run to reach its deadline" });
    expect(waited.error).toMatchObject({ code: "CODE_TIMEOUT", message: "the program ran past its timeout_ms (300 ms)" });
    expect(loop.loopEnded()).toBe(false);
    expect(pool.stats()).toMatchObject({ threads: 1, runs: 1 });
    await loop.cancel();
    expect((await runProgram("return 5", host, {}, { pool })).returnJson).toBe("5");
  });
});
