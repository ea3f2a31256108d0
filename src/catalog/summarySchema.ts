/**
 * The input schema `summary` mode serves: the original with its prose cut short (cached parameter
 * summaries where there are some), its data keywords untouched, so that it validates exactly what
 * the original does, and definitions no `$ref` uses left out.
 */
import { isObject } from "../model/json.js";
import { SCHEMA_KEYWORDS, SCHEMA_LIST_KEYWORDS, SCHEMA_MAP_KEYWORDS } from "../model/schemaKeywords.js";
import type { JsonObject } from "../model/types.js";
import { MAX_SCHEMA_DEPTH } from "../upstream/schemaDepth.js";
import { briefDescription } from "./signature.js";

/**
 * Property descriptions with no cached param summary are cut to this many characters (first
 * sentence, word boundary) in `summary` mode. Long enough for "Repository owner (user or org)",
 * short enough that a 2,000-character option essay does not survive the summary.
 */
const SUMMARY_PROPERTY_CHARS = 60;
/**
 * Cap of property descriptions below the top level in `summary` mode: none are kept. Cut to a
 * few words they were fragments ("The content to be rendered on the new…") that cost about 2% of
 * full over the corpus; the model fills nested parts once it has picked the tool, and
 * `get_schema` has every word.
 */
const NESTED_PROPERTY_CHARS = 0;

/** Keywords that never affect validation and that summary mode drops. */
const PROSE_ONLY_KEYWORDS = new Set(["examples", "$comment"]);

/**
 * Copies a schema node with every `description` shortened (or replaced by `params[name]` for the
 * properties of the node it was given `params` for). Schema-aware: a *property named*
 * `description` is a schema, not prose, and data keywords (`enum`, `const`, `default`, `examples`,
 * `required`) are copied untouched, so the copy validates exactly the instances the original does.
 */
export function shortenSchemaProse(node: unknown, params?: Record<string, string>, maxChars = SUMMARY_PROPERTY_CHARS, depth = 0): unknown {
  // Bounded like every schema walk: past the limit (a tool that deep is quarantined where it
  // enters) the node is kept as it is rather than recursing on.
  if (!isObject(node) || depth >= MAX_SCHEMA_DEPTH) return node;
  const out: JsonObject = {};
  // Below the top-level properties prose gets the tighter cap (none, see NESTED_PROPERTY_CHARS).
  const sub = (value: unknown): unknown => shortenSchemaProse(value, undefined, NESTED_PROPERTY_CHARS, depth + 1);
  for (const [key, value] of Object.entries(node)) {
    if (key === "description" && typeof value === "string") {
      const short = maxChars <= 0 ? "" : briefDescription(value, maxChars);
      if (short !== "") out[key] = short;
    } else if (SCHEMA_MAP_KEYWORDS.has(key) && isObject(value)) {
      const map: JsonObject = {};
      for (const [name, schema] of Object.entries(value)) {
        const summary = key === "properties" ? params?.[name] : undefined;
        const shortened = key === "properties" && params !== undefined ? shortenSchemaProse(schema, undefined, maxChars, depth + 1) : sub(schema);
        map[name] = summary === undefined ? shortened : withDescription(shortened, summary);
      }
      out[key] = map;
    } else if (key === "dependencies" && isObject(value)) {
      // draft-07 `dependencies` mixes subschemas (objects) and property lists (arrays).
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, Array.isArray(v) ? v : sub(v)]));
    } else if (SCHEMA_KEYWORDS.has(key)) {
      out[key] = sub(value);
    } else if (key === "items") {
      out[key] = Array.isArray(value) ? value.map(sub) : sub(value);
    } else if (SCHEMA_LIST_KEYWORDS.has(key) && Array.isArray(value)) {
      out[key] = value.map(sub);
    } else if (PROSE_ONLY_KEYWORDS.has(key)) {
    } else {
      out[key] = value;
    }
  }
  return out;
}

function withDescription(schema: unknown, description: string): unknown {
  if (!isObject(schema)) return schema;
  if (description === "") {
    const { description: _dropped, ...rest } = schema;
    return rest;
  }
  return { ...schema, description };
}

/**
 * The `summary` mode input schema: the original minus `$schema`, with prose shortened (see
 * {@link shortenSchemaProse}). A root without `type` gets `type: "object"`: MCP requires it (the
 * SDK client rejects the whole `tools/list` otherwise, which gitlab's schemas as shipped would
 * trigger), and tool arguments are always objects, so no call that validated before is refused.
 */
export function summaryInputSchema(inputSchema: JsonObject, params: Record<string, string> = {}): JsonObject {
  const { $schema: _schema, ...rest } = inputSchema;
  const out = pruneUnusedDefinitions(shortenSchemaProse(rest, params) as JsonObject);
  return out.type === undefined ? { type: "object", ...out } : out;
}

/** Every `$ref`-like string in `node`, skipping the subtrees under `skip` (the definitions themselves). */
function collectRefs(node: unknown, out: string[], skip?: ReadonlySet<unknown>, depth = 0): void {
  if (depth >= MAX_SCHEMA_DEPTH) return;
  if (Array.isArray(node)) {
    for (const item of node) collectRefs(item, out, skip, depth + 1);
    return;
  }
  if (!isObject(node) || skip?.has(node)) return;
  for (const [key, value] of Object.entries(node)) {
    if ((key === "$ref" || key === "$dynamicRef" || key === "$recursiveRef") && typeof value === "string") out.push(value);
    else collectRefs(value, out, skip, depth + 1);
  }
}

/** One JSON-pointer segment decoded; a malformed %-escape is kept as written (it then matches nothing). */
function decodePointerPart(part: string): string {
  let decoded = part;
  try {
    decoded = decodeURIComponent(part);
  } catch {
    // keep as written
  }
  return decoded.replace(/~1/g, "/").replace(/~0/g, "~");
}

/**
 * Drops root `$defs`/`definitions` entries no `$ref` reaches (transitively). Generated schemas
 * (notion's) ship every definition with every tool: ~2,000 characters each that no instance is
 * ever checked against, so dropping them changes no validation. Any ref this cannot follow (a
 * remote ref, a `$dynamicRef`, an anchor) keeps every definition.
 */
function pruneUnusedDefinitions(schema: JsonObject): JsonObject {
  const containers = (["$defs", "definitions"] as const).filter((k) => isObject(schema[k]));
  if (containers.length === 0) return schema;
  const defs = new Map<string, unknown>();
  for (const container of containers) {
    for (const [name, def] of Object.entries(schema[container] as JsonObject)) defs.set(`#/${container}/${name}`, def);
  }
  const pending: string[] = [];
  collectRefs(schema, pending, new Set(containers.map((k) => schema[k])));
  const used = new Set<string>();
  while (pending.length > 0) {
    const ref = pending.pop() as string;
    if (ref === "#") continue;
    const match = /^#\/(\$defs|definitions)\/([^/]+)/.exec(ref);
    const id = match === null ? undefined : `#/${match[1]}/${decodePointerPart(match[2] ?? "")}`;
    if (id === undefined || !defs.has(id)) return schema;
    if (used.has(id)) continue;
    used.add(id);
    collectRefs(defs.get(id), pending);
  }
  const out: JsonObject = { ...schema };
  for (const container of containers) {
    const kept = Object.entries(schema[container] as JsonObject).filter(([name]) => used.has(`#/${container}/${name}`));
    if (kept.length === 0) delete out[container];
    else out[container] = Object.fromEntries(kept);
  }
  return out;
}
