import type { SearchResult } from "./searchIndex.js";
import type { CatalogTool, ListedTool } from "./types.js";

/** Meta-tool: find tools by a task description (lazy mode). */
export const SEARCH_TOOLS = "search_tools";
/** Meta-tool: the full original schema and description of one tool (compact and lazy modes). */
export const GET_SCHEMA = "get_schema";
/** Meta-tool: call any tool by its exposed name (lazy mode). */
export const CALL_TOOL = "call_tool";
/** Every meta-tool name. */
export const META_TOOL_NAMES: readonly string[] = [SEARCH_TOOLS, GET_SCHEMA, CALL_TOOL];

/** True when `name` is one of abridge's own meta-tools rather than an upstream tool. */
export function isMetaTool(name: string): boolean {
  return META_TOOL_NAMES.includes(name);
}

/**
 * The `get_schema` tool. Worded for the fewest tokens that still tell the model when to use it:
 * it is listed beside every tool in compact mode, so each word is paid on every request.
 */
export function getSchemaTool(): ListedTool {
  return {
    name: GET_SCHEMA,
    description: "Full schema and docs of a tool.",
    inputSchema: { type: "object", properties: { tool: { type: "string" } }, required: ["tool"] },
    annotations: { readOnlyHint: true },
  };
}

/** The `call_tool` tool (lazy mode): `{tool, arguments}`. */
export function callToolTool(): ListedTool {
  return {
    name: CALL_TOOL,
    description: "Call a tool by name.",
    inputSchema: {
      type: "object",
      properties: { tool: { type: "string" }, arguments: { type: "object" } },
      required: ["tool"],
    },
  };
}

/**
 * The compact index carried by `search_tools`' description: one line per server with its tools'
 * own names, `server: a, b, c`. A tool whose exposed name is not `<server><separator><tool>` (cut
 * for length or given a hash suffix on collision) is listed by its exposed name after `=`, so the
 * index never teaches the model a name that does not exist.
 */
export function lazyIndex(tools: readonly CatalogTool[], separator = "_"): string {
  const byServer = new Map<string, string[]>();
  for (const tool of tools) {
    const entry = tool.name === `${tool.server}${separator}${tool.tool.name}` ? tool.tool.name : `=${tool.name}`;
    const list = byServer.get(tool.server);
    if (list === undefined) byServer.set(tool.server, [entry]);
    else list.push(entry);
  }
  return [...byServer].map(([server, names]) => `${server}: ${names.join(", ")}`).join("\n");
}

/** The `search_tools` tool (lazy mode), whose description carries {@link lazyIndex}. */
export function searchToolsTool(tools: readonly CatalogTool[], separator = "_"): ListedTool {
  const exact = tools.some((t) => t.name !== `${t.server}${separator}${t.tool.name}`);
  const how = `Find tools for a task; returns signatures. Run one with ${CALL_TOOL}, named server${separator}tool${exact ? " (=name: exact)" : ""}. Tools:`;
  return {
    name: SEARCH_TOOLS,
    description: `${how}\n${lazyIndex(tools, separator)}`,
    inputSchema: {
      type: "object",
      properties: { query: { type: "string" }, limit: { type: "integer" } },
      required: ["query"],
    },
    annotations: { readOnlyHint: true },
  };
}

/**
 * What `search_tools` returns: one line per hit, `name(args) — summary`, best first. The
 * signature already starts with the exposed name, so the line is directly usable with `call_tool`.
 */
export function searchResultText(results: readonly SearchResult[]): string {
  if (results.length === 0) return "No matching tools.";
  return results.map((r) => (r.summary === "" ? r.signature : `${r.signature} — ${r.summary}`)).join("\n");
}

/** The JSON `get_schema` returns for one tool. */
export interface SchemaResult {
  name: string;
  server: string;
  uri: string;
  /** The upstream's original description. */
  description?: string;
  /** The upstream's original, full input schema. */
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** The full, original schema and description of `tool`, as `get_schema` returns it. */
export function getSchemaResult(tool: CatalogTool): SchemaResult {
  const raw = tool.tool;
  return {
    name: tool.name,
    server: tool.server,
    uri: tool.uri,
    ...(raw.description !== undefined ? { description: raw.description } : {}),
    inputSchema: raw.inputSchema,
    ...(raw.outputSchema !== undefined ? { outputSchema: raw.outputSchema } : {}),
    ...(raw.annotations !== undefined ? { annotations: raw.annotations } : {}),
  };
}
