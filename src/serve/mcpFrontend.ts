import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ErrorCode as RpcCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { Mode } from "../catalog/types.js";
import type { Bridge } from "../core/bridge.js";
import { ErrorCode, toAbridgeError } from "../errors.js";
import { silentLogger, type Logger } from "../log/logger.js";
import type { JsonObject } from "../upstream/types.js";
import { VERSION } from "../version.js";
import { ResourceAggregator } from "./aggregateResources.js";

/** Options of {@link createMcpFrontend}. */
export interface McpFrontendOptions {
  /** How tools are shown (default: the config's mode). */
  mode?: Mode;
  logger?: Logger;
  /** Tools per `tools/list` page (default 500): large catalogs are paginated for the client too. */
  pageSize?: number;
  /** Who this front end serves, for logs and the audit trail (e.g. `stdio`, `http:<session>`). */
  client?: string;
}

/** A front end's MCP server with a way to tell its client that the tool list changed. */
export interface McpFrontend {
  server: Server;
  /** Stops listening to the bridge (the server itself is closed by its transport). */
  dispose(): void;
}

const CURSOR_PREFIX = "abridge:";

function encodeCursor(offset: number): string {
  return Buffer.from(`${CURSOR_PREFIX}${offset}`).toString("base64url");
}

function decodeCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const offset = text.startsWith(CURSOR_PREFIX) ? Number(text.slice(CURSOR_PREFIX.length)) : NaN;
  if (!Number.isInteger(offset) || offset < 0) throw new McpError(RpcCode.InvalidParams, `invalid cursor "${cursor}"`);
  return offset;
}

/**
 * Maps a failure to what the client should see. Unknown or refused tool names are the caller's
 * protocol mistake (-32602, with the closest names). An upstream's own JSON-RPC error keeps its
 * code. Failures of the upstream as a service (timeout, down, exited) become tool errors: the model
 * can read them and retry, and the client does not treat a slow server as a broken bridge.
 */
export function toWireOutcome(err: unknown): { result: JsonObject } | { error: McpError } {
  if (err instanceof McpError) return { error: err };
  const error = toAbridgeError(err);
  switch (error.code) {
    case ErrorCode.TOOL_NOT_FOUND:
    case ErrorCode.TOOL_FILTERED:
    case ErrorCode.SERVER_NOT_FOUND:
    case ErrorCode.INVALID_ARGUMENTS:
      return { error: new McpError(RpcCode.InvalidParams, error.message, error.details) };
    case ErrorCode.UPSTREAM_ERROR: {
      const rpc = error.details?.rpcCode;
      return { error: new McpError(typeof rpc === "number" ? rpc : RpcCode.InternalError, error.message) };
    }
    case ErrorCode.UPSTREAM_TIMEOUT:
    case ErrorCode.UPSTREAM_UNAVAILABLE:
    case ErrorCode.UPSTREAM_EXITED:
    case ErrorCode.UPSTREAM_START_FAILED:
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

/** MCP requires `inputSchema.type === "object"`; some servers omit it (gitlab's), which makes SDK clients reject the whole list. */
function withObjectType<T extends { inputSchema: Record<string, unknown> }>(tool: T): T {
  return tool.inputSchema.type === "object" ? tool : { ...tool, inputSchema: { type: "object", ...tool.inputSchema } };
}

/**
 * Builds an SDK low-level `Server` over a {@link Bridge}: every upstream's tools (in the chosen
 * mode), resources and prompts, with calls, cancellation and progress passed through. One is made
 * per client connection; they all share the bridge.
 */
export function createMcpFrontend(bridge: Bridge, options: McpFrontendOptions = {}): McpFrontend {
  const mode = options.mode ?? bridge.config.mode;
  const logger = options.logger ?? silentLogger;
  const pageSize = options.pageSize ?? 500;
  const servers = new Map(bridge.config.servers.map((s) => [s.name, s]));
  const resources = new ResourceAggregator(bridge.pool, bridge.config.separator, (s) => servers.get(s)?.prefix !== false);

  const instructions = [
    `abridge ${VERSION} in front of ${bridge.config.servers.filter((s) => s.enabled).length} MCP server(s), ${mode} mode.`,
    mode === "compact" ? "Descriptions are summaries; call get_schema for a tool's full schema and documentation." : "",
    mode === "lazy" ? "Find tools with search_tools, read their schema with get_schema, run them with call_tool." : "",
  ]
    .filter(Boolean)
    .join(" ");

  const server = new Server(
    { name: "abridge", version: VERSION },
    {
      capabilities: { tools: { listChanged: true }, resources: {}, prompts: {} },
      instructions,
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    const all = bridge.list(mode);
    const offset = decodeCursor(request.params?.cursor);
    const page = all.slice(offset, offset + pageSize).map(withObjectType);
    return { tools: page, ...(offset + pageSize < all.length ? { nextCursor: encodeCursor(offset + pageSize) } : {}) };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const progressToken = request.params._meta?.progressToken;
    try {
      return await bridge.callTool(request.params.name, request.params.arguments as JsonObject | undefined, {
        signal: extra.signal,
        mode,
        ...(progressToken !== undefined
          ? {
              onProgress: (update) => {
                void extra
                  .sendNotification({ method: "notifications/progress", params: { progressToken, ...update } })
                  .catch((err: unknown) => logger.debug("progress notification not delivered", { error: String(err) }));
              },
            }
          : {}),
      });
    } catch (err) {
      const outcome = toWireOutcome(err);
      if ("error" in outcome) throw outcome.error;
      return outcome.result;
    }
  });

  const forward = async (server: string | undefined, method: string, params: JsonObject, signal: AbortSignal, what: string): Promise<JsonObject> => {
    if (server === undefined) throw new McpError(RpcCode.InvalidParams, `unknown ${what}`);
    try {
      return await bridge.pool.request(server, method, params, { signal });
    } catch (err) {
      const outcome = toWireOutcome(err);
      if ("error" in outcome) throw outcome.error;
      throw new McpError(RpcCode.InternalError, toAbridgeError(err).message);
    }
  };

  server.setRequestHandler(ListResourcesRequestSchema, async (_request, extra) => ({ resources: await resources.listResources(extra.signal) }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async (_request, extra) => ({
    resourceTemplates: await resources.listTemplates(extra.signal),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const owner = await resources.ownerOf(request.params.uri, extra.signal);
    return forward(owner, "resources/read", request.params as JsonObject, extra.signal, `resource "${request.params.uri}"`) as never;
  });
  server.setRequestHandler(ListPromptsRequestSchema, async (_request, extra) => ({ prompts: await resources.listPrompts(extra.signal) }));
  server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
    const origin = await resources.promptOriginOf(request.params.name, extra.signal);
    return forward(origin?.server, "prompts/get", { ...request.params, name: origin?.original ?? request.params.name } as JsonObject, extra.signal, `prompt "${request.params.name}"`) as never;
  });

  // One list_changed per real change: summaries that land in a mode that does not show them
  // (full) change nothing the client sees, and a client's prompt cache should not be broken for it.
  let lastList = JSON.stringify(bridge.list(mode));
  const unsubscribe = bridge.onListChanged(() => {
    const next = JSON.stringify(bridge.list(mode));
    if (next === lastList) return;
    lastList = next;
    server.sendToolListChanged().catch((err: unknown) => logger.debug("list_changed not delivered", { error: String(err) }));
  });

  return { server, dispose: unsubscribe };
}

