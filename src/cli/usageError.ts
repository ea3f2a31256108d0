import { AbridgeError, ErrorCode } from "../model/errors.js";

/** A wrong command line: printed with the usage of the command, exit code 2. */
export function usageError(message: string): AbridgeError {
  return new AbridgeError(ErrorCode.USAGE, message);
}
