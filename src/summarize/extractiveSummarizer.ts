import type { RawTool } from "../model/types.js";
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
  /** Largest number of words kept. */
  wordBudget: number;
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
  // A clause boundary in the second half of the budget reads better than a cut mid-clause.
  for (let i = kept.length - 1; i >= Math.ceil(budget * 0.5) - 1; i--) {
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
      const secondTier =
        labelled ||
        block.kind === "heading" ||
        isMostlyUpperCase(sentence) ||
        SECOND_TIER.some((pattern) => pattern.test(sentence));
      const caution = labelled || isMostlyUpperCase(sentence) || CAUTION.test(sentence);
      out.push({ text: sentence, tier: secondTier ? 2 : 1, caution, kind: block.kind, introducesList });
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

/** The usable sentences of a description, instruction tag blocks kept only when nothing else is left. */
function descriptionCandidates(description: string): Candidate[] {
  if (!description.trim()) return [];
  const plain = candidatesOf(plainTextBlocks(description));
  // Everything lived inside instruction tags: take their content rather than nothing.
  return plain.length > 0 ? plain : candidatesOf(plainTextBlocks(description, { keepTagBlocks: true }));
}

/** The candidate the summary leads with: the first descriptive sentence, else the first of any kind. */
function leadCandidate(candidates: readonly Candidate[]): Candidate | undefined {
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

/**
 * Words that never count towards what tells a tool apart: function words, and the vocabulary every
 * tool description shares (tool, returns, specified, optional, user...), which tells no two tools
 * apart whatever the catalog. Filler adjectives (detailed, powerful, various) are here too.
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
    "input inputs output outputs several " +
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



/** Keys of the content words of `text`: the words that can tell one tool from another. */
function contentKeys(text: string): Set<string> {
  const out = new Set<string>();
  const spaced = text.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/(?<=[A-Z])(?=[A-Z][a-z])/g, " ");
  for (const word of spaced.split(/[^\p{L}\p{N}]+/u)) {
    if (word.length < 3 || !/\p{L}/u.test(word) || PHRASE_STOPWORDS.has(word.toLowerCase())) continue;
    const key = wordKey(word);
    if (!PHRASE_STOPWORDS.has(key)) out.add(key);
  }
  return out;
}

/**
 * Fewest tools a catalog needs before word rarity means anything: below it every content word
 * counts the same.
 */
const MIN_CATALOG_TOOLS = 3;

/**
 * How rare each word is across the catalog being summarized (inverse document frequency over its
 * tools' names, titles and descriptions). A word every tool of a server says ("repository" in a git
 * server) tells none of them apart; a word only one says does. Built from the tools summarized
 * together, so it adapts to a catalog it has never seen rather than to a fixed word list.
 */
export class CatalogVocabulary {
  /** Number of tools the frequencies were counted over. */
  readonly size: number;
  private readonly docFreq = new Map<string, number>();

  constructor(tools: readonly RawTool[]) {
    this.size = tools.length;
    for (const tool of tools) {
      for (const key of contentKeys(toolText(tool))) this.docFreq.set(key, (this.docFreq.get(key) ?? 0) + 1);
    }
  }

  /** True when the catalog is big enough for rarity to tell tools apart. */
  get informative(): boolean {
    return this.size >= MIN_CATALOG_TOOLS;
  }

  /** Weight of a word: high when few tools use it, near 0 when all do; 1 for every word in a tiny catalog. */
  weight(key: string): number {
    if (!this.informative) return 1;
    const df = this.docFreq.get(key) ?? 0;
    return Math.max(0, Math.log((this.size + 1) / (df + 0.5)));
  }
}

function toolTitle(tool: RawTool): string | undefined {
  return tool.title ?? (typeof tool.annotations?.title === "string" ? tool.annotations.title : undefined);
}

/** Everything a tool says about itself in words: name, title and description. */
function toolText(tool: RawTool): string {
  return `${tool.name} ${toolTitle(tool) ?? ""} ${tool.description ?? ""}`;
}

/**
 * Least rarity per word a second clause must carry: below it the clause repeats what the catalog
 * says everywhere ("Returns a JSON object", "Requires authentication"), which costs tokens in every
 * listing and separates nothing. In units of {@link CatalogVocabulary.weight}: a word used by half
 * the tools weighs about 0.7, a word only this tool uses about ln(N).
 */
const MIN_CLAUSE_WEIGHT_PER_WORD = 0.45;
/** Fewest words a clause needs to read as one ("Lines." is not a clause). */
const MIN_CLAUSE_WORDS = 4;
/**
 * Words added to a clause's length when clauses are compared: it prefers a short clause that says
 * one rare thing to a long one that says it among many common words.
 */
const CLAUSE_LENGTH_PRIOR = 4;
/** Sentences looked at for a second clause: further down a description drifts into details and examples. */
const MAX_CLAUSE_SENTENCES = 12;

/** Conjunctions that open a subordinate clause: such a clause cannot stand as a sentence of its own. */
const SUBORDINATE_OPENERS = /^(?:if|when|whenever|while|although|though|because|unless|since|after|before|once|as|where|whereas|so|and|or|but|which|that)\b/i;

/**
 * The ways `sentence` can be kept: whole, or cut after one of its clauses (at `,`, `;`, `:`, a
 * dash or before a bracket), never mid-clause. Clauses that cannot open a sentence are skipped.
 */
function clausePrefixes(sentence: string): string[] {
  if (SUBORDINATE_OPENERS.test(sentence)) return [];
  const out: string[] = [];
  const boundary = /(?:[,;:](?=\s)|\s[-–—](?=\s)|\s(?=\())/g;
  for (let match = boundary.exec(sentence); match !== null; match = boundary.exec(sentence)) {
    const prefix = cleanClauseEnd(sentence.slice(0, match.index));
    if (words(prefix).length >= MIN_CLAUSE_WORDS) out.push(prefix);
  }
  out.push(cleanClauseEnd(sentence));
  return [...new Set(out)];
}

/** Drops joiners and punctuation a cut leaves at the end ("... files and", "... with:"). */
function cleanClauseEnd(text: string): string {
  const kept = words(text);
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

/**
 * True when `clause` reads as prose a model can take in: not a label line ("Email (str, optional):
 * ...", "Processing: ..."), not an example in quotes, not code or identifiers (`get_project`,
 * `'Content-Type': ...`), not shouted, not a bare list of words ("Resolve, reopen, assign").
 */
function isProse(clause: string): boolean {
  if (/^[^\s:]+(?:\s+[^\s:]+){0,3}\s*(?:\([^)]*\))?\s*:/.test(clause)) return false;
  if (/^['"“‘`(\[]/.test(clause)) return false;
  if (/:|\/\w/.test(clause)) return false;
  if (/[{}[\]<>=|`\\]|\p{L}_\p{L}|\p{Ll}\p{Lu}|\.\p{L}|'[^']*'|"[^"]*"/u.test(clause)) return false;
  if (/\b\p{Lu}{2,}\s+\p{Lu}{2,}\b/u.test(clause)) return false;
  if (/\((?:str|string|int|integer|bool|boolean|number|optional|required)\b/i.test(clause)) return false;
  const items = clause.split(/,\s*(?:and\s+|or\s+)?/);
  if (items.length >= 3 && items.every((item) => words(item).length <= 2)) return false;
  return true;
}

/** A clause as a sentence: capitalised, one closing mark. */
function asSentence(text: string): string {
  const out = capitalise(text.trim());
  return /[.!?…]$/.test(out) ? out : `${out}.`;
}

/** Sum of the weights of `keys` not in `covered`. */
function newWeight(keys: ReadonlySet<string>, covered: ReadonlySet<string>, vocabulary: CatalogVocabulary): number {
  let total = 0;
  for (const key of keys) if (!covered.has(key)) total += vocabulary.weight(key);
  return total;
}

/**
 * The clause of the description that best tells the tool apart from the rest of its catalog, as a
 * sentence of at most `room` words, or "" when none says enough. Only descriptive sentences are
 * considered (not warnings, not instructions to the model), whole or cut at a clause boundary;
 * each is worth the rarity of the words it adds to what the reader already has (`covered`: the
 * lead, the tool and parameter names).
 */
function distinctClause(
  candidates: readonly Candidate[],
  lead: Candidate,
  covered: ReadonlySet<string>,
  vocabulary: CatalogVocabulary,
  room: number,
): string {
  let best: { text: string; value: number } | undefined;
  for (const candidate of candidates.slice(0, MAX_CLAUSE_SENTENCES)) {
    if (candidate === lead || candidate.tier !== 1 || candidate.caution || candidate.kind !== "paragraph" || candidate.introducesList) continue;
    for (const clause of clausePrefixes(candidate.text)) {
      if (!isProse(clause)) continue;
      const count = words(clause).length;
      if (count < MIN_CLAUSE_WORDS || count > room) continue;
      const gain = newWeight(contentKeys(clause), covered, vocabulary);
      if (gain / count < MIN_CLAUSE_WEIGHT_PER_WORD) continue;
      const value = gain / (count + CLAUSE_LENGTH_PRIOR);
      if (best === undefined || value > best.value) best = { text: clause, value };
    }
  }
  return best === undefined ? "" : asSentence(best.text);
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
    return prepared.map((p, i) => {
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
