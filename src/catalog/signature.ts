import { MAX_INLINE_ENUM, inputProperties, type PropertyShape, type SchemaShape } from "./compactSchema.js";

/** How many values a cut enum still shows, so the model sees what kind of values it takes. */
const CUT_ENUM_VALUES = 3;
/** Nested objects with at most this many properties show their keys; bigger ones show `{...}`. */
const MAX_INLINE_KEYS = 4;

/** An enum value as written in a signature: bare when that cannot be misread, JSON otherwise. */
function enumLiteral(value: unknown): string {
  if (typeof value === "string" && /^[A-Za-z0-9_./:@+-]+$/.test(value)) return value;
  return JSON.stringify(value) ?? String(value);
}

function enumLabel(values: unknown[]): string {
  const literals = values.map(enumLiteral);
  const joined = literals.join("|");
  // Every value of a short enum, however long: the line may be the only place the model learns
  // them (compact lists no property schemas by default), and a guessed value fails validation.
  if (values.length <= MAX_INLINE_ENUM) return joined;
  return `${literals.slice(0, CUT_ENUM_VALUES).join("|")}|...`;
}

/**
 * The label of one value's shape. `string` is the unmarked default, so it is left out at the top
 * level (`owner` means `owner: string`) but spelled out where the bare form would be ambiguous
 * (array items, unions).
 */
function shapeLabel(shape: SchemaShape, depth: number, topLevel: boolean, typedStrings = false): string {
  if (shape.enumValues !== undefined && shape.enumValues.length > 0) return enumLabel(shape.enumValues);
  if (shape.types.length === 0) return "any";
  const labels = shape.types.map((type) => typeLabel(type, shape, depth));
  // Values a union names beside an open branch lead, the open types follow: `pd|pw|pm|py|string`.
  const known = shape.knownValues;
  if (known !== undefined && known.otherTypes.length > 0) {
    return `${enumLabel(known.values)}|${known.otherTypes.map((type) => typeLabel(type, shape, depth)).join("|")}`;
  }
  const label = labels.join("|");
  return topLevel && label === "string" && !typedStrings ? "" : label;
}

/** Longest default (as written) a parameter line shows; a longer one is left to `get_schema`. */
const MAX_DEFAULT_CHARS = 24;

/** ` = 30`, ` = true`, ` = desc` for a short scalar default; "" otherwise. */
function defaultText(shape: SchemaShape): string {
  const value = shape.defaultValue;
  if (value === undefined || value === null || typeof value === "object") return "";
  const text = typeof value === "string" ? enumLiteral(value) : String(value);
  return text === "" || text.length > MAX_DEFAULT_CHARS ? "" : ` = ${text}`;
}

function typeLabel(type: string, shape: SchemaShape, depth: number): string {
  switch (type) {
    case "array": {
      if (shape.items === undefined) return "array";
      // Items stay at the array's depth: `edits: {oldText, newText}[]` is as readable as `{...}`.
      const item = shapeLabel(shape.items, depth, false);
      return item.includes("|") ? `(${item})[]` : `${item}[]`;
    }
    case "object": {
      const props = shape.properties;
      if (props === undefined || props.length === 0) return "object";
      if (depth > 0 || props.length > MAX_INLINE_KEYS) return "{...}";
      return `{${orderParams(props)
        .map((p) => paramText(p, depth + 1))
        .join(", ")}}`;
    }
    default:
      return type;
  }
}

function orderParams(props: PropertyShape[]): PropertyShape[] {
  return [...props.filter((p) => p.required), ...props.filter((p) => !p.required)];
}

/**
 * True when `label` says something the compact schema does not: the keys of a nested object
 * (`{x, y?: number}`) or the first values of an enum of more than 10 values (`a|b|c|...`). Types and
 * short enums are in the compact schema already.
 */
function beyondCompactSchema(label: string): boolean {
  return /\{(?!\.\.\.\})/.test(label) || label.includes("|...");
}

function paramText(param: PropertyShape, depth: number, options: ParameterListOptions = {}): string {
  const full = shapeLabel(param.shape, depth, true, depth === 0 && options.typedStrings === true);
  // Values named beside an open branch are no `enum` of the compact schema: the line keeps them.
  const label = options.schemaAlongside === true && !beyondCompactSchema(full) && param.shape.knownValues === undefined ? "" : full;
  const name = /^[A-Za-z_$][\w$-]*$/.test(param.name) ? param.name : JSON.stringify(param.name);
  const fallback = depth === 0 && options.defaults === true && !param.required ? defaultText(param.shape) : "";
  return `${name}${param.required ? "" : "?"}${label === "" ? "" : `: ${label}`}${fallback}`;
}

/**
 * The parenthesized parameter list of a tool's signature, e.g.
 * `(owner, repo, title, body?, labels?: string[])`: required parameters first, `?` marks optional
 * ones, a type is shown only where it is not `string`, short enums inline
 * (`state?: open|closed|all`), enums of more than 10 values cut (`a|b|c|...`), arrays as `T[]`, small nested objects
 * by their keys (`{x, y?: number}`), bigger ones as `{...}`, `any` where the schema allows
 * anything (`array` when the items are unknown). A schema that declares no properties and no `type` (gitlab's, as shipped) or only a
 * map of extra properties gives `(...)`: the arguments are unknown, not absent.
 */
export function parameterList(inputSchema: unknown, options: ParameterListOptions = {}): string {
  const { properties, root } = inputProperties(inputSchema);
  if (properties.length === 0) {
    const open = root.openProperties === true || root.types.length === 0;
    return open ? "(...)" : "()";
  }
  return `(${properties.map((p) => paramText(p, 0, options)).join(", ")})`;
}

/** Options of {@link parameterList}. */
export interface ParameterListOptions {
  /**
   * The list is shown beside the compact input schema (`compact` mode): leave out the types and
   * short enums that schema already carries, keeping names, `?` and only what it cannot say
   * (nested keys, a cut long enum): `(owner, repo, state?, labels?, edits: {oldText, newText}[])`.
   */
  schemaAlongside?: boolean;
  /** Show a short scalar default of an optional top-level parameter: `per_page?: number = 30`. */
  defaults?: boolean;
  /** Spell out `string` at the top level too (`owner: string`) rather than leaving it unmarked. */
  typedStrings?: boolean;
}

/**
 * One-line signature of a tool: `name` followed by its {@link parameterList}, e.g.
 * `create_issue(owner, repo, title, body?, labels?: string[])`.
 */
export function toolSignature(name: string, inputSchema: unknown): string {
  return `${name}${parameterList(inputSchema)}`;
}

/**
 * A short one-line form of a description: its first sentence (or line), cut at `maxChars` on a
 * word boundary. Used where a tool has no cached summary yet but must still be listed briefly.
 */
export function briefDescription(text: string | undefined, maxChars = 160): string {
  if (text === undefined) return "";
  const line =
    text
      .trim()
      .split(/\n\s*\n|\n(?=\s*[-*#|])|\n/)[0]
      ?.trim() ?? "";
  const sentence = /^(.+?[.!?])(?:\s|$)/.exec(line)?.[1] ?? line;
  if (sentence.length <= maxChars) return sentence;
  const cut = sentence.slice(0, maxChars);
  const space = cut.lastIndexOf(" ");
  return `${(space > maxChars / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:]+$/, "")}...`;
}
