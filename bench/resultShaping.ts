/**
 * What result shaping saves, on real results: every call recorded in bench/corpus/results/
 * (bench/recordResults.ts: filesystem on a generated tree, memory, everything, sequential-thinking),
 * priced in o200k tokens as a client passes them to the model — the text content alone, and the
 * text plus `structuredContent` as clients that show both do — as the upstream wrote them and
 * after `compact`, `compact` with `structured = "text-only"`, and `lean`. Every result is decoded
 * back (decodeResult) and compared with the original value: the values lost must be 0. The
 * table forms are compared on the JSON-bearing texts: pretty, minified, minified with the JSON
 * header-and-rows table (what `compact` writes) and TOON (bench/toonEstimate.ts). The time
 * `compact` adds per call is measured on the results under 10 KB.
 *
 *   npx tsx bench/resultShaping.ts
 *
 * Prints the tables and writes bench/results/result-shaping.json and .md.
 */
import { isDeepStrictEqual } from "node:util";
import { isObject } from "../src/model/json.js";
import type { CallToolResult } from "../src/model/types.js";
import type { ResultFormat, StructuredMode } from "../src/result/resultFormat.js";
import { decodeResult, shapeResult } from "../src/result/shapeResult.js";
import { shapeJsonText } from "../src/result/shapeJsonText.js";
import { countTokens } from "../src/tokens/countTokens.js";
import { markdownTable, pct } from "./markdownTable.js";
import { median, nowMs, percentile, round } from "./measure.js";
import { loadRecordedResults, type RecordedCall } from "./recordedResults.js";
import { toToon } from "./toonEstimate.js";
import { runStandalone } from "./standalone.js";

/** Token totals of one group of calls. */
export interface ShapingRow {
  server: string;
  calls: number;
  /** Calls with at least one text block whose whole text is a JSON object or array. */
  jsonCalls: number;
  /** Text content, as the upstream wrote it / after compact / after lean (all calls). */
  textBefore: number;
  textCompact: number;
  textLean: number;
  /** The same over the JSON-bearing calls only. */
  jsonTextBefore: number;
  jsonTextCompact: number;
  /** Text plus structuredContent: as written / compact / compact with structured = "text-only". */
  bothBefore: number;
  bothCompact: number;
  bothTextOnly: number;
}

/** Tokens of the JSON-bearing texts in each table form. */
export interface FormRow {
  form: string;
  tokens: number;
}

export interface ResultShapingResult {
  unit: string;
  calls: number;
  rows: ShapingRow[];
  total: ShapingRow;
  forms: FormRow[];
  roundTrip: { results: number; textBlocks: number; shapedBlocks: number; valuesLost: number; lostAt: string[] };
  timing: { results: number; p50Ms: number; p99Ms: number; largestBytes: number; jsonResults: number; jsonP50Ms: number; jsonP99Ms: number };
  /** Share of tokens `compact` saves on the JSON-bearing results' text. */
  jsonSaving: number;
}

const textOf = (block: unknown): string | undefined => (isObject(block) && block.type === "text" && typeof block.text === "string" ? block.text : undefined);

function jsonValueOf(text: string): unknown {
  const first = text.trimStart()[0];
  if (first !== "{" && first !== "[") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The text content a client passes to the model: every text block, one after the other. */
function textTokens(result: CallToolResult): number {
  const blocks = Array.isArray(result.content) ? result.content : [];
  let total = 0;
  for (const block of blocks) {
    const text = textOf(block);
    if (text !== undefined) total += countTokens(text);
  }
  return total;
}

function bothTokens(result: CallToolResult): number {
  return textTokens(result) + (result.structuredContent === undefined ? 0 : countTokens(JSON.stringify(result.structuredContent)));
}

function shaped(result: CallToolResult, format: ResultFormat, structured: StructuredMode = "both"): CallToolResult {
  return shapeResult(result, format, { structured });
}

function isJsonBearing(result: CallToolResult): boolean {
  const blocks = Array.isArray(result.content) ? result.content : [];
  return blocks.some((b) => {
    const text = textOf(b);
    return text !== undefined && jsonValueOf(text) !== undefined;
  });
}

function emptyRow(server: string): ShapingRow {
  return {
    server,
    calls: 0,
    jsonCalls: 0,
    textBefore: 0,
    textCompact: 0,
    textLean: 0,
    jsonTextBefore: 0,
    jsonTextCompact: 0,
    bothBefore: 0,
    bothCompact: 0,
    bothTextOnly: 0,
  };
}

function addTo(row: ShapingRow, call: RecordedCall): void {
  const result = call.result as CallToolResult;
  const compact = shaped(result, "compact");
  const before = textTokens(result);
  const after = textTokens(compact);
  row.calls += 1;
  row.textBefore += before;
  row.textCompact += after;
  row.textLean += textTokens(shaped(result, "lean"));
  if (isJsonBearing(result)) {
    row.jsonCalls += 1;
    row.jsonTextBefore += before;
    row.jsonTextCompact += after;
  }
  row.bothBefore += bothTokens(result);
  row.bothCompact += bothTokens(compact);
  row.bothTextOnly += bothTokens(shaped(result, "compact", "text-only"));
}

/**
 * Decodes every compact result and compares each text block with the original: a block compact
 * rewrote must give back the original's JSON value, any other block must be the same text; every
 * other field must be the same. Returns what was lost, by call.
 */
function roundTrip(calls: readonly RecordedCall[]): ResultShapingResult["roundTrip"] {
  let textBlocks = 0;
  let shapedBlocks = 0;
  const lostAt: string[] = [];
  calls.forEach((call, i) => {
    const original = call.result as CallToolResult;
    const compact = shaped(original, "compact");
    const decoded = decodeResult(compact);
    const a = Array.isArray(original.content) ? original.content : [];
    const b = Array.isArray(decoded.content) ? decoded.content : [];
    let lost = a.length !== b.length;
    a.forEach((block, j) => {
      const text = textOf(block);
      if (text !== undefined) textBlocks += 1;
      const other = b[j];
      if (text === undefined || textOf(other) === text) {
        if (!isDeepStrictEqual(block, other)) lost = true;
        return;
      }
      shapedBlocks += 1;
      const { text: _a, ...restA } = block as Record<string, unknown>;
      const { text: _b, ...restB } = other as Record<string, unknown>;
      if (!isDeepStrictEqual(restA, restB) || !isDeepStrictEqual(jsonValueOf(text), jsonValueOf(textOf(other) ?? ""))) lost = true;
    });
    const { content: _ca, _meta: _ma, ...restOriginal } = original;
    const { content: _cb, _meta: _mb, ...restDecoded } = decoded;
    if (!isDeepStrictEqual(restOriginal, restDecoded) || !isDeepStrictEqual(original._meta, decoded._meta)) lost = true;
    if (lost) lostAt.push(`${call.server}/${call.tool}#${i}`);
  });
  return { results: calls.length, textBlocks, shapedBlocks, valuesLost: lostAt.length, lostAt };
}

/** Tokens of the JSON-bearing texts written pretty, minified, as compact tables, as TOON. */
function tableForms(calls: readonly RecordedCall[]): FormRow[] {
  const totals = { written: 0, pretty: 0, minified: 0, compact: 0, toon: 0 };
  for (const call of calls) {
    const blocks = Array.isArray(call.result.content) ? call.result.content : [];
    for (const block of blocks) {
      const text = textOf(block);
      if (text === undefined) continue;
      const value = jsonValueOf(text);
      if (value === undefined) continue;
      totals.written += countTokens(text);
      totals.pretty += countTokens(JSON.stringify(value, null, 2));
      totals.minified += countTokens(JSON.stringify(value));
      totals.compact += countTokens(shapeJsonText(text, "compact"));
      totals.toon += countTokens(toToon(value));
    }
  }
  return [
    { form: "as the servers wrote it", tokens: totals.written },
    { form: "pretty-printed (2 spaces)", tokens: totals.pretty },
    { form: "minified JSON", tokens: totals.minified },
    { form: "minified + JSON header-and-rows tables (compact)", tokens: totals.compact },
    { form: "TOON", tokens: totals.toon },
  ];
}

/** Time compact adds per call: median of repeated runs per result under 10 KB, then p50/p99 over results. */
function timing(calls: readonly RecordedCall[]): ResultShapingResult["timing"] {
  const small = calls.map((c) => c.result as CallToolResult).filter((r) => Buffer.byteLength(JSON.stringify(r)) < 10 * 1024);
  // Warm-up: the first calls compile the code paths.
  for (let i = 0; i < 20; i++) for (const r of small) shapeResult(r, "compact");
  const perResult: number[] = [];
  const perJsonResult: number[] = [];
  const repeats = 200;
  for (const r of small) {
    const samples: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = nowMs();
      for (let k = 0; k < repeats; k++) shapeResult(r, "compact");
      samples.push((nowMs() - t0) / repeats);
    }
    perResult.push(median(samples));
    if (isJsonBearing(r)) perJsonResult.push(median(samples));
  }
  return {
    results: small.length,
    p50Ms: percentile(perResult, 50),
    p99Ms: percentile(perResult, 99),
    largestBytes: Math.max(0, ...small.map((r) => Buffer.byteLength(JSON.stringify(r)))),
    jsonResults: perJsonResult.length,
    jsonP50Ms: percentile(perJsonResult, 50),
    jsonP99Ms: percentile(perJsonResult, 99),
  };
}

export function runResultShaping(): ResultShapingResult {
  const calls = loadRecordedResults();
  const byServer = new Map<string, ShapingRow>();
  const total = emptyRow("total");
  for (const call of calls) {
    let row = byServer.get(call.server);
    if (row === undefined) byServer.set(call.server, (row = emptyRow(call.server)));
    addTo(row, call);
    addTo(total, call);
  }
  return {
    unit: "o200k tokens",
    calls: calls.length,
    rows: [...byServer.values()],
    total,
    forms: tableForms(calls),
    roundTrip: roundTrip(calls),
    timing: timing(calls),
    jsonSaving: total.jsonTextBefore === 0 ? 0 : 1 - total.jsonTextCompact / total.jsonTextBefore,
  };
}

const saved = (before: number, after: number): string => (before === 0 ? "—" : `${pct(1 - after / before)}`);

export function resultShapingMarkdown(r: ResultShapingResult): string {
  const rows = [...r.rows, r.total];
  const perServer = markdownTable(
    [
      "server",
      "calls",
      "JSON calls",
      "text as-is",
      "text compact",
      "saved",
      "JSON calls' text as-is",
      "compact",
      "saved",
      "text lean",
      "text + structured as-is",
      "compact",
      "text-only",
      "saved (text-only)",
    ],
    rows.map((row) => [
      row.server === "total" ? "**total**" : row.server,
      row.calls,
      row.jsonCalls,
      row.textBefore,
      row.textCompact,
      saved(row.textBefore, row.textCompact),
      row.jsonTextBefore,
      row.jsonTextCompact,
      saved(row.jsonTextBefore, row.jsonTextCompact),
      row.textLean,
      row.bothBefore,
      row.bothCompact,
      row.bothTextOnly,
      saved(row.bothBefore, row.bothTextOnly),
    ]),
  );
  const forms = markdownTable(
    ["form of the JSON-bearing texts", "tokens", "vs as written"],
    r.forms.map((f) => [f.form, f.tokens, saved(r.forms[0]!.tokens, f.tokens)]),
  );
  const targets = markdownTable(
    ["target", "figure", "status"],
    [
      [
        "compact: >= 30% fewer tokens on the JSON-bearing results",
        `${pct(r.jsonSaving)} (${r.total.jsonTextBefore} -> ${r.total.jsonTextCompact})`,
        r.jsonSaving >= 0.3 ? "met" : "missed",
      ],
      [
        "0 values lost (round trip of every recorded result)",
        `${r.roundTrip.valuesLost} of ${r.roundTrip.results} results (${r.roundTrip.shapedBlocks} of ${r.roundTrip.textBlocks} text blocks rewritten)`,
        r.roundTrip.valuesLost === 0 ? "met" : "missed",
      ],
      [
        "compact adds <= 0.05 ms p50 per call (results < 10 KB)",
        `${round(r.timing.p50Ms, 4)} ms p50, ${round(r.timing.p99Ms, 4)} ms p99 (${r.timing.results} results); JSON-bearing alone: ${round(r.timing.jsonP50Ms, 4)} ms p50, ${round(r.timing.jsonP99Ms, 4)} ms p99 (${r.timing.jsonResults})`,
        Math.max(r.timing.p50Ms, r.timing.jsonP50Ms) <= 0.05 ? "met" : "missed",
      ],
    ],
  );
  return (
    `## Result shaping\n\n${r.calls} recorded calls (bench/corpus/results/), ${r.unit}. "text" is the text content a client passes to the model; ` +
    `"text + structured" adds \`structuredContent\` as clients that show both do. compact keeps \`structuredContent\`; text-only drops it where a text block repeats it.\n\n` +
    `${perServer}\n\nTable forms, on the ${r.total.jsonCalls} JSON-bearing results:\n\n${forms}\n\n${targets}`
  );
}

await runStandalone(import.meta.url, {
  name: "result-shaping",
  run: () => runResultShaping(),
  markdown: resultShapingMarkdown,
  markdownFile: (markdown, _r, date) => `# abridge result shaping\n\nRun ${date}.\n\n${markdown}\n`,
});
