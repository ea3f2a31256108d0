/**
 * The `fallback` reason the summarize queue writes into an entry whose summary came from the
 * fallback, and how a reader tells its cause back from it. Kept apart from `summarizeQueue.ts`
 * because the prefixes are a format: the queue writes them, and `abridge summarize` reads them
 * back (through {@link fallbackCause}) to tell why tools fell back.
 */
import { ErrorCode } from "../model/errors.js";

/** Longest `fallback` reason stored in an entry. */
const MAX_REASON_CHARS = 500;

/** Start of the `fallback` reason of an entry whose summary the guard rejected. */
export const GUARD_REASON = "guard: ";
/** Start of the `fallback` reason of an entry written because the spend cap was reached. */
export const CAP_REASON = `${ErrorCode.SPEND_CAP_REACHED}: `;

/**
 * Why the queue wrote the fallback's summary: the summarizer call `failed` (for good, after any
 * retries), its summary was `rejected` by the guard, or the spend cap left the tool `capped`.
 */
export type FallbackCause = "failed" | "rejected" | "capped";

/** The cause of an entry's fallback, read from the `fallback` reason this queue wrote into it. */
export function fallbackCause(reason: string): FallbackCause {
  if (reason.startsWith(GUARD_REASON)) return "rejected";
  if (reason.startsWith(CAP_REASON)) return "capped";
  return "failed";
}

/** A reason as stored: cut to {@link MAX_REASON_CHARS}. */
export function storedReason(reason: string): string {
  return reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS - 1)}…` : reason;
}
