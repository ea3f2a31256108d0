import type { FileHandle } from "node:fs/promises";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { MAX_LINE_BYTES } from "./readLines.js";

const CHUNK_BYTES = 4 * 1024 * 1024;
const NEWLINE = 0x0a;

/** Options of {@link scanLineBytes}. */
export interface ScanLineBytesOptions {
  /** Byte offset to start at; must be the start of a line. */
  start: number;
  /** Byte offset to stop at (exclusive): the file size seen by the caller. */
  end: number;
  /** Line number of the line at `start`. */
  firstLineNumber: number;
  /**
   * Called for every newline-terminated line that is not blank, as `bytes[from..to)` (newline
   * excluded). `bytes` is reused for the next read: copy what must outlive the call.
   */
  onLine: (bytes: Buffer, from: number, to: number, lineNumber: number, offset: number) => void;
  /** Called for a terminated line longer than `maxLineBytes`; its bytes are never buffered. */
  onOversized: (lineNumber: number, offset: number) => void;
  maxLineBytes?: number;
  /** Read size; raised to `maxLineBytes + 1` so that one read always holds a whole line. */
  chunkBytes?: number;
  signal?: AbortSignal | undefined;
}

/** What {@link scanLineBytes} leaves behind. */
export interface ScanLineBytesResult {
  /** Offset just after the last newline read: where the next scan must start. */
  nextOffset: number;
  /** Line number of the line at `nextOffset`. */
  nextLineNumber: number;
  /**
   * Bytes after the last newline (a line still being written, or torn by a crash), copied;
   * `bytes` is undefined when that fragment is already over the size limit.
   */
  tail?: { bytes: Buffer | undefined; lineNumber: number; offset: number };
}

/**
 * Whether `bytes[from..to)` is blank, decided as `readLines` decides it (so both count the same
 * lines): a line starting above U+0020 is not; any other is blank when `String#trim` empties it.
 */
function isBlank(bytes: Buffer, from: number, to: number): boolean {
  // Nearly every line starts with "{": one comparison decides.
  if ((bytes[from] as number) > 0x20) return false;
  return bytes.toString("utf8", from, to).trim().length === 0;
}

/**
 * Reads the lines of `handle` between `start` and `end` as bytes, without decoding them: the
 * summary cache's loader looks at a line's first bytes only. Like `readLines` (and the SDK's
 * `ReadBuffer`) the line length is bounded, an oversized line is reported and skipped without
 * being held, blank lines are ignored, and an unterminated fragment at the end is returned as
 * `tail`, because another process may still be writing it.
 *
 * A line cut by the end of a read is read again from its start by the next read instead of being
 * pieced together: a read holds more than the longest line, so every line is handed on as one
 * view on the read buffer, and at most one line per read (a few hundred bytes of 4 MiB) is read twice.
 */
export async function scanLineBytes(handle: FileHandle, options: ScanLineBytesOptions): Promise<ScanLineBytesResult> {
  const maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
  const { onLine, onOversized, end } = options;
  const size = Math.min(Math.max(options.chunkBytes ?? CHUNK_BYTES, maxLineBytes + 1), Math.max(1, end - options.start));
  const chunk = Buffer.allocUnsafe(size);
  let position = options.start;
  let lineNumber = options.firstLineNumber;
  let lineStart = options.start;
  // The line starting at lineStart is over the limit: its bytes are skipped until its newline.
  let oversized = false;
  let tail: ScanLineBytesResult["tail"];

  while (position < end) {
    if (options.signal?.aborted) {
      throw new AbridgeError(ErrorCode.CANCELLED, "reading the cache was cancelled", { cause: options.signal.reason });
    }
    const want = Math.min(chunk.length, end - position);
    const { bytesRead } = await handle.read(chunk, 0, want, position);
    // The buffer is reused: bytes past bytesRead are from an earlier read.
    const view = chunk.subarray(0, bytesRead);
    // Truncated under us, or the last read: whatever follows the last newline is the tail.
    const last = bytesRead < want || position + bytesRead >= end;
    let from = 0;

    if (oversized) {
      const newline = view.indexOf(NEWLINE);
      if (newline === -1) {
        position += bytesRead;
        if (last) break;
        continue;
      }
      onOversized(lineNumber, lineStart);
      oversized = false;
      lineNumber += 1;
      from = newline + 1;
    }

    for (;;) {
      const newline = view.indexOf(NEWLINE, from);
      if (newline === -1) break;
      if (newline - from > maxLineBytes) onOversized(lineNumber, position + from);
      else if (newline > from && !isBlank(view, from, newline)) onLine(view, from, newline, lineNumber, position + from);
      lineNumber += 1;
      from = newline + 1;
    }
    lineStart = position + from;

    if (from === bytesRead) {
      position += bytesRead;
      if (last) break;
    } else if (bytesRead - from > maxLineBytes) {
      // No newline within the limit: skip to the line's end without holding its bytes.
      oversized = true;
      position += bytesRead;
      if (last) break;
    } else if (last) {
      if (!isBlank(view, from, bytesRead)) tail = { bytes: Buffer.from(view.subarray(from)), lineNumber, offset: lineStart };
      position += bytesRead;
      break;
    } else {
      // Read the cut line again, whole, with the next read.
      position = lineStart;
    }
  }

  if (oversized && position > lineStart) tail = { bytes: undefined, lineNumber, offset: lineStart };
  return { nextOffset: lineStart, nextLineNumber: lineNumber, ...(tail === undefined ? {} : { tail }) };
}
