import { isObject } from "../../model/json.js";
import type { JsonObject } from "../../model/types.js";

/**
 * The `x-mcp-header` extension of 2026-07-28 tool schemas: a property of a tool's `inputSchema`
 * may name an HTTP header, and a client calling the tool over streamable HTTP mirrors the
 * argument's value into `Mcp-Param-{name}`, so that gateways can route on it without reading the
 * body. A tool whose declarations break the revision's rules must not be used at all.
 */

/** One `x-mcp-header` declaration: where the argument sits, the header's name and the property's type. */
export interface HeaderDeclaration {
  path: string[];
  header: string;
  type: "string" | "integer" | "boolean";
}

/** RFC 9110 `token`: what a header name may be made of. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Keywords whose subschemas are not reached by a chain of `properties`: a declaration under them is invalid. */
const ELSEWHERE = [
  "items",
  "prefixItems",
  "additionalProperties",
  "patternProperties",
  "oneOf",
  "anyOf",
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "$defs",
  "definitions",
  "dependentSchemas",
  "contains",
  "propertyNames",
  "unevaluatedProperties",
  "unevaluatedItems",
];
/** Of those, the ones that hold a map of name to subschema. */
const SCHEMA_MAPS: ReadonlySet<string> = new Set(["patternProperties", "$defs", "definitions", "dependentSchemas"]);

/**
 * The declarations of `inputSchema`, or why the tool is invalid: a declaration that is not a
 * non-empty RFC 9110 token, on a property that is not a string, integer or boolean, a name
 * declared twice (case-insensitively), or one anywhere but a chain of `properties`.
 */
export function scanHeaderDeclarations(inputSchema: unknown): { declarations: HeaderDeclaration[] } | { invalid: string } {
  const declarations: HeaderDeclaration[] = [];
  const seen = new Map<string, string>();
  const visit = (node: unknown, path: string[], reachable: boolean): string | undefined => {
    if (!isObject(node)) return undefined;
    const where = path.length === 0 ? "the schema's root" : path.join(".");
    if ("x-mcp-header" in node) {
      const name = node["x-mcp-header"];
      if (!reachable || path.length === 0) return `${where}: x-mcp-header is allowed only on a property reached through properties`;
      if (typeof name !== "string" || !TOKEN.test(name))
        return `${where}: x-mcp-header ${JSON.stringify(name)} is not a header name (letters, digits and !#$%&'*+-.^_\`|~ only)`;
      const type = node.type;
      if (type !== "string" && type !== "integer" && type !== "boolean")
        return `${where}: x-mcp-header is allowed only on a string, integer or boolean property, not ${JSON.stringify(type ?? "untyped")}`;
      const earlier = seen.get(name.toLowerCase());
      if (earlier !== undefined) return `${where}: x-mcp-header "${name}" is declared twice (also as "${earlier}")`;
      seen.set(name.toLowerCase(), name);
      declarations.push({ path, header: name, type });
    }
    if (isObject(node.properties)) {
      for (const [key, child] of Object.entries(node.properties)) {
        const fault = visit(child, [...path, key], reachable);
        if (fault !== undefined) return fault;
      }
    }
    for (const keyword of ELSEWHERE) {
      const sub = node[keyword];
      const branches = Array.isArray(sub) ? sub : SCHEMA_MAPS.has(keyword) && isObject(sub) ? Object.values(sub) : [sub];
      for (const branch of branches) {
        const fault = visit(branch, [...path, `<${keyword}>`], false);
        if (fault !== undefined) return fault;
      }
    }
    return undefined;
  };
  const fault = visit(inputSchema, [], true);
  return fault === undefined ? { declarations } : { invalid: fault };
}

/**
 * The `Mcp-Param-*` headers of a call with `args`: one per declaration whose argument is present,
 * not null and of the declared type (a string as it is, an integer in decimal, a boolean as
 * `true`/`false`), encoded as header values are (see encodeHeaderValue).
 */
export function paramHeaders(declarations: readonly HeaderDeclaration[], args: JsonObject): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const declaration of declarations) {
    let value: unknown = args;
    for (const key of declaration.path) value = isObject(value) ? value[key] : undefined;
    let text: string | undefined;
    if (declaration.type === "string" && typeof value === "string") text = value;
    else if (declaration.type === "integer" && typeof value === "number" && Number.isSafeInteger(value)) text = String(value);
    else if (declaration.type === "boolean" && typeof value === "boolean") text = String(value);
    if (text !== undefined) headers[`Mcp-Param-${declaration.header}`] = encodeHeaderValue(text);
  }
  return headers;
}

/**
 * A header value as the revision encodes it: plain printable ASCII without leading or trailing
 * whitespace as it is; anything else (empty, other characters, or what already looks encoded) as
 * `=?base64?{base64 of its UTF-8}?=`.
 */
export function encodeHeaderValue(value: string): string {
  const plain = value.length > 0 && value === value.trim() && /^[\x20-\x7e\t]*$/.test(value) && !(value.startsWith("=?base64?") && value.endsWith("?="));
  return plain ? value : `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`;
}
