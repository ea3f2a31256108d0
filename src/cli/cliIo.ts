import type { Readable, Writable } from "node:stream";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { stripControl } from "../util/stripControl.js";

/**
 * Everything a command may touch of the outside world. Only `bin.ts` builds one from `process`;
 * tests build one from buffers, so every command runs in-process under test.
 */
export interface CliIo {
  stdout: Writable;
  stderr: Writable;
  /** Protocol input for `serve` over stdio. */
  stdin: Readable;
  env: Record<string, string | undefined>;
  cwd: string;
  /** Aborted on SIGINT/SIGTERM (bin.ts), when stdout's reader goes away, or by a test. */
  signal: AbortSignal;
  /** Whether stderr is a terminal (progress bar vs plain lines). */
  isTTY: boolean;
  /**
   * Called by a command whose output still waiting in stdout has nobody left to read it (`serve`
   * after its client ended stdin without reading): the process may then exit without waiting
   * for stdout to drain, which for a client that never reads would be forever.
   */
  abandonOutput?: () => void;
}

/**
 * Writes a line to a stream, without terminal control: what abridge prints carries text from
 * upstreams (descriptions, titles, errors), and escape sequences in it must not reach the terminal.
 */
export function writeLine(stream: Writable, text = ""): void {
  stream.write(`${stripControl(text)}\n`);
}

/**
 * The abort reason when stdout's reader went away (`abridge tools | head`): the command stops,
 * its children are ended, and nothing more is said, as a Unix tool ends on a closed pipe.
 */
export class OutputClosedError extends AbridgeError {
  constructor(cause?: unknown) {
    super(ErrorCode.CANCELLED, "stdout was closed by its reader", cause === undefined ? {} : { cause });
  }
}

/** True when `signal` was aborted because stdout was closed (see {@link OutputClosedError}). */
export function outputClosed(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason instanceof OutputClosedError;
}
