/**
 * What the MCP front ends (the session one in `mcpFrontend.ts`, the stateless one in
 * `statelessFrontend.ts`) put on the wire alike: the tools/list cursor, the mapping of a failure
 * to a JSON-RPC error or a tool error, a log level's rank, the object type every listed input
 * schema must carry, and the instructions given at the start. Kept in one module so the two front
 * ends cannot drift apart on any of them.
 */
import { ErrorCode as RpcCode, LoggingLevelSchema, McpError, type LoggingLevel } from "@modelcontextprotocol/sdk/types.js";
import type { Mode } from "../config/schema.js";
import type { Bridge } from "../core/bridge.js";
import { ErrorCode, toAbridgeError } from "../model/errors.js";
import type { JsonObject } from "../model/types.js";
import { VERSION } from "../model/version.js";

const CURSOR_PREFIX = "abridge:";

/** A tools/list cursor: the list snapshot it pages through and the offset of the next page. */
export function encodeCursor(snapshot: number, offset: number): string {
  return Buffer.from(`${CURSOR_PREFIX}${snapshot}:${offset}`).toString("base64url");
}

/** `abridge:<snapshot>:<offset>`, or the older `abridge:<offset>` (no snapshot: the current list). */
export function decodeCursor(cursor: string | undefined): { snapshot?: number; offset: number } {
  if (cursor === undefined) return { offset: 0 };
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const parts = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length).split(":").map(Number) : [];
  const offset = parts.at(-1) ?? NaN;
  const snapshot = parts.length === 2 ? parts[0] : undefined;
  if (parts.length < 1 || parts.length > 2 || !Number.isInteger(offset) || offset < 0 || (snapshot !== undefined && !Number.isInteger(snapshot))) {
    throw new McpError(RpcCode.InvalidParams, `invalid cursor "${cursor}"`);
  }
  return snapshot === undefined ? { offset } : { snapshot, offset };
}

/**
 * Maps a failure to what the client should see. Unknown or refused tool names are the caller's
 * protocol mistake (-32602, with the closest names). An upstream's own JSON-RPC error keeps its
 * code. Failures of the upstream as a service (timeout, down, exited, speaking another protocol
 * revision, asking for input nobody can give) become tool errors: the model can read them and
 * retry or work around them, and the client does not treat a slow server as a broken bridge.
 */
export function toWireOutcome(err: unknown): { result: JsonObject } | { error: McpError } {
  if (err instanceof McpError) return { error: err };
  const error = toAbridgeError(err);
  switch (error.code) {
    case ErrorCode.TOOL_NOT_FOUND:
    case ErrorCode.TOOL_FILTERED:
    case ErrorCode.SERVER_NOT_FOUND:
    case ErrorCode.INVALID_ARGUMENTS:
    case ErrorCode.INPUT_INVALID:
    case ErrorCode.RESOURCE_NOT_FOUND:
      return { error: new McpError(RpcCode.InvalidParams, error.message, error.details) };
    case ErrorCode.CAPABILITY_UNSUPPORTED:
      return { error: new McpError(RpcCode.MethodNotFound, error.message) };
    case ErrorCode.UPSTREAM_ERROR: {
      const rpc = error.details?.rpcCode;
      return { error: new McpError(typeof rpc === "number" ? rpc : RpcCode.InternalError, error.message) };
    }
    case ErrorCode.UPSTREAM_TIMEOUT:
    case ErrorCode.UPSTREAM_BUSY:
    case ErrorCode.UPSTREAM_UNAVAILABLE:
    case ErrorCode.UPSTREAM_EXITED:
    case ErrorCode.UPSTREAM_START_FAILED:
    case ErrorCode.UPSTREAM_RECORDED:
    case ErrorCode.UPSTREAM_PROTOCOL:
    case ErrorCode.UPSTREAM_INPUT_REQUIRED:
    case ErrorCode.TOOL_REFUSED:
      return {
        result: {
          isError: true,
          content: [{ type: "text", text: `${error.message} [${error.code}${error.retryable ? ", retryable" : ""}]` }],
          _meta: { "abridge/error": { code: error.code, retryable: error.retryable } },
        },
      };
    default:
      return { error: new McpError(RpcCode.InternalError, error.message) };
  }
}

/** Severity rank of a log level (`debug` lowest). */
export function severity(level: unknown): number {
  return LoggingLevelSchema.options.indexOf(level as LoggingLevel);
}

/** MCP requires `inputSchema.type === "object"`; some servers omit it (gitlab's), which makes SDK clients reject the whole list. */
export function withObjectType<T extends { inputSchema: Record<string, unknown> }>(tool: T): T {
  return tool.inputSchema.type === "object" ? tool : { ...tool, inputSchema: { type: "object", ...tool.inputSchema } };
}

/** The instructions a client is given (at initialize, or in server/discover): what abridge is in front of, and how to use the mode. */
export function instructionsFor(bridge: Bridge, mode: Mode): string {
  return [
    `abridge ${VERSION} in front of ${bridge.config.servers.filter((s) => s.enabled).length} MCP server(s), ${mode} mode.`,
    mode === "compact" ? "Descriptions are summaries; call get_schema for a tool's full schema and documentation." : "",
    mode === "lazy" ? "Find tools with search_tools, read their schema with get_schema, run them with call_tool." : "",
    mode === "auto"
      ? "The list fits a token budget; if search_tools is listed, more tools exist: find them with search_tools, read their schema with get_schema, run them with call_tool."
      : "",
  ]
    .filter(Boolean)
    .join(" ");
}
