/**
 * Shared set-up of the upstream tests: pools built here are closed after each test, and every
 * child pid they ever had must be gone afterwards.
 */
import { afterEach, expect } from "vitest";
import { exposesTool } from "../../src/policy/allowDeny.js";
import { UpstreamPool } from "../../src/upstream/upstreamPool.js";
import type { UpstreamPoolOptions } from "../../src/upstream/upstreamPool.js";
import { alivePids, killAll } from "../helpers/processes.js";
import { Watch } from "../helpers/waitFor.js";

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

/** Resolves when `predicate(pool)` holds, checked now and on every status change (a hang guard, not a timing check). */
export async function waitForStatus(
  pool: UpstreamPool,
  predicate: () => boolean,
  what = "the pool's servers to reach the state the test waits for",
): Promise<void> {
  const statuses = new Watch();
  const changed = (): void => statuses.changed();
  pool.on("statusChanged", changed);
  try {
    await statuses.until(predicate, { what, detail: () => `statuses: ${JSON.stringify(pool.servers().map((s) => [s.name, s.state]))}` });
  } finally {
    pool.off("statusChanged", changed);
  }
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
