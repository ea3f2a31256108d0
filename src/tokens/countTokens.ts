import { createRequire } from "node:module";

type Encode = (text: string) => number[];

let encode: Encode | undefined;

/**
 * The o200k encoder, loaded on the first count. Its tables take about 67 MiB of memory once
 * loaded, and a bridge serving from a warm cache in compact, summary, full or lazy mode never
 * counts a token (lists pick their smaller forms by byte length): only token reports, `auto`
 * mode's budget and the figures of a new cache entry do.
 */
function encoder(): Encode {
  encode ??= (createRequire(import.meta.url)("gpt-tokenizer/encoding/o200k_base") as { encode: Encode }).encode;
  return encode;
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
