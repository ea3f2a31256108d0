import { AbridgeError, ErrorCode } from "../model/errors.js";
import type { ServerStatus } from "../model/types.js";

/**
 * The error of a server that did not start, as a one-shot command reports it: `server fs failed
 * to start: <why>`, with the start error's own code (`UPSTREAM_START_FAILED`, `UPSTREAM_TIMEOUT`,
 * ...). A start error begins with the server's name (`fs: ...`); it is not said twice.
 */
export function failedStartError(status: Pick<ServerStatus, "name" | "error">): AbridgeError {
  const { name, error } = status;
  return new AbridgeError(error?.code ?? ErrorCode.UPSTREAM_START_FAILED, `server ${name} failed to start: ${failedStartReason(status)}`, {
    details: { server: name },
  });
}

/** Why a server did not start, without its name in front (where the server is named already). */
export function failedStartReason(status: Pick<ServerStatus, "name" | "error">): string {
  const { name, error } = status;
  return error === undefined ? "unknown error" : error.message.startsWith(`${name}: `) ? error.message.slice(name.length + 2) : error.message;
}
