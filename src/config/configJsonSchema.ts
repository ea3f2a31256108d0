import { z } from "zod";
import { configFileSchema } from "./schema.js";

/** The subset of JSON Schema that `z.toJSONSchema` emits for the config schema. */
export interface JsonSchemaNode {
  type?: string;
  enum?: unknown[];
  properties?: Record<string, JsonSchemaNode>;
  additionalProperties?: JsonSchemaNode | boolean;
  propertyNames?: JsonSchemaNode;
  items?: JsonSchemaNode;
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  pattern?: string;
  format?: string;
}

let cached: JsonSchemaNode | undefined;

/**
 * The config file's schema as JSON Schema (input side, so defaults show as optional). Derived
 * from the zod schema rather than written by hand, so error messages and the configuration reference (docs/configuration.md) can
 * never drift from what is validated. Memoized: it is a pure function of a constant.
 */
export function configJsonSchema(): JsonSchemaNode {
  cached ??= z.toJSONSchema(configFileSchema, { io: "input", unrepresentable: "any" }) as JsonSchemaNode;
  return cached;
}

/** The schema node at `path` (object keys, record keys, array indices), if the path exists. */
export function schemaAt(path: readonly PropertyKey[], root: JsonSchemaNode = configJsonSchema()): JsonSchemaNode | undefined {
  let node: JsonSchemaNode | undefined = root;
  for (const segment of path) {
    if (node === undefined) return undefined;
    if (node.type === "array") {
      node = node.items;
    } else if (node.type === "object") {
      const key = String(segment);
      const named: JsonSchemaNode | undefined = node.properties?.[key];
      if (named !== undefined) node = named;
      else node = typeof node.additionalProperties === "object" ? node.additionalProperties : undefined;
    } else {
      return undefined;
    }
  }
  return node;
}

/** Words for what a value of `node` must be, e.g. "a positive integer", `one of "a", "b"`. */
export function describeExpected(node: JsonSchemaNode, format: "toml" | "json"): string {
  if (node.enum !== undefined) return `one of ${node.enum.map((v) => JSON.stringify(v)).join(", ")}`;
  switch (node.type) {
    case "integer":
    case "number":
      return describeNumber(node);
    case "string":
      if (node.format === "uri") return "an http:// or https:// URL";
      if (node.pattern !== undefined) return `a string matching /${node.pattern}/`;
      if ((node.minLength ?? 0) > 0) return "a non-empty string";
      return "a string";
    case "boolean":
      return "true or false";
    case "array":
      return node.items === undefined ? "an array" : `an array of ${plural(node.items)}`;
    case "object":
      return format === "toml" ? "a table" : "an object";
    default:
      return "a valid value";
  }
}

function plural(node: JsonSchemaNode): string {
  if (node.type === "string") return (node.minLength ?? 0) > 0 ? "non-empty strings" : "strings";
  if (node.type === "integer") return "integers";
  if (node.type === "number") return "numbers";
  if (node.type === "boolean") return "booleans";
  return "values";
}

/** Bounds at or beyond this are zod's safe-integer limits, not something the user chose. */
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

function describeNumber(node: JsonSchemaNode): string {
  const noun = node.type === "integer" ? "integer" : "number";
  const max = node.maximum !== undefined && node.maximum < UNBOUNDED ? node.maximum : undefined;
  if (node.exclusiveMinimum === 0 && max === undefined) return `a positive ${noun}`;
  if (node.minimum === 0 && max === undefined) return `a non-negative ${noun}`;
  const min = node.minimum ?? (node.exclusiveMinimum !== undefined ? node.exclusiveMinimum : undefined);
  if (min !== undefined && max !== undefined) {
    return node.exclusiveMinimum !== undefined ? `${article(noun)} ${noun} above ${min} and at most ${max}` : `${article(noun)} ${noun} from ${min} to ${max}`;
  }
  if (min !== undefined) return `${article(noun)} ${noun} of at least ${min}`;
  if (max !== undefined) return `${article(noun)} ${noun} of at most ${max}`;
  return `${article(noun)} ${noun}`;
}

function article(noun: string): string {
  return /^[aeiou]/.test(noun) ? "an" : "a";
}
