import { renderTools, tokenReport, toOpenAiFunctions } from "../src/catalog/renderTools.js";
import type { CatalogTool, Mode } from "../src/catalog/types.js";
import { MODES, summarySchema } from "../src/config/schema.js";
import { createSummarizer } from "../src/summarize/createSummarizer.js";
import { ExtractiveSummarizer } from "../src/summarize/extractiveSummarizer.js";
import type { Summarizer } from "../src/summarize/types.js";
import { countJsonTokens } from "../src/tokens/countTokens.js";
import { summarizedCatalog, type CorpusServer } from "./corpus.js";
import { views, viewTokens } from "./frontier/views.js";
import { appendedWordList } from "./frontier/wordList.js";
import { messageOf } from "../src/model/errors.js";

/** The comparison points a user would set beside abridge's modes (renderings in frontier/views.ts). */
export const REFERENCES = [
  "namesOnly",
  "firstSentence",
  "firstSentenceParams",
  "firstSentenceSchema",
  "compressorLow",
  "compressorMedium",
  "compressorHigh",
  "compressorMax",
] as const;
/** One reference point. */
export type Reference = (typeof REFERENCES)[number];

/** What each reference point sends, for the report. */
export const REFERENCE_LABELS: Record<Reference, string> = {
  namesOnly: "names only (floor)",
  firstSentence: "name + first sentence, no schema",
  firstSentenceParams: "name + first sentence + parameter line, no schema",
  firstSentenceSchema: "name + first sentence + full schema",
  compressorLow: "mcp-compressor low",
  compressorMedium: "mcp-compressor medium",
  compressorHigh: "mcp-compressor high",
  compressorMax: "mcp-compressor max (list on request)",
};

/** The view of frontier/views.ts each reference is. */
const REFERENCE_VIEW: Record<Reference, string> = {
  namesOnly: "names-only",
  firstSentence: "first-sentence",
  firstSentenceParams: "first-sentence-params",
  firstSentenceSchema: "first-sentence-schema",
  compressorLow: "compressor-low",
  compressorMedium: "compressor-medium",
  compressorHigh: "compressor-high",
  compressorMax: "compressor-max",
};

/** o200k tokens of one list (OpenAI function-tool form) in every mode and reference. */
export interface TokenRow {
  /** Server name, or `total` for the pooled list of every server. */
  server: string;
  tools: number;
  modes: Record<Mode, number>;
  references: Record<Reference, number>;
}

/** Token figures of one summarizer over the corpus. */
export interface SummarizerTokens {
  summarizer: string;
  perServer: TokenRow[];
  /** The pooled list of every corpus tool (one lazy index, one get_schema). */
  total: TokenRow;
  /** Share of full tokens, per mode and reference, over the pooled list. */
  shareOfFull: Record<Mode | Reference, number>;
  /** The same figures as the MCP `tools/list` result (`{"tools": [...]}`) rather than the OpenAI form. */
  mcpTotal: Record<Mode, number>;
  /** Tools whose summary came from the extractive fallback (guard rejection or failure). */
  fallbacks: number;
  guardRejections: number;
  perTool: PerToolSizes;
  wordLists: WordListCheck;
  /** The same catalog served from entries without token counts (see {@link CountlessTokens}). */
  withoutCounts: CountlessTokens;
}

/**
 * The pooled list when serving has no stored counts to choose forms by: each form is then chosen as
 * before counts were stored (the smaller rendering when its JSON is at most 0.8 of the other's,
 * else the two counted). Beside
 * it, what serving the original to such tools would cost instead (compact = full + get_schema).
 */
export interface CountlessTokens {
  /** Entries written before counts were kept: summaries served, forms chosen without stored counts. */
  summarized: { summary: number; compact: number; perTool: PerToolSizes };
  /** No entry at all (a cold cache): original descriptions, forms chosen without stored counts. */
  unsummarized: { summary: number; compact: number; perTool: PerToolSizes };
  /** Compact if every tool without counts were served as the original. */
  originalCompact: number;
}

/** Result of {@link runTokens}. */
export interface TokensResult {
  unit: string;
  summarizers: SummarizerTokens[];
  /** Summarizers not run, with why. */
  notAvailable: { summarizer: string; reason: string }[];
}

/** Options of {@link runTokens}. */
export interface TokensOptions {
  corpus: readonly CorpusServer[];
  env: Record<string, string | undefined>;
  signal?: AbortSignal;
  /** Longest an LLM summarizer may take over the whole corpus (default 5 minutes). */
  llmTimeoutMs?: number;
}

const VIEWS = new Map(views().map((v) => [v.id, v]));

function referenceTokens(tools: readonly CatalogTool[], reference: Reference): number {
  const view = VIEWS.get(REFERENCE_VIEW[reference]);
  if (view === undefined) throw new Error(`no rendering for reference ${reference}`);
  return viewTokens(view, tools);
}

/** One tool that is larger in a cheaper view than in a richer one. */
export interface SizeViolation {
  tool: string;
  full: number;
  summary: number;
  compact: number;
}

/** Per-tool size checks: a tool's compact form must not exceed its summary form, nor that its full form. */
export interface PerToolSizes {
  tools: number;
  compactOverFull: number;
  summaryOverFull: number;
  compactOverSummary: number;
  /** The worst compact-over-full cases (by compact/full), at most 10. */
  worst: SizeViolation[];
}

/** o200k tokens of one tool alone in a mode (OpenAI function form, without compact's get_schema). */
function oneToolTokens(tool: CatalogTool, mode: Mode): number {
  const listed = renderTools([tool], mode).filter((t) => t.name === tool.name);
  return countJsonTokens(toOpenAiFunctions(listed));
}

function perToolSizes(tools: readonly CatalogTool[]): PerToolSizes {
  const rows = tools.map((t) => ({ tool: t.name, full: oneToolTokens(t, "full"), summary: oneToolTokens(t, "summary"), compact: oneToolTokens(t, "compact") }));
  return {
    tools: rows.length,
    compactOverFull: rows.filter((r) => r.compact > r.full).length,
    summaryOverFull: rows.filter((r) => r.summary > r.full).length,
    compactOverSummary: rows.filter((r) => r.compact > r.summary).length,
    worst: rows
      .filter((r) => r.compact > r.full)
      .sort((a, b) => b.compact / b.full - a.compact / a.full)
      .slice(0, 10),
  };
}

/** Summaries that end in an appended word list (see frontier/wordList.ts). */
export interface WordListCheck {
  summaries: number;
  withWordList: number;
  /**
   * Of those, the ones whose flagged sentence is not in the tool's own description: a list the
   * summarizer wrote rather than a sentence of the description kept whole ("e.g. Size, Color").
   */
  notInDescription: number;
  /** Up to 10 examples, `tool: tail`. */
  examples: string[];
}

function wordListCheck(tools: readonly CatalogTool[]): WordListCheck {
  const spaced = (text: string): string => text.replace(/\s+/g, " ").trim();
  const flagged = tools.flatMap((t) => {
    const tail = t.summary === undefined ? undefined : appendedWordList(t.summary.summary);
    if (tail === undefined) return [];
    const copied = spaced(t.tool.description ?? "").includes(spaced(tail).replace(/[.!?…]+$/, ""));
    return [{ text: `${t.name}: "${tail}"${copied ? "" : " (not in the description)"}`, copied }];
  });
  return {
    summaries: tools.filter((t) => t.summary !== undefined).length,
    withWordList: flagged.length,
    notInDescription: flagged.filter((f) => !f.copied).length,
    examples: flagged.map((f) => f.text).slice(0, 10),
  };
}

/** o200k tokens of the pooled list of `tools` in `mode`. */
function listTokens(tools: readonly CatalogTool[], mode: Mode): number {
  return countJsonTokens(toOpenAiFunctions(renderTools(tools, mode)));
}

function countless(tools: readonly CatalogTool[]): CountlessTokens {
  const summarized = tools.map(({ formTokens: _counts, ...tool }) => tool);
  const unsummarized = summarized.map(({ summary: _summary, ...tool }) => tool);
  const of = (set: CatalogTool[]) => ({ summary: listTokens(set, "summary"), compact: listTokens(set, "compact"), perTool: perToolSizes(set) });
  return {
    summarized: of(summarized),
    unsummarized: of(unsummarized),
    originalCompact: countJsonTokens(toOpenAiFunctions([...renderTools(tools, "full"), ...renderTools([], "compact")])),
  };
}

function row(server: string, tools: readonly CatalogTool[]): { row: TokenRow; mcp: Record<Mode, number> } {
  const report = tokenReport(tools);
  const modes = Object.fromEntries(MODES.map((m) => [m, report[m].openAiTokens])) as Record<Mode, number>;
  const mcp = Object.fromEntries(MODES.map((m) => [m, report[m].mcpTokens])) as Record<Mode, number>;
  const references = Object.fromEntries(REFERENCES.map((r) => [r, referenceTokens(tools, r)])) as Record<Reference, number>;
  return { row: { server, tools: tools.length, modes, references }, mcp };
}

async function measure(corpus: readonly CorpusServer[], summarizer: Summarizer, signal?: AbortSignal): Promise<SummarizerTokens> {
  const { tools, fallbacks, guardRejections } = await summarizedCatalog(corpus, summarizer, signal ? { signal } : {});
  const perServer = corpus.map(
    (s) =>
      row(
        s.server,
        tools.filter((t) => t.server === s.server),
      ).row,
  );
  const { row: total, mcp } = row("total", tools);
  const full = total.modes.full;
  const shareOfFull = Object.fromEntries([
    ...MODES.map((m) => [m, total.modes[m] / full]),
    ...REFERENCES.map((r) => [r, total.references[r] / full]),
  ]) as Record<Mode | Reference, number>;
  return {
    summarizer: summarizer.id,
    perServer,
    total,
    shareOfFull,
    mcpTotal: mcp,
    fallbacks,
    guardRejections,
    perTool: perToolSizes(tools),
    wordLists: wordListCheck(tools),
    withoutCounts: countless(tools),
  };
}

/**
 * Token budget: o200k_base tokens of the tool list a client receives in every mode, per corpus
 * server and pooled, beside the reference points, with the extractive summarizer and (when
 * `ABRIDGE_BENCH_BASE_URL` names an OpenAI-compatible endpoint; model `ABRIDGE_BENCH_MODEL`, key in
 * `ABRIDGE_BENCH_API_KEY`) the OpenAI one.
 */
export async function runTokens(options: TokensOptions): Promise<TokensResult> {
  const summarizers: SummarizerTokens[] = [await measure(options.corpus, new ExtractiveSummarizer(), options.signal)];
  const notAvailable: TokensResult["notAvailable"] = [];
  const baseUrl = options.env.ABRIDGE_BENCH_BASE_URL;
  if (baseUrl === undefined || baseUrl.trim() === "") {
    notAvailable.push({ summarizer: "openai", reason: "ABRIDGE_BENCH_BASE_URL is not set" });
  } else {
    try {
      const config = summarySchema.parse({
        summarizer: "openai",
        base_url: baseUrl,
        model: options.env.ABRIDGE_BENCH_MODEL ?? "gpt-4o-mini",
        api_key_env: "ABRIDGE_BENCH_API_KEY",
      });
      const llm = createSummarizer(config, { env: options.env });
      const timeout = AbortSignal.timeout(options.llmTimeoutMs ?? 300_000);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      const result = await measure(options.corpus, llm, signal);
      if (result.fallbacks >= result.total.tools) {
        notAvailable.push({ summarizer: llm.id, reason: `every summary fell back to extractive (endpoint ${baseUrl} failed or was rejected by the guard)` });
      } else {
        summarizers.push(result);
      }
    } catch (err) {
      notAvailable.push({ summarizer: "openai", reason: messageOf(err) });
    }
  }
  return { unit: "o200k_base tokens of JSON.stringify(OpenAI function-tool list)", summarizers, notAvailable };
}
