/**
 * The JSONL summary cache against lines it did not write: dated in the future (they would win every
 * "newest wins" comparison for good) or too large for an entry.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CacheEntry } from "../../src/cache/cacheEntry.js";
import { MAX_ENTRY_BYTES } from "../../src/cache/entryLimits.js";
import { JsonlStore } from "../../src/cache/jsonlStore.js";
import { createLogger } from "../../src/log/logger.js";
import { ErrorCode, isAbridgeError } from "../../src/model/errors.js";
import { compactSummaryCache, importSummaryCache, verifySummaryCache } from "../../src/core/cacheAdmin.js";
import { lineOf, makeEntry } from "../helpers/cacheEntries.js";
import { useTempDir } from "../helpers/tempDir.js";

const YEAR_9999 = "9999-12-31T23:59:59.000Z";

const temp = useTempDir({ prefix: "abridge-hostile-" });
let file: string;
const stores: JsonlStore[] = [];

beforeEach(async () => {
  file = join(temp.path, "summaries.jsonl");
});

afterEach(async () => {
  await Promise.allSettled(stores.splice(0).map((store) => store.close()));
});

async function openStore(options: Partial<Parameters<typeof JsonlStore.open>[0]> = {}): Promise<JsonlStore> {
  const store = await JsonlStore.open({ file, ...options });
  stores.push(store);
  return store;
}

async function lines(): Promise<CacheEntry[]> {
  return (await readFile(file, "utf8"))
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as CacheEntry);
}

describe("JSONL summary cache against hostile lines", () => {
  it("serves no line dated past the clock-skew allowance, and reports it", async () => {
    const honest = makeEntry("echo", "echo", "Returns its text.");
    const pinned = { ...honest, summary: "Wipes disk.", createdAt: YEAR_9999 };
    const skewed = { ...makeEntry("echo", "add", "Adds two numbers.", 1), createdAt: new Date(Date.now() + 120_000).toISOString() };
    await writeFile(file, [lineOf(honest), lineOf(pinned), lineOf(skewed)].join(""));
    const logged: string[] = [];
    const store = await openStore({ logger: createLogger({ level: "debug", json: true, sink: (line) => logged.push(line) }) });
    expect(store.get(honest.key)).toBeUndefined();
    expect(store.get(skewed.key)?.summary).toBe("Adds two numbers.");
    expect(store.stats()).toMatchObject({ invalidLines: 1 });
    const warning = logged.map((line) => JSON.parse(line) as { msg: string; line?: number; reason?: string }).find((line) => line.line === 2);
    expect(warning?.reason).toContain("ahead of this host's clock");
  });

  it("dates what it appends no later than its clock, and refuses an entry over the bound", async () => {
    const store = await openStore();
    await store.append({ ...makeEntry("echo", "echo", "Returns its text."), createdAt: YEAR_9999 });
    const [written] = await lines();
    expect(Date.parse(written!.createdAt)).toBeLessThanOrEqual(Date.now());
    expect(store.get(written!.key)?.createdAt).toBe(written!.createdAt);

    const big = makeEntry("echo", "big", "y".repeat(MAX_ENTRY_BYTES), 2);
    let refused: unknown;
    await store.append(big).catch((err: unknown) => (refused = err));
    expect(isAbridgeError(refused, ErrorCode.INPUT_INVALID)).toBe(true);
    expect(store.get(big.key)).toBeUndefined();
    expect(await lines()).toHaveLength(1);
  });

  it("skips a line over the entry bound at load", async () => {
    const small = makeEntry("echo", "small", "Small.", 1);
    const big = makeEntry("echo", "big", "y".repeat(MAX_ENTRY_BYTES), 2);
    await writeFile(file, [lineOf(small), lineOf(big)].join(""));
    const store = await openStore();
    expect(store.get(big.key)).toBeUndefined();
    expect(store.get(small.key)?.summary).toBe("Small.");
    expect(store.stats()).toMatchObject({ liveKeys: 1, invalidLines: 1 });
  });

  it("verify counts a line dated past the allowance as invalid, and compact drops it", async () => {
    const honest = makeEntry("echo", "echo", "Returns its text.");
    const other = makeEntry("echo", "add", "Adds.", 1);
    await writeFile(file, [lineOf(other), lineOf({ ...honest, summary: "Wipes disk.", createdAt: YEAR_9999 })].join(""));
    const report = await verifySummaryCache(file);
    expect(report).toMatchObject({ lines: 2, valid: 1, liveKeys: 1 });
    expect(report.invalid).toEqual([{ line: 2, reason: expect.stringContaining("ahead of this host's clock") }]);
    expect(await compactSummaryCache(file)).toEqual({ before: 2, after: 1 });
    expect(await lines()).toEqual([other]);
  });

  it("import replaces an entry dated past the allowance: it is no newer than anything", async () => {
    const honest = makeEntry("echo", "echo", "Returns its text.");
    await writeFile(file, lineOf({ ...honest, summary: "Wipes disk.", createdAt: YEAR_9999 }));
    const source = join(temp.path, "export.jsonl");
    await writeFile(source, lineOf(honest));
    const report = await importSummaryCache(file, source);
    expect(report).toMatchObject({ read: 1, imported: 1, kept: 0 });
    const store = await openStore();
    expect(store.get(honest.key)?.summary).toBe("Returns its text.");
  });
});
