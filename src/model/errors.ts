/**
 * Stable error codes. A code is part of the public contract (CLI output, daemon protocol, tool
 * error results): add codes, never rename them.
 */
export const ErrorCode = {
  CONFIG_NOT_FOUND: "CONFIG_NOT_FOUND",
  CONFIG_INVALID: "CONFIG_INVALID",
  CONFIG_ENV_MISSING: "CONFIG_ENV_MISSING",
  /** The config lists abridge itself: an abridge above this one serves the same config. */
  CONFIG_RECURSION: "CONFIG_RECURSION",
  USAGE: "USAGE",
  UPSTREAM_START_FAILED: "UPSTREAM_START_FAILED",
  UPSTREAM_TIMEOUT: "UPSTREAM_TIMEOUT",
  UPSTREAM_UNAVAILABLE: "UPSTREAM_UNAVAILABLE",
  UPSTREAM_EXITED: "UPSTREAM_EXITED",
  UPSTREAM_ERROR: "UPSTREAM_ERROR",
  /**
   * The server has as many requests waiting for it as it may (`max_pending_requests`), or its
   * stdin is not read and the queue of requests to it is full: refused at once, retryable.
   */
  UPSTREAM_BUSY: "UPSTREAM_BUSY",
  /** The server is a recorded tools/list answer (`recorded = "..."`): it lists tools but cannot run them. */
  UPSTREAM_RECORDED: "UPSTREAM_RECORDED",
  /**
   * The server does not speak the MCP revision its `protocol` asks for (a `2026-07-28` entry whose
   * server only knows the initialize handshake, or a server that refuses every revision abridge has).
   */
  UPSTREAM_PROTOCOL: "UPSTREAM_PROTOCOL",
  /**
   * The server answered a request with `input_required` (it needs sampling, elicitation or roots
   * from the user's client) and abridge could not get the answers: no client behind the call, the
   * client cannot answer that kind of request, or the server kept asking past the round limit.
   */
  UPSTREAM_INPUT_REQUIRED: "UPSTREAM_INPUT_REQUIRED",
  SERVER_NOT_FOUND: "SERVER_NOT_FOUND",
  TOOL_NOT_FOUND: "TOOL_NOT_FOUND",
  TOOL_FILTERED: "TOOL_FILTERED",
  TOOL_REFUSED: "TOOL_REFUSED",
  /** No server offers the resource, resource template or prompt named. */
  RESOURCE_NOT_FOUND: "RESOURCE_NOT_FOUND",
  /** The server that owns what was named lacks the capability asked for (e.g. resource subscriptions). */
  CAPABILITY_UNSUPPORTED: "CAPABILITY_UNSUPPORTED",
  INVALID_ARGUMENTS: "INVALID_ARGUMENTS",
  CANCELLED: "CANCELLED",
  CACHE_CORRUPT_LINE: "CACHE_CORRUPT_LINE",
  CACHE_IO: "CACHE_IO",
  /** The shared summary cache (Redis, `cache_url`) cannot be reached; a bridge serves from memory meanwhile. */
  CACHE_UNAVAILABLE: "CACHE_UNAVAILABLE",
  SUMMARIZER_FAILED: "SUMMARIZER_FAILED",
  SUMMARIZER_RATE_LIMITED: "SUMMARIZER_RATE_LIMITED",
  SUMMARY_REJECTED: "SUMMARY_REJECTED",
  SPEND_CAP_REACHED: "SPEND_CAP_REACHED",
  INPUT_INVALID: "INPUT_INVALID",
  DAEMON_UNAVAILABLE: "DAEMON_UNAVAILABLE",
  DAEMON_UNAUTHORIZED: "DAEMON_UNAUTHORIZED",
  DAEMON_BAD_REQUEST: "DAEMON_BAD_REQUEST",
  /** An answer from the daemon that is not what the protocol says (unparsable, or a body of the wrong shape). */
  DAEMON_BAD_RESPONSE: "DAEMON_BAD_RESPONSE",
  DAEMON_LOCKED: "DAEMON_LOCKED",
  DAEMON_CONFIG_MISMATCH: "DAEMON_CONFIG_MISMATCH",
  /** The lockfile or its state directory could have been written by another user: not trusted. */
  DAEMON_LOCK_UNTRUSTED: "DAEMON_LOCK_UNTRUSTED",
  /**
   * What answers at the lockfile's address did not prove it holds the lockfile's token (another
   * program may hold the port of a daemon that is gone): nothing carrying the token was sent to it.
   */
  DAEMON_UNTRUSTED: "DAEMON_UNTRUSTED",
  /** The NATS server of `abridge bus` or a `BusClient` cannot be reached (or refused the connection). */
  BUS_UNAVAILABLE: "BUS_UNAVAILABLE",
  /** A call over the bus failed with a typed bus error (its `busCode` says which). */
  BUS_CALL_FAILED: "BUS_CALL_FAILED",
  /** A code-mode program ran past its `timeout_ms` (an endless loop, or waiting too long on its calls). */
  CODE_TIMEOUT: "CODE_TIMEOUT",
  /** A code-mode program used more memory than its `memory_mb`, or more stack than it has (recursion too deep). */
  CODE_MEMORY: "CODE_MEMORY",
  /** A code-mode program failed: a syntax error, or an exception it did not catch. */
  CODE_ERROR: "CODE_ERROR",
  /** A code-mode program passed a limit: `max_calls`, its size, or a value too large to cross into or out of it. */
  CODE_LIMIT: "CODE_LIMIT",
  /** A tool a program called answered with an error result (`isError: true`); its text is the message. */
  TOOL_ERROR: "TOOL_ERROR",
  /** A tool result a program asked for was larger than its server's `max_output_bytes`, so the program was not given a cut copy. */
  OUTPUT_LIMIT: "OUTPUT_LIMIT",
  INTERNAL: "INTERNAL",
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Options of an {@link AbridgeError}. */
export interface AbridgeErrorOptions {
  /** Whether the same operation may succeed if tried again later. */
  retryable?: boolean;
  cause?: unknown;
  /** Structured detail safe to show (never secret values). */
  details?: Record<string, unknown>;
}

/** Every error abridge raises on purpose: a stable `code`, a `retryable` flag and the cause. */
export class AbridgeError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: AbridgeErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "AbridgeError";
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.details = options.details;
  }

  /** Plain form for the daemon protocol and JSON output. */
  toJSON(): { code: ErrorCode; message: string; retryable: boolean } {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }
}

/** True when `err` is an {@link AbridgeError}, optionally with the given code. */
export function isAbridgeError(err: unknown, code?: ErrorCode): err is AbridgeError {
  return err instanceof AbridgeError && (code === undefined || err.code === code);
}

/** Wraps anything thrown into an {@link AbridgeError}, keeping the original as `cause`. */
export function toAbridgeError(err: unknown, fallback: ErrorCode = ErrorCode.INTERNAL): AbridgeError {
  if (err instanceof AbridgeError) return err;
  const message = messageOf(err);
  return new AbridgeError(fallback, message, { cause: err });
}

/** The message of a caught value: an Error's message, anything else as text. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
