import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import { isObject } from "../model/json.js";
import type { JsonObject } from "../model/types.js";

/** A wrong command line: printed with the usage line of the command after it, exit code 2. */
export function usageError(message: string): AbridgeError {
  return new AbridgeError(ErrorCode.USAGE, message);
}

/**
 * The value of option `--name` as a positive integer, undefined when it was not given; anything
 * else is a usage error naming the option and what was given.
 */
export function positiveIntOption(values: Readonly<Record<string, unknown>>, name: string): number | undefined {
  const text = values[name];
  if (typeof text !== "string") return undefined;
  const value = Number(text);
  if (!Number.isInteger(value)) throw usageError(`--${name}: expected a positive integer, got "${text}"`);
  if (value <= 0) throw usageError(`--${name}: ${text} is out of range: expected a positive integer (1 or more)`);
  return value;
}

/**
 * A tool call's arguments given on the command line as JSON text: an object, or {} when absent.
 * Invalid JSON and any other JSON value are usage errors that start with `label`.
 */
export function jsonObjectArgument(text: string | undefined, label: string): JsonObject {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw usageError(`${label}: expected a JSON object, got invalid JSON (${messageOf(err)})`);
  }
  if (!isObject(value)) throw usageError(`${label}: expected a JSON object, got ${Array.isArray(value) ? "an array" : value === null ? "null" : typeof value}`);
  return value;
}
