import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ExitCode } from "../../src/cli/command.js";
import { isAbridgeError } from "../../src/model/errors.js";
import { assertNotNested, childMarkerEnv, PARENT_CONFIGS_ENV } from "../../src/upstream/mcp/nestedAbridge.js";
import { abridgeCommand, abridgeServerToml } from "../helpers/abridgeCommand.js";
import { fixtureServerToml, runAbridge, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { fixtureCommand } from "../helpers/processes.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

/**
 * A nested abridge answers `initialize` once its own servers are up: on a loaded machine a chain of
 * three node processes under tsx takes longer than the default 15 s. Generous, since nothing here
 * waits for it to pass: a refusal arrives at once.
 */
const SLOW_START = "connect_timeout_ms = 120000";

describe("the nesting marker", () => {
  it("refuses a config an abridge above serves, and passes its own on to children", () => {
    const env = childMarkerEnv("/etc/a.toml", {});
    expect(JSON.parse(env[PARENT_CONFIGS_ENV] ?? "[]")).toEqual(["/etc/a.toml"]);
    const deeper = childMarkerEnv("/etc/b.toml", env);
    expect(JSON.parse(deeper[PARENT_CONFIGS_ENV] ?? "[]")).toEqual(["/etc/a.toml", "/etc/b.toml"]);
    expect(() => assertNotNested("/etc/c.toml", deeper)).not.toThrow();
    let thrown: unknown;
    try {
      assertNotNested("/etc/a.toml", deeper);
    } catch (err) {
      thrown = err;
    }
    expect(isAbridgeError(thrown, "CONFIG_RECURSION")).toBe(true);
    // The built-in config of `render` comes from no file: nothing to compare.
    expect(() => assertNotNested("<built-in>", deeper)).not.toThrow();
    expect(childMarkerEnv("<built-in>", {})).toEqual({});
  });
});

describe("abridge among its own servers", () => {
  const temp = useTempDir();
  let marker: string;
  let session: ServeSession | undefined;
  beforeEach(async () => {
    marker = path.basename(temp.path);
  });
  afterEach(async () => {
    await session?.close();
    session = undefined;
    // Every process of these tests carries the temp dir's name: the configs live there.
    expect(await waitForNoMarkedPids(marker, 20_000)).toEqual([]);
  });

  /** A Claude-style mcp.json reused as abridge's config, still holding its `abridge` entry. */
  async function selfListingMcpJson(): Promise<string> {
    const file = path.join(temp.path, "claude_desktop_config.json");
    const abridge = abridgeCommand(["serve", "--config", file]);
    const echo = fixtureCommand("echoServer.ts", ["--tools", "0", "--name", marker]);
    await writeFile(
      file,
      JSON.stringify({
        // Far beyond the test's own timeout: the refusal must arrive without waiting for it.
        abridge: { cache_dir: "cache" },
        mcpServers: { abridge: { ...abridge, connect_timeout_ms: 600_000 }, echo },
      }),
    );
    return file;
  }

  it("abridge tools: the abridge entry is refused with a clear error, the other servers work", async () => {
    const config = await selfListingMcpJson();
    const r = await runAbridge(["tools", "--config", config], { cwd: temp.path });
    expect(r.stdout).toContain("echo_echo");
    expect(r.stderr).toContain(
      "abridge: server abridge failed to start: refused to start: it is abridge serving a config that an abridge above it serves already",
    );
    expect(r.stderr).toContain('remove the "abridge" entry');
    expect(r.code).toBe(ExitCode.FAILURE);
    const servers = await runAbridge(["servers", "--json", "--config", config], { cwd: temp.path });
    const status = (JSON.parse(servers.stdout) as { name: string; state: string; error?: { code: string } }[]).find((s) => s.name === "abridge");
    expect(status?.state).toBe("failed");
    expect(status?.error?.code).toBe("CONFIG_RECURSION");
  }, 90_000);

  it("abridge serve: the client gets the other servers' tools", async () => {
    const config = await selfListingMcpJson();
    session = await serveOverStdio(config, ["--mode", "full"]);
    const { tools } = await session.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["echo_add", "echo_echo"]);
    const result = (await session.client.callTool({ name: "abridge_anything", arguments: {} })) as { isError?: boolean; content: { text: string }[] };
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toContain("refused to start");
  }, 90_000);

  it("a loop through two configs is caught where it closes", async () => {
    const a = path.join(temp.path, "a.toml");
    const b = path.join(temp.path, "b.toml");
    await writeFile(a, `cache_dir = "cache-a"\n${abridgeServerToml("b", ["serve", "--config", b], SLOW_START)}`);
    // b lists only once its echo server is up, however long a busy machine takes to start it.
    await writeFile(
      b,
      `cache_dir = "cache-b"\nstartup_grace_ms = 60000\n${abridgeServerToml("a", ["serve", "--config", a], SLOW_START)}${fixtureServerToml("echo", "echoServer.ts", ["--tools", "0", "--name", marker])}`,
    );
    const r = await runAbridge(["tools", "--config", a], { cwd: temp.path });
    // a -> b -> a: the second a refuses; b serves its echo server and a lists it.
    expect(r.stdout).toContain("b_echo_echo");
    expect(r.code).toBe(ExitCode.OK);
  }, 150_000);

  it("abridge in front of abridge with another config works, and compact shows each parameter line once", async () => {
    const inner = await writeConfig(
      temp.path,
      `cache_dir = "inner-cache"\n${fixtureServerToml("everything", "echoServer.ts", ["--tools", "0", "--name", marker])}`,
    );
    const outer = path.join(temp.path, "outer.toml");
    await writeFile(outer, `cache_dir = "outer-cache"\n${abridgeServerToml("inner", ["serve", "--config", inner, "--mode", "compact"], SLOW_START)}`);
    const warm = await runAbridge(["summarize", "warm", "--config", outer], { cwd: temp.path });
    expect(warm.code).toBe(ExitCode.OK);
    const r = await runAbridge(["tools", "--mode", "compact", "--config", outer], { cwd: temp.path });
    expect(r.code).toBe(ExitCode.OK);
    expect(r.stdout).toContain("inner_everything_echo");
    // `tools` prints each name, then its description indented by four spaces.
    const lines = r.stdout.split("\n");
    const start = lines.indexOf("inner_everything_echo") + 1;
    const end = lines.findIndex((line, i) => i >= start && !line.startsWith("    "));
    const description = lines.slice(start, end).join("\n");
    // The summary keeps the inner list's `(text: string)`; the outer list adds no second one.
    expect(description.match(/\(text: string\)/g)).toHaveLength(1);
  }, 150_000);
});
