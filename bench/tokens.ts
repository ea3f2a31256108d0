import { briefDescription } from "../src/catalog/signature.js";
import { tokenReport, toOpenAiFunctions } from "../src/catalog/renderTools.js";
import type { CatalogTool, ListedTool, Mode } from "../src/catalog/types.js";
import { MODES, summarySchema } from "../src/config/schema.js";
import { createSummarizer } from "../src/summarize/createSummarizer.js";
import { ExtractiveSummarizer } from "../src/summarize/extractiveSummarizer.js";
import type { Summarizer } from "../src/summarize/types.js";
import { countJsonTokens } from "../src/tokens/countTokens.js";
import { summarizedCatalog, type CorpusServer } from "./corpus.js";

/** The comparison points a user would set beside abridge's modes. */
export const REFERENCES = ["namesOnly", "firstSentence", "firstSentenceSchema"] as const;
/** One reference point. */
export type Reference = (typeof REFERENCES)[number];

/** What each reference point sends, for the report. */
export const REFERENCE_LABELS: Record<Reference, string> = {
  namesOnly: "names only (floor)",
  firstSentence: "name + first sentence, no schema",
  firstSentenceSchema: "name + first sentence + full schema",
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

function referenceTools(tools: readonly CatalogTool[], reference: Reference): ListedTool[] {
  return tools.map((t) => {
    // No length cap: "first sentence" is what description-truncating compressors keep, whole.
    const first = briefDescription(t.tool.description, Number.MAX_SAFE_INTEGER);
    switch (reference) {
      case "namesOnly":
        return { name: t.name, inputSchema: {} };
      case "firstSentence":
        return { name: t.name, description: first, inputSchema: {} };
      case "firstSentenceSchema":
        return { name: t.name, description: first, inputSchema: t.tool.inputSchema };
    }
  });
}

/** OpenAI function-tool form with `parameters` left out where the reference sends no schema. */
function referenceTokens(tools: readonly CatalogTool[], reference: Reference): number {
  const fns = toOpenAiFunctions(referenceTools(tools, reference)).map((f) =>
    reference === "firstSentenceSchema" ? f : { type: f.type, function: { name: f.function.name, ...(f.function.description !== undefined ? { description: f.function.description } : {}) } },
  );
  return countJsonTokens(fns);
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
  const perServer = corpus.map((s) => row(s.server, tools.filter((t) => t.server === s.server)).row);
  const { row: total, mcp } = row("total", tools);
  const full = total.modes.full;
  const shareOfFull = Object.fromEntries([
    ...MODES.map((m) => [m, total.modes[m] / full]),
    ...REFERENCES.map((r) => [r, total.references[r] / full]),
  ]) as Record<Mode | Reference, number>;
  return { summarizer: summarizer.id, perServer, total, shareOfFull, mcpTotal: mcp, fallbacks, guardRejections };
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
      notAvailable.push({ summarizer: "openai", reason: err instanceof Error ? err.message : String(err) });
    }
  }
  return { unit: "o200k_base tokens of JSON.stringify(OpenAI function-tool list)", summarizers, notAvailable };
}
