/** Helpers for JSON values as they come off the wire. */
import type { JsonObject } from "./types.js";

/** A plain object (not null, not an array). */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Code-unit order: locale-independent, so every process sorts the same way. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
