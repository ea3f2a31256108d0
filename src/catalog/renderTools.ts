import { MODES } from "../config/schema.js";
import { countTokens } from "../tokens/countTokens.js";
import { MAX_SCHEMA_DEPTH } from "../upstream/schemaDepth.js";
import { compactInputSchema } from "./compactSchema.js";
import { callToolTool, getSchemaTool, searchToolsTool } from "./metaTools.js";
import { briefDescription, parameterList } from "./signature.js";
import type { CatalogTool, ListedTool, Mode } from "./types.js";

/** Options of {@link renderTools}. */
export interface RenderOptions {
  /** Between server and tool in exposed names (default `_`); the lazy index explains it. */
  separator?: string;
  /**
   * `compact` only: carry the parameters in the description's signature alone and send
   * `inputSchema: {type: "object"}`. Over the corpus this takes compact from about 29% to about
   * 17% of full, because the names-and-types schema repeats what the signature says. Off by
   * default: function-calling models fill arguments from the schema, so whether they do as well
   * from the signature is for the fidelity benchmark to show. Calls are validated against the
   * full schema either way.
   */
  signatureOnly?: boolean;
}

/**
 * Property descriptions with no cached param summary are cut to this many characters (first
 * sentence, word boundary) in `summary` mode. Long enough for "Repository owner (user or org)",
 * short enough that a 2,000-character option essay does not survive the summary.
 */
const SUMMARY_PROPERTY_CHARS = 60;
/**
 * Cap of property descriptions below the top level in `summary` mode: none are kept. Cut to a
 * few words they were fragments ("The content to be rendered on the new…") that cost about 2% of
 * full over the corpus; the model fills nested parts once it has picked the tool, and
 * `get_schema` has every word.
 */
const NESTED_PROPERTY_CHARS = 0;
/** Cap of a tool description in `compact`/`lazy` while its summary is still being written. */
const UNSUMMARIZED_CHARS = 160;

/** Keywords whose value is a map of name -> subschema. */
const SCHEMA_MAP_KEYWORDS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);
/** Keywords whose value is one subschema. */
const SCHEMA_KEYWORDS = new Set([
  "additionalProperties",
  "additionalItems",
  "unevaluatedProperties",
  "unevaluatedItems",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
  "contentSchema",
]);
/** Keywords whose value is a list of subschemas. */
const SCHEMA_LIST_KEYWORDS = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);

/** Keywords that never affect validation and that summary mode drops. */
const PROSE_ONLY_KEYWORDS = new Set(["examples", "$comment"]);

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Code-unit order: locale-independent, so every process sorts the same way. */
function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Copies a schema node with every `description` shortened (or replaced by `params[name]` for the
 * properties of the node it was given `params` for). Schema-aware: a *property named*
 * `description` is a schema, not prose, and data keywords (`enum`, `const`, `default`, `examples`,
 * `required`) are copied untouched, so the copy validates exactly the instances the original does.
 */
function shortenSchemaProse(node: unknown, params?: Record<string, string>, maxChars = SUMMARY_PROPERTY_CHARS, depth = 0): unknown {
  // Bounded like every schema walk: past the limit (a tool that deep is quarantined where it
  // enters) the node is kept as it is rather than recursing on.
  if (!isObject(node) || depth >= MAX_SCHEMA_DEPTH) return node;
  const out: JsonObject = {};
  // Below the top-level properties prose gets the tighter cap (none, see NESTED_PROPERTY_CHARS).
  const sub = (value: unknown): unknown => shortenSchemaProse(value, undefined, NESTED_PROPERTY_CHARS, depth + 1);
  for (const [key, value] of Object.entries(node)) {
    if (key === "description" && typeof value === "string") {
      const short = maxChars <= 0 ? "" : briefDescription(value, maxChars);
      if (short !== "") out[key] = short;
    } else if (SCHEMA_MAP_KEYWORDS.has(key) && isObject(value)) {
      const map: JsonObject = {};
      for (const [name, schema] of Object.entries(value)) {
        const summary = key === "properties" ? params?.[name] : undefined;
        const shortened = key === "properties" && params !== undefined ? shortenSchemaProse(schema, undefined, maxChars, depth + 1) : sub(schema);
        map[name] = summary === undefined ? shortened : withDescription(shortened, summary);
      }
      out[key] = map;
    } else if (key === "dependencies" && isObject(value)) {
      // draft-07 `dependencies` mixes subschemas (objects) and property lists (arrays).
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, Array.isArray(v) ? v : sub(v)]));
    } else if (SCHEMA_KEYWORDS.has(key)) {
      out[key] = sub(value);
    } else if (key === "items") {
      out[key] = Array.isArray(value) ? value.map(sub) : sub(value);
    } else if (SCHEMA_LIST_KEYWORDS.has(key) && Array.isArray(value)) {
      out[key] = value.map(sub);
    } else if (PROSE_ONLY_KEYWORDS.has(key)) {
      // Annotations with no effect on validation; `examples` alone can run to pages.
      continue;
    } else {
      out[key] = value;
    }
  }
  return out;
}

function withDescription(schema: unknown, description: string): unknown {
  if (!isObject(schema)) return schema;
  if (description === "") {
    const { description: _dropped, ...rest } = schema;
    return rest;
  }
  return { ...schema, description };
}

/**
 * The `summary` mode input schema: the original minus `$schema`, with prose shortened (see
 * {@link shortenSchemaProse}). A root without `type` gets `type: "object"`: MCP requires it (the
 * SDK client rejects the whole `tools/list` otherwise, which gitlab's schemas as shipped would
 * trigger), and tool arguments are always objects, so no call that validated before is refused.
 */
export function summaryInputSchema(inputSchema: JsonObject, params: Record<string, string> = {}): JsonObject {
  const { $schema: _schema, ...rest } = inputSchema;
  const out = pruneUnusedDefinitions(shortenSchemaProse(rest, params) as JsonObject);
  return out.type === undefined ? { type: "object", ...out } : out;
}

/** Every `$ref`-like string in `node`, skipping the subtrees under `skip` (the definitions themselves). */
function collectRefs(node: unknown, out: string[], skip?: ReadonlySet<unknown>, depth = 0): void {
  if (depth >= MAX_SCHEMA_DEPTH) return;
  if (Array.isArray(node)) {
    for (const item of node) collectRefs(item, out, skip, depth + 1);
    return;
  }
  if (!isObject(node) || skip?.has(node)) return;
  for (const [key, value] of Object.entries(node)) {
    if ((key === "$ref" || key === "$dynamicRef" || key === "$recursiveRef") && typeof value === "string") out.push(value);
    else collectRefs(value, out, skip, depth + 1);
  }
}

/** One JSON-pointer segment decoded; a malformed %-escape is kept as written (it then matches nothing). */
function decodePointerPart(part: string): string {
  let decoded = part;
  try {
    decoded = decodeURIComponent(part);
  } catch {
    // keep as written
  }
  return decoded.replace(/~1/g, "/").replace(/~0/g, "~");
}

/**
 * Drops root `$defs`/`definitions` entries no `$ref` reaches (transitively). Generated schemas
 * (notion's) ship every definition with every tool: ~2,000 characters each that no instance is
 * ever checked against, so dropping them changes no validation. Any ref this cannot follow (a
 * remote ref, a `$dynamicRef`, an anchor) keeps every definition.
 */
function pruneUnusedDefinitions(schema: JsonObject): JsonObject {
  const containers = (["$defs", "definitions"] as const).filter((k) => isObject(schema[k]));
  if (containers.length === 0) return schema;
  const defs = new Map<string, unknown>();
  for (const container of containers) {
    for (const [name, def] of Object.entries(schema[container] as JsonObject)) defs.set(`#/${container}/${name}`, def);
  }
  const pending: string[] = [];
  collectRefs(schema, pending, new Set(containers.map((k) => schema[k])));
  const used = new Set<string>();
  while (pending.length > 0) {
    const ref = pending.pop() as string;
    if (ref === "#") continue;
    const match = /^#\/(\$defs|definitions)\/([^/]+)/.exec(ref);
    const id = match === null ? undefined : `#/${match[1]}/${decodePointerPart(match[2] ?? "")}`;
    if (id === undefined || !defs.has(id)) return schema;
    if (used.has(id)) continue;
    used.add(id);
    collectRefs(defs.get(id), pending);
  }
  const out: JsonObject = { ...schema };
  for (const container of containers) {
    const kept = Object.entries(schema[container] as JsonObject).filter(([name]) => used.has(`#/${container}/${name}`));
    if (kept.length === 0) delete out[container];
    else out[container] = Object.fromEntries(kept);
  }
  return out;
}

/** The description a tool shows in summary-like modes: the cached summary, else `fallback`. */
function summaryText(tool: CatalogTool, fallback: (description: string | undefined) => string | undefined): string | undefined {
  return tool.summary?.summary ?? fallback(tool.tool.description);
}

function renderFull(tool: CatalogTool): ListedTool {
  // Spread keeps every key (title, annotations, outputSchema, _meta, execution, ...) and its
  // position; only the value of `name` changes.
  return { ...tool.tool, name: tool.name };
}

function renderSummary(tool: CatalogTool): ListedTool {
  const raw = tool.tool;
  const out: ListedTool = { ...raw, name: tool.name, inputSchema: summaryInputSchema(raw.inputSchema, tool.summary?.params) };
  const description = summaryText(tool, (d) => d);
  if (description === undefined) delete out.description;
  else out.description = description;
  // outputSchema stays: a client validates structuredContent against it. Its prose is
  // shortened like the input schema's, which changes no validation.
  if (isObject(raw.outputSchema)) {
    const { $schema: _s, ...output } = raw.outputSchema;
    out.outputSchema = shortenSchemaProse(output) as JsonObject;
  }
  return out;
}

/**
 * Annotations of a compact tool: only `readOnlyHint: true` and `destructiveHint: true`, the two a
 * host acts on (auto-approve reads, confirm destructive calls). They stay as annotations rather
 * than a "[destructive]" marker in the description because most clients do not send annotations
 * to the model: there they cost no prompt tokens, while a marker would cost tokens on every
 * request. A dropped `destructiveHint: false` errs safe: MCP's default for a non-read-only tool is
 * destructive.
 */
function compactAnnotations(tool: CatalogTool): JsonObject | undefined {
  const a = tool.tool.annotations;
  if (a === undefined) return undefined;
  const out: JsonObject = {};
  if (a.readOnlyHint === true) out.readOnlyHint = true;
  if (a.destructiveHint === true) out.destructiveHint = true;
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The description of a compact tool: the summary, then on its own line the parameter list. The
 * list is written without the tool's name (`(owner, repo, title, body?)`): the function name sits
 * right beside it, and repeating it costs about 1% of full over the corpus. Beside the compact
 * schema the list leaves out the types and short enums that schema carries (see
 * {@link parameterList} `schemaAlongside`), about 1.5% of full. `always` is for a description sent
 * without a schema (`signatureOnly`, the daemon's lazy listing): the list then keeps every type,
 * and a tool that takes no parameters gets `()` (otherwise its schema already says so).
 */
export function compactDescription(tool: CatalogTool, always = false): string {
  const summary = summaryText(tool, (d) => briefDescription(d, UNSUMMARIZED_CHARS)) ?? "";
  // Beside the compact schema the list leaves out what that schema says (types, short enums);
  // sent alone (`always`) it is the only statement of the parameters, so it keeps everything.
  const params = parameterList(tool.tool.inputSchema, { schemaAlongside: !always });
  const signature = params === "()" && !always ? "" : params;
  if (signature === "" || endsWithLine(summary, signature)) return summary;
  // The line break ends the sentence: its period would cost a token in every listed tool.
  return summary === "" ? signature : `${summary.replace(/(?<!\.)\.$/, "")}\n${signature}`;
}

/**
 * True when `text` already ends with `line`, on a line of its own or after a space. abridge in
 * front of another abridge (or any server that writes its own parameter line) would otherwise show
 * the line twice: the inner list says `Echoes back the input string\n(message)`, the summary of
 * that keeps `(message)`, and the outer list would append `(message)` again.
 */
function endsWithLine(text: string, line: string): boolean {
  const trimmed = text.trimEnd();
  if (!trimmed.endsWith(line)) return false;
  const before = trimmed.slice(0, trimmed.length - line.length);
  return before === "" || /\s$/.test(before);
}

function renderCompact(tool: CatalogTool, signatureOnly: boolean): ListedTool {
  const out: ListedTool = {
    name: tool.name,
    description: compactDescription(tool, signatureOnly),
    inputSchema: signatureOnly ? { type: "object" } : compactInputSchema(tool.tool.inputSchema),
  };
  const annotations = compactAnnotations(tool);
  if (annotations !== undefined) out.annotations = annotations;
  // `execution.taskSupport: "required"` changes how a client must call the tool; "forbidden" is
  // the default, so only a non-default value is worth its tokens. title, outputSchema and _meta
  // are dropped: none changes what a valid call is, and get_schema returns them.
  const execution = tool.tool.execution;
  if (isObject(execution) && execution.taskSupport !== undefined && execution.taskSupport !== "forbidden") {
    out.execution = execution;
  }
  return out;
}

/** Tools in server then tool order (exposed name breaks ties): stable across restarts. */
export function sortTools(tools: readonly CatalogTool[]): CatalogTool[] {
  return [...tools].sort(
    (a, b) => compareStrings(a.server, b.server) || compareStrings(a.tool.name, b.tool.name) || compareStrings(a.name, b.name),
  );
}

/**
 * What the model is shown in `mode` (see DESIGN.md "Serving modes"). Pure and deterministic:
 * the same catalog gives byte-identical output in every process, so a client's prompt cache
 * survives restarts.
 *
 * - `full`: each upstream tool untouched but for `name`.
 * - `summary`: cached summary as description (original when none), every schema kept and
 *   validating the same instances, property prose replaced by param summaries or cut to a sentence.
 * - `compact`: summary + one-line signature, a names-and-types schema, the two hints that matter,
 *   and the `get_schema` meta-tool last.
 * - `lazy`: only `search_tools` (carrying a per-server name index), `get_schema`, `call_tool`.
 */
export function renderTools(tools: readonly CatalogTool[], mode: Mode, options: RenderOptions = {}): ListedTool[] {
  const sorted = sortTools(tools);
  switch (mode) {
    case "full":
      return sorted.map(renderFull);
    case "summary":
      return sorted.map(renderSummary);
    case "compact":
      return [...sorted.map((t) => renderCompact(t, options.signatureOnly === true)), getSchemaTool()];
    case "lazy":
      return [searchToolsTool(sorted, options.separator ?? "_"), getSchemaTool(), callToolTool()];
  }
}

/** One tool in the OpenAI function-tool form. */
export interface OpenAiFunctionTool {
  type: "function";
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

/**
 * Listed tools in the OpenAI function-tool form
 * `[{"type":"function","function":{"name","description","parameters"}}]`, the form token figures
 * are quoted in (what most model APIs receive after a client converts an MCP list).
 */
export function toOpenAiFunctions(listed: readonly ListedTool[]): OpenAiFunctionTool[] {
  return listed.map((t) => ({
    type: "function",
    function: {
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      parameters: t.inputSchema,
    },
  }));
}

/** Token counts of one mode's list. */
export interface ModeTokens {
  mode: Mode;
  /** Entries in the list (tools plus meta-tools). */
  listed: number;
  /** o200k tokens of `JSON.stringify(toOpenAiFunctions(list))`. */
  openAiTokens: number;
  /** o200k tokens of the MCP `tools/list` result, `JSON.stringify({tools: list})`. */
  mcpTokens: number;
  /** `openAiTokens` over full mode's `openAiTokens` (1 for full; 0 for an empty catalog). */
  ratioOfFull: number;
}

/** o200k token counts of every mode's list, for `render --tokens`, `summarize warm` and the benchmarks. */
export function tokenReport(tools: readonly CatalogTool[], options: RenderOptions = {}): Record<Mode, ModeTokens> {
  const counts = MODES.map((mode) => {
    const listed = renderTools(tools, mode, options);
    return {
      mode,
      listed: listed.length,
      openAiTokens: countTokens(JSON.stringify(toOpenAiFunctions(listed))),
      mcpTokens: countTokens(JSON.stringify({ tools: listed })),
    };
  });
  const full = counts.find((c) => c.mode === "full")?.openAiTokens ?? 0;
  return Object.fromEntries(counts.map((c) => [c.mode, { ...c, ratioOfFull: full === 0 ? 0 : c.openAiTokens / full }])) as Record<
    Mode,
    ModeTokens
  >;
}
