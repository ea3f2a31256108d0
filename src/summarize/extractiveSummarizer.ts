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
export const DEFAULT_DETAIL_WORDS = 6;

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

/** Words that end a list's intro ("... including:"), longest first so "the following" beats "following". */
const LIST_INTRO_WORDS = [
  "the following", "as follows", "including", "following", "includes", "include", "such as", "using", "like",
  "with", "from", "e.g.", "i.e.", "for", "via", "by", "of",
];

/**
 * Removes trailing characters found in `chars`, and white space too with `spaces` (what
 * `/[chars]+$/` did, but scanning from the end: the regex retried from every character of a long
 * run that does not reach the end).
 */
function trimEndChars(text: string, chars: string, spaces = false): string {
  let end = text.length;
  while (end > 0 && (chars.includes(text.charAt(end - 1)) || (spaces && isSpace(text.charAt(end - 1))))) end--;
  return text.slice(0, end);
}

function isSpace(char: string): boolean {
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
  // A clause boundary close to the budget reads better than a cut mid-clause.
  for (let i = kept.length - 1; i >= Math.ceil(budget * 0.75) - 1; i--) {
    const word = kept[i] ?? "";
    if (/[,;:]$/.test(word) || /[—–]$/.test(word) || kept[i + 1] === "-" || kept[i + 1] === "—") {
      kept = kept.slice(0, i + 1);
      break;
    }
  }
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
  // An opening bracket left without its partner is dropped with what follows it.
  const openParen = out.lastIndexOf("(");
  if (openParen > 0 && out.indexOf(")", openParen) === -1) out = out.slice(0, openParen).trim();
  out = trimEndChars(out, ",;:(—–-", true);
  return { text: out, cut: true };
}

interface Candidate {
  text: string;
  tier: 1 | 2;
  /** A warning or an instruction to the model ("Never...", "Be careful..."): a poor source of detail words. */
  caution: boolean;
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
      sentence = stripOpeners(dropListIntro(sentence));
      if (words(sentence).length < 2) continue;
      const secondTier =
        labelled ||
        block.kind === "heading" ||
        isMostlyUpperCase(sentence) ||
        SECOND_TIER.some((pattern) => pattern.test(sentence));
      const caution = labelled || isMostlyUpperCase(sentence) || CAUTION.test(sentence);
      out.push({ text: sentence, tier: secondTier ? 2 : 1, caution });
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
    text = trimEndChars(text, ",;:");
    // A period only when it does not make the summary longer than the original.
    if (text.length + 1 <= limit || limit === 0) text += ".";
  }
  return text;
}

/**
 * The first real sentence of `description` as a summary within `wordBudget` words: markup, tags,
 * emoji and boilerplate openers removed, first letter capitalised. With `detailWords`, key phrases
 * from the rest of the description follow it (see {@link detailPhrases}). Returns "" when the
 * description has no usable sentence.
 */
export function extractSummary(description: string, options: ExtractOptions): string {
  if (!description.trim()) return "";
  const plain = candidatesOf(plainTextBlocks(description));
  // Everything lived inside instruction tags: take their content rather than nothing.
  const candidates = plain.length > 0 ? plain : candidatesOf(plainTextBlocks(description, { keepTagBlocks: true }));
  const best = candidates.find((c) => c.tier === 1) ?? candidates[0];
  if (!best) return "";
  const detailWords = Math.max(0, Math.min(options.detailWords ?? 0, options.wordBudget - 2));
  if (detailWords === 0) return shape(best.text, options.wordBudget, description);
  const lead = shape(best.text, options.wordBudget, description);
  const room = Math.min(detailWords, options.wordBudget - words(lead).length);
  if (room <= 0) return lead;
  // Instruction blocks (`<use_case>`, `<examples>`) were dropped from the lead's candidates; as a
  // source of words they say what a user asks for, which is what tells tools apart.
  const tagged = plain.length > 0 ? candidatesOf(plainTextBlocks(description, { keepTagBlocks: true })) : [];
  const sources: DetailSource[] = [
    ...candidates
      .filter((c) => c !== best)
      .map((c) => ({ text: c.text, weight: c.caution ? CAUTION_WEIGHT : c.tier === 1 ? 1 : SECOND_TIER_WEIGHT })),
    ...tagged.filter((c) => !candidates.some((p) => p.text === c.text)).map((c) => ({ text: c.text, weight: TAGGED_WEIGHT })),
    ...(options.extraText ?? []).map((text) => ({ text, weight: EXTRA_WEIGHT })),
  ];
  const details = detailPhrases(sources, [lead, ...(options.knownWords ?? [])], room);
  if (details === "") return lead;
  const combined = `${lead} ${details}`;
  return combined.length <= description.trim().length ? combined : lead;
}

/** Weight of words from "use this when" sentences and other second-tier sentences. */
const SECOND_TIER_WEIGHT = 1.2;
/** Weight of words from warnings and instructions to the model. */
const CAUTION_WEIGHT = 0.3;
/** Weight of words found only inside instruction tag blocks. */
const TAGGED_WEIGHT = 0.6;
/** Weight of words from parameter descriptions. */
const EXTRA_WEIGHT = 0.5;
/** How fast a sentence's words lose weight with its position: the n-th counts 1 / (1 + n * decay). */
const POSITION_DECAY = 0.1;
/**
 * Least score per word a detail phrase needs: a word said once, late, in a warning or a parameter
 * description costs tokens in every listing and rarely tells tools apart.
 */
const MIN_DETAIL_SCORE = 0.5;
/** Longest detail phrase, in words: longer runs are split. */
const MAX_PHRASE_WORDS = 3;

/** A text the detail phrases may come from, with how much its words count. */
interface DetailSource {
  text: string;
  weight: number;
}

/**
 * Words that separate key phrases and never count as detail: function words, and the vocabulary
 * every tool description shares (tool, returns, specified, optional, user...), which tells no two
 * tools apart. Filler adjectives (detailed, powerful, various) are here too.
 */
const PHRASE_STOPWORDS = new Set(
  (
    "a about above after again against all also always am an and any are as at be because been before being below " +
    "between both but by can cannot could did do does doing done down during each either else etc even ever every " +
    "few for from further had has have having he her here hers him his how however i if in into is it its itself " +
    "just let lets may me might more most much must my neither no nor not now of off on once one only onto or other " +
    "otherwise our ours out over own per please rather same shall she should since so some such than that the their " +
    "them then there these they this those though through thus to too under unless until up upon us use used uses " +
    "using very via was we well were what whatever when whenever where whether which while who whom whose why will " +
    "with within without would yes yet you your yours " +
    // tool-description boilerplate
    "tool tools function functions call calls calling called invoke endpoint api method operation action server mcp " +
    "allow allows allowed allowing enable enables provide provides provided providing return returns returned " +
    "returning get gets getting give gives take takes make makes need needs needed want wants like including " +
    "include includes included e.g i.e eg ie example examples specified specify specific given optional optionally " +
    "required parameter parameters param params argument arguments arg args default defaults value values set " +
    "user users model assistant agent llm ai request requests response responses result results field fields " +
    "see note important always never recommended prefer preferred useful helpful best good better ensure sure " +
    "instead already available currently either new existing based following follows below above etc first-class " +
    // filler adjectives and adverbs
    "support supports supported supporting detailed comprehensive various powerful advanced clean ready reliable fast fastest simple easy easily efficient " +
    "efficiently quickly automatically directly actually really highly fully exactly properly correctly appropriate " +
    "relevant corresponding respective respectively certain particular actual additional extra whole entire full " +
    // counts and JSON type names, as argument lists spell them ("two arguments: name (str)")
    "two three four five six seven eight nine ten str string strings int integer integers number numbers bool " +
    "boolean float dict array arrays object objects null true false " +
    // words the guard reads as a safety claim
    "safe safely harmless"
  ).split(" "),
);

/** A word as compared for novelty: lower case, plural and common verb endings folded. */
function wordKey(word: string): string {
  let w = word.toLowerCase().replace(/['’]s$/, "");
  if (w.length > 4 && w.endsWith("ies")) w = `${w.slice(0, -3)}y`;
  else if (w.length > 4 && /(?:ss|sh|ch|x|z)es$/.test(w)) w = w.slice(0, -2);
  else if (w.length > 5 && w.endsWith("ing")) w = w.slice(0, -3);
  else if (w.length > 4 && w.endsWith("ed")) w = w.slice(0, -2);
  else if (w.length > 3 && w.endsWith("s") && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (/([b-df-hj-np-tv-z])\1$/.test(w) && !/(?:ll|ss|zz)$/.test(w)) w = w.slice(0, -1);
  if (w.length > 4 && w.endsWith("e")) w = w.slice(0, -1);
  return w;
}

/** Keys of every word of `text`, identifiers split (`connectionString` gives connection, string). */
function keysOf(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    // Lookarounds, not `([A-Z]+)([A-Z][a-z])`, which rescanned a long capital run from each capital.
    .replace(/(?<=[A-Z])(?=[A-Z][a-z])/g, " ")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0)
    .map(wordKey);
}

/** `part` without leading and trailing characters that are neither letters nor digits, scanned by hand. */
function trimNonWord(part: string): string {
  const isWordChar = (char: string): boolean => /[\p{L}\p{N}]/u.test(char);
  const chars = [...part];
  let start = 0;
  let end = chars.length;
  while (start < end && !isWordChar(chars[start] ?? "")) start++;
  while (end > start && !isWordChar(chars[end - 1] ?? "")) end--;
  return chars.slice(start, end).join("");
}

/** True for a word that may carry meaning in a detail phrase. */
function isContentWord(word: string): boolean {
  if (PHRASE_STOPWORDS.has(word.toLowerCase())) return false;
  // Contractions and possessives ("you're", "target's") are grammar, not subject matter.
  if (!/\p{L}/u.test(word) || word.includes("__") || /['’]/.test(word)) return false;
  return word.length >= 3 || /^\p{Lu}{2}$/u.test(word);
}

/**
 * The runs of content words of one sentence: split at punctuation and at stopwords, each at most
 * {@link MAX_PHRASE_WORDS} long. A word keeps inner dots, dashes, underscores and apostrophes
 * (`config.json`, `ready-to-use`, `project_ref`); any other symbol splits it (`is:unresolved`).
 */
function phrasesOf(text: string): string[][] {
  const out: string[][] = [];
  let run: string[] = [];
  const end = (): void => {
    for (let i = 0; i < run.length; i += MAX_PHRASE_WORDS) out.push(run.slice(i, i + MAX_PHRASE_WORDS));
    run = [];
  };
  let initial = true;
  for (const raw of text.split(/\s+/)) {
    const atStart = initial;
    // A word after a colon starts a clause ("Not recommended for: Multiple pages").
    initial = /:$/.test(raw);
    // URLs, identifiers (`find_organizations`, `allowedDirectories`) and dotted names
    // (`docs.example.com`, `config.json`): they name other tools, parameters or examples, which
    // would only blur which tool is which.
    if (/^(?:https?|ftp|file|wss?):\/\//i.test(raw) || /\p{L}_\p{L}|\p{Ll}\p{Lu}|\p{L}\.\p{L}/u.test(raw)) {
      end();
      continue;
    }
    const parts = raw.split(/([^\p{L}\p{N}_.'’+-]+)/u);
    for (const part of parts) {
      const word = trimNonWord(part);
      const brokenBefore = /^[^\p{L}\p{N}]/u.test(part) || part === "" || word === "";
      if (brokenBefore) end();
      if (word === "") continue;
      // A capital that only marks the start of a sentence is not part of the word.
      // A dot inside a word makes it a file, a domain or a pattern (`test-*.tsx`): an example.
      if (word.includes(".")) {
        end();
        continue;
      }
      if (isContentWord(word)) run.push(atStart && /^\p{Lu}\p{Ll}+$/u.test(word) ? word.toLowerCase() : word);
      else end();
      if (/[^\p{L}\p{N}]$/u.test(part)) end();
    }
  }
  end();
  return out;
}

/**
 * Key phrases of `sources` that add words the reader has not seen in `known` (the lead sentence,
 * the tool and parameter names), within `budget` words, in the order they appear, joined by
 * commas as a sentence. A word scores by how often and how early it occurs, weighted by its
 * source; phrases are picked greedily by new score per word, so a frequent distinguishing word
 * ("migrations" said three times) wins over a one-off. Returns "" when nothing new is left.
 */
function detailPhrases(sources: readonly DetailSource[], known: readonly string[], budget: number): string {
  const seen = new Set(known.flatMap(keysOf));
  const score = new Map<string, number>();
  const phrases: { words: string[]; keys: string[][]; order: number }[] = [];
  sources.forEach((source, position) => {
    const weight = source.weight / (1 + position * POSITION_DECAY);
    for (const words of phrasesOf(source.text)) {
      // A compound (`meaningful-change`) counts as its parts: a query says "change", and a lead
      // that says "Context7-compatible" has said it already.
      const keys = words.map((w) => (/[-']/.test(w) ? keysOf(w) : [wordKey(w)]));
      for (const key of new Set(keys.flat())) if (!seen.has(key)) score.set(key, (score.get(key) ?? 0) + weight);
      phrases.push({ words, keys, order: phrases.length });
    }
  });
  const chosen: typeof phrases = [];
  const covered = new Set(seen);
  let left = budget;
  for (;;) {
    let pick: { phrase: (typeof phrases)[number]; words: string[]; gain: number } | undefined;
    for (const phrase of phrases) {
      // Words already covered at either end are trimmed: they would cost budget and say nothing new.
      let from = 0;
      let to = phrase.words.length;
      const isCovered = (keys: string[] | undefined): boolean => (keys ?? []).every((k) => covered.has(k));
      while (from < to && isCovered(phrase.keys[from])) from++;
      while (to > from && isCovered(phrase.keys[to - 1])) to--;
      const cost = to - from;
      if (cost === 0 || cost > left) continue;
      let gain = 0;
      for (const key of new Set(phrase.keys.slice(from, to).flat())) if (!covered.has(key)) gain += score.get(key) ?? 0;
      gain /= cost;
      if (gain < MIN_DETAIL_SCORE) continue;
      if (pick === undefined || gain > pick.gain) pick = { phrase, words: phrase.words.slice(from, to), gain };
    }
    if (pick === undefined) break;
    chosen.push({ ...pick.phrase, words: pick.words });
    for (const key of pick.phrase.keys.flat()) covered.add(key);
    left -= pick.words.length;
  }
  if (chosen.length === 0) return "";
  chosen.sort((a, b) => a.order - b.order);
  return `${capitalise(chosen.map((p) => p.words.join(" ")).join(", "))}.`;
}

/** Splits an identifier into lower-case words: `get_user_profile`, `getUserProfile`, `API-get-user`. */
function identifierWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    // Lookarounds, not `([A-Z]+)([A-Z][a-z])`, which rescanned a long capital run from each capital.
    .replace(/(?<=[A-Z])(?=[A-Z][a-z])/g, " ")
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
  /** Word budget of a tool summary, detail phrases included (default {@link DEFAULT_WORD_BUDGET}). */
  wordBudget?: number;
  /** Word budget of a parameter description (default {@link DEFAULT_PARAM_WORD_BUDGET}). */
  paramWordBudget?: number;
  /** Most words of detail phrases after the lead sentence (default {@link DEFAULT_DETAIL_WORDS}; 0 for none). */
  detailWords?: number;
}

/**
 * The offline, deterministic default summarizer: the first real sentence of each description,
 * cleaned and cut to a word budget, followed by a few key phrases from the rest of the description
 * and the parameter descriptions that name what the lead sentence, the tool name and the parameter
 * names do not. It never fails and needs no network, which also makes it the fallback whenever an
 * LLM summarizer fails or writes something the guard rejects.
 */
export class ExtractiveSummarizer implements Summarizer {
  /** `@2`: summaries carry detail phrases; `summarize warm --stale` redoes `@1` entries. */
  readonly id = "extractive@2";
  readonly promptId = "none";
  /** Batching buys nothing offline; a bound keeps one call's work small. */
  readonly maxBatch = 64;
  private readonly wordBudget: number;
  private readonly paramWordBudget: number;
  private readonly detailWords: number;

  constructor(options: ExtractiveSummarizerOptions = {}) {
    this.wordBudget = options.wordBudget ?? DEFAULT_WORD_BUDGET;
    this.paramWordBudget = options.paramWordBudget ?? DEFAULT_PARAM_WORD_BUDGET;
    this.detailWords = options.detailWords ?? DEFAULT_DETAIL_WORDS;
  }

  /** Summarizes one tool synchronously (the catalog can use it for an instant first answer). */
  summarizeTool(tool: RawTool): ToolSummary {
    const title = tool.title ?? (typeof tool.annotations?.title === "string" ? tool.annotations.title : undefined);
    const params: Record<string, string> = {};
    const paramTexts: string[] = [];
    const properties = (tool.inputSchema as RawTool["inputSchema"] | undefined)?.["properties"];
    const propertyNames: string[] = [];
    if (properties && typeof properties === "object" && !Array.isArray(properties)) {
      for (const [name, schema] of Object.entries(properties as Record<string, unknown>)) {
        propertyNames.push(name);
        if (!schema || typeof schema !== "object") continue;
        const description = (schema as Record<string, unknown>)["description"];
        if (typeof description !== "string" || !description.trim()) continue;
        const plain = stripRequirementMarkers(description);
        paramTexts.push(...plainTextBlocks(plain).map((b) => b.text));
        const text = extractSummary(plain, { wordBudget: this.paramWordBudget });
        const cleaned = stripRequirementMarkers(text);
        if (cleaned && /[\p{L}\p{N}]/u.test(cleaned)) params[name] = cleaned;
      }
    }
    const description = tool.description ?? "";
    const lead = extractSummary(description, { wordBudget: this.wordBudget });
    if (lead === "") return { summary: summaryFromName(tool.name, title), params };
    if (this.detailWords === 0) return { summary: lead, params };
    const detailed = extractSummary(description, {
      wordBudget: this.wordBudget,
      detailWords: this.detailWords,
      knownWords: [tool.name, title ?? "", ...propertyNames],
      extraText: paramTexts,
    });
    // Detail words are the description's own, but one may still read as a claim the guard refuses
    // ("read-only" in a destructive tool's text); the lead sentence alone is then the summary.
    if (detailed !== lead && !guardSummary(tool, { summary: detailed, params }).ok) return { summary: lead, params };
    return { summary: detailed, params };
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
