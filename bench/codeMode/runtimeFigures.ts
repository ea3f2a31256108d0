/**
 * What a program costs through the Bridge, over the echo fixture: the start of a run (`return 1`,
 * from `runCode` to its answer), the time one tool call adds inside a program beside the same call
 * made directly with `Bridge.callTool`, and the RSS 16 concurrent runs add to a process (measured
 * in a fresh child process, bench/codeMode/rssChild.ts, which also times the first run of a process).
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Bridge } from "../../src/core/bridge.js";
import { ECHO_FIXTURE, stdioServerToml, tsxCommand } from "../benchConfig.js";
import { median, percentile } from "../measure.js";
import { openBridge } from "./openBridge.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** Concurrent runs of the memory figure (rssChild.ts runs as many). */
const RSS_RUNS = 16;

/** Figures of {@link runtimeFigures}. */
export interface RuntimeFigures {
  coldStart: {
    /** `return 1` from `Bridge.runCode` to its answer, with the worker pool warm: a fresh engine context per run (median, p90). */
    runMsMedian: number;
    runMsP90: number;
    runs: number;
  };
  toolCall: {
    /** Sequential calls per program. */
    calls: number;
    repeats: number;
    /** Per call inside a program: (run with N calls - run with none) / N, median of the repeats. */
    programUsPerCall: number;
    /** Per call made directly with `Bridge.callTool`, one after another (median of the repeats). */
    directUsPerCall: number;
    /** What a program adds to a call: program minus direct, per repeat, median. */
    addedUsPerCall: number;
    /**
     * The same in CPU time of this process (all its threads, `process.cpuUsage`): what the program
     * adds per call in work, which a loaded machine's waits for a time slice do not inflate.
     */
    addedCpuUsPerCall: number;
  };
  memory: RssFigures;
}

/** What rssChild.ts measures. */
export interface RssFigures {
  concurrentRuns: number;
  /**
   * Peak RSS during 16 concurrent runs over RSS before them, in a process whose bridge had not run
   * a program: the runtime's one-time start (worker thread, engine compiled) counts here.
   */
  extraRssMiB: number;
  /** The same after one run of `return 1` (a worker and the engine loaded): what the 16 runs themselves add. */
  extraRssPrimedMiB: number;
  /** The same once a first batch of 16 has run. */
  extraRssWarmMiB: number;
  /** `return 1` as the first run of a fresh process: worker started and engine compiled. */
  firstRunOfProcessMs: number;
}

/** What one child reports: its first batch, then a second. */
interface ChildRss {
  firstMiB: number;
  secondMiB: number;
  /** With `--primed`: how long the priming run took, the first of the process (worker started, engine compiled). */
  primingRunMs?: number;
}

/** Options of {@link runtimeFigures}; the defaults are the benchmark's, the test passes smaller ones. */
export interface RuntimeOptions {
  coldRuns?: number;
  calls?: number;
  repeats?: number;
  /** One memory child instead of two. */
  quick?: boolean;
}

async function coldStart(bridge: Bridge, runs: number): Promise<RuntimeFigures["coldStart"]> {
  const samples: number[] = [];
  for (let i = 0; i < runs + 10; i++) {
    const t = performance.now();
    const { result } = await bridge.runCode("return 1");
    const ms = performance.now() - t;
    if (result.returnJson !== "1") throw new Error(`return 1 answered ${JSON.stringify(result)}`);
    if (i >= 10) samples.push(ms);
  }
  return { runMsMedian: median(samples), runMsP90: percentile(samples, 90), runs };
}

/**
 * Each repeat runs the program without calls, the program with `calls` sequential calls, and the
 * same calls made directly, one after the other, so a change of load on a busy machine falls on
 * all three; the figure is the median over the repeats of what the program adds per call.
 */
async function toolCall(bridge: Bridge, calls: number, repeats: number): Promise<RuntimeFigures["toolCall"]> {
  const cpuUs = (since: NodeJS.CpuUsage): number => {
    const used = process.cpuUsage(since);
    return used.user + used.system;
  };
  const program = async (code: string): Promise<{ ms: number; cpuUs: number }> => {
    const cpu = process.cpuUsage();
    const { result } = await bridge.runCode(code, { limits: { max_calls: calls + 1 } });
    if (!result.ok) throw new Error(`program failed: ${JSON.stringify(result.error)}`);
    return { ms: result.durationMs, cpuUs: cpuUs(cpu) };
  };
  const direct = async (): Promise<{ ms: number; cpuUs: number }> => {
    const cpu = process.cpuUsage();
    const t = performance.now();
    for (let i = 0; i < calls; i++) {
      const result = await bridge.callTool("echo_echo", { text: String(i) }, { mode: "compact" });
      if (result.isError === true) throw new Error(`echo_echo failed: ${JSON.stringify(result.content)}`);
    }
    return { ms: performance.now() - t, cpuUs: cpuUs(cpu) };
  };
  const programUs: number[] = [];
  const directUs: number[] = [];
  const addedUs: number[] = [];
  const addedCpuUs: number[] = [];
  for (let r = 0; r < repeats; r++) {
    const none = await program(`let n = 0; for (let i = 0; i < ${calls}; i++) n += String(i).length; return n;`);
    const withCalls = await program(`let n = 0; for (let i = 0; i < ${calls}; i++) n += String(await echo.echo({ text: String(i) })).length; return n;`);
    const plain = await direct();
    programUs.push(((withCalls.ms - none.ms) * 1000) / calls);
    directUs.push((plain.ms * 1000) / calls);
    addedUs.push(((withCalls.ms - none.ms - plain.ms) * 1000) / calls);
    addedCpuUs.push((withCalls.cpuUs - none.cpuUs - plain.cpuUs) / calls);
  }
  return {
    calls,
    repeats,
    programUsPerCall: median(programUs),
    directUsPerCall: median(directUs),
    addedUsPerCall: median(addedUs),
    addedCpuUsPerCall: median(addedCpuUs),
  };
}

/** Runs rssChild.ts in a fresh node process (`primed`: one run before the batches) and reads its one JSON line. */
function rssInChild(dir: string, primed: boolean): Promise<ChildRss> {
  const { command, args } = tsxCommand(path.join(HERE, "rssChild.ts"), [dir, ...(primed ? ["--primed"] : [])]);
  return new Promise((resolve, reject) => {
    const child = spawn(command, ["--expose-gc", ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) reject(new Error(`rssChild exited with ${code}`));
      else resolve(JSON.parse(out.trim().split("\n").pop() ?? "") as ChildRss);
    });
  });
}

/** Both children; `quick` runs the cold one alone (the primed figures are then NaN). */
async function memory(dir: string, quick: boolean): Promise<RssFigures> {
  const cold = await rssInChild(path.join(dir, "cold"), false);
  const primed = quick ? undefined : await rssInChild(path.join(dir, "primed"), true);
  return {
    concurrentRuns: RSS_RUNS,
    extraRssMiB: cold.firstMiB,
    extraRssPrimedMiB: primed?.firstMiB ?? Number.NaN,
    extraRssWarmMiB: cold.secondMiB,
    firstRunOfProcessMs: primed?.primingRunMs ?? Number.NaN,
  };
}

/** The three runtime figures through a bridge over the echo fixture, under `dir`. */
export async function runtimeFigures(dir: string, options: RuntimeOptions = {}): Promise<RuntimeFigures> {
  const bridge = await openBridge(path.join(dir, "echo"), [stdioServerToml("echo", ECHO_FIXTURE)]);
  try {
    const cold = await coldStart(bridge, options.coldRuns ?? 200);
    const call = await toolCall(bridge, options.calls ?? 200, options.repeats ?? 25);
    return { coldStart: cold, toolCall: call, memory: await memory(path.join(dir, "rss"), options.quick === true) };
  } finally {
    await bridge.close();
  }
}
