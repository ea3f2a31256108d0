/**
 * What checking a daemon answer against its schema costs the client: a `list_tools` answer of the
 * whole corpus in full mode (every tool with its full input schema, the largest answer a daemon
 * writes in normal use) and a small `call_tool` answer, each read with `JSON.parse` alone and with
 * `JSON.parse` plus `parseAnswer`. Prints the medians and writes `bench/results/answer-parse.json`.
 *
 *   npx tsx bench/answerParse.ts [runs]
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseAnswer, type DaemonOp } from "../src/daemon/wire/protocol.js";
import { exposeCorpus, loadCorpus, REPO_ROOT } from "./corpus.js";
import { median, nowMs, round } from "./measure.js";

const RUNS = Math.max(5, Math.min(1_000, Number(process.argv[2] ?? 200) || 200));

function time(fn: () => unknown): number {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = nowMs();
    fn();
    samples.push(nowMs() - start);
  }
  return median(samples);
}

function row(name: string, op: DaemonOp, line: string): Record<string, unknown> {
  // Warm both paths first, so the first runs do not measure compilation.
  for (let i = 0; i < 5; i++) parseAnswer(op, JSON.parse(line));
  const jsonMs = time(() => JSON.parse(line));
  const checkedMs = time(() => parseAnswer(op, JSON.parse(line)));
  return { answer: name, bytes: Buffer.byteLength(line), jsonParseMs: round(jsonMs, 3), withSchemaMs: round(checkedMs, 3), schemaMs: round(checkedMs - jsonMs, 3) };
}

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
  row(`list_tools, ${tools.length} tools, full mode`, "list_tools", JSON.stringify({ id: 1, ok: true, tools })),
  row("call_tool, one text block", "call_tool", JSON.stringify({ id: 2, ok: true, result: { content: [{ type: "text", text: "hello" }] } })),
];
const result = { runs: RUNS, node: process.version, rows };
console.log(JSON.stringify(result, null, 2));
const dir = path.join(REPO_ROOT, "bench", "results");
await mkdir(dir, { recursive: true });
await writeFile(path.join(dir, "answer-parse.json"), `${JSON.stringify(result, null, 2)}\n`);
