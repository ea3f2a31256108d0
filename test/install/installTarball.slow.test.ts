/**
 * abridge installed the way users install a CLI: `npm pack` (its prepack builds dist/), then
 * `npm i -g` of the tarball into a prefix of its own, run from a folder outside the checkout with
 * HOME and the XDG folders in temp dirs. Slow: a build, a pack and an install.
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForNoMarkedPids } from "../helpers/cliHarness.js";
import { killAll } from "../helpers/processes.js";
import { runToEnd, type Ran } from "./runToEnd.js";

const REPO = path.resolve(fileURLToPath(new URL("../..", import.meta.url)));
const manifest = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8")) as { name: string; version: string };
const memoryBin = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-memory/dist/index.js");

/** Build, pack and install; the registry is only asked for what the npm cache lacks. */
const SETUP_TIMEOUT_MS = 600_000;

/** `summarize warm`'s table row for `server`: [tools, hits, generated, failed]. */
function warmRow(stdout: string, server: string): number[] {
  const row = stdout.split("\n").find((line) => line.startsWith(`${server} `));
  expect(row, stdout).toBeDefined();
  return row!.trim().split(/\s+/).slice(1, 5).map(Number);
}

describe("the packed tarball, installed globally", () => {
  let tmp: string;
  let prefix: string;
  let bin: string;
  let installed: string;
  /** The folder the commands run in: outside the checkout, and left empty by them. */
  let cwd: string;
  let home: string;
  let cacheHome: string;
  let stateHome: string;
  let configHome: string;
  let config: string;
  let marker: string;
  const daemonPids: number[] = [];

  /** The environment a user's shell would give: no ABRIDGE_* variables, HOME and XDG_* in temp dirs. */
  function userEnv(overrides: Record<string, string> = {}): Record<string, string> {
    return {
      PATH: [path.join(prefix, "bin"), path.dirname(process.execPath), process.env.PATH ?? ""].join(path.delimiter),
      HOME: home,
      XDG_CACHE_HOME: cacheHome,
      XDG_STATE_HOME: stateHome,
      XDG_CONFIG_HOME: configHome,
      ...overrides,
    };
  }

  function abridge(args: readonly string[], env: Record<string, string> = userEnv()): Promise<Ran> {
    return runToEnd(bin, args, { cwd, env });
  }

  beforeAll(async () => {
    tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), "abridge-install-")));
    prefix = path.join(tmp, "prefix");
    cwd = path.join(tmp, "cwd");
    home = path.join(tmp, "home");
    cacheHome = path.join(tmp, "xdg-cache");
    stateHome = path.join(tmp, "xdg-state");
    configHome = path.join(tmp, "xdg-config");
    for (const dir of [cwd, home, cacheHome, stateHome, configHome]) await mkdir(dir);

    const packed = await runToEnd("npm", ["pack", "--pack-destination", tmp, "--json"], { cwd: REPO, env: process.env });
    expect(packed.code, packed.stderr).toBe(0);
    const tarball = path.join(tmp, `${manifest.name.replace(/^@/, "").replace("/", "-")}-${manifest.version}.tgz`);
    expect(existsSync(tarball), `${tarball} after npm pack:\n${packed.stdout}`).toBe(true);

    const install = await runToEnd(
      "npm",
      ["install", "--global", "--prefix", prefix, "--prefer-offline", "--no-audit", "--no-fund", "--loglevel", "error", tarball],
      { cwd: tmp, env: process.env },
    );
    expect(install.code, install.stderr).toBe(0);
    bin = path.join(prefix, "bin", "abridge");
    installed = path.join(prefix, "lib", "node_modules", ...manifest.name.split("/"));

    // A published server from this checkout's node_modules, started by absolute path: no network.
    // The marker in its command line finds it later, to show no upstream outlives a command.
    marker = `abridge-install-${path.basename(tmp)}`;
    config = path.join(tmp, "config", "memory.toml");
    const toml = [
      "startup_grace_ms = 30000",
      "[servers.memory]",
      `command = ${JSON.stringify(process.execPath)}`,
      `args = ${JSON.stringify([memoryBin, marker])}`,
      `env = { MEMORY_FILE_PATH = ${JSON.stringify(path.join(tmp, "memory.jsonl"))} }`,
      "",
    ].join("\n");
    await mkdir(path.dirname(config));
    await writeFile(config, toml);
    await mkdir(path.join(configHome, "abridge"));
    await writeFile(path.join(configHome, "abridge", "abridge.toml"), toml);
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    killAll(daemonPids);
    if (tmp !== undefined) {
      if (marker !== undefined) await waitForNoMarkedPids(marker);
      await rm(tmp, { recursive: true, force: true });
    }
  });

  it("ships the runtime files and no sources or tests", async () => {
    const top = await readdir(installed);
    expect(top).toEqual(expect.arrayContaining(["README.md", "dist", "docs", "examples", "node_modules", "package.json", "prompts"]));
    for (const unshipped of ["src", "test", "bench", "cache", "tsconfig.json", "vitest.config.ts"]) expect(top).not.toContain(unshipped);
    const shipped = JSON.parse(await readFile(path.join(installed, "package.json"), "utf8")) as { name: string; version: string };
    expect(shipped).toMatchObject({ name: manifest.name, version: manifest.version });
    expect(existsSync(path.join(installed, "prompts", "summarize-tool.md"))).toBe(true);
    expect(existsSync(path.join(installed, "examples", "abridge.toml"))).toBe(true);
    // The README links the pages of docs/: they ship with it.
    expect(existsSync(path.join(installed, "docs", "configuration.md"))).toBe(true);
    const dist = (await readdir(path.join(installed, "dist"), { recursive: true })).filter((f) => !f.endsWith(".map"));
    expect(dist).toContain(path.join("cli", "bin.js"));
    expect(dist).toContain("index.d.ts");
    expect(dist.filter((f) => /\.test\.|fixtures|\.ts$/.test(f) && !f.endsWith(".d.ts"))).toEqual([]);
  });

  it("loads every module of dist/ with only the production dependencies installed", async () => {
    // A module importing a dev dependency fails here: the global install has none of them.
    const script = [
      'import { readdirSync } from "node:fs";',
      'import { join } from "node:path";',
      'import { pathToFileURL } from "node:url";',
      `const dist = ${JSON.stringify(path.join(installed, "dist"))};`,
      // bin.js runs the CLI when imported; the other tests run it.
      'const files = readdirSync(dist, { recursive: true }).filter((f) => f.endsWith(".js") && f !== join("cli", "bin.js"));',
      "for (const file of files) await import(pathToFileURL(join(dist, file)).href);",
      "console.log(files.length);",
    ].join("\n");
    const loaded = await runToEnd(process.execPath, ["--input-type=module", "--eval", script], { cwd, env: userEnv() });
    expect(loaded.code, loaded.stderr).toBe(0);
    expect(Number(loaded.stdout.trim())).toBeGreaterThan(100);
  });

  it("prints the package.json version", async () => {
    const ran = await abridge(["--version"]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout.trim()).toBe(manifest.version);
  });

  it("summarize warm writes the cache into $XDG_CACHE_HOME/abridge, then reads it back", async () => {
    const first = await abridge(["summarize", "warm", "--config", config]);
    expect(first.code, first.stderr).toBe(0);
    const [tools, hits, generated, failed] = warmRow(first.stdout, "memory");
    expect(tools).toBeGreaterThan(0);
    expect([hits, generated, failed]).toEqual([0, tools, 0]);

    const cacheFile = path.join(cacheHome, "abridge", "summaries.jsonl");
    const lines = (await readFile(cacheFile, "utf8")).split("\n").filter((line) => line !== "");
    expect(lines).toHaveLength(tools!);
    for (const line of lines) expect(JSON.stringify(JSON.parse(line))).toMatch(/"memory:[a-z_]+:/);

    const second = await abridge(["summarize", "warm", "--config", config]);
    expect(second.code, second.stderr).toBe(0);
    expect(warmRow(second.stdout, "memory")).toEqual([tools, tools, 0, 0]);

    expect(await readdir(cwd)).toEqual([]);
    expect(await readdir(home)).toEqual([]);
    expect(existsSync(path.join(installed, "cache"))).toBe(false);
    expect(await waitForNoMarkedPids(marker)).toEqual([]);
  });

  it("serve answers initialize and tools/list over stdio", async () => {
    let stderr = "";
    const transport = new StdioClientTransport({ command: bin, args: ["serve", "--config", config], cwd, env: userEnv(), stderr: "pipe" });
    transport.stderr?.on("data", (b: Buffer) => (stderr += b.toString("utf8")));
    const client = new Client({ name: "install-test", version: "1.0.0" });
    try {
      await client.connect(transport);
      expect(client.getServerVersion()).toMatchObject({ name: "abridge", version: manifest.version });
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names, stderr).toContain("memory_create_entities");
      expect(names).toContain("get_schema");
    } finally {
      await client.close();
    }
    expect(await waitForNoMarkedPids(marker)).toEqual([]);
    expect(await readdir(cwd)).toEqual([]);
  });

  it("the daemon finds $XDG_CONFIG_HOME/abridge/abridge.toml and keeps its state in $XDG_STATE_HOME/abridge", async () => {
    const started = await abridge(["daemon", "start"]);
    expect(started.code, started.stderr).toBe(0);
    const pid = Number(/pid (\d+)/.exec(started.stdout)?.[1]);
    daemonPids.push(pid);
    const stateDir = path.join(stateHome, "abridge");
    expect(started.stdout).toContain(`state dir ${stateDir}`);
    const lock = JSON.parse(await readFile(path.join(stateDir, "abridge.lock"), "utf8")) as { pid: number; version: string };
    expect(lock).toMatchObject({ pid, version: manifest.version });

    const stopped = await abridge(["daemon", "stop"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(existsSync(path.join(stateDir, "abridge.lock"))).toBe(false);
    expect(await waitForNoMarkedPids(marker)).toEqual([]);
    expect(await readdir(cwd)).toEqual([]);
    expect(await readdir(home)).toEqual([]);
  });

  it("without XDG variables, keeps the cache under $HOME/.cache/abridge", async () => {
    const env = userEnv();
    delete env.XDG_CACHE_HOME;
    delete env.XDG_STATE_HOME;
    delete env.XDG_CONFIG_HOME;
    const ran = await abridge(["summarize", "warm", "--config", config], env);
    expect(ran.code, ran.stderr).toBe(0);
    const [tools, , generated] = warmRow(ran.stdout, "memory");
    expect(generated).toBe(tools);
    expect(existsSync(path.join(home, ".cache", "abridge", "summaries.jsonl"))).toBe(true);
    expect(await readdir(cwd)).toEqual([]);
  });
});
