import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cacheEntrySchema } from "../../src/cache/cacheEntry.js";
import { fixtureServerToml, pidsWithMarker, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { startFakeOpenAi, type FakeOpenAi } from "../helpers/fakeOpenAi.js";
import { waitFor } from "../helpers/waitFor.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("abridge summarize warm interrupted", () => {
  const temp = useTempDir({ marker: "int" });
  let llm: FakeOpenAi;
  beforeEach(async () => {
    llm = await startFakeOpenAi();
  });
  afterEach(async () => {
    await llm.close();
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("keeps every summary written before Ctrl-C, exits 130, and the next run finishes the rest", async () => {
    // One tool per request; the first answers at once, the rest hang until the run is interrupted.
    llm.script({ kind: "ok" });
    llm.setDefault({ kind: "hang" });
    const config = await writeConfig(
      temp.path,
      [
        `cache_dir = "cache"`,
        `[summary]\nsummarizer = "openai"\nbase_url = ${JSON.stringify(llm.baseUrl)}\nbatch_size = 1\nmax_concurrency = 1\ntimeout_ms = 60000`,
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "3", "--name", temp.marker]),
      ].join("\n"),
    );
    const file = path.join(temp.path, "cache", "summaries.jsonl");
    const controller = new AbortController();
    const run = runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path, signal: controller.signal, isTTY: true });
    // Interrupt once the first summary is on disk (only reading the file tells: polled).
    await waitFor(async () => (await readFile(file, "utf8").catch(() => "")).includes("\n"), { what: "the first summary in the cache file" });
    controller.abort(new Error("SIGINT"));
    const interrupted = await run;
    expect(interrupted.code).toBe(130);
    expect(interrupted.stderr).toContain("interrupted; every summary written so far is kept");
    // The progress bar is drawn on a terminal.
    expect(interrupted.stderr).toMatch(/\r\[#+\.*\] 1\/5 echo/);
    const kept = (await readFile(file, "utf8")).split("\n").filter((l) => l !== "");
    expect(kept).toHaveLength(1);
    expect(cacheEntrySchema.safeParse(JSON.parse(kept[0]!)).success).toBe(true);

    llm.setDefault({ kind: "ok" });
    const resumed = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path });
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/^echo\s+5\s+1\s+4\s+0/m);
    const all = (await readFile(file, "utf8")).split("\n").filter((l) => l !== "");
    expect(all).toHaveLength(5);
  });
});
