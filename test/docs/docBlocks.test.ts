/**
 * Every fenced block of the README and of docs/*.md that a reader can paste is executed here, as a reader would
 * run it, with what the project bundles (examples/abridge.toml and its published servers, the
 * CLI of this checkout as `abridge`, redis-server and nats-server). Each block carries a mark on
 * the line before it (see docBlocks.ts): `run NAME` names its runner below, `illustrative
 * (reason)` says why it cannot run here. A block with neither fails the first test, so a new
 * block cannot slip in untested.
 *
 * What a runner changes in a block is only what belongs to the reader's machine, each through
 * `substitute`, which fails when the text is not there: paths (/path/to/abridge, /home/me, /tmp
 * folders) become this checkout and temp folders, and fixed ports (4222, 6379, 8808) become free
 * ones, since other tests on this machine run at the same time.
 */
import { readFile, writeFile, mkdir, stat } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { Bridge, BusClient, loadConfig } from "../../src/index.js";
import { isPidAlive } from "../../src/daemon/wire/processInfo.js";
import { freePort, startNatsServer } from "../helpers/natsServer.js";
import {
  docBlocks,
  docFiles,
  docText,
  importFromCheckout,
  jsonLines,
  MARK_PREFIX,
  pidsCarrying,
  REPO,
  substitute,
  Workspace,
  type DocBlock,
  type Proc,
} from "./docBlocks.js";

/** The README and every page under docs/, with their text: the blocks of all of them are run. */
const files = docFiles().map((file) => ({ file, text: docText(file) }));
const blocks = files.flatMap(({ file, text }) => docBlocks(text, file));

/** The text of the file `block` is in, for what a runner checks in the prose around it. */
function textAround(block: DocBlock): string {
  return files.find((f) => f.file === block.file)!.text;
}

/** What runs one or more marked blocks (more when they only make sense together). */
interface Runner {
  blocks: string[];
  timeoutMs: number;
  run(ws: Workspace, blocks: DocBlock[]): Promise<void>;
}

function blockNamed(name: string): DocBlock {
  const found = blocks.filter((b) => b.mark?.kind === "run" && b.mark.name === name);
  if (found.length !== 1) throw new Error(`expected one block of ${docFiles().join(", ")} marked ${MARK_PREFIX} run ${name} -->, found ${found.length}`);
  return found[0]!;
}

/** The counts of summarize warm's `total` row. */
function totals(stdout: string): { tools: number; hits: number; generated: number; failed: number } {
  const row = /^total\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s/m.exec(stdout);
  if (!row) throw new Error(`no total row in:\n${stdout}`);
  const [tools, hits, generated, failed] = row.slice(1).map(Number) as [number, number, number, number];
  return { tools, hits, generated, failed };
}

const EXAMPLE_SERVERS = ["everything", "filesystem", "memory", "sequential-thinking"];

/** A JSON-RPC request line, as an MCP client writes it to a stdio server. */
function rpc(id: number | undefined, method: string, params: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ jsonrpc: "2.0", ...(id !== undefined ? { id } : {}), method, params })}\n`;
}

/** The answer with `id` on the process's stdout. */
function answer(proc: Proc, id: number, what: string): Promise<Record<string, unknown>> {
  return proc.until((p) => jsonLines(p.stdout).find((m) => m.id === id), what);
}

/** Initializes the stdio MCP server reading `proc`'s stdin and calls everything_echo through it. */
async function echoOverStdio(proc: Proc): Promise<void> {
  proc.send(rpc(1, "initialize", { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "readme", version: "1" } }));
  const init = await answer(proc, 1, "the answer to initialize");
  expect(init.result, JSON.stringify(init)).toMatchObject({ serverInfo: { name: "abridge" } });
  proc.send(rpc(undefined, "notifications/initialized"));
  proc.send(rpc(2, "tools/call", { name: "everything_echo", arguments: { message: "hi" } }));
  const call = await answer(proc, 2, "the answer to tools/call everything_echo");
  expect(call.result, JSON.stringify(call)).toMatchObject({ content: [{ type: "text", text: "Echo: hi" }] });
}

/** The lines of `block` up to its last background (`&`) line, and the rest. */
function splitAtBackground(text: string): { background: string; rest: string } {
  const lines = text.trimEnd().split("\n");
  let last = -1;
  lines.forEach((line, i) => {
    if (/&\s*(#.*)?$/.test(line)) last = i;
  });
  expect(last, "a background line").toBeGreaterThanOrEqual(0);
  return { background: lines.slice(0, last + 1).join("\n"), rest: lines.slice(last + 1).join("\n") };
}

function workerLines(proc: Proc, agent: string): number {
  return proc.stderr.split("\n").filter((line) => line.startsWith(`abridge bus: agent ${agent},`)).length;
}

const runners: Runner[] = [
  {
    // Only the summarize warm half: npm ci would reinstall the node_modules the tests run from,
    // and npm test would start this suite inside itself.
    blocks: ["first-run"],
    timeoutMs: 300_000,
    async run(ws, [block]) {
      const line = block!.text.split("\n")[0]!.replace(/#.*$/, "").trim();
      const warm = substitute(line, /^npm ci && /, "");
      expect(warm).toBe("npm run abridge -- summarize warm --config examples/abridge.toml");
      const once = async (): Promise<ReturnType<typeof totals>> => {
        const proc = ws.bash(warm, REPO);
        const exit = await proc.finished("npm run abridge -- summarize warm", 240_000);
        expect(exit.code, proc.describe()).toBe(0);
        for (const server of EXAMPLE_SERVERS) expect(proc.stdout).toMatch(new RegExp(`^${server}\\s`, "m"));
        return totals(proc.stdout);
      };
      const first = await once();
      expect(first.tools).toBeGreaterThan(0);
      expect(first).toEqual({ tools: first.tools, hits: 0, generated: first.tools, failed: 0 });
      const cache = await readFile(path.join(ws.env.ABRIDGE_CACHE_DIR!, "summaries.jsonl"), "utf8");
      expect(cache.trim().split("\n")).toHaveLength(first.tools);
      // "Run it again: every tool is a cache hit and no summarizer is called."
      expect(await once()).toEqual({ tools: first.tools, hits: first.tools, generated: 0, failed: 0 });
    },
  },
  {
    // The entry as a client spawns it: `abridge` from PATH (the workspace's), the config path
    // moved into the workspace.
    blocks: ["quickstart-mcp-json"],
    timeoutMs: 180_000,
    async run(ws, [block]) {
      const file = JSON.parse(block!.text) as { mcpServers: Record<string, { command: string; args: string[] }> };
      expect(Object.keys(file.mcpServers)).toEqual(["abridge"]);
      const entry = file.mcpServers.abridge!;
      expect(entry.command).toBe("abridge");
      const config = await ws.exampleConfig("", path.join(ws.env.XDG_CONFIG_HOME!, "abridge", "abridge.toml"));
      expect(entry.args).toContain("/home/me/.config/abridge/abridge.toml");
      const args = entry.args.map((a) => (a === "/home/me/.config/abridge/abridge.toml" ? config : a));
      const transport = new StdioClientTransport({ command: entry.command, args, env: ws.env, cwd: ws.dir, stderr: "pipe" });
      const client = new Client({ name: "readme", version: "1" });
      await client.connect(transport);
      try {
        const result = await client.callTool({ name: "everything_echo", arguments: { message: "hi" } });
        expect(result.content).toEqual([{ type: "text", text: "Echo: hi" }]);
      } finally {
        await client.close();
      }
    },
  },
  {
    // Loaded, not started: its servers need a GitHub token and a remote endpoint.
    blocks: ["quickstart-toml"],
    timeoutMs: 30_000,
    async run(ws, [block]) {
      const file = path.join(ws.dir, "abridge.toml");
      await writeFile(file, block!.text);
      const config = await loadConfig({ configPath: file, cwd: ws.dir, env: { GITHUB_TOKEN: "github-token-value", DOCS_TOKEN: "docs-token-value" } });
      expect(config.mode).toBe("compact");
      expect(config.servers.map((s) => s.name).sort()).toEqual(["docs", "github"]);
      const server = (name: string) => config.servers.find((s) => s.name === name);
      expect(server("github")).toMatchObject({
        transport: "stdio",
        command: "npx",
        args: ["-y", "@modelcontextprotocol/server-github"],
        env: { GITHUB_PERSONAL_ACCESS_TOKEN: "github-token-value" },
        deny: ["delete_*"],
      });
      expect(server("docs")).toMatchObject({ transport: "http", url: "https://example.com/mcp", headers: { Authorization: "Bearer docs-token-value" } });
      // Each ${VAR} is required: without it the loader names it.
      await expect(loadConfig({ configPath: file, cwd: ws.dir, env: { DOCS_TOKEN: "docs-token-value" } })).rejects.toThrow(/GITHUB_TOKEN/);
    },
  },
  {
    // The three commands in turn against ./abridge.toml (the example servers): summarize warm,
    // serve over stdio (its stdin is the test's, as a client's would be), serve over HTTP.
    blocks: ["quickstart-shell"],
    timeoutMs: 300_000,
    async run(ws, [block]) {
      await ws.exampleConfig();
      // Port 0: the kernel picks a free one, which the ready line names.
      const proc = ws.bash(substitute(block!.text, "127.0.0.1:8808", "127.0.0.1:0"));
      await proc.until((p) => (/^total\s/m.test(p.stdout) ? true : undefined), "summarize warm's table", 240_000);
      expect(totals(proc.stdout)).toMatchObject({ hits: 0, failed: 0 });
      await echoOverStdio(proc);
      proc.endInput();
      const url = await proc.until(
        (p) => /abridge serving \d+ upstream server\(s\) \(compact mode\) at (http:\S+)/.exec(p.stderr)?.[1],
        "serve --http's ready line",
      );
      const initialize = (authorization?: string): Promise<Response> =>
        fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(authorization ? { authorization } : {}) },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "initialize",
            params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "readme", version: "1" } },
          }),
        });
      const refused = await initialize();
      expect(refused.status).toBe(401);
      await refused.body?.cancel();
      // ABRIDGE_TOKEN=... : the token is the three dots, as written.
      const accepted = await initialize("Bearer ...");
      expect(accepted.status).toBe(200);
      expect(await accepted.text()).toContain('"serverInfo"');
      // SIGTERM, as a service manager stops it; every process of the block must then end.
      await proc.stop();
    },
  },
  {
    // The transcript's two files, as its comments describe them; the output must read as shown.
    blocks: ["config-errors"],
    timeoutMs: 60_000,
    async run(ws, [block]) {
      const files = ['mode = "compact"\n[servers.github\n', '[servers.github]\ncommand = "npx"\ntimeout_ms = "30s"\ntimout_ms = 30000\n'];
      const steps = block!.text.split(/^\$ /m).filter((s) => s.trim() !== "");
      expect(steps).toHaveLength(files.length);
      for (const [i, step] of steps.entries()) {
        const [commandLine, ...expected] = step.trimEnd().split("\n");
        await writeFile(path.join(ws.dir, "abridge.toml"), files[i]!);
        const proc = ws.bash(commandLine!.replace(/#.*$/, "").trim());
        const exit = await proc.finished(commandLine!, 60_000);
        expect(exit.code, proc.describe()).toBe(2);
        expect(proc.stdout).toBe("");
        expect(proc.stderr.trimEnd().split("\n")).toEqual(expected);
      }
    },
  },
  {
    // The config and the manifest together, in front of a backend on the config's socket (moved
    // to the workspace) that answers fs.stat as the manifest says.
    blocks: ["jsonrpc-toml", "jsonrpc-manifest"],
    timeoutMs: 60_000,
    async run(ws, [toml, manifest]) {
      const socketPath = path.join(ws.dir, "filesvc.sock");
      const lines: string[] = [];
      const sockets = new Set<Socket>();
      const backend = createServer((socket) => {
        sockets.add(socket);
        let buffered = "";
        socket.on("data", (chunk: Buffer) => {
          buffered += chunk.toString("utf8");
          for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
            const line = buffered.slice(0, nl);
            buffered = buffered.slice(nl + 1);
            lines.push(line);
            const request = JSON.parse(line) as { id: number; method: string; params: { path: string } };
            void stat(request.params.path).then((s) =>
              socket.write(`${JSON.stringify({ jsonrpc: "2.0", id: request.id, result: { size: s.size, mtime: s.mtime.toISOString() } })}\n`),
            );
          }
        });
      });
      await new Promise<void>((resolve) => backend.listen(socketPath, resolve));
      await mkdir(path.join(ws.dir, "manifests", "filesvc"), { recursive: true });
      await writeFile(path.join(ws.dir, "manifests", "filesvc", "filesvc.json"), manifest!.text);
      await writeFile(path.join(ws.dir, "abridge.toml"), substitute(toml!.text, '"unix:/run/filesvc.sock"', JSON.stringify(`unix:${socketPath}`)));
      const config = await loadConfig({ configPath: path.join(ws.dir, "abridge.toml"), cwd: ws.dir, env: {} });
      expect(config.servers[0]).toMatchObject({ name: "files", timeout_ms: 10000 });
      const bridge = await Bridge.open({ config, cacheFile: path.join(ws.dir, "cache", "summaries.jsonl"), env: {} });
      try {
        await bridge.start();
        // reindex has "mcpExpose": false.
        expect(bridge.list("full").map((t) => t.name)).toEqual(["files_stat"]);
        const result = await bridge.callTool("files_stat", { path: "/etc/hosts" });
        const hosts = await stat("/etc/hosts");
        expect(result.structuredContent).toEqual({ size: hosts.size, mtime: hosts.mtime.toISOString() });
        // The line the docs say such a call sends, with its id.
        const documented = /A call of `files_stat \{"path": "\/etc\/hosts"\}` sends one line\s+`([^`]+)`/.exec(textAround(toml!))?.[1];
        expect(documented).toBeDefined();
        expect(lines).toHaveLength(1);
        const id = (JSON.parse(lines[0]!) as { id: number }).id;
        expect(lines[0]).toBe(documented!.replace('"id":N', `"id":${id}`));
      } finally {
        await bridge.close();
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => backend.close(() => resolve()));
      }
    },
  },
  {
    // As written, with the paths moved into the workspace; the script must end by itself with
    // the daemon left running, which the command the docs give then stops.
    blocks: ["daemon-client"],
    timeoutMs: 240_000,
    async run(ws, [block]) {
      const stateDir = path.join(ws.dir, "example-state");
      let script = importFromCheckout(block!.text);
      script = substitute(script, '"/path/to/abridge/', `${JSON.stringify(REPO).slice(0, -1)}/`);
      script = substitute(script, '"/tmp/abridge-example/state"', JSON.stringify(stateDir));
      const host = await ws.typescript("daemon-host.mts", script);
      const exit = await host.finished("the DaemonClient example", 180_000);
      expect(exit.code, host.describe()).toBe(0);
      expect(host.stdout).toContain("mcp://everything/echo");
      expect(host.stdout).toContain("Echo: hi");
      const lock = JSON.parse(await readFile(path.join(stateDir, "abridge.lock"), "utf8")) as { pid: number };
      expect(isPidAlive(lock.pid)).toBe(true);
      const stopLine = /`(abridge daemon stop --state-dir \/tmp\/abridge-example\/state)`/.exec(textAround(block!))?.[1];
      expect(stopLine, "the docs name the command that stops the example's daemon").toBeDefined();
      const stop = ws.bash(substitute(stopLine!, "/tmp/abridge-example/state", stateDir));
      expect((await stop.finished(stopLine!, 60_000)).code, stop.describe()).toBe(0);
      expect(isPidAlive(lock.pid)).toBe(false);
    },
  },
  {
    // Redis, NATS, a warm, two workers and a serve, all from one shell; then the test is the
    // MCP client of serve (on its stdin), a bus requester, and a look into Redis.
    blocks: ["fleet-shell"],
    timeoutMs: 300_000,
    async run(ws, [block]) {
      const redisPort = await freePort();
      const natsPort = await freePort();
      let script = substitute(block!.text, "redis-server --port 6379", `redis-server --port ${redisPort}`);
      script = substitute(script, "-p 4222", `-p ${natsPort}`);
      script = substitute(script, /nats:\/\/127\.0\.0\.1:4222/g, `nats://127.0.0.1:${natsPort}`);
      await ws.exampleConfig(`cache_url = "redis://127.0.0.1:${redisPort}"\n`);
      const proc = ws.bash(script);
      await proc.until((p) => (/^total\s/m.test(p.stdout) ? true : undefined), "summarize warm's table", 240_000);
      const warmed = totals(proc.stdout);
      expect(warmed).toMatchObject({ hits: 0, generated: warmed.tools, failed: 0 });
      await echoOverStdio(proc);
      await proc.until((p) => (workerLines(p, "alpha") === 2 ? true : undefined), "both bus workers' ready lines");
      const bus = await BusClient.connect({ nats: `nats://127.0.0.1:${natsPort}` });
      try {
        const result = await bus.callTool("alpha", "everything_echo", { message: "hi" });
        expect(result.content).toEqual([{ type: "text", text: "Echo: hi" }]);
      } finally {
        await bus.close();
      }
      const redis = new Redis({ host: "127.0.0.1", port: redisPort, lazyConnect: true });
      try {
        await redis.connect();
        expect(await redis.hlen("abridge:summaries")).toBe(warmed.tools);
      } finally {
        redis.disconnect();
      }
      proc.endInput();
      // serve was the last line: its end is the shell's; redis, NATS and the workers run on.
      expect((await proc.exited("the shell once serve's input ended")).code, proc.describe()).toBe(0);
    },
  },
  {
    // Loaded, not connected: cache.internal is no host here (the fleet block runs a real Redis).
    blocks: ["cache-url-toml"],
    timeoutMs: 30_000,
    async run(ws, [block]) {
      const file = path.join(ws.dir, "abridge.toml");
      await writeFile(file, block!.text);
      const config = await loadConfig({ configPath: file, cwd: ws.dir, env: { REDIS_PASSWORD: "redis-password-value" } });
      expect(config.cache_url).toBe("redis://:redis-password-value@cache.internal:6379/0");
      expect(config.cache_lease_ms).toBe(30_000);
      // "the default": the same without the line.
      await writeFile(file, substitute(block!.text, /^cache_lease_ms = .*\n/m, ""));
      expect((await loadConfig({ configPath: file, cwd: ws.dir, env: { REDIS_PASSWORD: "x" } })).cache_lease_ms).toBe(config.cache_lease_ms);
    },
  },
  {
    // The background lines, then, once both workers printed their line (as the docs say),
    // the call.
    blocks: ["bus-shell"],
    timeoutMs: 240_000,
    async run(ws, [block]) {
      const natsPort = await freePort();
      let script = substitute(block!.text, "-p 4222", `-p ${natsPort}`);
      script = substitute(script, /nats:\/\/127\.0\.0\.1:4222/g, `nats://127.0.0.1:${natsPort}`);
      await ws.exampleConfig();
      const { background, rest } = splitAtBackground(script);
      expect(rest.trim()).not.toBe("");
      const workers = ws.bash(background);
      await workers.until((p) => (workerLines(p, "alpha") === 2 ? true : undefined), "both bus workers' ready lines", 180_000);
      const call = ws.bash(rest);
      const exit = await call.finished("the call", 120_000);
      expect(exit.code, call.describe()).toBe(0);
      expect(call.stdout).toContain("Echo: hi");
    },
  },
  {
    // Against a worker of agent alpha on a NATS server of the test's, whose URL replaces the
    // snippet's.
    blocks: ["bus-client"],
    timeoutMs: 240_000,
    async run(ws, [block]) {
      const nats = await startNatsServer();
      try {
        await ws.exampleConfig();
        const worker = ws.bash(`abridge bus --nats ${nats.url} --agent alpha --config abridge.toml`);
        await worker.until((p) => (workerLines(p, "alpha") === 1 ? true : undefined), "the worker's ready line", 180_000);
        const script = substitute(importFromCheckout(block!.text), '"nats://127.0.0.1:4222"', JSON.stringify(nats.url));
        const host = await ws.typescript("bus-host.mts", script);
        const exit = await host.finished("the BusClient example", 120_000);
        expect(exit.code, host.describe()).toBe(0);
        expect(host.stdout).toContain("Echo: hi");
        expect(host.stdout).not.toContain("try again");
        const stopped = await worker.stop();
        expect(stopped.code, worker.describe()).toBe(0);
      } finally {
        await nats.stop();
      }
    },
  },
  // The README and the code mode page each show one `abridge run -e` with the answer it prints.
  ...["code-run-shell", "readme-code-run"].map(
    (name): Runner => ({
      blocks: [name],
      timeoutMs: 180_000,
      async run(ws, [block]) {
        await ws.exampleConfig();
        const proc = ws.bash(block!.text);
        const exit = await proc.finished("abridge run -e", 150_000);
        expect(exit.code, proc.describe()).toBe(0);
        // The answer the block shows in its comments, the time aside.
        const shown = block!.text
          .split("\n")
          .filter((l) => l.startsWith("# "))
          .map((l) => l.slice(2));
        expect(
          proc.stdout
            .trimEnd()
            .split("\n")
            .map((l) => l.replace(/\d+ ms\)$/, "N ms)")),
        ).toEqual(shown.map((l) => l.replace(/\d+ ms\)$/, "N ms)")));
      },
    }),
  ),
  {
    blocks: ["library-run-code"],
    timeoutMs: 180_000,
    async run(ws, [block]) {
      let script = importFromCheckout(block!.text);
      script = substitute(script, '"/path/to/abridge"', JSON.stringify(REPO));
      script = substitute(script, '"/tmp/abridge-example/summaries.jsonl"', JSON.stringify(path.join(ws.dir, "summaries.jsonl")));
      const host = await ws.typescript("library-run-host.mts", script);
      const exit = await host.finished("the library's runCode example", 150_000);
      expect(exit.code, host.describe()).toBe(0);
      expect(host.stdout).toContain("declare namespace everything {");
      expect(host.stdout).toContain('true {"r":"Echo: hi"} 1');
      expect(host.stdout).toContain("CODE_TIMEOUT");
    },
  },
  {
    blocks: ["library"],
    timeoutMs: 180_000,
    async run(ws, [block]) {
      let script = importFromCheckout(block!.text);
      script = substitute(script, '"/path/to/abridge"', JSON.stringify(REPO));
      script = substitute(script, '"/tmp/abridge-example/summaries.jsonl"', JSON.stringify(path.join(ws.dir, "summaries.jsonl")));
      const host = await ws.typescript("library-host.mts", script);
      const exit = await host.finished("the library example", 150_000);
      expect(exit.code, host.describe()).toBe(0);
      expect(host.stdout).toContain("everything_echo");
      expect(host.stdout).toContain("get_schema");
      expect(host.stdout).toContain("Echo: hi");
    },
  },
];

describe("code blocks of the README and docs/", () => {
  it("marks every block as run by a runner here or as illustrative, with the reason", () => {
    const problems: string[] = [];
    const runNames = new Map<string, string[]>();
    const runnerNames = new Set(runners.flatMap((r) => r.blocks));
    for (const block of blocks) {
      const where = `${block.file}:${block.line} (\`\`\`${block.lang})`;
      const mark = block.mark;
      if (mark === undefined) problems.push(`${where}: no ${MARK_PREFIX} run NAME --> or ${MARK_PREFIX} illustrative (reason) --> on the line before it`);
      else if (mark.kind === "malformed") problems.push(`${where}: malformed mark ${mark.text}`);
      else if (mark.kind === "run") {
        runNames.set(mark.name, [...(runNames.get(mark.name) ?? []), `${block.file}:${block.line}`]);
        if (!runnerNames.has(mark.name)) problems.push(`${where}: marked run ${mark.name}, but no runner runs it`);
      }
    }
    for (const [name, lines] of runNames) if (lines.length > 1) problems.push(`run ${name} marks ${lines.length} blocks (${lines.join(", ")})`);
    for (const name of runnerNames) if (!runNames.has(name)) problems.push(`a runner runs ${name}, but no block of the README or docs/ is marked with it`);
    expect(problems).toEqual([]);
  });

  it("ignores no doc-test mark that is not right before a block", () => {
    const stray = files.flatMap(({ file, text }) => {
      const marked = new Set(blocks.filter((b) => b.file === file).map((b) => b.line - 1));
      return text.split("\n").flatMap((line, i) => (line.trim().startsWith(MARK_PREFIX) && !marked.has(i + 1) ? [`${file}:${i + 1}: ${line}`] : []));
    });
    expect(stray).toEqual([]);
  });

  it("reads the README and every page under docs/", () => {
    expect(files.map((f) => f.file)).toContain("README.md");
    expect(files.filter((f) => f.file.startsWith("docs/")).length).toBeGreaterThan(0);
  });

  for (const runner of runners) {
    it(`runs ${runner.blocks.join(" + ")}`, { timeout: runner.timeoutMs }, async () => {
      const marked = runner.blocks.map(blockNamed);
      const ws = await Workspace.create();
      let left: number[];
      try {
        await runner.run(ws, marked);
      } finally {
        left = await ws.close();
      }
      expect(left, `processes of ${runner.blocks.join(" + ")} left running`).toEqual([]);
      expect(pidsCarrying(ws.dir)).toEqual([]);
    });
  }
});
