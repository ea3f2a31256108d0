import type { Readable, Writable } from "node:stream";

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
  /** Aborted on SIGINT/SIGTERM (bin.ts) or by a test. */
  signal: AbortSignal;
  /** Whether stderr is a terminal (progress bar vs plain lines). */
  isTTY: boolean;
}

/** Writes a line to a stream. */
export function writeLine(stream: Writable, text = ""): void {
  stream.write(`${text}\n`);
}
