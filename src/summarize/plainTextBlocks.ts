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
export const EMOJI_PATTERN = /[\p{Extended_Pictographic}\u{1F1E6}-\u{1F1FF}\u{1F3FB}-\u{1F3FF}\u200D\uFE0E\uFE0F\u20E3]/gu;

/** Tags whose content is advice to the model, not a description of the tool: dropped whole. */
const INSTRUCTION_TAGS = new Set([
  "example", "examples", "hint", "hints", "usecase", "usecases", "use_case", "use_cases", "important",
  "instruction", "instructions", "note", "notes", "warning", "warnings", "tip", "tips", "rules", "rule",
  "guidelines", "guideline", "guidance", "context", "constraints", "requirements", "output", "output_format",
  "format", "reasoning", "thinking", "system", "critical", "when_to_use", "usage", "parameters", "params",
  "response_format", "returns", "workflow", "steps", "caution", "details",
]);

/** Formatting tags whose text belongs to the sentence around them. */
const INLINE_TAGS = new Set([
  "b", "i", "em", "strong", "code", "u", "span", "a", "kbd", "sub", "sup", "mark", "small", "tt", "var", "samp", "s",
]);

/** Words that, ending a line, mean the sentence continues on the next line. */
const CONTINUATION_WORDS = new Set([
  "a", "an", "and", "as", "at", "but", "by", "for", "from", "in", "into", "of", "on", "or", "than", "that", "the",
  "to", "which", "with", "without", "unless", "via", "is", "are", "be", "can", "will", "its", "their", "your",
]);

const UNCLOSED_INSTRUCTION = new RegExp(`<(?:${[...INSTRUCTION_TAGS].join("|")})(?:\\s[^<>]*)?>[\\s\\S]*$`, "i");
const PAIRED_TAG = /<([A-Za-z][\w-]*)(?:\s[^<>]*)?>([\s\S]*?)<\/\1\s*>/g;
const ANY_TAG = /<(\/?)([A-Za-z][\w.-]*)((?:\s[^<>]*?)?)\s*(\/?)>/g;

/** Removes or unwraps XML-ish tags; see {@link INSTRUCTION_TAGS} and {@link INLINE_TAGS}. */
function stripTags(text: string, keepTagBlocks: boolean): string {
  let out = text.replace(/<!--[\s\S]*?-->/g, " ");
  // Autolinks look like tags but carry text worth keeping.
  out = out.replace(/<((?:https?|mailto):[^<>\s]+)>/g, "$1");
  // Nested pairs unwrap from the inside out, so repeat until nothing changes (bounded).
  for (let round = 0; round < 5; round++) {
    const next = out.replace(PAIRED_TAG, (_whole, rawName: string, inner: string) => {
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
  return out.replace(
    ANY_TAG,
    (whole: string, closing: string, name: string, attrs: string, selfClosing: string, offset: number, all: string) => {
      if (closing || selfClosing || attrs.trim() || INLINE_TAGS.has(name.toLowerCase()) || name.toLowerCase() === "br") {
        return " ";
      }
      // `<width>x<height>` must not fuse into one word.
      const before = /[\p{L}\p{N}]/u.test(all.charAt(offset - 1)) ? " " : "";
      const after = /[\p{L}\p{N}]/u.test(all.charAt(offset + whole.length)) ? " " : "";
      return `${before}${name}${after}`;
    },
  );
}

/** Removes inline markdown (links, images, code spans, emphasis) from one line. */
export function stripInlineMarkdown(line: string): string {
  let out = line;
  out = out.replace(/!\[([^\]]*)\]\([^)]*\)/g, " ");
  out = out.replace(/\[([^\]]+)\]\((?:[^()]|\([^)]*\))*\)/g, "$1");
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
  return text.replace(/\s+/g, " ").replace(/ ([.,;:!?)](?:\s|$))/g, "$1").trim();
}

/** True when a line that ended with `prev` continues on a line starting with `next`. */
function continues(prev: string, next: string): boolean {
  if (/^[a-z(]/.test(next)) return true;
  if (/[,;(/&\-–—+]$/.test(prev)) return true;
  const lastWord = /([A-Za-z]+)$/.exec(prev)?.[1]?.toLowerCase();
  return lastWord !== undefined && CONTINUATION_WORDS.has(lastWord);
}

/**
 * Splits a description into plain-text blocks: code fences, tables, rules and instruction tag
 * blocks dropped; headings and list items kept as blocks of their own; hard-wrapped lines joined.
 */
export function plainTextBlocks(description: string, options: PlainTextOptions = {}): TextBlock[] {
  let text = description.replace(/\r\n?/g, "\n");
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
    const heading = /^#{1,6}\s+(.*?)\s*#*$/.exec(line);
    if (heading) {
      flush();
      blocks.push({ text: collapse(stripInlineMarkdown(heading[1] ?? "")), kind: "heading" });
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
