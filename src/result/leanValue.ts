/**
 * What `lean` leaves out of a JSON value: object fields that are null, "", [] or {} (after their
 * own contents were leaned). In an array of objects sharing their keys, a field is left out only
 * where it is empty in every row, so the rows keep sharing their keys and stay one table.
 * Array elements are never dropped: their positions mean something.
 */
import { isObject } from "../model/json.js";

function isEmpty(value: unknown): boolean {
  if (value === null || value === "") return true;
  if (Array.isArray(value)) return value.length === 0;
  return isObject(value) && Object.keys(value).length === 0;
}

function put(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** Keys of `items` when they are two or more objects with the same keys, else `undefined`. */
function sharedKeys(items: readonly unknown[]): string[] | undefined {
  if (items.length < 2 || !isObject(items[0])) return undefined;
  const first = items[0];
  const keys = Object.keys(first);
  for (const item of items) {
    if (!isObject(item)) return undefined;
    const own = Object.keys(item);
    if (own.length !== keys.length || !own.every((k) => Object.hasOwn(first, k))) return undefined;
  }
  return keys;
}

/** Counts what {@link leanValue} left out. */
export interface LeanStats {
  dropped: number;
}

/** `value` without its null or empty object fields; `stats.dropped` counts the fields left out. */
export function leanValue(value: unknown, stats: LeanStats): unknown {
  if (Array.isArray(value)) {
    const keys = sharedKeys(value);
    if (keys === undefined) return value.map((item) => leanValue(item, stats));
    const rows = value.map((item) => {
      const row: Record<string, unknown> = {};
      for (const key of keys) put(row, key, leanValue((item as Record<string, unknown>)[key], stats));
      return row;
    });
    const emptyEverywhere = keys.filter((key) => rows.every((row) => isEmpty(row[key])));
    if (emptyEverywhere.length === 0) return rows;
    stats.dropped += emptyEverywhere.length * rows.length;
    const drop = new Set(emptyEverywhere);
    return rows.map((row) => {
      const kept: Record<string, unknown> = {};
      for (const key of keys) if (!drop.has(key)) put(kept, key, row[key]);
      return kept;
    });
  }
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const leaned = leanValue(value[key], stats);
    if (isEmpty(leaned)) {
      stats.dropped += 1;
      continue;
    }
    put(out, key, leaned);
  }
  return out;
}
