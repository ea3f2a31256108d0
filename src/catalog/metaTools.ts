import type { Config } from "../config/schema.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import type { CallToolResult, JsonObject } from "../model/types.js";
import type { SearchResult } from "./searchIndex.js";
import type { CatalogTool, ListedTool, Mode } from "./types.js";

/**
 * abridge's own tools, definition and handler side by side: `get_schema`, `search_tools` and
 * `call_tool` (compact, lazy and auto modes) and `read_output` (when a server spills). What a
 * handler needs of the core comes in through {@link MetaToolHost}, so this layer stays below the
 * policy and the core.
 */

/** Meta-tool: find tools by a task description (lazy mode). */
export const SEARCH_TOOLS = "search_tools";
/** Meta-tool: the full original schema and description of one tool (compact and lazy modes). */
export const GET_SCHEMA = "get_schema";
/** Meta-tool: call any tool by its exposed name (lazy mode). */
export const CALL_TOOL = "call_tool";
/** Meta-tool: page through a result that was cut and kept (`spill = true`). */
export const READ_OUTPUT = "read_output";
/** Meta-tool: run a program that calls tools (code mode). */
export const RUN_CODE = "run_code";
/** Every meta-tool name of the catalog's views (`read_output` is listed apart: {@link extraMetaTools}). */
export const META_TOOL_NAMES: readonly string[] = [SEARCH_TOOLS, GET_SCHEMA, CALL_TOOL, RUN_CODE];

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
 * The `search_tools` tool of code mode: it answers with TypeScript declarations of the tools found
 * (by a task, `query`, or by name, `names`), for a program `run_code` runs. Its description carries
 * the same per-server index as lazy mode's.
 */
export function codeSearchTool(tools: readonly CatalogTool[]): ListedTool {
  const how = `Find tools for a task (query) or by name (names); returns their TypeScript declarations, to call from ${RUN_CODE}. Servers:`;
  return {
    name: SEARCH_TOOLS,
    description: `${how}\n${lazyIndex(tools)}`,
    inputSchema: {
      type: "object",
      properties: { query: { type: "string" }, names: { type: "array", items: { type: "string" } }, limit: { type: "integer" } },
    },
    annotations: { readOnlyHint: true },
  };
}

/**
 * The `run_code` tool (code mode). Its description is paid on every request, so it says only what a
 * model needs to write a first program: the body of an async function, one global per server, what
 * comes back.
 */
export function runCodeTool(): ListedTool {
  return {
    name: RUN_CODE,
    description:
      "Run a TypeScript program that calls tools, as the body of an async function: `const r = await server.tool({...})` " +
      "per the declarations search_tools gives; `return` what is needed. Only console output and the return value come back.",
    inputSchema: { type: "object", properties: { code: { type: "string" } }, required: ["code"] },
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

/** The `read_output` tool: `{handle, offset}`, as the marker of a cut result tells. */
export function readOutputTool(): ListedTool {
  return {
    name: READ_OUTPUT,
    description: "Read more of a cut tool output, from the handle and offset its marker gives.",
    inputSchema: {
      type: "object",
      properties: { handle: { type: "string" }, offset: { type: "integer", minimum: 0 } },
      required: ["handle"],
    },
    annotations: { readOnlyHint: true },
  };
}

/**
 * Meta-tools a front end lists besides the catalog's: `read_output` when any enabled server has
 * `spill = true` (otherwise no result ever carries a handle, and the tool would be noise).
 */
export function extraMetaTools(config: Pick<Config, "servers">): ListedTool[] {
  return config.servers.some((s) => s.enabled && s.spill) ? [readOutputTool()] : [];
}

/** What the meta-tool handlers need of the core. */
export interface MetaToolHost {
  /** `get_schema`: the full schema of a tool, waiting for a server still starting that owns the name. */
  schema(tool: string, signal?: AbortSignal): Promise<SchemaResult>;
  /** `search_tools`: the best tools for a query once upstreams still starting had their grace. */
  search(query: string, limit: number | undefined, signal?: AbortSignal): Promise<SearchResult[]>;
  /** `call_tool`: calls a tool by the name the client was shown (policy, validation and audit applied). */
  call(tool: string, args: JsonObject | undefined): Promise<CallToolResult>;
  /** `read_output`: one page of a spilled output. */
  readOutput(args: JsonObject): Promise<CallToolResult>;
  /** Code mode's `search_tools`: declarations of the tools a query finds, or of the tools named. */
  declare(request: DeclarationRequest, signal?: AbortSignal): Promise<string>;
  /** `run_code`: runs a program and answers with its output. */
  runCode(code: string, signal?: AbortSignal): Promise<CallToolResult>;
}

/** What code mode's `search_tools` is asked: a task (`query`, best `limit` tools) or tool names. */
export type DeclarationRequest = { query: string; limit?: number } | { names: string[] };

/** The meta-tools each mode serves when called (a mode may serve more than it lists). */
const SERVED: Readonly<Record<Mode, readonly string[]>> = {
  full: [],
  summary: [],
  compact: [SEARCH_TOOLS, GET_SCHEMA, CALL_TOOL],
  lazy: [SEARCH_TOOLS, GET_SCHEMA, CALL_TOOL],
  auto: [SEARCH_TOOLS, GET_SCHEMA, CALL_TOOL],
  code: [SEARCH_TOOLS, GET_SCHEMA, CALL_TOOL, RUN_CODE],
};

/**
 * True when a call of `name` is one of abridge's own tools in `mode`: the catalog's meta-tools in
 * compact, lazy and auto modes, `run_code` besides in code mode, `read_output` while a server spills; unless an upstream tool is
 * listed under that very name (`listed`), which then wins, as it did in the list. The two
 * questions are asked only of a meta-tool's name: every upstream call passes here.
 */
export function servesMetaTool(name: string, mode: Mode, options: { spills: () => boolean; listed: () => boolean }): boolean {
  if (name === READ_OUTPUT) return options.spills() && !options.listed();
  return SERVED[mode].includes(name) && !options.listed();
}

/** The request code mode's `search_tools` arguments make, or the text of the model's mistake. */
function declarationRequest(args: JsonObject): DeclarationRequest | string {
  const usage = 'search_tools needs {"query": "<what you want to do>"} or {"names": ["<tool name>", ...]}';
  if (args.names !== undefined) {
    const names = args.names;
    if (!Array.isArray(names) || names.length === 0 || !names.every((n) => typeof n === "string")) return `${usage}: names must be a non-empty list of strings`;
    return { names: names as string[] };
  }
  if (typeof args.query !== "string") return usage;
  return typeof args.limit === "number" ? { query: args.query, limit: args.limit } : { query: args.query };
}

/**
 * Runs the meta-tool `name` (see {@link servesMetaTool}). Missing or mistyped arguments, and a
 * wrong inner tool name, are the model's mistakes to correct: tool errors, not protocol errors.
 */
export async function callMetaTool(name: string, args: JsonObject, host: MetaToolHost, signal?: AbortSignal, mode?: Mode): Promise<CallToolResult> {
  const text = (value: string, isError = false): CallToolResult => ({
    content: [{ type: "text", text: value }],
    ...(isError ? { isError: true } : {}),
  });
  const stringArg = (key: string): string | undefined => (typeof args[key] === "string" ? (args[key] as string) : undefined);
  try {
    switch (name) {
      case GET_SCHEMA: {
        const target = stringArg("tool");
        if (target === undefined) return text('get_schema needs {"tool": "<tool name>"}', true);
        return text(JSON.stringify(await host.schema(target, signal)));
      }
      case SEARCH_TOOLS: {
        if (mode === "code") {
          const request = declarationRequest(args);
          if (typeof request === "string") return text(request, true);
          return text(await host.declare(request, signal));
        }
        const query = stringArg("query");
        if (query === undefined) return text('search_tools needs {"query": "<what you want to do>"}', true);
        const limit = typeof args.limit === "number" ? args.limit : undefined;
        const results = await host.search(query, limit, signal);
        return text(results.length > 0 ? searchResultText(results) : `No tool matches "${query}".`);
      }
      case CALL_TOOL: {
        const target = stringArg("tool");
        if (target === undefined) return text('call_tool needs {"tool": "<tool name>", "arguments": {...}}', true);
        const inner = args.arguments;
        if (inner !== undefined && (typeof inner !== "object" || inner === null || Array.isArray(inner))) {
          return text("call_tool: `arguments` must be an object", true);
        }
        return await host.call(target, inner as JsonObject | undefined);
      }
      case READ_OUTPUT:
        return await host.readOutput(args);
      case RUN_CODE: {
        const code = stringArg("code");
        if (code === undefined) return text('run_code needs {"code": "<TypeScript program>"}', true);
        return await host.runCode(code, signal);
      }
      default:
        throw new AbridgeError(ErrorCode.TOOL_NOT_FOUND, `unknown meta-tool "${name}"`);
    }
  } catch (err) {
    if (err instanceof AbridgeError && err.code === ErrorCode.TOOL_NOT_FOUND) return text(err.message, true);
    throw err;
  }
}
