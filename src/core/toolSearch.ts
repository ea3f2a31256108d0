import { MAX_SEARCH_LIMIT } from "../catalog/searchIndex.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";

/** The result counts a tool search takes, for help texts (`1-50`). */
export const SEARCH_LIMIT_RANGE = `1-${MAX_SEARCH_LIMIT}`;

/**
 * A tool search's result count as given (`--limit 5`, a number): undefined when none is given
 * (the search's default applies), else an integer from 1 to the most a search returns. The search
 * itself clamps what it is given; a front end that asks its user for the count refuses a wrong
 * one instead, so that nobody is shown ten results after asking for a hundred.
 *
 * @throws AbridgeError with `code` (default INPUT_INVALID), the message naming `what` and the value.
 */
export function parseSearchLimit(value: unknown, what: string, code: ErrorCode = ErrorCode.INPUT_INVALID): number | undefined {
  if (value === undefined) return undefined;
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SEARCH_LIMIT) {
    throw new AbridgeError(code, `${what}: expected an integer from 1 to ${MAX_SEARCH_LIMIT}, got "${String(value)}"`);
  }
  return limit;
}
