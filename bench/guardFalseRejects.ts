/**
 * The summary guard over the corpus, both ways.
 *
 * - False rejects: every corpus tool summarized by the extractive summarizer as the queue batches
 *   them (one server's tools, at most 64 at a time), then judged by the guard. Such a summary is
 *   honest (spans of the tool's own description and parameter texts), so each rejection is the
 *   guard wrongly refusing it; by rule, with the tools listed.
 * - The grounding threshold: the share of a summary's content words that must occur in the tool's
 *   text, swept, with how many honest summaries each setting rejects beside how many it catches of
 *   two made-up lies per tool: the summary of a tool of another server ("swapped"), and the honest
 *   summary with that other summary appended ("appended"). Grounding alone.
 * - What the whole guard catches of those two and of two more per tool: a read-sounding summary of
 *   a tool that deletes or changes things ("Shows the <name> details."), and the honest summary with
 *   "; read-only" added for a tool not annotated read-only.
 * - The guard's time per tool (median of 3 passes over the corpus).
 *
 * Runnable alone: `npx tsx bench/guardFalseRejects.ts` prints the markdown section and writes
 * bench/results/guard-false-rejects.json; `npm run bench` runs it as its `guard` step.
 */
import type { RawTool } from "../src/model/types.js";
import { isReadOnlyTool } from "../src/policy/toolPolicy.js";
import { ExtractiveSummarizer } from "../src/summarize/extractiveSummarizer.js";
import { guardSummary } from "../src/summarize/guard.js";
import { effectClass, grounding, GROUNDED_SHARE, isEffectWord, MIN_UNGROUNDED, poorlyGrounded, type Grounding } from "../src/summarize/meaningChecks.js";
import { ToolVocabulary, wordsOf } from "../src/summarize/toolWords.js";
import type { ToolSummary } from "../src/summarize/types.js";
import { loadCorpus, type CorpusServer } from "./corpus.js";
import { markdownTable, pct } from "./markdownTable.js";
import { median, nowMs, round } from "./measure.js";
import { runStandalone } from "./standalone.js";

/** The queue's batch of one server's tools for the extractive summarizer (its `maxBatch`). */
const BATCH = new ExtractiveSummarizer().maxBatch;
/** Grounding settings swept: share of content words found, and the fewest words not found to reject. */
const SHARES = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
const MIN_UNGROUNDED_SWEPT = [1, 2, 3];

/** One honest summary the guard refused. */
export interface FalseReject {
  tool: string;
  summary: string;
  reasons: string[];
}

/** One setting of the grounding rule and what it rejects. */
export interface SweepRow {
  share: number;
  minUngrounded: number;
  /** Shares of the corpus tools whose summary grounding alone rejects. */
  honest: number;
  swapped: number;
  appended: number;
}

/** Made-up lies of one kind and how many of them the whole guard rejects. */
export interface LieCatch {
  kind: string;
  checked: number;
  rejected: number;
  share: number;
}

/** Result of {@link runGuardFalseRejects}. */
export interface GuardFalseRejectsResult {
  servers: number;
  tools: number;
  /** Honest extractive summaries the guard rejected. */
  falseRejects: number;
  falseRejectShare: number;
  /** Rejections by the first words of each reason (a summary may count under several). */
  byRule: Record<string, number>;
  rejected: FalseReject[];
  /** The grounding setting in force. */
  grounding: { share: number; minUngrounded: number };
  sweep: SweepRow[];
  lies: LieCatch[];
  guardMsPerToolMedian: number;
}

/** One corpus tool with its honest extractive summary. */
interface Summarized {
  server: string;
  tool: RawTool;
  summary: ToolSummary;
}

/** Every corpus tool summarized by the extractive summarizer, batched as the queue batches them. */
export function honestSummaries(corpus: readonly CorpusServer[]): Summarized[] {
  const summarizer = new ExtractiveSummarizer();
  const out: Summarized[] = [];
  for (const server of corpus) {
    for (let start = 0; start < server.tools.length; start += BATCH) {
      const batch = server.tools.slice(start, start + BATCH);
      const summaries = summarizer.summarizeCatalog(batch);
      batch.forEach((tool, i) => {
        out.push({ server: server.server, tool, summary: summaries[i] as ToolSummary });
      });
    }
  }
  return out;
}

/** The rule a guard reason belongs to: its words up to the first quote, figure or parenthesis. */
function ruleOf(reason: string): string {
  return reason
    .replace(/^params\.\S+/, "params.<name>")
    .replace(/required parameter \S+/, "required parameter <name>")
    .replace(/\s*[("“:].*$/, "")
    .replace(/\d+ of \d+.*$/, "")
    .trim();
}

/** The summary of a tool of another server: half the corpus away, stepping on past its own server. */
function otherServers(rows: readonly Summarized[]): Summarized[] {
  return rows.map((row, i) => {
    let j = (i + Math.floor(rows.length / 2)) % rows.length;
    while (rows[j]?.server === row.server) j = (j + 1) % rows.length;
    return rows[j] as Summarized;
  });
}

/** A read-sounding summary of `tool` in its own name's words, its verbs left out: "Shows the repo details." for `delete_repo`. */
function readSounding(tool: RawTool): string {
  const words = wordsOf(tool.name).filter((w) => !isEffectWord(w));
  return `Shows the ${words.join(" ").toLowerCase()} details.`.replace(/\s+/g, " ");
}

/** Measures the guard on the corpus (see the file comment). */
export function runGuardFalseRejects(corpus: readonly CorpusServer[] = loadCorpus()): GuardFalseRejectsResult {
  const rows = honestSummaries(corpus);
  const rejected: FalseReject[] = [];
  const byRule: Record<string, number> = {};
  const times: number[] = [];
  for (let pass = 0; pass < 3; pass++) {
    const start = nowMs();
    for (const row of rows) {
      const verdict = guardSummary(row.tool, row.summary);
      if (pass > 0 || verdict.ok) continue;
      rejected.push({ tool: `${row.server}:${row.tool.name}`, summary: row.summary.summary, reasons: verdict.reasons });
      for (const rule of new Set(verdict.reasons.map(ruleOf))) byRule[rule] = (byRule[rule] ?? 0) + 1;
    }
    times.push((nowMs() - start) / rows.length);
  }

  const vocabularies = rows.map((row) => new ToolVocabulary(row.tool));
  const others = otherServers(rows);
  const judged = (text: (row: Summarized, i: number) => string): Grounding[] =>
    rows.map((row, i) => grounding(text(row, i), vocabularies[i] as ToolVocabulary));
  const honest = judged((row) => row.summary.summary);
  const swapped = judged((_row, i) => (others[i] as Summarized).summary.summary);
  const appended = judged((row, i) => `${row.summary.summary} ${(others[i] as Summarized).summary.summary}`);
  const share = (list: Grounding[], s: number, min: number): number => list.filter((g) => poorlyGrounded(g, s, min)).length / rows.length;
  const sweep: SweepRow[] = [];
  for (const min of MIN_UNGROUNDED_SWEPT) {
    for (const s of SHARES)
      sweep.push({ share: s, minUngrounded: min, honest: share(honest, s, min), swapped: share(swapped, s, min), appended: share(appended, s, min) });
  }

  const lies: LieCatch[] = [];
  const caught = (kind: string, cases: Array<{ tool: RawTool; summary: ToolSummary }>): void => {
    const count = cases.filter((c) => !guardSummary(c.tool, c.summary).ok).length;
    lies.push({ kind, checked: cases.length, rejected: count, share: cases.length === 0 ? Number.NaN : count / cases.length });
  };
  caught(
    "summary of a tool of another server",
    rows.map((row, i) => ({ tool: row.tool, summary: { summary: (others[i] as Summarized).summary.summary, params: {} } })),
  );
  caught(
    "honest summary + another server's tool's summary",
    rows.map((row, i) => ({ tool: row.tool, summary: { summary: `${row.summary.summary} ${(others[i] as Summarized).summary.summary}`, params: {} } })),
  );
  caught(
    'read-sounding summary of a deleting or changing tool ("Shows the <name> details.")',
    rows.flatMap((row, i) => {
      const vocabulary = vocabularies[i] as ToolVocabulary;
      return effectClass(row.tool, vocabulary) === undefined ? [] : [{ tool: row.tool, summary: { summary: readSounding(row.tool), params: {} } }];
    }),
  );
  caught(
    'honest summary + "; read-only." for a tool not annotated read-only',
    rows
      .filter((row) => !isReadOnlyTool(row.tool))
      .map((row) => ({ tool: row.tool, summary: { summary: `${row.summary.summary.replace(/\.$/, "")}; read-only.`, params: {} } })),
  );

  return {
    servers: corpus.length,
    tools: rows.length,
    falseRejects: rejected.length,
    falseRejectShare: rejected.length / rows.length,
    byRule,
    rejected,
    grounding: { share: GROUNDED_SHARE, minUngrounded: MIN_UNGROUNDED },
    sweep,
    lies,
    guardMsPerToolMedian: median(times.slice(1)),
  };
}

/** The markdown section of a result. */
export function guardFalseRejectsMarkdown(r: GuardFalseRejectsResult): string {
  const sweepRows = r.sweep.map((row) => {
    const inForce = row.share === r.grounding.share && row.minUngrounded === r.grounding.minUngrounded;
    return [`${inForce ? "**" : ""}${row.share} / ${row.minUngrounded}${inForce ? "** (in force)" : ""}`, pct(row.honest), pct(row.swapped), pct(row.appended)];
  });
  return [
    "## Summary guard\n",
    `Honest extractive summaries of ${r.tools.toLocaleString("en-US")} tools (${r.servers} servers) the guard rejects: **${r.falseRejects} (${(r.falseRejectShare * 100).toFixed(2)}%)**. ` +
      `Guard time per tool: ${round(r.guardMsPerToolMedian * 1000, 1)} µs (median of passes).`,
    ...(r.rejected.length > 0
      ? [
          "",
          markdownTable(
            ["tool", "summary", "reasons"],
            r.rejected.map((x) => [x.tool, x.summary, x.reasons.join("; ")]),
          ),
          "",
          `By rule: ${Object.entries(r.byRule)
            .map(([rule, n]) => `${rule}: ${n}`)
            .join("; ")}.`,
        ]
      : []),
    "",
    "Grounding alone (share of content words found / fewest not found to reject): tools rejected per set of summaries.",
    "",
    markdownTable(["setting", "honest>", "swapped>", "appended>"], sweepRows),
    "",
    "Made-up lies the whole guard rejects:",
    "",
    markdownTable(
      ["lie", "checked>", "rejected>", "share>"],
      r.lies.map((l) => [l.kind, l.checked, l.rejected, pct(l.share)]),
    ),
  ].join("\n");
}

await runStandalone(import.meta.url, { name: "guard-false-rejects", run: () => runGuardFalseRejects(), markdown: guardFalseRejectsMarkdown });
