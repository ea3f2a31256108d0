/** The limits of one program run, their defaults, and the bounds that follow from them. */
import { AbridgeError, ErrorCode } from "../../model/errors.js";

/** Limits of one run, as a config or a caller gives them (each optional). */
export interface CodeLimits {
  /** Wall-clock time from the call of `runProgram` to its answer (default 30,000; at most a day). */
  timeout_ms?: number | undefined;
  /** Heap of the program's JavaScript engine, in MiB (default 64, at most 1,024). */
  memory_mb?: number | undefined;
  /** Tool calls a run may make (default 1,000); a call past it throws in the program with `CODE_LIMIT`. */
  max_calls?: number | undefined;
  /** Tool calls of one run in flight at once (default 8); calls past it wait in the runtime. */
  max_concurrent_calls?: number | undefined;
}

/** Every limit of {@link CodeLimits}, each with its value. */
export type CodeLimitValues = { [K in keyof CodeLimits]-?: NonNullable<CodeLimits[K]> };

/** The defaults of {@link CodeLimits}. */
export const DEFAULT_CODE_LIMITS: Readonly<CodeLimitValues> = Object.freeze({
  timeout_ms: 30_000,
  memory_mb: 64,
  max_calls: 1_000,
  max_concurrent_calls: 8,
});

/** The largest `memory_mb`: a WebAssembly instance addresses 2 GiB, and a run must leave room for its engine. */
export const MAX_MEMORY_MB = 1024;

/** The largest `timeout_ms`: a day (a timer cannot wait much longer than 24 days). */
export const MAX_TIMEOUT_MS = 86_400_000;

/**
 * The largest program text, in UTF-8 bytes: a program is a few lines a model writes, not a bundle.
 * Its types are stripped on the main thread, and this bounds that (a few milliseconds).
 */
export const MAX_PROGRAM_BYTES = 64 * 1024;

/** Limits with every default filled in, and the byte bounds derived from `memory_mb`. */
export interface ResolvedCodeLimits extends CodeLimitValues {
  /**
   * The largest JSON (UTF-8 bytes) that may cross the boundary in one piece: a tool's value into
   * the program, a call's arguments or the return value out of it. A quarter of the heap, since
   * JSON parsed into objects takes several times its text.
   */
  maxValueBytes: number;
  /** Console output a run may keep (UTF-8 bytes); lines past it are counted, not kept. */
  maxConsoleBytes: number;
}

function positiveInteger(name: string, value: number | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0 || value > max) {
    throw new AbridgeError(ErrorCode.INPUT_INVALID, `${name}: expected an integer from 1 to ${max}, got ${String(value)}`);
  }
  return value;
}

/** {@link CodeLimits} checked, with defaults. A value that is not a positive integer (or over its maximum) is an `INPUT_INVALID` error. */
export function resolveCodeLimits(limits: CodeLimits = {}): ResolvedCodeLimits {
  const memory_mb = positiveInteger("memory_mb", limits.memory_mb, DEFAULT_CODE_LIMITS.memory_mb, MAX_MEMORY_MB);
  const maxValueBytes = (memory_mb * 1024 * 1024) / 4;
  return {
    timeout_ms: positiveInteger("timeout_ms", limits.timeout_ms, DEFAULT_CODE_LIMITS.timeout_ms, MAX_TIMEOUT_MS),
    memory_mb,
    max_calls: positiveInteger("max_calls", limits.max_calls, DEFAULT_CODE_LIMITS.max_calls),
    max_concurrent_calls: positiveInteger("max_concurrent_calls", limits.max_concurrent_calls, DEFAULT_CODE_LIMITS.max_concurrent_calls),
    maxValueBytes,
    maxConsoleBytes: maxValueBytes,
  };
}
