/**
 * Start-up of `abridge serve` as users run it (the CLI bundle of build/bundleCli.ts) beside the
 * file-by-file build, and beside a peer, mcp-hub, on the same upstream. Everything runs with plain
 * `node` on built JavaScript (bench/buildJs.ts), alternating, medians:
 *
 * - initialize: spawn of `serve` (stdio) to its `initialize` answer, with no upstream and with one
 *   echo upstream, bundle and file-by-file builds in alternation; plus the serve process's own CPU.
 * - memory: RSS of `serve` with one echo upstream, once initialize is answered and the upstream is
 *   up (no list yet), and once its first `tools/list` is answered, both after a second of idle.
 * - peers: spawn to the first `tools/list` answer that holds the echo upstream's tools, for
 *   `abridge serve --http` (streamable HTTP, SDK client) and `mcp-hub --port P --config F` (its
 *   MCP endpoint is SSE at /mcp, SDK client). Both are polled the same way: a client connects
 *   as soon as the port answers and lists; while the list lacks the upstream's tools it
 *   reconnects (a new session) 10 ms later and lists again.
 *
 * Runnable alone: `npx tsx bench/startupPeers.ts [--runs N]` writes
 * bench/results/startup-peers.json and .md.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { messageOf } from "../src/model/errors.js";
import { buildJs, type BuiltJs } from "./buildJs.js";
import { REPO_ROOT } from "./corpus.js";
import { markdownTable } from "./markdownTable.js";
import { freePort, median, nowMs, positiveFlag, processCpuMs, processMemoryKiB, round, sleep } from "./measure.js";
import { killGroup } from "./mcpTarget.js";
import { runStandalone } from "./standalone.js";

/** How long one process may take to its answer before the run counts as failed. */
const ANSWER_TIMEOUT_MS = 60_000;
/** Idle time before RSS is read: what start-up left behind, not its transient peak. */
const IDLE_MS = 1_000;

/** Medians of one build's start to `initialize`. */
export interface InitializeRow {
  build: string;
  upstreams: number;
  runs: number;
  initializeMsMedian: number;
  /** User + system CPU of the serve process at its answer (10 ms ticks). */
  cpuMsMedian: number | undefined;
  initializeMsRuns: number[];
}

/** RSS of one build with one upstream. */
export interface MemoryRow {
  build: string;
  runs: number;
  /** Initialize answered, upstream connected, no list yet; a second idle. */
  idleRssMiBMedian: number;
  /** After the first complete tools/list; a second idle. */
  listedRssMiBMedian: number;
}

/** One peer's spawn to its first tools/list holding the upstream's tools. */
export interface PeerRow {
  peer: string;
  transport: string;
  runs: number;
  firstListMsMedian: number;
  firstListMsRuns: number[];
  /** Tools in the first complete list (names differ: abridge adds get_schema in compact mode). */
  tools: number;
}

/** Result of {@link runStartupPeers}. */
export interface StartupPeersResult {
  method: string;
  cores: number;
  /** /proc/loadavg's 1-minute figure at the start and at the end of the run. */
  loadAverage: { start: number; end: number };
  bundle: { files: number; kib: number };
  initialize: InitializeRow[];
  memory: MemoryRow[];
  peers: PeerRow[];
  /** Why the peer rows are missing, when they are. */
  peersNotAvailable?: string;
}

/** Options of {@link runStartupPeers}. */
export interface StartupPeersOptions {
  /** Runs per figure (default 9). */
  runs?: number;
  signal?: AbortSignal;
  built?: BuiltJs;
}

function loadAverage(): number {
  return os.loadavg()[0] ?? Number.NaN;
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "abridge-bench", version: "1" } },
};

/** A `serve` child over stdio, answering line-delimited JSON-RPC. */
class StdioServe {
  readonly child: ChildProcess;
  readonly started = nowMs();
  private buffer = "";
  private waiters = new Map<number, (message: Record<string, unknown>) => void>();

  constructor(bin: string, config: string, cacheDir: string) {
    this.child = spawn(process.execPath, [bin, "serve", "--config", config, "--cache-dir", cacheDir, "--no-watch"], {
      cwd: REPO_ROOT,
      stdio: ["pipe", "pipe", "ignore"],
    });
    this.child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      this.buffer += chunk;
      for (let i = this.buffer.indexOf("\n"); i >= 0; i = this.buffer.indexOf("\n")) {
        const line = this.buffer.slice(0, i);
        this.buffer = this.buffer.slice(i + 1);
        const message = JSON.parse(line) as Record<string, unknown>;
        if (typeof message.id === "number") this.waiters.get(message.id)?.(message);
      }
    });
  }

  /** Sends a request and resolves with its answer and the ms from spawn to it. */
  request(message: { id: number } & Record<string, unknown>): Promise<{ answer: Record<string, unknown>; ms: number }> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve did not answer request ${message.id} in ${ANSWER_TIMEOUT_MS} ms`)), ANSWER_TIMEOUT_MS);
      this.child.once("exit", (code) => reject(new Error(`serve exited with ${code} before answering`)));
      this.waiters.set(message.id, (answer) => {
        clearTimeout(timer);
        resolve({ answer, ms: nowMs() - this.started });
      });
      this.child.stdin?.write(`${JSON.stringify(message)}\n`);
    });
  }

  notify(method: string): void {
    this.child.stdin?.write(`${JSON.stringify({ jsonrpc: "2.0", method })}\n`);
  }

  /** Ends serve as a client does: stdin closed; then waits for it to exit. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.stdin?.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

interface Layout {
  dir: string;
  empty: string;
  one: string;
  built: BuiltJs;
}

async function initializeOnce(bin: string, config: string, cacheDir: string): Promise<{ ms: number; cpu: number | undefined }> {
  const serve = new StdioServe(bin, config, cacheDir);
  try {
    const { ms } = await serve.request(INITIALIZE);
    return { ms, cpu: processCpuMs(serve.child.pid) };
  } finally {
    await serve.close();
  }
}

async function memoryOnce(bin: string, layout: Layout, cacheDir: string, signal?: AbortSignal): Promise<{ idle: number; listed: number }> {
  const serve = new StdioServe(bin, layout.one, cacheDir);
  try {
    await serve.request(INITIALIZE);
    serve.notify("notifications/initialized");
    // Up once a list holds its tools; the RSS is read before that list, after the idle time.
    await sleep(IDLE_MS, signal);
    const pid = serve.child.pid ?? -1;
    const idle = processMemoryKiB(pid, "VmRSS") / 1024;
    await serve.request({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    await sleep(IDLE_MS, signal);
    const listed = processMemoryKiB(pid, "VmRSS") / 1024;
    return { idle, listed };
  } finally {
    await serve.close();
  }
}

/** Lists until the upstream's tools are there, connecting as soon as the server answers. */
async function firstCompleteList(makeTransport: () => Transport, started: number, want: number, signal?: AbortSignal): Promise<{ ms: number; tools: number }> {
  let last = "no attempt";
  while (nowMs() - started < ANSWER_TIMEOUT_MS) {
    signal?.throwIfAborted();
    const client = new Client({ name: "abridge-bench", version: "1" });
    try {
      await withTimeout(client.connect(makeTransport()), 5_000);
      const listed = await withTimeout(client.listTools(), 5_000);
      if (listed.tools.length >= want) return { ms: nowMs() - started, tools: listed.tools.length };
      // A new session each time: mcp-hub's session keeps the tools it had when it was opened.
      last = `${listed.tools.length} of ${want} tools listed`;
    } catch (err) {
      last = messageOf(err);
    } finally {
      await client.close().catch(() => undefined);
    }
    await sleep(10, signal);
  }
  throw new Error(`no complete tools/list in ${ANSWER_TIMEOUT_MS} ms (last: ${last})`);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The echo fixture's tools: `echo`, `add` and 5 generated (bench/startupUpstreams.ts starts it the same way). */
const ECHO_TOOLS = 7;

async function abridgeHttpOnce(layout: Layout, cacheDir: string, signal?: AbortSignal): Promise<{ ms: number; tools: number }> {
  const port = await freePort(signal);
  const started = nowMs();
  const child = spawn(
    process.execPath,
    [layout.built.cliBin, "serve", "--config", layout.one, "--cache-dir", cacheDir, "--no-watch", "--http", `127.0.0.1:${port}`],
    {
      cwd: REPO_ROOT,
      stdio: ["ignore", "ignore", "ignore"],
      detached: true,
    },
  );
  try {
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    // compact mode lists the upstream's tools and get_schema.
    return await firstCompleteList(() => new StreamableHTTPClientTransport(url), started, ECHO_TOOLS + 1, signal);
  } finally {
    await killGroup(child);
  }
}

async function mcpHubOnce(layout: Layout, hubConfig: string, home: string, signal?: AbortSignal): Promise<{ ms: number; tools: number }> {
  const port = await freePort(signal);
  const hubCli = createRequire(import.meta.url).resolve("mcp-hub/dist/cli.js");
  const env = {
    ...process.env,
    HOME: home,
    XDG_STATE_HOME: path.join(home, "state"),
    XDG_CONFIG_HOME: path.join(home, "config"),
    XDG_DATA_HOME: path.join(home, "data"),
  };
  const started = nowMs();
  const child = spawn(process.execPath, [hubCli, "--port", String(port), "--config", hubConfig], {
    cwd: layout.dir,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  // Its log lines, kept (the last few kB) to say why when it never lists.
  let log = "";
  const keep = (chunk: Buffer): void => {
    log = (log + chunk.toString("utf8")).slice(-4_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  try {
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    return await firstCompleteList(() => new SSEClientTransport(url), started, ECHO_TOOLS, signal);
  } catch (err) {
    throw new Error(`mcp-hub: ${messageOf(err)}; its log ends: ${log.slice(-1_500)}`);
  } finally {
    await killGroup(child);
  }
}

/** The method text of {@link runStartupPeers}. */
export const STARTUP_PEERS_METHOD =
  "All processes run with plain `node` on built JavaScript (bench/buildJs.ts): `bundle` is the CLI as `npm run build` makes it (build/bundleCli.ts: esbuild, split at dynamic imports), `modules` the same sources built file by file as tsc lays out dist/. " +
  "initialize = spawn of `serve` (stdio) to its initialize answer, the two builds in alternation; CPU = the serve process's user + system time at that answer (10 ms ticks). " +
  `memory = VmRSS of serve with one echo upstream ${IDLE_MS} ms after initialize (upstream up, nothing listed) and ${IDLE_MS} ms after its first tools/list answer. ` +
  "peers = spawn to the first tools/list answer that holds the echo upstream's tools: abridge serve --http (streamable HTTP) and mcp-hub 4.2.1 (its /mcp SSE endpoint), both reached by the SDK client, which connects as soon as the port answers and, while a list lacks the tools, reconnects 10 ms later and lists again (mcp-hub's session keeps the tools of its opening); alternating runs, medians.";

/** Start-up figures of the bundle, the file-by-file build, and mcp-hub (see the file comment). */
export async function runStartupPeers(options: StartupPeersOptions = {}): Promise<StartupPeersResult> {
  const runs = options.runs ?? 9;
  const signal = options.signal;
  const loadStart = loadAverage();
  const built = options.built ?? (await buildJs());
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-peers-"));
  try {
    const empty = path.join(dir, "empty.toml");
    const one = path.join(dir, "one.toml");
    const base = ['mode = "compact"', 'log_level = "error"', "startup_grace_ms = 120000", ""];
    await writeFile(empty, base.join("\n"));
    // One page holds every tool: mcp-hub reads only the first page of an upstream's tools/list.
    const echoArgs = [built.echoFixture, "--page-size", "100"];
    const echo = `[servers.echo]\ncommand = ${JSON.stringify(process.execPath)}\nargs = ${JSON.stringify(echoArgs)}\nconnect_timeout_ms = 120000\n`;
    await writeFile(one, [...base, echo].join("\n"));
    const hubConfig = path.join(dir, "hub.json");
    await writeFile(hubConfig, JSON.stringify({ mcpServers: { echo: { command: process.execPath, args: echoArgs } } }));
    const layout: Layout = { dir, empty, one, built };
    const builds = [
      { name: "bundle", bin: built.cliBin },
      { name: "modules", bin: built.cliModulesBin },
    ];

    const initialize: InitializeRow[] = [];
    for (const [upstreams, config] of [
      [0, empty],
      [1, one],
    ] as const) {
      const times = new Map(builds.map((b) => [b.name, { ms: [] as number[], cpu: [] as number[] }]));
      for (let i = 0; i < runs; i++) {
        for (const b of builds) {
          const r = await initializeOnce(b.bin, config, path.join(dir, `cache-${b.name}`));
          times.get(b.name)?.ms.push(r.ms);
          if (r.cpu !== undefined) times.get(b.name)?.cpu.push(r.cpu);
        }
      }
      for (const b of builds) {
        const t = times.get(b.name) ?? { ms: [], cpu: [] };
        initialize.push({
          build: b.name,
          upstreams,
          runs,
          initializeMsMedian: round(median(t.ms), 1),
          cpuMsMedian: t.cpu.length > 0 ? median(t.cpu) : undefined,
          initializeMsRuns: t.ms.map((v) => round(v, 1)),
        });
      }
    }

    const memoryRuns = Math.max(3, Math.ceil(runs / 3));
    const mem = new Map(builds.map((b) => [b.name, { idle: [] as number[], listed: [] as number[] }]));
    for (let i = 0; i < memoryRuns; i++) {
      for (const b of builds) {
        const r = await memoryOnce(b.bin, layout, path.join(dir, `cache-${b.name}`), signal);
        mem.get(b.name)?.idle.push(r.idle);
        mem.get(b.name)?.listed.push(r.listed);
      }
    }
    const memory: MemoryRow[] = builds.map((b) => {
      const m = mem.get(b.name) ?? { idle: [], listed: [] };
      return { build: b.name, runs: memoryRuns, idleRssMiBMedian: round(median(m.idle), 1), listedRssMiBMedian: round(median(m.listed), 1) };
    });

    const peers: PeerRow[] = [];
    let peersNotAvailable: string | undefined;
    try {
      const abridgeMs: number[] = [];
      const hubMs: number[] = [];
      let abridgeTools = 0;
      let hubTools = 0;
      const home = path.join(dir, "hub-home");
      for (let i = 0; i < runs; i++) {
        const a = await abridgeHttpOnce(layout, path.join(dir, "cache-http"), signal);
        abridgeMs.push(a.ms);
        abridgeTools = a.tools;
        const h = await mcpHubOnce(layout, hubConfig, home, signal);
        hubMs.push(h.ms);
        hubTools = h.tools;
      }
      peers.push(
        {
          peer: "abridge serve --http (bundle)",
          transport: "streamable HTTP",
          runs,
          firstListMsMedian: round(median(abridgeMs), 1),
          firstListMsRuns: abridgeMs.map((v) => round(v, 1)),
          tools: abridgeTools,
        },
        {
          peer: "mcp-hub 4.2.1",
          transport: "SSE (/mcp)",
          runs,
          firstListMsMedian: round(median(hubMs), 1),
          firstListMsRuns: hubMs.map((v) => round(v, 1)),
          tools: hubTools,
        },
      );
    } catch (err) {
      peersNotAvailable = messageOf(err);
    }

    const bundleDir = path.dirname(built.cliBin);
    const names = await readdir(bundleDir);
    const bytes = (await Promise.all(names.map(async (n) => (await stat(path.join(bundleDir, n))).size))).reduce((a, b) => a + b, 0);
    return {
      method: STARTUP_PEERS_METHOD,
      cores: os.cpus().length,
      loadAverage: { start: round(loadStart, 2), end: round(loadAverage(), 2) },
      bundle: { files: names.length, kib: round(bytes / 1024, 0) },
      initialize,
      memory,
      peers,
      ...(peersNotAvailable !== undefined ? { peersNotAvailable } : {}),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The markdown section of a {@link runStartupPeers} result. */
export function startupPeersMarkdown(r: StartupPeersResult): string {
  const ms = (v: number | undefined): string => (v === undefined ? "—" : v.toFixed(0));
  return [
    "### Start-up: the bundle, the file-by-file build, mcp-hub",
    "",
    r.method,
    "",
    markdownTable(
      ["build", "upstreams>", "runs>", "initialize ms>", "serve CPU ms>"],
      r.initialize.map((row) => [row.build, row.upstreams, row.runs, ms(row.initializeMsMedian), ms(row.cpuMsMedian)]),
    ),
    "",
    markdownTable(
      ["build", "runs>", "RSS MiB, idle after initialize>", "RSS MiB, idle after first tools/list>"],
      r.memory.map((row) => [row.build, row.runs, row.idleRssMiBMedian.toFixed(1), row.listedRssMiBMedian.toFixed(1)]),
    ),
    "",
    r.peersNotAvailable !== undefined
      ? `Peers: not available (${r.peersNotAvailable}).`
      : markdownTable(
          ["peer", "transport", "runs>", "spawn to first complete tools/list ms>", "tools>"],
          r.peers.map((row) => [row.peer, row.transport, row.runs, ms(row.firstListMsMedian), row.tools]),
        ),
    "",
    `Bundle: ${r.bundle.files} files, ${r.bundle.kib} KiB. Measured on ${r.cores} core(s), load average ${r.loadAverage.start} at the start and ${r.loadAverage.end} at the end.`,
  ].join("\n");
}

await runStandalone(import.meta.url, {
  name: "startup-peers",
  run: (argv) => {
    const runs = positiveFlag(argv, "runs");
    return runStartupPeers(runs !== undefined ? { runs } : {});
  },
  markdown: startupPeersMarkdown,
});
