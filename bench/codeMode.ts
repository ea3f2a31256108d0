/**
 * The code view against classic tool calling, over multi-step tasks on published servers that run
 * offline (filesystem on a generated tree, memory, everything): each task is done twice, as a
 * classic session in compact mode with the fewest calls a good agent makes, and as a code session
 * (`search_tools`, then one `run_code`). Both must reach the same answer, and the answer the
 * generated data implies, or the benchmark fails. Reported per task and in total: o200k tokens of
 * each session (turn model in bench/codeMode/sessions.ts); beside them the start of a run, the
 * time a call adds inside a program and the RSS of 16 concurrent runs, through the Bridge.
 *
 *   npx tsx bench/codeMode.ts [--quick] [--tasks csv-sum,failed-jobs] [--seed N]
 *
 * writes bench/results/codeMode.json and codeMode.md; `npm run bench -- --only codeMode` runs it
 * with the others' report. `--quick` runs two tasks and few repetitions (what the test runs).
 */
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { isObject } from "../src/model/json.js";
import type { JsonObject } from "../src/model/types.js";
import { FILE_TASKS } from "./codeMode/fileTasks.js";
import { MORE_FILE_TASKS } from "./codeMode/moreFileTasks.js";
import { GRAPH_TASKS, readGraph } from "./codeMode/graphTasks.js";
import { openBridge, publishedServersToml } from "./codeMode/openBridge.js";
import { runtimeFigures, type RuntimeFigures } from "./codeMode/runtimeFigures.js";
import { taskSeed, textOf } from "./codeMode/seeded.js";
import { classicSession, codeSession, sameAnswer, type CodeSessionDetail, type SessionTokens } from "./codeMode/sessions.js";
import type { CodeModeTask, TaskContext } from "./codeMode/types.js";
import { markdownTable, pct } from "./markdownTable.js";
import { positiveFlag, round } from "./measure.js";
import { RESULTS_DIR, runStandalone, writeResults } from "./standalone.js";

/** Every task, in the order reported. */
export const TASKS: readonly CodeModeTask[] = [...FILE_TASKS, ...MORE_FILE_TASKS, ...GRAPH_TASKS];
/** What `--quick` runs: one filesystem task and one that writes to the memory graph. */
export const QUICK_TASKS = ["csv-sum", "failed-jobs"];

/** The targets this benchmark reports against. */
export const CODE_MODE_TARGETS = {
  tokenShare: 0.1,
  coldStartMs: 20,
  addedCallMs: 0.2,
  extraRssMiB: 64,
} as const;

export interface CodeModeTaskResult {
  task: string;
  prompt: string;
  classic: SessionTokens;
  code: SessionTokens;
  codeDetail: CodeSessionDetail;
  /** code tokens / classic tokens. */
  share: number;
  /** The same under the transcript accounting. */
  transcriptShare: number;
  /** The answer both sessions reached (and the data implies). */
  answer: unknown;
}

export interface CodeModeResult {
  startedAt: string;
  unit: string;
  turnModel: string;
  seed: number;
  quick: boolean;
  machine: { cpus: number; node: string; loadAverage1m: number };
  tasks: CodeModeTaskResult[];
  total: { classic: number; code: number; share: number; classicTranscript: number; codeTranscript: number; transcriptShare: number };
  runtime: RuntimeFigures;
  targets: { figure: string; value: string; target: string; status: "met" | "missed" }[];
}

export interface CodeModeOptions {
  quick?: boolean;
  /** Tasks to run, by name or given whole (default: all, or the quick ones). */
  tasks?: readonly (string | CodeModeTask)[];
  seed?: number;
  log?: (line: string) => void;
}

export const TURN_MODEL =
  "A session whose calls take K model turns has K + 1 turns (the last writes the answer); every turn reads the tool list. " +
  "Counted once each: every call (tool name + arguments JSON, as the model writes it), every result (the text of its content blocks, as the model reads it), " +
  "and the answer (its JSON). Calls made side by side in one turn share it. The classic session runs in compact mode, the code session in code mode " +
  "(search_tools, then run_code). The transcript columns count instead what a chat model is sent when every turn re-reads the conversation before it.";

/**
 * Why no file is larger than about 100 KB: every result has to fit the default `max_output_bytes`
 * (200,000) in both sessions, and the filesystem server sends a file twice (text, and
 * `structuredContent.content`). Past the limit a classic call is cut to its text, with a marker,
 * while a program's call fails with OUTPUT_LIMIT.
 */
const SIZES_NOTE =
  "Every result fits the default max_output_bytes (200,000) in both sessions: the filesystem server sends a file twice (text and structuredContent), " +
  "and past the limit a classic call keeps the text (structuredContent dropped, a marker added) while a program's call fails with OUTPUT_LIMIT, so no file read with read_text_file is over about 100 KB. " +
  "A classic session reads results as compact mode shapes them (result_format compact: JSON minified, tables for arrays of like objects).";

/** Empties the memory graph (not counted): each session starts from the task's own state. */
async function emptyGraph(ctx: TaskContext): Promise<void> {
  const graph = await readGraph(ctx);
  if (graph.entities.length > 0) await ctx.call("memory_delete_entities", { entityNames: graph.entities.map((e) => e.name) });
  if (graph.relations.length > 0) await ctx.call("memory_delete_relations", { relations: graph.relations.filter(isObject) });
}

function selected(options: CodeModeOptions): CodeModeTask[] {
  const wanted = options.tasks ?? (options.quick === true ? QUICK_TASKS : TASKS.map((t) => t.name));
  const unknown = wanted.filter((n) => typeof n === "string" && !TASKS.some((t) => t.name === n));
  if (unknown.length > 0) throw new Error(`--tasks: no task named ${unknown.join(", ")} (tasks: ${TASKS.map((t) => t.name).join(", ")})`);
  return wanted.map((n) => (typeof n === "string" ? (TASKS.find((t) => t.name === n) as CodeModeTask) : n));
}

/** Runs the tasks (each twice, checked) and the runtime figures. Throws when two answers differ. */
export async function runCodeMode(options: CodeModeOptions = {}): Promise<CodeModeResult> {
  const log = options.log ?? (() => {});
  const seed = options.seed ?? 20_260_801;
  const tasks = selected(options);
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), "abridge-codemode-")));
  const dataDir = path.join(root, "data");
  const stateDir = path.join(root, "memory");
  await mkdir(dataDir, { recursive: true });
  await mkdir(stateDir, { recursive: true });
  try {
    const bridge = await openBridge(path.join(root, "bridge"), publishedServersToml(dataDir, stateDir));
    const rows: CodeModeTaskResult[] = [];
    try {
      const ctx: TaskContext = {
        dir: dataDir,
        bridge,
        call: async (tool: string, args: JsonObject) => {
          const result = await bridge.callTool(tool, args, { mode: "compact" });
          if (result.isError === true) throw new Error(`${tool}: ${textOf(result).slice(0, 300)}`);
          return result;
        },
      };
      for (const task of tasks) {
        const expected = await task.generate(ctx, taskSeed(seed, task.name));
        const session = async <T extends { answer: unknown }>(run: () => Promise<T>): Promise<T> => {
          await emptyGraph(ctx);
          await task.prepare?.(ctx);
          const done = await run();
          await task.check?.(ctx);
          return done;
        };
        const classic = await session(() => classicSession(task, ctx));
        const code = await session(() => codeSession(task, ctx));
        sameAnswer(task.name, "the classic and the code session's answers", classic.answer, code.answer);
        sameAnswer(task.name, "the sessions' answer and the one the data implies", classic.answer, expected);
        const row: CodeModeTaskResult = {
          task: task.name,
          prompt: task.prompt,
          classic: classic.count,
          code: code.count,
          codeDetail: code.detail,
          share: code.count.tokens / classic.count.tokens,
          transcriptShare: code.count.transcriptTokens / classic.count.transcriptTokens,
          answer: code.answer,
        };
        rows.push(row);
        log(`${task.name}: classic ${classic.count.tokens}, code ${code.count.tokens} tokens (${pct(row.share)})`);
      }
      await emptyGraph(ctx);
    } finally {
      await bridge.close();
    }
    log("runtime figures...");
    const runtimeStarted = performance.now();
    const runtime = await runtimeFigures(path.join(root, "runtime"), options.quick === true ? { coldRuns: 20, calls: 50, repeats: 3, quick: true } : {});
    log(`runtime figures in ${((performance.now() - runtimeStarted) / 1000).toFixed(1)} s`);
    const sum = (f: (r: CodeModeTaskResult) => number): number => rows.reduce((s, r) => s + f(r), 0);
    const total = {
      classic: sum((r) => r.classic.tokens),
      code: sum((r) => r.code.tokens),
      share: sum((r) => r.code.tokens) / sum((r) => r.classic.tokens),
      classicTranscript: sum((r) => r.classic.transcriptTokens),
      codeTranscript: sum((r) => r.code.transcriptTokens),
      transcriptShare: sum((r) => r.code.transcriptTokens) / sum((r) => r.classic.transcriptTokens),
    };
    const t = CODE_MODE_TARGETS;
    const check = (figure: string, value: number, limit: number, text: string, target: string): CodeModeResult["targets"][number] => ({
      figure,
      value: text,
      target,
      status: value <= limit ? "met" : "missed",
    });
    const addedMs = runtime.toolCall.addedUsPerCall / 1000;
    const targets = [
      check(
        "code session tokens over the suite, as a share of the classic session's",
        total.share,
        t.tokenShare,
        pct(total.share) ?? "",
        `<= ${t.tokenShare * 100}%`,
      ),
      check(
        "cold start of a run (`return 1` through Bridge.runCode: a fresh engine context on a started worker, median)",
        runtime.coldStart.runMsMedian,
        t.coldStartMs,
        `${runtime.coldStart.runMsMedian.toFixed(2)} ms`,
        `<= ${t.coldStartMs} ms`,
      ),
      check(
        "added cost of one tool call from a program, against a direct Bridge.callTool",
        addedMs,
        t.addedCallMs,
        `${addedMs.toFixed(3)} ms`,
        `<= ${t.addedCallMs} ms`,
      ),
      check(
        "extra RSS for 16 concurrent runs",
        runtime.memory.extraRssMiB,
        t.extraRssMiB,
        `${runtime.memory.extraRssMiB.toFixed(1)} MiB`,
        `<= ${t.extraRssMiB} MiB`,
      ),
    ];
    return {
      startedAt: new Date().toISOString(),
      unit: "o200k_base tokens",
      turnModel: TURN_MODEL,
      seed,
      quick: options.quick === true,
      machine: { cpus: os.cpus().length, node: process.version, loadAverage1m: round(os.loadavg()[0] ?? 0, 2) },
      tasks: rows,
      total,
      runtime,
      targets,
    };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** The report: per task, in total, the runtime figures and the targets. */
export function codeModeMarkdown(r: CodeModeResult): string {
  const rows = r.tasks.map((t) => [
    t.task,
    `${t.classic.calls} / ${t.classic.turns}`,
    t.classic.tokens,
    `${t.code.calls} / ${t.code.turns}`,
    t.codeDetail.programCalls,
    t.code.tokens,
    pct(t.share),
    t.classic.transcriptTokens,
    t.code.transcriptTokens,
    pct(t.transcriptShare),
  ]);
  rows.push([
    "**total**",
    undefined,
    r.total.classic,
    undefined,
    undefined,
    r.total.code,
    pct(r.total.share),
    r.total.classicTranscript,
    r.total.codeTranscript,
    pct(r.total.transcriptShare),
  ]);
  const parts = r.tasks.map((t) => [
    t.task,
    t.classic.list,
    t.classic.callText,
    t.classic.results,
    t.code.list,
    t.code.callText,
    t.code.results,
    t.classic.answer,
  ]);
  const rt = r.runtime;
  const fixed = (v: number, digits: number, unit: string): string => (Number.isFinite(v) ? `${v.toFixed(digits)} ${unit}` : "not measured (--quick)");
  return [
    `## Code mode\n\nUnit: ${r.unit}. ${r.turnModel} Seed ${r.seed}${r.quick ? "; --quick run" : ""}. Both sessions of every task reached the same answer, the one the generated data implies.\n`,
    markdownTable(
      [
        "task",
        "classic calls / turns",
        "classic tokens>",
        "code calls / turns",
        "calls in program>",
        "code tokens>",
        "code / classic>",
        "classic transcript>",
        "code transcript>",
        "transcript code / classic>",
      ],
      rows,
    ),
    "\nWhere the tokens go (list = the tool list times the turns; calls = what the model wrote; results = what it read):\n",
    markdownTable(["task", "classic list>", "classic calls>", "classic results>", "code list>", "code calls>", "code results>", "answer>"], parts),
    "\nTasks:\n",
    r.tasks.map((t) => `- **${t.task}**: ${t.prompt}`).join("\n"),
    `\n${SIZES_NOTE}`,
    `\n### Runtime through the Bridge\n\nEcho fixture over stdio; ${r.machine.cpus} CPUs, load ${r.machine.loadAverage1m}.\n`,
    markdownTable(
      ["figure", "value"],
      [
        [`run of \`return 1\`, median / p90 of ${rt.coldStart.runs}`, `${rt.coldStart.runMsMedian.toFixed(2)} / ${rt.coldStart.runMsP90.toFixed(2)} ms`],
        ["`return 1` as the first run of a fresh process (worker started, engine compiled)", fixed(rt.memory.firstRunOfProcessMs, 1, "ms")],
        [`a call from a program (${rt.toolCall.calls} sequential, median of ${rt.toolCall.repeats})`, `${rt.toolCall.programUsPerCall.toFixed(1)} µs`],
        ["the same call with Bridge.callTool", `${rt.toolCall.directUsPerCall.toFixed(1)} µs`],
        ["added by the program (median of the repeats' differences; the target's figure)", `${rt.toolCall.addedUsPerCall.toFixed(1)} µs`],
        ["added by the program in CPU time of the bridge's process (all threads)", `${rt.toolCall.addedCpuUsPerCall.toFixed(1)} µs`],
        [
          `extra RSS, ${rt.memory.concurrentRuns} concurrent runs, in a process whose bridge had run no program (the target's figure)`,
          `${rt.memory.extraRssMiB.toFixed(1)} MiB`,
        ],
        ["the same after one run of `return 1` (worker started, engine compiled)", fixed(rt.memory.extraRssPrimedMiB, 1, "MiB")],
        ["the same after a first batch of 16", `${rt.memory.extraRssWarmMiB.toFixed(1)} MiB`],
      ],
    ),
    "\n### Targets\n",
    markdownTable(
      ["figure", "value", "target", "status"],
      r.targets.map((t) => [t.figure, t.value, t.target, t.status]),
    ),
  ].join("\n");
}

/** The text of codeMode.md: a heading and the run's start above the tables. */
function codeModeFile(markdown: string, r: CodeModeResult): string {
  return `# abridge code mode\n\nRun ${r.startedAt}.\n\n${markdown}\n`;
}

/** Writes bench/results/codeMode.json and codeMode.md (or both into `dir`). */
export async function writeCodeModeResults(r: CodeModeResult, dir = RESULTS_DIR): Promise<void> {
  await writeResults("codeMode", r, codeModeFile(codeModeMarkdown(r), r), dir);
}

/** `--tasks a,b`: the names given, or undefined. */
function tasksFlag(argv: readonly string[]): string[] | undefined {
  const i = argv.indexOf("--tasks");
  if (i === -1) return undefined;
  return (argv[i + 1] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

await runStandalone(import.meta.url, {
  name: "codeMode",
  run: (argv) => {
    const tasks = tasksFlag(argv);
    const seed = positiveFlag(argv, "seed");
    return runCodeMode({
      quick: argv.includes("--quick"),
      ...(tasks !== undefined ? { tasks } : {}),
      ...(seed !== undefined ? { seed } : {}),
      log: (line) => process.stderr.write(`codeMode: ${line}\n`),
    });
  },
  markdown: codeModeMarkdown,
  json: (r) => r,
  markdownFile: codeModeFile,
});
