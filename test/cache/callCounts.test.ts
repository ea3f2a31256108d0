import { existsSync } from "node:fs";
import { readFile, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CALL_COUNTS_FILE, CallCounts, callCountsFileFor } from "../../src/cache/callCounts.js";
import { createLogger } from "../../src/log/logger.js";
import { fixtureToml, startBridge } from "../policy/bridgeHarness.js";
import { tempDir } from "../helpers/cliHarness.js";

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
    expect(again.snapshot()).toEqual(new Map([["github:create_issue", 2], ["slack:post", 1]]));
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
    const file = callCountsFileFor(t.bridge.store.file);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual({ version: 1, counts: { "echo:echo": 2 } });
  }, 60_000);
});
