/**
 * A bounded line reader shared by the stdio transports: the server side of `abridge serve` and the
 * client side of every stdio upstream.
 */

/** Bytes kept of each end of a dropped line: enough to tell what it was and whose answer. */
const KEEP_OF_DROPPED_BYTES = 4_096;

/** What is left of a line that went over the bound: its size and its two ends. */
export interface DroppedLine {
  /** Bytes of the line (newline excluded). */
  bytes: number;
  /** Its first bytes, up to 4 KiB. */
  head: string;
  /** Its last bytes, up to 4 KiB. */
  tail: string;
}

/** One thing a {@link BoundedLineReader} read: a complete line, or what is left of a dropped one. */
export type LineEvent = { line: string } | { dropped: DroppedLine };

/**
 * Splits a byte stream into newline-terminated lines, bounding each line's size without ending
 * the stream. The SDK's `ReadBuffer` re-concatenates its whole buffer on every chunk (quadratic
 * for a big message) and throws once it holds 10 MiB, which ends the transport. Here a line's
 * chunks are kept in a list and joined once, when its newline arrives; a line that grows past
 * `maxLineBytes` is discarded as it streams in (only its first and last few KiB are kept, so the
 * caller can say whose it was) and reading resumes with the next line.
 */
export class BoundedLineReader {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Set while the rest of an over-long line is being skipped. */
  private dropping: { bytes: number; head: Buffer; tail: Buffer } | undefined;

  constructor(readonly maxLineBytes: number) {
    if (!(maxLineBytes > 0)) throw new RangeError(`maxLineBytes must be positive, got ${maxLineBytes}`);
  }

  /** Feeds a chunk; returns the lines it completed (without `\n` or a trailing `\r`), in order. */
  push(chunk: Buffer): LineEvent[] {
    const events: LineEvent[] = [];
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      this.take(chunk.subarray(start, end));
      if (newline === -1) break;
      events.push(this.finishLine());
      start = newline + 1;
    }
    return events;
  }

  /** Bytes of an unfinished line held in memory (0 while one is being dropped). */
  get bufferedBytes(): number {
    return this.size;
  }

  /** True while an over-long line is being skipped (its newline has not arrived yet). */
  get overflowing(): boolean {
    return this.dropping !== undefined;
  }

  /** Bytes of the over-long line skipped so far (0 when none is). */
  get droppedBytes(): number {
    return this.dropping?.bytes ?? 0;
  }

  /**
   * Ends the stream: the unfinished line (one without its newline), or what is left of it when it
   * went over the bound; undefined when nothing was pending. The reader is empty afterwards.
   */
  finish(): LineEvent | undefined {
    if (this.dropping === undefined && this.size === 0) return undefined;
    return this.finishLine();
  }

  /** The first bytes (up to 4 KiB) of the over-long line being skipped ("" when none is). */
  get droppedHead(): string {
    return this.dropping?.head.toString("utf8") ?? "";
  }

  /** Forgets any unfinished line. */
  clear(): void {
    this.chunks = [];
    this.size = 0;
    this.dropping = undefined;
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.dropping) {
      this.dropping.bytes += piece.length;
      this.dropping.tail = keepTail(this.dropping.tail, piece);
      return;
    }
    if (this.size + piece.length <= this.maxLineBytes) {
      this.chunks.push(piece);
      this.size += piece.length;
      return;
    }
    // Over the bound: keep the two ends, let go of the rest now rather than at the newline.
    const held = [...this.chunks, piece];
    let head: Buffer = Buffer.alloc(0);
    for (const part of held) {
      if (head.length >= KEEP_OF_DROPPED_BYTES) break;
      head = Buffer.concat([head, part.subarray(0, KEEP_OF_DROPPED_BYTES - head.length)]);
    }
    let tail: Buffer = Buffer.alloc(0);
    for (const part of held) tail = keepTail(tail, part);
    this.dropping = { bytes: this.size + piece.length, head, tail };
    this.chunks = [];
    this.size = 0;
  }

  private finishLine(): LineEvent {
    const dropping = this.dropping;
    if (dropping) {
      this.dropping = undefined;
      return { dropped: { bytes: dropping.bytes, head: dropping.head.toString("utf8"), tail: stripCr(dropping.tail.toString("utf8")) } };
    }
    const bytes = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    this.size = 0;
    return { line: stripCr(bytes.toString("utf8")) };
  }
}

function stripCr(text: string): string {
  return text.endsWith("\r") ? text.slice(0, -1) : text;
}

/** The last {@link KEEP_OF_DROPPED_BYTES} of `tail` followed by `piece` (a copy: the chunk is let go). */
function keepTail(tail: Buffer, piece: Buffer): Buffer {
  if (piece.length >= KEEP_OF_DROPPED_BYTES) return Buffer.from(piece.subarray(piece.length - KEEP_OF_DROPPED_BYTES));
  const joined = Buffer.concat([tail, piece]);
  return joined.length > KEEP_OF_DROPPED_BYTES ? joined.subarray(joined.length - KEEP_OF_DROPPED_BYTES) : joined;
}
