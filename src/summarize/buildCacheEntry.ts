import type { CacheEntry } from "../cache/cacheEntry.js";
import type { EntryTokens, SummarizeInput, ToolSummary } from "./types.js";

/** Who wrote an entry, and why it is a fallback if it is one. */
export interface EntryOrigin {
  summarizer: string;
  prompt: string;
  fallback?: string;
}

/**
 * The cache entry of one summarized tool. `tokens` are o200k counts of the tool as listed in full
 * (`tokensBefore`) and as summary mode lists it with this summary (`tokensAfter`), measured by the
 * renderers that serve the lists (see `MeasureSummary`), with each rendering's own count when the
 * measure gives them (serving then chooses between forms without the tokenizer).
 */
export function buildCacheEntry(input: SummarizeInput, summary: ToolSummary, origin: EntryOrigin, tokens: EntryTokens, now: Date): CacheEntry {
  const { tool } = input;
  const entry: CacheEntry = {
    key: input.key,
    server: input.server,
    tool: tool.name,
    hash: input.key.slice(input.key.lastIndexOf(":") + 1),
    summary: summary.summary,
    params: { ...summary.params },
    summarizer: origin.summarizer,
    prompt: origin.prompt,
    tokensBefore: tokens.tokensBefore,
    tokensAfter: tokens.tokensAfter,
    createdAt: now.toISOString(),
  };
  if (origin.fallback !== undefined) entry.fallback = origin.fallback;
  if (tokens.formTokens !== undefined) entry.formTokens = { ...tokens.formTokens };
  return entry;
}
