import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RelistScheduler } from "../../src/upstream/relistScheduler.js";

/** A re-list whose end the test decides. */
function controlledRelist(): { relist: () => Promise<void>; runs: () => number; finish: () => void } {
  let count = 0;
  let release: (() => void) | undefined;
  return {
    relist: () => {
      count++;
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    },
    runs: () => count,
    finish: () => release?.(),
  };
}

/** A re-list that counts how many run at once; each run ends when the test releases it. */
function overlapProbe(): { relist: () => Promise<void>; runs: () => number; mostAtOnce: () => number; finishAll: () => void } {
  let count = 0;
  let active = 0;
  let most = 0;
  const releases: Array<() => void> = [];
  return {
    relist: () => {
      count++;
      active++;
      most = Math.max(most, active);
      return new Promise<void>((resolve) => {
        releases.push(() => {
          active--;
          resolve();
        });
      });
    },
    runs: () => count,
    mostAtOnce: () => most,
    finishAll: () => {
      for (const release of releases.splice(0)) release();
    },
  };
}

describe("RelistScheduler", () => {
  // Fake timers: the debounce is the subject here, and a real clock would make the counts race.
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("turns a burst into one re-list after the quiet time", async () => {
    const { relist, runs, finish } = controlledRelist();
    const scheduler = new RelistScheduler(50, relist);
    for (let i = 0; i < 5; i++) {
      scheduler.schedule();
      await vi.advanceTimersByTimeAsync(20);
    }
    expect(runs()).toBe(0);
    await vi.advanceTimersByTimeAsync(50);
    expect(runs()).toBe(1);
    finish();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(runs()).toBe(1);
  });

  it("a change during a re-list gives exactly one more after it", async () => {
    const { relist, runs, finish } = controlledRelist();
    const scheduler = new RelistScheduler(50, relist);
    scheduler.schedule();
    await vi.advanceTimersByTimeAsync(50);
    expect(runs()).toBe(1);
    scheduler.schedule();
    scheduler.schedule();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(runs()).toBe(1);
    finish();
    await vi.advanceTimersByTimeAsync(50);
    expect(runs()).toBe(2);
    finish();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(runs()).toBe(2);
  });

  it("now() waits for the re-list in progress, then runs its own", async () => {
    const { relist, runs, finish } = controlledRelist();
    const scheduler = new RelistScheduler(50, relist);
    scheduler.schedule();
    await vi.advanceTimersByTimeAsync(50);
    let done = false;
    const now = scheduler.now().then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(runs()).toBe(1);
    finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs()).toBe(2);
    expect(done).toBe(false);
    finish();
    await now;
    expect(done).toBe(true);
  });

  it("two now() calls during a re-list share one re-list after it, never two at once", async () => {
    const probe = overlapProbe();
    const scheduler = new RelistScheduler(50, probe.relist);
    const first = scheduler.now();
    const second = scheduler.now();
    const third = scheduler.now();
    await vi.advanceTimersByTimeAsync(0);
    expect(probe.runs()).toBe(1);
    probe.finishAll();
    await first;
    await vi.advanceTimersByTimeAsync(0);
    expect(probe.runs()).toBe(2);
    probe.finishAll();
    await Promise.all([second, third]);
    expect(probe.runs()).toBe(2);
    expect(probe.mostAtOnce()).toBe(1);
  });

  it("a debounce pending when now() starts does not run a second re-list beside it", async () => {
    const probe = overlapProbe();
    const scheduler = new RelistScheduler(50, probe.relist);
    scheduler.schedule();
    const now = scheduler.now();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(probe.runs()).toBe(1);
    probe.finishAll();
    await now;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(probe.runs()).toBe(1);
    expect(probe.mostAtOnce()).toBe(1);
  });

  it("a change while now()'s re-list runs gives one more after it, not beside it", async () => {
    const probe = overlapProbe();
    const scheduler = new RelistScheduler(50, probe.relist);
    const now = scheduler.now();
    scheduler.schedule();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(probe.runs()).toBe(1);
    probe.finishAll();
    await now;
    await vi.advanceTimersByTimeAsync(50);
    expect(probe.runs()).toBe(2);
    probe.finishAll();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(probe.runs()).toBe(2);
    expect(probe.mostAtOnce()).toBe(1);
  });

  it("after stop() nothing more is scheduled, a pending re-list included", async () => {
    const { relist, runs } = controlledRelist();
    const scheduler = new RelistScheduler(50, relist);
    scheduler.schedule();
    scheduler.stop();
    scheduler.schedule();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(runs()).toBe(0);
  });
});
