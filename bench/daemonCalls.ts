/**
 * The daemon's own share of a call: the bundled client calling through a daemon to the raw
 * JSON-RPC echo (no SDK on the far side, so the upstream's cost does not hide the daemon's) and to
 * the SDK echo fixture. Per upstream: p50 of sequential calls, calls/s at c=64, and the CPU time
 * per call of the client (this process) and of the daemon process, which a busy shared machine
 * distorts far less than wall-clock rates.
 *
 *   npx tsx bench/daemonCalls.ts    (writes bench/results/daemonCalls.json, prints markdown)
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { configToml, ECHO_FIXTURE, RAW_ECHO_FIXTURE, stdioServerToml } from "./benchConfig.js";
import { connectDaemon } from "./daemonTarget.js";
import { markdownTable } from "./markdownTable.js";
import type { Connected } from "./mcpTarget.js";
import { median, nowMs, percentile, round } from "./measure.js";
import { runStandalone } from "./standalone.js";

const ARGS = { text: "hello" };
const SEQUENTIAL_CALLS = 1_000;
const CONCURRENCY = 64;
const CALLS_PER_RUN = 4_000;
const RUNS = 5;

/** Figures of one upstream reached through the daemon. */
export interface DaemonCallsRow {
  upstream: "raw" | "sdk";
  p50Ms: number;
  p99Ms: number;
  /** Median calls/s of {@link RUNS} runs at c=64. */
  callsPerSecondC64: number;
  /** CPU (user + system) per call at c=64, client process and daemon process, in microseconds. */
  clientCpuUsPerCall: number;
  daemonCpuUsPerCall: number;
}

/** Result of {@link runDaemonCalls}. */
export interface DaemonCallsResult {
  method: string;
  rows: DaemonCallsRow[];
}

/** CPU time (user + system) of `pid` in microseconds, from /proc (clock ticks of 10 ms). */
function processCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function atConcurrency(target: Connected, total: number): Promise<number> {
  let started = 0;
  const start = nowMs();
  const worker = async (): Promise<void> => {
    while (started < total) {
      started += 1;
      await target.call("echo", ARGS);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return total / ((nowMs() - start) / 1000);
}

async function measureUpstream(upstream: "raw" | "sdk", dir: string): Promise<DaemonCallsRow> {
  const config = path.join(dir, `${upstream}.toml`);
  await writeFile(config, configToml([stdioServerToml("echo", upstream === "raw" ? RAW_ECHO_FIXTURE : ECHO_FIXTURE)], "compact"));
  const target = await connectDaemon({ config, cacheDir: path.join(dir, upstream), server: "echo" });
  try {
    if (target.pid === undefined) throw new Error("the daemon's pid is unknown");
    for (let i = 0; i < 300; i++) await target.call("echo", ARGS);
    const times: number[] = [];
    for (let i = 0; i < SEQUENTIAL_CALLS; i++) {
      const start = nowMs();
      await target.call("echo", ARGS);
      times.push(nowMs() - start);
    }
    await atConcurrency(target, 2_000);
    const client0 = process.cpuUsage();
    const daemon0 = processCpuUs(target.pid);
    const rates: number[] = [];
    for (let i = 0; i < RUNS; i++) rates.push(await atConcurrency(target, CALLS_PER_RUN));
    const client = process.cpuUsage(client0);
    const daemonUs = processCpuUs(target.pid) - daemon0;
    const calls = RUNS * CALLS_PER_RUN;
    return {
      upstream,
      p50Ms: round(percentile(times, 50), 3),
      p99Ms: round(percentile(times, 99), 3),
      callsPerSecondC64: Math.round(median(rates)),
      clientCpuUsPerCall: round((client.user + client.system) / calls, 1),
      daemonCpuUsPerCall: round(daemonUs / calls, 1),
    };
  } finally {
    await target.close();
  }
}

/** Runs the bundled client through a daemon to the raw echo and to the SDK echo. */
export async function runDaemonCalls(): Promise<DaemonCallsResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-daemon-calls-"));
  try {
    const rows = [await measureUpstream("raw", dir), await measureUpstream("sdk", dir)];
    return {
      method: `DaemonClient (auto-started daemon) -> echo over stdio; 300 warm-up calls; p50/p99 of ${SEQUENTIAL_CALLS} sequential calls; calls/s = median of ${RUNS} runs of ${CALLS_PER_RUN} calls at c=${CONCURRENCY}; CPU per call over those runs (client: this process; daemon: /proc, 10 ms ticks)`,
      rows,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Markdown of a {@link DaemonCallsResult}. */
export function daemonCallsMarkdown(r: DaemonCallsResult): string {
  const label = (upstream: string): string => (upstream === "raw" ? "daemon client -> raw JSON-RPC echo" : "daemon client -> SDK echo");
  return [
    "### Daemon calls (the daemon's own share)",
    "",
    markdownTable(
      ["path", "p50 ms", "p99 ms", `calls/s c=${CONCURRENCY}`, "client CPU us/call", "daemon CPU us/call"],
      r.rows.map((row) => [label(row.upstream), row.p50Ms, row.p99Ms, row.callsPerSecondC64, row.clientCpuUsPerCall, row.daemonCpuUsPerCall]),
    ),
    "",
    r.method,
  ].join("\n");
}

await runStandalone(import.meta.url, { name: "daemonCalls", run: () => runDaemonCalls(), markdown: daemonCallsMarkdown });
