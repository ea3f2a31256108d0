/** The text a model reads after its program ran: console output, then the return value or the error, then a footer. */
import type { CodeRunResult } from "./codeRuntime.js";

/** Options of {@link codeAnswerText}. */
export interface CodeAnswerOptions {
  /** The bridge's `max_output_bytes`: past it (UTF-8 bytes) the body goes to `cut`. */
  maxBytes?: number;
  /**
   * Cuts the body to at most `maxBytes` (the bridge's own cut, which may spill the rest). The
   * footer is kept whole after it, so the model always sees how many calls were made and how long
   * it took. Without `cut` the whole text is returned for the caller to cut.
   */
  cut?: (body: string, maxBytes: number) => string;
}

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

/**
 * The answer to a run: every console line in order, tagged with its level; then the return
 * value's JSON, or the error (`error: <message> [CODE]`); then the footer. Within `maxBytes` when
 * a `cut` is given.
 */
export function codeAnswerText(result: CodeRunResult, options: CodeAnswerOptions = {}): string {
  const lines = consoleText(result);
  if (result.error !== undefined) lines.push(`error: ${result.error.message} [${result.error.code}]`);
  else if (result.returnJson !== undefined) lines.push(result.returnJson);
  const body = lines.join("\n");
  const footer = codeAnswerFooter(result);
  const text = body === "" ? footer : `${body}\n${footer}`;
  const { maxBytes, cut } = options;
  if (maxBytes === undefined || cut === undefined || Buffer.byteLength(text) <= maxBytes) return text;
  const room = Math.max(0, maxBytes - Buffer.byteLength(footer) - 1);
  return `${cut(body, room)}\n${footer}`;
}
