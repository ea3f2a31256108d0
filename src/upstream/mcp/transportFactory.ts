import type { Readable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { ServerConfig } from "../../config/schema.js";
import type { Logger } from "../../log/logger.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import type { JsonObject } from "../../model/types.js";
import { boundedFetch } from "./boundedFetch.js";
import { LazyHttpTransport } from "./lazyHttpTransport.js";
import { ChildStdioTransport, childEnvironment, DEFAULT_MAX_MESSAGE_BYTES } from "../process/childStdioTransport.js";
import type { ProcessGroupWatch } from "../process/childWatchdog.js";
import { sandboxCommand } from "../process/sandbox.js";
import { statelessFetch } from "./statelessFetch.js";
import type { StderrTail } from "../process/stderrTail.js";

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
  /**
   * The server's config as it is now (`max_output_bytes` and `spill` change without a reconnect);
   * default: the config the transport is made with.
   */
  liveConfig?: () => ServerConfig;
  /** The `Mcp-Param-*` headers of a stateless tools/call (see paramHeaders.ts); default none. */
  paramHeaders?: (tool: string, args: JsonObject) => Record<string, string>;
}

/**
 * What an HTTP upstream's answer to a call may carry past its server's `max_output_bytes` (32 MiB):
 * room for a result to be cut at a content-block boundary, or kept whole with `spill`. An answer
 * larger than that fails its call ("result over N bytes") as it streams in: read whole, a 200 MB
 * result took serve to 1.3 GB only to be cut to 200 kB.
 */
export const HTTP_RESULT_SLACK_BYTES = 32 * 1024 * 1024;

/** Requests whose results are held to `max_output_bytes` (tool calls, resource reads, prompt gets). */
const OUTPUT_LIMITED: ReadonlySet<string> = new Set(["tools/call", "resources/read", "prompts/get"]);

/**
 * The bound of a message from an HTTP upstream: for the answer to a call, read or prompt get, the
 * server's `max_output_bytes` plus {@link HTTP_RESULT_SLACK_BYTES}; for anything else (lists, the
 * GET stream, the older SSE transport's single stream, which carries every answer), the stdio
 * bound of {@link DEFAULT_MAX_MESSAGE_BYTES}.
 */
export function httpMessageLimit(config: ServerConfig, method: string | undefined): number {
  if (method === undefined || !OUTPUT_LIMITED.has(method)) return DEFAULT_MAX_MESSAGE_BYTES;
  return Math.min(DEFAULT_MAX_MESSAGE_BYTES, config.max_output_bytes + HTTP_RESULT_SLACK_BYTES);
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
  // Every message from the server is bounded as on stdio (the SDK reads HTTP answers and events
  // whole), and the answer to a call by what can be passed on of it.
  const live = context.liveConfig ?? (() => config);
  const bounded = boundedFetch(
    (method) => httpMessageLimit(live(), method),
    (dropped) => context.logger.warn("dropped an oversized message from the server", { bytes: dropped.bytes, limit: dropped.limit, request: dropped.id }),
  );
  if (config.transport === "sse") {
    // The GET event stream does not use requestInit, so headers go through a custom fetch too.
    return new LazyHttpTransport({
      kind: "sse",
      url,
      options: {
        requestInit,
        fetch: bounded,
        eventSourceInit: {
          fetch: (input, init) => bounded(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...config.headers } }),
        },
      },
    });
  }
  // The stateless revision's headers and error answers (see statelessFetch.ts); the older
  // revisions' messages pass through untouched.
  // The SDK's HTTP transports are loaded when the first one starts (see lazyHttpTransport.ts).
  return new LazyHttpTransport({ kind: "streamable-http", url, options: { requestInit, fetch: statelessFetch(bounded, context.paramHeaders) } });
}
