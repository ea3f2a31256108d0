import { plainTextBlocks } from "./plainTextBlocks.js";
import type { TextBlock } from "./plainTextBlocks.js";
import { splitSentences } from "./splitSentences.js";

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
  "a",
  "an",
  "and",
  "or",
  "nor",
  "but",
  "the",
  "of",
  "to",
  "with",
  "without",
  "for",
  "in",
  "into",
  "on",
  "onto",
  "by",
  "from",
  "as",
  "at",
  "via",
  "that",
  "which",
  "who",
  "whose",
  "whether",
  "if",
  "when",
  "while",
  "than",
  "its",
  "their",
  "your",
  "our",
  "his",
  "her",
  "is",
  "are",
  "be",
  "was",
  "were",
  "can",
  "will",
  "may",
  "also",
  "such",
  "like",
  "including",
  "includes",
  "then",
  "so",
  "either",
  "both",
  "any",
  "all",
  "each",
  "per",
  "e.g.",
  "i.e.",
]);

/** Options of {@link extractSummary}. */
export interface ExtractOptions {
  /** Largest number of words kept. */
  wordBudget: number;
}

export function words(text: string): string[] {
  return text.split(/\s+/).filter((w) => w.length > 0);
}

export function capitalise(text: string): string {
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

/** Words that end a list's intro ("... including:"), longest first so "the following" beats "following". */
const LIST_INTRO_WORDS = [
  "the following",
  "as follows",
  "including",
  "following",
  "includes",
  "include",
  "such as",
  "using",
  "like",
  "with",
  "from",
  "e.g.",
  "i.e.",
  "for",
  "via",
  "by",
  "of",
];

/**
 * Removes trailing characters found in `chars`, and white space too with `spaces` (what
 * `/[chars]+$/` did, but scanning from the end: the regex retried from every character of a long
 * run that does not reach the end).
 */
export function trimEndChars(text: string, chars: string, spaces = false): string {
  let end = text.length;
  while (end > 0 && (chars.includes(text.charAt(end - 1)) || (spaces && isSpace(text.charAt(end - 1))))) end--;
  return text.slice(0, end);
}

export function isSpace(char: string): boolean {
  return /\s/.test(char);
}

/** A sentence ending in a colon introduces a list: its intro ("... including:") is cut. */
function dropListIntro(sentence: string): string {
  if (!/:\s*$/.test(sentence)) return sentence;
  let out = sentence.replace(/:\s*$/, "");
  // Joiners (each after white space and an optional comma) cut from the end one by one: as one
  // repeated group anchored at `$` the regex was retried from every joiner of a long chain.
  let end = out.length;
  for (;;) {
    const lower = out.slice(Math.max(0, end - 16), end).toLowerCase();
    const word = LIST_INTRO_WORDS.find((w) => lower.endsWith(w) && isSpace(out.charAt(end - w.length - 1)));
    if (word === undefined) break;
    end -= word.length;
    while (end > 0 && isSpace(out.charAt(end - 1))) end--;
    if (out.charAt(end - 1) === ",") end--;
  }
  out = out.slice(0, end);
  return out.trim();
}

/** Cuts `text` to `budget` words at a word boundary, without dangling joiners. */
function cutToBudget(text: string, budget: number): { text: string; cut: boolean } {
  const all = words(text);
  if (all.length <= budget) return { text: all.join(" "), cut: false };
  let kept = all.slice(0, budget);
  // A clause boundary in the second half of the budget reads better than a cut mid-clause.
  for (let i = kept.length - 1; i >= Math.ceil(budget * 0.5) - 1; i--) {
    const word = kept[i] ?? "";
    if (/[,;:]$/.test(word) || /[—–]$/.test(word) || kept[i + 1] === "-" || kept[i + 1] === "—") {
      kept = kept.slice(0, i + 1);
      break;
    }
  }
  return { text: joinCut(kept), cut: true };
}

/**
 * The words kept by a cut, joined: joiners and punctuation a cut leaves at the end dropped ("...
 * files and", "... with:"), and an opening bracket left without its partner dropped with what
 * follows it.
 */
export function joinCut(words: readonly string[]): string {
  const kept = [...words];
  while (kept.length > 1) {
    const last = trimEndChars(kept[kept.length - 1] ?? "", ",;:—–-");
    if (last === "" || DANGLING.has(last.toLowerCase())) {
      kept.pop();
      continue;
    }
    kept[kept.length - 1] = last;
    break;
  }
  let out = kept.join(" ");
  const openParen = out.lastIndexOf("(");
  if (openParen > 0 && out.indexOf(")", openParen) === -1) out = out.slice(0, openParen).trim();
  return trimEndChars(out, ",;:(—–-", true);
}

export interface Candidate {
  text: string;
  tier: 1 | 2;
  /** A warning or an instruction to the model ("Never...", "Be careful..."): never a second clause. */
  caution: boolean;
  /** Kind of block it came from: list items and headings are fragments, not prose. */
  kind: TextBlock["kind"];
  /** It ended in a colon and lost its list intro ("... looking for:"): whole only as a lead. */
  introducesList: boolean;
}

/** Sentences that warn or instruct rather than describe, and error lines ("400: Bad request"). */
const CAUTION =
  /^(?:always|never|do not|don't|must not|please|make sure|ensure|note that|remember|be careful|careful|avoid|only use|important|warning|caution|note|tip|hint|critical|reminder|if (?:you|the|this|it|that)|on (?:error|failure)|fails?|failed|errors?|[1-5]\d\d\b)\b/i;

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
      const introducesList = /:\s*$/.test(sentence);
      sentence = stripOpeners(dropListIntro(sentence));
      if (words(sentence).length < 2) continue;
      const secondTier = labelled || block.kind === "heading" || isMostlyUpperCase(sentence) || SECOND_TIER.some((pattern) => pattern.test(sentence));
      const caution = labelled || isMostlyUpperCase(sentence) || CAUTION.test(sentence);
      out.push({ text: sentence, tier: secondTier ? 2 : 1, caution, kind: block.kind, introducesList });
    }
  }
  return out;
}

/** Makes `sentence` fit the budget and end cleanly, never longer than `original`. */
export function shape(sentence: string, wordBudget: number, original: string): string {
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
    text = trimEndChars(text, ",;:");
    // A period only when it does not make the summary longer than the original.
    if (text.length + 1 <= limit || limit === 0) text += ".";
  }
  return text;
}

/** The usable sentences of a description, instruction tag blocks kept only when nothing else is left. */
export function descriptionCandidates(description: string): Candidate[] {
  if (!description.trim()) return [];
  const plain = candidatesOf(plainTextBlocks(description));
  // Everything lived inside instruction tags: take their content rather than nothing.
  return plain.length > 0 ? plain : candidatesOf(plainTextBlocks(description, { keepTagBlocks: true }));
}

/** The candidate the summary leads with: the first descriptive sentence, else the first of any kind. */
export function leadCandidate(candidates: readonly Candidate[]): Candidate | undefined {
  return candidates.find((c) => c.tier === 1) ?? candidates[0];
}

/**
 * The first real sentence of `description` as a summary within `wordBudget` words: markup, tags,
 * emoji and boilerplate openers removed, first letter capitalised. Returns "" when the description
 * has no usable sentence.
 */
export function extractSummary(description: string, options: ExtractOptions): string {
  const best = leadCandidate(descriptionCandidates(description));
  return best === undefined ? "" : shape(best.text, options.wordBudget, description);
}
