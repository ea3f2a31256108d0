import type { FileHandle } from "node:fs/promises";
import { AbridgeError, ErrorCode } from "../errors.js";

/** Longest line the cache reader accepts; a summary line is a few hundred bytes. */
export const MAX_LINE_BYTES = 1024 * 1024;

const CHUNK_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;

/** A line as the reader hands it on. */
export interface ReadLine {
  /** Text without the terminating newline. */
  text: string;
  /** 1-based physical line number in the file. */
  lineNumber: number;
  /** Byte offset of the line's first byte. */
  offset: number;
}

/** Options of {@link readLines}. */
export interface ReadLinesOptions {
  /** Byte offset to start at; must be the start of a line. */
  start: number;
  /** Byte offset to stop at (exclusive): the file size seen by the caller. */
  end: number;
  /** Line number of the line at `start`. */
  firstLineNumber: number;
  /** Called for every newline-terminated line that is not blank. */
  onLine: (line: ReadLine) => void;
  /** Called for a terminated line longer than `maxLineBytes`; its bytes are never buffered. */
  onOversized: (lineNumber: number, offset: number) => void;
  maxLineBytes?: number;
  /** Read size; small values let tests put line boundaries across reads. */
  chunkBytes?: number;
  signal?: AbortSignal;
}

/** What {@link readLines} leaves behind. */
export interface ReadLinesResult {
  /** Offset just after the last newline read: where the next read must start. */
  nextOffset: number;
  /** Line number of the line at `nextOffset`. */
  nextLineNumber: number;
  /**
   * Bytes after the last newline (a line still being written, or torn by a crash); `text` is
   * undefined when that fragment is already over the size limit.
   */
  tail?: { text: string | undefined; lineNumber: number; offset: number };
}

function isBlank(text: string): boolean {
  // Fast path: nearly every line starts with "{"; trim() would copy each one.
  const first = text.charCodeAt(0);
  if (first > 0x20) return false;
  return text.trim().length === 0;
}

/**
 * Reads newline-terminated lines of `handle` between `start` and `end`, modelled on the SDK's
 * `ReadBuffer`: the line length is bounded (an oversized line is reported and skipped without being
 * held in memory), blank lines are ignored, and an unterminated fragment at the end is returned as
 * `tail` instead of being treated as a line, because another process may still be writing it.
 */
export async function readLines(handle: FileHandle, options: ReadLinesOptions): Promise<ReadLinesResult> {
  const maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
  const chunk = Buffer.allocUnsafe(Math.min(options.chunkBytes ?? CHUNK_BYTES, Math.max(1, options.end - options.start)));
  let position = options.start;
  let lineNumber = options.firstLineNumber;
  let lineStart = options.start;
  // Pieces of a line that spans chunk boundaries; empty when the line starts in the current chunk.
  let carry: Buffer[] = [];
  let carryBytes = 0;
  let oversized = false;

  while (position < options.end) {
    if (options.signal?.aborted) {
      throw new AbridgeError(ErrorCode.CANCELLED, "reading the cache was cancelled", { cause: options.signal.reason });
    }
    const want = Math.min(chunk.length, options.end - position);
    const { bytesRead } = await handle.read(chunk, 0, want, position);
    if (bytesRead === 0) break; // Truncated under us: stop at what exists.
    let from = 0;
    while (from < bytesRead) {
      const newline = chunk.indexOf(NEWLINE, from);
      const stop = newline === -1 || newline >= bytesRead ? bytesRead : newline;
      const pieceBytes = stop - from;
      if (!oversized && carryBytes + pieceBytes > maxLineBytes) {
        oversized = true;
        carry = [];
        carryBytes = 0;
      }
      if (stop === bytesRead) {
        // No newline in the rest of this chunk: keep the piece (copied, the chunk is reused).
        if (!oversized) {
          carry.push(Buffer.from(chunk.subarray(from, stop)));
          carryBytes += pieceBytes;
        }
        break;
      }
      if (oversized) {
        options.onOversized(lineNumber, lineStart);
      } else {
        let text: string;
        if (carryBytes === 0) {
          text = chunk.toString("utf8", from, stop);
        } else {
          carry.push(chunk.subarray(from, stop));
          text = Buffer.concat(carry, carryBytes + pieceBytes).toString("utf8");
        }
        if (!isBlank(text)) options.onLine({ text, lineNumber, offset: lineStart });
      }
      carry = [];
      carryBytes = 0;
      oversized = false;
      lineNumber += 1;
      from = stop + 1;
      lineStart = position + from;
    }
    position += bytesRead;
  }

  const result: ReadLinesResult = { nextOffset: lineStart, nextLineNumber: lineNumber };
  if (position > lineStart) {
    const text = oversized ? undefined : Buffer.concat(carry, carryBytes).toString("utf8");
    if (text === undefined || !isBlank(text)) result.tail = { text, lineNumber, offset: lineStart };
  }
  return result;
}
