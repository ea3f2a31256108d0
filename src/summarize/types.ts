import type { FormTokens } from "../cache/cacheEntry.js";
import type { RawTool } from "../model/types.js";

/** One tool to summarize. */
export interface SummarizeInput {
  /** Cache key `server:tool:hash`. */
  key: string;
  server: string;
  tool: RawTool;
  /** The name the tool is listed under (`github_create_issue`); the entry's token counts use it. */
  name?: string;
}

/**
 * o200k token counts a cache entry records: the tool as listed in full, and as summary mode lists
 * it; and each rendering's own count, which serving chooses between (see `FormTokens`).
 */
export interface EntryTokens {
  tokensBefore: number;
  tokensAfter: number;
  formTokens?: FormTokens;
}

/** Measures one summarized tool for its cache entry (the catalog's renderers do it: `summaryTokens`). */
export type MeasureSummary = (input: SummarizeInput, summary: ToolSummary) => EntryTokens;

/** What a summarizer writes for one tool. */
export interface ToolSummary {
  /** The compressed description. */
  summary: string;
  /** Compressed descriptions of top-level input properties, by property name. */
  params: Record<string, string>;
}

/** Outcome of one tool in a batch: a summary, or why there is none. */
export type SummarizeOutcome = { ok: true; value: ToolSummary } | { ok: false; error: Error };

/** Something that writes summaries: the offline extractive one, or an LLM behind an API. */
export interface Summarizer {
  /** Recorded in every entry: `extractive@1`, `openai:gpt-4o-mini`. */
  readonly id: string;
  /** Prompt id and version recorded in every entry (`summarize-tool@1`, or `none`). */
  readonly promptId: string;
  /** Largest number of tools it takes in one call (1 for no batching). */
  readonly maxBatch: number;
  /** Summarizes a batch of tools of one server; one outcome per input key. */
  summarize(batch: SummarizeInput[], options?: { signal?: AbortSignal }): Promise<Map<string, SummarizeOutcome>>;
}
