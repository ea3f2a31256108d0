import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";

/** Errors after which the same file operation may work later (space freed, descriptors released). */
export const RETRYABLE_IO = new Set(["ENOSPC", "EDQUOT", "EAGAIN", "EBUSY", "EMFILE", "ENFILE", "EINTR", "EIO"]);

/** The `code` of a Node.js system error, if it has one. */
export function errnoCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** A missing file, or a path through a non-directory, means there is no cache yet. */
export function isMissing(err: unknown): boolean {
  const code = errnoCode(err);
  return code === "ENOENT" || code === "ENOTDIR";
}

/** A CACHE_IO error about reading `file` that keeps `err` as its cause (an AbridgeError passes through). */
export function readError(file: string, err: unknown): AbridgeError {
  if (err instanceof AbridgeError) return err;
  return new AbridgeError(ErrorCode.CACHE_IO, `cannot read cache ${file}: ${messageOf(err)}`, {
    cause: err,
    retryable: RETRYABLE_IO.has(errnoCode(err) ?? ""),
  });
}

/** @throws AbridgeError CANCELLED when `signal` is aborted. */
export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) {
    throw new AbridgeError(ErrorCode.CANCELLED, `cache ${what} was cancelled`, { cause: signal.reason });
  }
}
