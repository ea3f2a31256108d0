/**
 * The CLI loads only the command it runs: `--version` loads no command module, `serve --help` loads
 * serve's and none of the daemon's, the bus's or their clients'. Proven in a child process that
 * records every module it resolves (a module resolve hook writing each URL to a file).
 */
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { COMMAND_ENTRIES, loadCommands } from "../../src/cli/commands/index.js";
import { abridgeCommand } from "../helpers/abridgeCommand.js";
import { fixtureServerToml, tempDir, writeConfig } from "../helpers/cliHarness.js";

const run = promisify(execFile);
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const SRC = `${path.resolve("src")}/`;

/**
 * Runs the CLI with `args` and returns the abridge source files it loaded, relative to src/, and
 * the packages it loaded from node_modules.
 */
async function loadedSources(args: string[]): Promise<{ stdout: string; files: string[]; packages: string[] }> {
  const { dir, cleanup } = await tempDir("abridge-lazy-");
  cleanups.push(cleanup);
  const log = path.join(dir, "loaded.txt");
  await writeFile(
    path.join(dir, "hooks.mjs"),
    'import { appendFileSync } from "node:fs";\n' +
      "export async function resolve(specifier, context, next) {\n" +
      "  const resolved = await next(specifier, context);\n" +
      "  appendFileSync(process.env.ABRIDGE_TEST_LOADED, `${resolved.url}\\n`);\n" +
      "  return resolved;\n" +
      "}\n",
  );
  await writeFile(path.join(dir, "register.mjs"), 'import { register } from "node:module";\nregister("./hooks.mjs", import.meta.url);\n');
  const { command, args: argv } = abridgeCommand(args);
  // The recording hook goes after tsx's, so it sees the .ts files tsx resolved.
  const withHook = [...argv.slice(0, 2), "--import", path.join(dir, "register.mjs"), ...argv.slice(2)];
  const { stdout } = await run(command, withHook, { env: { ...process.env, ABRIDGE_TEST_LOADED: log } });
  const urls = (await readFile(log, "utf8")).split("\n").filter((l) => l.startsWith("file://"));
  const paths = urls.map((u) => new URL(u).pathname);
  const files = [...new Set(paths.filter((p) => p.startsWith(SRC)).map((p) => p.slice(SRC.length)))].sort();
  const packages = [...new Set(paths.flatMap((p) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(p)?.[1] ?? []))].sort();
  return { stdout, files, packages };
}

describe("command modules load lazily", { timeout: 120_000 }, () => {
  it("--version loads no command module", async () => {
    const { stdout, files } = await loadedSources(["--version"]);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(files).toContain("cli/runCli.ts");
    expect(files.filter((f) => f.startsWith("cli/commands/") && f !== "cli/commands/index.ts")).toEqual([]);
    expect(files.filter((f) => f.startsWith("core/"))).toEqual([]);
  });

  it("serve --help loads serve and nothing of the daemon, the bus, their clients or the HTTP front end", async () => {
    const { stdout, files } = await loadedSources(["serve", "--help"]);
    expect(stdout).toContain("Usage: abridge serve");
    expect(files).toContain("cli/commands/serveCommand.ts");
    for (const other of ["cli/commands/daemonCommand.ts", "cli/commands/busCommand.ts", "cli/commands/cacheCommands.ts", "cli/commands/callCommand.ts"]) {
      expect(files).not.toContain(other);
    }
    expect(files.filter((f) => f.startsWith("daemon/") || f.startsWith("bus/") || f.startsWith("client/"))).toEqual([]);
    // The HTTP front end loads only for `serve --http`.
    expect(files).not.toContain("serve/httpServer.ts");
  });

  it("--help loads every command, for their summaries", async () => {
    const { stdout, files } = await loadedSources(["--help"]);
    expect(stdout).toContain("daemon status");
    expect(files).toEqual(expect.arrayContaining(["cli/commands/daemonCommand.ts", "cli/commands/busCommand.ts", "cli/commands/serveCommand.ts"]));
  });

  it("lists each command under the words its spec has", async () => {
    const specs = await loadCommands();
    expect(specs.map((s) => s.path.join(" "))).toEqual(COMMAND_ENTRIES.map((e) => e.path.join(" ")));
  });
});

describe("optional clients load only when the config asks for them", { timeout: 120_000 }, () => {
  it("a bridge on its cache file with the offline summarizer loads neither openai, ioredis nor the NATS client", async () => {
    const { dir, cleanup } = await tempDir("abridge-lazy-clients-");
    cleanups.push(cleanup);
    const config = await writeConfig(dir, ['cache_dir = "cache"', fixtureServerToml("echo", "echoServer.ts")].join("\n"));
    const { stdout, files, packages } = await loadedSources(["summarize", "warm", "--config", config]);
    // The bridge really ran: it listed the fixture's tools and summarized them.
    expect(stdout).toContain("echo");
    expect(files).toEqual(expect.arrayContaining(["core/bridge.ts", "core/summaryPipeline.ts", "summarize/createSummarizer.ts"]));
    expect(packages).toContain("@modelcontextprotocol/sdk");
    expect(packages.filter((p) => p === "openai" || p === "ioredis" || p.startsWith("@nats-io/"))).toEqual([]);
    expect(files).not.toContain("cache/redisStore.ts");
    expect(files).not.toContain("cache/redisMaintenance.ts");
  });
});
