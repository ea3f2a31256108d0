import { ErrorCode as RpcErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { SecretSet } from "../log/logger.js";
import { AbridgeError, ErrorCode, isAbridgeError, messageOf } from "../model/errors.js";
import type { JsonObject, ServerState } from "../model/types.js";

/** What is known of a forwarded request that failed. */
export interface FailedRequest {
  /** Server name. */
  server: string;
  /** The request's method (`tools/call`, `initialize`, ...). */
  method: string;
  /** The timeout the request ran under. */
  timeoutMs: number;
  /** The caller's signal: aborted means the caller gave up. */
  callerSignal: AbortSignal | undefined;
  /** True when abridge's own timer ended the request (the error is its abort reason). */
  timedOut: boolean;
  /** True when the client's transport was gone when the error arrived. */
  connectionClosed: boolean;
  /** The server's secrets, redacted from messages an upstream wrote. */
  secrets: SecretSet;
  /** The request's params as handed to the client: a failure to write them is local, not the server's. */
  params?: JsonObject;
}

/**
 * Why `params` cannot be written as JSON, or undefined when they can; asked only once a send has
 * failed. A RangeError is `JSON.stringify` overflowing the stack (at whatever depth the transport
 * wrote, so it is not tried again here); a BigInt or a cycle fails here as it failed there.
 */
function unwritable(err: unknown, params: JsonObject | undefined): string | undefined {
  if (err instanceof RangeError) return messageOf(err);
  if (params === undefined) return undefined;
  try {
    JSON.stringify(params);
    return undefined;
  } catch (problem) {
    return messageOf(problem);
  }
}

/**
 * Maps what the SDK threw for a forwarded request to an {@link AbridgeError}: `CANCELLED` (the
 * caller aborted), `UPSTREAM_TIMEOUT` (abridge's timer), `UPSTREAM_EXITED` (the connection went
 * away during the request), `UPSTREAM_ERROR` (the upstream's own error response, or a malformed
 * result), an {@link AbridgeError} the transport raised with its code (`UPSTREAM_BUSY`,
 * `INPUT_INVALID`), `INPUT_INVALID` when the request could not be written as JSON (a local
 * failure: the server and the connection are fine), else `UPSTREAM_UNAVAILABLE`: the request never
 * made it (the transport's send failed).
 */
export function callError(err: unknown, request: FailedRequest): AbridgeError {
  const { server: name, method } = request;
  if (request.callerSignal?.aborted) return new AbridgeError(ErrorCode.CANCELLED, `${name}: ${method} was cancelled`, { cause: err });
  if (err instanceof McpError) {
    // -32001 and -32000 mean a timeout and a closed connection only when the SDK or abridge made
    // them; the same numbers in an upstream's error response are that upstream's own answer, and
    // keep their code and message (retrying a refusal would not help).
    if (request.timedOut) {
      return new AbridgeError(ErrorCode.UPSTREAM_TIMEOUT, `${name}: ${method} timed out after ${request.timeoutMs} ms`, {
        cause: err,
        retryable: true,
      });
    }
    if (request.connectionClosed && err.code === (RpcErrorCode.ConnectionClosed as number)) {
      return new AbridgeError(ErrorCode.UPSTREAM_EXITED, `${name}: the server went away during ${method}`, {
        cause: err,
        retryable: true,
      });
    }
    return new AbridgeError(ErrorCode.UPSTREAM_ERROR, request.secrets.redact(`${name}: ${err.message}`), { cause: err, details: { rpcCode: err.code } });
  }
  if (err instanceof z.ZodError) {
    return new AbridgeError(ErrorCode.UPSTREAM_ERROR, `${name}: malformed ${method} result`, { cause: err });
  }
  if (isAbridgeError(err)) {
    return new AbridgeError(err.code, `${name}: ${method} not sent: ${err.message}`, {
      cause: err,
      retryable: err.retryable,
      ...(err.details ? { details: err.details } : {}),
    });
  }
  const local = unwritable(err, request.params);
  if (local !== undefined) {
    return new AbridgeError(ErrorCode.INPUT_INVALID, `${name}: ${method} not sent: its params cannot be written as JSON (${local})`, { cause: err });
  }
  return new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, request.secrets.redact(`${name}: ${messageOf(err)}`), { cause: err, retryable: true });
}

/**
 * `max_pending_requests` requests already wait for `server`: a new one is refused at once, and may
 * be tried again once some are answered.
 */
export function busyError(server: string, pending: number, limit: number): AbridgeError {
  return new AbridgeError(
    ErrorCode.UPSTREAM_BUSY,
    `${server}: ${pending} requests already wait for this server (max_pending_requests = ${limit}); try again shortly`,
    {
      retryable: true,
      details: { server, pending, limit },
    },
  );
}

/** The stdio server `server` does not read its stdin, and the requests waiting for it fill their queue. */
export function queueFullError(server: string, queuedBytes: number): AbridgeError {
  return new AbridgeError(ErrorCode.UPSTREAM_BUSY, `${server}: ${queuedBytes} bytes of requests wait for the server to read its stdin; try again shortly`, {
    retryable: true,
    details: { server, queuedBytes },
  });
}

/** True when {@link callError} found that the request never reached the server. */
export function neverSent(mapped: AbridgeError): boolean {
  return mapped.code === ErrorCode.UPSTREAM_UNAVAILABLE;
}

/**
 * Maps a failed start (connect, initialize, tools/list) to the error the status shows:
 * `CANCELLED` when `signal` aborted, an {@link AbridgeError} as it is, anything else
 * `UPSTREAM_START_FAILED` with the last stderr lines (redacted) in its message and all kept
 * lines in its details.
 */
export function startError(err: unknown, server: string, stderr: readonly string[], secrets: SecretSet, signal?: AbortSignal): AbridgeError {
  if (signal?.aborted) return new AbridgeError(ErrorCode.CANCELLED, "start was cancelled", { cause: err });
  if (isAbridgeError(err)) return err;
  const tail = stderr.slice(-3).join(" | ");
  const message = secrets.redact(`${server}: ${messageOf(err)}${tail ? ` (stderr: ${tail})` : ""}`);
  return new AbridgeError(ErrorCode.UPSTREAM_START_FAILED, message, {
    cause: err,
    retryable: true,
    details: { stderr: [...stderr] },
  });
}

/**
 * Why a server that is not ready takes no request: `UPSTREAM_UNAVAILABLE`, retryable unless the
 * server is disabled or closed; a failed server carries its start error (it is retried in the
 * background, so a later call may well succeed).
 */
export function notReadyError(server: string, state: ServerState, error: { code: ErrorCode; message: string } | undefined): AbridgeError {
  switch (state) {
    case "disabled":
      return new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${server} is disabled`);
    case "closed":
      return new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${server} is closed`);
    case "failed":
      return new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${server} failed to start: ${error?.message ?? "unknown"}`, {
        retryable: true,
        details: { server, state, ...(error ? { error: { ...error } } : {}) },
      });
    default:
      return new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${server} is ${state}; try again shortly`, { retryable: true });
  }
}
