import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { appendFile, mkdir, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { compactCache } from "../../src/cache/cacheMaintenance.js";
import { JsonlStore } from "../../src/cache/jsonlStore.js";
import { MAX_LINE_BYTES } from "../../src/cache/readLines.js";
import { AbridgeError, isAbridgeError } from "../../src/model/errors.js";
import { createLogger } from "../../src/log/logger.js";
import { lineOf, makeEntry } from "../helpers/cacheEntries.js";
import { spawnAppendWorker } from "../helpers/spawnAppendWorker.js";
import { useTempDir } from "../helpers/tempDir.js";

const temp = useTempDir({ prefix: "abridge-store-" });
let file: string;
const stores: JsonlStore[] = [];
const children: ChildProcess[] = [];

beforeEach(async () => {
  file = join(temp.path, "summaries.jsonl");
});

afterEach(async () => {
  await Promise.allSettled(stores.splice(0).map((store) => store.close()));
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    }
  }
});

async function openStore(options: Partial<Parameters<typeof JsonlStore.open>[0]> = {}): Promise<JsonlStore> {
  const store = await JsonlStore.open({ file, ...options });
  stores.push(store);
  return store;
}

function captureLogger(): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  return { logger: createLogger({ level: "debug", sink: (line) => lines.push(line), json: true }), lines };
}

async function catchError(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

async function fileLines(path: string): Promise<string[]> {
  return (await readFile(path, "utf8")).split("\n");
}

describe("JsonlStore", () => {
  it("treats a missing file as empty and creates the directory on the first append", async () => {
    file = join(temp.path, "nested", "deeper", "summaries.jsonl");
    const store = await openStore();
    expect(store.size).toBe(0);
    expect(existsSync(join(temp.path, "nested"))).toBe(false);

    const entry = makeEntry("github", "create_issue", "Create a GitHub issue.");
    await store.append({ ...entry, params: undefined });
    expect(store.get(entry.key)).toEqual(entry);
    expect(await readFile(file, "utf8")).toBe(lineOf(entry));
    expect(store.stats()).toEqual({ entries: 0, liveKeys: 1, invalidLines: 0, appended: 1, writeErrors: 0 });

    const again = await openStore();
    expect(again.get(entry.key)).toEqual(entry);
    expect(again.has(entry.key)).toBe(true);
    expect(again.has("github:create_issue:0000000000000000")).toBe(false);
    expect(again.stats()).toEqual({ entries: 1, liveKeys: 1, invalidLines: 0, appended: 0, writeErrors: 0 });
  });

  it("round-trips many entries, indexes them by server, and serves the last line for a key", async () => {
    const store = await openStore();
    const first = makeEntry("github", "create_issue", "Old summary.");
    const second = { ...first, summary: "New summary.", createdAt: "2026-11-22T10:00:00Z" };
    const other = makeEntry("slack", "post_message", "Post to a channel.", 7);
    const params = { ...makeEntry("github", "list_issues", "List issues.", 3), params: { owner: "Repo owner" } };
    await Promise.all([store.append(first), store.append(other), store.append(params), store.append(second)]);
    expect(store.get(first.key)?.summary).toBe("New summary.");

    const reopened = await openStore();
    expect(reopened.size).toBe(3);
    expect(reopened.get(first.key)).toEqual(second);
    expect(reopened.get(params.key)?.params).toEqual({ owner: "Repo owner" });
    expect(
      reopened
        .forServer("github")
        .map((e) => e.tool)
        .sort(),
    ).toEqual(["create_issue", "list_issues"]);
    expect(reopened.forServer("slack")).toEqual([other]);
    expect(reopened.forServer("nobody")).toEqual([]);
    expect(reopened.servers().sort()).toEqual(["github", "slack"]);
    expect([...reopened.entries()]).toHaveLength(3);
    expect(reopened.stats()).toMatchObject({ entries: 4, liveKeys: 3, invalidLines: 0 });

    // The by-server view follows appends made after it was first asked for.
    const late = makeEntry("memory", "read_graph", "Read the graph.", 9);
    await reopened.append(late);
    expect(reopened.forServer("memory")).toEqual([late]);
    expect(reopened.servers().sort()).toEqual(["github", "memory", "slack"]);
  });

  it("skips a torn last line, counts it, and starts the next append on a fresh line", async () => {
    const whole = makeEntry("github", "a");
    const torn = lineOf(makeEntry("github", "b")).slice(0, 40);
    await writeFile(file, lineOf(whole) + torn);
    const { logger, lines } = captureLogger();
    const store = await openStore({ logger });
    expect(store.size).toBe(1);
    expect(store.stats().invalidLines).toBe(1);
    expect(lines.filter((line) => line.includes("skipped invalid lines"))).toHaveLength(1);
    expect(JSON.parse(lines.find((line) => line.includes("skipped invalid lines"))!)).toMatchObject({ count: 1, lines: [2] });

    const next = makeEntry("github", "c");
    await store.append(next);
    expect(await fileLines(file)).toEqual([lineOf(whole).trimEnd(), torn, lineOf(next).trimEnd(), ""]);

    // The torn fragment, now terminated, is not counted twice when this store reloads.
    await store.reload();
    expect(store.stats()).toMatchObject({ invalidLines: 1, liveKeys: 2 });

    const reopened = await openStore();
    expect(reopened.get(whole.key)).toEqual(whole);
    expect(reopened.get(next.key)).toEqual(next);
    expect(reopened.stats()).toMatchObject({ entries: 2, invalidLines: 1 });
  });

  it("parses a loaded line on first access, as zod would, and keeps that object", async () => {
    const plain = makeEntry("github", "plain");
    const { params: _params, ...noParams } = makeEntry("github", "no_params", "No params.", 1);
    const extra = makeEntry("slack", "extra", "Has an unknown field.", 2);
    const first = makeEntry("github", "twice", "First.", 3);
    const later = { ...first, summary: "Later." };
    await writeFile(
      file,
      [
        lineOf(plain),
        `${JSON.stringify(noParams)}\n`,
        `${JSON.stringify({ ...extra, note: "dropped" })}\n`,
        lineOf(first),
        lineOf(later),
        // A later line for the same key that is not a JSON object line is invalid at load and
        // does not hide the valid one before it.
        `${lineOf({ ...first, summary: "Torn." }).slice(0, 70)}\n`,
      ].join(""),
    );
    const store = await openStore();
    expect(store.stats()).toMatchObject({ entries: 5, liveKeys: 4, invalidLines: 1 });
    expect(store.get(plain.key)).toEqual(plain);
    expect(store.get(plain.key)).toBe(store.get(plain.key));
    expect(store.get(noParams.key)).toStrictEqual({ ...noParams, params: {} });
    expect(store.get(extra.key)).toStrictEqual(extra);
    expect(store.get(first.key)).toEqual(later);
    expect(store.get("github:missing:0000000000000000")).toBeUndefined();
    expect([...store.entries()].map((e) => e.key).sort()).toEqual([plain.key, noParams.key, extra.key, first.key].sort());

    // Once the by-server view exists, lines read by a reload join it.
    expect(store.forServer("slack")).toEqual([extra]);
    const remote = makeEntry("slack", "remote", "Appended by another process.", 4);
    await appendFile(file, lineOf(remote));
    await store.reload();
    expect(
      store
        .forServer("slack")
        .map((e) => e.key)
        .sort(),
    ).toEqual([extra.key, remote.key].sort());
    expect(store.get(remote.key)).toEqual(remote);
  });

  it("reports a line that passes the load check but fails validation when first read, and serves a miss", async () => {
    const good = makeEntry("github", "good");
    const first = makeEntry("github", "twice", "First.", 3);
    // The newest line of this key has the key-first layout but breaks the schema.
    const broken = { ...first, summary: "Broken.", tokensAfter: -1 };
    const notJson = `{"key":"github:nojson:${"0".repeat(16)}",oops}`;
    await writeFile(file, [lineOf(good), lineOf(first), lineOf(broken as typeof first), `${notJson}\n`].join(""));
    const { logger, lines } = captureLogger();
    const store = await openStore({ logger });
    expect(store.stats()).toMatchObject({ entries: 4, liveKeys: 3, invalidLines: 0 });

    expect(store.get(first.key)).toBeUndefined();
    expect(store.get(first.key)).toBeUndefined();
    expect(store.has(first.key)).toBe(false);
    expect(store.get(`github:nojson:${"0".repeat(16)}`)).toBeUndefined();
    expect(store.get(good.key)).toEqual(good);
    const reports = lines.filter((line) => line.includes("skipped an invalid line")).map((line) => JSON.parse(line) as Record<string, unknown>);
    // Once per line, naming the file, the line and why.
    expect(reports).toHaveLength(2);
    expect(reports[0]).toMatchObject({ level: "warn", cache: file, line: 3, key: first.key });
    expect(String(reports[0]!.reason)).toContain("tokensAfter");
    expect(reports[1]).toMatchObject({ line: 4, cache: file });
    expect(String(reports[1]!.reason)).toContain("not JSON");
    expect(store.stats()).toMatchObject({ entries: 2, liveKeys: 1, invalidLines: 2 });
    expect([...store.entries()]).toEqual([good]);

    // A valid line appended later for that key is served again.
    await appendFile(file, lineOf(first));
    await store.reload();
    expect(store.get(first.key)).toEqual(first);
  });

  it("loads lines of any key order and layout through the full parse", async () => {
    const keyLast = makeEntry("github", "key_last", "Key written last.", 1);
    const { key, ...rest } = keyLast;
    const spaced = makeEntry("github", "spaced", "Pretty printed.", 2);
    const quoted = makeEntry("github", 'say_"hi"', "A tool name with quotes: its key has escapes.", 3);
    const accented = makeEntry("gïthub", "créer", "A non-ASCII key.", 5);
    const replaced = makeEntry("slack", "post", "Old layout, replaced.", 4);
    const replacement = { ...replaced, summary: "New layout wins." };
    const { summary: replacedSummary, ...replacedRest } = replaced;
    await writeFile(
      file,
      [
        `${JSON.stringify({ ...rest, key })}\n`,
        ` ${JSON.stringify(spaced, null, 1).replaceAll("\n", " ")}\r\n`,
        lineOf(quoted),
        lineOf(accented),
        `${JSON.stringify({ summary: replacedSummary, ...replacedRest })}\n`,
        lineOf(replacement),
        `{"server":"github","key":${JSON.stringify(makeEntry("github", "bad").key)}}\n`,
      ].join(""),
    );
    const store = await openStore();
    // The old-layout line that fails the schema is known at load already.
    expect(store.stats()).toMatchObject({ entries: 6, liveKeys: 5, invalidLines: 1 });
    expect(store.get(keyLast.key)).toEqual(keyLast);
    expect(store.get(accented.key)).toEqual(accented);
    expect(store.get(spaced.key)).toEqual(spaced);
    expect(store.get(quoted.key)).toEqual(quoted);
    expect(store.get(replaced.key)).toEqual(replacement);

    // The writer puts the key first whatever order the entry came in.
    const appended = makeEntry("memory", "read_graph");
    const { key: appendedKey, ...appendedRest } = appended;
    await store.append({ ...appendedRest, key: appendedKey });
    const written = (await fileLines(file)).at(-2)!;
    expect(written.startsWith(`{"key":${JSON.stringify(appendedKey)},`)).toBe(true);
    expect(JSON.parse(written)).toEqual(appended);
  });

  it("reads entries from the file it indexed after another process compacted the path", async () => {
    const a = makeEntry("github", "a", "old");
    const aNewer = { ...a, summary: "newer" };
    const b = makeEntry("github", "b");
    const c = makeEntry("slack", "c");
    await writeFile(file, [lineOf(a), lineOf(b), lineOf(aNewer), lineOf(c)].join(""));
    const store = await openStore();
    // Compaction renames a new file over the path: every line moves to another offset.
    expect(await compactCache(file, { keep: (entry) => entry.key !== b.key })).toEqual({ before: 4, after: 2 });
    expect(store.get(aNewer.key)).toEqual(aNewer);
    expect(store.get(b.key)).toEqual(b);
    expect(store.get(c.key)).toEqual(c);
    expect(store.stats().invalidLines).toBe(0);

    await store.reload();
    expect(store.get(b.key)).toBeUndefined();
    expect(store.get(c.key)).toEqual(c);
    expect(store.stats()).toMatchObject({ entries: 2, liveKeys: 2, invalidLines: 0 });
  });

  it("follows a last line written one byte at a time until it is complete", async () => {
    const whole = makeEntry("github", "whole");
    const growing = makeEntry("github", "growing");
    const text = lineOf(growing);
    await writeFile(file, `${lineOf(whole)}${text.slice(0, 1)}`);
    const store = await openStore();
    expect(store.stats()).toMatchObject({ entries: 1, liveKeys: 1, invalidLines: 1 });
    expect(store.get(growing.key)).toBeUndefined();

    await appendFile(file, text.slice(1, 2));
    await store.reload();
    expect(store.stats()).toMatchObject({ entries: 1, liveKeys: 1, invalidLines: 1 });

    // Complete but for its newline: an entry.
    await appendFile(file, text.slice(2, -1));
    await store.reload();
    expect(store.get(growing.key)).toEqual(growing);
    expect(store.stats()).toMatchObject({ entries: 2, liveKeys: 2, invalidLines: 0 });

    await appendFile(file, "\n");
    await store.reload();
    expect(store.stats()).toMatchObject({ entries: 2, liveKeys: 2, invalidLines: 0 });
    const next = makeEntry("github", "next");
    await appendFile(file, lineOf(next));
    await store.reload();
    expect(store.get(next.key)).toEqual(next);
    expect(store.get(growing.key)).toEqual(growing);
    expect(store.stats()).toMatchObject({ entries: 3, liveKeys: 3, invalidLines: 0 });
  });

  it("accepts a complete last entry that only lacks its newline", async () => {
    const entry = makeEntry("memory", "read_graph");
    await writeFile(file, JSON.stringify(entry));
    const store = await openStore();
    expect(store.get(entry.key)).toEqual(entry);
    const next = makeEntry("memory", "search_nodes");
    await store.append(next);
    expect(await readFile(file, "utf8")).toBe(lineOf(entry) + lineOf(next));
    await store.reload();
    expect(store.stats()).toMatchObject({ entries: 2, liveKeys: 2, invalidLines: 0 });
  });

  it("skips garbage, schema failures, mismatched keys and oversized lines, and logs them once", async () => {
    const good = makeEntry("github", "good");
    const { hash: _hash, ...noHash } = makeEntry("github", "no_hash");
    const lines = [
      lineOf(good),
      "not json at all\n",
      "\n",
      "   \n",
      `${JSON.stringify(noHash)}\n`,
      `${JSON.stringify({ ...makeEntry("github", "bad_tokens"), tokensAfter: -1 })}\n`,
      `${JSON.stringify({ ...makeEntry("github", "wrong_key"), key: "github:other:0000000000000000" })}\n`,
      "[1,2,3]\n",
      `{"key":"${"x".repeat(MAX_LINE_BYTES)}"}\n`,
      '{"truncated": \n',
      lineOf(makeEntry("slack", "good")),
    ];
    await writeFile(file, lines.join(""));
    const { logger, lines: logged } = captureLogger();
    const store = await openStore({ logger });
    // Lines that are not JSON object lines with a readable key are invalid at load; the three
    // key-first lines that break the schema or their key are found when first read.
    expect(store.size).toBe(5);
    expect(store.stats()).toMatchObject({ entries: 5, invalidLines: 4 });
    const warnings = logged.filter((line) => line.includes("skipped invalid lines"));
    expect(warnings).toHaveLength(1);
    // Physical line numbers (blank lines 3 and 4 are skipped silently).
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: "warn", count: 4, lines: [2, 8, 9, 10] });

    expect(store.get(good.key)).toEqual(good);
    expect([...store.entries()].map((entry) => entry.tool).sort()).toEqual(["good", "good"]);
    expect(store.size).toBe(2);
    expect(store.stats()).toMatchObject({ entries: 2, invalidLines: 7 });
    const lazy = logged.filter((line) => line.includes("skipped an invalid line")).map((line) => JSON.parse(line) as { line: number });
    expect(lazy.map((report) => report.line)).toEqual([5, 6, 7]);
  });

  it("rejects an invalid entry on append without serving or writing it", async () => {
    const store = await openStore();
    const bad = { ...makeEntry("github", "x"), hash: "NOT-A-HASH" };
    const err = await catchError(store.append(bad));
    expect(isAbridgeError(err, "INPUT_INVALID")).toBe(true);
    const mismatched = { ...makeEntry("github", "x"), key: "github:y:0000000000000000" };
    expect(isAbridgeError(await catchError(store.append(mismatched)), "INPUT_INVALID")).toBe(true);
    const huge = makeEntry("github", "huge", "y".repeat(MAX_LINE_BYTES));
    expect(isAbridgeError(await catchError(store.append(huge)), "INPUT_INVALID")).toBe(true);
    expect(store.size).toBe(0);
    expect(existsSync(file)).toBe(false);
  });

  it("never interleaves or loses lines when two processes append at once", async () => {
    const count = 3000;
    const workers = [spawnAppendWorker(file, "alpha", count), spawnAppendWorker(file, "beta", count)];
    children.push(...workers.map((worker) => worker.child));
    await Promise.all(workers.map((worker) => worker.ready));
    for (const worker of workers) worker.go();
    await Promise.all(workers.map((worker) => worker.done));

    const lines = await fileLines(file);
    expect(lines.pop()).toBe("");
    expect(lines).toHaveLength(2 * count);
    const keys = new Set<string>();
    for (const line of lines) {
      const entry = JSON.parse(line) as { key: string };
      keys.add(entry.key);
    }
    expect(keys.size).toBe(2 * count);

    const store = await openStore();
    expect(store.stats()).toMatchObject({ entries: 2 * count, liveKeys: 2 * count, invalidLines: 0 });
    expect(store.forServer("alpha")).toHaveLength(count);
    expect(store.forServer("beta")).toHaveLength(count);
  });

  it("reload picks up lines another process appended", async () => {
    const mine = makeEntry("local", "mine");
    const store = await openStore();
    await store.append(mine);

    const worker = spawnAppendWorker(file, "remote", 25);
    children.push(worker.child);
    await worker.ready;
    worker.go();
    await worker.done;

    expect(store.forServer("remote")).toHaveLength(0);
    await store.reload();
    expect(store.forServer("remote")).toHaveLength(25);
    expect(store.get(mine.key)).toEqual(mine);
    expect(store.stats()).toMatchObject({ entries: 26, liveKeys: 26, appended: 1, invalidLines: 0 });

    // A second reload with nothing new changes nothing.
    await store.reload();
    expect(store.stats()).toMatchObject({ entries: 26, liveKeys: 26 });
  });

  it("follows a compaction by another writer: reload re-reads, append goes to the new file", async () => {
    const store = await openStore();
    const old = makeEntry("github", "a", "old");
    const newer = { ...old, summary: "newer" };
    await store.append(old);
    await store.append(newer);
    await store.append(makeEntry("github", "b"));
    expect(await compactCache(file)).toEqual({ before: 3, after: 2 });

    await store.reload();
    expect(store.stats()).toMatchObject({ entries: 2, liveKeys: 2 });
    expect(store.get(old.key)?.summary).toBe("newer");

    const later = makeEntry("github", "c");
    await store.append(later);
    const reopened = await openStore();
    expect(reopened.get(later.key)).toEqual(later);
    expect(reopened.size).toBe(3);
  });

  it("serves an entry from memory when the write fails, and leaves the file unharmed", async () => {
    const existing = makeEntry("github", "kept");
    await writeFile(file, lineOf(existing));
    const before = await readFile(file, "utf8");
    const { logger, lines } = captureLogger();
    const store = await openStore({ logger });

    // Move the directory away and put a regular file in its place: the store's path now runs
    // through a non-directory, so mkdir/open fail for real (chmod would not stop root).
    const moved = `${temp.path}-moved`;
    await rename(temp.path, moved);
    await writeFile(temp.path, "not a directory");
    try {
      const entry = makeEntry("github", "new_one");
      const err = await catchError(store.append(entry));
      expect(err).toBeInstanceOf(AbridgeError);
      expect(isAbridgeError(err, "CACHE_IO")).toBe(true);
      expect((err as AbridgeError).cause).toBeDefined();
      expect(store.get(entry.key)).toEqual(entry);
      expect(store.get(existing.key)).toEqual(existing);
      expect(store.stats()).toMatchObject({ writeErrors: 1, appended: 0, liveKeys: 2 });
      expect(lines.filter((line) => line.includes("could not append"))).toHaveLength(1);
      expect(await readFile(join(moved, "summaries.jsonl"), "utf8")).toBe(before);
    } finally {
      await rm(temp.path, { force: true });
      await rename(moved, temp.path);
    }

    // With the directory back, the next append works and lands on a fresh line.
    const after = makeEntry("github", "after");
    await store.append(after);
    expect(await readFile(file, "utf8")).toBe(before + lineOf(after));
  });

  it("reports a full disk as a retryable CACHE_IO error", async () => {
    if (!existsSync("/dev/full")) throw new Error("this test needs /dev/full (Linux) to force ENOSPC");
    await symlink("/dev/full", file);
    const store = await openStore();
    const entry = makeEntry("github", "no_space");
    const err = await catchError(store.append(entry));
    expect(isAbridgeError(err, "CACHE_IO")).toBe(true);
    expect((err as AbridgeError).retryable).toBe(true);
    expect((err as AbridgeError).details).toMatchObject({ errno: "ENOSPC" });
    expect(store.get(entry.key)).toEqual(entry);
    expect(store.stats().writeErrors).toBe(1);
  });

  it("treats a path through a regular file as an empty store whose appends fail", async () => {
    await writeFile(join(temp.path, "blocker"), "x");
    file = join(temp.path, "blocker", "summaries.jsonl");
    const store = await openStore();
    expect(store.size).toBe(0);
    const entry = makeEntry("github", "x");
    expect(isAbridgeError(await catchError(store.append(entry)), "CACHE_IO")).toBe(true);
    expect(store.get(entry.key)).toEqual(entry);
    expect(await readFile(join(temp.path, "blocker"), "utf8")).toBe("x");
  });

  it("refuses appends when read-only or closed; close is idempotent", async () => {
    await writeFile(file, lineOf(makeEntry("github", "a")));
    const readOnly = await openStore({ readOnly: true });
    expect(readOnly.size).toBe(1);
    expect(isAbridgeError(await catchError(readOnly.append(makeEntry("github", "b"))), "CACHE_IO")).toBe(true);
    expect(readOnly.size).toBe(1);

    const store = await openStore();
    await store.append(makeEntry("github", "c"));
    const first = store.close();
    expect(store.close()).toBe(first);
    await first;
    expect(isAbridgeError(await catchError(store.append(makeEntry("github", "d"))), "CACHE_IO")).toBe(true);
    expect(isAbridgeError(await catchError(store.reload()), "CACHE_IO")).toBe(true);
    expect(store.size).toBe(2);
  });

  it("stops loading on abort with CANCELLED", async () => {
    await appendFile(file, lineOf(makeEntry("github", "a")));
    const controller = new AbortController();
    controller.abort();
    const err = await catchError(JsonlStore.open({ file, signal: controller.signal }));
    expect(isAbridgeError(err, "CANCELLED")).toBe(true);
  });

  it("fails loudly when the cache path exists but cannot be read as a file", async () => {
    await mkdir(file);
    const err = await catchError(JsonlStore.open({ file }));
    expect(isAbridgeError(err, "CACHE_IO")).toBe(true);
  });
});
