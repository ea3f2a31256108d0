/**
 * `cache compact` while other processes append used to lose summaries (4-7% of 20,000 while
 * `summarize warm` ran): a line appended between the compaction's last read and its rename went
 * to the replaced file, and a writer that checked the path just before the rename wrote to the
 * old file too. Compaction now copies what arrived in the old file after the rename, and a writer
 * that finds the path replaced after its write writes the line again; real processes prove it.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { clearCache, compactCache } from "../../src/cache/cacheMaintenance.js";
import { JsonlStore } from "../../src/cache/jsonlStore.js";
import { makeEntry } from "../helpers/cacheEntries.js";
import { spawnAppendWorker, type AppendWorker } from "../helpers/spawnAppendWorker.js";
import { useTempDir } from "../helpers/tempDir.js";

const temp = useTempDir({ prefix: "abridge-race-" });

async function keysIn(file: string): Promise<Set<string>> {
  const store = await JsonlStore.open({ file, readOnly: true });
  try {
    return new Set([...store.entries()].map((e) => e.key));
  } finally {
    await store.close();
  }
}

/** Runs `maintain` over and over while `workers` append, until all of them are done (bounded). */
async function whileWriting(workers: AppendWorker[], maintain: () => Promise<unknown>): Promise<number> {
  await Promise.all(workers.map((w) => w.ready));
  let finished = false;
  const all = Promise.all(workers.map((w) => w.done)).finally(() => {
    finished = true;
  });
  for (const worker of workers) worker.go();
  let runs = 0;
  // Bounded: a worker that hangs ends the loop through the test timeout, not an endless loop.
  while (!finished && runs < 100_000) {
    await maintain();
    runs += 1;
  }
  await all;
  return runs;
}

describe("cache maintenance while other processes write", () => {
  it("compact loses no summary appended by three processes meanwhile", { timeout: 180_000 }, async () => {
    const file = path.join(temp.path, "summaries.jsonl");
    const count = 3000;
    const servers = ["alpha", "beta", "gamma"];
    const workers = servers.map((server) => spawnAppendWorker(file, server, count));
    const runs = await whileWriting(workers, () => compactCache(file));
    expect(runs).toBeGreaterThan(1);
    const keys = await keysIn(file);
    const tools = new Set([...keys].map((k) => k.split(":").slice(0, 2).join(":")));
    const missing = servers.flatMap((server) => Array.from({ length: count }, (_, i) => `${server}:tool_${i}`)).filter((tool) => !tools.has(tool));
    expect(missing, `${missing.length} summaries lost over ${runs} compactions`).toEqual([]);
    expect(keys.size).toBe(servers.length * count);
    // And a last compaction leaves one line per key.
    expect(await compactCache(file)).toMatchObject({ after: servers.length * count });
  });

  it("clear of one server keeps every line of the others appended meanwhile", { timeout: 180_000 }, async () => {
    const file = path.join(temp.path, "summaries.jsonl");
    const count = 3000;
    const workers = [spawnAppendWorker(file, "alpha", count), spawnAppendWorker(file, "beta", count)];
    // Each run first adds a line of "gone" (from this process), so every clear rewrites the file.
    const store = await JsonlStore.open({ file });
    let seed = 0;
    const runs = await whileWriting(workers, async () => {
      await store.append(makeEntry("gone", "tool", "to be cleared", seed++));
      await clearCache(file, { server: "gone" });
    });
    await store.close();
    const keys = await keysIn(file);
    expect([...keys].filter((k) => !k.startsWith("gone:")).length, `after ${runs} clears`).toBe(2 * count);
  });
});
