import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { copyFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, runAbridge, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { fixturePath } from "../helpers/processes.js";
import { useTempDir } from "../helpers/tempDir.js";

const CORPUS = path.resolve("bench/corpus/servers");
const memoryBin = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-memory/dist/index.js");

/** The echo fixture's list with `--tools 5` (7 tools, served 3 a page), as its source defines it. */
const ECHO_TOOLS = [
  {
    name: "echo",
    title: "Echo",
    description: "Returns the text it is given.",
    inputSchema: { type: "object", properties: { text: { type: "string", description: "Text to echo" } }, required: ["text"] },
    annotations: { readOnlyHint: true },
    _meta: { "fixture/kind": "echo" },
    "x-vendor": { kept: true },
  },
  {
    name: "add",
    description: "Adds two numbers.",
    inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
    outputSchema: { type: "object", properties: { sum: { type: "number" } }, required: ["sum"] },
    execution: { taskSupport: "forbidden" },
  },
  ...[1, 2, 3, 4, 5].map((i) => ({
    name: `tool_00${i}`,
    description: `Generated tool number ${i}; returns its arguments.`,
    inputSchema: { type: "object", properties: { value: { type: "string" } } },
  })),
];

describe("abridge record", () => {
  const temp = useTempDir({ marker: "record" });
  afterEach(async () => {
    expect(await waitForNoMarkedPids(temp.marker)).toEqual([]);
  });

  it("follows nextCursor and writes every page's tools exactly as sent, with serverInfo and the package", async () => {
    const config = await writeConfig(temp.path, fixtureServerToml("echo", "echoServer.ts", ["--tools", "5", "--page-size", "3", "--name", temp.marker]));
    const r = await runAbridge(["record", "echo", "--config", config, "--package", "echo-fixture@1.0.0"], { cwd: temp.path });
    expect(r.code, r.stderr).toBe(0);
    const recorded = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(recorded).toEqual({ server: "echo", package: "echo-fixture@1.0.0", serverInfo: { name: temp.marker, version: "1.0.0" }, tools: ECHO_TOOLS });
    // Key order too: the file is the server's answer, not a re-arrangement of it.
    expect(JSON.stringify(recorded.tools)).toBe(JSON.stringify(ECHO_TOOLS));
  }, 60_000);

  it("keeps what the bridge would clean up (nulls) and ignores allow/deny: the raw answer", async () => {
    const config = await writeConfig(temp.path, fixtureServerToml("nulls", "nullFieldsServer.ts", [temp.marker], `deny = ["ping"]`));
    const r = await runAbridge(["record", "nulls", "--config", config], { cwd: temp.path });
    expect(r.code, r.stderr).toBe(0);
    const expected = JSON.parse(readFileSync(fixturePath("nullTools.json"), "utf8")) as { tools: unknown[] };
    expect((JSON.parse(r.stdout) as { tools: unknown[] }).tools).toEqual(expected.tools);
  }, 60_000);

  it("a recorded file serves the same tools as the live server it came from", async () => {
    const live = fixtureServerToml("echo", "echoServer.ts", ["--tools", "5", "--page-size", "3", "--name", temp.marker]);
    const liveConfig = await writeConfig(temp.path, live);
    const recorded = await runAbridge(["record", "echo", "--config", liveConfig], { cwd: temp.path });
    expect(recorded.code, recorded.stderr).toBe(0);
    await writeFile(path.join(temp.path, "echo.json"), recorded.stdout);
    const fromLive = await runAbridge(["tools", "--json", "--config", liveConfig, "--cache-dir", "cache"], { cwd: temp.path });
    const replayConfig = path.join(temp.path, "replay.toml");
    await writeFile(replayConfig, `[servers.echo]\nrecorded = "echo.json"\n`);
    const fromFile = await runAbridge(["tools", "--json", "--config", replayConfig, "--cache-dir", "cache"], { cwd: temp.path });
    expect(fromLive.code, fromLive.stderr).toBe(0);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(JSON.parse(fromFile.stdout)).toEqual(JSON.parse(fromLive.stdout));
  }, 60_000);

  it("reproduces the corpus file of a published server (memory, the version in the corpus)", async () => {
    const config = await writeConfig(
      temp.path,
      `[servers.memory]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(memoryBin)}, ${JSON.stringify(temp.marker)}]\nenv = { MEMORY_FILE_PATH = ${JSON.stringify(path.join(temp.path, "memory.jsonl"))} }\n`,
    );
    const r = await runAbridge(["record", "memory", "--config", config, "--package", "@modelcontextprotocol/server-memory@2026.8.31"], { cwd: temp.path });
    expect(r.code, r.stderr).toBe(0);
    const corpus = JSON.parse(readFileSync(path.join(CORPUS, "memory.json"), "utf8")) as { package: string; tools: unknown[] };
    const recorded = JSON.parse(r.stdout) as { package: string; tools: unknown[] };
    expect(recorded.package).toBe(corpus.package);
    expect(JSON.stringify(recorded.tools)).toBe(JSON.stringify(corpus.tools));
  }, 60_000);

  it("an unknown server is a usage error with a suggestion", async () => {
    const config = await writeConfig(temp.path, fixtureServerToml("echo", "echoServer.ts", [temp.marker]));
    const r = await runAbridge(["record", "ecoh", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain('no server "ecoh"');
    expect(r.stderr).toContain('did you mean "echo"?');
    expect(r.stderr).toContain("[USAGE]");
  });

  it("a server that does not start is exit 1 with its reason, and nothing on stdout", async () => {
    const config = await writeConfig(
      temp.path,
      `[servers.broken]\ncommand = ${JSON.stringify(path.join(temp.path, "no-such-server"))}\nargs = [${JSON.stringify(temp.marker)}]\nconnect_timeout_ms = 20000\n`,
    );
    const r = await runAbridge(["record", "broken", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("server broken failed to start");
    expect(r.stderr).toContain("[UPSTREAM_START_FAILED]");
  }, 60_000);

  it("a disabled server is refused rather than started", async () => {
    const config = await writeConfig(temp.path, fixtureServerToml("echo", "echoServer.ts", [temp.marker], "enabled = false"));
    const r = await runAbridge(["record", "echo", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("server echo is disabled");
  });
});

describe("abridge search", () => {
  const temp = useTempDir();
  let config: string;
  beforeEach(async () => {
    await copyFile(path.join(CORPUS, "filesystem.json"), path.join(temp.path, "filesystem.json"));
    await copyFile(path.join(CORPUS, "github.json"), path.join(temp.path, "github.json"));
    config = await writeConfig(temp.path, `cache_dir = "cache"\n[servers.fs]\nrecorded = "filesystem.json"\n[servers.gh]\nrecorded = "github.json"\n`);
  });

  it("prints a ranked table of the configured catalog", async () => {
    const r = await runAbridge(["search", "create an issue in a repository", "--limit", "3", "--config", config], { cwd: temp.path });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^#\s+tool\s+score\s+summary$/);
    expect(lines[1]).toMatch(/^-+( +-+){3}$/);
    expect(lines).toHaveLength(5);
    expect(lines[2]).toMatch(/^1\s+gh_create_issue\s+\d+\.\d\d\s+\S/);
  });

  it("--json gives the ranking with scores, best first, and honours --limit", async () => {
    const r = await runAbridge(["search", "read a file", "--limit", "4", "--json", "--config", config], { cwd: temp.path });
    expect(r.code, r.stderr).toBe(0);
    const results = JSON.parse(r.stdout) as { name: string; server: string; tool: string; score: number; signature: string }[];
    expect(results).toHaveLength(4);
    expect(results.every((x) => x.server === "fs" && x.tool.startsWith("read_"))).toBe(true);
    expect(results.map((x) => x.score)).toEqual([...results.map((x) => x.score)].sort((a, b) => b - a));
    expect(results[0]!.signature.startsWith(results[0]!.name)).toBe(true);
  });

  it("says so when nothing matches, and rejects a bad --limit", async () => {
    const none = await runAbridge(["search", "zzqx", "--config", config], { cwd: temp.path });
    expect(none.code).toBe(0);
    expect(none.stdout).toBe('No tool matches "zzqx".\n');
    const bad = await runAbridge(["search", "file", "--limit", "0", "--config", config], { cwd: temp.path });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--limit: expected an integer from 1 to 50");
  });
});
