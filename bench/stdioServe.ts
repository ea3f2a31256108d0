import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { configToml, ECHO_FIXTURE, RAW_ECHO_FIXTURE, stdioServerToml, tsxCommand } from "./benchConfig.js";
import { markdownTable, pct } from "./markdownTable.js";
import { connectStdio, type Connected } from "./mcpTarget.js";
import { median, nowMs, percentile, processCpuMs } from "./measure.js";
import { connectRawStdio } from "./rawStdioClient.js";
import { rawServeOverStdio, serveOverStdio } from "./serveProcess.js";
import { runStandalone } from "./standalone.js";

/** Figures of one path to the echo tool over stdio. */
export interface StdioServeRow {
  id: string;
  label: string;
  notAvailable?: string;
  p50Ms?: number;
  p99Ms?: number;
  /** Median calls/s of the c=64 runs. */
  callsPerSecond64?: number;
  /** CPU time of the `serve` process per call during the c=64 runs (user + system, all threads). */
  serveCpuUsPerCall64?: number;
  /** For a serve row: p50 above its direct row, and its calls/s at c=64 as a share of direct's. */
  addedP50Ms?: number;
  shareOfDirect64?: number;
}

/** Result of {@link runStdioServe}. */
export interface StdioServeResult {
  method: string;
  rows: StdioServeRow[];
  /** The targets and whether this run met them. */
  targets: { name: string; target: string; measured: string; met: boolean | undefined }[];
}

const ARGS = { text: "hello" };
const SERIES_CALLS = 2_000;
const SERIES_BUDGET_MS = 3_000;
const C64_CALLS = 4_000;
const C64_BUDGET_MS = 2_000;
const REPEATS = 3;

async function measure(id: string, label: string, open: () => Promise<Connected>, tool: string, serve: boolean): Promise<StdioServeRow> {
  let target: Connected | undefined;
  try {
    target = await open();
    const connected = target;
    for (let i = 0; i < 300; i++) await connected.call(tool, ARGS);
    const times: number[] = [];
    const deadline = nowMs() + SERIES_BUDGET_MS;
    while (times.length < SERIES_CALLS && nowMs() < deadline) {
      const start = nowMs();
      await connected.call(tool, ARGS);
      times.push(nowMs() - start);
    }
    const rates: number[] = [];
    let cpu = 0;
    let calls = 0;
    for (let run = 0; run < REPEATS; run++) {
      let started = 0;
      let done = 0;
      const cpuBefore = serve ? processCpuMs(connected.pid) : undefined;
      const start = nowMs();
      const end = start + C64_BUDGET_MS;
      const worker = async (): Promise<void> => {
        while (started < C64_CALLS && nowMs() < end) {
          started += 1;
          await connected.call(tool, ARGS);
          done += 1;
        }
      };
      await Promise.all(Array.from({ length: 64 }, worker));
      rates.push(done / ((nowMs() - start) / 1000));
      const cpuAfter = serve ? processCpuMs(connected.pid) : undefined;
      if (cpuBefore !== undefined && cpuAfter !== undefined) {
        cpu += cpuAfter - cpuBefore;
        calls += done;
      }
    }
    return {
      id,
      label,
      p50Ms: percentile(times, 50),
      p99Ms: percentile(times, 99),
      callsPerSecond64: median(rates),
      ...(serve && calls > 0 ? { serveCpuUsPerCall64: (cpu * 1000) / calls } : {}),
    };
  } catch (err) {
    return { id, label, notAvailable: err instanceof Error ? (err.message.split("\n")[0] ?? String(err)) : String(err) };
  } finally {
    await target?.close();
  }
}

/**
 * `abridge serve` over stdio against the pipe hop it adds, for the targets of the speed issue:
 * a raw JSON-RPC client to a raw JSON-RPC echo directly and through serve, and the SDK client
 * to the SDK echo fixture directly and through serve (compact mode: arguments validated). Per
 * path: p50/p99 of sequential calls, calls/s at 64 concurrent callers, and serve's own CPU time
 * per call at c=64, the figure least moved by other load on a shared machine.
 */
export async function runStdioServe(): Promise<StdioServeResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-stdio-serve-"));
  const rows: StdioServeRow[] = [];
  try {
    const rawConfig = path.join(dir, "raw.toml");
    await writeFile(rawConfig, configToml([stdioServerToml("echo", RAW_ECHO_FIXTURE)], "compact"));
    const sdkConfig = path.join(dir, "sdk.toml");
    await writeFile(sdkConfig, configToml([stdioServerToml("echo", ECHO_FIXTURE)], "compact"));
    const rawEcho = tsxCommand(RAW_ECHO_FIXTURE);
    const sdkEcho = tsxCommand(ECHO_FIXTURE);
    rows.push(await measure("rawDirect", "raw client -> raw echo (one pipe hop)", () => connectRawStdio(rawEcho.command, rawEcho.args), "echo", false));
    rows.push(
      await measure("rawServe", "raw client -> abridge serve -> raw echo", () => rawServeOverStdio({ config: rawConfig, cacheDir: dir }), "echo_echo", true),
    );
    rows.push(await measure("sdkDirect", "SDK client -> SDK echo", () => connectStdio(sdkEcho.command, sdkEcho.args), "echo", false));
    rows.push(
      await measure("sdkServe", "SDK client -> abridge serve -> SDK echo", () => serveOverStdio({ config: sdkConfig, cacheDir: dir }), "echo_echo", true),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  for (const [serveId, directId] of [
    ["rawServe", "rawDirect"],
    ["sdkServe", "sdkDirect"],
  ] as const) {
    const serve = rows.find((r) => r.id === serveId);
    const direct = rows.find((r) => r.id === directId);
    if (serve?.p50Ms === undefined || direct?.p50Ms === undefined) continue;
    serve.addedP50Ms = serve.p50Ms - direct.p50Ms;
    if (serve.callsPerSecond64 !== undefined && direct.callsPerSecond64 !== undefined) serve.shareOfDirect64 = serve.callsPerSecond64 / direct.callsPerSecond64;
  }
  const row = (id: string): StdioServeRow | undefined => rows.find((r) => r.id === id);
  const ms = (value: number | undefined): string => (value === undefined ? "—" : `${value.toFixed(3)} ms`);
  const targets = [
    { name: "added p50, raw echo", target: "<= 0.1 ms", value: row("rawServe")?.addedP50Ms, limit: 0.1, format: ms },
    { name: "added p50, SDK echo", target: "<= 0.3 ms", value: row("sdkServe")?.addedP50Ms, limit: 0.3, format: ms },
  ].map((t) => ({ name: t.name, target: t.target, measured: t.format(t.value), met: t.value === undefined ? undefined : t.value <= t.limit }));
  for (const id of ["rawServe", "sdkServe"]) {
    const share = row(id)?.shareOfDirect64;
    targets.push({
      name: `c=64 share of direct, ${id === "rawServe" ? "raw" : "SDK"} echo`,
      target: ">= 50%",
      measured: pct(share) ?? "—",
      met: share === undefined ? undefined : share >= 0.5,
    });
  }
  return {
    method: `one connection per path; 300 warm-up calls; p50/p99 of up to ${SERIES_CALLS.toLocaleString("en-US")} sequential calls (${SERIES_BUDGET_MS / 1000} s at most); calls/s = median of ${REPEATS} runs of 64 concurrent callers (up to ${C64_CALLS.toLocaleString("en-US")} calls, ${C64_BUDGET_MS / 1000} s at most); serve in compact mode`,
    rows,
    targets,
  };
}

/** The markdown section of a {@link runStdioServe} result. */
export function stdioServeMarkdown(result: StdioServeResult): string {
  return [
    "### abridge serve over stdio against one pipe hop",
    "",
    result.method,
    "",
    markdownTable(
      ["path", "p50 ms>", "p99 ms>", "added p50 ms>", "calls/s c=64>", "share of direct>", "serve CPU us/call c=64>"],
      result.rows.map((r) =>
        r.notAvailable !== undefined
          ? [r.label, `not available: ${r.notAvailable}`]
          : [
              r.label,
              r.p50Ms,
              r.p99Ms,
              r.addedP50Ms,
              r.callsPerSecond64 === undefined ? undefined : Math.round(r.callsPerSecond64),
              pct(r.shareOfDirect64),
              r.serveCpuUsPerCall64 === undefined ? undefined : Math.round(r.serveCpuUsPerCall64),
            ],
      ),
    ),
    "",
    markdownTable(
      ["target", "goal", "measured", "met"],
      result.targets.map((t) => [t.name, t.target, t.measured, t.met === undefined ? undefined : t.met ? "yes" : "no"]),
    ),
    "",
    `Measured on ${os.cpus().length} core(s) shared by client, serve and upstream.`,
  ].join("\n");
}

await runStandalone(import.meta.url, { name: "stdioServe", run: () => runStdioServe(), markdown: stdioServeMarkdown });
