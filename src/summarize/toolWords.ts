import type { RawTool } from "../model/types.js";
import { isObject } from "../model/json.js";

/** Past forms and participles the suffix rules cannot fold ("sent" is "send"). */
const IRREGULAR = new Map([
  ["written", "write"],
  ["wrote", "write"],
  ["sent", "send"],
  ["paid", "pay"],
  ["ran", "run"],
  ["made", "make"],
  ["found", "find"],
  ["got", "get"],
  ["gotten", "get"],
  ["shown", "show"],
  ["given", "give"],
  ["gave", "give"],
  ["taken", "take"],
  ["took", "take"],
  ["done", "do"],
  ["did", "do"],
  ["left", "leave"],
  ["kept", "keep"],
  ["chosen", "choose"],
  ["built", "build"],
  ["bought", "buy"],
  ["sold", "sell"],
  ["begun", "begin"],
  ["began", "begin"],
  ["drawn", "draw"],
  ["known", "know"],
  ["seen", "see"],
  ["saw", "see"],
  ["held", "hold"],
  ["brought", "bring"],
  ["thrown", "throw"],
  ["froze", "freeze"],
  ["frozen", "freeze"],
  ["spent", "spend"],
  ["lost", "lose"],
  ["won", "win"],
  ["told", "tell"],
  ["said", "say"],
]);

/**
 * A word folded for comparison: lower case, possessive, plural and the common verb and noun endings
 * removed, so "Deletes", "deleted", "deleting" and "deletion" are one key (`delet`). Crude, but the
 * same on both sides of every comparison, which is all the checks need.
 */
export function stem(word: string): string {
  let known = stems.get(word);
  if (known === undefined) {
    known = fold(word);
    if (stems.size >= MAX_STEMS) stems.clear();
    stems.set(word, known);
  }
  return known;
}

/** Stems by word as written: a catalog's words repeat, and folding each again cost more than the rest of the checks. */
const stems = new Map<string, string>();
const MAX_STEMS = 100_000;

function fold(word: string): string {
  let w = word.toLowerCase();
  if (w.endsWith("'s") || w.endsWith("’s")) w = w.slice(0, -2);
  const irregular = IRREGULAR.get(w);
  if (irregular !== undefined) w = irregular;
  if (w.length <= 3 || !/^[a-z]+$/.test(w)) return w;
  // Plurals and third person.
  if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (/(?:ss|sh|ch|x|z)es$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith("s") && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1);
  // Verb and noun endings.
  let suffixed = false;
  if (w.endsWith("ied") && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (w.endsWith("ing") && w.length > 5) [w, suffixed] = [w.slice(0, -3), true];
  else if (w.endsWith("ed") && w.length > 4) [w, suffixed] = [w.slice(0, -2), true];
  else if (w.endsWith("ion") && w.length > 6) w = w.slice(0, -3);
  else if (w.endsWith("ly") && w.length > 5) w = w.slice(0, -2);
  else if (w.endsWith("al") && w.length > 6) w = w.slice(0, -2);
  else if (w.endsWith("ment") && w.length > 7) w = w.slice(0, -4);
  // "stopped", "running": the doubled consonant before the ending.
  if (suffixed && w.length >= 4 && /([b-df-hj-km-rt-y])\1$/.test(w)) w = w.slice(0, -1);
  if (w.length > 3 && w.endsWith("e")) w = w.slice(0, -1);
  return w;
}

const WORD = /[\p{L}\p{N}]+(?:['’]s)?/gu;
const CASE_CHANGE = /\p{Ll}\p{Lu}|\p{Lu}\p{Lu}\p{Ll}{2}/u;

/**
 * The words of `text`: runs of letters and digits, snake_case, kebab-case and camelCase split
 * (`getUserProfile` is get, user, profile; `HTMLParser` is HTML, Parser; `IDs` stays whole), in text order.
 */
export function wordsOf(text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(WORD)) out.push(...partsOf(match[0]));
  return out;
}

/** The tokens of `text` as written (runs of letters and digits: `JavaScript` is one), each with its parts (Java, Script). */
export function tokensOf(text: string): Array<{ token: string; parts: string[] }> {
  return [...text.matchAll(WORD)].map((match) => ({ token: match[0], parts: partsOf(match[0]) }));
}

/** A token split where its case changes: "DE00" and "v1" stay whole. */
function partsOf(token: string): string[] {
  if (!CASE_CHANGE.test(token)) return [token];
  return token
    .replace(/(\p{Ll})(\p{Lu})/gu, "$1 $2")
    .replace(/(?<=\p{Lu})(?=\p{Lu}\p{Ll}{2})/gu, " ")
    .split(" ")
    .filter((part) => part !== "");
}

/**
 * `text` as its words (see {@link wordsOf}), lower-cased, one space apart and padded with a space
 * at both ends: "getUserID, now!" is " get user id now ".
 */
export function normalizeText(text: string): string {
  return ` ${wordsOf(text).join(" ").toLowerCase()} `;
}

/** Strings, numbers and property names anywhere in a schema (or annotations), in document order. */
function schemaTexts(node: unknown, out: string[], depth = 0): void {
  if (depth > 40) return;
  if (typeof node === "string") out.push(node);
  else if (typeof node === "number" || typeof node === "boolean") out.push(String(node));
  else if (Array.isArray(node)) for (const item of node) schemaTexts(item, out, depth + 1);
  else if (isObject(node)) {
    for (const [key, value] of Object.entries(node)) {
      if ((key === "properties" || key === "patternProperties") && isObject(value)) out.push(...Object.keys(value));
      schemaTexts(value, out, depth + 1);
    }
  }
}

/**
 * The first sentence of a description (at most its first 40 words): where what the tool does is
 * said. A cheap cut, not the extractive summarizer's lead: only its words are used.
 */
function firstSentence(description: string): string[] {
  const head = description.length > 600 ? description.slice(0, 600) : description;
  const end = /[.!?](?:\s|$)|\n\s*\n/.exec(head);
  return wordsOf(end === null ? head : head.slice(0, end.index)).slice(0, 40);
}

/** Words a description may open with before its verb ("This tool allows you to delete..."). */
const OPENERS = new Set(
  "this tool a an the that which it use used to allow allows you let lets enable enables help helps can will is are for mcp api endpoint function method"
    .split(" ")
    .map(stem),
);

/** The first two words of a description's first sentence past its opener. */
function leadVerbs(lead: readonly string[]): string[] {
  let start = 0;
  while (start < lead.length && start < 8 && OPENERS.has(lead[start] ?? "")) start++;
  return lead.slice(start, start + 2);
}

/**
 * What a tool says of itself (name, title, description, every string of its annotations, every
 * string, number and property name of its input schema), in the forms the meaning checks compare
 * against. The forms that cost a pass over the whole text are made on first use: an honest
 * summary's words are found in the lower-cased text as written, and the stems are then not needed.
 */
export class ToolVocabulary {
  /** Every text of the tool, joined by line feeds. */
  readonly text: string;
  /** Stems of the words of the name and titles, where what a tool does is said first. */
  readonly nameStems: ReadonlySet<string>;
  /** Stems of the first sentence of the description. */
  readonly leadStems: ReadonlySet<string>;
  /** Stems of the first two words of the description past its opener: its verb, where it has one ("Deletes", "Permanently deletes"). */
  readonly leadVerbs: readonly string[];
  private lowerText: string | undefined;
  private normalizedText: string | undefined;
  private compactText: string | undefined;
  private stemSet: Set<string> | undefined;
  /** Answers of {@link has} so far: a word is looked for in the whole text once. */
  private readonly looked = new Map<string, boolean>();

  constructor(tool: RawTool) {
    const description = typeof tool.description === "string" ? tool.description : "";
    const title = typeof tool.title === "string" ? tool.title : "";
    const annotationTitle = typeof tool.annotations?.title === "string" ? tool.annotations.title : "";
    const texts: string[] = [tool.name, title, description];
    schemaTexts(tool.inputSchema, texts);
    schemaTexts(tool.annotations, texts);
    this.text = texts.join("\n");
    this.nameStems = new Set(wordsOf(`${tool.name} ${title} ${annotationTitle}`).map(stem));
    const lead = firstSentence(description.trimStart()).map(stem);
    this.leadStems = new Set(lead);
    this.leadVerbs = leadVerbs(lead);
  }

  /** {@link text} lower-cased. */
  get lower(): string {
    return (this.lowerText ??= this.text.toLowerCase());
  }

  /** {@link text} as {@link normalizeText} gives it. */
  get normalized(): string {
    return (this.normalizedText ??= normalizeText(this.text));
  }

  /** {@link text} lower-cased with everything but letters and digits removed: "file system" and "file_system" read "filesystem". */
  get compact(): string {
    return (this.compactText ??= this.lower.replace(/[^\p{L}\p{N}]+/gu, ""));
  }

  /** Stems of every word of {@link text}. */
  get stems(): ReadonlySet<string> {
    if (this.stemSet === undefined) {
      this.stemSet = new Set<string>();
      for (const word of wordsOf(this.text)) this.stemSet.add(stem(word));
    }
    return this.stemSet;
  }

  /** Whether `word` (of a summary) occurs in the tool's text: as written, as a stem, or run together ("filesystem"). */
  has(word: string): boolean {
    let found = this.looked.get(word);
    if (found === undefined) {
      const lower = word.toLowerCase();
      // Inside a longer word too ("id" in "userId"): lenient, which only ever lets a word pass.
      found = this.lower.includes(lower) || this.stems.has(stem(word)) || (lower.length >= 4 && this.compact.includes(lower));
      this.looked.set(word, found);
    }
    return found;
  }

  /**
   * Whether the tool's text says `phrase`: the same words in the same order, punctuation and case
   * aside ("read-only" is "Read only"); a figure, link or address also inside a longer token as
   * written ("3339" in "RFC3339").
   */
  says(phrase: string): boolean {
    if ((!/\p{L}/u.test(phrase) || /[:@/.]/.test(phrase)) && this.lower.includes(phrase.toLowerCase())) return true;
    const normalized = normalizeText(phrase);
    return normalized.trim() === "" || this.normalized.includes(normalized);
  }
}
