/**
 * The JSON kinds a schema node allows (object, array, string, ...), read from its `type`, its
 * `enum`/`const` values, its conjuncts and the keywords that imply a kind. Kept apart from
 * `schemaTypes.ts`, which writes the type expressions, because deciding which kinds a node admits
 * is a reading of JSON Schema on its own, with no type text in it.
 */
import { resolveLocalRef } from "../../catalog/compactSchema.js";
import { isObject } from "../../model/json.js";

/** The JSON kinds a TypeScript type tells apart (`integer` is a `number`). */
export type Kind = "object" | "array" | "string" | "number" | "boolean" | "null";

/** The kind of a JSON value. */
export function kindOf(value: unknown): Kind {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  switch (typeof value) {
    case "string":
      return "string";
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    default:
      return "object";
  }
}

const TYPE_KINDS: Readonly<Record<string, Kind>> = {
  object: "object",
  array: "array",
  string: "string",
  number: "number",
  integer: "number",
  boolean: "boolean",
  null: "null",
};

/** The kinds a node's own `type` (or else its `enum`/`const` values) allows; undefined: no say. */
function declaredKinds(node: unknown): Kind[] | undefined {
  if (node === false) return [];
  if (!isObject(node)) return undefined;
  let kinds: Kind[] | undefined;
  const type = node.type;
  const names = typeof type === "string" ? [type] : Array.isArray(type) ? type : undefined;
  if (names !== undefined) {
    const known = names.filter((n): n is string => typeof n === "string" && n in TYPE_KINDS).map((n) => TYPE_KINDS[n] as Kind);
    if (known.length === names.length) kinds = [...new Set(known)];
  } else if ("const" in node) {
    kinds = [kindOf(node.const)];
  } else if (Array.isArray(node.enum)) {
    kinds = [...new Set(node.enum.map(kindOf))];
  }
  if (kinds !== undefined && node.nullable === true && !kinds.includes("null")) kinds.push("null");
  return kinds;
}

/**
 * The kinds a node allows as far as its own `type` and its conjuncts' (allOf branches, the ref's
 * target, every anyOf/oneOf branch together) say, looking one level down; undefined: no say.
 */
export function knownKinds(node: Record<string, unknown>, root: unknown): Kind[] | undefined {
  const sets: Kind[][] = [];
  const own = declaredKinds(node);
  if (own !== undefined) sets.push(own);
  if (Array.isArray(node.allOf)) {
    for (const branch of node.allOf) {
      const k = declaredKinds(branch);
      if (k !== undefined) sets.push(k);
    }
  }
  for (const branches of [node.anyOf, node.oneOf]) {
    if (!Array.isArray(branches) || branches.length === 0) continue;
    const each = branches.map(declaredKinds);
    if (each.every((k) => k !== undefined)) sets.push([...new Set(each.flat())]);
  }
  if (typeof node.$ref === "string" && node.$ref.startsWith("#")) {
    const k = declaredKinds(resolveLocalRef(root, node.$ref));
    if (k !== undefined) sets.push(k);
  }
  let out: Kind[] | undefined;
  for (const set of sets) out = meet(out, set);
  // nullable widens after the conjunction (see render), so it does not narrow the kinds either.
  if (out !== undefined && node.nullable === true && !out.includes("null")) out = [...out, "null"];
  return out;
}

/** Kinds both allow, in `a`'s order; undefined when neither says. */
export function meet(a: readonly Kind[] | undefined, b: readonly Kind[] | undefined): Kind[] | undefined {
  if (a === undefined) return b === undefined ? undefined : [...b];
  if (b === undefined) return [...a];
  return a.filter((k) => b.includes(k));
}

const OBJECT_KEYWORDS = ["properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties", "propertyNames"];
const ARRAY_KEYWORDS = ["items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains", "uniqueItems"];

/** Object and array keywords without a `type` read as that type (see the module comment of `schemaTypes.ts`). */
export function impliedKinds(node: Record<string, unknown>): Kind[] | undefined {
  const kinds: Kind[] = [];
  if (OBJECT_KEYWORDS.some((k) => k in node)) kinds.push("object");
  if (ARRAY_KEYWORDS.some((k) => k in node)) kinds.push("array");
  return kinds.length === 0 ? undefined : kinds;
}

/** True when the node says something of its own (beyond refs, combinators and prose). */
export function hasOwnKeywords(node: Record<string, unknown>): boolean {
  return "type" in node || "enum" in node || "const" in node || OBJECT_KEYWORDS.some((k) => k in node) || ARRAY_KEYWORDS.some((k) => k in node);
}
