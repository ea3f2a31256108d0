import { encode } from "gpt-tokenizer/encoding/o200k_base";

/**
 * o200k_base token count of `text` (the GPT-4o family's encoding): the unit every token figure in
 * abridge is quoted in.
 */
export function countTokens(text: string): number {
  return encode(text).length;
}

/** Token count of a value's `JSON.stringify` form. */
export function countJsonTokens(value: unknown): number {
  return countTokens(JSON.stringify(value));
}
