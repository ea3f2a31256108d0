/**
 * `summaries.jsonl` may be a symlink (a cache kept on another disk or in a dotfiles repository).
 * `cache compact` and `cache clear` write through the link: the file it points to is rewritten
 * and the link stays, instead of being replaced by a local file the real cache never sees.
 */
import { lstat, mkdir, readFile, readlink, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { lineOf, makeEntry } from "../helpers/cacheEntries.js";
import { runAbridge, tempDir } from "../helpers/cliHarness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function linkedCache(): Promise<{ cacheDir: string; link: string; target: string }> {
  const { dir, cleanup } = await tempDir("abridge-symlink-");
  cleanups.push(cleanup);
  const realDir = path.join(dir, "elsewhere");
  const cacheDir = path.join(dir, "cache");
  await mkdir(realDir);
  await mkdir(cacheDir);
  const target = path.join(realDir, "summaries.jsonl");
  // Three lines, one key superseded: compact keeps two.
  const lines = [
    makeEntry("s", "a", "First a.", 1),
    makeEntry("s", "b", "Only b.", 2),
    { ...makeEntry("s", "a", "Second a.", 1), createdAt: "2026-11-22T10:00:00Z" },
  ];
  await writeFile(target, lines.map(lineOf).join(""));
  const link = path.join(cacheDir, "summaries.jsonl");
  await symlink("../elsewhere/summaries.jsonl", link);
  return { cacheDir, link, target };
}

describe("a symlinked summaries.jsonl", () => {
  it("cache compact rewrites the target and keeps the link", async () => {
    const { cacheDir, link, target } = await linkedCache();
    const run = await runAbridge(["cache", "compact", "--cache-dir", cacheDir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("3 lines -> 2");
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readlink(link)).toBe("../elsewhere/summaries.jsonl");
    const kept = (await readFile(target, "utf8"))
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { summary: string }).summary);
    expect(kept.sort()).toEqual(["Only b.", "Second a."]);
  });

  it("cache clear --server empties the target and keeps the link", async () => {
    const { cacheDir, link, target } = await linkedCache();
    const run = await runAbridge(["cache", "clear", "--server", "s", "--cache-dir", cacheDir]);
    expect(run.code).toBe(0);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect((await readFile(target, "utf8")).trim()).toBe("");
  });
});
