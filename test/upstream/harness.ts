/**
 * Shared set-up of the upstream tests: pools built here are closed after each test, and every
 * child pid they ever had must be gone afterwards.
 */
import { afterEach, expect } from "vitest";
import { exposesTool } from "../../src/policy/allowDeny.js";
import { UpstreamPool } from "../../src/upstream/upstreamPool.js";
import type { UpstreamPoolOptions } from "../../src/upstream/upstreamPool.js";
import { alivePids, killAll } from "../helpers/processes.js";

export { memoryLogger, type MemoryLogger } from "../helpers/memoryLogger.js";

const pools: UpstreamPool[] = [];
const seenPids = new Set<number>();

/** Remembers the pool's current child pids, so afterEach can check they are gone. */
export function trackPids(pool: UpstreamPool): number[] {
  const pids = pool.pids();
  for (const pid of pids) seenPids.add(pid);
  return pids;
}

/** A pool with a fast restart backoff and the policy's allow/deny (as the bridge builds it), closed after the test. */
export function makePool(options: Partial<UpstreamPoolOptions> & Pick<UpstreamPoolOptions, "servers">): UpstreamPool {
  const pool = new UpstreamPool({
    separator: "_",
    exposes: exposesTool,
    backoff: { baseMs: 50, factor: 2, capMs: 1_000, resetAfterMs: 30_000 },
    ...options,
  });
  // Track pids as soon as children appear, including ones that crash later.
  pool.on("statusChanged", () => trackPids(pool));
  pools.push(pool);
  return pool;
}

/** Resolves when `predicate(pool)` holds, checked on every status change. */
export function waitForStatus(pool: UpstreamPool, predicate: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    if (predicate()) return resolve();
    const check = (): void => {
      if (predicate()) {
        pool.off("statusChanged", check);
        resolve();
      }
    };
    pool.on("statusChanged", check);
  });
}

afterEach(async () => {
  const closing = pools.splice(0);
  for (const pool of closing) trackPids(pool);
  await Promise.all(closing.map((pool) => pool.close()));
  const pids = [...seenPids];
  seenPids.clear();
  const alive = alivePids(pids);
  killAll(alive);
  expect(alive, "child processes left behind after close()").toEqual([]);
});
