import type { RawTool } from "../model/types.js";
import { guardSummary } from "./guard.js";
import { CatalogVocabulary, contentKeys, distinctClause, MIN_CLAUSE_WORDS, toolTitle } from "./distinctClause.js";
import { capitalise, descriptionCandidates, extractSummary, isSpace, leadCandidate, shape, trimEndChars, words, type Candidate } from "./leadSentence.js";
import type { SummarizeInput, SummarizeOutcome, Summarizer, ToolSummary } from "./types.js";

/** Default word budget of a tool summary (config `word_budget`). */
export const DEFAULT_WORD_BUDGET = 24;
/** Default word budget of a parameter description. */
export const DEFAULT_PARAM_WORD_BUDGET = 10;

/** Splits an identifier into lower-case words: `get_user_profile`, `getUserProfile`, `API-get-user`. */
function identifierWords(name: string): string[] {
  return (
    name
      .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
      // Lookarounds, not `([A-Z]+)([A-Z][a-z])`, which rescanned a long capital run from each capital.
      .replace(/(?<=[A-Z])(?=[A-Z][a-z])/g, " ")
      .split(/[\s_.:/-]+/)
      .filter((w) => w.length > 0)
      .map((w) => (/^[A-Z0-9]{2,}$/.test(w) ? w : w.toLowerCase()))
  );
}

/**
 * A summary made from a tool's title or name when its description gives nothing:
 * `get_user_profile` becomes "Get user profile.". Never empty.
 */
export function summaryFromName(name: string, title?: string): string {
  const source = title?.trim() ? title.trim() : name;
  const parts = /\s/.test(source) ? source.split(/\s+/).map((w) => (/^[A-Z0-9]{2,}$/.test(w) ? w : w.toLowerCase())) : identifierWords(source);
  const text = trimEndChars(parts.join(" "), ".!?");
  return text ? `${capitalise(text)}.` : "Tool.";
}

/** Removes optional/required markers from a parameter text: the schema says which it is. */
function stripRequirementMarkers(text: string): string {
  // `(?<!\s)`: a match starts at the first space of a run only; `\s*` retried from every space of
  // a long run that is not followed by a marker was quadratic.
  let out = text.replace(/(?<!\s)\s*\((?:optional|required)\)/gi, "").replace(/^(?:optional|required)\s*[:.,-]\s*/i, "");
  // A trailing marker with the space and comma before it, cut by hand for the same reason.
  const marker = /(?:optional|required)\.?$/i.exec(out);
  if (marker) {
    let start = marker.index;
    while (start > 0 && isSpace(out.charAt(start - 1))) start--;
    if (out.charAt(start - 1) === ",") start--;
    out = out.slice(0, start);
  }
  return out.trim();
}

/** Options of {@link ExtractiveSummarizer}. */
export interface ExtractiveSummarizerOptions {
  /** Word budget of a tool summary, second clause included (default {@link DEFAULT_WORD_BUDGET}). */
  wordBudget?: number;
  /** Word budget of a parameter description (default {@link DEFAULT_PARAM_WORD_BUDGET}). */
  paramWordBudget?: number;
  /** false: the lead sentence alone, never a second clause (default true). */
  distinctClauses?: boolean;
}

/** What the summarizer works out once per tool before it looks at the neighbours. */
interface Prepared {
  tool: RawTool;
  candidates: Candidate[];
  lead: Candidate | undefined;
  leadText: string;
  /** Keys the reader sees anyway: lead, tool name, title, parameter names. */
  known: Set<string>;
  params: Record<string, string>;
}

/**
 * The offline, deterministic default summarizer. A summary is prose: the first real sentence of
 * the description, cleaned and cut to a word budget at a clause boundary, then, when the budget
 * leaves room, the one clause of the rest of the description that adds the words rarest in the
 * catalog being summarized (what tells the tool from its neighbours), if any adds enough. Rarity is counted over the tools summarized together (a server's
 * tools at discovery), so the choice adapts to catalogs it has never seen instead of to a word
 * list. It never fails and needs no network, which also makes it the fallback whenever an LLM
 * summarizer fails or writes something the guard rejects.
 */
export class ExtractiveSummarizer implements Summarizer {
  /** `@3`: prose summaries (lead plus one distinguishing clause); `summarize warm --stale` redoes `@1`/`@2` entries. */
  readonly id = "extractive@3";
  readonly promptId = "none";
  /** Batching buys nothing offline but neighbours: a bound keeps one call's work small. */
  readonly maxBatch = 64;
  private readonly wordBudget: number;
  private readonly paramWordBudget: number;
  private readonly distinctClauses: boolean;

  constructor(options: ExtractiveSummarizerOptions = {}) {
    this.wordBudget = options.wordBudget ?? DEFAULT_WORD_BUDGET;
    this.paramWordBudget = options.paramWordBudget ?? DEFAULT_PARAM_WORD_BUDGET;
    this.distinctClauses = options.distinctClauses ?? true;
  }

  /**
   * Summarizes one tool synchronously (the catalog can use it for an instant first answer). With
   * `neighbours` (the other tools of its catalog, itself included or not) rarity is counted over
   * them; alone, every content word counts the same.
   */
  summarizeTool(tool: RawTool, neighbours: readonly RawTool[] = []): ToolSummary {
    const catalog = neighbours.includes(tool) ? neighbours : [tool, ...neighbours];
    return this.summarizeCatalog(catalog)[catalog.indexOf(tool)] as ToolSummary;
  }

  /** Summarizes `tools` as one catalog: each summary is chosen against the others. Same order as `tools`. */
  summarizeCatalog(tools: readonly RawTool[]): ToolSummary[] {
    const vocabulary = new CatalogVocabulary(tools);
    const prepared = tools.map((tool) => this.prepare(tool));
    return prepared.map((p) => {
      if (p.lead === undefined || p.leadText === "") return { summary: summaryFromName(p.tool.name, toolTitle(p.tool)), params: p.params };
      if (!this.distinctClauses) return { summary: p.leadText, params: p.params };
      const room = this.wordBudget - words(p.leadText).length;
      if (room < MIN_CLAUSE_WORDS || p.leadText.endsWith("…")) return { summary: p.leadText, params: p.params };
      const clause = distinctClause(p.candidates, p.lead, p.known, vocabulary, room);
      const combined = clause === "" ? p.leadText : `${p.leadText} ${clause}`;
      // Never longer than the description itself, and never a claim the guard refuses (a clause
      // saying "read-only" in a destructive tool's text): the lead alone is then the summary.
      if (combined === p.leadText || combined.length > (p.tool.description ?? "").trim().length) return { summary: p.leadText, params: p.params };
      if (!guardSummary(p.tool, { summary: combined, params: p.params }).ok) return { summary: p.leadText, params: p.params };
      return { summary: combined, params: p.params };
    });
  }

  private prepare(tool: RawTool): Prepared {
    const title = toolTitle(tool);
    const params: Record<string, string> = {};
    const properties = (tool.inputSchema as RawTool["inputSchema"] | undefined)?.["properties"];
    const propertyNames: string[] = [];
    if (properties && typeof properties === "object" && !Array.isArray(properties)) {
      for (const [name, schema] of Object.entries(properties as Record<string, unknown>)) {
        propertyNames.push(name);
        if (!schema || typeof schema !== "object") continue;
        const description = (schema as Record<string, unknown>)["description"];
        if (typeof description !== "string" || !description.trim()) continue;
        const text = extractSummary(stripRequirementMarkers(description), { wordBudget: this.paramWordBudget });
        const cleaned = stripRequirementMarkers(text);
        if (cleaned && /[\p{L}\p{N}]/u.test(cleaned)) params[name] = cleaned;
      }
    }
    const description = tool.description ?? "";
    const candidates = descriptionCandidates(description);
    const lead = leadCandidate(candidates);
    const leadText = lead === undefined ? "" : shape(lead.text, this.wordBudget, description);
    const known = contentKeys(`${leadText} ${tool.name} ${title ?? ""} ${propertyNames.join(" ")}`);
    return { tool, candidates, lead, leadText, known, params };
  }

  /** {@inheritDoc Summarizer.summarize} */
  async summarize(batch: SummarizeInput[], options?: { signal?: AbortSignal }): Promise<Map<string, SummarizeOutcome>> {
    options?.signal?.throwIfAborted();
    const out = new Map<string, SummarizeOutcome>();
    // The batch is one server's tools: each summary is chosen against its neighbours.
    let summaries: ToolSummary[] | undefined;
    try {
      summaries = this.summarizeCatalog(batch.map((input) => input.tool));
    } catch {
      summaries = undefined; // a malformed tool: each is summarized alone below, so it fails alone
    }
    batch.forEach((input, i) => {
      const ready = summaries?.[i];
      if (ready !== undefined) {
        out.set(input.key, { ok: true, value: ready });
        return;
      }
      try {
        out.set(input.key, { ok: true, value: this.summarizeCatalog([input.tool])[0] as ToolSummary });
      } catch (err) {
        // A malformed tool (e.g. a non-object inputSchema from a broken server) fails alone.
        out.set(input.key, { ok: false, error: err instanceof Error ? err : new Error(String(err)) });
      }
    });
    return out;
  }
}
