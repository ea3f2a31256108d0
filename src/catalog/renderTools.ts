import { callKey } from "../cache/callCounts.js";
import { MODES } from "../config/schema.js";
import { countTokens } from "../tokens/countTokens.js";
import { globToRegExp } from "../model/glob.js";
import { admitTool } from "../upstream/admitTool.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { compactInputSchema, namesOnlyInputSchema } from "./compactSchema.js";
import { callToolTool, codeSearchTool, getSchemaTool, runCodeTool, searchToolsTool } from "./metaTools.js";
import { briefDescription, parameterList } from "./signature.js";
import { shortenSchemaProse, summaryInputSchema } from "./summarySchema.js";
import type { CatalogTool, ListedTool, Mode } from "./types.js";
import type { JsonObject } from "../model/types.js";
import { compareStrings, isObject } from "../model/json.js";
import type { EntryTokens, SummarizeInput, ToolSummary } from "../summarize/types.js";
import type { CacheEntry, FormTokens } from "../cache/cacheEntry.js";

/**
 * Version of the renderers whose output an entry's `formTokens` counts. Bump it with any change to
 * what {@link renderFull}, {@link renderSummary} or {@link renderCompact} write for a tool (here, in
 * summarySchema.ts, compactSchema.ts or signature.ts): counts of another version describe other
 * bytes, so they are ignored and the tool is chosen for as if it had none until its entry is
 * written again (`abridge summarize warm --force`, or any new summary).
 */
export const RENDERER_VERSION = 1;

/** Options of {@link renderTools}. */
export interface RenderOptions {
  /** Between server and tool in exposed names (default `_`); the lazy index explains it. */
  separator?: string;
  /**
   * The input schema `compact` lists (default {@link DEFAULT_COMPACT_SCHEMA}); calls are validated against the full
   * original schema whichever it is.
   * - `names`: property names with empty schemas, and `required` (see {@link namesOnlyInputSchema});
   *   types, enums and defaults are in the parameter line. Safe with clients that validate
   *   arguments against the listed schema themselves: an empty property schema accepts anything.
   * - `types`: names, types, short enums and `required` (the schema compact listed before); the
   *   parameter line then leaves out what the schema says.
   * - `none`: `{type: "object"}`; the parameter line alone states the parameters.
   */
  compactSchema?: CompactSchema;
  /** `auto` only: the budget, the pins and the call counts it chooses by (see {@link autoChoice}). */
  auto?: AutoOptions;
}

/** Default `token_budget` of `mode = "auto"`: about 4% of a 200k context, 6% of a 128k one. */
export const DEFAULT_TOKEN_BUDGET = 8_000;

/** What `mode = "auto"` chooses by. */
export interface AutoOptions {
  /** o200k tokens (OpenAI function form) the list may cost (default {@link DEFAULT_TOKEN_BUDGET}). */
  tokenBudget?: number;
  /** Globs of exposed names listed first beside lazy (config `pin`). */
  pins?: readonly string[];
  /** Calls per `server:tool` (see CallCounts): the most called are listed next. */
  callCounts?: ReadonlyMap<string, number>;
}

/** What `mode = "auto"` serves. */
export interface AutoChoice {
  /** The richest view that fits; `lazy` may list tools beside the meta-tools. */
  view: "full" | "summary" | "compact" | "lazy";
  listed: ListedTool[];
  /** o200k tokens of `listed` in the OpenAI function form. */
  tokens: number;
  /** Exposed names of the tools listed beside lazy's meta-tools, in list order. */
  extra: string[];
}

/** Which input schema `compact` lists beside the parameter line (see {@link RenderOptions.compactSchema}). */
export type CompactSchema = "names" | "types" | "none";

/**
 * `none` by default. Over the corpus (o200k, OpenAI function form) compact costs about 18% of full
 * with `none`, 26% with `names` and 28% with `types`: a property map repeats every name the
 * parameter line already states. `{type: "object"}` is as safe as `names` for a client that
 * validates arguments against the listed schema (both accept any object), and arguments are
 * validated against the full schema before forwarding; `names` is there for APIs that build
 * argument slots from the declared properties.
 */
export const DEFAULT_COMPACT_SCHEMA: CompactSchema = "none";

/** Cap of a tool description in `compact`/`lazy` while its summary is still being written. */
const UNSUMMARIZED_CHARS = 160;

/** The description a tool shows in summary-like modes: the cached summary, else `fallback`. */
function summaryText(tool: RenderedTool, fallback: (description: string | undefined) => string | undefined): string | undefined {
  return tool.summary?.summary ?? fallback(tool.tool.description);
}

/** What rendering one tool in `full` or `summary` reads of it. */
type RenderedTool = Pick<CatalogTool, "name" | "tool" | "summary" | "formTokens">;

/**
 * The tool's stored counts when the renderers of this version wrote them, else undefined. Counts
 * come from the entry its summary came from, so a tool without a summary has none.
 */
function countsOf(tool: RenderedTool): FormTokens | undefined {
  const counts = tool.formTokens;
  return counts !== undefined && tool.summary !== undefined && counts.renderer === RENDERER_VERSION ? counts : undefined;
}

function renderFull(tool: RenderedTool): ListedTool {
  // Spread keeps every key (title, annotations, outputSchema, _meta, execution, ...) and its
  // position; only the value of `name` changes.
  return { ...tool.tool, name: tool.name };
}

function renderSummary(tool: RenderedTool): ListedTool {
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
 * The description of a compact tool: the summary, then on its own line the parameter list, a
 * TypeScript-like line with types, `?` for optional, short enums and short defaults
 * (`(owner: string, repo: string, state?: open|closed, per_page?: number = 30)`). The list is
 * written without the tool's name: the function name sits right beside it, and repeating it costs
 * about 1% of full over the corpus. Beside a `types` schema the list leaves out the types and
 * short enums that schema carries (see {@link parameterList} `schemaAlongside`). With `none` (the
 * daemon's lazy listing) a tool that takes no parameters gets `()`; otherwise its schema says so.
 */
export function compactDescription(tool: CatalogTool, schema: CompactSchema = DEFAULT_COMPACT_SCHEMA): string {
  const summary = summaryText(tool, (d) => briefDescription(d, UNSUMMARIZED_CHARS)) ?? "";
  const params = parameterList(tool.tool.inputSchema, schema === "types" ? { schemaAlongside: true } : { typedStrings: true, defaults: true });
  const signature = params === "()" && schema !== "none" ? "" : params;
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

function compactSchemaOf(tool: CatalogTool, schema: CompactSchema): Record<string, unknown> {
  switch (schema) {
    case "names":
      return namesOnlyInputSchema(tool.tool.inputSchema);
    case "types":
      return compactInputSchema(tool.tool.inputSchema);
    case "none":
      return { type: "object" };
  }
}

function renderCompact(tool: CatalogTool, schema: CompactSchema): ListedTool {
  const out: ListedTool = {
    name: tool.name,
    description: compactDescription(tool, schema),
    inputSchema: compactSchemaOf(tool, schema),
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

/**
 * Below this ratio of JSON lengths a shorter rendering is taken to be smaller in tokens too:
 * tokens per character vary, but not by a fifth between two renderings of one tool (over the
 * corpus no pair this far apart in length is ordered the other way in tokens; see
 * docs/performance.md).
 */
const SURELY_SMALLER = 0.8;

/** o200k tokens of one listed tool in the OpenAI function-tool form the figures are quoted in. */
export function listedToolTokens(tool: ListedTool): number {
  return countTokens(JSON.stringify(toOpenAiFunctions([tool])[0]));
}

/**
 * `candidate` when it is no larger than `larger` in tokens, else `larger`: by the stored counts
 * when the tool's entry has them (`[candidateTokens, largerTokens]`), which decide exactly without
 * the tokenizer; otherwise by JSON length when the candidate is surely smaller, and by counting
 * the two forms when it is not. A tool without counts is one whose entry is being written (a cold
 * cache: the summarizer counts its forms for the entry, so the encoder is loaded then anyway) or
 * an entry of an older abridge; it is listed as it was before counts were stored. Choosing such a
 * tool by length alone instead listed different forms than a warm cache (summary mode kept a
 * schema's `$schema` where the full form won by length, and compact listed a tool's
 * `outputSchema` next to `structured = "text-only"`, which SDK clients then refuse), and serving
 * it as the original would list it in full in every mode. By counts only the form chosen is
 * rendered: a compact list of a warm cache renders no summary form that compact beats.
 */
function noLarger(candidate: () => ListedTool, larger: () => ListedTool, counts: readonly [number, number] | undefined): ListedTool {
  if (counts !== undefined) return counts[0] <= counts[1] ? candidate() : larger();
  const small = candidate();
  const large = larger();
  const a = JSON.stringify(toOpenAiFunctions([small])[0]);
  const b = JSON.stringify(toOpenAiFunctions([large])[0]);
  if (a.length <= b.length * SURELY_SMALLER) return small;
  return countTokens(a) <= countTokens(b) ? small : large;
}

/** Tokens of the summary form by the stored counts: the smaller of the summary and full renderings. */
function summaryFormTokens(counts: FormTokens): number {
  return Math.min(counts.summary, counts.full);
}

/**
 * A tool's summary form: {@link renderSummary}, or the full form when that is no larger (a short
 * description with a tiny schema gains nothing from summarizing, and `type: "object"` added to a
 * root that lacks it could make it larger).
 */
function summaryForm(tool: RenderedTool): ListedTool {
  const counts = countsOf(tool);
  return noLarger(
    () => renderSummary(tool),
    () => renderFull(tool),
    counts && [counts.summary, counts.full],
  );
}

/**
 * Counts of every rendering of `tool` with its summary, for its cache entry: the one place forms
 * are counted for serving. The name a form carries changes no comparison between forms: it sits
 * between the same `"name":"` and `","` in each, which the tokenizer splits at, so counts measured
 * under one exposed name order the forms the same under another.
 */
function measureForms(tool: CatalogTool): FormTokens {
  return {
    renderer: RENDERER_VERSION,
    full: listedToolTokens(renderFull(tool)),
    summary: listedToolTokens(renderSummary(tool)),
    names: listedToolTokens(renderCompact(tool, "names")),
    types: listedToolTokens(renderCompact(tool, "types")),
    none: listedToolTokens(renderCompact(tool, "none")),
  };
}

/**
 * o200k tokens (OpenAI function form) of one tool as `full` lists it and as `summary` lists it with
 * `summary` as its cached summary: the `tokensBefore` and `tokensAfter` of its cache entry. Both
 * come from the renderers that serve the lists, so the cached figure is what summary mode costs: a
 * second schema walk for the figure drifts from the served one (over the corpus such a walk kept
 * `examples`, unused `$defs` and nested prose that summary mode drops, and overstated the summary
 * lists by a quarter). The name is the exposed one when the input carries it.
 */
export function summaryTokens(input: SummarizeInput, summary: ToolSummary): EntryTokens {
  // A job's tool came from a catalog, so it is admitted already (a lookup). The summarizer's input
  // type says RawTool: it is public, and a library caller hands a summarizer tools of its own.
  const admission = admitTool(input.tool);
  if (!admission.ok) throw new AbridgeError(ErrorCode.INPUT_INVALID, `summaryTokens: tool ${JSON.stringify(input.tool.name)}: ${admission.problem.message}`);
  const name = input.name ?? input.tool.name;
  const tool: CatalogTool = { name, server: input.server, uri: "", key: input.key, tool: admission.tool, summary };
  const formTokens = measureForms(tool);
  return { tokensBefore: formTokens.full, tokensAfter: summaryFormTokens(formTokens), formTokens };
}

/**
 * The counts of `cached` when `summary` is the summary it holds, counted by the renderers of this
 * version: a summary written again unchanged (a local summarizer redoing an entry the guard
 * refuses, which writes the same text) then needs no counting, and a bridge doing so does not
 * load the tokenizer. Its figures are those of the same content, measured when it was first
 * written. Undefined when the text differs or the entry has no usable counts.
 */
export function repeatedSummaryTokens(cached: CacheEntry | undefined, summary: ToolSummary): EntryTokens | undefined {
  const counts = cached?.formTokens;
  if (cached === undefined || counts === undefined || counts.renderer !== RENDERER_VERSION) return undefined;
  if (cached.summary !== summary.summary || JSON.stringify(cached.params) !== JSON.stringify(summary.params)) return undefined;
  return { tokensBefore: cached.tokensBefore, tokensAfter: cached.tokensAfter, formTokens: { ...counts } };
}

/**
 * A tool's compact form: {@link renderCompact}, or its summary form when that is no larger (a tool
 * with a one-line description and one parameter costs less as it is than with a parameter line
 * added). So, per tool, compact <= summary <= full in tokens.
 */
function compactForm(tool: CatalogTool, schema: CompactSchema): ListedTool {
  return memoized(tool, `compact:${schema}`, () => {
    const counts = countsOf(tool);
    return noLarger(
      () => renderCompact(tool, schema),
      () => memoized(tool, "summary", () => summaryForm(tool)),
      counts && [counts[schema], summaryFormTokens(counts)],
    );
  });
}

/**
 * `render()`, or the form kept in the tool's record (see {@link ToolRecord.view}). Forms chosen by
 * stored counts and without them are kept apart: the same summary may come with counts or without.
 */
function memoized(tool: CatalogTool, view: string, render: () => ListedTool): ListedTool {
  const key = countsOf(tool) === undefined ? `${view}:uncounted` : view;
  return tool.record === undefined ? render() : tool.record.view(key, tool.name, tool.summary, render);
}

/** Tools in server then tool order (exposed name breaks ties): stable across restarts. */
export function sortTools(tools: readonly CatalogTool[]): CatalogTool[] {
  return [...tools].sort((a, b) => compareStrings(a.server, b.server) || compareStrings(a.tool.name, b.tool.name) || compareStrings(a.name, b.name));
}

/**
 * What the model is shown in `mode` (see docs/modes.md). Pure and deterministic:
 * the same catalog gives byte-identical output in every process, so a client's prompt cache
 * survives restarts.
 *
 * - `full`: each upstream tool untouched but for `name`.
 * - `summary`: cached summary as description (original when none), every schema kept and
 *   validating the same instances, property prose replaced by param summaries or cut to a sentence.
 * - `compact`: summary + one-line signature, a names-and-types schema, the two hints that matter,
 *   and the `get_schema` meta-tool last.
 * - `lazy`: only `search_tools` (carrying a per-server name index), `get_schema`, `call_tool`.
 * - `code`: only `search_tools` (answering TypeScript declarations) and `run_code`.
 */
export function renderTools(tools: readonly CatalogTool[], mode: Mode, options: RenderOptions = {}): ListedTool[] {
  const sorted = sortTools(tools);
  switch (mode) {
    case "full":
      return sorted.map(renderFull);
    case "summary":
      return sorted.map((t) => memoized(t, "summary", () => summaryForm(t)));
    case "compact":
      return [...sorted.map((t) => compactForm(t, options.compactSchema ?? DEFAULT_COMPACT_SCHEMA)), getSchemaTool()];
    case "lazy":
      return [searchToolsTool(sorted, options.separator ?? "_"), getSchemaTool(), callToolTool()];
    case "auto":
      return autoChoice(sorted, options).listed;
    case "code":
      return [codeSearchTool(sorted), runCodeTool()];
  }
}

/**
 * A list whose JSON is longer than this many characters per budget token is over budget without
 * counting: o200k averages 3 to 4 characters a token on tool JSON, so this never misjudges a list
 * that fits, and it spares counting a 5,000-tool full list only to find it does not.
 */
const MAX_CHARS_PER_TOKEN = 16;

/** Tokens of `listed` (OpenAI function form), or Infinity when it surely exceeds `budget`. */
function listTokens(listed: readonly ListedTool[], budget: number): number {
  const json = JSON.stringify(toOpenAiFunctions(listed));
  return json.length > budget * MAX_CHARS_PER_TOKEN ? Number.POSITIVE_INFINITY : countTokens(json);
}

/**
 * What `mode = "auto"` serves: the richest of full, summary and compact whose list fits the token
 * budget; when even compact does not fit, lazy's meta-tools plus, in compact form, as many of the
 * most useful tools as fit: those matching a `pin` glob first (in list order), then the most
 * called (ties in list order). The extra tools are listed in server and tool order, so the list
 * only changes when the set does. Deterministic: same tools, options and counts, same bytes.
 * Lazy alone is served even over budget: it is the floor.
 */
export function autoChoice(tools: readonly CatalogTool[], options: RenderOptions = {}): AutoChoice {
  const sorted = sortTools(tools);
  const budget = options.auto?.tokenBudget ?? DEFAULT_TOKEN_BUDGET;
  for (const view of ["full", "summary", "compact"] as const) {
    const listed = renderTools(sorted, view, options);
    const tokens = listTokens(listed, budget);
    if (tokens <= budget) return { view, listed, tokens, extra: [] };
  }
  const lazy = renderTools(sorted, "lazy", options);
  const pins = (options.auto?.pins ?? []).map(globToRegExp);
  const counts = options.auto?.callCounts ?? new Map<string, number>();
  const countOf = (t: CatalogTool): number => counts.get(callKey(t.server, t.tool.name)) ?? 0;
  const pinned = sorted.filter((t) => pins.some((re) => re.test(t.name)));
  const pinnedNames = new Set(pinned.map((t) => t.name));
  // Array.prototype.sort is stable: equal counts keep list order.
  const called = sorted.filter((t) => !pinnedNames.has(t.name) && countOf(t) > 0).sort((a, b) => countOf(b) - countOf(a));
  const lazyNames = new Set(lazy.map((t) => t.name));
  const schema = options.compactSchema ?? DEFAULT_COMPACT_SCHEMA;
  let used = listTokens(lazy, budget);
  const picked: { tool: CatalogTool; form: ListedTool }[] = [];
  for (const tool of [...pinned, ...called]) {
    if (lazyNames.has(tool.name)) continue; // a tool named like a meta-tool would shadow it
    const form = compactForm(tool, schema);
    // +1: the comma between two entries of the list.
    const cost = listedToolTokens(form) + 1;
    if (used + cost > budget) continue; // a smaller one further down may still fit
    picked.push({ tool, form });
    used += cost;
  }
  const build = (chosen: typeof picked): ListedTool[] => {
    const order = new Map(sorted.map((t, i) => [t.name, i]));
    const inOrder = [...chosen].sort((a, b) => (order.get(a.tool.name) ?? 0) - (order.get(b.tool.name) ?? 0));
    return [...lazy, ...inOrder.map((p) => p.form)];
  };
  let listed = build(picked);
  let tokens = listTokens(listed, Number.MAX_SAFE_INTEGER);
  // Tokens of parts and of the whole differ by a few at the joins: drop the least useful until it fits.
  while (tokens > budget && picked.length > 0) {
    picked.pop();
    listed = build(picked);
    tokens = listTokens(listed, Number.MAX_SAFE_INTEGER);
  }
  return { view: "lazy", listed, tokens, extra: listed.slice(lazy.length).map((t) => t.name) };
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
  return Object.fromEntries(counts.map((c) => [c.mode, { ...c, ratioOfFull: full === 0 ? 0 : c.openAiTokens / full }])) as Record<Mode, ModeTokens>;
}
