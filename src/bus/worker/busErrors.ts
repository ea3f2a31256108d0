import { ErrorCode, toAbridgeError } from "../../model/errors.js";
import type { BusError, BusErrorCode } from "../wire/busProtocol.js";

/** The bus code of each core error code that has one of its own; the rest are `internal`. */
const BUS_CODES: Partial<Record<ErrorCode, BusErrorCode>> = {
  [ErrorCode.TOOL_NOT_FOUND]: "tool_not_found",
  [ErrorCode.SERVER_NOT_FOUND]: "tool_not_found",
  [ErrorCode.INVALID_ARGUMENTS]: "invalid_arguments",
  // Arguments the core refuses before any upstream sees them (nested past the depth limit, a cycle).
  [ErrorCode.INPUT_INVALID]: "invalid_arguments",
  [ErrorCode.TOOL_FILTERED]: "refused",
  [ErrorCode.TOOL_REFUSED]: "refused",
  [ErrorCode.UPSTREAM_TIMEOUT]: "timeout",
  [ErrorCode.UPSTREAM_UNAVAILABLE]: "unavailable",
  [ErrorCode.UPSTREAM_EXITED]: "unavailable",
  [ErrorCode.UPSTREAM_START_FAILED]: "unavailable",
  [ErrorCode.UPSTREAM_RECORDED]: "unavailable",
  [ErrorCode.UPSTREAM_ERROR]: "upstream_error",
  // An upstream speaking another protocol revision than its config says is not there for this worker.
  [ErrorCode.UPSTREAM_PROTOCOL]: "unavailable",
  // The upstream asked for input (sampling, elicitation, roots) a bus requester cannot give.
  [ErrorCode.UPSTREAM_INPUT_REQUIRED]: "upstream_error",
  // The upstream's queue is full: another worker, or a later try, may be served.
  [ErrorCode.UPSTREAM_BUSY]: "busy",
  // How a program ended (a run over the bus): its own failure, its time, or a limit it passed.
  [ErrorCode.CODE_ERROR]: "code_error",
  [ErrorCode.CODE_TIMEOUT]: "timeout",
  [ErrorCode.CODE_MEMORY]: "too_large",
  [ErrorCode.CODE_LIMIT]: "too_large",
};

/**
 * A core error as the bus tells it: the bus code, the message, whether to retry, and the core's own
 * code beside it. A timeout is always worth retrying (on another worker, or later); otherwise the
 * core's `retryable` stands.
 */
export function busErrorOf(err: unknown): BusError {
  const error = toAbridgeError(err);
  const code = BUS_CODES[error.code] ?? "internal";
  return { code, message: error.message, retryable: code === "timeout" ? true : error.retryable, abridge_code: error.code };
}

/** A bus error made here (not from a core error). */
export function busError(code: BusErrorCode, message: string, retryable = false): BusError {
  return { code, message, retryable };
}
