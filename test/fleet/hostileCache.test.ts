/**
 * A shared summary cache someone tampered with, end to end: a real redis-server, real bridges with
 * the echo fixture, the real `summarize warm` and `cache` commands.
 */
import path from "node:path";
import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import type { CacheEntry } from "../../src/cache/cacheEntry.js";
import { MAX_ENTRY_BYTES } from "../../src/cache/entryLimits.js";
import { runAbridge, writeConfig } from "../helpers/cliHarness.js";
import type { RedisServer } from "../helpers/redisServer.js";
import { fleetToml, openHost, useFleet } from "./fleetHarness.js";

const HASH = "abridge:summaries";

describe("fleet: a tampered shared summary cache", () => {
  let redis: RedisServer;
  let dir: string;
  let marker: string;
  useFleet("hostile", (setup) => ({ redis, dir, marker } = setup));

  /** Warms the echo fixture's two tools into database `db`; returns the config, an admin client and the echo tool's key. */
  async function warmed(db: number): Promise<{ config: string; admin: Redis; key: string; env: Record<string, string> }> {
    const config = await writeConfig(dir, fleetToml({ cacheUrl: redis.url(db), marker, tools: 0 }));
    const env = { ABRIDGE_STATE_DIR: path.join(dir, "state") };
    const warm = await runAbridge(["summarize", "warm", "--config", config], { cwd: dir, env });
    expect(warm.code, warm.stderr).toBe(0);
    const admin = await redis.admin(db);
    const key = (await admin.hkeys(HASH)).find((field) => field.startsWith("echo:echo:"));
    expect(key).toBeDefined();
    return { config, admin, key: key!, env };
  }

  async function entryOf(admin: Redis, key: string): Promise<CacheEntry> {
    return JSON.parse((await admin.hget(HASH, key)) ?? "null") as CacheEntry;
  }

  it("summarize warm --force replaces an entry however new its date; an entry dated past the allowance is served by no bridge", async () => {
    const { config, admin, key, env } = await warmed(11);
    try {
      const honest = await entryOf(admin, key);
      // Dated two minutes ahead: within the clock-skew allowance, so it counts as the newest.
      const ahead = { ...honest, summary: "Returns the text given.", createdAt: new Date(Date.now() + 120_000).toISOString() };
      await admin.hset(HASH, key, JSON.stringify(ahead));
      const plain = await runAbridge(["summarize", "warm", "--config", config], { cwd: dir, env });
      expect(plain.code).toBe(0);
      expect((await entryOf(admin, key)).summary).toBe("Returns the text given.");
      const forced = await runAbridge(["summarize", "warm", "--force", "--config", config], { cwd: dir, env });
      expect(forced.code, forced.stderr).toBe(0);
      const replaced = await entryOf(admin, key);
      expect(replaced.summary).toBe(honest.summary);
      expect(Date.parse(replaced.createdAt)).toBeLessThanOrEqual(Date.now());

      // Year 9999: invalid wherever it is read.
      await admin.hset(HASH, key, JSON.stringify({ ...honest, summary: "Wipes disk.", createdAt: "9999-12-31T23:59:59.000Z" }));
      const host = await openHost(fleetToml({ cacheUrl: redis.url(11), marker, tools: 0 }));
      await host.bridge.start(undefined, { queue: false });
      expect(host.bridge.stats().cache).toMatchObject({ entries: 1, invalidLines: 1 });
      const echo = host.bridge.list("summary").find((tool) => tool.name === "echo_echo");
      expect(echo?.description).not.toBe("Wipes disk.");
      expect(echo?.description).toBe("Returns the text it is given.");
    } finally {
      admin.disconnect();
    }
  });

  it("cache verify names entries dated past the allowance and entries over the size bound; compact removes them", async () => {
    const { config, admin, key, env } = await warmed(12);
    try {
      const honest = await entryOf(admin, key);
      await admin.hset(HASH, key, JSON.stringify({ ...honest, summary: "Wipes disk.", createdAt: "9999-12-31T23:59:59.000Z" }));
      const huge = { ...honest, key: `echo:huge:${honest.hash}`, tool: "huge", summary: "x".repeat(4 * 1024 * 1024) };
      await admin.hset(HASH, huge.key, JSON.stringify(huge));

      // A bridge serves the rest and shows what it skipped.
      const host = await openHost(fleetToml({ cacheUrl: redis.url(12), marker, tools: 0 }));
      await host.bridge.start(undefined, { queue: false });
      expect(host.bridge.stats().cache).toMatchObject({ entries: 1, invalidLines: 2, oversized: 1, notKept: 0 });

      const verify = await runAbridge(["cache", "verify", "--config", config], { cwd: dir, env });
      expect(verify.code).toBe(1);
      expect(verify.stdout).toContain("entries 3, valid 1, invalid 2");
      expect(verify.stdout).toContain(`field ${key}: createdAt 9999-12-31T23:59:59.000Z is more than 5 minutes ahead`);
      expect(verify.stdout).toContain(`field ${huge.key}: entry of ${JSON.stringify(huge).length} bytes, over the ${MAX_ENTRY_BYTES}-byte bound`);

      const compact = await runAbridge(["cache", "compact", "--config", config], { cwd: dir, env });
      expect(compact.code).toBe(0);
      expect(compact.stdout).toContain("3 entries -> 1");
      expect(await admin.hexists(HASH, key)).toBe(0);
      expect(await admin.hexists(HASH, huge.key)).toBe(0);
    } finally {
      admin.disconnect();
    }
  });
});
