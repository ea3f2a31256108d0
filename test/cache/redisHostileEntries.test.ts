/**
 * The Redis summary cache against entries written or published by someone who can reach Redis but
 * is no bridge: entries dated in the future (which would win "newest wins" for good), values of
 * any size, hundreds of invented entries, claims without an expiry. A real redis-server; what Redis
 * sent is read from its own counters (INFO), claim attempts from MONITOR.
 */
import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { CacheEntry } from "../../src/cache/cacheEntry.js";
import { MAX_CLOCK_SKEW_MS, MAX_ENTRY_BYTES } from "../../src/cache/entryLimits.js";
import { RedisStore, type RedisStoreOptions } from "../../src/cache/redisStore.js";
import { createLogger } from "../../src/log/logger.js";
import { ErrorCode, isAbridgeError, messageOf } from "../../src/model/errors.js";
import { ClaimGate } from "../../src/summarize/claimGate.js";
import type { SummarizeInput } from "../../src/summarize/types.js";
import { fakeHash, makeEntry } from "../helpers/cacheEntries.js";
import { startRedis, type RedisServer } from "../helpers/redisServer.js";
import { Watch } from "../helpers/waitFor.js";

const HASH = "abridge:summaries";
const CHANNEL = "abridge:landed:0";
const YEAR_9999 = "9999-12-31T23:59:59.000Z";

/** An ISO time `minutes` from now. */
function inMinutes(minutes: number): string {
  return new Date(Date.now() + minutes * 60_000).toISOString();
}

describe("RedisStore against hostile entries", () => {
  let redis: RedisServer;
  let admin: Redis;
  const stores: RedisStore[] = [];

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
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });

  async function open(options: Partial<RedisStoreOptions> = {}): Promise<RedisStore> {
    const store = await RedisStore.open({ url: redis.url(), ...options });
    stores.push(store);
    return store;
  }

  /** Keys of the entries a store is told of, and a way to wait for one. */
  function listen(store: RedisStore): { keys: string[]; until: (key: string) => Promise<void> } {
    const keys: string[] = [];
    const news = new Watch();
    store.onRemoteEntry((entry) => {
      keys.push(entry.key);
      news.changed();
    });
    return { keys, until: (key) => news.until(() => keys.includes(key), { what: `${key} to be heard` }) };
  }

  async function stored(key: string): Promise<CacheEntry | undefined> {
    const text = await admin.hget(HASH, key);
    return text === null ? undefined : (JSON.parse(text) as CacheEntry);
  }

  /** Bytes Redis has sent to its clients so far. */
  async function bytesSent(): Promise<number> {
    const info = await admin.info("stats");
    return Number(/total_net_output_bytes:(\d+)/.exec(info)?.[1]);
  }

  it("serves no entry dated past the clock-skew allowance, loaded or heard; one dated within it is served", async () => {
    const pinned = { ...makeEntry("echo", "echo", "Wipes disk.", 1), createdAt: YEAR_9999 };
    const skewed = { ...makeEntry("echo", "add", "Adds two numbers.", 2), createdAt: inMinutes(MAX_CLOCK_SKEW_MS / 60_000 - 2) };
    const notADate = { ...makeEntry("echo", "sub", "Subtracts.", 3), createdAt: "zzz" };
    await admin.hset(HASH, pinned.key, JSON.stringify(pinned), skewed.key, JSON.stringify(skewed), notADate.key, JSON.stringify(notADate));
    const store = await open();
    expect(store.get(pinned.key)).toBeUndefined();
    expect(store.get(notADate.key)).toBeUndefined();
    expect(store.get(skewed.key)?.summary).toBe("Adds two numbers.");
    expect(store.stats()).toMatchObject({ entries: 1, invalidLines: 2 });

    const heard = listen(store);
    const pinnedLater = { ...makeEntry("echo", "mul", "Formats the disk.", 4), createdAt: inMinutes(60) };
    const last = makeEntry("echo", "last", "Arrives last.", 5);
    await admin.publish(CHANNEL, JSON.stringify(pinnedLater));
    await admin.publish(CHANNEL, JSON.stringify(last));
    // The channel keeps order: once the last is heard, the one before it was judged.
    await heard.until(last.key);
    expect(heard.keys).toEqual([last.key]);
    expect(store.get(pinnedLater.key)).toBeUndefined();
  });

  it("dates what it writes no later than its clock, and a write replaces an entry dated past the allowance", async () => {
    const store = await open();
    const key = makeEntry("echo", "echo").key;
    await store.append({ ...makeEntry("echo", "echo", "Returns its text."), createdAt: YEAR_9999 });
    const written = await stored(key);
    expect(written?.summary).toBe("Returns its text.");
    expect(Date.parse(written!.createdAt)).toBeLessThanOrEqual(Date.now());
    expect(store.get(key)?.createdAt).toBe(written?.createdAt);

    await admin.hset(HASH, key, JSON.stringify({ ...makeEntry("echo", "echo", "Wipes disk."), createdAt: YEAR_9999 }));
    await store.append({ ...makeEntry("echo", "echo", "Echoes its text."), createdAt: new Date().toISOString() });
    expect((await stored(key))?.summary).toBe("Echoes its text.");
  });

  it("a forced write replaces a newer entry, an unforced one leaves it, and every bridge takes what Redis holds", async () => {
    const key = makeEntry("echo", "echo").key;
    const newer = { ...makeEntry("echo", "echo", "Wipes disk."), createdAt: inMinutes(2) };
    await admin.hset(HASH, key, JSON.stringify(newer));
    const reader = await open();
    expect(reader.get(key)?.summary).toBe("Wipes disk.");
    const heard = listen(reader);
    const writer = await open();

    await writer.append({ ...makeEntry("echo", "echo", "Returns its text."), createdAt: new Date().toISOString() });
    expect((await stored(key))?.summary).toBe("Wipes disk.");

    await writer.append({ ...makeEntry("echo", "echo", "Echoes its text back."), createdAt: new Date().toISOString() }, { force: true });
    expect((await stored(key))?.summary).toBe("Echoes its text back.");
    await heard.until(key);
    expect(reader.get(key)?.summary).toBe("Echoes its text back.");
    const later = await open();
    expect(later.get(key)?.summary).toBe("Echoes its text back.");
  });

  it("leaves a value over the entry bound in Redis, unsent, on load and on a claim's read; the rest load", async () => {
    const good = Array.from({ length: 50 }, (_, i) => makeEntry("echo", `tool_${i}`, `Does thing ${i}.`, i));
    for (const entry of good) await admin.hset(HASH, entry.key, JSON.stringify(entry));
    const huge = makeEntry("echo", "huge", "x".repeat(8 * 1024 * 1024), 99);
    await admin.hset(HASH, huge.key, JSON.stringify(huge));
    const lines: string[] = [];
    const logger = createLogger({ level: "debug", json: true, sink: (line) => lines.push(line) });

    const before = await bytesSent();
    const store = await open({ logger });
    expect(await bytesSent()).toBeLessThan(before + 1024 * 1024);
    expect(store.size).toBe(50);
    for (const entry of good) expect(store.get(entry.key)?.summary).toBe(entry.summary);
    expect(store.stats()).toMatchObject({ entries: 50, invalidLines: 1, oversized: 1 });
    const warnings = lines.filter((line) => line.includes(`entry over ${MAX_ENTRY_BYTES} bytes`));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ field: huge.key, bytes: JSON.stringify(huge).length });

    const beforeRead = await bytesSent();
    expect(await store.latest(huge.key)).toBeUndefined();
    expect(await bytesSent()).toBeLessThan(beforeRead + 64 * 1024);
    expect(store.stats().oversized).toBe(2);
    // Logged once a minute at most.
    expect(lines.filter((line) => line.includes(`entry over ${MAX_ENTRY_BYTES} bytes`))).toHaveLength(1);
  });

  it("loads past a value so large that Redis takes longer than a command's timeout to scan it", async () => {
    const good = makeEntry("echo", "good", "Does the good thing.", 1);
    await admin.hset(HASH, good.key, JSON.stringify(good));
    // HSCAN copies every value it visits inside Redis: 128 MiB take far longer than 50 ms.
    await admin.hset(HASH, makeEntry("echo", "huge", "", 2).key, Buffer.alloc(128 * 1024 * 1024, 0x78));
    const store = await open({ client: { commandTimeoutMs: 50 }, startWaitMs: 60_000 });
    expect(store.get(good.key)?.summary).toBe("Does the good thing.");
    expect(store.stats()).toMatchObject({ entries: 1, oversized: 1, loads: 1 });
  });

  it("skips and counts an entry over the bound heard on the channel, and refuses to write one", async () => {
    const store = await open();
    const heard = listen(store);
    const big = makeEntry("echo", "big", "y".repeat(MAX_ENTRY_BYTES), 1);
    const last = makeEntry("echo", "last", "Arrives last.", 2);
    await admin.publish(CHANNEL, JSON.stringify(big));
    await admin.publish(CHANNEL, JSON.stringify(last));
    await heard.until(last.key);
    expect(heard.keys).toEqual([last.key]);
    expect(store.get(big.key)).toBeUndefined();
    expect(store.stats().oversized).toBe(1);

    let refused: unknown;
    await store.append(big).catch((err: unknown) => (refused = err));
    expect(isAbridgeError(refused, ErrorCode.INPUT_INVALID)).toBe(true);
    expect(String(messageOf(refused))).toContain(`over the ${MAX_ENTRY_BYTES}-byte bound`);
    expect(await admin.hexists(HASH, big.key)).toBe(0);
    expect(store.get(big.key)).toBeUndefined();
  });

  it("keeps at most its bound of entries of tools it has not asked for; those it asks for are kept beyond it", async () => {
    const entries = Array.from({ length: 30 }, (_, i) => makeEntry("echo", `tool_${i}`, `Does thing ${i}.`, i));
    for (const entry of entries) await admin.hset(HASH, entry.key, JSON.stringify(entry));
    const store = await open({ memoryEntries: 10 });
    expect(store.size).toBe(10);
    expect(store.stats()).toMatchObject({ entries: 30, notKept: 20 });

    // A tool the bridge lists and memory left out: asking misses, and its claim's read brings it.
    const kept = new Set([...store.entries()].map((entry) => entry.key));
    const listed = entries.find((entry) => !kept.has(entry.key))!;
    expect(store.get(listed.key)).toBeUndefined();
    expect((await store.latest(listed.key))?.summary).toBe(listed.summary);
    expect(store.size).toBe(11);

    // Hundreds of invented entries on the channel: none kept past the bound; a listed tool's still is.
    const heard = listen(store);
    const mine = makeEntry("echo", "mine", "Mine.", 1000);
    expect(store.get(mine.key)).toBeUndefined();
    for (let i = 0; i < 300; i++) await admin.publish(CHANNEL, JSON.stringify(makeEntry("echo", `invented_${i}`, "Invented.", 2000 + i)));
    await admin.publish(CHANNEL, JSON.stringify(mine));
    await heard.until(mine.key);
    expect(store.get(mine.key)?.summary).toBe("Mine.");
    expect(store.size).toBe(12);
    expect(store.stats().notKept).toBe(320);
  });

  it("takes over a claim that has no expiry, and still waits for one that has", async () => {
    const store = await open({ leaseMs: 5_000 });
    const forever = makeEntry("echo", "forever").key;
    await admin.set(`abridge:claim:${forever}`, "left-by-someone");
    const claim = await store.claim(forever);
    expect(claim.granted).toBe(true);
    const ttl = await admin.pttl(`abridge:claim:${forever}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(5_000);
    expect(await admin.get(`abridge:claim:${forever}`)).not.toBe("left-by-someone");

    const held = makeEntry("echo", "held").key;
    await admin.set(`abridge:claim:${held}`, "another-host", "PX", 60_000);
    expect((await store.claim(held)).granted).toBe(false);
  });

  it("backs off between tries of a claim another host holds, and takes it once it is freed", async () => {
    const store = await open({ leaseMs: 8_000 });
    const key = `echo:waiting:${fakeHash(7)}`;
    const claimKey = `abridge:claim:${key}`;
    await admin.set(claimKey, "another-host", "PX", 60_000);
    const tries: number[] = [];
    const tried = new Watch();
    const watcher = await redis.admin();
    const monitor = await watcher.monitor();
    let gate: ClaimGate | undefined;
    try {
      monitor.on("monitor", (time: string, args: string[]) => {
        // The claim script's EVAL (its inner commands are listed too, as coming from Lua).
        if (args[0]?.toLowerCase() === "eval" && args[3] === claimKey && args[1]?.includes("PTTL")) {
          tries.push(Number(time) * 1000);
          tried.changed();
        }
      });
      let resumed = 0;
      const resumes = new Watch();
      gate = new ClaimGate({
        source: store,
        pollMs: 50,
        events: {
          landed: () => undefined,
          resume: () => {
            resumed += 1;
            resumes.changed();
          },
        },
      });
      const input: SummarizeInput = { key, server: "echo", tool: { name: "waiting", inputSchema: { type: "object" } } };
      gate.noteQueued(key);
      expect(await gate.acquire([input])).toEqual([]);
      expect(gate.parkedCount).toBe(1);
      await tried.until(() => tries.length >= 6, { what: "six tries of the claim" });
      const gaps = tries.slice(1).map((at, i) => at - tries[i]!);
      // 50 ms before the first retry, then each refusal doubles the wait (jitter keeps at least
      // half of it): the fifth wait is at least 400 ms where a fixed poll waits 50. Redis's own
      // clock times the tries (MONITOR).
      expect(gaps[4]).toBeGreaterThanOrEqual(390);

      await admin.del(claimKey);
      await resumes.until(() => resumed === 1, { what: "the job to run once the claim was freed" });
      expect(gate.parkedCount).toBe(0);
    } finally {
      gate?.close();
      monitor.disconnect();
      watcher.disconnect();
    }
  });
});
