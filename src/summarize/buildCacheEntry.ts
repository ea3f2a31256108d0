import type { CacheEntry } from "../cache/cacheEntry.js";
import { countJsonTokens } from "../tokens/countTokens.js";
import type { RawTool } from "../model/types.js";
import type { SummarizeInput, ToolSummary } from "./types.js";
import { isObject } from "../model/json.js";


/**
 * The input schema with top-level property descriptions replaced by `params` (a property without
 * a shortened text keeps its own), the rest untouched: the `summary` mode's schema.
 */
export function schemaWithParams(inputSchema: RawTool["inputSchema"], params: Record<string, string>): Record<string, unknown> {
  if (!isObject(inputSchema) || !isObject(inputSchema["properties"])) return inputSchema;
  const properties: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(inputSchema["properties"])) {
    const short = params[name];
    properties[name] = short !== undefined && isObject(property) ? { ...property, description: short } : property;
  }
  return { ...inputSchema, properties };
}

/** Who wrote an entry, and why it is a fallback if it is one. */
export interface EntryOrigin {
  summarizer: string;
  prompt: string;
  fallback?: string;
}

/**
 * The cache entry of one summarized tool. Token counts are o200k: `tokensBefore` of the tool as the
 * model sees it in full (name, description, input schema), `tokensAfter` of the same with the
 * summary as description and `params` in place of property descriptions.
 */
export function buildCacheEntry(input: SummarizeInput, summary: ToolSummary, origin: EntryOrigin, now: Date): CacheEntry {
  const { tool } = input;
  const tokensBefore = countJsonTokens({
    name: tool.name,
    description: tool.description ?? "",
    inputSchema: tool.inputSchema,
  });
  const tokensAfter = countJsonTokens({
    name: tool.name,
    description: summary.summary,
    inputSchema: schemaWithParams(tool.inputSchema, summary.params),
  });
  const entry: CacheEntry = {
    key: input.key,
    server: input.server,
    tool: tool.name,
    hash: input.key.slice(input.key.lastIndexOf(":") + 1),
    summary: summary.summary,
    params: { ...summary.params },
    summarizer: origin.summarizer,
    prompt: origin.prompt,
    tokensBefore,
    tokensAfter,
    createdAt: now.toISOString(),
  };
  if (origin.fallback !== undefined) entry.fallback = origin.fallback;
  return entry;
}
