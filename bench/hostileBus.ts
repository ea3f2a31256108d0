/**
 * Hostile load on the bus worker (a benchmark, not a test): one `abridge bus` worker with default
 * limits, an echo upstream, a slow upstream and one with a large tool list, a real nats-server on
 * a free loopback port; one case at a time, a flooder in a process of its own attacks the worker
 * while a healthy requester (a BusClient here) calls echo one call after another.
 *
 *   npx tsx bench/hostileBus.ts [--full] [--calls N] [--slow-calls N] [--slow-ms MS] [--refreshes N]
 *
 * Cases: N echo calls published as fast as the flooder can (default 20,000; 100,000 with
 * --full); N slow calls (default 2,000 of 2 s; 20,000 of 5 s with --full); N two-byte refresh
 * requests (default 300). Per case: the worker's RSS before and after and its peak, the healthy
 * call's p50/p99 and failures during the case, the flood's answers (results, busy, other) and
 * calls lost (sent, never answered), slow consumers nats-server counted, the worker's CPU time,
 * and for refreshes the lists published and their bytes. Writes bench/results/hostile-bus.json.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { connect, headers } from "@nats-io/transport-node";
import { BusClient } from "../src/bus/client/busClient.js";
import { invokeSubject, metaSubject, refreshSubject } from "../src/bus/wire/busProtocol.js";
import { CLI_BIN, ECHO_FIXTURE, stdioServerToml, tsxCommand } from "./benchConfig.js";
import { REPO_ROOT } from "./corpus.js";
import { markdownTable } from "./markdownTable.js";
import { freePort, nowMs, percentile, round, processMemoryKiB, processCpuMs, positiveFlag } from "./measure.js";
import { isMainModule, runStandalone } from "./standalone.js";

const AGENT = "hostile";
const SLOW_FIXTURE = path.join(REPO_ROOT, "test", "fixtures", "misbehavingServer.ts");
const HERE = fileURLToPath(import.meta.url);

/** One case's figures. */
export interface HostileBusCase {
  case: string;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  /** The worker's peak RSS since it started (VmHWM). */
  rssPeakMiB: number;
  healthyCalls: number;
  healthyFailed: number;
  healthyP50Ms: number;
  healthyP99Ms: number;
  seconds: number;
  /** Flood cases: calls sent, answers by outcome, calls never answered. */
  sent?: number;
  answered?: Record<string, number>;
  lost?: number;
  /** Seconds the flooder took to publish every call. */
  publishSeconds?: number;
  /** Refresh case: lists published on tool.meta.mcp.<agent> and their bytes. */
  listsPublished?: number;
  publishedMiB?: number;
  /** The worker's CPU time (user and system) during the case, the healthy calls' included. */
  workerCpuMs: number;
  /** Slow consumers nats-server counted during the case. */
  slowConsumers: number;
  /** Disconnects the worker logged during the case. */
  workerDisconnects: number;
}

/** Result of {@link runHostileBus}. */
export interface HostileBusResult {
  method: string;
  cases: HostileBusCase[];
  notAvailable?: string;
}

/** Options of {@link runHostileBus}. */
export interface HostileBusOptions {
  full?: boolean;
  calls?: number;
  slowCalls?: number;
  slowMs?: number;
  refreshes?: number;
}

/** RSS (or peak RSS) of `pid` in MiB. */
function memoryMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  return round(processMemoryKiB(pid, field) / 1024, 1);
}

/** User plus system CPU time of `pid` in ms. */
function cpuMs(pid: number): number {
  return processCpuMs(pid) ?? Number.NaN;
}

function startNats(port: number, monitor: number): Promise<ChildProcess> {
  const child = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port), "-m", String(monitor)], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  return new Promise((resolve, reject) => {
    child.stderr!.on("data", (b: Buffer) => {
      log += b.toString("utf8");
      if (log.includes("Server is ready")) resolve(child);
    });
    child.once("exit", (code) => reject(new Error(`nats-server exited with ${code}: ${log}`)));
  });
}

async function slowConsumers(monitor: number): Promise<number> {
  const varz = (await (await fetch(`http://127.0.0.1:${monitor}/varz`)).json()) as { slow_consumers?: number };
  return varz.slow_consumers ?? 0;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  await exited;
}

/** The flooder's summary line. */
interface FloodSummary {
  sent: number;
  answered: Record<string, number>;
  lost: number;
  publishSeconds: number;
}

/** Runs the flooder (this file with `--flood`): `ready` once it is connected and about to publish, `done` with its summary. */
function flood(
  url: string,
  tool: string,
  args: Record<string, unknown>,
  calls: number,
  quietMs: number,
): { ready: Promise<void>; done: Promise<FloodSummary> } {
  const { command, args: argv } = tsxCommand(HERE, ["--flood", url, tool, JSON.stringify(args), String(calls), String(quietMs)]);
  const child = spawn(command, argv, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout!.on("data", (b: Buffer) => {
    out += b.toString("utf8");
    if (out.startsWith("ready\n")) onReady();
  });
  const done = new Promise<FloodSummary>((resolve, reject) => {
    child.once("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out.slice("ready\n".length)) as FloodSummary) : reject(new Error(`flooder exited with ${code}: ${out}`)),
    );
  });
  done.catch(() => onReady());
  return { ready, done };
}

/** The flooder: publishes `calls` calls as fast as it can, counts the answers until all came or none came for `quietMs`. */
async function runFlooder(url: string, tool: string, argsJson: string, calls: number, quietMs: number): Promise<void> {
  const nc = await connect({ servers: url, name: "hostile-flooder" });
  const answered: Record<string, number> = {};
  let count = 0;
  let last = nowMs();
  const seen = new Set<number>();
  nc.subscribe("_INBOX.flood.*", {
    callback: (_err, msg) => {
      const i = Number(msg.subject.slice("_INBOX.flood.".length));
      if (seen.has(i)) return;
      seen.add(i);
      const body = msg.json<{ ok: boolean; error?: { code: string } }>();
      const outcome = body.ok ? "result" : body.error!.code;
      answered[outcome] = (answered[outcome] ?? 0) + 1;
      count += 1;
      last = nowMs();
    },
  });
  await nc.flush();
  const marked = headers();
  marked.set("Content-Trust", "tool-request");
  const subject = invokeSubject(AGENT);
  process.stdout.write("ready\n");
  const started = nowMs();
  for (let i = 0; i < calls; i++) {
    nc.publish(subject, `{"id":${i},"agent":"${AGENT}","tool":"${tool}","arguments":${argsJson}}`, { headers: marked, reply: `_INBOX.flood.${i}` });
    // Let the socket take what was written now and then; never wait for the server.
    if (i % 1000 === 999) await new Promise((resolve) => setImmediate(resolve));
  }
  await nc.flush();
  const publishSeconds = (nowMs() - started) / 1000;
  last = nowMs();
  while (count < calls && nowMs() - last < quietMs) await new Promise((resolve) => setTimeout(resolve, 100));
  await nc.close();
  process.stdout.write(JSON.stringify({ sent: calls, answered, lost: calls - count, publishSeconds: round(publishSeconds, 2) } satisfies FloodSummary));
}

/** Publishes `refreshes` two-byte refresh requests; counts the lists the worker publishes until none came for 3 s. */
async function refreshFlood(url: string, refreshes: number): Promise<Partial<HostileBusCase>> {
  const nc = await connect({ servers: url, name: "hostile-refresher" });
  let published = 0;
  let bytes = 0;
  let last = nowMs();
  nc.subscribe(metaSubject(AGENT), {
    callback: (_err, msg) => {
      published += 1;
      bytes += msg.data.length;
      last = nowMs();
    },
  });
  await nc.flush();
  const marked = headers();
  marked.set("Content-Trust", "tool-request");
  for (let i = 0; i < refreshes; i++) nc.publish(refreshSubject(AGENT), "{}", { headers: marked });
  await nc.flush();
  last = nowMs();
  // Lists come at most one a second: done once none came for three.
  while (nowMs() - last < 3_000) await new Promise((resolve) => setTimeout(resolve, 100));
  await nc.close();
  return { listsPublished: published, publishedMiB: round(bytes / 1024 / 1024, 2) };
}

/** Healthy echo calls one after another until `until` settles; latencies of those answered. */
async function healthy(client: BusClient, until: Promise<unknown>): Promise<{ latencies: number[]; failed: number }> {
  let done = false;
  void until.finally(() => (done = true));
  const latencies: number[] = [];
  let failed = 0;
  while (!done) {
    const t0 = nowMs();
    try {
      await client.callTool(AGENT, "echo_echo", { text: "healthy" }, { timeoutMs: 60_000 });
      latencies.push(nowMs() - t0);
    } catch {
      failed += 1;
    }
    // A requester of normal habits: a call now and then, not a loop as fast as it can.
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return { latencies, failed };
}

/** Runs the attacks on one worker with default limits. */
export async function runHostileBus(options: HostileBusOptions = {}): Promise<HostileBusResult> {
  const full = options.full === true;
  const calls = options.calls ?? (full ? 100_000 : 20_000);
  const slowCalls = options.slowCalls ?? (full ? 20_000 : 2_000);
  const slowMs = options.slowMs ?? (full ? 5_000 : 2_000);
  const refreshes = options.refreshes ?? 300;
  const method =
    `one abridge bus worker (default limits: 64 running, 256 waiting; full mode; echo, slow and 400-tool upstreams), nats-server on loopback, ` +
    `a flooder process publishing as fast as it can, a healthy BusClient calling echo one call at a time (5 ms apart) during each case`;
  if (spawnSync("nats-server", ["--version"]).status !== 0) return { method, cases: [], notAvailable: "nats-server is not installed" };
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-hostile-bus-"));
  const port = await freePort();
  const monitor = await freePort();
  const nats = await startNats(port, monitor);
  const url = `nats://127.0.0.1:${port}`;
  const cases: HostileBusCase[] = [];
  let worker: ChildProcess | undefined;
  try {
    const config = path.join(dir, "abridge.toml");
    const settings = ['mode = "full"', 'log_level = "warn"', 'cache_dir = "cache"', "startup_grace_ms = 120000"];
    await writeFile(
      config,
      [
        ...settings,
        "",
        stdioServerToml("echo", ECHO_FIXTURE, ["--tools", "0"]),
        stdioServerToml("slow", SLOW_FIXTURE),
        stdioServerToml("big", ECHO_FIXTURE, ["--tools", "400", "--long", "--page-size", "1000"]),
      ].join("\n"),
    );
    const { command, args } = tsxCommand(CLI_BIN, ["bus", "--nats", url, "--agent", AGENT, "--config", config, "--no-watch"]);
    const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"], env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" } });
    worker = child;
    let stderr = "";
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on("data", (b: Buffer) => {
        stderr += b.toString("utf8");
        if (/worker \S+ on nats:/.test(stderr)) resolve();
      });
      child.once("exit", (code) => reject(new Error(`abridge bus exited with ${code}: ${stderr}`)));
    });
    const pid = child.pid!;
    const client = await BusClient.connect({ nats: url });
    const disconnects = (): number => stderr.match(/lost the NATS server/g)?.length ?? 0;
    try {
      /** Runs `attack` while the healthy requester calls, from when the attack is ready until it is done. */
      const measure = async (name: string, attack: () => { ready: Promise<void>; done: Promise<Partial<HostileBusCase>> }): Promise<void> => {
        process.stderr.write(`bench: hostileBus: ${name}...\n`);
        const rssBefore = await memoryMiB(pid, "VmRSS");
        const slowBefore = await slowConsumers(monitor);
        const disconnectsBefore = disconnects();
        const cpuBefore = await cpuMs(pid);
        const attacked = attack();
        await attacked.ready;
        const t0 = nowMs();
        const probe = await healthy(client, attacked.done);
        const figures = await attacked.done;
        cases.push({
          case: name,
          rssBeforeMiB: rssBefore,
          rssAfterMiB: await memoryMiB(pid, "VmRSS"),
          rssPeakMiB: await memoryMiB(pid, "VmHWM"),
          healthyCalls: probe.latencies.length,
          healthyFailed: probe.failed,
          healthyP50Ms: round(percentile(probe.latencies, 50)),
          healthyP99Ms: round(percentile(probe.latencies, 99)),
          seconds: round((nowMs() - t0) / 1000, 1),
          ...figures,
          workerCpuMs: round((await cpuMs(pid)) - cpuBefore, 0),
          slowConsumers: (await slowConsumers(monitor)) - slowBefore,
          workerDisconnects: disconnects() - disconnectsBefore,
        });
      };
      const flooded = (tool: string, args: Record<string, unknown>, count: number, quietMs: number) => () => {
        const run = flood(url, tool, args, count, quietMs);
        return { ready: run.ready, done: run.done.then((s) => ({ sent: s.sent, answered: s.answered, lost: s.lost, publishSeconds: s.publishSeconds })) };
      };
      // Warm: the first calls through a fresh worker and upstream compile their code paths.
      for (let i = 0; i < 200; i++) await client.callTool(AGENT, "echo_echo", { text: "warm-up" }, { timeoutMs: 60_000 });
      await measure("baseline (no attack)", () => ({ ready: Promise.resolve(), done: new Promise((resolve) => setTimeout(() => resolve({}), 2_000)) }));
      await measure(`${calls.toLocaleString("en-US")} echo calls published at once`, flooded("echo_echo", { text: "flood" }, calls, 30_000));
      await measure(
        `${slowCalls.toLocaleString("en-US")} calls of ${slowMs / 1000} s published at once`,
        flooded("slow_wait", { ms: slowMs }, slowCalls, 30_000 + slowMs),
      );
      await measure(`${refreshes} two-byte refresh requests`, () => ({ ready: Promise.resolve(), done: refreshFlood(url, refreshes) }));
    } finally {
      await client.close();
    }
  } finally {
    if (worker !== undefined) await stop(worker);
    await stop(nats);
    await rm(dir, { recursive: true, force: true });
  }
  return { method, cases };
}

/** The markdown section of a {@link runHostileBus} result. */
export function hostileBusMarkdown(result: HostileBusResult): string {
  const lines = ["### Bus under attack", "", result.method, ""];
  if (result.notAvailable !== undefined) return [...lines, `Not measured: ${result.notAvailable}.`].join("\n");
  const answered = (c: HostileBusCase): string =>
    c.answered === undefined
      ? ""
      : Object.entries(c.answered)
          .map(([k, v]) => `${k} ${v}`)
          .join(", ");
  lines.push(
    markdownTable(
      [
        "case",
        "RSS before MiB>",
        "RSS after MiB>",
        "peak MiB>",
        "healthy calls>",
        "healthy failed>",
        "healthy p50 ms>",
        "healthy p99 ms>",
        "answered",
        "lost>",
        "slow consumers>",
        "worker CPU ms>",
        "seconds>",
      ],
      result.cases.map((c) => [
        c.case,
        c.rssBeforeMiB,
        c.rssAfterMiB,
        c.rssPeakMiB,
        c.healthyCalls,
        c.healthyFailed,
        c.healthyP50Ms,
        c.healthyP99Ms,
        c.listsPublished !== undefined ? `${c.listsPublished} lists published, ${c.publishedMiB} MiB` : answered(c),
        c.lost,
        c.slowConsumers,
        c.workerCpuMs,
        c.seconds,
      ]),
    ),
    "",
    `Measured on ${os.cpus().length} core(s); the worker, its upstreams, nats-server, the flooder and the healthy requester share them.`,
  );
  return lines.join("\n");
}

if (isMainModule(import.meta.url)) {
  const argv = process.argv.slice(2);
  if (argv[0] === "--flood") {
    const [, url, tool, argsJson, calls, quietMs] = argv as [string, string, string, string, string, string];
    await runFlooder(url, tool, argsJson, Number(calls), Number(quietMs));
  } else {
    await runStandalone(import.meta.url, {
      name: "hostile-bus",
      run: () => {
        const options: HostileBusOptions = { full: argv.includes("--full") };
        const calls = positiveFlag(argv, "calls");
        const slowCalls = positiveFlag(argv, "slow-calls");
        const slowMs = positiveFlag(argv, "slow-ms");
        const refreshes = positiveFlag(argv, "refreshes");
        if (calls !== undefined) options.calls = calls;
        if (slowCalls !== undefined) options.slowCalls = slowCalls;
        if (slowMs !== undefined) options.slowMs = slowMs;
        if (refreshes !== undefined) options.refreshes = refreshes;
        return runHostileBus(options);
      },
      markdown: hostileBusMarkdown,
    });
  }
}
