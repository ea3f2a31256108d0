import { briefDescription, parameterList } from "./signature.js";
import type { CatalogTool, Mode } from "./types.js";
import { isObject } from "../model/json.js";

/** BM25 term-frequency saturation. */
const K1 = 1.2;
/** BM25 length normalization. */
const B = 0.75;
/** Largest `limit` a search honours: more results than this stop being a shortlist. */
export const MAX_SEARCH_LIMIT = 50;
/** `limit` when the caller gives none. */
export const DEFAULT_SEARCH_LIMIT = 8;

/** Words too common in tool text to tell tools apart. Small on purpose: a query is short. */
const STOPWORDS = new Set(
  "a an and are as at be by can do for from has have how i in into is it its me my of on or our please show so that the their then there these this to up use used using was we what when where which will with you your".split(
    " ",
  ),
);

/**
 * Light deterministic stemmer: folds plurals and the common verb endings so `issues`/`issue`,
 * `listing`/`list` and `created`/`create` meet. Not Porter: a tool index is small and its vocabulary
 * technical, so a few suffix rules get most of the benefit without surprising conflations.
 */
export function stem(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word;
  if (word.endsWith("ies") && word.length > 4) return `${word.slice(0, -3)}y`;
  if (/(?:ss|sh|ch|x|z)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith("ing") && word.length > 5) return undouble(word.slice(0, -3));
  if (word.endsWith("ed") && word.length > 4) return undouble(word.slice(0, -2));
  if (word.endsWith("s") && !word.endsWith("ss") && !word.endsWith("us") && !word.endsWith("is")) return word.slice(0, -1);
  return word;
}

/** Undoes the consonant a suffix doubled: `running` -> `run`, `mapped` -> `map`. */
function undouble(base: string): string {
  if (/([b-df-hj-np-tv-z])\1$/.test(base) && !/(?:ll|ss|zz)$/.test(base)) return base.slice(0, -1);
  return base;
}

/** Drops a trailing `e` so `create`, `created` and `creating` share one stem. */
function foldE(word: string): string {
  return word.length > 4 && word.endsWith("e") ? word.slice(0, -1) : word;
}

/**
 * Splits text into index terms: camelCase and acronym boundaries are broken, everything is
 * lowercased, non-alphanumerics separate words (so snake_case and kebab-case split too), stopwords
 * go, and each word is stemmed.
 */
export function tokenize(text: string): string[] {
  const spaced = text.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2");
  const out: string[] = [];
  for (const word of spaced.toLowerCase().split(/[^a-z0-9]+/)) {
    if (word === "" || STOPWORDS.has(word)) continue;
    out.push(foldE(stem(word)));
  }
  return out;
}

/** One search hit. */
export interface SearchResult {
  /** Exposed name (what `call_tool` and direct calls take). */
  name: string;
  server: string;
  /** The upstream's own tool name. */
  tool: string;
  score: number;
  /** Cached summary, or a one-sentence cut of the original description. */
  summary: string;
  /** One-line signature under the exposed name. */
  signature: string;
}

interface IndexedDoc {
  result: Omit<SearchResult, "score">;
  termCounts: Map<string, number>;
  length: number;
  /** Exposed and own name, lower case with every non-alphanumeric run as `_`: for name matches. */
  names: string[];
}

/** Longest query, in words, still read as a tool's name for a suffix match. */
const MAX_NAME_QUERY_WORDS = 4;

/** `Create-Issue ` -> `create_issue`: how names and queries are compared for a name match. */
function nameKey(text: string): string {
  return text
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
}

/** Options of {@link SearchIndex}. */
export interface SearchIndexOptions {
  /**
   * Which text to index (default `lazy`, what `search_tools` answers from). `lazy` indexes
   * everything a tool says, weighted by field (see {@link LAZY_FIELD_WEIGHTS}): indexing costs the
   * model nothing, so search finds more than any list shows. `full` indexes the original
   * description and property descriptions, `summary` the summary and the param summaries,
   * `compact` the summary and the parameter line, which is all those modes show: the fidelity
   * benchmark compares them.
   */
  mode?: Mode;
}

/**
 * How much a word counts in each field of `search_tools`' index (BM25F: term frequencies and
 * lengths weighted per field). The name and title say what the tool is in a few words, the summary
 * is the description's lead; the rest of the description and the parameter descriptions say much
 * more, and much that is incidental, so their words count for less.
 */
export const LAZY_FIELD_WEIGHTS = {
  name: 3,
  title: 2,
  summary: 1.5,
  description: 1,
  parameterNames: 1.5,
  parameterDescriptions: 0.5,
  server: 1,
} as const;

function propertyNames(schema: unknown): string[] {
  if (typeof schema !== "object" || schema === null) return [];
  const props = (schema as { properties?: unknown }).properties;
  return isObject(props) ? Object.keys(props) : [];
}

function propertyDescriptions(schema: unknown): string[] {
  if (typeof schema !== "object" || schema === null) return [];
  const props = (schema as { properties?: unknown }).properties;
  if (typeof props !== "object" || props === null) return [];
  return Object.values(props as Record<string, unknown>)
    .map((p) => (typeof p === "object" && p !== null ? (p as { description?: unknown }).description : undefined))
    .filter((d): d is string => typeof d === "string");
}

/**
 * BM25 (k1 1.2, b 0.75) over each tool's text in the chosen mode (see {@link SearchIndexOptions}),
 * with per-field weights in `lazy`. A query that names a tool (its exposed name, its own name, or
 * the end of its exposed name at a word boundary: `create_issue` for `github_create_issue`) puts
 * that tool first, whatever the words score. Deterministic: equal scores are ordered by exposed
 * name. Pure and in-memory; rebuild it when the catalog changes.
 */
export class SearchIndex {
  private readonly docs: IndexedDoc[] = [];
  private readonly docFreq = new Map<string, number>();
  private readonly avgLength: number;

  constructor(tools: readonly CatalogTool[], options: SearchIndexOptions = {}) {
    const mode = options.mode ?? "lazy";
    for (const tool of tools) {
      const params = parameterList(tool.tool.inputSchema, { typedStrings: true, defaults: true });
      const signature = `${tool.name}${params}`;
      const summary = tool.summary?.summary ?? briefDescription(tool.tool.description);
      const fields: Array<[string, number]> = [];
      if (mode === "lazy") {
        const w = LAZY_FIELD_WEIGHTS;
        fields.push(
          [tool.tool.name, w.name],
          [tool.server, w.server],
          [tool.tool.title ?? "", w.title],
          [summary, w.summary],
          [tool.tool.description ?? "", w.description],
          [propertyNames(tool.tool.inputSchema).join(" "), w.parameterNames],
          [propertyDescriptions(tool.tool.inputSchema).join(" "), w.parameterDescriptions],
        );
      } else {
        const parts: string[] = [tool.tool.name, tool.tool.name, tool.server, signature];
        if (mode === "full") {
          parts.push(tool.tool.title ?? "", tool.tool.description ?? "", ...propertyDescriptions(tool.tool.inputSchema));
        } else if (mode === "summary") {
          parts.push(tool.tool.title ?? "", tool.summary?.summary ?? tool.tool.description ?? "", ...Object.values(tool.summary?.params ?? {}));
        } else {
          parts.push(summary);
        }
        fields.push([parts.join(" "), 1]);
      }
      const termCounts = new Map<string, number>();
      let length = 0;
      for (const [text, weight] of fields) {
        for (const term of tokenize(text)) {
          termCounts.set(term, (termCounts.get(term) ?? 0) + weight);
          length += weight;
        }
      }
      for (const term of termCounts.keys()) this.docFreq.set(term, (this.docFreq.get(term) ?? 0) + 1);
      this.docs.push({
        result: { name: tool.name, server: tool.server, tool: tool.tool.name, summary, signature },
        termCounts,
        length,
        names: [nameKey(tool.name), nameKey(tool.tool.name)],
      });
    }
    this.avgLength = this.docs.length === 0 ? 0 : this.docs.reduce((sum, d) => sum + d.length, 0) / this.docs.length;
  }

  /** Number of indexed tools. */
  get size(): number {
    return this.docs.length;
  }

  /**
   * The best `limit` tools for `query` (clamped to 1..{@link MAX_SEARCH_LIMIT}), best first; only
   * tools that share at least one term with the query.
   */
  search(query: string, limit: number = DEFAULT_SEARCH_LIMIT): SearchResult[] {
    const wanted = Number.isFinite(limit) ? Math.min(Math.max(Math.trunc(limit), 1), MAX_SEARCH_LIMIT) : DEFAULT_SEARCH_LIMIT;
    const terms = [...new Set(tokenize(query))];
    const named = this.nameMatches(query);
    if ((terms.length === 0 && named.length === 0) || this.docs.length === 0) return [];
    const n = this.docs.length;
    const scored: SearchResult[] = [];
    for (const doc of this.docs) {
      let score = 0;
      for (const term of terms) {
        const tf = doc.termCounts.get(term);
        if (tf === undefined) continue;
        const df = this.docFreq.get(term) ?? 0;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        score += (idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * doc.length) / (this.avgLength || 1)));
      }
      if (score > 0) scored.push({ ...doc.result, score });
    }
    scored.sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (named.length === 0) return scored.slice(0, wanted);
    // Named tools first, exact before suffix matches, each scored above everything after it.
    const top = scored[0]?.score ?? 0;
    const first = named.map((doc, i) => ({ ...doc.result, score: top + named.length - i }));
    const firstNames = new Set(first.map((r) => r.name));
    return [...first, ...scored.filter((r) => !firstNames.has(r.name))].slice(0, wanted);
  }

  /**
   * Tools the query names: exact matches of the exposed or own name first, then exposed names
   * that end with the query at a word boundary (`create_issue` finds `github_create_issue` and
   * `gitlab_create_issue`), each group in name order. Case, dashes and spaces do not matter.
   */
  private nameMatches(query: string): IndexedDoc[] {
    const key = nameKey(query);
    if (key === "") return [];
    const exact: IndexedDoc[] = [];
    const suffix: IndexedDoc[] = [];
    // A suffix match needs a name of two words or more (`create_issue`, "create issue"): one
    // word ("list") ends too many names to mean any of them.
    const asSuffix = key.includes("_") && query.trim().split(/\s+/).length <= MAX_NAME_QUERY_WORDS;
    for (const doc of this.docs) {
      if (doc.names.includes(key)) exact.push(doc);
      else if (asSuffix && doc.names.some((name) => name.endsWith(`_${key}`))) suffix.push(doc);
    }
    const byName = (a: IndexedDoc, b: IndexedDoc): number => (a.result.name < b.result.name ? -1 : a.result.name > b.result.name ? 1 : 0);
    return [...exact.sort(byName), ...suffix.sort(byName)];
  }
}
