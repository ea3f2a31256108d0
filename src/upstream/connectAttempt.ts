import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode as RpcErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../log/logger.js";
import { AbridgeError, ErrorCode, isAbridgeError } from "../model/errors.js";
import type { RawTool } from "../model/types.js";
import { ChildStdioTransport } from "./childStdioTransport.js";
import { listTools } from "./listTools.js";
import { recursionRefused, RECURSION_EXIT_CODE } from "./nestedAbridge.js";

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
export async function connectAndList(client: Client, transport: Transport, options: AttemptOptions): Promise<RawTool[]> {
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
    await Promise.race([
      client.connect(transport, { signal: connectSignal, timeout: timeoutMs }),
      new Promise<never>((_resolve, reject) => {
        const onAbort = (): void => reject(connectSignal.reason as Error);
        if (connectSignal.aborted) onAbort();
        else connectSignal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
    options.onInitialized?.();
    return await listTools(client, options.logger, options.pageTimeoutMs, connectSignal);
  } catch (err) {
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

/** How a spawned child ended (`exited with code 3`, `was ended by SIGKILL`), or undefined while it runs. */
function processExit(transport: ChildStdioTransport): string | undefined {
  if (transport.childPid === undefined || transport.exitCode === undefined) return undefined;
  if (transport.exitCode !== null) return `exited with code ${transport.exitCode}`;
  return transport.exitSignal ? `was ended by ${transport.exitSignal}` : "exited";
}
