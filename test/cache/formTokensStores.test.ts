/**
 * An entry's `formTokens` (the token counts serving chooses forms by) survives both stores: what
 * one process writes, another reads back with the same counts; an entry written before the counts
 * were kept still loads, without them; and a malformed count is a bad line, reported like any other.
 */
import path from "node:path";
import { appendFile } from "node:fs/promises";
import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { CacheEntry } from "../../src/cache/cacheEntry.js";
import { JsonlStore } from "../../src/cache/jsonlStore.js";
import { RedisStore } from "../../src/cache/redisStore.js";
import type { SummaryStore } from "../../src/cache/summaryStore.js";
import { RENDERER_VERSION } from "../../src/catalog/renderTools.js";
import { lineOf, makeEntry } from "../helpers/cacheEntries.js";
import { startRedis, type RedisServer } from "../helpers/redisServer.js";
import { useTempDir } from "../helpers/tempDir.js";

/** An entry with counts of every rendering, as the summarizer writes it now. */
function counted(tool: string, seed: number): CacheEntry {
  return {
    ...makeEntry("github", tool, `Summary of ${tool}.`, seed),
    formTokens: { renderer: RENDERER_VERSION, full: 120, summary: 40, names: 30, types: 33, none: 25 },
  };
}

/** An entry as written before counts were kept. */
function older(tool: string, seed: number): CacheEntry {
  return makeEntry("github", tool, `Summary of ${tool}.`, seed);
}

const stores: SummaryStore[] = [];
afterEach(async () => {
  await Promise.allSettled(stores.splice(0).map((store) => store.close()));
});

describe("formTokens in the JSONL store", () => {
  const temp = useTempDir();

  async function open(file: string): Promise<JsonlStore> {
    const store = await JsonlStore.open({ file });
    stores.push(store);
    return store;
  }

  it("round-trips counted and older entries through the file", async () => {
    const file = path.join(temp.path, "summaries.jsonl");
    const writer = await open(file);
    const withCounts = counted("create_issue", 1);
    const without = older("list_issues", 2);
    await writer.append(withCounts);
    await writer.append(without);
    const reader = await open(file);
    expect(reader.get(withCounts.key)).toStrictEqual(withCounts);
    expect(reader.get(without.key)).toStrictEqual(without);
    expect(reader.get(without.key)?.formTokens).toBeUndefined();
  });

  it("skips a line whose counts are malformed and keeps the others", async () => {
    const file = path.join(temp.path, "bad.jsonl");
    const good = counted("create_issue", 1);
    const bad = { ...counted("list_issues", 2), formTokens: { renderer: RENDERER_VERSION, full: -1, summary: 1, names: 1, types: 1, none: 1 } };
    const noNone = { ...counted("get_issue", 3), formTokens: { renderer: RENDERER_VERSION, full: 1, summary: 1, names: 1, types: 1 } };
    await appendFile(file, `${lineOf(good)}${JSON.stringify(bad)}\n${JSON.stringify(noNone)}\n`);
    const store = await open(file);
    expect(store.get(good.key)).toStrictEqual(good);
    expect(store.get(bad.key)).toBeUndefined();
    expect(store.get(noNone.key)).toBeUndefined();
  });
});

describe("formTokens in the Redis store", () => {
  let redis: RedisServer;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = await redis.admin();
  });
  afterAll(async () => {
    admin.disconnect();
    await redis.destroy();
  });

  it("round-trips counted and older entries to a store opened later", async () => {
    await admin.flushall();
    const writer = await RedisStore.open({ url: redis.url() });
    stores.push(writer);
    const withCounts = counted("create_issue", 1);
    const without = older("list_issues", 2);
    await writer.append(withCounts);
    await writer.append(without);
    const reader = await RedisStore.open({ url: redis.url() });
    stores.push(reader);
    expect(reader.get(withCounts.key)).toStrictEqual(withCounts);
    expect(reader.get(without.key)).toStrictEqual(without);
    expect(reader.get(without.key)?.formTokens).toBeUndefined();
  });
});
