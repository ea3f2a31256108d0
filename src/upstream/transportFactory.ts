import type { Readable } from "node:stream";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { ServerConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { boundedFetch } from "./boundedFetch.js";
import { ChildStdioTransport, childEnvironment, DEFAULT_MAX_MESSAGE_BYTES } from "./childStdioTransport.js";
import type { ProcessGroupWatch } from "./childWatchdog.js";
import { sandboxCommand } from "./sandbox.js";
import type { StderrTail } from "./stderrTail.js";

/** What a transport is made with besides the server's own config entry. */
export interface TransportContext {
  /** The server's logger. */
  logger: Logger;
  /** Takes a stdio child's stderr. */
  stderr: StderrTail;
  /** Added to a stdio child's environment after its own `env` (see nestedAbridge.ts). */
  childEnv: Record<string, string>;
  /** abridge's own files and folders a sandboxed server must not read. */
  sandboxHide: readonly string[];
  /** Ends stdio children when abridge dies without closing them (see childWatchdog.ts). */
  watchdog: ProcessGroupWatch | undefined;
}

/**
 * A new, unstarted transport for one connection attempt of `config`: a child process (confined
 * by bwrap when `sandbox = "bwrap"`) with its stderr followed, or a streamable HTTP or SSE client
 * whose every message is bounded as stdout is.
 *
 * @throws AbridgeError CONFIG_INVALID when the entry lacks its command or url;
 *   UPSTREAM_START_FAILED when the sandbox is asked for and bwrap is missing.
 */
export function createTransport(config: ServerConfig, context: TransportContext): Transport {
  if (config.transport === "stdio") {
    if (config.command === undefined) {
      throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${config.name}: a stdio server needs a command`);
    }
    const env = childEnvironment({ ...config.env, ...context.childEnv });
    // sandbox = "bwrap": the same server, confined; a missing bwrap throws UPSTREAM_START_FAILED.
    const spawn = config.sandbox === "bwrap" ? sandboxCommand(config, env, context.sandboxHide) : { command: config.command, args: config.args, env };
    const transport = new ChildStdioTransport({
      ...spawn,
      ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
      ...(context.watchdog !== undefined ? { watchdog: context.watchdog } : {}),
      stderr: "pipe",
    });
    const stderr = transport.stderr;
    if (stderr) context.stderr.follow(stderr as Readable);
    return transport;
  }
  if (config.url === undefined) {
    throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${config.name}: an ${config.transport} server needs a url`);
  }
  const url = new URL(config.url);
  const requestInit: RequestInit = { headers: { ...config.headers } };
  // Every message from the server is bounded as on stdio: the SDK reads HTTP answers and events whole.
  const bounded = boundedFetch(DEFAULT_MAX_MESSAGE_BYTES, (dropped) =>
    context.logger.warn("dropped an oversized message from the server", { bytes: dropped.bytes, limit: dropped.limit, request: dropped.id }),
  );
  if (config.transport === "sse") {
    // The GET event stream does not use requestInit, so headers go through a custom fetch too.
    return new SSEClientTransport(url, {
      requestInit,
      fetch: bounded,
      eventSourceInit: {
        fetch: (input, init) => bounded(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...config.headers } }),
      },
    });
  }
  return new StreamableHTTPClientTransport(url, { requestInit, fetch: bounded });
}
