import xxhash from "xxhash-wasm";
import { cacheKey } from "../cache/cacheEntry.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import type { AdmittedTool } from "../upstream/admitTool.js";
import { MAX_SCHEMA_DEPTH } from "../upstream/schemaDepth.js";

/**
 * The members of a tool that reach the model. Only these feed the hash: `_meta`, `execution` and
 * any other key are transport details, and hashing them would invalidate summaries whenever a
 * server bumps a tracing id without changing what the model reads.
 */
export const HASHED_TOOL_FIELDS = ["name", "title", "description", "inputSchema", "outputSchema", "annotations"] as const;

/** Computes the schema hash of a tool; synchronous once created. */
export interface ToolHasher {
  /**
   * xxhash64 of the canonical JSON of the tool's model-visible fields, 16 lowercase hex chars. An
   * admitted tool only (see admitTool): its nulls are dropped already, so a tool hashes the same
   * whether its server writes `null` or leaves the member out.
   */
  hash(tool: AdmittedTool): string;
  /** xxhash64 of `text` as it is, 16 lowercase hex chars (content identities, not cache keys). */
  hashText(text: string): string;
}

/**
 * Orders strings by Unicode code point. `Array.prototype.sort` compares UTF-16 code units, which
 * puts U+E000..U+FFFF after astral characters; code point order is what other languages' canonical
 * JSON implementations use, so a hash computed elsewhere can match.
 */
function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Both in the BMP outside surrogates, or both surrogates: code unit order equals code point order.
    const xSurrogate = x >= 0xd800 && x <= 0xdfff;
    const ySurrogate = y >= 0xd800 && y <= 0xdfff;
    if (xSurrogate === ySurrogate) return x - y;
    // A surrogate starts an astral character, which is above every BMP character.
    return xSurrogate ? 1 : -1;
  }
  return a.length - b.length;
}

/** True when `keys` are already in code point order (schemas are often written sorted), sparing the sort. */
function inCodePointOrder(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (compareCodePoints(keys[i - 1] as string, keys[i] as string) > 0) return false;
  return true;
}

function serialize(value: unknown, seen: Set<object>, inArray: boolean, depth: number): string | undefined {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      // JSON.stringify turns NaN and Infinity into null; keep that so the form is valid JSON.
      return Number.isFinite(value) ? JSON.stringify(value) : "null";
    case "boolean":
      return value ? "true" : "false";
    case "undefined":
    case "function":
    case "symbol":
      // Dropped as object members, null inside arrays: what JSON.stringify does.
      return inArray ? "null" : undefined;
    case "bigint":
      throw new AbridgeError(ErrorCode.INPUT_INVALID, "canonicalJson: a bigint cannot be represented in JSON");
    default:
      break;
  }
  const object = value as { toJSON?: unknown };
  if (typeof object.toJSON === "function") {
    // Dates and similar: honour toJSON as JSON.stringify does (key argument omitted on purpose).
    return serialize((object.toJSON as () => unknown)(), seen, inArray, depth);
  }
  // Recursive, so bounded: a value thousands of levels deep would overflow the stack instead.
  if (depth >= MAX_SCHEMA_DEPTH) {
    throw new AbridgeError(ErrorCode.INPUT_INVALID, `canonicalJson: the value nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
  }
  if (seen.has(object)) {
    throw new AbridgeError(ErrorCode.INPUT_INVALID, "canonicalJson: the value contains a cycle");
  }
  seen.add(object);
  try {
    // Appended to one string rather than joined from arrays: a schema has many small members, and
    // the arrays and their joins were most of the time of hashing a tool.
    if (Array.isArray(object)) {
      let out = "[";
      for (let i = 0; i < object.length; i++) {
        if (i > 0) out += ",";
        out += serialize(object[i], seen, true, depth + 1) ?? "null";
      }
      return `${out}]`;
    }
    const record = object as Record<string, unknown>;
    const keys = Object.keys(record);
    if (!inCodePointOrder(keys)) keys.sort(compareCodePoints);
    let out = "{";
    for (const key of keys) {
      const text = serialize(record[key], seen, false, depth + 1);
      if (text === undefined) continue;
      if (out.length > 1) out += ",";
      out += `${JSON.stringify(key)}:${text}`;
    }
    return `${out}}`;
  } finally {
    seen.delete(object);
  }
}

/**
 * Canonical JSON: object keys sorted recursively by code point, no whitespace, arrays in order,
 * `undefined` members dropped as `JSON.stringify` drops them. Two values that are equal as JSON give
 * the same string whatever order their keys were written in.
 *
 * @throws AbridgeError INPUT_INVALID for a top-level value JSON cannot hold, a bigint, a cycle, or a
 *   value nested deeper than {@link MAX_SCHEMA_DEPTH} levels.
 */
export function canonicalJson(value: unknown): string {
  const text = serialize(value, new Set(), false, 0);
  if (text === undefined) {
    throw new AbridgeError(ErrorCode.INPUT_INVALID, `canonicalJson: a top-level ${typeof value} has no JSON form`);
  }
  return text;
}

/**
 * The part of a tool the hash covers, with keys absent when the tool does not set them. `null`
 * hashes as absent because admission dropped every null member already ({@link AdmittedTool}), so
 * `"annotations": null` and no annotations give one key and share one summary.
 */
export function hashedView(tool: AdmittedTool): Record<string, unknown> {
  const view: Record<string, unknown> = {};
  for (const field of HASHED_TOOL_FIELDS) {
    if (tool[field] !== undefined) view[field] = tool[field];
  }
  return view;
}

// Memoised per process: instantiating the wasm module costs far more than hashing a tool, and
// every hasher can share one instance because hashing is synchronous (no interleaving).
let xxhashApi: ReturnType<typeof xxhash> | undefined;

/**
 * Creates a {@link ToolHasher}. The first call instantiates the xxhash wasm module; later calls
 * reuse it. A failed instantiation is not memoised, so a later call can try again.
 */
export async function createToolHasher(): Promise<ToolHasher> {
  if (xxhashApi === undefined) {
    const pending = xxhash();
    xxhashApi = pending;
    pending.catch(() => {
      if (xxhashApi === pending) xxhashApi = undefined;
    });
  }
  let api: Awaited<ReturnType<typeof xxhash>>;
  try {
    api = await xxhashApi;
  } catch (err) {
    throw new AbridgeError(ErrorCode.INTERNAL, "could not initialise xxhash-wasm", { cause: err });
  }
  const { h64ToString } = api;
  return {
    hash: (tool) => h64ToString(canonicalJson(hashedView(tool))),
    hashText: (text) => h64ToString(text),
  };
}

/** The cache key `server:tool:hash` of a tool; the same as {@link cacheKey}. */
export function toolKey(server: string, tool: string, hash: string): string {
  return cacheKey(server, tool, hash);
}
