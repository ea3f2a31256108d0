/**
 * An upstream whose tool title, description and schema text carry terminal escape sequences (clear
 * screen, window title, hyperlink, bell, carriage return): none of it reaches the terminal through
 * `abridge tools`, and summaries are stored without it, so every later print is clean too.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CacheEntry } from "../../src/cache/cacheEntry.js";
import { stripControl } from "../../src/util/stripControl.js";
import { fixtureServerToml, pidsWithMarker, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe("terminal escapes from an upstream", () => {
  const temp = useTempDir({ prefix: "abridge-escapes-", marker: "escapes" });
  let config: string;
  beforeEach(async () => {
    config = await writeConfig(temp.path, `cache_dir = "cache"\n${fixtureServerToml("host", "misbehavingServer.ts", ["--escapes", "--marker", temp.marker])}`);
  });
  afterEach(async () => {
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("`abridge tools` prints the text without the control sequences", async () => {
    const run = await runAbridge(["tools", "--config", config], { cwd: temp.path });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("Fails on purpose. red");
    expect(run.stdout).toContain("host_fail");
    expect(run.stdout).not.toMatch(CONTROL);
    // Whole sequences go, not only their ESC: no "[2J" or "]0;pwned" left behind.
    expect(run.stdout).not.toContain("[2J");
    expect(run.stdout).not.toContain("pwned");
    expect(run.stderr).not.toMatch(CONTROL);
  });

  it("summaries are stored without control characters, and compact mode prints clean", async () => {
    const warm = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path });
    expect(warm.code).toBe(0);
    const entries = (await readFile(path.join(temp.path, "cache", "summaries.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as CacheEntry);
    const fail = entries.find((e) => e.tool === "fail");
    expect(fail?.summary).toContain("Fails on purpose.");
    for (const e of entries) {
      expect(e.summary).not.toMatch(CONTROL);
      for (const text of Object.values(e.params)) expect(text).not.toMatch(CONTROL);
    }
    const compact = await runAbridge(["tools", "--config", config, "--mode", "compact"], { cwd: temp.path });
    expect(compact.stdout).not.toMatch(CONTROL);
  });

  it("stripControl removes sequences whole and keeps tabs and line feeds", () => {
    expect(stripControl("a\u001b[31mred\u001b[0m\tb\nc")).toBe("ared\tb\nc");
    expect(stripControl("\u001b]0;title\u0007x\u001b]8;;http://e/\u001b\\link\u001b]8;;\u001b\\")).toBe("xlink");
    expect(stripControl("\r\u0008\u009b2Jz\u007f")).toBe("z");
    expect(stripControl("plain")).toBe("plain");
  });
});
