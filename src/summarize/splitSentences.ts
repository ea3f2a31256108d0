/**
 * Abbreviations whose trailing period does not end a sentence. `etc` is handled apart: it ends
 * one when a capitalised word follows ("..., services, etc. Returns details").
 */
const ABBREVIATIONS = new Set([
  "e.g",
  "i.e",
  "eg",
  "ie",
  "vs",
  "cf",
  "approx",
  "incl",
  "esp",
  "viz",
  "al",
  "no",
  "nr",
  "fig",
  "mr",
  "mrs",
  "ms",
  "dr",
  "st",
  "inc",
  "ltd",
  "jr",
  "sr",
  "u.s",
  "min",
  "max",
  "avg",
  "ca",
  "resp",
  "ref",
  "ver",
  "v",
]);

/**
 * Splits plain text into sentences. A sentence ends at `.`, `!` or `?` followed by white space and
 * a character that is not lower case; not after "e.g.", "i.e.", other abbreviations or initials.
 * Periods inside tokens (versions `1.2.3`, files `tsconfig.json`, URLs, `Next.js`) never end one,
 * since no white space follows them.
 */
export function splitSentences(text: string): string[] {
  const sentences: string[] = [];
  // The lookbehind starts a match only at the first mark of a run: from every later one, `[.!?]+`
  // would rescan the same run ("....." without a space after it), quadratic in its length.
  const boundary = /(?<![.!?])([.!?]+)(["'”’)\]]*)(\s+|$)/g;
  let start = 0;
  for (let match = boundary.exec(text); match !== null; match = boundary.exec(text)) {
    const end = match.index + (match[1]?.length ?? 0) + (match[2]?.length ?? 0);
    const rest = text.slice(match.index + match[0].length);
    if (rest.length > 0 && !endsSentence(text.slice(start, match.index), match[1] ?? "", rest)) continue;
    const sentence = text.slice(start, end).trim();
    if (sentence) sentences.push(sentence);
    start = match.index + match[0].length;
  }
  const tail = text.slice(start).trim();
  if (tail) sentences.push(tail);
  return sentences;
}

function endsSentence(before: string, punctuation: string, rest: string): boolean {
  const next = rest.charAt(0);
  if (/\p{Ll}/u.test(next)) return false;
  if (punctuation !== ".") return true;
  const word = lastToken(before);
  const bare = word.replace(/^[("'[]+/, "").toLowerCase();
  if (bare === "etc") return /^\p{Lu}\p{Ll}/u.test(rest);
  if (ABBREVIATIONS.has(bare)) return false;
  // A single capital letter is an initial ("J. Smith"), a digit before a period may be a list
  // number already consumed as text ("step 2. Then") and does end a sentence.
  if (/^\p{Lu}$/u.test(bare)) return false;
  return true;
}

/**
 * The run of non-space characters that ends `text` ("" when it ends in white space), found from the
 * end: `/(\S+)$/` retried from every character and rescanned every word of a long text.
 */
function lastToken(text: string): string {
  let start = text.length;
  while (start > 0 && !/\s/.test(text.charAt(start - 1))) start--;
  return text.slice(start);
}
