import { MAX_SCHEMA_DEPTH } from "./schemaDepth.js";
import type { JsonObject, RawTool } from "../model/types.js";
import { isObject } from "../model/json.js";
import { SCHEMA_KEYWORDS, SCHEMA_LIST_KEYWORDS, SCHEMA_MAP_KEYWORDS } from "../model/schemaKeywords.js";

/** Keywords whose value is data, where `null` is a value like any other (`"default": null`). */
const DATA_KEYWORDS = new Set(["default", "const", "enum", "examples"]);

/** `object` without its null members, or `object` itself when it has none. */
function withoutNulls(object: JsonObject): JsonObject {
  if (!Object.values(object).includes(null)) return object;
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== null));
}

/**
 * A JSON Schema with every null keyword dropped (`"properties": null`, `"description": null`,
 * `"items": null`), and null subschemas dropped from maps and lists. Data keywords keep their
 * nulls: `"default": null` and `"enum": [null, "a"]` mean something. Copies only what changes.
 */
export function normalizeSchema(schema: JsonObject, depth = 0): JsonObject {
  // Bounded like every schema walk (a deeper tool is quarantined before it gets here).
  if (depth >= MAX_SCHEMA_DEPTH) return schema;
  let out: JsonObject | undefined;
  const set = (key: string, value: unknown): void => {
    out ??= { ...schema };
    if (value === undefined) delete out[key];
    else out[key] = value;
  };
  for (const [key, value] of Object.entries(schema)) {
    if (DATA_KEYWORDS.has(key)) continue;
    if (value === null) {
      set(key, undefined);
    } else if ((SCHEMA_MAP_KEYWORDS.has(key) || key === "dependencies") && isObject(value)) {
      const map = normalizeMap(value, depth + 2);
      if (map !== value) set(key, map);
    } else if ((SCHEMA_KEYWORDS.has(key) || key === "items") && isObject(value)) {
      const sub = normalizeSchema(value, depth + 1);
      if (sub !== value) set(key, sub);
    } else if ((SCHEMA_LIST_KEYWORDS.has(key) || key === "items") && Array.isArray(value)) {
      const list = normalizeList(value, depth + 2);
      if (list !== value) set(key, list);
    }
  }
  return out ?? schema;
}

function normalizeMap(map: JsonObject, depth: number): JsonObject {
  let out: JsonObject | undefined;
  for (const [name, sub] of Object.entries(map)) {
    // draft-07 `dependencies` mixes subschemas and property lists; only the subschemas are walked.
    const next = sub === null ? undefined : isObject(sub) ? normalizeSchema(sub, depth) : sub;
    if (next === sub) continue;
    out ??= { ...map };
    if (next === undefined) delete out[name];
    else out[name] = next;
  }
  return out ?? map;
}

function normalizeList(list: unknown[], depth: number): unknown[] {
  let changed = false;
  const out: unknown[] = [];
  for (const item of list) {
    if (item === null) {
      changed = true;
      continue;
    }
    const next = isObject(item) ? normalizeSchema(item, depth) : item;
    if (next !== item) changed = true;
    out.push(next);
  }
  return changed ? out : list;
}

/**
 * The one rule for `null` in a tool: it means absent. Real servers send `"annotations": null`,
 * `"outputSchema": null`, `"title": null`, `"description": null` or `"properties": null` where the
 * spec has an optional member, and every reader downstream (hash, summarizer, renderer, policy,
 * argument validation, an SDK client validating the list we pass on) expects the member to be
 * either there with its type or missing. So tools are normalized once, where they enter, by
 * `admitTool` (an upstream's `tools/list`, a recorded list, a JSON-RPC manifest), and the hash is
 * taken of the normalized form: a tool hashes the same whether its server writes `null` or leaves the member
 * out, and a server that stops sending nulls keeps its cached summaries.
 *
 * Drops every null top-level member, null members of `annotations`, and null keywords of
 * `inputSchema` and `outputSchema` (see {@link normalizeSchema}). The result is a new object only
 * where something changed; a tool without nulls is returned as it is.
 */
export function normalizeTool<T extends JsonObject>(tool: T): T & RawTool {
  let out = withoutNulls(tool);
  const fix = (key: string, value: unknown): void => {
    if (out === tool) out = { ...tool };
    out[key] = value;
  };
  if (isObject(out.annotations)) {
    const annotations = withoutNulls(out.annotations);
    if (annotations !== out.annotations) fix("annotations", annotations);
  }
  for (const key of ["inputSchema", "outputSchema"] as const) {
    const schema = out[key];
    if (!isObject(schema)) continue;
    const normalized = normalizeSchema(schema);
    if (normalized !== schema) fix(key, normalized);
  }
  return out as T & RawTool;
}
