/**
 * Calls over the NATS bus: calls per second and latency through `BusClient` with 1, 2 and 4
 * `abridge bus` workers of one agent (each with its own echo upstream), 64 calls in flight, a few
 * seconds per row. Everything real: a nats-server on a free loopback port, the workers as child
 * processes. `npx tsx bench/bus.ts` writes bench/results/bus.json and prints the markdown.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { BusClient } from "../src/bus/client/busClient.js";
import { CLI_BIN, ECHO_FIXTURE, stdioServerToml, tsxCommand } from "./benchConfig.js";
import { markdownTable } from "./markdownTable.js";
import { freePort, nowMs, percentile, round } from "./measure.js";
import { runStandalone } from "./standalone.js";

/** One worker count's figures. */
export interface BusRow {
  workers: number;
  calls: number;
  errors: number;
  seconds: number;
  callsPerSecond: number;
  p50Ms: number;
  p95Ms: number;
  /** How many of the calls each worker answered (from the audit logs' line counts). */
  perWorker: number[];
}

/** Result of {@link runBus}. */
export interface BusResult {
  method: string;
  concurrency: number;
  secondsPerRow: number;
  rows: BusRow[];
  /** Why nothing was measured (no nats-server on this machine). */
  notAvailable?: string;
}

/** Options of {@link runBus}. */
export interface BusBenchOptions {
  workerCounts?: number[];
  concurrency?: number;
  /** Measured time per row (after a short warm-up). */
  seconds?: number;
}

const AGENT = "bench";

function startNats(port: number): Promise<ChildProcess> {
  const child = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  return new Promise((resolve, reject) => {
    child.stderr!.on("data", (b: Buffer) => {
      log += b.toString("utf8");
      if (log.includes("Server is ready")) resolve(child);
    });
    child.once("exit", (code) => reject(new Error(`nats-server exited with ${code}: ${log}`)));
  });
}

function startWorker(config: string, nats: string): Promise<ChildProcess> {
  const { command, args } = tsxCommand(CLI_BIN, ["bus", "--nats", nats, "--agent", AGENT, "--config", config, "--no-watch"]);
  const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"], env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" } });
  let log = "";
  return new Promise((resolve, reject) => {
    child.stderr!.on("data", (b: Buffer) => {
      log += b.toString("utf8");
      if (/worker \S+ on nats:/.test(log)) resolve(child);
    });
    child.once("exit", (code) => reject(new Error(`abridge bus exited with ${code}: ${log}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  await exited;
}

/** Runs `concurrency` call loops for `ms`; returns the latencies of the calls that finished in it. */
async function drive(client: BusClient, concurrency: number, ms: number): Promise<{ latencies: number[]; errors: number }> {
  const latencies: number[] = [];
  let errors = 0;
  const end = nowMs() + ms;
  let n = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (nowMs() < end) {
        const started = nowMs();
        n += 1;
        try {
          await client.callTool(AGENT, "echo_echo", { text: `call ${n}` }, { timeoutMs: 30_000 });
          latencies.push(nowMs() - started);
        } catch {
          errors += 1;
        }
      }
    }),
  );
  return { latencies, errors };
}

async function lineCount(file: string): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  return (await readFile(file, "utf8").catch(() => "")).split("\n").filter((l) => l !== "").length;
}

/** Measures calls/s and latency over the bus for each worker count. */
export async function runBus(options: BusBenchOptions = {}): Promise<BusResult> {
  const concurrency = options.concurrency ?? 64;
  const seconds = options.seconds ?? 3;
  const method = `BusClient → nats-server (loopback) → N × abridge bus (full mode, one echo upstream each), ${concurrency} calls in flight, ${seconds} s per row after a 0.5 s warm-up`;
  if (spawnSync("nats-server", ["--version"]).status !== 0)
    return { method, concurrency, secondsPerRow: seconds, rows: [], notAvailable: "nats-server is not installed" };
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-bus-"));
  const port = await freePort();
  const nats = await startNats(port);
  const url = `nats://127.0.0.1:${port}`;
  const rows: BusRow[] = [];
  try {
    for (const count of options.workerCounts ?? [1, 2, 4]) {
      const audits: string[] = [];
      const workers: ChildProcess[] = [];
      try {
        for (let i = 0; i < count; i++) {
          const folder = path.join(dir, `w${count}-${i}`);
          await mkdir(folder);
          const audit = path.join(folder, "audit.jsonl");
          audits.push(audit);
          const config = path.join(folder, "abridge.toml");
          // Top-level keys before the first table: TOML would put them in it.
          const settings = ['mode = "full"', 'log_level = "error"', `audit_log = ${JSON.stringify(audit)}`, 'cache_dir = "cache"'];
          await writeFile(config, [...settings, "", stdioServerToml("echo", ECHO_FIXTURE)].join("\n"));
          workers.push(await startWorker(config, url));
        }
        const client = await BusClient.connect({ nats: url });
        try {
          await drive(client, concurrency, 500);
          const before = await Promise.all(audits.map(lineCount));
          const started = nowMs();
          const { latencies, errors } = await drive(client, concurrency, seconds * 1000);
          const elapsed = (nowMs() - started) / 1000;
          const after = await Promise.all(audits.map(lineCount));
          rows.push({
            workers: count,
            calls: latencies.length,
            errors,
            seconds: round(elapsed),
            callsPerSecond: Math.round(latencies.length / elapsed),
            p50Ms: round(percentile(latencies, 50)),
            p95Ms: round(percentile(latencies, 95)),
            perWorker: after.map((n, i) => n - before[i]!),
          });
        } finally {
          await client.close();
        }
      } finally {
        await Promise.all(workers.map(stop));
      }
    }
  } finally {
    await stop(nats);
    await rm(dir, { recursive: true, force: true });
  }
  return { method, concurrency, secondsPerRow: seconds, rows };
}

/** The markdown section of a {@link runBus} result. */
export function busMarkdown(result: BusResult): string {
  const lines = ["### Bus (NATS)", "", result.method, ""];
  if (result.notAvailable !== undefined) return [...lines, `Not measured: ${result.notAvailable}.`].join("\n");
  lines.push(
    markdownTable(
      ["workers>", "calls>", "errors>", "calls/s>", "p50 ms>", "p95 ms>", "calls per worker"],
      result.rows.map((r) => [r.workers, r.calls, r.errors, r.callsPerSecond, r.p50Ms, r.p95Ms, r.perWorker.join(" / ")]),
    ),
    "",
    `Measured on ${os.cpus().length} core(s); workers, their upstreams, nats-server and the client share them.`,
  );
  return lines.join("\n");
}

await runStandalone(import.meta.url, { name: "bus", run: () => runBus(), markdown: busMarkdown });
