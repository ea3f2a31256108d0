/**
 * Detects summaries that end in an appended word list rather than prose: "Read the complete
 * contents of a file as text. Lines." or "Create a new directory. Multiple nested, perfect,
 * setting, structures, projects." A heuristic without a part-of-speech tagger: a sentence counts
 * as having a verb when one of its words is in a small lexicon of verbs common in tool
 * descriptions (base and third-person forms) or of auxiliaries. Errs on the side of not flagging:
 * "Supports JSON, YAML, TOML." has a verb and is prose.
 */

/** Verbs (base forms) that tool descriptions use; `s`/`es` forms are derived. */
const VERBS =
  "accept access add allow analyze append apply archive ask assign attach begin block browse build calculate call cancel capture change check clear click clone close collect combine compare compute configure connect contain convert copy count crawl create debug define delete deploy describe detect disable display download drag drop edit emulate enable end enter evaluate execute exist explain export extract fetch fill filter find finish fix follow format generate get give go handle help hide highlight hover identify import include index insert inspect install invoke keep kill launch let list load locate log look make manage map mark match merge modify monitor move navigate need open perform pick place post press preview print process provide publish pull push put query read receive record reference refresh reload remove rename render replace reply report request reset resize resolve restart restore retrieve return revert review run save scan scrape scroll search select send set share show sign start stop store stream submit subscribe summarize support switch sync take tell test track transform translate trigger type undo unsubscribe update upload use validate verify view visit wait watch write".split(
    " ",
  );

const AUXILIARIES = new Set("is are was were be been being am has have had does do did can could will would shall should may might must".split(" "));

const VERB_FORMS = new Set(
  VERBS.flatMap((v) => {
    const third = /(?:s|sh|ch|x|z|o)$/.test(v) ? `${v}es` : /[^aeiou]y$/.test(v) ? `${v.slice(0, -1)}ies` : `${v}s`;
    return [v, third];
  }),
);

function hasVerb(sentence: string): boolean {
  return sentence
    .toLowerCase()
    .split(/[^a-z']+/)
    .some((w) => AUXILIARIES.has(w) || VERB_FORMS.has(w));
}

/** Sentences of a summary, split after `.`, `!` or `?` followed by white space. */
function sentences(text: string): string[] {
  return text
    .trim()
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function wordsOf(text: string): string[] {
  return text.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w));
}

/**
 * The appended word list `summary` ends with, or undefined when it reads as prose. Flagged:
 * - a last sentence (after at least one other) with no verb and at most three words ("Lines.");
 * - a last sentence with no verb that ends in a run of at least two comma-separated single words
 *   ("Multiple nested, perfect, setting, structures, projects.");
 * - any last sentence with no verb made of at least three comma-separated items ending in a run of
 *   at least three single words, even when it is the only sentence.
 */
export function appendedWordList(summary: string): string | undefined {
  // The parameter line of a compact description is not prose and not part of the summary.
  const parts = sentences(summary.split("\n")[0] ?? "");
  const last = parts.at(-1);
  if (last === undefined || hasVerb(last)) return undefined;
  const body = last.replace(/[.!?]+$/, "");
  const items = body
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  let run = 0;
  for (let i = items.length - 1; i >= 0 && wordsOf(items[i] ?? "").length === 1; i -= 1) run += 1;
  if (parts.length > 1 && wordsOf(body).length <= 3) return last;
  if (parts.length > 1 && items.length >= 2 && run >= 2) return last;
  if (items.length >= 3 && run >= 3) return last;
  return undefined;
}
