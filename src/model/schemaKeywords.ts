/**
 * The JSON Schema keywords whose values are subschemas (2020-12 and the drafts before it): where a
 * walk over a schema goes on. `items` is either one subschema or, before 2020-12, a list of them,
 * and `dependencies` (draft-07) a map of subschemas or of property lists; walks test their shape.
 */

/** Keywords whose value is a map of name -> subschema. */
export const SCHEMA_MAP_KEYWORDS: ReadonlySet<string> = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);

/** Keywords whose value is one subschema. */
export const SCHEMA_KEYWORDS: ReadonlySet<string> = new Set([
  "additionalProperties",
  "additionalItems",
  "unevaluatedProperties",
  "unevaluatedItems",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
  "contentSchema",
]);

/** Keywords whose value is a list of subschemas. */
export const SCHEMA_LIST_KEYWORDS: ReadonlySet<string> = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);
