/**
 * JSON Schema to TypeScript type expressions, for the code view's declarations. The rule is that a
 * type never refuses a value its schema accepts: what a type cannot say (`not`, `if`/`then`,
 * `patternProperties`, a `$ref` that points nowhere or elsewhere, nesting past a bound) widens it,
 * to `unknown` at worst. Two choices are narrower than JSON Schema's letter, as every
 * schema-to-type translation makes them: a node without `type` that has object (or array) keywords
 * is taken as an object (or array), and an object without `additionalProperties` gets no index
 * signature, so the model's typo in a property name is caught.
 */
import { isObject } from "../../model/json.js";
import { codeIdentifier } from "./codeNames.js";
import { resolveLocalRef } from "../../catalog/compactSchema.js";
import { inferShape, propertyKey, shapeType } from "./observedShapes.js";
import { briefDescription } from "../../catalog/signature.js";
import { hasOwnKeywords, impliedKinds, type Kind, kindOf, knownKinds, meet } from "./schemaKinds.js";

/** Bounds of one translation. */
export const TYPE_BOUNDS = {
  /** Levels of nested objects and arrays written inline; deeper ones are `unknown`. */
  depth: 8,
  /** Schema nodes followed down one path (anyOf, allOf and refs included). */
  hops: 64,
  /** Values an `enum` lists as literals; a longer one is its values' kinds (`string`). */
  enumValues: 64,
  /** Branches of an `anyOf`/`oneOf` written; more make the union `unknown`. */
  branches: 64,
  /** Elements of a tuple written; a longer one is `unknown[]`. */
  tupleItems: 32,
  /** Named types (`$ref` targets) per tool; refs past it are `unknown`. */
  namedTypes: 64,
  /** Members of a union an intersection may multiply out to (TypeScript distributes `&` over `|`). */
  product: 64,
  /** Characters of an index signature's union before it is written `unknown`. */
  indexChars: 160,
  /** A named type that refers to no other and is at most this long is written in place. */
  inlineChars: 20,
} as const;

/** A type expression with how tightly it binds: 0 union, 1 intersection, 2 anything tighter. */
interface Ty {
  text: string;
  prec: 0 | 1 | 2;
  /** The members of a union (prec 0). */
  members?: Ty[];
  /** A literal type's kind: a union with the kind itself drops it (`string | "a"` is `string`). */
  literal?: "string" | "number" | "boolean";
}

const UNKNOWN: Ty = { text: "unknown", prec: 2 };
const NEVER: Ty = { text: "never", prec: 2 };
const NULL: Ty = { text: "null", prec: 2 };
const UNDEFINED: Ty = { text: "undefined", prec: 2 };

function atom(text: string): Ty {
  return { text, prec: 2 };
}

function union(types: readonly Ty[]): Ty {
  const members: Ty[] = [];
  const seen = new Set<string>();
  for (const t of types) {
    for (const m of t.members ?? [t]) {
      if (m.text === "unknown") return UNKNOWN;
      if (m.text === "never" || seen.has(m.text)) continue;
      seen.add(m.text);
      members.push(m);
    }
  }
  const wide = members.filter((m) => m.literal === undefined || !seen.has(m.literal));
  if (wide.length === 0) return NEVER;
  if (wide.length === 1) return wide[0] as Ty;
  return { text: wide.map((m) => m.text).join(" | "), prec: 0, members: wide };
}

function intersection(types: readonly Ty[]): Ty {
  const factors: Ty[] = [];
  const seen = new Set<string>();
  for (const t of types) {
    if (t.text === "never") return NEVER;
    if (t.text === "unknown" || seen.has(t.text)) continue;
    seen.add(t.text);
    factors.push(t);
  }
  if (factors.length === 0) return UNKNOWN;
  if (factors.length === 1) return factors[0] as Ty;
  return { text: factors.map((f) => (f.prec === 0 ? `(${f.text})` : f.text)).join(" & "), prec: 1 };
}

/** `t` where only a tight type may stand (`T[]`, `T?`). */
function tight(t: Ty): string {
  return t.prec === 2 ? t.text : `(${t.text})`;
}

/** Marks a reference to named type `id` in text; {@link TypeScope.finish} replaces it. */
function refMarker(id: number, direct: boolean): string {
  return `\u0001${direct ? "d" : "g"}${id}\u0002`;
}

const MARKER = /\u0001([dg])(\d+)\u0002/g;
const ALIAS = /^\u0001[dg](\d+)\u0002$/;

/** One named type: a `$ref` target of one schema root. */
interface NamedEntry {
  id: number;
  /** Index of the root (0 input, 1 output) whose pointer it is. */
  root: number;
  target: unknown;
  /** What its name is made from: the pointer's last segment, or the root's label. */
  base: string;
  body?: string;
  prec?: 0 | 1 | 2;
}

/** One schema root and what its refs resolve against. */
export interface SchemaRoot {
  schema: unknown;
  /** The name of the root's own type when a `$ref` points at it (`#`): `Input`, `Output`. */
  label: string;
  /** Notes of the root's own properties by name, before their descriptions (a summarizer's). */
  notes?: Readonly<Record<string, string>>;
}

/** Options of a translation. */
export interface SchemaTypeOptions {
  /** Longest property note in characters; 0 writes none (default 80). */
  noteChars?: number;
}

/** Where a node is met. */
interface At {
  depth: number;
  hops: number;
  /** Inside an object member, index signature, array element or tuple element. */
  guarded: boolean;
  /** The named type whose body this is, -1 outside any. */
  owner: number;
  /** Kinds the enclosing conjunction allows (a parent's `type` for its anyOf branches). */
  kinds: readonly Kind[] | undefined;
  /** Index of the root. */
  root: number;
  /** At the root's own properties. */
  top: boolean;
}

/** The named types of one tool: its `$ref` targets, written once each. */
export class TypeScope {
  private readonly entries: NamedEntry[] = [];
  private readonly byRef = new Map<string, NamedEntry>();
  private readonly roots: SchemaRoot[] = [];
  /** The texts handed out by {@link typeOf}, whose references count as uses. */
  private readonly texts: string[] = [];
  private readonly noteChars: number;

  constructor(options: SchemaTypeOptions = {}) {
    this.noteChars = Math.max(0, options.noteChars ?? 80);
  }

  /** The type of `root.schema`, with markers for the named types it uses ({@link finish} resolves them). */
  typeOf(root: SchemaRoot): string {
    this.roots.push(root);
    const text = this.render(root.schema, { depth: 0, hops: 0, guarded: true, owner: -1, kinds: undefined, root: this.roots.length - 1, top: true }).text;
    this.texts.push(text);
    return text;
  }

  /**
   * Writes every named type met so far (and those they meet) and settles their names. `text`
   * passed to the returned `resolve` gets its markers replaced: by the bare name inside the
   * namespace that declares the types, by `prefix.name` outside it.
   */
  finish(): { types: { name: string; body: string }[]; resolve: (text: string, prefix?: string) => string } {
    for (let i = 0; i < this.entries.length; i++) {
      const entry = this.entries[i] as NamedEntry;
      const body = this.render(entry.target, { depth: 0, hops: 0, guarded: false, owner: entry.id, kinds: undefined, root: entry.root, top: false });
      entry.body = body.text;
      entry.prec = body.prec;
    }
    // A type alias may refer to itself only through an object or array: a cycle of direct
    // references (`type A = B | string; type B = A`) does not compile, so one edge of each becomes
    // `unknown` (wider, so still true).
    const banned = new Set<string>();
    const state = new Map<number, "open" | "done">();
    const direct = (entry: NamedEntry): number[] => [...(entry.body ?? "").matchAll(MARKER)].filter((m) => m[1] === "d").map((m) => Number(m[2]));
    const visit = (id: number): void => {
      state.set(id, "open");
      for (const next of direct(this.entries[id] as NamedEntry)) {
        const s = state.get(next);
        if (s === "open") banned.add(`${id}>${next}`);
        else if (s === undefined) visit(next);
      }
      state.set(id, "done");
    };
    for (const entry of this.entries) if (!state.has(entry.id)) visit(entry.id);
    const bodies = this.entries.map((e) =>
      (e.body ?? "unknown").replace(MARKER, (m, kind: string, id: string) => (kind === "d" && banned.has(`${e.id}>${id}`) ? "unknown" : m)),
    );

    // Only the named types the handed-out texts reach are declared: a ref met in a part that was
    // widened away (an index signature past its bound, a union with unknown) leaves no trace.
    const reached = new Set<number>();
    const pending = this.texts.flatMap((text) => [...text.matchAll(MARKER)].map((m) => Number(m[2])));
    while (pending.length > 0) {
      const id = pending.pop() as number;
      if (reached.has(id)) continue;
      reached.add(id);
      for (const m of (bodies[id] as string).matchAll(MARKER)) pending.push(Number(m[2]));
    }

    // A named type that names nothing else is written in place when it is short or used once
    // (`string`, `"a" | "b"`), and one that only renames another stands for that one.
    const uses = new Map<number, number>();
    const counted = [...this.texts, ...bodies.filter((_, id) => reached.has(id))];
    for (const text of counted) for (const m of text.matchAll(MARKER)) uses.set(Number(m[2]), (uses.get(Number(m[2])) ?? 0) + 1);
    const inlined = new Map<number, { text: string; prec: number } | { target: number }>();
    const decided = new Set<number>();
    const decide = (id: number, open: Set<number>): void => {
      if (decided.has(id) || open.has(id)) return;
      open.add(id);
      const body = bodies[id] as string;
      const alias = ALIAS.exec(body);
      if (alias !== null) {
        const target = Number(alias[1]);
        decide(target, open);
        if (decided.has(target)) inlined.set(id, inlined.get(target) ?? { target });
      } else if (!body.includes("\u0001") && (body.length <= TYPE_BOUNDS.inlineChars || (uses.get(id) ?? 0) <= 1)) {
        inlined.set(id, { text: body, prec: this.entries[id]?.prec ?? 0 });
      }
      open.delete(id);
      decided.add(id);
    };
    for (const entry of this.entries) decide(entry.id, new Set());

    const names = new Map<number, string>();
    const used = new Set<string>();
    for (const entry of this.entries) {
      if (inlined.has(entry.id) || !reached.has(entry.id)) continue;
      const base = codeIdentifier(entry.base);
      let name = base;
      for (let n = 2; used.has(name); n++) name = `${base}_${n}`;
      used.add(name);
      names.set(entry.id, name);
    }
    const substitute = (text: string, prefix: string | undefined): string =>
      text.replace(MARKER, (marker: string, _kind: string, id: string, offset: number) => {
        const form = inlined.get(Number(id));
        if (form !== undefined && "text" in form) {
          // Written in place: a union or intersection is bracketed where it would bind wrongly.
          const after = text.slice(offset + marker.length, offset + marker.length + 2);
          const before = text.slice(Math.max(0, offset - 2), offset);
          const tightNeeded = after === "[]" || after.startsWith("?") || (form.prec === 0 && (after === " &" || before === "& "));
          return form.prec < 2 && tightNeeded ? `(${form.text})` : form.text;
        }
        const name = names.get(form === undefined ? Number(id) : form.target) as string;
        return prefix === undefined ? name : `${prefix}.${name}`;
      });
    return {
      types: this.entries
        .filter((e) => reached.has(e.id) && !inlined.has(e.id))
        .map((e) => ({ name: names.get(e.id) as string, body: substitute(bodies[e.id] as string, undefined) })),
      resolve: (text, prefix) => substitute(text, prefix),
    };
  }

  private named(at: At, ref: string): Ty {
    const key = `${at.root}\u0000${ref}`;
    let entry = this.byRef.get(key);
    if (entry === undefined) {
      const root = this.roots[at.root] as SchemaRoot;
      // Local JSON pointers only: a remote ref, an anchor (`#name`) or a pointer to nothing is unknown.
      const target = ref.startsWith("#") ? resolveLocalRef(root.schema, ref) : undefined;
      if (target === undefined || this.entries.length >= TYPE_BOUNDS.namedTypes) return UNKNOWN;
      entry = { id: this.entries.length, root: at.root, target, base: refBase(ref, root.label) };
      this.entries.push(entry);
      this.byRef.set(key, entry);
    }
    return atom(refMarker(entry.id, !at.guarded && at.owner !== -1));
  }

  private render(node: unknown, at: At): Ty {
    if (node === true) return UNKNOWN;
    if (node === false) return NEVER;
    if (!isObject(node) || at.hops >= TYPE_BOUNDS.hops) return UNKNOWN;
    const root = this.roots[at.root] as SchemaRoot;
    const kinds = meet(knownKinds(node, root.schema), at.kinds) ?? impliedKinds(node);
    const inner: At = { ...at, hops: at.hops + 1, kinds, top: false };
    const factors: Ty[] = [];
    if (kinds !== undefined && kinds.length === 0) factors.push(NEVER);
    else if (kinds !== undefined && hasOwnKeywords(node)) factors.push(this.own(node, at, kinds));
    if (typeof node.$ref === "string") factors.push(this.named(at, node.$ref));
    if (Array.isArray(node.allOf)) for (const branch of node.allOf) factors.push(this.render(branch, inner));
    for (const branches of [node.anyOf, node.oneOf]) {
      if (!Array.isArray(branches) || branches.length === 0) continue;
      factors.push(branches.length > TYPE_BOUNDS.branches ? UNKNOWN : union(branches.map((b) => this.render(b, inner))));
    }
    // An intersection of unions multiplies out: past the bound, drop the later unions (wider).
    let product = 1;
    const kept = factors.filter((f) => {
      const size = f.members?.length ?? 1;
      if (size > 1 && product * size > TYPE_BOUNDS.product) return false;
      product *= size;
      return true;
    });
    const type = intersection(kept);
    // OpenAPI's `nullable: true` widens whatever the rest says.
    return node.nullable === true ? union([type, NULL]) : type;
  }

  /** The type the node's own keywords (type, enum, const, properties, items, ...) give, for `kinds`. */
  private own(node: Record<string, unknown>, at: At, kinds: readonly Kind[]): Ty {
    const values = "const" in node ? [node.const] : Array.isArray(node.enum) ? node.enum : undefined;
    if (values !== undefined) {
      const allowed = values.filter((v) => kinds.includes(kindOf(v)));
      if (allowed.length <= TYPE_BOUNDS.enumValues) return union(allowed.map(literal));
      // Too many to list: the kinds of the values, with what the node says of them.
      const valueKinds = kinds.filter((k) => allowed.some((v) => kindOf(v) === k));
      return union(valueKinds.map((k) => this.kind(node, at, k)));
    }
    return union(kinds.map((k) => this.kind(node, at, k)));
  }

  private kind(node: Record<string, unknown>, at: At, kind: Kind): Ty {
    switch (kind) {
      case "object":
        return this.object(node, at);
      case "array":
        return this.array(node, at);
      default:
        return atom(kind);
    }
  }

  private child(at: At): At {
    return { depth: at.depth + 1, hops: at.hops + 1, guarded: true, owner: at.owner, kinds: undefined, root: at.root, top: false };
  }

  private array(node: Record<string, unknown>, at: At): Ty {
    if (at.depth >= TYPE_BOUNDS.depth) return atom("unknown[]");
    const next = this.child(at);
    const prefix = Array.isArray(node.prefixItems) ? node.prefixItems : Array.isArray(node.items) ? node.items : undefined;
    if (prefix !== undefined) {
      if (prefix.length > TYPE_BOUNDS.tupleItems) return atom("unknown[]");
      const rest = Array.isArray(node.prefixItems) ? node.items : node.additionalItems;
      const min = typeof node.minItems === "number" && Number.isInteger(node.minItems) && node.minItems > 0 ? node.minItems : 0;
      const elements = prefix.map((item, i) => {
        const t = this.render(item, next);
        return i < min ? t.text : `${tight(t)}?`;
      });
      if (rest !== false) {
        const restType = rest === undefined || rest === true ? UNKNOWN : this.render(rest, next);
        if (restType.text !== "never") elements.push(`...${tight(restType)}[]`);
      }
      return atom(`[${elements.join(", ")}]`);
    }
    if (node.items === false) return atom("[]");
    if (node.items === undefined) return atom("unknown[]");
    return atom(`${tight(this.render(node.items, next))}[]`);
  }

  private object(node: Record<string, unknown>, at: At): Ty {
    if (at.depth >= TYPE_BOUNDS.depth) return atom("{ [key: string]: unknown }");
    const next = this.child(at);
    const properties = isObject(node.properties) ? Object.entries(node.properties) : [];
    const required = new Set(Array.isArray(node.required) ? node.required.filter((r): r is string => typeof r === "string") : []);
    const root = this.roots[at.root] as SchemaRoot;
    const extra = node.additionalProperties;
    const extraType = isObject(extra) || typeof extra === "boolean" ? this.render(extra, next) : undefined;

    const members: string[] = [];
    const memberTypes: Ty[] = [];
    let optional = false;
    for (const [name, schema] of properties) {
      const t = this.render(schema, next);
      const isRequired = required.has(name);
      if (!isRequired) optional = true;
      memberTypes.push(t);
      const note = this.note(at.top ? root.notes?.[name] : undefined, schema);
      members.push(`${note}${propertyKey(name)}${isRequired ? "" : "?"}: ${t.text}`);
    }
    const declared = new Set(properties.map(([name]) => name));
    for (const name of required) {
      if (declared.has(name)) continue;
      // Required but not declared: whatever additionalProperties allows.
      const t = extraType ?? UNKNOWN;
      memberTypes.push(t);
      members.push(`${propertyKey(name)}: ${t.text}`);
    }

    let index: Ty | undefined;
    if (extra === undefined) {
      // An object that names no property is a map; keywords that admit keys beyond `properties`
      // admit any here.
      const open = properties.length === 0 && required.size === 0;
      const beyond = node.unevaluatedProperties !== undefined && node.unevaluatedProperties !== false;
      if (open || beyond || "if" in node || isObject(node.dependentSchemas) || isObject(node.dependencies)) index = UNKNOWN;
    } else if (extraType !== undefined && extraType.text !== "never") {
      index = extraType;
    }
    // patternProperties: keys matching a pattern take its schema, which no index signature can say.
    if (isObject(node.patternProperties) && Object.keys(node.patternProperties).length > 0) index = UNKNOWN;

    // A tool that names no argument (`properties: {}`, or no extra keys allowed) takes `{}`: any
    // object, wider than none. One whose schema says nothing of its arguments keeps the map type.
    const patterns = isObject(node.patternProperties) && Object.keys(node.patternProperties).length > 0;
    const namesNone = ("properties" in node && extra === undefined && !patterns) || (extra === false && index === undefined);
    if (at.top && members.length === 0 && namesNone) return atom("{}");
    if (index !== undefined) {
      // Every member's type must fit the index signature's (an optional one's undefined too).
      let indexType = members.length === 0 ? index : union([index, ...memberTypes, ...(optional ? [UNDEFINED] : [])]);
      if (indexType.text.length > TYPE_BOUNDS.indexChars) indexType = UNKNOWN;
      members.push(`[key: string]: ${indexType.text}`);
    }
    if (members.length === 0) return atom("{ [key: string]: never }");
    return atom(`{ ${members.join("; ")} }`);
  }

  /** `/** note *\/ ` for a property: `preferred` (a summarizer's) or the schema's description, cut. */
  private note(preferred: string | undefined, schema: unknown): string {
    if (this.noteChars === 0) return "";
    const source = preferred ?? (isObject(schema) && typeof schema.description === "string" ? schema.description : undefined);
    if (source === undefined) return "";
    const text = commentText(briefDescription(source.replace(/\s+/g, " "), this.noteChars));
    return text === "" ? "" : `/** ${text} */ `;
  }
}

/** `text` fit for a `/** *\/` comment: one line, no `*\/` that would end it early. */
export function commentText(text: string): string {
  return text.replace(/\s+/g, " ").trim().replace(/\*\//g, "*\\/");
}

/** The last segment of a JSON pointer ref, or `label` for the root (`#`). */
function refBase(ref: string, label: string): string {
  const pointer = ref.slice(1);
  if (pointer === "" || pointer === "/") return label;
  const last = pointer.split("/").pop() ?? "";
  let segment: string;
  try {
    segment = decodeURIComponent(last).replace(/~1/g, "/").replace(/~0/g, "~");
  } catch {
    segment = last;
  }
  // A pointer into an anyOf or items ends in a number or keyword: name it by what holds it.
  return segment === "" ? label : segment;
}

/** A JSON value as a literal type; an object or array as the type of its shape (wider). */
function literal(value: unknown): Ty {
  switch (typeof value) {
    case "string":
      return { text: JSON.stringify(value), prec: 2, literal: "string" };
    case "number":
      return Number.isFinite(value) ? { text: Object.is(value, -0) ? "0" : String(value), prec: 2, literal: "number" } : atom("number");
    case "boolean":
      return { text: String(value), prec: 2, literal: "boolean" };
    default:
      if (value === null) return NULL;
      return { text: shapeType(inferShape(value)), prec: 0 };
  }
}
