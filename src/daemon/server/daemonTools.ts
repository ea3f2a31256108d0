import { compactDescription } from "../../core/toolViews.js";
import type { Mode } from "../../config/schema.js";
import type { Bridge } from "../../core/bridge.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import type { DaemonTool } from "../wire/protocol.js";

/**
 * The `list_tools` answer: every catalog tool in `mode`'s rendering, with the server, the
 * upstream's tool name and the `mcp://` URI a host keeps as its path. Meta-tools are left out:
 * the protocol has `get_schema` as an op of its own, and a host calls tools by server and name.
 * `lazy` lists nothing per tool, so there each tool gets its compact one-liner and an open
 * `{type: "object"}` schema, the full one being a `get_schema` away.
 */
export function daemonTools(bridge: Bridge, mode: Mode): DaemonTool[] {
  const tools = bridge.tools();
  const listed = new Map<string, ReturnType<Bridge["list"]>[number]>();
  if (mode !== "lazy") {
    // First occurrence wins: with `prefix = false` a tool may be named like a meta-tool, and the
    // compact list appends its own get_schema after the catalog's tools.
    for (const tool of bridge.list(mode)) if (!listed.has(tool.name)) listed.set(tool.name, tool);
  }
  return tools.map((tool) => {
    const shown = listed.get(tool.name);
    const annotations = shown?.annotations;
    return {
      server: tool.server,
      name: tool.tool.name,
      uri: tool.uri,
      exposedName: tool.name,
      description: shown ? (shown.description ?? "") : compactDescription(tool, "none"),
      parameters: shown ? shown.inputSchema : { type: "object" },
      ...(annotations !== undefined ? { annotations } : {}),
    };
  });
}

/** What `declare_tools` asks the bridge: the tools a task finds, or the tools named. */
export type DeclareRequest = Parameters<Bridge["declareTools"]>[0];

/**
 * The bridge's request of a `declare_tools` request: `query` (with its `limit`) or `names`.
 *
 * @throws AbridgeError DAEMON_BAD_REQUEST when it gives both or neither.
 */
export function declarationRequest(request: { query?: string | undefined; names?: string[] | undefined; limit?: number | undefined }): DeclareRequest {
  if ((request.query === undefined) === (request.names === undefined)) {
    throw new AbridgeError(ErrorCode.DAEMON_BAD_REQUEST, "bad request: declare_tools takes query (a task) or names (tool names), exactly one of them");
  }
  if (request.names !== undefined) return { names: request.names };
  return { query: request.query as string, ...(request.limit !== undefined ? { limit: request.limit } : {}) };
}
