import { z } from "zod";

/**
 * One line of `summaries.jsonl`. Validated with zod on read: a line that does not match is
 * skipped and counted, never fatal.
 */
export const cacheEntrySchema = z.object({
  /** `server:tool:hash`. */
  key: z.string().min(5),
  server: z.string().min(1),
  tool: z.string().min(1),
  /** xxhash64 (hex) of the tool's canonical JSON. */
  hash: z.string().regex(/^[0-9a-f]{16}$/),
  /** Compressed tool description. */
  summary: z.string(),
  /** Compressed property descriptions, by top-level property name. */
  params: z.record(z.string(), z.string()).default({}),
  /** Who wrote it: `extractive@1`, `openai:gpt-4o-mini`, ... */
  summarizer: z.string().min(1),
  /** Prompt id and version, e.g. `summarize-tool@1`; `none` for the extractive summarizer. */
  prompt: z.string().min(1),
  tokensBefore: z.number().int().nonnegative(),
  tokensAfter: z.number().int().nonnegative(),
  createdAt: z.string().min(1),
  /** Set when the guard rejected a summarizer's text and this entry is the extractive fallback. */
  fallback: z.string().optional(),
});

export type CacheEntry = z.infer<typeof cacheEntrySchema>;

/** Builds the cache key of a tool. */
export function cacheKey(server: string, tool: string, hash: string): string {
  return `${server}:${tool}:${hash}`;
}
