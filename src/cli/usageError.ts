import { AbridgeError, ErrorCode } from "../model/errors.js";

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
