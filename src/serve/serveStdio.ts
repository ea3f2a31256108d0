import type { Readable, Writable } from "node:stream";
import type { Mode } from "../config/schema.js";
import type { Bridge } from "../core/bridge.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { FastToolCalls } from "./fastToolCalls.js";
import { createMcpFrontend } from "./mcpFrontend.js";
import { StdioServerTransport } from "./stdioServerTransport.js";
import { createStatelessFrontend } from "./statelessFrontend.js";
import { StatelessStdio } from "./stdioStateless.js";

/** How long calls in flight may finish after SIGTERM, as the daemon allows. */
const DEFAULT_GRACE_MS = 10_000;

/** Options of {@link serveStdio}. */
export interface ServeStdioOptions {
  stdin: Readable;
  stdout: Writable;
  mode?: Mode;
  logger?: Logger;
  pageSize?: number;
  /** Ends serving (SIGINT/SIGTERM in the CLI). */
  signal?: AbortSignal;
  /**
   * On `signal`, how long calls in flight may take to finish before they are aborted (default
   * 10 s, as the daemon gives its calls). The end of stdin does not wait: the client has gone.
   */
  graceMs?: number;
  /** Largest request line accepted (default 16 MiB); a longer one is answered -32600 and skipped. */
  maxLineBytes?: number;
  /**
   * Answer plain tools/call requests beside the SDK server (default true; see fastToolCalls.ts).
   * Off, every request goes through the SDK server: the reference the fast path is tested against.
   */
  fastToolCalls?: boolean;
}

/**
 * Serves the bridge over stdio until stdin ends, the transport closes or `signal` fires. stdout
 * belongs to the protocol: nothing else may write to it. Resolves once the MCP server is closed;
 * the caller then closes the bridge (which ends every upstream child).
 */
export async function serveStdio(bridge: Bridge, options: ServeStdioOptions): Promise<void> {
  const logger = options.logger ?? silentLogger;
  const frontend = createMcpFrontend(bridge, {
    ...(options.mode ? { mode: options.mode } : {}),
    logger,
    client: "stdio",
    ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
  });
  // Our own transport: the SDK's ends serving when a line exceeds 10 MiB (see stdioServerTransport.ts).
  const transport = new StdioServerTransport(options.stdin, options.stdout, {
    logger,
    ...(options.maxLineBytes !== undefined ? { maxLineBytes: options.maxLineBytes } : {}),
  });
  const fast = options.fastToolCalls === false ? undefined : new FastToolCalls(frontend, frontend.server, (message) => transport.send(message), logger);
  // Requests of the stateless revision (2026-07-28) are answered beside the handshake-era server.
  const stateless = createStatelessFrontend(bridge, {
    ...(options.mode ? { mode: options.mode } : {}),
    logger,
    client: "stdio",
    ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
  });
  const statelessStdio = new StatelessStdio(stateless, (message) => transport.send(message), logger);
  transport.intercept = (message) => statelessStdio.take(message) || (fast?.take(message) ?? false);
  let finish!: (reason: string) => void;
  const done = new Promise<string>((resolve) => (finish = resolve));
  // The SDK's stdio transport does not notice the end of stdin; a client that goes away closes
  // its end of the pipe, and that must end abridge and its children rather than leave them running.
  const onEnd = (): void => finish("stdin closed");
  options.stdin.once("end", onEnd);
  options.stdin.once("close", onEnd);
  const onAbort = (): void => finish("signal");
  options.signal?.addEventListener("abort", onAbort, { once: true });
  transport.onclose = () => finish("transport closed");
  await frontend.server.connect(transport);
  if (options.signal?.aborted) finish("signal");
  const reason = await done;
  logger.info("stdio front end stopping", { reason });
  if (reason === "signal") {
    // SIGTERM is "stop", not "drop": answer what was asked before it, refuse what comes after.
    const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    await Promise.all([frontend.drain(graceMs), stateless.drain(graceMs)]);
    await flushed(options.stdout, graceMs);
  }
  options.stdin.off("end", onEnd);
  options.stdin.off("close", onEnd);
  options.signal?.removeEventListener("abort", onAbort);
  frontend.dispose();
  statelessStdio.close();
  stateless.dispose();
  await frontend.server.close().catch(() => undefined);
  // As the SDK server does for the requests it runs: what is still under way ends with the connection.
  fast?.abortAll();
}

/** Resolves once what was written to `stream` has left the process (or it closed, or `limitMs` passed). */
function flushed(stream: Writable, limitMs: number): Promise<void> {
  if (!stream.writableNeedDrain) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      stream.off("drain", done);
      stream.off("close", done);
      resolve();
    };
    const timer = setTimeout(done, limitMs);
    stream.once("drain", done);
    stream.once("close", done);
  });
}
