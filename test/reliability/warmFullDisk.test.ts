/**
 * `summarize warm` on a full disk: every write of the cache fails with ENOSPC (the cache file is a
 * link to /dev/full, which is what a full disk answers). The run must not claim success: it says
 * how many summaries were not written and exits 1.
 */
import { mkdir, symlink } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, runAbridge, tempDir, writeConfig } from "../helpers/cliHarness.js";

describe("summarize warm on a full disk", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let marker: string;
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir("abridge-full-"));
    marker = `full-${path.basename(dir)}`;
  });
  afterEach(async () => {
    expect(pidsWithMarker(marker)).toEqual([]);
    await cleanup();
  });

  it("counts the summaries it could not write and exits 1", async () => {
    await mkdir(path.join(dir, "cache"));
    await symlink("/dev/full", path.join(dir, "cache", "summaries.jsonl"));
    const config = await writeConfig(dir, `cache_dir = "cache"\n` + fixtureServerToml("echo", "echoServer.ts", ["--tools", "4", "--name", marker]));
    const run = await runAbridge(["summarize", "warm", "--config", config], { cwd: dir });
    expect(run.stderr).toMatch(/6 of 6 summaries could not be written to .*summaries\.jsonl.*\[CACHE_IO\]/);
    expect(run.code).toBe(1);
  });
});
