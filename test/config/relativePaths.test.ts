import { chmod, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/loadConfig.js";
import { pidsWithMarker, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { fixtureCommand } from "../helpers/processes.js";
import { useTempDir } from "../helpers/tempDir.js";

const DIR = path.resolve("/srv/abridge-conf");

function servers(toml: string) {
  const config = parseConfigText(toml, { file: path.join(DIR, "abridge.toml"), env: {}, homeDir: "/home/tester" });
  return Object.fromEntries(config.servers.map((s) => [s.name, s]));
}

describe("relative paths in server entries", () => {
  it("resolves a command given as a relative path against the config's folder; bare names stay PATH lookups", () => {
    const s = servers(
      [
        "[servers.dot]",
        'command = "./leak.sh"',
        "[servers.sub]",
        'command = "bin/server"',
        'cwd = "elsewhere"',
        "[servers.up]",
        'command = "../tools/server"',
        "[servers.home]",
        'command = "~/bin/server"',
        "[servers.abs]",
        'command = "/usr/bin/server"',
        "[servers.bare]",
        'command = "npx"',
        'args = ["-y", "./not-a-command.js"]',
        "[servers.web]",
        'url = "https://example.com/mcp"',
      ].join("\n"),
    );
    expect(s["dot"]?.command).toBe(path.join(DIR, "leak.sh"));
    // Against the config's folder, not against `cwd`: the file says where the command is.
    expect(s["sub"]?.command).toBe(path.join(DIR, "bin/server"));
    expect(s["up"]?.command).toBe(path.resolve(DIR, "../tools/server"));
    expect(s["home"]?.command).toBe("/home/tester/bin/server");
    expect(s["abs"]?.command).toBe("/usr/bin/server");
    expect(s["bare"]?.command).toBe("npx");
    // Arguments are the server's business: never rewritten.
    expect(s["bare"]?.args).toEqual(["-y", "./not-a-command.js"]);
  });

  it("makes the config's folder the default cwd of stdio servers, and leaves url and sandboxed servers without one", () => {
    const s = servers(
      [
        "[servers.a]",
        'command = "x"',
        "[servers.b]",
        'command = "x"',
        'cwd = "work"',
        "[servers.web]",
        'url = "https://example.com/mcp"',
        // bwrap mounts a fresh /tmp and hides folders: the config's folder may not exist inside.
        "[servers.boxed]",
        'command = "./x"',
        'sandbox = "bwrap"',
      ].join("\n"),
    );
    expect(s["a"]?.cwd).toBe(DIR);
    expect(s["b"]?.cwd).toBe(path.join(DIR, "work"));
    expect(s["web"]?.cwd).toBeUndefined();
    expect(s["boxed"]?.cwd).toBeUndefined();
    expect(s["boxed"]?.command).toBe(path.join(DIR, "x"));
  });
});

describe("a relative command through the CLI", () => {
  const temp = useTempDir({ marker: "rel" });
  afterEach(async () => {
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("starts ./server.sh from the config's folder whatever folder abridge runs in", async () => {
    const { command, args } = fixtureCommand("echoServer.ts", ["--tools", "1", "--name", temp.marker]);
    const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
    // The script checks its working directory too: a file next to the config must be at `./`.
    await writeFile(path.join(temp.path, "here.txt"), "");
    const script = path.join(temp.path, "server.sh");
    await writeFile(
      script,
      `${["#!/bin/sh", '[ -f ./here.txt ] || { echo "not started in the config folder" >&2; exit 3; }', `exec ${[command, ...args].map(quote).join(" ")}`].join("\n")}\n`,
    );
    await chmod(script, 0o755);
    const config = await writeConfig(temp.path, ['cache_dir = "cache"', "[servers.rel]", 'command = "./server.sh"'].join("\n"));

    const r = await runAbridge(["tools", "--config", config, "--json"], { cwd: "/" });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const names = (JSON.parse(r.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toEqual(["rel_add", "rel_echo", "rel_tool_001"]);
  });
});
