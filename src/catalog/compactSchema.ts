/**
 * The minimal input schema of `compact` mode, and the schema analysis it shares with
 * {@link toolSignature}: both reduce a real-world schema ($ref/$defs, anyOf/oneOf, missing `type`,
 * huge enums) to the few facts a model needs to call the tool (names, kinds, required, short enums).
 */
import { MAX_SCHEMA_DEPTH } from "../upstream/schemaDepth.js";
import { isObject } from "../model/json.js";

/** A JSON object as it came off the wire. */
type JsonObject = Record<string, unknown>;

/** Enums with more values than this are not inlined (compact schema and signature). */
export const MAX_INLINE_ENUM = 10;

/** How deep {@link schemaShape} looks into nested object properties and array items. */
const MAX_SHAPE_DEPTH = 4;

/** What a schema says about a value, reduced to what a caller needs to produce one. */
export interface SchemaShape {
  /** JSON types the value may have, without `null`; `integer` folded into `number` when both occur. Empty: anything. */
  types: string[];
  /** Every allowed value when the schema enumerates them (`enum`, `const`, or a union of those). */
  enumValues?: unknown[];
  /**
   * Values a union names beside branches that take others too (`anyOf: [{enum: [pd, pw]},
   * {type: string, pattern}]`), with the types of those other branches: worth showing, but not
   * every value allowed.
   */
  knownValues?: { values: unknown[]; otherTypes: string[] };
  /** Shape of array items, when the value may be an array. */
  items?: SchemaShape;
  /** Properties, when the value may be an object that declares them (required ones flagged). */
  properties?: PropertyShape[];
  /** True when the object also takes properties it does not declare (a map). */
  openProperties?: boolean;
  /** True when the node allows only `null` (a nullable union lists that branch apart). */
  nullOnly?: boolean;
  /** The schema's `default`, when it states one. */
  defaultValue?: unknown;
}

/** One property of an object shape. */
export interface PropertyShape {
  name: string;
  required: boolean;
  shape: SchemaShape;
}

/**
 * Resolves a local JSON pointer `$ref` (`#/$defs/x`, `#/definitions/x`, `#`) against `root`.
 * Remote refs and broken pointers give `undefined`: the caller falls back to a loose shape,
 * because a schema that points nowhere must not stop the tool from being listed.
 */
export function resolveLocalRef(root: unknown, ref: string): unknown {
  if (!ref.startsWith("#")) return undefined;
  const pointer = ref.slice(1);
  if (pointer === "") return root;
  if (!pointer.startsWith("/")) return undefined;
  let node: unknown = root;
  for (const raw of pointer.slice(1).split("/")) {
    let part: string;
    try {
      part = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    } catch {
      return undefined; // a malformed %-escape points nowhere
    }
    if (Array.isArray(node)) node = node[Number(part)];
    else if (isObject(node)) node = node[part];
    else return undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function normalizeTypes(types: Iterable<string>): string[] {
  const set = new Set(types);
  set.delete("null");
  if (set.has("number")) set.delete("integer");
  return [...set];
}

/** `values` without repeats (compared as JSON), in first-seen order. */
function distinctValues(values: readonly unknown[]): unknown[] {
  const seen = new Set<string>();
  return values.filter((value) => {
    const id = JSON.stringify(value);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** Unions several shapes (the branches of anyOf/oneOf) into one. */
function unionShapes(shapes: SchemaShape[]): SchemaShape {
  const concrete = shapes.filter((s) => s.nullOnly !== true);
  // A branch that allows anything makes the whole union allow anything.
  if (concrete.length === 0 || concrete.some((s) => s.types.length === 0 && s.enumValues === undefined)) return { types: [] };
  const out: SchemaShape = { types: normalizeTypes(concrete.flatMap((s) => s.types)) };
  const named = distinctValues(concrete.flatMap((s) => s.enumValues ?? s.knownValues?.values ?? []));
  if (concrete.every((s) => s.enumValues !== undefined)) out.enumValues = named;
  else if (named.length > 0) {
    const open = concrete.filter((s) => s.enumValues === undefined);
    const otherTypes = normalizeTypes(open.flatMap((s) => [...s.types, ...(s.knownValues?.otherTypes ?? [])]));
    out.knownValues = { values: named, otherTypes };
  }
  const arrays = concrete.filter((s) => s.items !== undefined);
  if (arrays.length === 1 && arrays[0]?.items !== undefined) out.items = arrays[0].items;
  const objects = concrete.filter((s) => s.properties !== undefined);
  if (objects.length === 1 && objects[0]?.properties !== undefined) out.properties = objects[0].properties;
  if (concrete.some((s) => s.openProperties === true)) out.openProperties = true;
  return out;
}

/**
 * Reduces `schema` (a node inside `root`, which holds the `$defs` its refs point to) to a
 * {@link SchemaShape}. Never throws: anything it does not understand becomes "anything".
 */
export function schemaShape(schema: unknown, root: unknown = schema, depth = 0, seenRefs: ReadonlySet<string> = new Set(), hops = 0): SchemaShape {
  if (!isObject(schema)) return { types: [] };
  // `depth` counts only properties and items (what the label shows); `hops` counts every step,
  // anyOf and allOf included, so a chain of thousands of branches cannot overflow the stack.
  if (hops >= MAX_SCHEMA_DEPTH) return { types: [] };

  if (typeof schema.$ref === "string") {
    const ref = schema.$ref;
    const target = seenRefs.has(ref) ? undefined : resolveLocalRef(root, ref);
    // A recursive ref (a tree of blocks) stops here rather than looping.
    const resolved = target === undefined ? ({ types: [] } as SchemaShape) : schemaShape(target, root, depth, new Set([...seenRefs, ref]), hops + 1);
    const { $ref: _ref, ...siblings } = schema;
    if (Object.keys(siblings).every((k) => k === "description" || k === "title" || k === "default" || k === "examples")) {
      return "default" in siblings ? { ...resolved, defaultValue: siblings.default } : resolved;
    }
    // 2019+ allows keywords next to $ref; both apply, so the richer facts win.
    const rest = schemaShape(siblings, root, depth, seenRefs, hops + 1);
    return rest.types.length > 0 || rest.enumValues !== undefined ? rest : resolved;
  }

  const branches = [schema.anyOf, schema.oneOf].find((b) => Array.isArray(b) && b.length > 0) as unknown[] | undefined;
  if (branches !== undefined) {
    const shapes = branches.map((b) => schemaShape(b, root, depth, seenRefs, hops + 1));
    const union = unionShapes(shapes);
    const own = ownShape(schema, root, depth, seenRefs, hops);
    // Keywords beside anyOf (a shared `type`, shared properties) narrow the union.
    if (union.types.length === 0 && union.enumValues === undefined) return own;
    if (own.properties !== undefined && union.properties === undefined) union.properties = own.properties;
    if ("default" in schema) union.defaultValue = schema.default;
    return union;
  }

  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    // allOf: every branch applies; the first one that says something is a fair approximation.
    const own = ownShape(schema, root, depth, seenRefs, hops);
    if (own.types.length > 0) return own;
    for (const branch of schema.allOf) {
      const shape = schemaShape(branch, root, depth, seenRefs, hops + 1);
      if (shape.types.length > 0 || shape.enumValues !== undefined) return shape;
    }
    return own;
  }

  return ownShape(schema, root, depth, seenRefs, hops);
}

/** The shape from the node's own keywords (type, enum, const, items, properties). */
function ownShape(schema: JsonObject, root: unknown, depth: number, seenRefs: ReadonlySet<string>, hops: number): SchemaShape {
  let declared: string[] = [];
  if (typeof schema.type === "string") declared = [schema.type];
  else if (Array.isArray(schema.type)) declared = schema.type.filter((t): t is string => typeof t === "string");

  const shape: SchemaShape = { types: [] };
  if ("default" in schema) shape.defaultValue = schema.default;
  if ("const" in schema) shape.enumValues = [schema.const];
  else if (Array.isArray(schema.enum)) shape.enumValues = schema.enum.filter((v) => v !== null);

  let types = declared;
  if (types.length === 0 && shape.enumValues !== undefined) types = shape.enumValues.map(jsonTypeOf);
  if (types.length === 0 && isObject(schema.properties)) types = ["object"];
  if (types.length === 0 && schema.items !== undefined) types = ["array"];
  shape.types = normalizeTypes(types);
  if (shape.types.length === 0 && declared.includes("null")) shape.nullOnly = true;

  if (shape.types.includes("array") && depth < MAX_SHAPE_DEPTH) {
    if (isObject(schema.items)) shape.items = schemaShape(schema.items, root, depth + 1, seenRefs, hops + 1);
    else if (isObject(schema.additionalItems)) shape.items = schemaShape(schema.additionalItems, root, depth + 1, seenRefs, hops + 1);
  }

  if (shape.types.includes("object")) {
    if (isObject(schema.properties) && depth < MAX_SHAPE_DEPTH) {
      const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : []);
      shape.properties = Object.entries(schema.properties).map(([name, sub]) => ({
        name,
        required: required.has(name),
        shape: schemaShape(sub, root, depth + 1, seenRefs, hops + 1),
      }));
    }
    const extra = schema.additionalProperties;
    if (isObject(extra) || isObject(schema.patternProperties)) shape.openProperties = true;
    else if (extra === true) shape.openProperties = true;
  }
  return shape;
}

/**
 * The properties of a tool's input schema, required ones first (each group in declaration
 * order), plus required names the schema forgot to declare. Shared by compact schema and signature
 * so both list exactly the same parameters.
 */
export function inputProperties(inputSchema: unknown): { properties: PropertyShape[]; root: SchemaShape } {
  const root = schemaShape(inputSchema);
  const declared = root.properties ?? [];
  const names = new Set(declared.map((p) => p.name));
  const requiredList =
    isObject(inputSchema) && Array.isArray(inputSchema.required) ? inputSchema.required.filter((r): r is string => typeof r === "string") : [];
  const undeclared: PropertyShape[] = requiredList.filter((name) => !names.has(name)).map((name) => ({ name, required: true, shape: { types: [] } }));
  const all = [...declared, ...undeclared];
  return { properties: [...all.filter((p) => p.required), ...all.filter((p) => !p.required)], root };
}

/** `type` keyword value for a list of types: one string, an array, or nothing. */
function typeKeyword(types: string[]): string | string[] | undefined {
  if (types.length === 0) return undefined;
  return types.length === 1 ? types[0] : types;
}

function compactProperty(shape: SchemaShape, withItems: boolean): JsonObject {
  const out: JsonObject = {};
  const type = typeKeyword(shape.types);
  if (type !== undefined) out.type = type;
  if (shape.enumValues !== undefined && shape.enumValues.length > 0 && shape.enumValues.length <= MAX_INLINE_ENUM) {
    out.enum = shape.enumValues;
  }
  if (withItems && shape.items !== undefined && shape.types.includes("array")) {
    const items = compactProperty(shape.items, false);
    if (Object.keys(items).length > 0) out.items = items;
  }
  return out;
}

/**
 * The `compact` mode input schema: `{type: "object", properties, required}` where each property
 * keeps only `type`, `items.type`, and an `enum` of at most {@link MAX_INLINE_ENUM} values.
 * Descriptions, defaults, formats, `$schema` and `$defs` are dropped; `$ref`s are resolved to the
 * type they point at, or to `{}` when they cannot be. Calls are still validated against the full
 * original schema, so this only has to tell the model what to send, not police it.
 */
export function compactInputSchema(inputSchema: unknown): Record<string, unknown> {
  const { properties } = inputProperties(inputSchema);
  const out: JsonObject = { type: "object" };
  if (properties.length === 0) return out;
  out.properties = Object.fromEntries(properties.map((p) => [p.name, compactProperty(p.shape, true)]));
  const required = properties.filter((p) => p.required).map((p) => p.name);
  if (required.length > 0) out.required = required;
  return out;
}

/**
 * The input schema of `compact` mode with `schema = "names"`: `{type: "object", properties:
 * {owner: {}, ...}, required}`. Each property schema is empty, so a client that validates
 * arguments against the listed schema itself accepts whatever the tool takes (an empty schema
 * accepts anything), while the property names and `required` still reach function-calling APIs
 * that build argument slots from them. Types, enums and defaults travel in the parameter line of
 * the description instead, where they cost a fraction of the tokens; calls are validated against
 * the full original schema before they are forwarded.
 */
export function namesOnlyInputSchema(inputSchema: unknown): Record<string, unknown> {
  const { properties } = inputProperties(inputSchema);
  const out: JsonObject = { type: "object" };
  if (properties.length === 0) return out;
  out.properties = Object.fromEntries(properties.map((p) => [p.name, {}]));
  const required = properties.filter((p) => p.required).map((p) => p.name);
  if (required.length > 0) out.required = required;
  return out;
}
