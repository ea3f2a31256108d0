import type { RawTool } from "../model/types.js";
import { capitalise, joinCut, words, type Candidate } from "./leadSentence.js";

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
export function contentKeys(text: string): Set<string> {
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

export function toolTitle(tool: RawTool): string | undefined {
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
export const MIN_CLAUSE_WORDS = 4;
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

/** A clause cut from a sentence, ending cleanly. */
function cleanClauseEnd(text: string): string {
  return joinCut(words(text));
}

/**
 * True when `clause` reads as prose a model can take in: not a label line ("Email (str, optional):
 * ...", "Processing: ..."), not an example in quotes, not code or identifiers (`get_project`,
 * `'Content-Type': ...`), not shouted, not a bare list of words ("Resolve, reopen, assign").
 */
function isProse(clause: string): boolean {
  if (/^[^\s:]+(?:\s+[^\s:]+){0,3}\s*(?:\([^)]*\))?\s*:/.test(clause)) return false;
  if (/^['"“‘`([]/.test(clause)) return false;
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
export function distinctClause(
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
