import type { ServerConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import type { ServerStatus } from "../model/types.js";
import { JsonRpcUpstream } from "./jsonrpc/jsonRpcUpstream.js";
import { UpstreamConnection } from "./mcp/upstreamConnection.js";
import type { UpstreamConnectionOptions } from "./mcp/upstreamConnection.js";
import { RecordedUpstream } from "./recorded/recordedUpstream.js";
import type { Upstream } from "./upstream.js";

/**
 * What the pool gives every upstream it creates: its shared settings and its callbacks. Each
 * kind takes the part it uses (a recorded list needs no backoff, only a live MCP server sends
 * notifications or spawns children for the watchdog).
 */
export interface UpstreamFactoryOptions extends UpstreamConnectionOptions {
  logger: Logger;
  onStatusChanged: (status: ServerStatus) => void;
  onToolsChanged: () => void;
  /** Largest line a JSON-RPC backend may send (default 16 MiB, see DEFAULT_JSONRPC_MAX_LINE_BYTES). */
  jsonRpcMaxLineBytes?: number;
}

/**
 * The upstream for one server's config entry, by its `transport`: a recorded tool list, a
 * JSON-RPC backend, or else a live MCP server (stdio, http, sse). The one place that names the
 * concrete kinds; everything else holds an {@link Upstream}.
 */
export function createUpstream(config: ServerConfig, options: UpstreamFactoryOptions): Upstream {
  const { logger, exposes, onStatusChanged, onToolsChanged } = options;
  if (config.transport === "recorded") {
    return new RecordedUpstream(config, { logger, exposes, onStatusChanged, onToolsChanged });
  }
  if (config.transport === "jsonrpc") {
    return new JsonRpcUpstream(config, {
      logger,
      exposes,
      ...(options.backoff ? { backoff: options.backoff } : {}),
      ...(options.random ? { random: options.random } : {}),
      ...(options.jsonRpcMaxLineBytes !== undefined ? { maxLineBytes: options.jsonRpcMaxLineBytes } : {}),
      onStatusChanged,
      onToolsChanged,
    });
  }
  const { jsonRpcMaxLineBytes: _lineBytes, ...connection } = options;
  return new UpstreamConnection(config, connection);
}
