import { AbridgeError, ErrorCode } from "../errors.js";

/**
 * Splits a byte stream into newline-terminated lines with a hard bound on a line's size. Bytes are
 * kept as chunks and only joined once a newline arrives, so a peer that never sends one costs at
 * most `maxLineBytes` of memory, never an unbounded buffer (readline has no such bound).
 */
export class LineSplitter {
  private chunks: Buffer[] = [];
  private pending = 0;
  private failed = false;

  constructor(private readonly maxLineBytes: number) {}

  /**
   * Feeds a chunk and returns the complete lines it finished (without `\n`; a trailing `\r` is
   * dropped too). Once a line grows past `maxLineBytes`, `error` (DAEMON_BAD_REQUEST) is set,
   * after the lines that came before it, and the splitter stays failed: the rest of the stream
   * cannot be framed reliably.
   */
  push(chunk: Buffer): { lines: string[]; error?: AbridgeError } {
    if (this.failed) return { lines: [] };
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(0x0a, start);
      if (newline === -1) break;
      const length = this.pending + (newline - start);
      if (length > this.maxLineBytes) return { lines, error: this.fail(length) };
      const piece = chunk.subarray(start, newline);
      const bytes = this.chunks.length === 0 ? piece : Buffer.concat([...this.chunks, piece]);
      this.chunks = [];
      this.pending = 0;
      const line = bytes.toString("utf8");
      lines.push(line.endsWith("\r") ? line.slice(0, -1) : line);
      start = newline + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.pending += rest.length;
      if (this.pending > this.maxLineBytes) return { lines, error: this.fail(this.pending) };
      this.chunks.push(rest);
    }
    return { lines };
  }

  /** Bytes of an unfinished line held so far. */
  get bufferedBytes(): number {
    return this.pending;
  }

  private fail(length: number): AbridgeError {
    this.failed = true;
    this.chunks = [];
    this.pending = 0;
    return new AbridgeError(ErrorCode.DAEMON_BAD_REQUEST, `line longer than ${this.maxLineBytes} bytes (at least ${length})`);
  }
}
