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
 * Most servers the `search_tools` index names on a line of their own; the rest are counted on one
 * line. With one short line per server the three meta-tools cost about the same for 50 tools or
 * 5,000 (the index used to name every tool: 1.5% of full on the corpus, 8.6% and 15.1% on larger
 * catalogs).
 */
export const MAX_INDEXED_SERVERS = 20;
/** Words of a server's topic on its index line. */
const TOPIC_WORDS = 4;

/**
 * Words in tool names that say what a tool does rather than what it is about: a server's topic is
 * the things its tools act on (issues, pages, tables), not the verbs every server shares.
 */
const ACTION_WORDS = new Set(
  (
    "get list create update delete remove add set fetch find search read write edit put post patch run execute " +
    "start stop cancel check show describe retrieve query insert upsert move copy rename open close send " +
    "make new all by to of for from with the a an and or in on at is api v1 v2 v3 tool tools mcp do go batch " +
    "bulk info data details item items"
  ).split(" "),
);

/** The tool-name words of one server, most used first (ties: first seen), without action words. */
function serverTopic(tools: readonly CatalogTool[]): string[] {
  const counts = new Map<string, number>();
  for (const tool of tools) {
    const words = new Set(
      tool.tool.name
        .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
        .toLowerCase()
        .split(/[^a-z0-9]+/)
        // Plurals fold into the singular, so `file` and `files` are one topic.
        .map((w) => (w.length > 4 && w.endsWith("ies") ? `${w.slice(0, -3)}y` : w.length > 3 && w.endsWith("s") && !w.endsWith("ss") ? w.slice(0, -1) : w))
        .filter((w) => w.length >= 3 && !/^\d+$/.test(w) && !ACTION_WORDS.has(w)),
    );
    for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  const server = new Set(tools[0]?.server.toLowerCase().split(/[^a-z0-9]+/) ?? []);
  return [...counts]
    .filter(([word]) => !server.has(word))
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOPIC_WORDS)
    .map(([word]) => word);
}

/**
 * The index carried by `search_tools`' description: one short line per server, `name (N tools):
 * topic words`, the largest servers first, at most {@link MAX_INDEXED_SERVERS} of them, then one
 * line counting the rest. Tool names are not listed: `search_tools` answers with them.
 */
export function lazyIndex(tools: readonly CatalogTool[]): string {
  const byServer = new Map<string, CatalogTool[]>();
  for (const tool of tools) {
    const list = byServer.get(tool.server);
    if (list === undefined) byServer.set(tool.server, [tool]);
    else list.push(tool);
  }
  const servers = [...byServer].sort((a, b) => b[1].length - a[1].length || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const shown = servers.slice(0, MAX_INDEXED_SERVERS).map(([server, list]) => {
    const topic = serverTopic(list);
    const count = `${list.length} tool${list.length === 1 ? "" : "s"}`;
    return topic.length === 0 ? `${server} (${count})` : `${server} (${count}): ${topic.join(", ")}`;
  });
  const rest = servers.slice(MAX_INDEXED_SERVERS);
  if (rest.length > 0) {
    const restTools = rest.reduce((sum, [, list]) => sum + list.length, 0);
    shown.push(`and ${rest.length} more server${rest.length === 1 ? "" : "s"} (${restTools} tools)`);
  }
  return shown.join("\n");
}

/** The `search_tools` tool (lazy mode), whose description carries {@link lazyIndex}. */
export function searchToolsTool(tools: readonly CatalogTool[], separator = "_"): ListedTool {
  const how = `Find tools for a task or by name; returns their names and parameters. Run one with ${CALL_TOOL}. Tools are named server${separator}tool. Servers:`;
  return {
    name: SEARCH_TOOLS,
    description: `${how}\n${lazyIndex(tools)}`,
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
