import { AbridgeError, ErrorCode } from "../model/errors.js";
import { BoundedLineReader } from "./boundedLineReader.js";

/**
 * Splits a byte stream into newline-terminated lines with a hard bound on a line's size. Bytes are
 * kept as chunks and only joined once a newline arrives, so a peer that never sends one costs at
 * most `maxLineBytes` of memory, never an unbounded buffer (readline has no such bound).
 */
export class LineSplitter {
  private readonly reader: BoundedLineReader;
  private failed = false;

  constructor(private readonly maxLineBytes: number) {
    this.reader = new BoundedLineReader(maxLineBytes);
  }

  /**
   * Feeds a chunk and returns the complete lines it finished (without `\n`; a trailing `\r` is
   * dropped too). Once a line grows past `maxLineBytes`, `error` (DAEMON_BAD_REQUEST) is set,
   * after the lines that came before it, and the splitter stays failed: the rest of the stream
   * cannot be framed reliably, so the caller closes the connection at once rather than reading on
   * to the over-long line's newline.
   */
  push(chunk: Buffer): { lines: string[]; error?: AbridgeError } {
    if (this.failed) return { lines: [] };
    const lines: string[] = [];
    for (const event of this.reader.push(chunk)) {
      if ("dropped" in event) return { lines, error: this.fail(event.dropped.bytes) };
      lines.push(event.line);
    }
    if (this.reader.overflowing) return { lines, error: this.fail(this.reader.droppedBytes) };
    return { lines };
  }

  /** Forgets anything held and reads nothing more (the connection is being refused). */
  clear(): void {
    this.failed = true;
    this.reader.clear();
  }

  /** Bytes of an unfinished line held so far. */
  get bufferedBytes(): number {
    return this.reader.bufferedBytes;
  }

  private fail(length: number): AbridgeError {
    this.failed = true;
    this.reader.clear();
    return new AbridgeError(ErrorCode.DAEMON_BAD_REQUEST, `line longer than ${this.maxLineBytes} bytes (at least ${length})`);
  }
}
