import type { RawTool } from "../upstream/types.js";
import { guardSummary } from "./guard.js";
import { plainTextBlocks } from "./plainTextBlocks.js";
import type { TextBlock } from "./plainTextBlocks.js";
import { splitSentences } from "./splitSentences.js";
import type { SummarizeInput, SummarizeOutcome, Summarizer, ToolSummary } from "./types.js";

/** Default word budget of a tool summary (config `word_budget`). */
export const DEFAULT_WORD_BUDGET = 24;
/** Default word budget of a parameter description. */
export const DEFAULT_PARAM_WORD_BUDGET = 10;
/**
 * Default largest number of words of detail phrases a tool summary adds to its lead sentence
 * (within the word budget). The lead sentence says what a tool does in general terms ("Read the
 * contents of a file"); what tells it apart from its neighbours often sits further down ("first N
 * lines", "multiple sources", "production data"), and a few such words cost far less than a
 * second sentence.
 */
export const DEFAULT_DETAIL_WORDS = 8;

/**
 * Openers that say nothing about the tool ("This tool allows you to", "Use this tool to", "A
 * detailed tool for"): cut so the sentence starts with what the tool does. Order matters: longer
 * forms first.
 */
const OPENERS: RegExp[] = [
  /^(?:this|the) (?:tool|function|endpoint|command|method|operation|action|api)\s+(?:will|can|should|shall|may|is (?:used|designed|meant|intended) (?:to|for)|can be used (?:to|for)|is (?:a way )?(?:to|for)|helps?(?: you| users?| the (?:user|model|assistant|agent))?(?: to)?|(?:allows|lets|enables|permits)(?: you| users?| the (?:user|model|assistant|agent)| an? (?:user|model|assistant|agent))?(?: to)?|provides (?:a way|the ability) to|gives you the ability to)\s+/i,
  /^(?:this|the) (?:tool|function|endpoint|command|method|operation|action)\s+/i,
  /^(?:an?|the)\s+(?:[\w-]+\s+){0,3}?(?:tool|function|utility|helper|endpoint|command)\s+(?:that|which|to|for|used to|used for)\s+/i,
  /^(?:tool|function|utility|helper|endpoint|command)\s+(?:that|which|to|for|used to|used for)\s+/i,
  /^(?:you can )?(?:use|call|invoke|run) (?:this|the|it)(?: (?:tool|function|endpoint|command))? (?:when|if) (?:you|the user|users?) (?:need|needs|want|wants) to\s+/i,
  /^(?:you can )?(?:use|call|invoke|run) (?:this|the|it)(?: (?:tool|function|endpoint|command))? (?:to|for)\s+/i,
  /^(?:allows|lets|enables|permits|helps)(?: you| users?| the (?:user|model|assistant|agent)| an? (?:user|model|assistant|agent))?(?: to)?\s+/i,
  /^(?:can be )?used (?:to|for)\s+/i,
  /^(?:you|users?|the (?:user|model|assistant|agent)) can (?:use (?:this|it) to )?(?=\S)/i,
  // "If that doesn't work, you can submit evidence": the main clause says what the tool does.
  /^(?:if|when|once|unless)\b[^,]{1,60},\s+(?:you|users?) (?:can|may|could)\s+(?:use (?:this|it) to\s+)?/i,
];

/** Sentences that say when to use a tool or instruct the model: only used when nothing else is left. */
const SECOND_TIER: RegExp[] = [
  /^(?:you can )?(?:use|call|invoke|run|prefer) (?:this|it|the tool)\b/i,
  /^(?:when|if|before|after|once|whenever) (?:you|the user|users|a user|an? )/i,
  /^(?:when|if|before|after|once|whenever) .*, (?:use|call|invoke|run) (?:this|it)/i,
  /^(?:you|users?) (?:must|should|can|may|need|will)\b/i,
  /^(?:always|never|do not|don't|please|make sure|ensure|note that|remember|be careful|avoid|only use|important|warning|caution|note|tip|hint|critical)\b/i,
  /^(?:best for|not recommended for|useful for|good for)\b/i,
  /^(?:returns|example|examples|usage|arguments|parameters|supports|output|result|results)\s*:/i,
];

/** Colon-ended lines this short are labels ("Key features:", "Examples:"), not sentences. */
const LABEL_WORDS_MAX = 3;

/** Words that must not end a cut summary. */
const DANGLING = new Set([
  "a", "an", "and", "or", "nor", "but", "the", "of", "to", "with", "without", "for", "in", "into", "on", "onto",
  "by", "from", "as", "at", "via", "that", "which", "who", "whose", "whether", "if", "when", "while", "than",
  "its", "their", "your", "our", "his", "her", "is", "are", "be", "was", "were", "can", "will", "may", "also",
  "such", "like", "including", "includes", "then", "so", "either", "both", "any", "all", "each", "per", "e.g.", "i.e.",
]);

/** Options of {@link extractSummary}. */
export interface ExtractOptions {
  /** Largest number of words kept, detail phrases included. */
  wordBudget: number;
  /**
   * Largest number of words of key phrases from the rest of the description appended to the lead
   * sentence (default 0: the lead sentence alone, as parameter descriptions get).
   */
  detailWords?: number;
  /** Words the reader sees anyway (tool name, parameter names): never spent on detail phrases. */
  knownWords?: readonly string[];
  /** More text to draw detail phrases from after the description (parameter descriptions), weighted lower. */
  extraText?: readonly string[];
}

function words(text: string): string[] {
  return text.split(/\s+/).filter((w) => w.length > 0);
}

function capitalise(text: string): string {
  // The first letter, even behind an opening quote or bracket.
  return text.replace(/^([^\p{L}\p{N}]{0,2})(\p{Ll})/u, (_m, lead: string, letter: string) => lead + letter.toUpperCase());
}

function isMostlyUpperCase(text: string): boolean {
  const letters = text.replace(/[^\p{L}]/gu, "");
  if (letters.length < 12) return false;
  const upper = letters.replace(/[^\p{Lu}]/gu, "").length;
  return upper / letters.length > 0.6;
}

/** Drops a "Notion | " style prefix and boilerplate openers. */
function stripOpeners(sentence: string): string {
  let out = sentence.replace(/^[\w .&-]{1,30} \| (?=\S)/, "");
  out = out.replace(/^(?:description|summary|purpose|overview|tool)\s*:\s+/i, "");
  for (const opener of OPENERS) {
    const next = out.replace(opener, "");
    if (next !== out) {
      out = next;
      break;
    }
  }
  return out.trim();
}

/** A sentence ending in a colon introduces a list: its intro ("... including:") is cut. */
function dropListIntro(sentence: string): string {
  if (!/:\s*$/.test(sentence)) return sentence;
  let out = sentence.replace(/:\s*$/, "");
  out = out.replace(/(?:,?\s+(?:including|includes|include|such as|like|with|for|as follows|the following|following|e\.g\.|i\.e\.|via|by|from|using|of))+$/i, "");
  return out.trim();
}

/** Cuts `text` to `budget` words at a word boundary, without dangling joiners. */
function cutToBudget(text: string, budget: number): { text: string; cut: boolean } {
  const all = words(text);
  if (all.length <= budget) return { text: all.join(" "), cut: false };
  let kept = all.slice(0, budget);
  // A clause boundary close to the budget reads better than a cut mid-clause.
  for (let i = kept.length - 1; i >= Math.ceil(budget * 0.75) - 1; i--) {
    const word = kept[i] ?? "";
    if (/[,;:]$/.test(word) || /[—–]$/.test(word) || kept[i + 1] === "-" || kept[i + 1] === "—") {
      kept = kept.slice(0, i + 1);
      break;
    }
  }
  while (kept.length > 1) {
    const last = (kept[kept.length - 1] ?? "").replace(/[,;:—–-]+$/, "");
    if (last === "" || DANGLING.has(last.toLowerCase())) {
      kept.pop();
      continue;
    }
    kept[kept.length - 1] = last;
    break;
  }
  let out = kept.join(" ");
  // An opening bracket left without its partner is dropped with what follows it.
  const openParen = out.lastIndexOf("(");
  if (openParen > 0 && out.indexOf(")", openParen) === -1) out = out.slice(0, openParen).trim();
  out = out.replace(/[\s,;:(—–-]+$/, "");
  return { text: out, cut: true };
}

interface Candidate {
  text: string;
  tier: 1 | 2;
}

function candidatesOf(blocks: TextBlock[]): Candidate[] {
  const out: Candidate[] = [];
  for (const block of blocks) {
    const sentences = splitSentences(block.text);
    for (const raw of sentences) {
      let sentence = raw.trim();
      if (!/[\p{L}]/u.test(sentence)) continue;
      // A short line ending with a colon is a label ("Key features:", "USE THIS TOOL WHEN:").
      if (/:\s*$/.test(sentence) && (words(sentence).length <= LABEL_WORDS_MAX || isMostlyUpperCase(sentence))) continue;
      const labelled = /^(?:important|note|warning|caution|critical|tip|hint|reminder|nb)\s*[:!-]/i.test(sentence);
      sentence = stripOpeners(dropListIntro(sentence));
      if (words(sentence).length < 2) continue;
      const secondTier =
        labelled ||
        block.kind === "heading" ||
        isMostlyUpperCase(sentence) ||
        SECOND_TIER.some((pattern) => pattern.test(sentence));
      out.push({ text: sentence, tier: secondTier ? 2 : 1 });
    }
  }
  return out;
}

/** Makes `sentence` fit the budget and end cleanly, never longer than `original`. */
function shape(sentence: string, wordBudget: number, original: string): string {
  let text = sentence.replace(/\s+/g, " ").trim();
  // Unbalanced quotes and brackets at the very start or end are markup leftovers.
  text = text.replace(/^[-–—•*:;,.]+\s*/, "");
  // A quote left open at either end is a markup leftover; a balanced one ("navigation") is text.
  // (Single quotes are left alone: apostrophes make counting them meaningless.)
  if (text.split('"').length % 2 === 0) text = text.replace(/^"|"$/, "");
  const { text: fitted, cut } = cutToBudget(text, wordBudget);
  text = capitalise(fitted);
  const limit = original.trim().length;
  if (cut) {
    if (text.length + 1 < limit) text += "…";
  } else if (!/[.!?…]$/.test(text)) {
    text = text.replace(/[,;:]+$/, "");
    // A period only when it does not make the summary longer than the original.
    if (text.length + 1 <= limit || limit === 0) text += ".";
  }
  return text;
}

/**
 * The first real sentence of `description` as a summary within `wordBudget` words: markup, tags,
 * emoji and boilerplate openers removed, first letter capitalised. Returns "" when the description
 * has no usable sentence.
 */
export function extractSummary(description: string, options: ExtractOptions): string {
  if (!description.trim()) return "";
  let candidates = candidatesOf(plainTextBlocks(description));
  // Everything lived inside instruction tags: take their content rather than nothing.
  if (candidates.length === 0) candidates = candidatesOf(plainTextBlocks(description, { keepTagBlocks: true }));
  const best = candidates.find((c) => c.tier === 1) ?? candidates[0];
  if (!best) return "";
  return shape(best.text, options.wordBudget, description);
}

/** Splits an identifier into lower-case words: `get_user_profile`, `getUserProfile`, `API-get-user`. */
function identifierWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[\s_.:/-]+/)
    .filter((w) => w.length > 0)
    .map((w) => (/^[A-Z0-9]{2,}$/.test(w) ? w : w.toLowerCase()));
}

/**
 * A summary made from a tool's title or name when its description gives nothing:
 * `get_user_profile` becomes "Get user profile.". Never empty.
 */
export function summaryFromName(name: string, title?: string): string {
  const source = title?.trim() ? title.trim() : name;
  const parts = /\s/.test(source)
    ? source.split(/\s+/).map((w) => (/^[A-Z0-9]{2,}$/.test(w) ? w : w.toLowerCase()))
    : identifierWords(source);
  const text = parts.join(" ").replace(/[.!?]+$/, "");
  return text ? `${capitalise(text)}.` : "Tool.";
}

/** Removes optional/required markers from a parameter text: the schema says which it is. */
function stripRequirementMarkers(text: string): string {
  return text
    .replace(/\s*\((?:optional|required)\)/gi, "")
    .replace(/^(?:optional|required)\s*[:.,-]\s*/i, "")
    .replace(/,?\s*(?:optional|required)\.?$/i, "")
    .trim();
}

/** Options of {@link ExtractiveSummarizer}. */
export interface ExtractiveSummarizerOptions {
  /** Word budget of a tool summary (default {@link DEFAULT_WORD_BUDGET}). */
  wordBudget?: number;
  /** Word budget of a parameter description (default {@link DEFAULT_PARAM_WORD_BUDGET}). */
  paramWordBudget?: number;
}

/**
 * The offline, deterministic default summarizer: the first real sentence of each description,
 * cleaned and cut to a word budget. It never fails and needs no network, which also makes it the
 * fallback whenever an LLM summarizer fails or writes something the guard rejects.
 */
export class ExtractiveSummarizer implements Summarizer {
  readonly id = "extractive@1";
  readonly promptId = "none";
  /** Batching buys nothing offline; a bound keeps one call's work small. */
  readonly maxBatch = 64;
  private readonly wordBudget: number;
  private readonly paramWordBudget: number;

  constructor(options: ExtractiveSummarizerOptions = {}) {
    this.wordBudget = options.wordBudget ?? DEFAULT_WORD_BUDGET;
    this.paramWordBudget = options.paramWordBudget ?? DEFAULT_PARAM_WORD_BUDGET;
  }

  /** Summarizes one tool synchronously (the catalog can use it for an instant first answer). */
  summarizeTool(tool: RawTool): ToolSummary {
    const title = tool.title ?? (typeof tool.annotations?.title === "string" ? tool.annotations.title : undefined);
    const summary =
      extractSummary(tool.description ?? "", { wordBudget: this.wordBudget }) || summaryFromName(tool.name, title);
    const params: Record<string, string> = {};
    const properties = (tool.inputSchema as RawTool["inputSchema"] | undefined)?.["properties"];
    if (properties && typeof properties === "object" && !Array.isArray(properties)) {
      for (const [name, schema] of Object.entries(properties as Record<string, unknown>)) {
        if (!schema || typeof schema !== "object") continue;
        const description = (schema as Record<string, unknown>)["description"];
        if (typeof description !== "string" || !description.trim()) continue;
        const text = extractSummary(stripRequirementMarkers(description), { wordBudget: this.paramWordBudget });
        const cleaned = stripRequirementMarkers(text);
        if (cleaned && /[\p{L}\p{N}]/u.test(cleaned)) params[name] = cleaned;
      }
    }
    return { summary, params };
  }

  /** {@inheritDoc Summarizer.summarize} */
  async summarize(batch: SummarizeInput[], options?: { signal?: AbortSignal }): Promise<Map<string, SummarizeOutcome>> {
    options?.signal?.throwIfAborted();
    const out = new Map<string, SummarizeOutcome>();
    for (const input of batch) {
      try {
        out.set(input.key, { ok: true, value: this.summarizeTool(input.tool) });
      } catch (err) {
        // A malformed tool (e.g. a non-object inputSchema from a broken server) fails alone.
        out.set(input.key, { ok: false, error: err instanceof Error ? err : new Error(String(err)) });
      }
    }
    return out;
  }
}
