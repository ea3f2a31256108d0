import type { RawTool } from "../model/types.js";
import type { ToolSummary } from "./types.js";
import { isObject } from "../model/json.js";
import { meaningReasons } from "./meaningChecks.js";
import { ToolVocabulary } from "./toolWords.js";

/** Verdict of {@link guardSummary}. */
export type GuardResult = { ok: true } | { ok: false; reasons: string[] };

/**
 * Destructive verbs (delete, drop, remove, destroy, purge, truncate, wipe, kill, terminate, revoke,
 * overwrite) with their inflections, as whole words.
 */
const DESTRUCTIVE_WORD =
  /\b(?:delet(?:e|es|ed|ing|ion)|drop(?:s|ped|ping)?|remov(?:e|es|ed|ing|al)|destr(?:oy|oys|oyed|oying|uction)|purg(?:e|es|ed|ing)|truncat(?:e|es|ed|ing|ion)|wip(?:e|es|ed|ing)|kill(?:s|ed|ing)?|terminat(?:e|es|ed|ing|ion)|revok(?:e|es|ed|ing)|revocation|overwrit(?:e|es|ing|ten))\b/i;

/** Lower-camel words that are ordinary vocabulary, not parameter names. */
const ORDINARY_CAMEL = new Set([
  "iOS",
  "iPadOS",
  "macOS",
  "watchOS",
  "tvOS",
  "visionOS",
  "iPhone",
  "iPad",
  "iPod",
  "iCloud",
  "iTunes",
  "eBay",
  "jQuery",
  "gRPC",
  "pH",
  "mRNA",
  "eSIM",
  "eBook",
  "eCommerce",
  "oAuth",
  "npm",
  "pnpm",
  "ffmpeg",
]);

/**
 * Text addressed to the model rather than describing any tool: the unmistakable marks of a prompt
 * injection ("ignore previous instructions", "you must always ...", "before you answer", fake
 * system tags), which no honest summary has. What `cache verify` flags without the tool; with the
 * tool, the guard applies the wider rules of {@link meaningReasons}.
 */
const INSTRUCTION =
  /\bignore (?:all |any |the )?(?:previous|prior|above|earlier|other|your) (?:instructions?|messages?|prompts?|rules|directions)\b|\bbefore (?:you )?(?:answer|answering|respond|responding|reply|replying)\b|\b(?:system prompt|system message|developer message)\b|<\/?(?:system|instructions?|important|admin)>|\byou (?:must|should|are required to) (?:always|never|first|now|immediately|also)\b|\b(?:assistants?|the model|the ai|llms?|agents?)(?:,)? (?:must|should) (?:always|never|first|now|immediately|also)\b|\bdo not (?:tell|inform|mention|reveal)(?: this)? to the user\b|\bbefore (?:using|calling) any other tool\b/i;

/** C0 and C1 control characters other than tab and line feed: terminal escape sequences start with them. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

const URL_PATTERN = /\b(?:https?|ftp|wss?|mongodb(?:\+srv)?|file):\/\/\S+/gi;
const SNAKE = /\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b/g;
const CAMEL = /\b[a-z]+[A-Z][A-Za-z0-9]*\b/g;
const BACKTICKED = /`([^`\n]+)`/g;

/** Top-level property names and required names of a tool's input schema. */
function topLevel(tool: RawTool): { properties: Set<string>; required: Set<string> } {
  const schema: unknown = tool.inputSchema;
  const properties = isObject(schema) && isObject(schema["properties"]) ? Object.keys(schema["properties"]) : [];
  const required = isObject(schema) && Array.isArray(schema["required"]) ? schema["required"].filter((r): r is string => typeof r === "string") : [];
  return { properties: new Set(properties), required: new Set(required) };
}

/**
 * True when a tool changes or removes things irreversibly: annotated `destructiveHint: true`, or
 * (unless annotated read-only or explicitly non-destructive) named or described with a verb such
 * as delete, drop, remove, purge, kill, revoke, overwrite.
 */
export function isDestructiveTool(tool: RawTool): boolean {
  const hints = tool.annotations;
  if (hints?.destructiveHint === true) return true;
  if (hints?.readOnlyHint === true || hints?.destructiveHint === false) return false;
  const nameWords = tool.name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/[_.:/-]+/g, " ");
  return DESTRUCTIVE_WORD.test(nameWords) || DESTRUCTIVE_WORD.test(tool.description ?? "");
}

/** Identifier-like words of `text` that could be taken for parameter names. */
function identifiersIn(text: string): string[] {
  const found: string[] = [];
  const withoutUrls = text.replace(URL_PATTERN, " ");
  for (const match of withoutUrls.matchAll(BACKTICKED)) {
    const inner = (match[1] ?? "").trim();
    if (/^[A-Za-z_$][\w$.-]*$/.test(inner) && !/^(?:true|false|null|undefined)$/.test(inner)) found.push(inner);
  }
  const bare = withoutUrls.replace(BACKTICKED, " ");
  for (const match of bare.matchAll(SNAKE)) found.push(match[0]);
  for (const match of bare.matchAll(CAMEL)) if (!ORDINARY_CAMEL.has(match[0])) found.push(match[0]);
  return found;
}

/**
 * Checks a summary written for `tool` before it is stored or served. By names: not empty; not
 * longer than the original description; no parameter names the schema does not have (identifiers
 * that appear in the tool's own texts are fine: they came from the source); `params` only for real
 * top-level properties. By meaning ({@link meaningReasons}): most content words occur in the tool's
 * own text; a tool that deletes or changes things keeps a verb saying so; a destructive tool is not
 * called harmless, nor a tool not annotated read-only read-only or safe unless its text says so;
 * no instructions to the model, links, account numbers or long figures the tool's text lacks;
 * required parameters not said to be optional or skippable.
 */
export function guardSummary(tool: RawTool, summary: ToolSummary): GuardResult {
  const reasons: string[] = [];
  const text = summary.summary.trim();
  const original = (tool.description ?? "").trim();

  if (text === "") reasons.push("summary is empty");
  // Not longer rather than strictly shorter: a short description is its own best summary.
  if (original !== "" && text.length > original.length) {
    reasons.push(`summary is longer than the original description (${text.length} > ${original.length} characters)`);
  }

  const { properties, required } = topLevel(tool);
  const vocabulary = new ToolVocabulary(tool);
  const isKnown = (word: string): boolean => vocabulary.lower.includes(word.toLowerCase());

  for (const key of Object.keys(summary.params)) {
    if (!properties.has(key)) reasons.push(`params.${key} is not a property of the input schema`);
    else if (!(summary.params[key] ?? "").trim()) reasons.push(`params.${key} is empty`);
  }

  const invented = new Set<string>();
  for (const piece of [text, ...Object.values(summary.params)]) {
    for (const word of identifiersIn(piece)) {
      if (isKnown(word)) continue;
      // `data.pages` is fine when its parts are known.
      if (word.includes(".") && word.split(".").every((part) => part === "" || isKnown(part))) continue;
      invented.add(word);
    }
  }
  for (const word of invented) reasons.push(`mentions "${word}", which is not a parameter of the tool`);

  if (text !== "") {
    const context = { vocabulary, required, destructive: isDestructiveTool(tool), reported: invented };
    reasons.push(...meaningReasons(tool, { summary: text, params: summary.params }, context));
  }
  reasons.push(...textReasons(summary));

  return reasons.length === 0 ? { ok: true } : { ok: false, reasons };
}

/** Checks of a summary that need no tool: control characters. */
function textReasons(summary: ToolSummary): string[] {
  for (const piece of [summary.summary, ...Object.values(summary.params)]) {
    if (CONTROL.test(piece)) return ["contains control characters (terminal escape sequences)"];
  }
  return [];
}

/**
 * The part of {@link guardSummary} that holds without the tool, for a cache line checked offline
 * (`abridge cache verify`): a line edited by hand, or by anyone who can write the cache, may carry
 * instructions to the model or control characters. Whether it is longer than the original, or
 * names parameters the tool lacks, needs the tool: loading applies the full guard.
 */
export function guardCachedEntry(entry: ToolSummary): GuardResult {
  const reasons: string[] = [];
  for (const piece of [entry.summary, ...Object.values(entry.params)]) {
    const instruction = INSTRUCTION.exec(piece);
    if (instruction) {
      reasons.push(`reads as instructions to the model ("${instruction[0]}")`);
      break;
    }
  }
  reasons.push(...textReasons(entry));
  return reasons.length === 0 ? { ok: true } : { ok: false, reasons };
}
