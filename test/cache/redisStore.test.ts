import { readFile } from "node:fs/promises";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { CacheEntry } from "../../src/cache/cacheEntry.js";
import { RedisStore, type RedisStoreOptions } from "../../src/cache/redisStore.js";
import { createLogger, SecretSet } from "../../src/log/logger.js";
import { ErrorCode } from "../../src/model/errors.js";
import { makeEntry } from "../helpers/cacheEntries.js";
import { freePort, startRedis, type RedisServer } from "../helpers/redisServer.js";
import { Watch, waitFor } from "../helpers/waitFor.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("RedisStore", () => {
  let redis: RedisServer;
  const temp = useTempDir();
  const stores: RedisStore[] = [];
  let admin: Redis;

  beforeAll(async () => {
    redis = await startRedis();
    admin = await redis.admin();
  });
  afterAll(async () => {
    admin.disconnect();
    await redis.destroy();
  });
  beforeEach(async () => {
    await admin.flushall();
  });
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  async function open(options: Partial<RedisStoreOptions> = {}): Promise<RedisStore> {
    const store = await RedisStore.open({ url: redis.url(), ...options });
    stores.push(store);
    return store;
  }

  it("shares entries: a write reaches a running store through pub/sub and a new one through its load", async () => {
    const a = await open();
    const b = await open();
    // A store is listening once open() returns: what lands after it is heard, what landed before was loaded.
    expect(await admin.pubsub("NUMSUB", "abridge:landed:0")).toEqual(["abridge:landed:0", 2]);
    const heard: CacheEntry[] = [];
    const hearing = new Watch();
    b.onRemoteEntry((entry) => {
      heard.push(entry);
      hearing.changed();
    });
    const entry = makeEntry("github", "create_issue", "Creates an issue.");
    await a.append(entry);
    expect(a.get(entry.key)?.summary).toBe("Creates an issue.");
    await hearing.until(() => heard.length > 0, { what: "the entry to reach the other store" });
    expect(heard.map((e) => e.key)).toEqual([entry.key]);
    expect(b.get(entry.key)).toEqual(entry);

    const c = await open();
    expect(c.get(entry.key)).toEqual(entry);
    expect(c.stats()).toMatchObject({ entries: 1, liveKeys: 1, invalidLines: 0, connected: true, spooled: 0 });
    // One hash, field = key, value = the JSONL line.
    expect(JSON.parse((await admin.hget("abridge:summaries", entry.key)) ?? "null")).toEqual(entry);
  });

  it("skips and counts fields that are not valid entries", async () => {
    const good = makeEntry("s", "t", "Good.", 1);
    await admin.hset(
      "abridge:summaries",
      good.key,
      JSON.stringify(good),
      "s:broken:0000000000000000",
      "{not json",
      "s:other:0000000000000001",
      JSON.stringify(makeEntry("s", "x", "Mismatched key.", 2)),
    );
    const store = await open();
    expect(store.size).toBe(1);
    expect(store.stats()).toMatchObject({ entries: 1, invalidLines: 2 });
  });

  it("keeps the newest entry of a key: an older write replaces nothing, here or in Redis", async () => {
    const a = await open();
    const newer = { ...makeEntry("s", "t", "Newer."), createdAt: "2026-11-22T10:00:00Z" };
    const older = { ...makeEntry("s", "t", "Older."), createdAt: "2026-11-20T10:00:00Z" };
    await a.append(newer);
    await a.append(older);
    const b = await open();
    expect(b.get(newer.key)?.summary).toBe("Newer.");
  });

  it("claims a key for one holder at a time; renew keeps it, release frees it, expiry frees it", async () => {
    // A lease of a second: long enough that a loaded machine's late timers still renew it in time.
    const a = await open({ leaseMs: 1_000 });
    const b = await open({ leaseMs: 1_000 });
    const key = makeEntry("s", "t").key;
    const first = await a.claim(key);
    expect(first.granted).toBe(true);
    expect((await b.claim(key)).granted).toBe(false);
    if (!first.granted) throw new Error("unreachable");
    for (let i = 0; i < 4; i++) {
      // Fixed sleep, kept: proves the lease is NOT lost as time passes; 4 × 500 ms = two 1 s leases, renewed every half lease.
      await new Promise((r) => setTimeout(r, 500));
      expect(await first.lease.renew()).toBe(true);
    }
    expect((await b.claim(key)).granted).toBe(false);
    await first.lease.release();
    const second = await b.claim(key);
    expect(second.granted).toBe(true);
    // Left alone, the lease runs out and a renewal by the old holder fails.
    // Redis expires the key on its own clock; only asking it tells: polled.
    await waitFor(async () => (await admin.exists(`abridge:claim:${key}`)) === 0, { what: "the lease to expire" });
    if (!second.granted) throw new Error("unreachable");
    expect(await second.lease.renew()).toBe(false);
    const third = await a.claim(key);
    expect(third.granted).toBe(true);
    // A stale holder's release does not drop the lease another holds now.
    await second.lease.release();
    expect((await b.claim(key)).granted).toBe(false);
  });

  it("fails a malformed URL as a config error naming cache_url, without echoing it", async () => {
    await expect(RedisStore.open({ url: "http://user:hunter22@127.0.0.1:1/0" })).rejects.toMatchObject({
      code: ErrorCode.CONFIG_INVALID,
      message: expect.stringContaining("cache_url"),
    });
    await expect(RedisStore.open({ url: "redis://127.0.0.1:1/zero" })).rejects.toThrow(/cache_url: expected a database number/);
    await expect(RedisStore.open({ url: "redis://:hunter22@127.0.0.1:1/x" })).rejects.not.toThrow(/hunter22/);
  });

  it("logs refused credentials once as a config mistake, never the password, and still serves", async () => {
    const locked = await startRedis({ password: "right-horse-battery" });
    const lines: string[] = [];
    const logged = new Watch();
    const secrets = new SecretSet();
    secrets.add("wrong-horse-battery");
    const sink = (line: string): void => {
      lines.push(line);
      logged.changed();
    };
    const logger = createLogger({ level: "debug", sink, secrets });
    try {
      const store = await open({ url: `redis://:wrong-horse-battery@127.0.0.1:${locked.port}/0`, logger, startWaitMs: 5_000 });
      await logged.until(() => lines.some((l) => l.includes("refused the credentials")), { what: "the credentials error" });
      expect(store.location).toBe(`redis://:***@127.0.0.1:${locked.port}/0`);
      expect(lines.join("\n")).not.toContain("wrong-horse-battery");
      expect(lines.filter((l) => l.includes("refused the credentials"))).toHaveLength(1);
      expect(lines.find((l) => l.includes("refused the credentials"))).toContain(ErrorCode.CONFIG_INVALID);
      // Serving goes on: an entry is kept in memory (no spool here) and served.
      const entry = makeEntry("s", "t");
      await store.append(entry);
      expect(store.get(entry.key)).toEqual(entry);
      expect(store.stats()).toMatchObject({ connected: false, spooled: 1 });

      const right = await open({ url: `redis://:right-horse-battery@127.0.0.1:${locked.port}/0` });
      expect(right.stats().connected).toBe(true);
    } finally {
      await Promise.all(stores.splice(0).map((s) => s.close()));
      await locked.destroy();
    }
  });

  it("opens at once with Redis down, spools what it writes, and flushes and loads when Redis comes", async () => {
    const port = await freePort();
    const spoolFile = path.join(temp.path, "spool", "cache.jsonl");
    const lines: string[] = [];
    const logger = createLogger({ level: "info", sink: (line) => lines.push(line) });
    const store = await open({ url: `redis://127.0.0.1:${port}/0`, spoolFile, logger, client: { maxReconnectDelayMs: 200 } });
    expect(store.stats()).toMatchObject({ connected: false, liveKeys: 0 });
    expect(lines.filter((l) => l.includes("unreachable"))).toHaveLength(1);
    expect(lines.find((l) => l.includes("unreachable"))).toContain(ErrorCode.CACHE_UNAVAILABLE);

    const mine = makeEntry("s", "mine", "Written during the outage.", 1);
    await store.append(mine);
    expect(store.get(mine.key)).toEqual(mine);
    expect(store.stats().spooled).toBe(1);
    expect(await readFile(spoolFile, "utf8")).toContain(mine.key);
    // A claim during the outage is granted here: an outage must not stop summaries.
    expect((await store.claim(mine.key)).granted).toBe(true);

    const late = await startRedis({ port });
    try {
      const theirs = makeEntry("s", "theirs", "Already in Redis.", 2);
      const direct = new Redis({ host: "127.0.0.1", port, lazyConnect: true });
      await direct.connect();
      await direct.hset("abridge:summaries", theirs.key, JSON.stringify(theirs));
      const heard: string[] = [];
      const hearing = new Watch();
      store.onRemoteEntry((entry) => {
        heard.push(entry.key);
        hearing.changed();
      });
      expect(await store.flushed(15_000)).toBe(true);
      await hearing.until(() => heard.includes(theirs.key), { what: "the load after the connection came up" });
      expect(store.has(theirs.key)).toBe(true);
      expect(JSON.parse((await direct.hget("abridge:summaries", mine.key)) ?? "null")).toEqual(mine);
      expect(await readFile(spoolFile, "utf8")).toBe("");
      expect(lines.some((l) => l.includes("reachable again"))).toBe(true);
      direct.disconnect();
    } finally {
      await Promise.all(stores.splice(0).map((s) => s.close()));
      await late.destroy();
    }
  });

  it("flushes a spool left by an earlier run that ended during an outage", async () => {
    const port = await freePort();
    const spoolFile = path.join(temp.path, "spool.jsonl");
    const first = await RedisStore.open({ url: `redis://127.0.0.1:${port}/0`, spoolFile, startWaitMs: 500 });
    const entry = makeEntry("s", "t", "Kept across runs.");
    await first.append(entry);
    await first.close();
    expect(await readFile(spoolFile, "utf8")).toContain(entry.key);

    const late = await startRedis({ port });
    try {
      const second = await open({ url: `redis://127.0.0.1:${port}/0`, spoolFile });
      expect(second.get(entry.key)).toEqual(entry);
      expect(await second.flushed(15_000)).toBe(true);
      const reader = await open({ url: `redis://127.0.0.1:${port}/0` });
      expect(reader.get(entry.key)).toEqual(entry);
    } finally {
      await Promise.all(stores.splice(0).map((s) => s.close()));
      await late.destroy();
    }
  });

  it("spools a write Redis refuses over a live connection (out of memory) and writes it once Redis takes writes again", async () => {
    const store = await open({ retryFlushMs: 100 });
    await admin.config("SET", "maxmemory-policy", "noeviction");
    await admin.config("SET", "maxmemory", "1");
    const entry = makeEntry("s", "t", "Written while Redis was full.");
    try {
      await store.append(entry);
      expect(store.get(entry.key)).toEqual(entry);
      expect(store.stats()).toMatchObject({ connected: true, spooled: 1, writeErrors: 1 });
      expect(await admin.hexists("abridge:summaries", entry.key)).toBe(0);
    } finally {
      await admin.config("SET", "maxmemory", "0");
    }
    expect(await store.flushed(15_000)).toBe(true);
    expect(JSON.parse((await admin.hget("abridge:summaries", entry.key)) ?? "null")).toEqual(entry);
  });
});
