/**
 * The program runtime of the code view (src/code/): what a run costs, and why it runs on worker
 * threads.
 *
 * - transpiler: sucrase's import in a fresh process, and one transform of a small and a large program
 *   (on a program's worker thread, so it is not on the event loop);
 * - cold start: a run of `return 1` from `runProgram` to its result, on a warm pool and on a new one;
 * - a tool call: the time one call adds to a program, awaited one by one and all at once;
 * - memory: the RSS 16 concurrent runs add to a process (in a fresh child process);
 * - the event loop: its largest delay while a program loops for a second;
 * - beside each, the same engine on the main thread (the design not taken): no thread hop and less
 *   memory, but a looping program holds the event loop until its deadline.
 *
 * `npx tsx bench/codeRuntime.ts` prints the tables and writes bench/results/code-runtime.json;
 * `--transpilers <dir>/node_modules` also measures the type strippers installed there that were
 * weighed against sucrase (ts-blank-space, amaro), e.g. after
 * `npm install --prefix <dir> ts-blank-space@0.9.0 amaro@1.2.1`.
 * Figures are what this machine measured in this run; no figure is asserted.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createRequire } from "node:module";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { newQuickJSWASMModule, type QuickJSWASMModule } from "quickjs-emscripten";
import { MAX_PROGRAM_BYTES } from "../src/code/runtime/codeLimits.js";
import { runProgram, type CodeHost } from "../src/code/runtime/codeRuntime.js";
import { CodeWorkerPool } from "../src/code/runtime/workerPool.js";
import { markdownTable } from "./markdownTable.js";
import { median, percentile, round } from "./measure.js";
import { isMainModule, runStandalone } from "./standalone.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..");

/** Result of {@link runCodeRuntime}. */
export interface CodeRuntimeResult {
  machine: { cores: number; node: string; loadAverage1m: number };
  /** The transpiler taken first, then any others measured beside it. */
  transpiler: {
    name: string;
    /** Its import in a fresh node process (median of the runs). */
    importMsMedian: number;
    importRuns: number;
    /** One transform of a 12-line TypeScript program (median), and of one as large as a program may be. */
    smallProgramUsMedian: number;
    largeProgramUsMedian: number;
    largeProgramLines: number;
    largeProgramBytes: number;
  }[];
  coldStart: {
    /** `return 1` on a warm pool: one worker idle, transpiler and engine loaded (median, p90). */
    warmRunMsMedian: number;
    warmRunMsP90: number;
    runs: number;
    /** The first run on a new pool: engine compiled, worker started, transpiler loaded before. */
    firstRunOnNewPoolMs: number;
  };
  toolCall: {
    calls: number;
    /** Added by one call awaited one after another: (time with N calls - time with none) / N. */
    sequentialUsPerCall: number;
    /** The same with all N calls made at once (Promise.all, max_concurrent_calls = N). */
    batchedUsPerCall: number;
  };
  memory: {
    concurrentRuns: number;
    /** RSS added by 16 runs at once, each holding a small data set and waiting on a call, from a process that had not used the runtime. */
    extraRssMiB: number;
    /** The same from a pool already warm (one idle worker). */
    extraRssFromWarmMiB: number;
    threads: number;
  };
  eventLoop: {
    loopMs: number;
    /** Largest event-loop delay of the process while a program loops on a worker. */
    workerMaxDelayMs: number;
    /** The same with the loop on the main thread's engine. */
    mainThreadMaxDelayMs: number;
  };
  /** The same engine on the main thread: the design not taken. */
  mainThread: { runMsMedian: number; sequentialUsPerCall: number; extraRss16MiB: number };
}

const SMALL_PROGRAM = [
  "interface Issue { id: number; title: string; labels?: string[] }",
  "const open = (await github.list_issues({ repo: 'a/b', state: 'open' })) as Issue[];",
  "const byLabel = new Map<string, number>();",
  "for (const issue of open) {",
  "  for (const label of issue.labels ?? []) byLabel.set(label, (byLabel.get(label) ?? 0) + 1);",
  "}",
  "const top = [...byLabel.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5);",
  "console.log(`open: ${open.length}`);",
  "function title<T extends Issue>(i: T): string { return `#${i.id} ${i.title}`; }",
  "const first = open[0] !== undefined ? title(open[0]) : 'none';",
  "const summary: { top: [string, number][]; first: string } = { top, first };",
  "return summary;",
].join("\n");

/** The small program repeated (names made distinct) up to the largest program a run takes. */
function largeProgram(): string {
  const lines: string[] = [];
  for (let i = 0; ; i++) {
    const next = SMALL_PROGRAM.replace(/\breturn summary;/, `const keep${i} = summary;`).replace(/\b(open|byLabel|top|first|summary|title)\b/g, `$1${i}`);
    if (Buffer.byteLength([...lines, next, "return 1;"].join("\n")) > MAX_PROGRAM_BYTES) break;
    lines.push(next);
  }
  return `${lines.join("\n")}\nreturn 1;`;
}

function usPer(fn: () => unknown, rounds: number): number {
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    fn();
    samples.push((performance.now() - t) * 1000);
  }
  return median(samples);
}

/** A fresh node process runs `script` (ES module, from the checkout's root) and prints one JSON line. */
function child(args: string[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    proc.on("error", reject);
    proc.on("exit", (code) => {
      if (code !== 0) reject(new Error(`child exited with ${code}`));
      else resolve(JSON.parse(out.trim().split("\n").pop()!));
    });
  });
}

/** A type stripper: how to import it (an absolute file URL or a package name) and strip a program with it. */
interface Candidate {
  name: string;
  specifier: string;
  strip(module: unknown): (code: string) => string;
}

/** The transpiler taken (sucrase) and, with `--transpilers <node_modules>`, the others weighed against it. */
function candidates(otherModules: string | undefined): Candidate[] {
  const list: Candidate[] = [
    {
      name: `sucrase ${(createRequire(import.meta.url)("sucrase/package.json") as { version: string }).version}`,
      specifier: "sucrase",
      strip: (m) => (code) => (m as typeof import("sucrase")).transform(code, { transforms: ["typescript"], disableESTransforms: true }).code,
    },
  ];
  if (otherModules === undefined) return list;
  const from = createRequire(path.join(path.resolve(otherModules), "noop.js"));
  const other = (pkg: string, strip: Candidate["strip"]): void => {
    try {
      const version = (JSON.parse(readFileSync(path.join(path.resolve(otherModules), pkg, "package.json"), "utf8")) as { version: string }).version;
      list.push({ name: `${pkg} ${version}`, specifier: pathToFileURL(from.resolve(pkg)).href, strip });
    } catch {
      // not installed there: left out
    }
  };
  other("ts-blank-space", (m) => (m as { default: (code: string) => string }).default);
  other("amaro", (m) => (code) => (m as { transformSync(code: string, o: object): { code: string } }).transformSync(code, { mode: "strip-only" }).code);
  return list;
}

async function transpilerFigures(otherModules: string | undefined): Promise<CodeRuntimeResult["transpiler"]> {
  const wrap = (code: string): string => `(async function () {\n${code}\n})`;
  const large = largeProgram();
  const rows: CodeRuntimeResult["transpiler"] = [];
  for (const candidate of candidates(otherModules)) {
    const importRuns = 5;
    const imports: number[] = [];
    for (let i = 0; i < importRuns; i++) {
      const script = `const t = performance.now(); await import(${JSON.stringify(candidate.specifier)}); console.log(JSON.stringify(performance.now() - t));`;
      imports.push((await child(["--input-type=module", "-e", script])) as number);
    }
    const strip = candidate.strip(await import(candidate.specifier));
    usPer(() => strip(wrap(SMALL_PROGRAM)), 200);
    rows.push({
      name: candidate.name,
      importMsMedian: median(imports),
      importRuns,
      smallProgramUsMedian: usPer(() => strip(wrap(SMALL_PROGRAM)), 2000),
      largeProgramUsMedian: usPer(() => strip(wrap(large)), 50),
      largeProgramLines: large.split("\n").length,
      largeProgramBytes: Buffer.byteLength(large),
    });
  }
  return rows;
}

const echoHost: CodeHost = {
  servers: [{ name: "s", tools: [{ name: "echo", exposed: "s_echo" }] }],
  callTool: async (_name, args) => args,
};

async function coldStartFigures(): Promise<CodeRuntimeResult["coldStart"]> {
  const fresh = new CodeWorkerPool();
  const t = performance.now();
  const first = await runProgram("return 1", echoHost, {}, { pool: fresh });
  const firstRunOnNewPoolMs = performance.now() - t;
  if (first.returnJson !== "1") throw new Error(`unexpected first run: ${JSON.stringify(first)}`);
  await fresh.close();

  const pool = new CodeWorkerPool();
  await pool.warm();
  const samples: number[] = [];
  const runs = 200;
  for (let i = 0; i < runs + 20; i++) {
    const start = performance.now();
    const result = await runProgram("return 1", echoHost, {}, { pool });
    if (result.returnJson !== "1") throw new Error(`unexpected run: ${JSON.stringify(result)}`);
    if (i >= 20) samples.push(performance.now() - start);
  }
  await pool.close();
  return { warmRunMsMedian: median(samples), warmRunMsP90: percentile(samples, 90), runs, firstRunOnNewPoolMs };
}

async function toolCallFigures(): Promise<CodeRuntimeResult["toolCall"]> {
  const pool = new CodeWorkerPool();
  await pool.warm();
  const calls = 2000;
  const time = async (code: string, limits = {}): Promise<number> => {
    const samples: number[] = [];
    for (let i = 0; i < 7; i++) {
      const result = await runProgram(code, echoHost, limits, { pool });
      if (!result.ok) throw new Error(`unexpected run: ${JSON.stringify(result.error)}`);
      samples.push(result.durationMs);
    }
    return median(samples);
  };
  const none = await time(`let n = 0; for (let i = 0; i < ${calls}; i++) n += i; return n;`);
  const sequential = await time(`let n = 0; for (let i = 0; i < ${calls}; i++) n += (await s.echo({ i })).i; return n;`, { max_calls: calls });
  const batched = await time(`const all = await Promise.all(Array.from({ length: ${calls} }, (_, i) => s.echo({ i }))); return all.length;`, {
    max_calls: calls,
    max_concurrent_calls: calls,
  });
  await pool.close();
  return { calls, sequentialUsPerCall: ((sequential - none) * 1000) / calls, batchedUsPerCall: ((batched - none) * 1000) / calls };
}

const HOLD_PROGRAM = "const data = Array.from({ length: 10000 }, (_, i) => ({ i, s: 'item ' + i })); await s.hold({}); return data.length;";

/** In a child process: RSS added by `n` concurrent runs, from nothing, or from a warm pool. */
async function rssChild(n: number, warm: boolean): Promise<{ extraMiB: number; threads: number }> {
  const pool = new CodeWorkerPool();
  if (warm) await pool.warm();
  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  let arrived = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let allArrived!: () => void;
  const everyone = new Promise<void>((resolve) => {
    allArrived = resolve;
  });
  const host: CodeHost = {
    servers: [{ name: "s", tools: [{ name: "hold", exposed: "s_hold" }] }],
    callTool: async () => {
      if (++arrived === n) allArrived();
      await released;
      return true;
    },
  };
  const runs = Array.from({ length: n }, () => runProgram(HOLD_PROGRAM, host, {}, { pool }));
  await everyone;
  const during = process.memoryUsage().rss;
  const threads = pool.stats().threads;
  release();
  const results = await Promise.all(runs);
  if (results.some((r) => r.returnJson !== "10000")) throw new Error("a run failed");
  await pool.close();
  return { extraMiB: (during - before) / 1048576, threads };
}

async function memoryFigures(): Promise<CodeRuntimeResult["memory"]> {
  const me = fileURLToPath(import.meta.url);
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  const cold = (await child(["--expose-gc", "--import", tsx, me, "--rss-child", "16", "cold"])) as { extraMiB: number; threads: number };
  const warm = (await child(["--expose-gc", "--import", tsx, me, "--rss-child", "16", "warm"])) as { extraMiB: number; threads: number };
  return { concurrentRuns: 16, extraRssMiB: cold.extraMiB, extraRssFromWarmMiB: warm.extraMiB, threads: cold.threads };
}

/** The engine on the main thread: a run as the worker makes one, with a host function that answers at once. */
async function mainThreadFigures(engine: QuickJSWASMModule): Promise<CodeRuntimeResult["mainThread"]> {
  const run = (code: string): void => {
    const rt = engine.newRuntime({ maxStackSizeBytes: 256 * 1024 });
    const ctx = rt.newContext();
    const echo = ctx.newFunction("echo", (arg) => {
      const deferred = ctx.newPromise();
      deferred.resolve(arg);
      return deferred.handle;
    });
    ctx.setProp(ctx.global, "echo", echo);
    echo.dispose();
    const result = ctx.evalCode(`(async () => { ${code} })()`);
    const promise = ctx.unwrapResult(result);
    for (;;) {
      const jobs = rt.executePendingJobs();
      jobs.dispose();
      if (ctx.getPromiseState(promise).type !== "pending") break;
    }
    promise.dispose();
    ctx.dispose();
    rt.dispose();
  };
  const samples: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    run("return 1;");
    samples.push(performance.now() - t);
  }
  const calls = 2000;
  const timeOf = (code: string): number => {
    const t: number[] = [];
    for (let i = 0; i < 7; i++) {
      const s = performance.now();
      run(code);
      t.push(performance.now() - s);
    }
    return median(t);
  };
  const none = timeOf(`let n = 0; for (let i = 0; i < ${calls}; i++) n += i; return n;`);
  const sequential = timeOf(`let n = 0; for (let i = 0; i < ${calls}; i++) n += await echo(i); return n;`);
  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  const held: { dispose(): void }[] = [];
  for (let i = 0; i < 16; i++) {
    const rt = engine.newRuntime();
    const ctx = rt.newContext();
    ctx.unwrapResult(ctx.evalCode("globalThis.data = Array.from({ length: 10000 }, (_, i) => ({ i, s: 'item ' + i }));")).dispose();
    held.push(ctx, rt);
  }
  const extra = (process.memoryUsage().rss - before) / 1048576;
  for (const h of held) h.dispose();
  return { runMsMedian: median(samples), sequentialUsPerCall: ((sequential - none) * 1000) / calls, extraRss16MiB: extra };
}

async function eventLoopFigures(engine: QuickJSWASMModule): Promise<CodeRuntimeResult["eventLoop"]> {
  const loopMs = 1000;
  const pool = new CodeWorkerPool();
  await pool.warm();
  const onWorker = monitorEventLoopDelay({ resolution: 5 });
  onWorker.enable();
  const result = await runProgram("while (true) {}", echoHost, { timeout_ms: loopMs }, { pool });
  onWorker.disable();
  if (result.error?.code !== "CODE_TIMEOUT") throw new Error(`unexpected loop result: ${JSON.stringify(result.error)}`);
  await pool.close();

  const onMain = monitorEventLoopDelay({ resolution: 5 });
  onMain.enable();
  await new Promise((resolve) => setTimeout(resolve, 20));
  const deadline = Date.now() + loopMs;
  const rt = engine.newRuntime({ interruptHandler: () => Date.now() >= deadline });
  const ctx = rt.newContext();
  const looped = ctx.evalCode("while (true) {}");
  looped.dispose();
  ctx.dispose();
  rt.dispose();
  await new Promise((resolve) => setTimeout(resolve, 20));
  onMain.disable();
  return { loopMs, workerMaxDelayMs: onWorker.max / 1e6, mainThreadMaxDelayMs: onMain.max / 1e6 };
}

/** Runs every measurement. */
export async function runCodeRuntime(options: { otherTranspilers?: string | undefined } = {}): Promise<CodeRuntimeResult> {
  const transpiler = await transpilerFigures(options.otherTranspilers);
  const coldStart = await coldStartFigures();
  const toolCall = await toolCallFigures();
  const memory = await memoryFigures();
  const engine = await newQuickJSWASMModule();
  const eventLoop = await eventLoopFigures(engine);
  const mainThread = await mainThreadFigures(engine);
  return {
    machine: { cores: os.availableParallelism(), node: process.version, loadAverage1m: round(os.loadavg()[0]!, 1) },
    transpiler,
    coldStart,
    toolCall,
    memory,
    eventLoop,
    mainThread,
  };
}

/** The figures as markdown: targets first, then the design beside the one not taken. */
export function codeRuntimeMarkdown(r: CodeRuntimeResult): string {
  const ms = (v: number): number => round(v, 2);
  const met = (ok: boolean): string => (ok ? "met" : "missed");
  return [
    "## Code view: program runtime",
    "",
    `${r.machine.cores} cores, Node ${r.machine.node}, load average ${r.machine.loadAverage1m} when the run ended.`,
    "",
    markdownTable(
      ["target", "figure", ""],
      [
        [
          "cold start <= 20 ms per run (warm pool)",
          `${ms(r.coldStart.warmRunMsMedian)} ms median, ${ms(r.coldStart.warmRunMsP90)} ms p90 (${r.coldStart.runs} runs)`,
          met(r.coldStart.warmRunMsMedian <= 20),
        ],
        [
          "a tool call adds <= 0.2 ms",
          `${ms(r.toolCall.sequentialUsPerCall / 1000)} ms awaited one by one, ${ms(r.toolCall.batchedUsPerCall / 1000)} ms all at once (${r.toolCall.calls} calls)`,
          met(r.toolCall.sequentialUsPerCall <= 200),
        ],
        [
          "16 concurrent runs add <= 64 MiB RSS",
          `${ms(r.memory.extraRssMiB)} MiB from a process that had not used the runtime (${ms(r.memory.extraRssFromWarmMiB)} MiB from a warm pool; ${r.memory.threads} ${r.memory.threads === 1 ? "thread" : "threads"})`,
          met(r.memory.extraRssMiB <= 64),
        ],
        [
          "a run never blocks the event loop",
          `largest delay ${ms(r.eventLoop.workerMaxDelayMs)} ms while a program looped ${r.eventLoop.loopMs} ms (${ms(r.eventLoop.mainThreadMaxDelayMs)} ms with the engine on the main thread)`,
          met(r.eventLoop.workerMaxDelayMs < r.eventLoop.loopMs / 4),
        ],
      ],
    ),
    "",
    markdownTable(
      ["", "worker threads (taken)>", "main thread (not taken)>"],
      [
        ["run of `return 1`, ms (median)", ms(r.coldStart.warmRunMsMedian), ms(r.mainThread.runMsMedian)],
        ["one awaited tool call, us", ms(r.toolCall.sequentialUsPerCall), ms(r.mainThread.sequentialUsPerCall)],
        ["16 runs at once, extra RSS MiB", ms(r.memory.extraRssMiB), ms(r.mainThread.extraRss16MiB)],
        [`event-loop delay while a program loops ${r.eventLoop.loopMs} ms, ms`, ms(r.eventLoop.workerMaxDelayMs), ms(r.eventLoop.mainThreadMaxDelayMs)],
      ],
    ),
    "",
    `The first run on a new pool (engine compiled, worker started) took ${ms(r.coldStart.firstRunOnNewPoolMs)} ms; \`warm()\` takes that off a first run.`,
    "",
    markdownTable(
      [
        "transpiler",
        "import in a fresh process, ms>",
        "12-line program, us>",
        `largest program (${r.transpiler[0]!.largeProgramLines} lines, ${Math.round(r.transpiler[0]!.largeProgramBytes / 1024)} KiB), us>`,
      ],
      r.transpiler.map((t) => [t.name, ms(t.importMsMedian), ms(t.smallProgramUsMedian), ms(t.largeProgramUsMedian)]),
    ),
  ].join("\n");
}

if (isMainModule(import.meta.url)) {
  const rssChildAt = process.argv.indexOf("--rss-child");
  if (rssChildAt !== -1) {
    const figures = await rssChild(Number(process.argv[rssChildAt + 1]), process.argv[rssChildAt + 2] === "warm");
    process.stdout.write(`${JSON.stringify(figures)}\n`);
  } else {
    await runStandalone(import.meta.url, {
      name: "code-runtime",
      run: (argv) => {
        const j = argv.indexOf("--transpilers");
        return runCodeRuntime(j === -1 ? {} : { otherTranspilers: argv[j + 1] });
      },
      markdown: codeRuntimeMarkdown,
    });
  }
}
