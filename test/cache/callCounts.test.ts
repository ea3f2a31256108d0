import { existsSync } from "node:fs";
import { copyFile, mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CALL_COUNTS_FILE, CallCounts, callCountsFileFor } from "../../src/cache/callCounts.js";
import { createLogger } from "../../src/log/logger.js";
import { fixtureToml, startBridge } from "../policy/bridgeHarness.js";
import { tempDir } from "../helpers/cliHarness.js";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function dir(): Promise<string> {
  const made = await tempDir();
  cleanups.push(made.cleanup);
  return made.dir;
}

describe("CallCounts", () => {
  it("counts per server:tool, writes one file per burst after the delay, and reads it back", async () => {
    const file = path.join(await dir(), CALL_COUNTS_FILE);
    const counts = await CallCounts.open({ file, writeDelayMs: 60_000 });
    counts.increment("github", "create_issue");
    counts.increment("github", "create_issue");
    counts.increment("slack", "post");
    // Debounced: nothing is written until the delay ends or a flush.
    expect(existsSync(file)).toBe(false);
    await counts.close();
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual({ version: 1, counts: { "github:create_issue": 2, "slack:post": 1 } });
    // Atomic writes leave no temp file behind.
    expect(await readdir(path.dirname(file))).toEqual([CALL_COUNTS_FILE]);
    const again = await CallCounts.open({ file });
    expect(again.snapshot()).toEqual(
      new Map([
        ["github:create_issue", 2],
        ["slack:post", 1],
      ]),
    );
    again.increment("slack", "post");
    expect(again.snapshot().get("slack:post")).toBe(2);
    await again.close();
    // Closed: later calls are not counted.
    again.increment("slack", "post");
    expect(again.snapshot().get("slack:post")).toBe(2);
  });

  it("writes by itself once the delay has passed", async () => {
    const file = path.join(await dir(), CALL_COUNTS_FILE);
    const counts = await CallCounts.open({ file, writeDelayMs: 20 });
    counts.increment("a", "b");
    await expect.poll(() => existsSync(file), { timeout: 10_000 }).toBe(true);
    expect(JSON.parse(await readFile(file, "utf8")).counts).toEqual({ "a:b": 1 });
    await counts.close();
  });

  it("starts from none on a broken file, says so, and replaces it on the next write", async () => {
    const file = path.join(await dir(), CALL_COUNTS_FILE);
    for (const [content, says] of [
      ["{not json", /not JSON/],
      [JSON.stringify({ version: 1, counts: { "a:b": -1 } }), /invalid.*counts\.a:b/],
      [JSON.stringify({ version: 2, counts: {} }), /invalid.*version/],
    ] as const) {
      await writeFile(file, content);
      const lines: string[] = [];
      const counts = await CallCounts.open({ file, logger: createLogger({ level: "debug", sink: (l) => lines.push(l) }) });
      expect(counts.snapshot().size).toBe(0);
      expect(lines.join("\n")).toMatch(says);
      counts.increment("x", "y");
      await counts.close();
      expect(JSON.parse(await readFile(file, "utf8"))).toEqual({ version: 1, counts: { "x:y": 1 } });
    }
  });

  it("is kept beside the summary cache", () => {
    expect(callCountsFileFor("/c/abridge/summaries.jsonl")).toBe(path.join("/c/abridge", CALL_COUNTS_FILE));
  });
});

describe("a bridge counts forwarded calls", () => {
  it("writes calls.json beside its cache when it closes", async () => {
    const t = await startBridge(fixtureToml("echo", "echoServer.ts"));
    await t.bridge.callTool("echo_echo", { text: "hi" });
    await t.bridge.callTool("echo_echo", { text: "again" });
    // Invalid arguments are not forwarded, so not counted.
    await t.bridge.callTool("echo_add", { a: "x" });
    await t.bridge.close();
    const file = callCountsFileFor(t.bridge.cacheFile);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual({ version: 1, counts: { "echo:echo": 2 } });
  }, 60_000);
});

describe("mode auto in a bridge", () => {
  const names = (t: { bridge: { list(): { name: string }[] } }): string[] => t.bridge.list().map((x) => x.name);
  /** github's recorded tools (26) served by the corpus fixture: lazy plus a few fit 600 tokens, compact does not. */
  const github = (extra: string): string => {
    const command = process.execPath;
    const args = ["--import", TSX_LOADER, path.resolve("bench/fixtures/corpusServer.ts"), "--file", path.resolve("bench/corpus/servers/github.json")];
    return `mode = "auto"\ntoken_budget = 600\n${extra}\n[servers.github]\ncommand = ${JSON.stringify(command)}\nargs = ${JSON.stringify(args)}\n`;
  };

  it("keeps the list byte-stable between updates, then lists the most called tools", async () => {
    const steady = await startBridge(github('auto_update_minutes = 60\npin = ["github_get_issue"]'));
    const before = JSON.stringify(steady.bridge.list());
    expect(names(steady)).toContain("github_get_issue");
    expect(names(steady).slice(0, 3)).toEqual(["search_tools", "get_schema", "call_tool"]);
    expect(names(steady)).not.toContain("github_fork_repository");
    // auto answers meta-tools and validates arguments before forwarding, like lazy.
    const found = await steady.bridge.callTool("search_tools", { query: "fork_repository" });
    expect(JSON.stringify(found.content)).toContain("github_fork_repository(");
    const invalid = await steady.bridge.callTool("github_fork_repository", { owner: 1 });
    expect(invalid.isError).toBe(true);
    for (let i = 0; i < 3; i++) await steady.bridge.callTool("call_tool", { tool: "github_fork_repository", arguments: { owner: "o", repo: "r" } });
    expect(JSON.stringify(steady.bridge.list())).toBe(before);
    await steady.bridge.close();

    // The same counts, read back by a bridge whose window passes quickly: fork_repository is listed,
    // and the calls it then takes reach its list at the next update.
    const moving = await startBridge(github("auto_update_minutes = 0.001"), {
      prepare: async (dir) => {
        await mkdir(path.join(dir, "cache"), { recursive: true });
        await copyFile(callCountsFileFor(steady.bridge.cacheFile), path.join(dir, "cache", CALL_COUNTS_FILE));
      },
    });
    expect(names(moving)).toContain("github_fork_repository");
    expect(names(moving)).not.toContain("github_list_commits");
    for (let i = 0; i < 5; i++) await moving.bridge.callTool("github_list_commits", { owner: "o", repo: "r" });
    await expect.poll(() => names(moving), { timeout: 20_000 }).toContain("github_list_commits");
  }, 90_000);
});
