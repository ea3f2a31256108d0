import { createRequire } from "node:module";

type Encode = (text: string) => number[];

let encode: Encode | undefined;

/**
 * The o200k encoder, loaded on the first count. Its tables take about 57 MiB of memory once loaded
 * (75 MiB at the peak of loading), and a bridge serving from a warm cache in full, summary,
 * compact, lazy or code mode never counts a token: lists choose between a tool's forms by the
 * counts stored in its cache entry. Token reports, `auto` mode's budget, the counts of a new cache
 * entry, and the choice of forms for a tool whose entry has no counts (as lists chose before
 * counts were stored) load it.
 */
function encoder(): Encode {
  encode ??= (createRequire(import.meta.url)("gpt-tokenizer/encoding/o200k_base") as { encode: Encode }).encode;
  return encode;
}

/**
 * Whether this process has loaded the encoder (counted a token) yet: tests and diagnostics check
 * that serving from a warm cache leaves it unloaded.
 */
export function tokenizerLoaded(): boolean {
  return encode !== undefined;
}

/**
 * o200k_base token count of `text` (the GPT-4o family's encoding): the unit every token figure in
 * abridge is quoted in.
 */
export function countTokens(text: string): number {
  return encoder()(text).length;
}

/** Token count of a value's `JSON.stringify` form. */
export function countJsonTokens(value: unknown): number {
  return countTokens(JSON.stringify(value));
}
