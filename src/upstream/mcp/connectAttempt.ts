import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode as RpcErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../log/logger.js";
import { AbridgeError, ErrorCode, isAbridgeError } from "../../model/errors.js";
import type { AdmittedTool } from "../../model/types.js";
import { ChildStdioTransport } from "../process/childStdioTransport.js";
import { listTools } from "./listTools.js";
import { recursionRefused, RECURSION_EXIT_CODE } from "./nestedAbridge.js";
import { classifyProbe, legacyRefused, statelessRequired } from "./protocolEra.js";
import type { ProbeVerdict } from "./protocolEra.js";
import type { ServerConfig, ServerProtocol } from "../../config/schema.js";
import type { UpstreamClient } from "./upstreamClient.js";

/** Longest wait for an answer to the `server/discover` probe before a stdio server is taken for a legacy one. */
export const PROBE_TIMEOUT_MS = 5_000;

/**
 * The stdio server ended its process on the `server/discover` probe, as some servers of the
 * older revisions do on any request before `initialize`: the caller starts a new process and
 * goes straight to `initialize`.
 */
export class ProbeClosedError extends Error {
  constructor(server: string) {
    super(`${server}: the server closed the connection on server/discover`);
    this.name = "ProbeClosedError";
  }
}

/** What one connection attempt runs under. */
export interface AttemptOptions {
  /** Server name, for messages. */
  server: string;
  /** `connect_timeout_ms`: start-up, `initialize` and the whole tool list. */
  timeoutMs: number;
  /** `timeout_ms`: each `tools/list` page. */
  pageTimeoutMs: number;
  logger: Logger;
  /** The connection's lifetime: closing the connection ends the attempt. */
  lifetime: AbortSignal;
  /** The caller's signal (the first start's). */
  signal?: AbortSignal | undefined;
  /** `initialize` is done; the tool list comes next. */
  onInitialized?: () => void;
  /** Which revision to speak (the server's `protocol`; default `auto`). */
  protocol?: ServerProtocol;
}

/**
 * One attempt to bring a server up: `client` connects over `transport` (`initialize`), then reads
 * the full tool list, all within `timeoutMs`. Resolves with the cleaned list (see listTools.ts).
 * Leaves closing a failed attempt's client and transport to the caller.
 *
 * @throws AbridgeError CONFIG_RECURSION when the child is an abridge that refused to serve its
 *   own config again; UPSTREAM_TIMEOUT when the deadline passed or `initialize` timed out; an
 *   Error naming the exit code (or signal) when a stdio child quit before it was ready;
 *   otherwise what the transport or the SDK threw.
 */
export async function connectAndList(client: UpstreamClient, transport: Transport, options: AttemptOptions): Promise<AdmittedTool[]> {
  const { server, timeoutMs } = options;
  const timeout = new AbortController();
  const timer = setTimeout(() => {
    timeout.abort(
      new AbridgeError(ErrorCode.UPSTREAM_TIMEOUT, `${server}: not ready within ${timeoutMs} ms (start-up, initialize and tools/list)`, {
        retryable: true,
      }),
    );
  }, timeoutMs);
  timer.unref();
  const signals = [timeout.signal, options.lifetime];
  if (options.signal) signals.push(options.signal);
  const connectSignal = AbortSignal.any(signals);
  try {
    // Raced against the signal as well: the SDK only watches it once `initialize` is sent,
    // not while the transport starts.
    const aborted = new Promise<never>((_resolve, reject) => {
      const onAbort = (): void => reject(connectSignal.reason);
      if (connectSignal.aborted) onAbort();
      else connectSignal.addEventListener("abort", onAbort, { once: true });
    });
    aborted.catch(() => undefined);
    await Promise.race([handshake(client, transport, options, connectSignal), aborted]);
    options.onInitialized?.();
    return await listTools(client, options.logger, options.pageTimeoutMs, connectSignal);
  } catch (err) {
    if (err instanceof ProbeClosedError) throw err;
    // A nested abridge that found its own config above it exits at once with this code: the
    // entry would start abridge again and again, which no retry or timeout can mend.
    if (transport instanceof ChildStdioTransport && transport.exitCode === RECURSION_EXIT_CODE) {
      throw recursionRefused(server);
    }
    if (timeout.signal.aborted && isAbridgeError(timeout.signal.reason)) throw timeout.signal.reason;
    // The process quit by itself: the SDK only saw its pipes close ("Connection closed"), while
    // the exit code (or signal) is what tells the user what happened.
    const exit = transport instanceof ChildStdioTransport ? processExit(transport) : undefined;
    if (exit !== undefined && (!(err instanceof McpError) || err.code === (RpcErrorCode.ConnectionClosed as number))) {
      throw new Error(`the server process ${exit} before it was ready`, { cause: err });
    }
    if (err instanceof McpError && err.code === (RpcErrorCode.RequestTimeout as number) && !options.lifetime.aborted && !options.signal?.aborted) {
      throw new AbridgeError(ErrorCode.UPSTREAM_TIMEOUT, `${server}: ${err.message}`, { cause: err, retryable: true });
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Brings `client` up over `transport` in the revision `options.protocol` asks for: `legacy` is
 * the SDK's `connect` (initialize); `auto` and `2026-07-28` start the transport with no handshake
 * and probe with `server/discover` (see classifyProbe): a stateless server is used as it is, and
 * under `auto` any other gets `initialize` over the same transport.
 *
 * @throws AbridgeError UPSTREAM_PROTOCOL when the server does not speak the revision asked for;
 *   {@link ProbeClosedError} when a stdio server quit on the probe under `auto`.
 */
async function handshake(client: UpstreamClient, transport: Transport, options: AttemptOptions, signal: AbortSignal): Promise<void> {
  const { server, timeoutMs } = options;
  const protocol = options.protocol ?? "auto";
  if (protocol === "legacy") {
    try {
      await client.connect(transport, { signal, timeout: timeoutMs });
    } catch (err) {
      throw legacyRefused(server, err) ?? err;
    }
    client.era = "legacy";
    return;
  }
  await client.attach(transport);
  const stdio = transport instanceof ChildStdioTransport;
  let verdict: ProbeVerdict | undefined;
  // A refusal that names 2026-07-28 as supported is answered by asking once more, as the
  // revision asks of a client; a second such refusal counts as no stateless server.
  for (let attempt = 0; verdict === undefined || (verdict.era === "retry" && attempt < 2); attempt++) {
    try {
      const result = await client.discover({ signal, timeout: Math.min(PROBE_TIMEOUT_MS, timeoutMs) });
      verdict = classifyProbe(server, { result }, stdio);
    } catch (err) {
      if (signal.aborted) throw err;
      verdict = classifyProbe(server, { error: err, closed: client.transport === undefined }, stdio);
      // A process that quit is reported as such (its exit code) when no fallback is allowed.
      if (verdict.era === "legacy" && verdict.closed && protocol !== "auto") throw err;
    }
  }
  if (verdict.era === "retry") verdict = { era: "legacy", reason: verdict.reason, closed: false };
  if (verdict.era === "stateless") {
    client.useStateless(verdict.discover);
    options.logger.debug("upstream speaks the stateless revision", { supported: verdict.discover.supportedVersions });
    return;
  }
  if (protocol !== "auto") throw statelessRequired(server, verdict.reason);
  options.logger.debug("upstream does not speak the stateless revision; initializing", { reason: verdict.reason });
  if (verdict.closed) throw new ProbeClosedError(server);
  await client.initializeAfterProbe({ signal, timeout: timeoutMs });
}

/**
 * The revision an attempt asks for: the entry's `protocol`, except that `auto` goes straight to
 * `initialize` over SSE (a transport of the older revisions only) and for a stdio server that
 * quit on the probe before (`skipProbe`).
 */
export function attemptProtocol(config: ServerConfig, skipProbe: boolean): ServerProtocol {
  const protocol = config.protocol ?? "auto";
  if (protocol === "auto" && (skipProbe || config.transport === "sse")) return "legacy";
  return protocol;
}

/** How a spawned child ended (`exited with code 3`, `was ended by SIGKILL`), or undefined while it runs. */
function processExit(transport: ChildStdioTransport): string | undefined {
  if (transport.childPid === undefined || transport.exitCode === undefined) return undefined;
  if (transport.exitCode !== null) return `exited with code ${transport.exitCode}`;
  return transport.exitSignal ? `was ended by ${transport.exitSignal}` : "exited";
}
