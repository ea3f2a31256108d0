import { z } from "zod";
import { isObject } from "../model/json.js";

const tokenCount = z.number().int().nonnegative();

/**
 * o200k tokens (OpenAI function form) of each rendering a list may choose for one tool, counted
 * when the entry is written, so that serving compares numbers instead of loading the tokenizer.
 * `renderer` is the version of the renderers that made the forms counted (`RENDERER_VERSION` in
 * the catalog): counts of another version describe other bytes and are ignored, as if absent.
 * `summary` is the summary rendering itself (not the smaller of it and `full`), and `names`,
 * `types` and `none` are the compact rendering with each `compact_schema`.
 */
export const formTokensSchema = z.object({
  renderer: z.number().int().positive(),
  full: tokenCount,
  summary: tokenCount,
  names: tokenCount,
  types: tokenCount,
  none: tokenCount,
});

/** Token counts of one tool's renderings (see {@link formTokensSchema}). */
export type FormTokens = z.infer<typeof formTokensSchema>;

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
  /** Tokens of each rendering of the tool with this summary; absent in entries written before they were kept. */
  formTokens: formTokensSchema.optional(),
});

export type CacheEntry = z.infer<typeof cacheEntrySchema>;

/** Keys every entry has; `params`, `fallback` and `formTokens` may be missing. */
const REQUIRED_KEYS = 10;

/**
 * Checks a value decoded by `JSON.parse` against {@link cacheEntrySchema} without zod, for the
 * load path: zod's `safeParse` builds a new object, a payload and an issue list per field, which
 * made it half of the time of loading a 100k-entry cache, mostly in garbage collection.
 *
 * It accepts a subset of what the schema accepts and returns what zod would return for it (the
 * same object with `params` defaulted), so it may only ever say "yes, and here is the entry" or
 * "ask zod": `undefined` means "not decided here", never "invalid". Anything unusual (unknown keys,
 * which zod would strip; a `__proto__` parameter, which zod drops; a key under 10 UTF-16 units,
 * which zod measures in code points) is left to zod, which stays the
 * single definition of the format and writes the error message. `test/cache/fastCheck.test.ts`
 * holds both to agreement on many valid, mutated and generated lines.
 *
 * The value must come from `JSON.parse` (plain objects, arrays and primitives only): getters,
 * prototypes and symbol keys are not considered. Mutates `value` (adds the `params` default).
 */
export function fastCheckCacheEntry(value: unknown): CacheEntry | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const { key, server, tool, hash, summary, summarizer, prompt, tokensBefore, tokensAfter, createdAt } = v;
  if (
    typeof key !== "string" ||
    // zod counts code points when a string has fewer than twice its minimum in UTF-16 units; any
    // real key has at least 20 units, so a shorter one is left to zod.
    key.length < 10 ||
    typeof server !== "string" ||
    server.length < 1 ||
    typeof tool !== "string" ||
    tool.length < 1 ||
    typeof hash !== "string" ||
    !isLowerHex16(hash) ||
    typeof summary !== "string" ||
    typeof summarizer !== "string" ||
    summarizer.length < 1 ||
    typeof prompt !== "string" ||
    prompt.length < 1 ||
    typeof tokensBefore !== "number" ||
    !Number.isSafeInteger(tokensBefore) ||
    tokensBefore < 0 ||
    typeof tokensAfter !== "number" ||
    !Number.isSafeInteger(tokensAfter) ||
    tokensAfter < 0 ||
    typeof createdAt !== "string" ||
    createdAt.length < 1
  ) {
    return undefined;
  }
  // Count the keys this check knows, then compare with the keys the object has: a difference
  // means keys zod would strip.
  let known = REQUIRED_KEYS;
  const params = v.params;
  if (params !== undefined) {
    if (!isStringRecord(params)) return undefined;
    known += 1;
  }
  const fallback = v.fallback;
  if (fallback !== undefined) {
    if (typeof fallback !== "string") return undefined;
    known += 1;
  }
  const formTokens = v.formTokens;
  if (formTokens !== undefined) {
    if (!isFormTokens(formTokens)) return undefined;
    known += 1;
  }
  let own = 0;
  for (const name in v) {
    // JSON.parse makes plain objects, so every enumerated key is own; counting is cheaper than
    // Object.keys, which allocates an array per line.
    if (name === "__proto__") return undefined;
    own += 1;
  }
  if (own !== known) return undefined;
  if (params === undefined) v.params = {};
  return value as CacheEntry;
}

/** Keys of {@link formTokensSchema}. */
const FORM_TOKEN_KEYS = ["renderer", "full", "summary", "names", "types", "none"] as const;

/**
 * {@link formTokensSchema} by hand: a plain object with exactly its keys, each a safe non-negative
 * integer (`renderer` positive). Anything else (an unknown key zod would strip included) is zod's.
 */
function isFormTokens(value: unknown): boolean {
  if (!isObject(value)) return false;
  for (const name of FORM_TOKEN_KEYS) {
    const n = value[name];
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n < (name === "renderer" ? 1 : 0)) return false;
  }
  let own = 0;
  for (const name in value) {
    if (name === "__proto__") return false;
    own += 1;
  }
  return own === FORM_TOKEN_KEYS.length;
}

/** `^[0-9a-f]{16}$` without the regex machinery. */
function isLowerHex16(text: string): boolean {
  if (text.length !== 16) return false;
  for (let i = 0; i < 16; i++) {
    const c = text.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

/** A plain JSON object whose values are all strings and that has no `__proto__` key (zod drops it). */
function isStringRecord(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  for (const name in record) {
    if (name === "__proto__" || typeof record[name] !== "string") return false;
  }
  return true;
}

/** Builds the cache key of a tool. */
export function cacheKey(server: string, tool: string, hash: string): string {
  return `${server}:${tool}:${hash}`;
}
