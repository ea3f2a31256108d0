/**
 * A stdio upstream that stops reading while a client pipelines calls to it through `abridge serve`
 * over stdio (a benchmark, not a test). serve runs two raw echo upstreams (no SDK on their side):
 * `stuck`, which stops reading its stdin for a while when its `stall` tool is called, and
 * `healthy`. The client calls `stuck_stall`, then writes N calls to `stuck_echo` at once, then a
 * prober sends serve's own `ping` and a `healthy_echo` call, one after the other, until every call
 * is answered (and the stall is over).
 *
 *   npx tsx bench/hostileStdio.ts [--full] [--calls N] [--stall-ms MS]
 *
 * Default 20,000 calls and a 10 s stall; --full: 100,000 calls and 15 s. Reported: calls answered
 * by outcome (results; UPSTREAM_BUSY past `max_pending_requests`, an answer the client can retry;
 * other errors by code) and calls lost (never answered); the first ping, which waits in the pipe
 * behind the client's own N calls (how long serve takes to read and answer them), then the worst
 * and median ping after it (serve's event loop while the calls wait and once the upstream reads
 * again); serve's longest event-loop delay during the run (bench/fixtures/loopDelayProbe.ts,
 * loaded into serve: what a ping over the same pipe cannot show, since it waits behind the
 * client's own calls); the healthy calls' p50/p99; serve's RSS before and after and its peak, and
 * its CPU time. Writes bench/results/hostile-stdio.json.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { CLI_BIN, RAW_ECHO_FIXTURE, stdioServerToml, tsxCommand } from "./benchConfig.js";
import { REPO_ROOT } from "./corpus.js";
import { markdownTable } from "./markdownTable.js";
import { nowMs, percentile, round, sleep, processMemoryKiB, processCpuMs, positiveFlag } from "./measure.js";
import { runStandalone } from "./standalone.js";

const HERE = fileURLToPath(import.meta.url);
const LOOP_DELAY_PROBE = path.join(path.dirname(HERE), "fixtures", "loopDelayProbe.ts");

/** Figures of one run. */
export interface HostileStdioResult {
  method: string;
  calls: number;
  stallMs: number;
  /** Answers to the pipelined calls by outcome: `ok`, or the error code (`UPSTREAM_BUSY`, ...). */
  answered: Record<string, number>;
  /** Pipelined calls never answered. */
  lost: number;
  /** The first ping, written after the N calls: how long serve took to read (and refuse or queue) them. */
  firstPingMs: number;
  /** serve's own `ping` after the first, answered by its event loop: the worst and the median round trip. */
  worstPingMs: number;
  pingP50Ms: number;
  pings: number;
  /** The longest time serve's event loop could not run anything, from the first call written to the last answer. */
  loopDelayMaxMs: number;
  /** Calls to the healthy upstream during the run. */
  healthyCalls: number;
  healthyFailed: number;
  healthyP50Ms: number;
  healthyP99Ms: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  /** serve's peak RSS since it started (VmHWM). */
  rssPeakMiB: number;
  /** serve's CPU time (user + system) during the run. */
  serveCpuSeconds: number;
  /** From the first pipelined call to the last answer (or the deadline). */
  seconds: number;
  notAvailable?: string;
}

/** Options of {@link runHostileStdio}. */
export interface HostileStdioOptions {
  full?: boolean;
  calls?: number;
  stallMs?: number;
}

/** RSS (or peak RSS) of `pid` in MiB. */
function memoryMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  return round(processMemoryKiB(pid, field) / 1024, 1);
}

/** User plus system CPU time of `pid` in seconds. */
function cpuSeconds(pid: number): number {
  return (processCpuMs(pid) ?? Number.NaN) / 1000;
}

/** An answer as the client reads it. */
interface Answer {
  result?: { isError?: boolean; _meta?: { "abridge/error"?: { code?: string } } };
  error?: { code?: number; message?: string };
}

/** `abridge serve` over stdio, spoken to in raw JSON lines; ids are numbers from 1. */
class RawServe {
  private readonly pending = new Map<number, (answer: Answer) => void>();
  private nextId = 1;

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout, crlfDelay: Infinity }).on("line", (line) => {
      const message = JSON.parse(line) as Answer & { id?: unknown };
      if (typeof message.id !== "number") return;
      const resolve = this.pending.get(message.id);
      this.pending.delete(message.id);
      resolve?.(message);
    });
  }

  /** The line of a request with a fresh id, and the promise of its answer. */
  prepare(method: string, params: unknown): { line: string; answer: Promise<Answer> } {
    const id = this.nextId++;
    const answer = new Promise<Answer>((resolve) => this.pending.set(id, resolve));
    return { line: `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`, answer };
  }

  request(method: string, params: unknown): Promise<Answer> {
    const { line, answer } = this.prepare(method, params);
    this.child.stdin.write(line);
    return answer;
  }

  notify(method: string): void {
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method })}\n`);
  }
}

/** `ok`, or the abridge error code of a tool error, or `rpc <code>` for a JSON-RPC error. */
function outcomeOf(answer: Answer): string {
  if (answer.error !== undefined) return `rpc ${answer.error.code}`;
  if (answer.result?.isError !== true) return "ok";
  return answer.result._meta?.["abridge/error"]?.code ?? "tool error";
}

/** Ends serve by ending its stdin and resolves once it has exited (its group is killed after 20 s). */
async function stopServe(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.stdin.end();
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // Gone already.
    }
  }, 20_000);
  await exited;
  clearTimeout(timer);
}

export async function runHostileStdio(options: HostileStdioOptions = {}): Promise<HostileStdioResult> {
  const calls = options.calls ?? (options.full === true ? 100_000 : 20_000);
  const stallMs = options.stallMs ?? (options.full === true ? 15_000 : 10_000);
  const method =
    `serve over stdio with two raw echo upstreams; the client calls stuck_stall {ms: ${stallMs}} (stuck stops reading its stdin), ` +
    `writes ${calls.toLocaleString("en-US")} stuck_echo calls at once, then a prober sends serve's ping and a healthy_echo call one after the other until every call is answered and the stall is over. ` +
    "max_pending_requests at its default (1,000): calls past it are answered UPSTREAM_BUSY (retryable), counted as answered.";
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-hostile-stdio-"));
  const config = path.join(dir, "abridge.toml");
  await writeFile(
    config,
    [
      'mode = "full"',
      'log_level = "error"',
      "startup_grace_ms = 120000",
      stdioServerToml("stuck", RAW_ECHO_FIXTURE, ["--stall"]),
      stdioServerToml("healthy", RAW_ECHO_FIXTURE),
    ].join("\n"),
  );
  const { command, args } = tsxCommand(CLI_BIN, ["serve", "--config", config, "--cache-dir", dir, "--no-watch"]);
  // After tsx's loader, before the CLI: serve reports its event-loop delay on stderr.
  args.splice(2, 0, "--import", pathToFileURL(LOOP_DELAY_PROBE).href);
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], detached: true, cwd: REPO_ROOT });
  child.stdin.on("error", () => undefined);
  let measuring = false;
  let loopDelayMaxMs = 0;
  createInterface({ input: child.stderr, crlfDelay: Infinity }).on("line", (line) => {
    const match = /^loop-delay-max-ms (\S+)$/.exec(line);
    if (match && measuring) loopDelayMaxMs = Math.max(loopDelayMaxMs, Number(match[1]));
  });
  const serve = new RawServe(child);
  try {
    const pid = child.pid!;
    await serve.request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "hostile-stdio", version: "1" } });
    serve.notify("notifications/initialized");
    // The first list waits for both upstreams (startup_grace_ms).
    await serve.request("tools/list", {});
    for (let i = 0; i < 50; i++) await serve.request("tools/call", { name: "healthy_echo", arguments: { text: "warm" } });
    const rssBeforeMiB = await memoryMiB(pid, "VmRSS");
    const cpuBefore = await cpuSeconds(pid);

    const started = nowMs();
    measuring = true;
    const stall = serve.request("tools/call", { name: "stuck_stall", arguments: { ms: stallMs } });
    const answers: Promise<Answer>[] = [];
    let batch = "";
    for (let i = 0; i < calls; i++) {
      const { line, answer } = serve.prepare("tools/call", { name: "stuck_echo", arguments: { text: `flood ${i}` } });
      answers.push(answer);
      batch += line;
      if (batch.length > 1024 * 1024) {
        child.stdin.write(batch);
        batch = "";
      }
    }
    child.stdin.write(batch);
    const pings: number[] = [];
    const healthy: number[] = [];
    let healthyFailed = 0;
    let probing = true;
    // The first ping waits in the pipe behind the calls just written.
    const prober = (async () => {
      while (probing) {
        let sent = nowMs();
        await serve.request("ping", {});
        pings.push(nowMs() - sent);
        sent = nowMs();
        const answer = await serve.request("tools/call", { name: "healthy_echo", arguments: { text: "healthy" } });
        if (outcomeOf(answer) === "ok") healthy.push(nowMs() - sent);
        else healthyFailed += 1;
        await sleep(20);
      }
    })();

    const answered: Record<string, number> = {};
    let settled = 0;
    for (const answer of answers) {
      void answer.then((a) => {
        const outcome = outcomeOf(a);
        answered[outcome] = (answered[outcome] ?? 0) + 1;
        settled += 1;
      });
    }
    // Every call has an answer by the stall, the calls' timeout (30 s) and a generous margin.
    const deadline = started + stallMs + 30_000 + 120_000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([stall, ...answers]), new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - nowMs()))))]);
    clearTimeout(timer);
    const seconds = round((nowMs() - started) / 1000, 1);
    // The window the last answers left in is reported within 250 ms.
    await sleep(300);
    measuring = false;
    probing = false;
    await Promise.race([prober, new Promise((resolve) => setTimeout(resolve, 60_000).unref())]);
    const result: HostileStdioResult = {
      method,
      calls,
      stallMs,
      answered,
      lost: calls - settled,
      firstPingMs: round(pings[0] ?? Number.NaN, 1),
      worstPingMs: round(Math.max(...pings.slice(1)), 1),
      pingP50Ms: round(percentile(pings.slice(1), 50), 2),
      pings: pings.length,
      loopDelayMaxMs: round(loopDelayMaxMs, 1),
      healthyCalls: healthy.length,
      healthyFailed,
      healthyP50Ms: round(percentile(healthy, 50), 2),
      healthyP99Ms: round(percentile(healthy, 99), 1),
      rssBeforeMiB,
      rssAfterMiB: await memoryMiB(pid, "VmRSS"),
      rssPeakMiB: await memoryMiB(pid, "VmHWM"),
      serveCpuSeconds: round((await cpuSeconds(pid)) - cpuBefore, 1),
      seconds,
    };
    return result;
  } finally {
    await stopServe(child);
    await rm(dir, { recursive: true, force: true });
  }
}

/** The markdown section of a {@link runHostileStdio} result. */
export function hostileStdioMarkdown(result: HostileStdioResult): string {
  const lines = ["### A stdio upstream that stops reading, under pipelined calls", "", result.method, ""];
  if (result.notAvailable !== undefined) return [...lines, `Not measured: ${result.notAvailable}.`].join("\n");
  const answered = Object.entries(result.answered)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
  lines.push(
    markdownTable(
      [
        "calls>",
        "stall s>",
        "answered",
        "lost>",
        "first ping ms>",
        "worst ping ms>",
        "ping p50 ms>",
        "loop delay max ms>",
        "healthy calls>",
        "healthy failed>",
        "healthy p50 ms>",
        "healthy p99 ms>",
        "RSS before MiB>",
        "RSS after MiB>",
        "peak MiB>",
        "serve CPU s>",
        "seconds>",
      ],
      [
        [
          result.calls,
          result.stallMs / 1000,
          answered,
          result.lost,
          result.firstPingMs,
          result.worstPingMs,
          result.pingP50Ms,
          result.loopDelayMaxMs,
          result.healthyCalls,
          result.healthyFailed,
          result.healthyP50Ms,
          result.healthyP99Ms,
          result.rssBeforeMiB,
          result.rssAfterMiB,
          result.rssPeakMiB,
          result.serveCpuSeconds,
          result.seconds,
        ],
      ],
    ),
    "",
    `Measured on ${os.cpus().length} core(s); serve, its upstreams and the client share them.`,
  );
  return lines.join("\n");
}

await runStandalone(import.meta.url, {
  name: "hostile-stdio",
  run: (argv) => {
    const options: HostileStdioOptions = { full: argv.includes("--full") };
    const calls = positiveFlag(argv, "calls");
    const stallMs = positiveFlag(argv, "stall-ms");
    if (calls !== undefined) options.calls = calls;
    if (stallMs !== undefined) options.stallMs = stallMs;
    return runHostileStdio(options);
  },
  markdown: hostileStdioMarkdown,
});
