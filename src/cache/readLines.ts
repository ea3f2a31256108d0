import { isAscii } from "node:buffer";
import type { FileHandle } from "node:fs/promises";
import { AbridgeError, ErrorCode } from "../model/errors.js";

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
  signal?: AbortSignal | undefined;
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
 *
 * The whole lines of a chunk are decoded with one `toString` when they are ASCII (cache lines are
 * JSON.stringify output, so nearly always) and cut out of that string: decoding 100,000 lines one
 * `Buffer#toString` at a time was a tenth of the load time of a large cache. Other chunks are
 * decoded line by line, so that each line is decoded exactly as on its own.
 */
export async function readLines(handle: FileHandle, options: ReadLinesOptions): Promise<ReadLinesResult> {
  const maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
  const { onLine, onOversized } = options;
  const chunk = Buffer.allocUnsafe(Math.min(options.chunkBytes ?? CHUNK_BYTES, Math.max(1, options.end - options.start)));
  let position = options.start;
  let lineNumber = options.firstLineNumber;
  let lineStart = options.start;
  // Pieces of a line that spans chunk boundaries; empty when the line starts in the current chunk.
  let carry: Buffer[] = [];
  let carryBytes = 0;
  // The line in progress is over the limit: its bytes are dropped until its newline.
  let oversized = false;

  while (position < options.end) {
    if (options.signal?.aborted) {
      throw new AbridgeError(ErrorCode.CANCELLED, "reading the cache was cancelled", { cause: options.signal.reason });
    }
    const want = Math.min(chunk.length, options.end - position);
    const { bytesRead } = await handle.read(chunk, 0, want, position);
    if (bytesRead === 0) break; // Truncated under us: stop at what exists.
    // The buffer is reused: bytes past bytesRead are from an earlier read.
    const view = chunk.subarray(0, bytesRead);
    let from = 0;

    if (carryBytes > 0 || oversized) {
      // Finish the line begun in an earlier chunk.
      const newline = view.indexOf(NEWLINE);
      const stop = newline === -1 ? bytesRead : newline;
      if (!oversized && carryBytes + stop > maxLineBytes) {
        oversized = true;
        carry = [];
        carryBytes = 0;
      }
      if (newline === -1) {
        if (!oversized) {
          // Copied: the chunk is overwritten by the next read.
          carry.push(Buffer.from(view));
          carryBytes += bytesRead;
        }
        position += bytesRead;
        continue;
      }
      if (oversized) {
        onOversized(lineNumber, lineStart);
      } else {
        carry.push(view.subarray(0, stop));
        const text = Buffer.concat(carry, carryBytes + stop).toString("utf8");
        if (!isBlank(text)) onLine({ text, lineNumber, offset: lineStart });
      }
      carry = [];
      carryBytes = 0;
      oversized = false;
      lineNumber += 1;
      from = stop + 1;
      lineStart = position + from;
    }

    const last = from < bytesRead ? view.lastIndexOf(NEWLINE) : -1;
    if (last >= from) {
      // Lines from..last, each terminated in this chunk.
      const base = position + from;
      lineNumber = isAscii(view.subarray(from, last))
        ? asciiLines(view.toString("latin1", from, last), base, lineNumber, maxLineBytes, onLine, onOversized)
        : utf8Lines(view, from, last, base, lineNumber, maxLineBytes, onLine, onOversized);
      from = last + 1;
      lineStart = position + from;
    }

    if (from < bytesRead) {
      // The start of a line that ends in a later chunk (or is the unterminated tail).
      const pieceBytes = bytesRead - from;
      if (pieceBytes > maxLineBytes) oversized = true;
      else {
        carry.push(Buffer.from(view.subarray(from)));
        carryBytes = pieceBytes;
      }
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

/**
 * Hands on the lines of `text` (ASCII, so one character per byte; its last line ends at the end of
 * `text`, where the chunk had a newline). `slice` makes a view on `text`, not a copy. Returns the
 * line number after the last line.
 */
function asciiLines(
  text: string,
  base: number,
  lineNumber: number,
  maxLineBytes: number,
  onLine: ReadLinesOptions["onLine"],
  onOversized: ReadLinesOptions["onOversized"],
): number {
  const length = text.length;
  let from = 0;
  for (;;) {
    let stop = text.indexOf("\n", from);
    if (stop === -1) stop = length;
    if (stop - from > maxLineBytes) onOversized(lineNumber, base + from);
    else if (stop > from) {
      const line = text.slice(from, stop);
      if (!isBlank(line)) onLine({ text: line, lineNumber, offset: base + from });
    }
    lineNumber += 1;
    if (stop === length) return lineNumber;
    from = stop + 1;
  }
}

/** Like {@link asciiLines} for bytes `from..last` of `view` that are not all ASCII: decoded line by line. */
function utf8Lines(
  view: Buffer,
  from: number,
  last: number,
  base: number,
  lineNumber: number,
  maxLineBytes: number,
  onLine: ReadLinesOptions["onLine"],
  onOversized: ReadLinesOptions["onOversized"],
): number {
  let at = from;
  while (at <= last) {
    const stop = view.indexOf(NEWLINE, at);
    if (stop - at > maxLineBytes) onOversized(lineNumber, base + at - from);
    else if (stop > at) {
      const text = view.toString("utf8", at, stop);
      if (!isBlank(text)) onLine({ text, lineNumber, offset: base + at - from });
    }
    lineNumber += 1;
    at = stop + 1;
  }
  return lineNumber;
}
