/**
 * What checking a daemon answer against its schema costs the client: a `list_tools` answer of the
 * whole corpus in full mode (every tool with its full input schema, the largest answer a daemon
 * writes in normal use) and a small `call_tool` answer, each read with `JSON.parse` alone and with
 * `JSON.parse` plus `parseAnswer`. Prints the medians as a table and writes
 * `bench/results/answer-parse.json` and `.md`.
 *
 *   npx tsx bench/answerParse.ts [runs]
 */
import { parseAnswer, type DaemonOp } from "../src/daemon/wire/protocol.js";
import { exposeCorpus, loadCorpus } from "./corpus.js";
import { markdownTable } from "./markdownTable.js";
import { median, nowMs, round } from "./measure.js";
import { runStandalone } from "./standalone.js";

/** One answer read both ways: medians in milliseconds. */
interface AnswerRow {
  answer: string;
  bytes: number;
  jsonParseMs: number;
  withSchemaMs: number;
  schemaMs: number;
}

interface AnswerParseResult {
  runs: number;
  node: string;
  rows: AnswerRow[];
}

function time(fn: () => unknown, runs: number): number {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = nowMs();
    fn();
    samples.push(nowMs() - start);
  }
  return median(samples);
}

function row(name: string, op: DaemonOp, line: string, runs: number): AnswerRow {
  // Warm both paths first, so the first runs do not measure compilation.
  for (let i = 0; i < 5; i++) parseAnswer(op, JSON.parse(line));
  const jsonMs = time(() => JSON.parse(line), runs);
  const checkedMs = time(() => parseAnswer(op, JSON.parse(line)), runs);
  return {
    answer: name,
    bytes: Buffer.byteLength(line),
    jsonParseMs: round(jsonMs, 3),
    withSchemaMs: round(checkedMs, 3),
    schemaMs: round(checkedMs - jsonMs, 3),
  };
}

/** Times both answers `runs` times each (the median is reported). */
function runAnswerParse(runs: number): AnswerParseResult {
  const tools = exposeCorpus(loadCorpus()).map((tool) => ({
    server: tool.server,
    name: tool.tool.name,
    uri: tool.uri,
    exposedName: tool.name,
    description: tool.tool.description ?? "",
    parameters: tool.tool.inputSchema,
    ...(tool.tool.annotations !== undefined ? { annotations: tool.tool.annotations } : {}),
  }));
  const rows = [
    row(`list_tools, ${tools.length} tools, full mode`, "list_tools", JSON.stringify({ id: 1, ok: true, tools }), runs),
    row("call_tool, one text block", "call_tool", JSON.stringify({ id: 2, ok: true, result: { content: [{ type: "text", text: "hello" }] } }), runs),
  ];
  return { runs, node: process.version, rows };
}

function answerParseMarkdown(r: AnswerParseResult): string {
  return [
    `Reading a daemon answer, median of ${r.runs} runs (Node ${r.node}):\n`,
    markdownTable(
      ["answer", "bytes>", "JSON.parse ms>", "+ parseAnswer ms>", "schema check ms>"],
      r.rows.map((x) => [x.answer, x.bytes, x.jsonParseMs.toFixed(3), x.withSchemaMs.toFixed(3), x.schemaMs.toFixed(3)]),
    ),
  ].join("\n");
}

await runStandalone(import.meta.url, {
  name: "answer-parse",
  run: (argv) => runAnswerParse(Math.max(5, Math.min(1_000, Number(argv[0] ?? 200) || 200))),
  markdown: answerParseMarkdown,
  json: (r) => r,
});
