/**
 * The CLI bundle `npm run build` makes (build/bundleCli.ts), run with plain `node` from a package
 * laid out as an installed one: `<root>/dist/cli/` holding the bundle, with package.json, prompts/
 * and node_modules beside dist/ (links to this checkout's). What it must still do that only a
 * bundle can break: read its version and prompts by relative path from a chunk, load the chunks
 * of serve and run on demand, start the code runtime's worker from its own entry file, and resolve
 * the dependencies it leaves external (quickjs, sucrase, the tokenizer, re2js) at run time.
 */
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, realpath, rm, symlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleCli } from "../../build/bundleCli.js";
import { fixtureServerToml, writeConfig } from "../helpers/cliHarness.js";
import { runToEnd, type Ran } from "./runToEnd.js";

const REPO = path.resolve(fileURLToPath(new URL("../..", import.meta.url)));
const manifest = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string };

/** esbuild takes well under a second; a loaded machine gets room. */
const BUILD_TIMEOUT_MS = 120_000;

/** `node` running `args` in `cwd`, to its end. */
function run(args: readonly string[], cwd: string): Promise<Ran> {
  return runToEnd(process.execPath, args, { cwd });
}

describe("the CLI bundle, run with node", () => {
  let tmp: string;
  let bin: string;
  let config: string;
  let cacheDir: string;

  beforeAll(async () => {
    tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), "abridge-bundle-")));
    const root = path.join(tmp, "package");
    await mkdir(root);
    for (const name of ["package.json", "prompts", "node_modules"]) await symlink(path.join(REPO, name), path.join(root, name));
    const built = await bundleCli({ outdir: path.join(root, "dist", "cli") });
    bin = built.bin;
    cacheDir = path.join(tmp, "cache");
    config = await writeConfig(tmp, fixtureServerToml("echo", "echoServer.ts", ["--tools", "2"]));
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
  });

  it("writes the entry, the code worker and chunks into one folder, and nothing else", async () => {
    const files = await readdir(path.dirname(bin));
    expect(files).toContain("bin.js");
    expect(files).toContain("codeWorker.js");
    expect(files.filter((f) => !/^(bin|codeWorker|chunk-[A-Z0-9]+)\.js$/.test(f))).toEqual([]);
  });

  it("prints the package.json version", async () => {
    const ran = await run([bin, "--version"], tmp);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout.trim()).toBe(manifest.version);
  });

  it("serve answers initialize and tools/list over stdio with a real upstream", async () => {
    let stderr = "";
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bin, "serve", "--config", config, "--cache-dir", cacheDir, "--no-watch"],
      cwd: tmp,
      stderr: "pipe",
    });
    transport.stderr?.on("data", (b: Buffer) => (stderr += b.toString("utf8")));
    const client = new Client({ name: "bundle-test", version: "1.0.0" });
    try {
      await client.connect(transport);
      expect(client.getServerVersion()).toMatchObject({ name: "abridge", version: manifest.version });
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names, stderr).toEqual(expect.arrayContaining(["echo_echo", "get_schema"]));
      const answer = await client.callTool({ name: "echo_echo", arguments: { text: "through the bundle" } });
      expect(JSON.stringify(answer.content), stderr).toContain("through the bundle");
      // Arguments are checked against the tool's schema first: ajv, required at run time by the bundle.
      const refused = await client.callTool({ name: "echo_echo", arguments: { text: 5 } });
      expect(refused.isError, JSON.stringify(refused)).toBe(true);
      expect(JSON.stringify(refused.content)).toContain("text");
    } finally {
      await client.close();
    }
  });

  it("daemon start runs the daemon from the bundle's own bin.js, and daemon stop ends it", async () => {
    const stateDir = path.join(tmp, "state");
    const started = await run([bin, "daemon", "start", "--config", config, "--state-dir", stateDir], tmp);
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toMatch(/daemon started: pid \d+/);
    const stopped = await run([bin, "daemon", "stop", "--config", config, "--state-dir", stateDir], tmp);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stdout).toContain("stopped");
  });

  it("run -e executes a program in the code runtime's worker, calling the upstream", async () => {
    const plain = await run([bin, "run", "--config", config, "--cache-dir", cacheDir, "-e", "return 1"], tmp);
    expect(plain.code, plain.stderr).toBe(0);
    // The value, then a line of how many calls it made.
    expect(plain.stdout.split("\n")[0]).toBe("1");
    expect(plain.stdout).toContain("(0 calls");

    const calling = await run([bin, "run", "--config", config, "--cache-dir", cacheDir, "-e", 'return await echo.echo({ text: "from code" })'], tmp);
    expect(calling.code, calling.stderr).toBe(0);
    expect(calling.stdout).toContain("from code");
    expect(calling.stdout).toContain("(1 call");
  });
});
