/** JSON text of a value, given up as soon as it passes a byte bound: a 100 MB value costs the bound, not 100 MB. */
import { MAX_JSON_DEPTH } from "../../model/jsonDepth.js";

/** The JSON of a value, or why there is none. */
export type BoundedJson =
  | { ok: true; json: string; bytes: number }
  /** Over the bound: `bytes` is what was written when it was passed (at least the bound). */
  | { ok: false; reason: "too-large"; bytes: number }
  /** Not JSON: a BigInt, a cycle, nesting deeper than {@link MAX_JSON_DEPTH}. */
  | { ok: false; reason: "not-json"; message: string };

class Stop {
  constructor(readonly result: BoundedJson) {}
}

/**
 * `JSON.stringify(value)` (undefined as `null`), counted in UTF-8 bytes as it is written and given
 * up past `maxBytes`. A string longer than what is left is refused before it is escaped.
 */
export function boundedJson(value: unknown, maxBytes: number): BoundedJson {
  const parts: string[] = [];
  let bytes = 0;
  const ancestors = new Set<object>();

  const add = (text: string): void => {
    bytes += Buffer.byteLength(text);
    if (bytes > maxBytes) throw new Stop({ ok: false, reason: "too-large", bytes });
    parts.push(text);
  };

  /** Writes a value `toJSON` has been applied to; false (nothing written) for what JSON leaves out. */
  const write = (v: unknown, depth: number): boolean => {
    if (v === null) add("null");
    else if (typeof v === "boolean") add(v ? "true" : "false");
    else if (typeof v === "number") add(Number.isFinite(v) ? String(v) : "null");
    else if (typeof v === "string") {
      if (v.length > maxBytes - bytes) throw new Stop({ ok: false, reason: "too-large", bytes: bytes + v.length });
      add(JSON.stringify(v));
    } else if (typeof v === "bigint") throw new Stop({ ok: false, reason: "not-json", message: "a BigInt is not JSON" });
    else if (typeof v === "object") {
      if (ancestors.has(v)) throw new Stop({ ok: false, reason: "not-json", message: "it refers to itself (a cycle)" });
      if (depth >= MAX_JSON_DEPTH) throw new Stop({ ok: false, reason: "not-json", message: `it nests deeper than ${MAX_JSON_DEPTH} levels` });
      ancestors.add(v);
      if (Array.isArray(v)) {
        add("[");
        for (let i = 0; i < v.length; i++) {
          if (i > 0) add(",");
          if (!write(jsonForm(v[i]), depth + 1)) add("null");
        }
        add("]");
      } else {
        add("{");
        let first = true;
        for (const key of Object.keys(v)) {
          const item = jsonForm((v as Record<string, unknown>)[key]);
          if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
          add(`${first ? "" : ","}${JSON.stringify(key)}:`);
          first = false;
          write(item, depth + 1);
        }
        add("}");
      }
      ancestors.delete(v);
    } else return false; // undefined, a function, a symbol: left out of an object, null in an array
    return true;
  };

  try {
    if (!write(jsonForm(value), 0)) add("null");
  } catch (err) {
    if (err instanceof Stop) return err.result;
    throw err;
  }
  return { ok: true, json: parts.join(""), bytes };
}

/** What JSON.stringify writes for a value: its `toJSON()` when it has one. */
function jsonForm(value: unknown): unknown {
  if (typeof value === "object" && value !== null && typeof (value as { toJSON?: unknown }).toJSON === "function")
    return (value as { toJSON(): unknown }).toJSON();
  return value;
}
