import { readFile } from "node:fs/promises";
import path from "node:path";
import { createRequire } from "node:module";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cacheEntrySchema } from "../../src/cache/cacheEntry.js";
import { fixtureServerToml, pidsWithMarker, runAbridge, tempDir, writeConfig } from "../helpers/cliHarness.js";

const require = createRequire(import.meta.url);
const everythingBin = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

async function cacheLines(dir: string): Promise<unknown[]> {
  const text = await readFile(path.join(dir, "cache", "summaries.jsonl"), "utf8");
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as unknown);
}

describe("abridge summarize warm (end to end)", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let marker: string;
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    marker = `warm-${path.basename(dir)}`;
  });
  afterEach(async () => {
    expect(pidsWithMarker(marker)).toEqual([]);
    await cleanup();
  });

  it("fills every summary from a fixture and a published server, and the second run makes no summarizer call", async () => {
    const config = await writeConfig(
      dir,
      [
        `cache_dir = "cache"`,
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "6", "--name", marker]),
        `[servers.everything]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(everythingBin)}, "stdio", ${JSON.stringify(marker)}]\n`,
      ].join("\n"),
    );
    const first = await runAbridge(["summarize", "warm", "--config", config], { cwd: dir });
    expect(first.stderr).not.toContain("failed");
    expect(first.code).toBe(0);
    const rows = first.stdout.split("\n");
    const echoRow = rows.find((l) => l.startsWith("echo "));
    const everythingRow = rows.find((l) => l.startsWith("everything "));
    // echo: 2 + 6 generated tools, all generated on the first run, none from the cache.
    expect(echoRow?.split(/\s+/).slice(1, 5)).toEqual(["8", "0", "8", "0"]);
    expect(everythingRow).toBeDefined();
    const everythingTools = Number(everythingRow!.split(/\s+/)[1]);
    expect(everythingTools).toBeGreaterThan(5);
    expect(first.stdout).toMatch(/^total\s+/m);
    expect(first.stdout).toContain("all modes (o200k tokens of the tool list)");

    const lines = await cacheLines(dir);
    expect(lines).toHaveLength(8 + everythingTools);
    for (const line of lines) expect(cacheEntrySchema.safeParse(line).success).toBe(true);

    const second = await runAbridge(["summarize", "warm", "--config", config], { cwd: dir });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("summarizer extractive@3: 0 requests, 0 generated");
    const echoAgain = second.stdout.split("\n").find((l) => l.startsWith("echo "));
    expect(echoAgain?.split(/\s+/).slice(1, 5)).toEqual(["8", "8", "0", "0"]);
    expect(await cacheLines(dir)).toHaveLength(lines.length);

    // --force redoes every tool; --server limits it to one.
    const forced = await runAbridge(["summarize", "warm", "--config", config, "--server", "echo", "--force"], { cwd: dir });
    expect(forced.code).toBe(0);
    expect(forced.stdout.split("\n").find((l) => l.startsWith("echo "))?.split(/\s+/).slice(1, 5)).toEqual(["8", "8", "8", "0"]);
    expect(forced.stdout).not.toMatch(/^everything /m);

    const status = await runAbridge(["summarize", "status", "--config", config, "--json"], { cwd: dir });
    expect(status.code).toBe(0);
    const report = JSON.parse(status.stdout) as { servers: { server: string; tools: number; cached: number; missing: number }[] };
    expect(report.servers.find((s) => s.server === "echo")).toMatchObject({ tools: 8, cached: 8, missing: 0 });
  });

  it("redoes entries of another summarizer with --stale", async () => {
    const config = await writeConfig(dir, [`cache_dir = "cache"`, fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--name", marker])].join("\n"));
    expect((await runAbridge(["summarize", "warm", "--config", config], { cwd: dir })).code).toBe(0);
    // Rewrite every entry as if another summarizer had made it.
    const file = path.join(dir, "cache", "summaries.jsonl");
    const written = await readFile(file, "utf8");
    const rewrite = (by: string): Promise<void> =>
      import("node:fs/promises").then((fs) => fs.writeFile(file, written.replaceAll('"summarizer":"extractive@3"', `"summarizer":"${by}"`)));
    await rewrite("openai:some-model");
    const plain = await runAbridge(["summarize", "warm", "--config", config], { cwd: dir });
    expect(plain.stdout).toContain("0 generated");
    const stale = await runAbridge(["summarize", "warm", "--config", config, "--stale"], { cwd: dir });
    expect(stale.code).toBe(0);
    expect(stale.stdout).toContain("3 generated");
    // An older version of the summarizer in use is redone without --stale.
    await rewrite("extractive@0");
    const older = await runAbridge(["summarize", "warm", "--config", config], { cwd: dir });
    expect(older.stdout).toContain("3 generated");
  });

  it("reports a server that fails to start, warms the others, and exits 1", async () => {
    const config = await writeConfig(
      dir,
      [
        `cache_dir = "cache"`,
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--name", marker]),
        `[servers.broken]\ncommand = "/nonexistent/abridge-no-such-binary"\nconnect_timeout_ms = 5000\n`,
      ].join("\n"),
    );
    const r = await runAbridge(["summarize", "warm", "--config", config], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^broken\s+0\s.*failed/m);
    expect(r.stdout).toMatch(/^echo\s+3\s+0\s+3\s+0/m);
  });

  it("rejects an unknown --server with a suggestion and exit 2", async () => {
    const config = await writeConfig(dir, fixtureServerToml("echo", "echoServer.ts", ["--name", marker]));
    const r = await runAbridge(["summarize", "warm", "--config", config, "--server", "ecko"], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no server "ecko"');
    expect(r.stderr).toContain('did you mean "echo"');
  });
});
