/** The options and types of the daemon's client (daemonClient.ts), and how it reads a failed answer. */
import type { Mode } from "../../config/schema.js";
import type { RunCodeOptions } from "../../core/bridge.js";
import type { Logger } from "../../log/logger.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { parseToolUri } from "../../model/names.js";
import type { ClientRequest, DaemonTool, WireError } from "../wire/protocol.js";
import type { EnsureDaemonOptions } from "./ensureDaemon.js";

/** Options of a {@link DaemonClient}. */
export interface DaemonClientOptions {
  /** The daemon's state directory (where its lockfile is). */
  stateDir: string;
  /**
   * Start the daemon when none answers (`ensureDaemon` with these options). Without it the
   * client only talks to a daemon that is already running.
   */
  autoStart?: Omit<EnsureDaemonOptions, "stateDir" | "signal">;
  /** Client-side bound of every request but `call_tool` (default 60 s: `list_tools` waits for upstreams to start). */
  requestTimeoutMs?: number;
  /** How much longer than the daemon's own bound (server start + call timeout) the client waits (default 5 s). */
  timeoutMarginMs?: number;
  /** The call timeout assumed when the daemon did not report a server's (default 30 s, the config default). */
  defaultCallTimeoutMs?: number;
  /** Bound of connecting (default 5 s). */
  connectTimeoutMs?: number;
  logger?: Logger;
}

/** Options of {@link DaemonClient.callTool}. */
export interface DaemonCallOptions {
  signal?: AbortSignal;
  /** The daemon's call timeout for this call (overrides the server's `timeout_ms`). */
  timeoutMs?: number;
  /** Validation mode (default the daemon's config `mode`). */
  mode?: Mode;
}

/** Options of {@link DaemonClient.runCode}. */
export interface DaemonRunOptions {
  /** Limits of this run, each over the daemon's config `[code]` value. */
  limits?: RunCodeOptions["limits"];
  /** Cancels the run on the daemon (its calls in flight are aborted); the promise rejects with CANCELLED. */
  signal?: AbortSignal;
}

/** A tool as a host application keeps it next to its own: `path` is `mcp://server/tool`. */
export interface HostTool extends DaemonTool {
  path: string;
}

/** Options of the read-only requests. */
export interface DaemonRequestOptions {
  signal?: AbortSignal;
}

/** Whether `path` is one of abridge's tool paths (`mcp://server/tool`). */
export function isMcpPath(path: string): boolean {
  return parseToolUri(path) !== undefined;
}

function knownCode(code: string): ErrorCode {
  return (Object.values(ErrorCode) as string[]).includes(code) ? (code as ErrorCode) : ErrorCode.INTERNAL;
}

/** A request's fields but the token (which the client adds). */
export type RequestFields = ClientRequest extends infer R ? (R extends unknown ? Omit<R, "token"> : never) : never;

/** Turns the error of an `ok: false` answer into the typed error the daemon meant. */
export function daemonError(error: WireError): AbridgeError {
  return new AbridgeError(knownCode(error.code), error.message, {
    retryable: error.retryable,
    ...(knownCode(error.code) !== error.code ? { details: { daemonCode: error.code } } : {}),
  });
}
