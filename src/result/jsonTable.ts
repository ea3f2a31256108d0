/**
 * The table form of `compact` results. An array of two or more objects that share the same keys
 * is written once as its column names and then one array of values per row:
 *
 *   [{"id":1,"name":"a"},{"id":2,"name":"b"}]  ->  {"@columns":["id","name"],"@rows":[[1,"a"],[2,"b"]]}
 *
 * The form stays JSON, so a model reads it as it reads any JSON (a header row and value rows
 * spelled out by name), a cell may hold any value (nested objects, arrays, further tables), and
 * decoding is `JSON.parse` plus one walk. An object is a table exactly when its keys are
 * `@columns` and `@rows` and nothing else; an upstream object whose own key is `@columns` or
 * `@rows` (with any number of leading `@`) gets one more `@` on the way out and loses it on the
 * way back, so no upstream value is ever read as a table.
 */
import { isObject } from "../model/json.js";

export const COLUMNS_KEY = "@columns";
export const ROWS_KEY = "@rows";

/** Keys that collide with the table form (`@columns`, `@@rows`, ...). */
const RESERVED = /^@+(?:columns|rows)$/;

/** Characters a table must save over writing its rows as objects (the header's own cost). */
const TABLE_OVERHEAD_CHARS = 26;

/** `target[key] = value`, also for `__proto__` (an own key after JSON.parse). */
function put(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** What {@link tableValue} wrote, besides the value. */
export interface TableStats {
  /** Object members met in the input (to compare with the text's, see jsonScan.ts). */
  members: number;
  /** Arrays written as tables. */
  tables: number;
}

/**
 * The column names when `items` is an array of objects that all have the same keys (the first
 * one's order) and writing it as a table saves characters; otherwise `undefined`.
 */
function columnsOf(items: readonly unknown[]): string[] | undefined {
  if (items.length < 2) return undefined;
  const first = items[0];
  if (!isObject(first)) return undefined;
  const columns = Object.keys(first);
  if (columns.length === 0) return undefined;
  for (let i = 1; i < items.length; i++) {
    const item = items[i];
    if (!isObject(item)) return undefined;
    const keys = Object.keys(item);
    if (keys.length !== columns.length) return undefined;
    // Same count and every key one of the first's (keys are unique): the same set, in any order.
    for (let k = 0; k < keys.length; k++) if (keys[k] !== columns[k] && !Object.hasOwn(first, keys[k]!)) return undefined;
  }
  let keyChars = 0;
  for (const key of columns) keyChars += key.length + 3; // "key":
  return keyChars * (items.length - 1) > TABLE_OVERHEAD_CHARS ? columns : undefined;
}

/**
 * `value` with every array of objects sharing their keys written as a table and reserved keys
 * escaped. `stats` counts what was met. Throws RangeError on values nested past the stack.
 */
export function tableValue(value: unknown, stats: TableStats): unknown {
  if (Array.isArray(value)) {
    const columns = columnsOf(value);
    if (columns === undefined) return value.map((item) => tableValue(item, stats));
    stats.tables += 1;
    const rows: unknown[][] = new Array<unknown[]>(value.length);
    for (let r = 0; r < value.length; r++) {
      const item = value[r] as Record<string, unknown>;
      const row: unknown[] = new Array<unknown>(columns.length);
      for (let c = 0; c < columns.length; c++) row[c] = tableValue(item[columns[c]!], stats);
      stats.members += columns.length;
      rows[r] = row;
    }
    return { [COLUMNS_KEY]: columns, [ROWS_KEY]: rows };
  }
  if (isObject(value)) {
    const out: Record<string, unknown> = {};
    const keys = Object.keys(value);
    stats.members += keys.length;
    for (const key of keys) put(out, key.charCodeAt(0) === 64 && RESERVED.test(key) ? `@${key}` : key, tableValue(value[key], stats));
    return out;
  }
  return value;
}

/** True when `value` is written in the table form (exactly the two keys, well formed). */
function isTable(value: Record<string, unknown>): value is { "@columns": string[]; "@rows": unknown[][] } {
  const keys = Object.keys(value);
  if (keys.length !== 2 || !Object.hasOwn(value, COLUMNS_KEY) || !Object.hasOwn(value, ROWS_KEY)) return false;
  const columns = value[COLUMNS_KEY];
  const rows = value[ROWS_KEY];
  if (!Array.isArray(columns) || !Array.isArray(rows)) return false;
  if (!columns.every((c) => typeof c === "string")) return false;
  return rows.every((row) => Array.isArray(row) && row.length === columns.length);
}

/** The value {@link tableValue} was given: tables back to arrays of objects, escaped keys restored. */
export function untableValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(untableValue);
  if (!isObject(value)) return value;
  if (isTable(value)) {
    const columns = value[COLUMNS_KEY];
    return value[ROWS_KEY].map((row) => {
      const item: Record<string, unknown> = {};
      for (let c = 0; c < columns.length; c++) put(item, columns[c]!, untableValue(row[c]));
      return item;
    });
  }
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    put(out, RESERVED.test(key) && key.startsWith("@@") ? key.slice(1) : key, untableValue(value[key]));
  }
  return out;
}
