import { appendFile, readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("abridge cache and call commands", () => {
  const temp = useTempDir({ marker: "cc" });
  let config: string;
  beforeEach(async () => {
    config = await writeConfig(
      temp.path,
      [
        `cache_dir = "cache"`,
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "2", "--name", temp.marker]),
        fixtureServerToml("other", "echoServer.ts", ["--tools", "1", "--name", temp.marker]),
      ].join("\n"),
    );
  });
  afterEach(async () => {
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("verifies, compacts and clears the cache", async () => {
    expect((await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path })).code).toBe(0);
    const file = path.join(temp.path, "cache", "summaries.jsonl");
    const good = await runAbridge(["cache", "verify", "--config", config], { cwd: temp.path });
    expect(good.code).toBe(0);
    expect(good.stdout).toContain("lines 7, valid 7, invalid 0, live keys 7");

    // A garbage line and a torn last line: reported with line numbers, exit 1.
    await appendFile(file, 'garbage that is not json\n{"key":"echo:torn');
    const bad = await runAbridge(["cache", "verify", "--config", config], { cwd: temp.path });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain("invalid 2");
    expect(bad.stdout).toContain("line 8:");
    expect(bad.stdout).toContain("line 9:");

    const compacted = await runAbridge(["cache", "compact", "--config", config], { cwd: temp.path });
    expect(compacted.code).toBe(0);
    expect(compacted.stdout).toContain("9 lines -> 7");
    expect((await runAbridge(["cache", "verify", "--config", config], { cwd: temp.path })).code).toBe(0);

    const cleared = await runAbridge(["cache", "clear", "--server", "other", "--config", config], { cwd: temp.path });
    expect(cleared.stdout).toContain("removed 3 lines of server other");
    const left = (await readFile(file, "utf8")).trim().split("\n");
    expect(left).toHaveLength(4);
    expect(left.every((l) => l.includes('"server":"echo"'))).toBe(true);
    expect((await runAbridge(["cache", "clear", "--config", config], { cwd: temp.path })).stdout).toContain("removed 4 lines");
  });

  it("calls a tool and prints its result", async () => {
    const r = await runAbridge(["call", "echo", "echo", "--args", '{"text":"hello"}', "--config", config], { cwd: temp.path });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ content: [{ type: "text", text: "hello" }] });
  });

  it("refuses arguments that do not match the schema, with the schema, exit 1", async () => {
    const r = await runAbridge(["call", "echo", "add", "--args", '{"a":"one"}', "--config", config], { cwd: temp.path });
    expect(r.code).toBe(1);
    const result = JSON.parse(r.stdout) as { isError: boolean; content: { text: string }[] };
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toContain("not forwarded");
    expect(result.content[0]!.text).toContain('"required":["a","b"]');
  });

  it.each([
    [["call", "echo", "echo", "--args", "{bad"], "--args: expected a JSON object, got invalid JSON"],
    [["call", "echo", "echo", "--args", "[1]"], "--args: expected a JSON object, got an array"],
    [["call", "nope", "echo"], 'no server "nope"'],
  ])("rejects %j with exit 2", async (argv, message) => {
    const r = await runAbridge([...argv, "--config", config], { cwd: temp.path });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
  });

  it("reports an unknown tool with the closest names, exit 1", async () => {
    const r = await runAbridge(["call", "echo", "ecoh", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/TOOL_(NOT_FOUND|FILTERED)/);
  });

  it("lists servers and tools", async () => {
    const servers = await runAbridge(["servers", "--config", config, "--json"], { cwd: temp.path });
    expect(servers.code).toBe(0);
    const list = JSON.parse(servers.stdout) as { name: string; state: string; toolCount: number }[];
    expect(list.map((s) => [s.name, s.state, s.toolCount])).toEqual([
      ["echo", "ready", 4],
      ["other", "ready", 3],
    ]);
    const tools = await runAbridge(["tools", "--config", config, "--json"], { cwd: temp.path });
    const names = (JSON.parse(tools.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toEqual(["echo_add", "echo_echo", "echo_tool_001", "echo_tool_002", "other_add", "other_echo", "other_tool_001"]);
  });
});
