import { renderTools, toOpenAiFunctions } from "../../src/catalog/renderTools.js";
import { briefDescription, parameterList } from "../../src/catalog/signature.js";
import type { CatalogTool, ListedTool, Mode } from "../../src/catalog/types.js";
import { countJsonTokens } from "../../src/tokens/countTokens.js";
import type { RankDoc } from "./proxies.js";
import { isObject } from "../../src/model/json.js";

/**
 * The renderings a tool list can be sent in, each as (a) the list a client receives, for token
 * counts, and (b) the text the model sees of each tool, for the selection proxies. abridge's modes
 * render through the product's own `renderTools`; the references are written here.
 *
 * Atlassian's mcp-compressor (a proxy with the same aim) replaces a server's tools by wrapper
 * tools: one that returns a tool's input schema, whose description lists the server's tools, and
 * one that invokes a tool by name. Its compression level decides how each tool is listed, one
 * `<tool>…</tool>` entry per tool:
 * - `low`: the name, its argument names in parentheses, and the whole description after a colon;
 * - `medium` (its default): the name and argument names, then the description's first line cut
 *   at its first period;
 * - `high`: the name and argument names only;
 * - `max`: nothing is listed up front; a third wrapper lists the tools (in the `medium` form)
 *   when the model calls it, so selection costs one extra call per server.
 * The wrappers' own wording and argument schemas below are ours, of about the same size; the
 * per-tool entries follow the format above. A multi-server setup has one set of wrappers per
 * server, so the pooled list is every server's wrappers.
 */

/** A rendering to compare. */
export interface View {
  id: string;
  label: string;
  /** True for abridge's modes, whose text depends on the summaries (and so on tuned settings). */
  usesSummaries: boolean;
  /** What the client receives for `tools` (one server or the pooled corpus), OpenAI function form. */
  list(tools: readonly CatalogTool[]): unknown[];
  /** What the model sees of each tool, keyed `server:tool`. */
  docs(tools: readonly CatalogTool[]): RankDoc[];
  /** A note printed beside the view's figures. */
  note?: string;
}

/** `server:tool`, the form labelled queries name tools in. */
export function toolKey(tool: CatalogTool): string {
  return `${tool.server}:${tool.tool.name}`;
}

/** A name as words: `github_create_issue` -> `github create issue` (so the dense encoder reads it). */
function nameWords(name: string): string {
  return name.replace(/[_\-.]+/g, " ").trim();
}

/**
 * The words of a schema a model reads: property names, their descriptions and titles, and string
 * enum values, through nested objects, array items and unions (not through `$ref`), a few levels deep.
 */
export function schemaWords(schema: unknown, depth = 0): string[] {
  if (!isObject(schema) || depth > 4) return [];
  const out: string[] = [];
  if (Array.isArray(schema.enum)) out.push(...schema.enum.filter((v): v is string => typeof v === "string"));
  if (isObject(schema.properties)) {
    for (const [name, prop] of Object.entries(schema.properties)) {
      out.push(name);
      if (isObject(prop)) {
        if (typeof prop.title === "string") out.push(prop.title);
        if (typeof prop.description === "string") out.push(prop.description);
      }
      out.push(...schemaWords(prop, depth + 1));
    }
  }
  if (isObject(schema.items)) out.push(...schemaWords(schema.items, depth + 1));
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const list = schema[key];
    if (Array.isArray(list)) for (const branch of list) out.push(...schemaWords(branch, depth + 1));
  }
  return out;
}

/** The text the model sees of one listed tool: its name, title, description and schema words. */
function listedText(tool: ListedTool, parameters: unknown): string {
  return [nameWords(tool.name), typeof tool.title === "string" ? tool.title : "", tool.description ?? "", ...schemaWords(parameters)]
    .filter((s) => s !== "")
    .join("\n");
}

function modeView(mode: Exclude<Mode, "lazy">, label: string): View {
  return {
    id: mode,
    label,
    usesSummaries: mode !== "full",
    list: (tools) => toOpenAiFunctions(renderTools(tools, mode)),
    docs: (tools) => {
      const byName = new Map(tools.map((t) => [t.name, t]));
      return renderTools(tools, mode).flatMap((listed) => {
        const tool = byName.get(listed.name);
        return tool === undefined ? [] : [{ key: toolKey(tool), text: listedText(listed, listed.inputSchema) }];
      });
    },
  };
}

/** First sentence of a description, whole (description-truncating compressors keep it uncut). */
function firstSentence(tool: CatalogTool): string {
  return briefDescription(tool.tool.description, Number.MAX_SAFE_INTEGER);
}

/** A reference that lists each tool as one OpenAI function, from a name, a description and maybe a schema. */
function functionView(id: string, label: string, render: (tool: CatalogTool) => { description?: string; parameters?: unknown }): View {
  return {
    id,
    label,
    usesSummaries: false,
    list: (tools) =>
      tools.map((t) => {
        const r = render(t);
        return {
          type: "function",
          function: {
            name: t.name,
            ...(r.description !== undefined && r.description !== "" ? { description: r.description } : {}),
            ...(r.parameters !== undefined ? { parameters: r.parameters } : {}),
          },
        };
      }),
    docs: (tools) =>
      tools.map((t) => {
        const r = render(t);
        return { key: toolKey(t), text: [nameWords(t.name), r.description ?? "", ...schemaWords(r.parameters)].filter((s) => s !== "").join("\n") };
      }),
  };
}

/** mcp-compressor's levels (see the comment at the top). */
export const COMPRESSOR_LEVELS = ["low", "medium", "high", "max"] as const;
/** One mcp-compressor level. */
export type CompressorLevel = (typeof COMPRESSOR_LEVELS)[number];

function argumentNames(tool: CatalogTool): string[] {
  const props = tool.tool.inputSchema.properties;
  return isObject(props) ? Object.keys(props) : [];
}

/** One tool's entry in a compressor listing at `level` (`max` lists in the `medium` form on request). */
export function compressorEntry(tool: CatalogTool, level: CompressorLevel): string {
  const description = (tool.tool.description ?? "").trim();
  let text = "";
  if (level === "low") text = description;
  else if (level === "medium" || level === "max") text = (description.split(/\r?\n/)[0] ?? "").split(".")[0] ?? "";
  return `<tool>${tool.tool.name}(${argumentNames(tool).join(", ")})${text !== "" ? `: ${text}` : ""}</tool>`;
}

function byServer(tools: readonly CatalogTool[]): Map<string, CatalogTool[]> {
  const out = new Map<string, CatalogTool[]>();
  for (const t of tools) {
    const list = out.get(t.server);
    if (list === undefined) out.set(t.server, [t]);
    else list.push(t);
  }
  return out;
}

/** The answer of a `max`-level server's list wrapper: its tools in the `medium` form. */
export function compressorListAnswer(tools: readonly CatalogTool[]): string {
  return tools.map((t) => compressorEntry(t, "max")).join("\n");
}

function compressorView(level: CompressorLevel): View {
  return {
    id: `compressor-${level}`,
    label: `mcp-compressor ${level}`,
    usesSummaries: false,
    ...(level === "max" ? { note: "tools are listed only after one list call per server (its answer is not counted in the list tokens)" } : {}),
    list: (tools) =>
      [...byServer(tools)].flatMap(([server, serverTools]) => {
        const listing = level === "max" ? "" : `\n\nTools:\n${serverTools.map((t) => compressorEntry(t, level)).join("\n")}`;
        const wrappers: unknown[] = [
          {
            type: "function",
            function: {
              name: `${server}_get_tool_schema`,
              description: `Input schema of one tool of the ${server} toolset.${listing}`,
              parameters: { type: "object", properties: { tool_name: { type: "string" } }, required: ["tool_name"] },
            },
          },
          {
            type: "function",
            function: {
              name: `${server}_invoke_tool`,
              description: `Invoke a tool of the ${server} toolset.`,
              parameters: {
                type: "object",
                properties: { tool_name: { type: "string" }, tool_input: { type: "object" }, quiet: { type: "boolean", default: false } },
                required: ["tool_name"],
              },
            },
          },
        ];
        if (level === "max") {
          wrappers.push({
            type: "function",
            function: { name: `${server}_list_tools`, description: `List the tools of the ${server} toolset.`, parameters: { type: "object", properties: {} } },
          });
        }
        return wrappers;
      }),
    docs: (tools) => tools.map((t) => ({ key: toolKey(t), text: `${t.server}\n${compressorEntry(t, level)}` })),
  };
}

/** Every rendering but lazy (whose text is a search answer, see heldOut.ts), cheapest first by intent. */
export function views(): View[] {
  return [
    functionView("names-only", "ref: names only", () => ({})),
    functionView("first-sentence", "ref: name + first sentence", (t) => ({ description: firstSentence(t) })),
    functionView("first-sentence-params", "ref: name + first sentence + parameter line", (t) => ({
      description: `${firstSentence(t)}\n${parameterList(t.tool.inputSchema)}`.trim(),
    })),
    functionView("first-sentence-schema", "ref: name + first sentence + full schema", (t) => ({
      description: firstSentence(t),
      parameters: t.tool.inputSchema,
    })),
    ...COMPRESSOR_LEVELS.map(compressorView),
    modeView("compact", "abridge compact"),
    modeView("summary", "abridge summary"),
    modeView("full", "abridge full (the servers' own lists)"),
  ];
}

/** o200k tokens of a view's list. */
export function viewTokens(view: View, tools: readonly CatalogTool[]): number {
  return countJsonTokens(view.list(tools));
}
