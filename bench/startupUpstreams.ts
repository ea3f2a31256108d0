/**
 * Start-up with N upstreams, against the floor measured in the same run: abridge and the echo
 * fixture run as prebuilt JavaScript under plain `node` (bench/buildJs.ts; abridge as the CLI bundle users run), so a TypeScript
 * loader's compile time is in neither figure and abridge's own share is what is left.
 *
 * - floor: N raw clients (bench/rawStdioClient.ts, no SDK) spawn the fixture at once; each child's
 *   time is spawn to its complete `tools/list` answer; the floor is the slowest child's.
 * - abridge: a raw client spawns `node <built>/cli/bin.js serve` with the same N upstreams and
 *   times spawn to the first complete `tools/list`. `startup_grace_ms` is set high, so that first
 *   list waits for every upstream and holds all their tools (the row shows how many it had).
 * - share = abridge - floor, per run; medians over the runs, floor and abridge in alternation.
 *
 * Runnable alone: `npx tsx bench/startupUpstreams.ts [counts...]` writes
 * bench/results/startup-upstreams.json and prints the markdown section.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { buildJs, type BuiltJs } from "./buildJs.js";
import { REPO_ROOT } from "./corpus.js";
import { markdownTable } from "./markdownTable.js";
import { median, nowMs, round, sleep, processCpuMs } from "./measure.js";
import { connectRawStdio } from "./rawStdioClient.js";
import { runStandalone } from "./standalone.js";

/** Tools of one echo fixture as the bench starts it (`echo`, `add` and 5 generated). */
const TOOLS_PER_UPSTREAM = 7;
/** Long enough that the first list waits for every upstream, however loaded the machine is. */
const GRACE_MS = 120_000;

/** One upstream count: the floor, abridge's time to the first complete list, and the difference. */
export interface StartupUpstreamsRow {
  upstreams: number;
  /** Tools in abridge's first `tools/list` answer (last run), meta-tools included. */
  tools: number;
  /** Tools the upstreams have together; the first answer holds all of them when complete. */
  upstreamTools: number;
  /** How abridge and its upstreams were run. */
  via: string;
  runs: number;
  /** Slowest of N fixtures started at once by raw clients: spawn to tools/list answer (median over runs). */
  floorMsMedian: number;
  /** Spawn of `serve` to its first complete `tools/list`, empty cache (median). */
  coldMsMedian: number;
  /** The same with the cache the cold run wrote (median). */
  warmMsMedian: number;
  /** abridge's share, cold and warm: its time minus the floor of the same run (medians). */
  coldShareMsMedian: number;
  warmShareMsMedian: number;
  /** CPU time (user + system) of the serve process itself up to its first answer, warm (median). */
  warmServeCpuMsMedian: number | undefined;
  floorMsRuns: number[];
  coldMsRuns: number[];
  warmMsRuns: number[];
  /** Cache entries present for the warm runs. */
  warmEntries: number;
}

/** Result of {@link runStartupUpstreams}. */
export interface StartupUpstreamsResult {
  method: string;
  /** Wall time of building abridge and the fixtures to JavaScript (not part of any row). */
  buildMs: number;
  cores: number;
  rows: StartupUpstreamsRow[];
}

/** Options of {@link runStartupUpstreams}. */
export interface StartupUpstreamsOptions {
  /** Upstream counts (default 1, 10, 50). */
  counts?: number[];
  /** Runs per count (default 3). */
  runs?: number;
  signal?: AbortSignal;
  /** Built files to use instead of building (tests of the bench, or a caller that built already). */
  built?: BuiltJs;
}

function upstreamToml(name: string, built: BuiltJs): string {
  return `[servers.${JSON.stringify(name)}]\ncommand = ${JSON.stringify(process.execPath)}\nargs = ${JSON.stringify([built.echoFixture, "--page-size", "100"])}\nconnect_timeout_ms = 120000\n`;
}

/** The slowest of `n` fixtures started at once, spawn to tools/list answer. */
async function floorMs(n: number, built: BuiltJs, signal?: AbortSignal): Promise<number> {
  const started = await Promise.allSettled(
    Array.from({ length: n }, async () => {
      const start = nowMs();
      const client = await connectRawStdio(process.execPath, [built.echoFixture, "--page-size", "100"], { cwd: REPO_ROOT, ...(signal ? { signal } : {}) });
      try {
        await client.listTools();
        return { client, ms: nowMs() - start };
      } catch (err) {
        await client.close();
        throw err;
      }
    }),
  );
  await Promise.all(started.map((s) => (s.status === "fulfilled" ? s.value.client.close() : undefined)));
  const failed = started.find((s) => s.status === "rejected");
  if (failed) throw failed.reason;
  return Math.max(...started.map((s) => (s.status === "fulfilled" ? s.value.ms : 0)));
}

/** Spawn of serve to its first complete tools/list, and the serve process's CPU time by then. */
async function serveFirstList(
  configFile: string,
  cacheDir: string,
  built: BuiltJs,
  wantEntries: number,
  signal?: AbortSignal,
): Promise<{ ms: number; tools: number; cpuMs: number | undefined }> {
  const start = nowMs();
  const target = await connectRawStdio(process.execPath, [built.cliBin, "serve", "--config", configFile, "--cache-dir", cacheDir, "--no-watch"], {
    cwd: REPO_ROOT,
    ...(signal ? { signal } : {}),
  });
  try {
    const tools = await target.listTools();
    const ms = nowMs() - start;
    const cpu = processCpuMs(target.pid);
    // Let the background queue write the summaries the warm runs read: it starts only once the
    // first list is written, and a serve closed before it is done leaves the warm run half cold.
    await cacheFilled(path.join(cacheDir, "summaries.jsonl"), wantEntries, signal);
    return { ms, tools, cpuMs: cpu };
  } finally {
    await target.close();
  }
}

/** Longest wait for the queue to write a cold run's summaries (a loaded machine is slow, not stuck). */
const FILL_BOUND_MS = 60_000;

/** Waits until `file` holds `entries` lines (checked every 50 ms), at most {@link FILL_BOUND_MS}. */
async function cacheFilled(file: string, entries: number, signal?: AbortSignal): Promise<void> {
  const until = nowMs() + FILL_BOUND_MS;
  while ((await lineCount(file)) < entries && nowMs() < until) await sleep(50, signal);
}

async function lineCount(file: string): Promise<number> {
  try {
    return (await readFile(file, "utf8")).split("\n").filter((l) => l.trim() !== "").length;
  } catch {
    return 0;
  }
}

async function row(n: number, runs: number, dir: string, built: BuiltJs, signal?: AbortSignal): Promise<StartupUpstreamsRow> {
  const configFile = path.join(dir, `upstreams-${n}.toml`);
  const servers = Array.from({ length: n }, (_, i) => upstreamToml(`s${String(i).padStart(2, "0")}`, built));
  await writeFile(configFile, ['mode = "compact"', 'log_level = "error"', `startup_grace_ms = ${GRACE_MS}`, "", ...servers].join("\n"));
  const floor: number[] = [];
  const cold: number[] = [];
  const warm: number[] = [];
  const warmCpu: number[] = [];
  let tools = 0;
  let warmEntries = 0;
  for (let i = 0; i < runs; i++) {
    floor.push(await floorMs(n, built, signal));
    const cacheDir = path.join(dir, `cache-${n}-${i}`);
    const c = await serveFirstList(configFile, cacheDir, built, n * TOOLS_PER_UPSTREAM, signal);
    cold.push(c.ms);
    warmEntries = await lineCount(path.join(cacheDir, "summaries.jsonl"));
    const w = await serveFirstList(configFile, cacheDir, built, n * TOOLS_PER_UPSTREAM, signal);
    warm.push(w.ms);
    if (w.cpuMs !== undefined) warmCpu.push(w.cpuMs);
    tools = w.tools;
  }
  return {
    upstreams: n,
    tools,
    upstreamTools: n * TOOLS_PER_UPSTREAM,
    via: "node on prebuilt JS (serve and upstreams)",
    runs,
    floorMsMedian: round(median(floor), 1),
    coldMsMedian: round(median(cold), 1),
    warmMsMedian: round(median(warm), 1),
    coldShareMsMedian: round(median(cold.map((ms, i) => ms - (floor[i] ?? 0))), 1),
    warmShareMsMedian: round(median(warm.map((ms, i) => ms - (floor[i] ?? 0))), 1),
    warmServeCpuMsMedian: warmCpu.length > 0 ? median(warmCpu) : undefined,
    floorMsRuns: floor.map((v) => round(v, 1)),
    coldMsRuns: cold.map((v) => round(v, 1)),
    warmMsRuns: warm.map((v) => round(v, 1)),
    warmEntries,
  };
}

/** The method text of {@link runStartupUpstreams}. */
export const STARTUP_UPSTREAMS_METHOD =
  "abridge (its CLI bundle, as `npm run build` makes it: build/bundleCli.ts) and the echo fixture are built to JavaScript once per run and run with plain `node`, not tsx, so no TypeScript compile is in any figure (the earlier tsx rows were dominated by it: 50 upstreams took 4.8-6.4 s, most of it tsx). " +
  "floor = the slowest of N fixtures spawned at once by raw JSON-RPC clients, spawn to its tools/list answer; " +
  `abridge = spawn of \`serve\` (stdio, raw client) to its first tools/list answer, with startup_grace_ms = ${GRACE_MS} so that answer waits for every upstream (tools = what it held, meta-tools included; upstream tools = what the upstreams have); ` +
  "share = abridge - floor of the same run; cold = empty cache, warm = the cache the cold run wrote; floor, cold and warm run in alternation, medians over the runs. " +
  "serve CPU = user + system time of the serve process itself (not its children) at its first answer, warm.";

/**
 * Start-up to the first complete `tools/list` with 1, 10 and 50 upstreams, beside the floor of the
 * same upstreams started without abridge.
 */
export async function runStartupUpstreams(options: StartupUpstreamsOptions = {}): Promise<StartupUpstreamsResult> {
  const built = options.built ?? (await buildJs());
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-upstreams-"));
  try {
    const rows: StartupUpstreamsRow[] = [];
    for (const n of options.counts ?? [1, 10, 50]) rows.push(await row(n, options.runs ?? 3, dir, built, options.signal));
    return { method: STARTUP_UPSTREAMS_METHOD, buildMs: round(built.buildMs, 0), cores: os.cpus().length, rows };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The markdown section of a {@link runStartupUpstreams} result. */
export function startupUpstreamsMarkdown(result: StartupUpstreamsResult): string {
  const ms = (v: number | undefined): string => (v === undefined ? "—" : v.toFixed(0));
  return [
    "### Start-up with N upstreams (node, prebuilt JS)",
    "",
    result.method,
    "",
    markdownTable(
      [
        "upstreams>",
        "tools (upstream tools)>",
        "runs>",
        "floor ms>",
        "cold ms>",
        "cold share ms>",
        "warm ms>",
        "warm share ms>",
        "serve CPU ms (warm)>",
        "warm cache entries>",
      ],
      result.rows.map((r) => [
        r.upstreams,
        `${r.tools} (${r.upstreamTools})`,
        r.runs,
        ms(r.floorMsMedian),
        ms(r.coldMsMedian),
        ms(r.coldShareMsMedian),
        ms(r.warmMsMedian),
        ms(r.warmShareMsMedian),
        ms(r.warmServeCpuMsMedian),
        r.warmEntries,
      ]),
    ),
    "",
    `Measured on ${result.cores} core(s), shared by the fixtures, serve and the client.`,
  ].join("\n");
}

await runStandalone(import.meta.url, {
  name: "startup-upstreams",
  run: (argv) => {
    const counts = argv.map(Number).filter((n) => Number.isInteger(n) && n > 0);
    return runStartupUpstreams(counts.length > 0 ? { counts } : {});
  },
  markdown: startupUpstreamsMarkdown,
});
