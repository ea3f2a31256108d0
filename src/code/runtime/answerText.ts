/** The text a model reads after its program ran: console output, then the return value or the error, then a footer. */
import type { CodeRunResult } from "./codeRuntime.js";

/** `[log] text`: the line's level, then its text. */
function consoleText(result: CodeRunResult): string[] {
  return result.console.map((line) => `[${line.level}] ${line.text}`);
}

/** `3 calls, 41 ms` (and the console lines dropped, when some were). */
export function codeAnswerFooter(result: CodeRunResult): string {
  const calls = result.calls.length;
  const parts = [`${calls} ${calls === 1 ? "call" : "calls"}`, `${Math.round(result.durationMs)} ms`];
  if (result.consoleDropped > 0) parts.push(`${result.consoleDropped} console ${result.consoleDropped === 1 ? "line" : "lines"} dropped`);
  return `(${parts.join(", ")})`;
}

/** The answer without its footer: the console lines in order, then the return value's JSON or the error. */
export function codeAnswerBody(result: CodeRunResult): string {
  const lines = consoleText(result);
  if (result.error !== undefined) lines.push(`error: ${result.error.message} [${result.error.code}]`);
  else if (result.returnJson !== undefined) lines.push(result.returnJson);
  return lines.join("\n");
}

/**
 * The answer to a run: {@link codeAnswerBody}, then {@link codeAnswerFooter} on a line of its own
 * (the footer alone when the run printed and returned nothing). A front end that bounds the answer
 * cuts the body and keeps the footer whole (see `CallGuard.limitText`).
 */
export function codeAnswerText(result: CodeRunResult): string {
  const body = codeAnswerBody(result);
  const footer = codeAnswerFooter(result);
  return body === "" ? footer : `${body}\n${footer}`;
}
