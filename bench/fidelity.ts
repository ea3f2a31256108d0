import { renderTools } from "../src/catalog/renderTools.js";
import { SearchIndex } from "../src/catalog/searchIndex.js";
import { resolveLocalRef } from "../src/catalog/compactSchema.js";
import type { CatalogTool, ListedTool, Mode } from "../src/catalog/types.js";
import { MODES } from "../src/config/schema.js";
import type { CorpusQuery } from "./corpus.js";
import { isObject } from "../src/model/json.js";

/** Enums with at most this many values must survive compaction whole. */
const SHORT_ENUM = 10;
/** How many structural failures the report names. */
const LISTED_FAILURES = 25;

/** Selection accuracy of one mode. */
export interface ModeAccuracy {
  mode: Mode;
  top1: number;
  top5: number;
  /** Queries whose right tool was ranked first / within the first five. */
  top1Hits: number;
  top5Hits: number;
}

/** One tool whose compact view lost something. */
export interface StructuralFailure {
  tool: string;
  lost: string[];
}

/** Result of {@link runFidelity}. */
export interface FidelityResult {
  note: string;
  queries: number;
  tools: number;
  modes: ModeAccuracy[];
  /** compact's accuracy over full's. */
  compactOverFull: { top1: number; top5: number };
  structural: {
    tools: number;
    /** Share of tools passing every check below. */
    share: number;
    requiredKept: { checked: number; kept: number };
    shortEnumsKept: { checked: number; kept: number };
    destructiveHintKept: { checked: number; kept: number };
    failures: StructuralFailure[];
  };
}

/** Options of {@link runFidelity}. */
export interface FidelityOptions {
  /** Corpus tools with the summaries they are served with. */
  tools: readonly CatalogTool[];
  queries: readonly CorpusQuery[];
}

function accuracy(tools: readonly CatalogTool[], queries: readonly CorpusQuery[], mode: Mode): ModeAccuracy {
  const index = new SearchIndex(tools, { mode });
  let top1Hits = 0;
  let top5Hits = 0;
  for (const q of queries) {
    const right = new Set([q.expect, ...q.also_ok]);
    const ranked = index.search(q.query, 5).map((r) => `${r.server}:${r.tool}`);
    if (ranked[0] !== undefined && right.has(ranked[0])) top1Hits += 1;
    if (ranked.some((k) => right.has(k))) top5Hits += 1;
  }
  const n = queries.length || 1;
  return { mode, top1: top1Hits / n, top5: top5Hits / n, top1Hits, top5Hits };
}

/** The enums (at most {@link SHORT_ENUM} values) a top-level property of the original schema declares. */
function shortEnums(property: unknown, root: unknown, depth = 0): unknown[][] {
  if (!isObject(property) || depth > 3) return [];
  const node = typeof property.$ref === "string" ? resolveLocalRef(root, property.$ref) : property;
  if (!isObject(node)) return [];
  const out: unknown[][] = [];
  if (Array.isArray(node.enum) && node.enum.length <= SHORT_ENUM) out.push(node.enum);
  if (isObject(node.items)) out.push(...shortEnums(node.items, root, depth + 1));
  for (const key of ["anyOf", "oneOf"]) {
    const branches = node[key];
    if (!Array.isArray(branches)) continue;
    const consts = branches.filter((b) => isObject(b) && "const" in b).map((b) => (b as { const: unknown }).const);
    if (consts.length > 0 && consts.length === branches.length && consts.length <= SHORT_ENUM) out.push(consts);
    for (const b of branches) if (!(isObject(b) && "const" in b)) out.push(...shortEnums(b, root, depth + 1));
  }
  return out;
}

/** True when `name` shows in the compact view as a required parameter (schema `required`, or unmarked in the signature). */
function keepsRequired(view: ListedTool, name: string): boolean {
  const required = view.inputSchema.required;
  if (Array.isArray(required) && required.includes(name)) return true;
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(?:^|[({,\\s])(?:${escaped}|"${escaped}")(?=[:,)])`, "m").test(view.description ?? "");
}

/** True when every value of `values` can be read off the compact view (its schema or its signature). */
function keepsEnum(view: ListedTool, values: readonly unknown[]): boolean {
  const schemaText = JSON.stringify(view.inputSchema);
  const description = view.description ?? "";
  return values.every((v) => {
    const json = JSON.stringify(v);
    if (schemaText.includes(json)) return true;
    return description.includes(typeof v === "string" ? v : json);
  });
}

function structural(tools: readonly CatalogTool[]): FidelityResult["structural"] {
  const views = new Map(renderTools(tools, "compact").map((v) => [v.name, v]));
  const result: FidelityResult["structural"] = {
    tools: tools.length,
    share: 0,
    requiredKept: { checked: 0, kept: 0 },
    shortEnumsKept: { checked: 0, kept: 0 },
    destructiveHintKept: { checked: 0, kept: 0 },
    failures: [],
  };
  let passing = 0;
  for (const tool of tools) {
    const view = views.get(tool.name);
    const lost: string[] = [];
    if (view === undefined) {
      lost.push("not listed");
    } else {
      const schema = tool.tool.inputSchema;
      const required = Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : [];
      for (const name of required) {
        result.requiredKept.checked += 1;
        if (keepsRequired(view, name)) result.requiredKept.kept += 1;
        else lost.push(`required ${name}`);
      }
      const properties = isObject(schema.properties) ? schema.properties : {};
      for (const [name, property] of Object.entries(properties)) {
        for (const values of shortEnums(property, schema)) {
          result.shortEnumsKept.checked += 1;
          if (keepsEnum(view, values)) result.shortEnumsKept.kept += 1;
          else lost.push(`enum of ${name} (${values.map((v) => JSON.stringify(v)).join("|")})`);
        }
      }
      if (tool.tool.annotations?.destructiveHint === true) {
        result.destructiveHintKept.checked += 1;
        if (isObject(view.annotations) && view.annotations.destructiveHint === true) result.destructiveHintKept.kept += 1;
        else lost.push("destructiveHint");
      }
    }
    if (lost.length === 0) passing += 1;
    else if (result.failures.length < LISTED_FAILURES) result.failures.push({ tool: tool.name, lost });
  }
  result.share = tools.length === 0 ? 1 : passing / tools.length;
  return result;
}

/**
 * Selection fidelity: every labelled query ranks every corpus tool (pooled) by BM25 over what the
 * model sees of each tool in a mode, and scores top-1/top-5 against `expect`/`also_ok`; plus the
 * structural checks of the compact view (required names, short enums, destructive hints).
 */
export function runFidelity(options: FidelityOptions): FidelityResult {
  const modes = MODES.map((m) => accuracy(options.tools, options.queries, m));
  const full = modes.find((m) => m.mode === "full");
  const compact = modes.find((m) => m.mode === "compact");
  const ratio = (a: number | undefined, b: number | undefined): number => (a === undefined || b === undefined || b === 0 ? Number.NaN : a / b);
  return {
    note:
      "BM25 ranking is a proxy for model tool selection: it measures whether a view keeps the words that tell tools apart, not what a model would pick. " +
      "lazy ranks as search_tools does: BM25 with field weights over every word a tool says (name, title, summary, description, parameter names and descriptions), exact and suffix name matches first.",
    queries: options.queries.length,
    tools: options.tools.length,
    modes,
    compactOverFull: { top1: ratio(compact?.top1, full?.top1), top5: ratio(compact?.top5, full?.top5) },
    structural: structural(options.tools),
  };
}
