/**
 * `summarize warm` on a full disk: every write of the cache fails with ENOSPC (the cache file is a
 * link to /dev/full, which is what a full disk answers). The run must not claim success: it says
 * how many summaries were not written and exits 1.
 */
import { mkdir, symlink } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("summarize warm on a full disk", () => {
  const temp = useTempDir({ prefix: "abridge-full-", marker: "full" });
  afterEach(async () => {
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("counts the summaries it could not write and exits 1", async () => {
    await mkdir(path.join(temp.path, "cache"));
    await symlink("/dev/full", path.join(temp.path, "cache", "summaries.jsonl"));
    const config = await writeConfig(temp.path, `cache_dir = "cache"\n${fixtureServerToml("echo", "echoServer.ts", ["--tools", "4", "--name", temp.marker])}`);
    const run = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path });
    expect(run.stderr).toMatch(/6 of 6 summaries could not be written to .*summaries\.jsonl.*\[CACHE_IO\]/);
    expect(run.code).toBe(1);
  });
});
