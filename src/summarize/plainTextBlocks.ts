/**
 * Turns a tool description (markdown, XML-ish instruction tags, emoji, hard-wrapped lines) into
 * plain-text blocks the extractive summarizer can pick sentences from. Real MCP servers ship all of
 * these: sentry wraps examples in `<examples>`, desktop-commander uses emoji headers and indents
 * every line by 24 spaces, firecrawl uses `**Bold:**` labels and fenced JSON.
 */

/** One block of a description after markup removal. */
export interface TextBlock {
  /** Plain text, whitespace collapsed. */
  text: string;
  /** `heading` (markdown `#`), `item` (list entry) or `paragraph` (anything else). */
  kind: "heading" | "item" | "paragraph";
}

/** Options of {@link plainTextBlocks}. */
export interface PlainTextOptions {
  /**
   * Keep the content of instruction blocks (`<examples>`, `<hints>`...) instead of dropping it.
   * The fallback when dropping them leaves nothing.
   */
  keepTagBlocks?: boolean;
}

/**
 * Emoji, pictographs and the invisible joiners/selectors that glue them (ZWJ sequences, keycaps,
 * skin tones, flags). Exported so tests can check summaries for residue with the same definition.
 */
// biome-ignore lint/suspicious/noMisleadingCharacterClass: the joiners and selectors are listed one by one on purpose, each is removed alone
export const EMOJI_PATTERN = /[\p{Extended_Pictographic}\u{1F1E6}-\u{1F1FF}\u{1F3FB}-\u{1F3FF}\u200D\uFE0E\uFE0F\u20E3]/gu;

/** Tags whose content is advice to the model, not a description of the tool: dropped whole. */
const INSTRUCTION_TAGS = new Set([
  "example",
  "examples",
  "hint",
  "hints",
  "usecase",
  "usecases",
  "use_case",
  "use_cases",
  "important",
  "instruction",
  "instructions",
  "note",
  "notes",
  "warning",
  "warnings",
  "tip",
  "tips",
  "rules",
  "rule",
  "guidelines",
  "guideline",
  "guidance",
  "context",
  "constraints",
  "requirements",
  "output",
  "output_format",
  "format",
  "reasoning",
  "thinking",
  "system",
  "critical",
  "when_to_use",
  "usage",
  "parameters",
  "params",
  "response_format",
  "returns",
  "workflow",
  "steps",
  "caution",
  "details",
]);

/** Formatting tags whose text belongs to the sentence around them. */
const INLINE_TAGS = new Set(["b", "i", "em", "strong", "code", "u", "span", "a", "kbd", "sub", "sup", "mark", "small", "tt", "var", "samp", "s"]);

/** Words that, ending a line, mean the sentence continues on the next line. */
const CONTINUATION_WORDS = new Set([
  "a",
  "an",
  "and",
  "as",
  "at",
  "but",
  "by",
  "for",
  "from",
  "in",
  "into",
  "of",
  "on",
  "or",
  "than",
  "that",
  "the",
  "to",
  "which",
  "with",
  "without",
  "unless",
  "via",
  "is",
  "are",
  "be",
  "can",
  "will",
  "its",
  "their",
  "your",
]);

/*
 * Descriptions come from upstream servers, so every pattern here must run in linear time: a
 * pattern that can rescan the rest of the text from each of many start positions (a lazy body
 * looking for a closing tag, a run followed by `$`, a lazy group followed by `\s*`) turns a
 * 100 kB description into seconds of blocked event loop. Such spots are scanned by hand below.
 */
const UNCLOSED_INSTRUCTION = new RegExp(`<(?:${[...INSTRUCTION_TAGS].join("|")})(?:\\s[^<>]*)?>[\\s\\S]*$`, "i");
/** An opening tag; `[^<>]*` stops at the next angle bracket, so no two attempts scan the same text. */
const OPEN_TAG = /<([A-Za-z][\w-]*)(?:\s[^<>]*)?>/g;
const CLOSE_TAG = /<\/([A-Za-z][\w-]*)\s*>/g;
/**
 * Any tag: `<`, an optional `/`, a name, then attributes up to `>`. Trailing white space and a
 * self-closing `/` are told apart from attributes in code: the pattern `(\s[^<>]*?)?\s*(\/?)>`
 * that did it in the regex backtracked quadratically over `<a` followed by spaces and no `>`.
 */
const ANY_TAG = /<(\/?)([A-Za-z][\w.-]*)(\s[^<>]*)?(\/?)>/g;

/** Removes `<!-- ... -->` comments (an unclosed one stays), scanning with indexOf: linear. */
function stripComments(text: string): string {
  let out = "";
  let from = 0;
  for (;;) {
    const open = text.indexOf("<!--", from);
    if (open === -1) break;
    const close = text.indexOf("-->", open + 4);
    // No `-->` after this opener means none after any later one either.
    if (close === -1) break;
    out += `${text.slice(from, open)} `;
    from = close + 3;
  }
  return out + text.slice(from);
}

/**
 * Replaces every `<name ...>inner</name>` pair, left to right, each opener paired with the
 * nearest closing tag of the same name after it (what the lazy regex `<(name)...>([\s\S]*?)<\/\1>`
 * did, without rescanning the rest of the text from every opener that has no partner).
 */
function replacePairs(text: string, replace: (name: string, inner: string) => string): string {
  const closers = new Map<string, { start: number; end: number }[]>();
  for (const match of text.matchAll(CLOSE_TAG)) {
    const name = match[1] ?? "";
    let list = closers.get(name);
    if (list === undefined) closers.set(name, (list = []));
    list.push({ start: match.index, end: match.index + match[0].length });
  }
  if (closers.size === 0) return text;
  let out = "";
  let copied = 0;
  const open = new RegExp(OPEN_TAG.source, "g");
  for (let match = open.exec(text); match !== null; match = open.exec(text)) {
    const name = match[1] ?? "";
    const bodyStart = match.index + match[0].length;
    const list = closers.get(name);
    // First closing tag starting at or after the body: binary search (the lists are in order).
    let lo = 0;
    let hi = list?.length ?? 0;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((list?.[mid]?.start ?? 0) < bodyStart) lo = mid + 1;
      else hi = mid;
    }
    const closer = list?.[lo];
    if (closer === undefined) {
      // No partner: try the next position, as the regex did.
      open.lastIndex = match.index + 1;
      continue;
    }
    out += text.slice(copied, match.index) + replace(name, text.slice(bodyStart, closer.start));
    copied = closer.end;
    open.lastIndex = closer.end;
  }
  return out + text.slice(copied);
}

/** Removes or unwraps XML-ish tags; see {@link INSTRUCTION_TAGS} and {@link INLINE_TAGS}. */
function stripTags(text: string, keepTagBlocks: boolean): string {
  let out = stripComments(text);
  // Autolinks look like tags but carry text worth keeping.
  out = out.replace(/<((?:https?|mailto):[^<>\s]+)>/g, "$1");
  // Nested pairs unwrap from the inside out, so repeat until nothing changes (bounded).
  for (let round = 0; round < 5; round++) {
    const next = replacePairs(out, (rawName, inner) => {
      const name = rawName.toLowerCase();
      if (INLINE_TAGS.has(name)) return inner;
      if (keepTagBlocks) return `\n${inner}\n`;
      // A multi-line pair is a block of its own (instructions, examples); a one-line pair of an
      // unknown tag is more likely inline markup, so its text is kept.
      if (INSTRUCTION_TAGS.has(name) || inner.includes("\n")) return "\n\n";
      return inner;
    });
    if (next === out) break;
    out = next;
  }
  if (!keepTagBlocks) {
    // An instruction tag left open runs to the end of the text.
    out = out.replace(UNCLOSED_INSTRUCTION, "\n");
  }
  // Lone tags: a bare `<organizationSlug>` or `<select>` is a placeholder or a name and reads as
  // its word; a closing tag, a self-closing tag or one with attributes (`<div style=...>`) is markup.
  return out.replace(ANY_TAG, (whole: string, closing: string, name: string, attrs: string | undefined, selfClosing: string, offset: number, all: string) => {
    // `attrs` holds a spaced self-closing slash too (`<x />`): any non-space in it means markup.
    if (closing || selfClosing || (attrs ?? "").trim() || INLINE_TAGS.has(name.toLowerCase()) || name.toLowerCase() === "br") {
      return " ";
    }
    // `<width>x<height>` must not fuse into one word.
    const before = /[\p{L}\p{N}]/u.test(all.charAt(offset - 1)) ? " " : "";
    const after = /[\p{L}\p{N}]/u.test(all.charAt(offset + whole.length)) ? " " : "";
    return `${before}${name}${after}`;
  });
}

/** Removes inline markdown (links, images, code spans, emphasis) from one line. */
export function stripInlineMarkdown(line: string): string {
  let out = line;
  // Link text stops at any bracket and a target at an unpaired paren: with `[^\]]*` and `[^)]*`,
  // each of many `[` or `](` rescanned the rest of a line that never closes them.
  out = out.replace(/!\[([^[\]]*)\]\((?:[^()]|\([^()]*\))*\)/g, " ");
  out = out.replace(/\[([^[\]]+)\]\((?:[^()]|\([^()]*\))*\)/g, "$1");
  out = out.replace(/``([^`]+)``/g, "$1");
  out = out.replace(/`([^`]*)`/g, "$1");
  out = out.replace(/`/g, "");
  out = out.replace(/\*\*\*([^*]+)\*\*\*/g, "$1");
  out = out.replace(/\*\*([^*]+?)\*\*/g, "$1");
  out = out.replace(/~~([^~]+)~~/g, "$1");
  // `__x__` and `_x_` only outside words: `snake_case_names` must survive.
  out = out.replace(/(^|[^\w])__([^_]+?)__(?!\w)/g, "$1$2");
  out = out.replace(/(^|[^\w*])\*(?!\s)([^*]+?)(?<!\s)\*(?![\w*])/g, "$1$2");
  out = out.replace(/(^|[^\w])_(?!\s)([^_]+?)(?<!\s)_(?!\w)/g, "$1$2");
  // Unpaired emphasis markers left over.
  out = out.replace(/\*{2,}/g, "");
  out = out.replace(/\\([\\`*_{}[\]()#+\-.!|<>])/g, "$1");
  return out;
}

function collapse(text: string): string {
  // Removed emoji and tags leave gaps before punctuation ("repository 🎉." -> "repository .").
  return text
    .replace(/\s+/g, " ")
    .replace(/ ([.,;:!?)](?:\s|$))/g, "$1")
    .trim();
}

/** True when a line that ended with `prev` continues on a line starting with `next`. */
function continues(prev: string, next: string): boolean {
  if (/^[a-z(]/.test(next)) return true;
  if (/[,;(/&\-–—+]$/.test(prev)) return true;
  // The trailing ASCII word, found from the end: `/([A-Za-z]+)$/` retried from every letter of a
  // long run that does not reach the end.
  let start = prev.length;
  while (start > 0 && /[A-Za-z]/.test(prev.charAt(start - 1))) start--;
  return start < prev.length && CONTINUATION_WORDS.has(prev.slice(start).toLowerCase());
}

/**
 * Splits a description into plain-text blocks: code fences, tables, rules and instruction tag
 * blocks dropped; headings and list items kept as blocks of their own; hard-wrapped lines joined.
 */
export function plainTextBlocks(description: string, options: PlainTextOptions = {}): TextBlock[] {
  // U+2028/U+2029 end lines too; as "\n" they keep `.` in the line patterns below matching a whole line.
  let text = description.replace(/\r\n?|[\u2028\u2029]/g, "\n");
  // Fenced code is examples; an unclosed fence runs to the end.
  text = text.replace(/(^|\n)[ \t]*(```|~~~)[\s\S]*?(\n[ \t]*\2[^\n]*|$)/g, "\n\n");
  text = stripTags(text, options.keepTagBlocks ?? false);
  text = text.replace(EMOJI_PATTERN, " ");

  const blocks: TextBlock[] = [];
  let current: { lines: string[]; kind: TextBlock["kind"] } | undefined;
  const flush = (): void => {
    if (current) {
      const joined = collapse(current.lines.join(" "));
      if (/[\p{L}\p{N}]/u.test(joined)) blocks.push({ text: joined, kind: current.kind });
    }
    current = undefined;
  };

  for (const rawLine of text.split("\n")) {
    let line = rawLine.trim();
    if (line === "") {
      flush();
      continue;
    }
    // Tables and horizontal rules carry no sentence.
    if (/^\|/.test(line) || /^[-|:\s]+$/.test(line) || /^(\*{3,}|_{3,}|={3,})$/.test(line)) {
      flush();
      continue;
    }
    line = line.replace(/^(>\s?)+/, "");
    const heading = /^#{1,6}\s+/.exec(line);
    if (heading) {
      flush();
      // Closing hashes and the space before them trimmed by hand: `(.*?)\s*#*$` was quadratic
      // over a long run of spaces inside the heading.
      let end = line.length;
      while (end > heading[0].length && line.charAt(end - 1) === "#") end--;
      const title = line.slice(heading[0].length, end).trimEnd();
      blocks.push({ text: collapse(stripInlineMarkdown(title)), kind: "heading" });
      continue;
    }
    const item = /^(?:[-*+•◦▪●]|\d{1,3}[.)])\s+(.*)$/.exec(line);
    if (item) {
      flush();
      current = { lines: [stripInlineMarkdown(item[1] ?? "")], kind: "item" };
      continue;
    }
    const plain = stripInlineMarkdown(line);
    const previous = current?.lines[current.lines.length - 1];
    if (current && previous !== undefined && continues(previous.trim(), plain.trim())) {
      current.lines.push(plain);
    } else {
      flush();
      current = { lines: [plain], kind: "paragraph" };
    }
  }
  flush();
  return blocks.filter((block) => block.text.length > 0);
}
