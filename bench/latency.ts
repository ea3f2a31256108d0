import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Bridge } from "../src/core/bridge.js";
import { benchConfig, configToml, ECHO_FIXTURE, RAW_ECHO_FIXTURE, stdioServerToml, tsxCommand } from "./benchConfig.js";
import { REPO_ROOT } from "./corpus.js";
import { connectDaemon } from "./daemonTarget.js";
import { freePort, median, nowMs, percentile } from "./measure.js";
import { connectStdio, installed, killGroup, spawnGroup, type Connected } from "./mcpTarget.js";
import { connectRawHttp } from "./rawHttpClient.js";
import { connectRawStdio } from "./rawStdioClient.js";
import { rawServeOverStdio, serveOverHttp, serveOverStdio, serveUnavailable } from "./serveProcess.js";

/** Concurrency levels of the throughput runs. */
export const CONCURRENCY = [1, 8, 64] as const;

/** Figures of one path to the echo tool. */
export interface LatencyRow {
  id: string;
  label: string;
  /** Set instead of figures when the path could not be measured. */
  notAvailable?: string;
  calls?: number;
  p50Ms?: number;
  p99Ms?: number;
  /** Id of the row this path adds to (default the direct SDK client). */
  baseline?: string;
  /** p50 above the baseline row's p50. */
  addedP50Ms?: number;
  addedP99Ms?: number;
  /** Median calls per second at each concurrency. */
  throughput?: Record<string, number>;
}

/** Result of {@link runLatency}. */
export interface LatencyResult {
  upstream: string;
  method: string;
  rows: LatencyRow[];
}

/** Options of {@link runLatency}. */
export interface LatencyOptions {
  signal?: AbortSignal;
  /** Sequential calls timed for p50/p99 (default 1,000). */
  calls?: number;
  /** Repetitions of each throughput run (default 3). */
  repeats?: number;
}

const ARGS = { text: "hello" };

/** Longest a latency series or one throughput run may take: slow paths get fewer calls, not more minutes. */
const SERIES_BUDGET_MS = 4_000;
const THROUGHPUT_BUDGET_MS = 2_000;

// Calls get no AbortSignal: one listener per call on a run-wide signal would pile up (the SDK
// keeps them until the request settles). The run's signal is checked between calls instead.
async function latencies(target: Connected, tool: string, calls: number, signal?: AbortSignal): Promise<number[]> {
  for (let i = 0; i < 200; i++) await target.call(tool, ARGS);
  const out: number[] = [];
  const deadline = nowMs() + SERIES_BUDGET_MS;
  for (let i = 0; i < calls && nowMs() < deadline; i++) {
    signal?.throwIfAborted();
    const start = nowMs();
    await target.call(tool, ARGS);
    out.push(nowMs() - start);
  }
  return out;
}

/**
 * Calls per second with `concurrency` callers sharing up to `total` calls over one connection,
 * stopping early after {@link THROUGHPUT_BUDGET_MS}.
 */
async function throughput(target: Connected, tool: string, concurrency: number, total: number, signal?: AbortSignal): Promise<number> {
  let started = 0;
  let done = 0;
  const start = nowMs();
  const deadline = start + THROUGHPUT_BUDGET_MS;
  const worker = async (): Promise<void> => {
    while (started < total && nowMs() < deadline) {
      signal?.throwIfAborted();
      started += 1;
      await target.call(tool, ARGS);
      done += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return done / ((nowMs() - start) / 1000);
}

async function measure(row: LatencyRow, open: () => Promise<Connected>, tool: string, options: LatencyOptions): Promise<LatencyRow> {
  let target: Connected | undefined;
  try {
    target = await open();
    const times = await latencies(target, tool, options.calls ?? 1_000, options.signal);
    const calls = times.length;
    const tput: Record<string, number> = {};
    for (const c of CONCURRENCY) {
      const total = c === 1 ? 500 : c === 8 ? 1_000 : 2_000;
      const runs: number[] = [];
      for (let i = 0; i < (options.repeats ?? 3); i++) runs.push(await throughput(target, tool, c, total, options.signal));
      tput[String(c)] = median(runs);
    }
    return { ...row, calls, p50Ms: percentile(times, 50), p99Ms: percentile(times, 99), throughput: tput };
  } catch (err) {
    options.signal?.throwIfAborted();
    return { ...row, notAvailable: err instanceof Error ? (err.message.split("\n")[0] ?? String(err)) : String(err) };
  } finally {
    await target?.close();
  }
}

/** The bridge as a library in this process, calling the stdio echo upstream. */
async function openLibrary(configFile: string, cacheDir: string): Promise<Connected> {
  const config = benchConfig(configToml([stdioServerToml("echo", ECHO_FIXTURE)], "compact"), configFile);
  const bridge = await Bridge.open({ config, cacheFile: path.join(cacheDir, "library.jsonl"), env: {} });
  try {
    await bridge.start();
  } catch (err) {
    await bridge.close();
    throw err;
  }
  return {
    call: (tool, args, signal) => bridge.callTool(tool, args, signal ? { signal } : {}),
    listTools: async () => bridge.list().length,
    close: () => bridge.close(),
  };
}

/**
 * The peer the HTTP path is compared with. Not a dev dependency: it declares Node >= 22 through a
 * dependency of its own (it runs on 20), and `npm ci` would warn every user about it. Installed on
 * first use into node_modules/.cache, outside the lockfile.
 */
const MCP_PROXY_PACKAGE = "mcp-proxy@6.7.19";

/** The peer's bin, installed into node_modules/.cache/abridge-bench-peers on first use. */
function peerBin(pkg: string, bin: string): string {
  const prefix = path.join(REPO_ROOT, "node_modules", ".cache", "abridge-bench-peers");
  const file = path.join(prefix, "node_modules", ".bin", bin);
  if (!installed(file)) {
    const done = spawnSync("npm", ["install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", prefix, pkg], { stdio: "inherit" });
    if (done.status !== 0 || !installed(file)) throw new Error(`not available: npm install ${pkg} failed`);
  }
  return file;
}

/** `mcp-proxy` (npm) wrapping the same stdio echo fixture, over streamable HTTP. */
async function openMcpProxy(signal?: AbortSignal): Promise<Connected> {
  const bin = peerBin(MCP_PROXY_PACKAGE, "mcp-proxy");
  const port = await freePort(signal);
  const { command, args } = tsxCommand(ECHO_FIXTURE);
  const child = spawnGroup(bin, ["--port", String(port), "--server", "stream", "--", command, ...args], REPO_ROOT);
  child.stderr?.resume();
  // The raw keep-alive client, as for row (c): the ratio of the two rows compares servers, not clients.
  return connectRawHttp(`http://127.0.0.1:${port}/mcp`, {
    onClose: () => killGroup(child),
    ...(child.pid !== undefined ? { pid: child.pid } : {}),
    ...(signal ? { signal } : {}),
  });
}

/**
 * Latency and throughput of one echo tool (`echo` of test/fixtures/echoServer.ts, a stdio SDK
 * server) reached five ways: the SDK client directly over stdio; abridge as a library in this
 * process; `abridge serve` over stdio; `abridge serve` over streamable HTTP; `mcp-proxy` from npm
 * over streamable HTTP (peer reference); the daemon. One connection per path, p50/p99 of
 * sequential calls after a warm-up, calls/s at concurrency 1, 8 and 64 (median of repeats).
 */
export async function runLatency(options: LatencyOptions = {}): Promise<LatencyResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-latency-"));
  const rows: LatencyRow[] = [];
  try {
    const configFile = path.join(dir, "abridge.toml");
    await writeFile(configFile, configToml([stdioServerToml("echo", ECHO_FIXTURE)], "compact"));
    const serveMissing = await serveUnavailable(options.signal);
    const serve = { config: configFile, cacheDir: dir, ...(options.signal ? { signal: options.signal } : {}) };
    const echo = tsxCommand(ECHO_FIXTURE);
    const signal = options.signal;

    rows.push(
      await measure(
        { id: "direct", label: "(a) SDK client -> echo, stdio (baseline)" },
        () => connectStdio(echo.command, echo.args, signal ? { signal } : {}),
        "echo",
        options,
      ),
    );
    rows.push(await measure({ id: "library", label: "Bridge library in-process -> echo, stdio" }, () => openLibrary(configFile, dir), "echo_echo", options));
    const serveRow = async (id: string, label: string, open: () => Promise<Connected>): Promise<LatencyRow> =>
      serveMissing !== undefined ? { id, label, notAvailable: serveMissing } : measure({ id, label }, open, "echo_echo", options);
    rows.push(await serveRow("serveStdio", "(b) abridge serve, stdio", () => serveOverStdio(serve)));
    rows.push(await serveRow("serveHttp", "(c) abridge serve, streamable HTTP", () => serveOverHttp({ ...serve, client: "raw" })));
    rows.push(await measure({ id: "mcpProxy", label: "(c') mcp-proxy (npm), streamable HTTP [peer]" }, () => openMcpProxy(signal), "echo", options));
    rows.push(
      await measure(
        { id: "daemon", label: "(d) abridge daemon client" },
        () => connectDaemon({ config: configFile, cacheDir: dir, server: "echo", ...(signal ? { signal } : {}) }),
        "echo",
        options,
      ),
    );

    // Without an SDK on either end: what one pipe hop costs, and what abridge adds to it.
    const rawConfig = path.join(dir, "raw.toml");
    await writeFile(rawConfig, configToml([stdioServerToml("echo", RAW_ECHO_FIXTURE)], "compact"));
    const rawEcho = tsxCommand(RAW_ECHO_FIXTURE);
    rows.push(
      await measure(
        { id: "rawDirect", label: "(e) raw client -> raw echo, stdio (one pipe hop)" },
        () => connectRawStdio(rawEcho.command, rawEcho.args, signal ? { signal } : {}),
        "echo",
        options,
      ),
    );
    rows.push(
      serveMissing !== undefined
        ? { id: "rawServe", label: "(f) raw client -> abridge serve, stdio -> raw echo", notAvailable: serveMissing }
        : await measure(
            { id: "rawServe", label: "(f) raw client -> abridge serve, stdio -> raw echo", baseline: "rawDirect" },
            () => rawServeOverStdio({ ...serve, config: rawConfig }),
            "echo_echo",
            options,
          ),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  for (const row of rows) {
    if (row.id === "direct" || row.id === "rawDirect") continue;
    const base = rows.find((r) => r.id === (row.baseline ?? "direct"));
    if (base?.p50Ms === undefined || row.p50Ms === undefined) continue;
    row.addedP50Ms = row.p50Ms - base.p50Ms;
    if (row.p99Ms !== undefined && base.p99Ms !== undefined) row.addedP99Ms = row.p99Ms - base.p99Ms;
  }
  return {
    upstream:
      "test/fixtures/echoServer.ts over stdio (a fast stdio echo, chosen over InMemoryTransport so every path reaches the same upstream process), serve in compact mode (arguments validated)",
    method:
      "one connection per path (over HTTP: one session on a keep-alive pool of up to 64 sockets); 200 warm-up calls; p50/p99 of sequential calls; at most 1,000 sequential calls or 4 s; throughput = median calls/s of 3 runs (up to 500 calls at c=1, 1,000 at c=8, 2,000 at c=64, each run cut at 2 s); the streamable HTTP rows (c) and (c') are measured with the same SDK-free keep-alive client (bench/rawHttpClient.ts: node:http, up to 64 sockets, JSON or SSE answers), since the SDK's HTTP client tops out near 1,400 calls/s in one process",
    rows,
  };
}
