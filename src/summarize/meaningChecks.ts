import type { RawTool } from "../model/types.js";
import { stem, tokensOf, wordsOf, type ToolVocabulary } from "./toolWords.js";
import type { ToolSummary } from "./types.js";

/**
 * Share of a summary's content words that must occur in the tool's own text (name, title,
 * description, schema). An honest extractive summary is a span of the description, so it scores 1
 * unless normalization fails; a summary of another tool, or one with a sentence of its own added,
 * scores far lower. bench/guardFalseRejects.ts measures both sides on the corpus.
 */
export const GROUNDED_SHARE = 0.6;
/** A piece is judged for grounding only once this many of its content words are not in the tool's text. */
export const MIN_UNGROUNDED = 2;
/** Characters of a piece grounding reads: each word is looked up in the tool's whole text. */
const MAX_GROUNDED_CHARS = 2_000;

const stems = (text: string): Set<string> =>
  new Set(
    text
      .split(/\s+/)
      .filter((w) => w !== "")
      .map(stem),
  );

/**
 * Words that carry no claim of their own: function words, and the vocabulary any summary of any
 * tool may use without the tool saying it (what it does in general terms: gets, lists, returns,
 * details, given). They are left out of the grounding count; what a summary says the tool does is
 * checked apart, by effect class.
 */
const NEUTRAL = stems(
  // function words
  "a an the of to in on for by with from as at or and nor but if into onto than then that this these those it its " +
    "is are be been being was were has have had having do does can could may might must should shall will would not no " +
    "all any each every some one more most less least other another such only also via per up out over under about both " +
    "either neither own same so just very much many few several their them they there here which what who whom " +
    "whose when where whether while how why whatever within without across after before between through during until " +
    "upon against along among around behind beyond like unlike e g i ie eg etc vs see " +
    // generic summary vocabulary
    "tool tools given specified specific optional optionally required parameter parameters param value values result " +
    "results detail details information info data item items entry entries id ids identifier identifiers name names new " +
    "existing current matching match based related associated available multiple single number count type types format " +
    "formats json text string object array list lists listing default limit page pages paginated pagination filter filters " +
    "filtered including include includes included using use uses used provide provides provided return returns " +
    "returned get gets fetch fetches retrieve retrieves show shows display displays find finds search searches look looks " +
    "lookup view views read reads check checks report reports describe describes summary summaries " +
    "create creates add adds update updates modify modifies change changes edit edits write writes set sets " +
    "delete deletes remove removes overwrite overwrites irreversible irreversibly permanent permanently destructive",
);

/** Verbs and words that say a tool deletes or destroys something, as stems. */
const DELETE_CLASS = stems(
  "delete deletes deletion remove removal drop destroy destruction purge wipe erase truncate kill terminate " +
    "termination revoke revocation uninstall unlink discard evict expunge shred nuke obliterate overwrite " +
    "irreversible irreversibly permanently destructive deregister unregister unpublish unset trash cleanup clear prune " +
    "retire decommission dispose",
);

/** Verbs that say a tool changes something (the delete class counts too), as stems. */
const CHANGE_CLASS = stems(
  "create add insert write update edit modify set put patch change move rename copy send post publish pay " +
    "transfer charge refund execute install deploy merge push commit close assign upload save replace append apply " +
    "enable disable start stop restart cancel approve reject invite submit archive unarchive restore schedule book buy " +
    "sell sign fork lock unlock mark reply comment react star unstar follow unfollow subscribe unsubscribe import " +
    "resize scale reboot shutdown attach detach link pin unpin mute unmute block unblock ban unban register upgrade " +
    "downgrade rollback revert reset clear trigger fill type click press drag drop hover upload forward email notify " +
    "broadcast release migrate sync provision allocate grant share resolve reopen snooze transition duplicate clone " +
    "rotate renew resume pause suspend activate deactivate configure connect disconnect invoke run launch spawn " +
    "generate record tag label rate vote annotate increment decrement reorder sort convert compress encrypt decrypt " +
    "mutate alter overwrite store persist initialize init setup provisioning modification creation insertion " +
    "cancellation relate manage build repair accept decline postpone authorize format empty trash open make produce " +
    "file raise place establish compose draft define",
);
for (const word of DELETE_CLASS) CHANGE_CLASS.add(word);

/**
 * The permission gates' rule (policy's `isReadOnlyTool`, a layer above this one): only an explicit
 * `readOnlyHint: true` makes a tool read-only; an unannotated tool may be destructive.
 */
function isReadOnlyTool(tool: RawTool): boolean {
  return tool.annotations?.readOnlyHint === true;
}

/** Whether `word` says a tool deletes or changes something ("Removes", "created", "upload"). */
export function isEffectWord(word: string): boolean {
  return CHANGE_CLASS.has(stem(word));
}

/**
 * Words of a tool's name or opening verb that say it deletes: the delete class without the words
 * that only qualify ("permanently") and without verbs too often used of other things ("clear" a
 * filter, "unset" an option).
 */
const DELETE_SIGNAL = stems(
  "delete deletion remove removal drop destroy destruction purge wipe erase truncate kill terminate revoke " +
    "uninstall unlink discard evict expunge shred nuke obliterate deregister unregister",
);
/** The same for changing: verbs whose object is changed, added or sent. */
const CHANGE_SIGNAL = stems(
  "create add insert write update edit modify patch rename send publish pay transfer charge refund deploy merge " +
    "push commit upload save replace append install invite submit archive restore book buy sell fork reply comment " +
    "move cancel approve reject assign revert rollback reset overwrite provision grant migrate",
);

/** Verbs of reading: a summary that keeps only these has lost a changing tool's effect. */
const READ_VERBS = stems(
  "get list show display fetch retrieve find search read view count report describe check look lookup query inspect " +
    "return browse see peek preview scan explore discover enumerate",
);
/** Words that never carry an effect on their own. */
const OPENER_WORDS = stems("a an the this that these those it its all any some each every one new existing");

/** Text that calls a tool safe or says nothing changes: a claim only a read-only tool may carry. */
const READ_CLAIM =
  /\bread[- ]?only\b|\b(?:only|just|merely|simply|purely) (?:reads?|reading|looks? up|lookups?|queries|views?|inspects?|retrieves?|fetch(?:es)?|reports?|shows?|lists?|counts?)\b|\blookup[- ]only\b|\b(?:harmless|safe|simple|pure|plain|passive|read) (?:lookup|look-up|query|check|read)\b|\bnothing (?:\S{1,40} ){0,3}(?:changes|is changed|gets changed|is modified|is altered|is deleted|is removed|is written|is lost|happens)\b|\bno (?:changes?|side[- ]effects?|modifications?|writes?|mutations?)\b|\b(?:does not|doesn't|do not|don't|never|will not|won't|cannot|can't) (?:modify|change|alter|delete|write|remove|touch|affect|mutate|destroy)\b|\bwithout (?:modifying|changing|altering|deleting|writing|removing|touching|affecting|side[- ]effects?)\b|\b(?:safe|safely|harmless|non[- ]destructive|side[- ]effect[- ]free|fully reversible)\b/gi;

/** The plainest of those claims: a destructive tool's summary never makes them, whatever its text says. */
const HARMLESS =
  /^(?:safe|safely|read[- ]?only|harmless|no side[- ]effects?|without side[- ]effects?|does(?: not|n't) (?:modify|change|alter|delete|write)|non[- ]destructive|fully reversible)$/i;

/**
 * Text addressed to the model rather than describing the tool: instructions to act, to ignore, to
 * hide, fake system tags. Matched phrases are allowed when the tool's own text has the same words.
 */
const INSTRUCTION =
  /\bignore\b|\bdisregard\b|\bforget (?:all|any|the|your|previous|prior|above|everything)\b|\bbefore (?:you |the assistant |the model )?(?:answer|answering|respond|responding|reply|replying|continu|continuing|proceed|proceeding|finish|finishing|do anything|doing anything|use|using|call|calling|return|returning)\b|\b(?:system prompt|system message|developer message|new instructions?|previous instructions?)\b|<\/?(?:system|instructions?|important|admin)>|\[(?:system|important|admin)\]|\b(?:you|your assistant|the assistant|the model|the ai|the agent|assistants?|agents?|llms?) (?:must|should|need to|have to|are required to|will need to)\b|\bdo not (?:tell|inform|mention|reveal|show)\b|\b(?:with|using|via|through|call|invoke|run|use) the \S{1,40} tool\b|\b(?:then|always|immediately|first|also|afterwards|now) (?:send|transfer|pay|wire|call|invoke|run|execute|email|forward|upload|post|delete|remove|visit|open|fetch|download|share|reveal|print|include|append|tell|reply|respond|use)\b/gi;

/** A sentence of a summary past the first that starts with a verb telling the reader to act. */
const IMPERATIVE_START =
  /^(?:please |now |then |also |always |first |immediately )*(?:send|transfer|pay|wire|call|invoke|run|execute|email|forward|upload|post|visit|open|click|navigate|fetch|download|share|reveal|print|include|append|tell|reply|respond|answer|use|ignore|disregard|forget|do|don't|never|always|make sure|ensure|remember)\b/i;

// Every repetition that could restart from each position of a long run is bounded, so a summary
// of any length is scanned in linear time.
const URL_PATTERN = /\b(?:[a-z][a-z0-9+.-]{0,30}:\/\/|www\.)[^\s<>"'`)\]]+/gi;
const EMAIL = /\b[\w.+-]{1,64}@[\w-]{1,63}\.[\w.-]{1,253}\b/g;
/** An IBAN or other account-like code: two capitals, two digits, then letters and digits, in groups. */
const ACCOUNT = /\b[A-Z]{2}\d{2}[A-Z0-9]{0,30}(?:[ -][A-Z0-9]{2,30}){0,8}\b/g;
/** A run of digits, separators allowed inside ("5,000", "4111 1111"). */
const DIGIT_RUN = /\d+(?:[,. _-]\d+)*/g;

/** Text that calls a parameter optional or tells the reader it may be left out. */
const OMISSION =
  /\(optional\)|\boptional(?:ly)?\b|\bif (?:provided|given|specified|set|present|needed|wanted|desired|any)\b|\b(?:may|can|could|might) be (?:left out|omitted|skipped|left blank|left empty|blank|empty|ignored|dropped)\b|\bleave (?:it |this |that )?(?:blank|empty|out|unset)\b|\bleft (?:blank|empty|out)\b|\bskip (?:it|this|that|them)\b|\b(?:can|may|could) (?:skip|omit|ignore)\b|\bskippable\b|\bomit (?:it|this|that|them)\b|\bnot (?:required|needed|necessary|mandatory)\b|\bno need to\b|\bunnecessary\b|\bif you (?:want|like|wish)\b/i;

/** {@link OMISSION}, every match. */
const OMISSIONS = new RegExp(OMISSION.source, "gi");

/**
 * The matches of the global `pattern` in `text` that `unless` does not excuse, the first one; a
 * test without the global flag first, as most pieces have none and the walk allocates.
 */
function firstMatch(text: string, pattern: RegExp, unless: (match: string) => boolean): string | undefined {
  let once = single.get(pattern);
  if (once === undefined) {
    once = new RegExp(pattern.source, pattern.flags.replace("g", ""));
    single.set(pattern, once);
  }
  if (!once.test(text)) return undefined;
  for (const match of text.matchAll(pattern)) if (!unless(match[0])) return match[0];
  return undefined;
}

/** Each global pattern's twin without the flag, for a test that keeps no state. */
const single = new Map<RegExp, RegExp>();

/** How much of `text` the tool's own text carries. */
export interface Grounding {
  /** Content words (not neutral). */
  content: number;
  /** Content words not found in the tool's text, as written. */
  ungrounded: string[];
}

/**
 * Counts the content words of `text` and those of them the tool's text lacks. A word is counted
 * as written ("JavaScript" is one word), and found when the tool has it whole or has each of its
 * parts ("userName" where the tool says "user name").
 */
export function grounding(text: string, vocabulary: ToolVocabulary): Grounding {
  const ungrounded: string[] = [];
  let content = 0;
  // A summary is short; one that is not (and is refused for its length) is judged by its start.
  for (const { token, parts } of tokensOf(text.length > MAX_GROUNDED_CHARS ? text.slice(0, MAX_GROUNDED_CHARS) : text)) {
    const meaningful = parts.filter((part) => !NEUTRAL.has(stem(part)) && (part.length > 1 || /\d/.test(part)));
    if (meaningful.length === 0) continue;
    content++;
    if (!vocabulary.has(token) && !meaningful.every((part) => vocabulary.has(part))) ungrounded.push(token);
  }
  return { content, ungrounded };
}

/** True when a piece's grounding is too weak: enough words the tool never says, and too small a share. */
export function poorlyGrounded(g: Grounding, share = GROUNDED_SHARE, minUngrounded = MIN_UNGROUNDED): boolean {
  return g.ungrounded.length >= minUngrounded && (g.content - g.ungrounded.length) / g.content < share;
}

/** What a tool's name, annotations and first sentence say it does: delete, change, or neither. */
export type EffectClass = "delete" | "change" | undefined;

/** Whether one of `stems` is in `words`. */
function hasStemOf(stems: Iterable<string>, words: ReadonlySet<string>): boolean {
  for (const s of stems) if (words.has(s)) return true;
  return false;
}

/**
 * The effect class of `tool`: "delete" when its name or title, or the verb its description opens
 * with, says it deletes; "change" when they say it changes something, or when it is annotated
 * `destructiveHint: true` and its description opens with a changing verb. A tool annotated
 * read-only has none.
 */
export function effectClass(tool: RawTool, vocabulary: ToolVocabulary): EffectClass {
  if (isReadOnlyTool(tool)) return undefined;
  const said = (signal: ReadonlySet<string>): boolean => hasStemOf(vocabulary.nameStems, signal) || hasStemOf(vocabulary.leadVerbs, signal);
  if (said(DELETE_SIGNAL)) return "delete";
  if (said(CHANGE_SIGNAL)) return "change";
  // The annotation says only that the tool may destroy something: it asks for a changing verb
  // where the description opens with one to keep ("Manage env vars", "Format cells").
  if (tool.annotations?.destructiveHint === true && hasStemOf(vocabulary.leadVerbs, CHANGE_CLASS)) return "change";
  return undefined;
}

/**
 * Whether `text` keeps an effect of `effect`'s class: a word of the class, or, when the tool's
 * first sentence has none, the verb that sentence opens with (a description that says "Collapse or
 * expand a row group" is kept by a summary that says "Collapses").
 */
function keepsEffect(text: string, effect: Exclude<EffectClass, undefined>, vocabulary: ToolVocabulary): boolean {
  const words = effect === "delete" ? DELETE_CLASS : CHANGE_CLASS;
  const summaryStems = wordsOf(text).map(stem);
  // "Redeploys", "Rebuilds": the verb again is the verb.
  if (summaryStems.some((s) => words.has(s) || (s.length > 5 && s.startsWith("re") && words.has(s.slice(2))))) return true;
  if (hasStemOf(vocabulary.leadStems, words)) return false;
  const verbs = new Set(vocabulary.leadVerbs.filter((v) => !READ_VERBS.has(v) && !OPENER_WORDS.has(v)));
  return summaryStems.some((s) => verbs.has(s));
}

/** Sentences and clauses of a summary, split at sentence ends, semicolons, colons and dashes. */
function clauses(text: string): string[] {
  if (!/[.!?;:]\s|\s[-–—]\s/.test(text)) return [text.trim()];
  return text
    .split(/(?<=[.!?;:])\s+|(?<!\s)\s+[-–—]\s+/)
    .map((c) => c.trim())
    .filter((c) => c !== "");
}

/** What {@link meaningReasons} needs besides the tool and its summary. */
export interface MeaningContext {
  vocabulary: ToolVocabulary;
  /** Names of the required top-level parameters. */
  required: ReadonlySet<string>;
  /**
   * The tool destroys or overwrites (annotated so, or named or described with such a verb): it is
   * never called harmless, whatever its own text says.
   */
  destructive: boolean;
  /** Identifiers already reported as names the tool lacks: not counted again by grounding. */
  reported?: Iterable<string>;
}

/**
 * Reasons `summary` misstates `tool`'s meaning, beyond the names the structural checks look at:
 * words the tool never says (grounding), a lost effect (a deleting tool summarized without a
 * deleting verb), a claim of safety the tool does not make, instructions to the model, links,
 * account numbers and figures from nowhere, and required parameters said to be skippable.
 */
export function meaningReasons(tool: RawTool, summary: ToolSummary, context: MeaningContext): string[] {
  const { vocabulary, required, destructive } = context;
  const reported = [...(context.reported ?? [])];
  const reasons: string[] = [];
  const text = summary.summary;
  const pieces: Array<[string, string]> = [
    ["summary", text],
    ...Object.entries(summary.params).map(([name, note]): [string, string] => [`params.${name}`, note]),
  ];

  // Effect class: a deleting or changing tool keeps a verb of its class.
  const effect = effectClass(tool, vocabulary);
  if (effect !== undefined && !keepsEffect(text, effect, vocabulary)) {
    reasons.push(
      effect === "delete" ? "the tool deletes, and the summary says nothing of deleting" : "the tool changes things, and the summary says nothing of changing",
    );
  }

  // Safety claims. A tool not annotated read-only (an unannotated one may be destructive, as the
  // permission gates assume) is not called read-only, safe or lookup-only unless its own text
  // says so; a destructive tool's summary is never called safe, harmless or read-only at all.
  if (!isReadOnlyTool(tool) || destructive) {
    for (const [where, piece] of pieces) {
      const strict = destructive && where === "summary";
      const claim = firstMatch(piece, READ_CLAIM, (m) => vocabulary.says(m) && !(strict && HARMLESS.test(m)));
      if (claim === undefined) continue;
      reasons.push(destructive ? `destructive tool described as harmless ("${claim}")` : `tool not annotated read-only described as harmless ("${claim}")`);
      break;
    }
  }

  // Text addressed to the model, links, addresses, account numbers and long figures from nowhere.
  for (const [where, piece] of pieces) {
    const instruction = firstMatch(piece, INSTRUCTION, (m) => vocabulary.says(m));
    const imperative = clauses(piece)
      .slice(1)
      .find((c) => IMPERATIVE_START.test(c) && !vocabulary.says(c));
    if (instruction !== undefined) reasons.push(`${where} reads as instructions to the model ("${instruction}"), which the tool's own text does not contain`);
    else if (imperative !== undefined)
      reasons.push(`${where} reads as instructions to the model ("${cut(imperative)}"), which the tool's own text does not contain`);
    const link = firstMatch(piece, URL_PATTERN, (m) => vocabulary.says(m)) ?? firstMatch(piece, EMAIL, (m) => vocabulary.says(m));
    if (link !== undefined) reasons.push(`${where} has a link or address the tool's text does not ("${cut(link)}")`);
    const account = firstMatch(piece, ACCOUNT, (m) => vocabulary.says(m));
    const figure = firstMatch(piece, DIGIT_RUN, (m) => m.replace(/\D/g, "").length < 4 || vocabulary.says(m));
    if (account !== undefined) reasons.push(`${where} has an account number the tool's text does not ("${cut(account)}")`);
    else if (figure !== undefined) reasons.push(`${where} has a number the tool's text does not ("${cut(figure)}")`);
  }

  // Required parameters: neither their notes nor the summary say they may be left out (unless
  // those are the tool's own words: then it is the upstream's text, shown in full mode anyway).
  for (const name of required) {
    const note = summary.params[name];
    if (note !== undefined && OMISSION.test(note) && !vocabulary.says(note)) reasons.push(`required parameter ${name} is described as optional`);
  }
  for (const clause of OMISSION.test(text) ? clauses(text) : []) {
    const omission = OMISSION.exec(clause);
    if (omission === null || vocabulary.says(clause)) continue;
    const named = [...required].find((name) => new RegExp(`(?<![\\w-])${escapeRegExp(name)}(?![\\w-])`, "i").test(clause));
    if (named !== undefined) reasons.push(`the summary calls required parameter ${named} optional ("${omission[0]}")`);
  }

  // Grounding: most content words occur in the tool's own text. Safety claims and omission wording
  // are left out: the rules above judge them (and a read-only tool may say it is one in words its
  // text lacks), as the structural checks judge the identifiers they reported.
  for (const [where, piece] of pieces) {
    let judged = firstMatch(piece, READ_CLAIM, () => false) === undefined ? piece : piece.replace(READ_CLAIM, " ");
    if (OMISSION.test(judged)) judged = judged.replace(OMISSIONS, " ");
    for (const identifier of reported) judged = judged.split(identifier).join(" ");
    const g = grounding(judged, vocabulary);
    if (poorlyGrounded(g)) {
      const shown = g.ungrounded
        .slice(0, 6)
        .map((w) => `"${w}"`)
        .join(", ");
      reasons.push(`${where} is not grounded in the tool: ${g.ungrounded.length} of ${g.content} content words occur nowhere in its text (${shown})`);
    }
  }
  return reasons;
}

/** At most 60 characters of `text`, for a reason. */
function cut(text: string): string {
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
