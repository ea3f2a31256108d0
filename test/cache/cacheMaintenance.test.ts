import { existsSync } from "node:fs";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { clearCache, compactCache, verifyCache } from "../../src/cache/cacheMaintenance.js";
import { JsonlStore } from "../../src/cache/jsonlStore.js";
import { isAbridgeError } from "../../src/model/errors.js";
import { lineOf, makeEntry } from "../helpers/cacheEntries.js";
import { useTempDir } from "../helpers/tempDir.js";

const temp = useTempDir({ prefix: "abridge-maint-" });
let file: string;

beforeEach(async () => {
  file = join(temp.path, "summaries.jsonl");
});

const a1 = makeEntry("github", "a", "first a");
const a2 = { ...a1, summary: "second a", createdAt: "2026-11-22T00:00:00Z" };
const b = makeEntry("github", "b", "b", 1);
const c1 = makeEntry("slack", "c", "first c", 2);
const c2 = { ...c1, summary: "second c" };

async function lines(): Promise<string[]> {
  const text = await readFile(file, "utf8");
  return text === "" ? [] : text.trimEnd().split("\n");
}

async function leftoverTemps(): Promise<string[]> {
  return (await readdir(temp.path)).filter((name) => name !== "summaries.jsonl");
}

describe("verifyCache", () => {
  it("reports line counts, problems with their line numbers and reasons, and superseded lines", async () => {
    await writeFile(
      file,
      [lineOf(a1), "garbage\n", lineOf(b), `${JSON.stringify({ ...b, summarizer: "" })}\n`, "\n", lineOf(a2), lineOf(c1).slice(0, 30)].join(""),
    );
    const report = await verifyCache(file);
    expect(report).toMatchObject({ exists: true, lines: 6, valid: 3, liveKeys: 2, superseded: 1 });
    expect(report.invalid.map((problem) => problem.line)).toEqual([2, 4, 7]);
    expect(report.invalid[0]!.reason).toMatch(/^not JSON/);
    expect(report.invalid[1]!.reason).toMatch(/summarizer/);
    expect(report.invalid[2]!.reason).toMatch(/^torn last line/);
  });

  it("reports a missing file as empty", async () => {
    expect(await verifyCache(file)).toEqual({ exists: false, lines: 0, valid: 0, invalid: [], liveKeys: 0, superseded: 0 });
  });
});

describe("compactCache", () => {
  it("keeps only the newest line per key, in file order, and drops invalid lines", async () => {
    const unknownField = `${JSON.stringify({ ...b, addedByNewerVersion: { x: 1 } })}`;
    await writeFile(file, [lineOf(a1), lineOf(c1), "garbage\n", `${unknownField}\n`, lineOf(a2), lineOf(c2)].join(""));
    expect(await compactCache(file)).toEqual({ before: 6, after: 3 });
    // Newest lines are copied as written, so fields this version does not know survive.
    expect(await lines()).toEqual([unknownField, JSON.stringify(a2), JSON.stringify(c2)]);
    expect(await verifyCache(file)).toMatchObject({ lines: 3, valid: 3, invalid: [], superseded: 0 });
    expect(await leftoverTemps()).toEqual([]);
  });

  it("drops the entries keep() rejects", async () => {
    await writeFile(file, [lineOf(a1), lineOf(b), lineOf(c1)].join(""));
    expect(await compactCache(file, { keep: (entry) => entry.server !== "slack" })).toEqual({ before: 3, after: 2 });
    const store = await JsonlStore.open({ file });
    expect(store.servers()).toEqual(["github"]);
    await store.close();
  });

  it("is not disturbed by a temp file a crashed compaction left behind", async () => {
    await writeFile(file, [lineOf(a1), lineOf(a2)].join(""));
    const leftover = join(temp.path, `.summaries.jsonl.99999.deadbeef0000.tmp`);
    await writeFile(leftover, lineOf(b).slice(0, 25));
    const store = await JsonlStore.open({ file });
    expect(store.size).toBe(1);
    await store.close();
    expect(await compactCache(file)).toEqual({ before: 2, after: 1 });
    expect(await lines()).toEqual([JSON.stringify(a2)]);
    expect(await readFile(leftover, "utf8")).toBe(lineOf(b).slice(0, 25));
    expect(await leftoverTemps()).toEqual([".summaries.jsonl.99999.deadbeef0000.tmp"]);
  });

  it("replaces the file atomically: a store reading the old inode keeps working, and the mode is kept", async () => {
    await writeFile(file, [lineOf(a1), lineOf(a2)].join(""), { mode: 0o600 });
    const before = await stat(file);
    const store = await JsonlStore.open({ file });
    await compactCache(file);
    const after = await stat(file);
    expect(after.ino).not.toBe(before.ino);
    expect(after.mode & 0o777).toBe(0o600);
    await store.append(b);
    await store.close();
    expect(await lines()).toEqual([JSON.stringify(a2), JSON.stringify(b)]);
  });

  it("leaves a missing file missing", async () => {
    expect(await compactCache(file)).toEqual({ before: 0, after: 0 });
    expect(existsSync(file)).toBe(false);
  });

  it("fails with CACHE_IO when the file cannot be replaced", async () => {
    await writeFile(join(temp.path, "blocker"), "x");
    // Reading through a regular file finds nothing; a directory at the path cannot be read.
    expect(await compactCache(join(temp.path, "blocker", "summaries.jsonl"))).toEqual({ before: 0, after: 0 });
    const err = await compactCache(temp.path).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isAbridgeError(err, "CACHE_IO")).toBe(true);
  });
});

describe("clearCache", () => {
  it("removes every line", async () => {
    await writeFile(file, [lineOf(a1), lineOf(b), "garbage\n", lineOf(c1)].join(""));
    expect(await clearCache(file)).toEqual({ removed: 4 });
    expect(await readFile(file, "utf8")).toBe("");
    expect(await leftoverTemps()).toEqual([]);
    expect(await clearCache(file)).toEqual({ removed: 0 });
  });

  it("removes one server's lines and keeps everything else as it was", async () => {
    await writeFile(file, [lineOf(a1), lineOf(c1), "garbage\n", lineOf(a2), lineOf(c2), lineOf(b)].join(""));
    expect(await clearCache(file, { server: "github" })).toEqual({ removed: 3 });
    expect(await lines()).toEqual([JSON.stringify(c1), "garbage", JSON.stringify(c2)]);
    expect(await clearCache(file, { server: "github" })).toEqual({ removed: 0 });
    expect(await clearCache(file, { server: "slack" })).toEqual({ removed: 2 });
    expect(await lines()).toEqual(["garbage"]);
  });

  it("does not create a missing file", async () => {
    expect(await clearCache(file, { server: "github" })).toEqual({ removed: 0 });
    expect(await clearCache(file)).toEqual({ removed: 0 });
    expect(existsSync(file)).toBe(false);
  });

  it("is seen by a running store on reload", async () => {
    await writeFile(file, [lineOf(a1), lineOf(c1)].join(""));
    const store = await JsonlStore.open({ file });
    await clearCache(file, { server: "slack" });
    await store.reload();
    expect(store.servers()).toEqual(["github"]);
    await clearCache(file);
    await store.reload();
    expect(store.size).toBe(0);
    await store.close();
  });
});
