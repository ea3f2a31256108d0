import type { Writable } from "node:stream";

/**
 * Bytes of lines (counted in UTF-16 units, which equal bytes for ASCII JSON) that may wait for a
 * stream that pushes back before {@link LineWriter.write} refuses more: 64 MiB.
 */
export const DEFAULT_MAX_QUEUED_LINE_BYTES = 64 * 1024 * 1024;

/** Options of a {@link LineWriter}. */
export interface LineWriterOptions {
  /**
   * Bytes of lines that may wait while the stream pushes back (default 64 MiB). A line is taken
   * while less than this waits, so one line larger than the bound still goes out.
   */
  maxQueuedBytes?: number;
}

/**
 * Writes newline-delimited messages to a stream that may push back (a child's stdin, a client's
 * stdout): the lines of one tick leave in one `writev`, and while the stream pushes back lines wait
 * in one queue behind one `drain` listener, bounded in bytes.
 *
 * Waiting for `drain` once per write (`stream.once("drain", ...)` for every write that met
 * backpressure) adds a listener per waiting line, and with 100,000 of them every `drain` walked
 * them all: quadratic time on the event loop once the reader reads again. Here the listener is
 * one for the writer's life, and a drain writes queued lines until the stream pushes back again.
 */
export class LineWriter {
  private readonly maxQueuedBytes: number;
  /** Lines waiting for `drain`, from `head` on (a moving start: no O(n) shift per line). */
  private queue: string[] = [];
  private head = 0;
  private bytes = 0;
  /** True from a write the stream refused more of until the queue has gone out. */
  private waitingForDrain = false;
  /** True while this tick's lines are held in the stream's buffer, to leave together. */
  private corked = false;
  private closed = false;

  constructor(
    private readonly stream: Writable,
    options: LineWriterOptions = {},
  ) {
    this.maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_LINE_BYTES;
    stream.on("drain", this.onDrain);
  }

  /** Lines waiting for the stream to drain. */
  get queuedLines(): number {
    return this.queue.length - this.head;
  }

  /** Bytes of the lines waiting for the stream to drain. */
  get queuedBytes(): number {
    return this.bytes;
  }

  /** The largest number of bytes that may wait (see {@link LineWriterOptions.maxQueuedBytes}). */
  get limit(): number {
    return this.maxQueuedBytes;
  }

  /** True when the next {@link write} would be refused: the queue is at its bound, or the writer closed. */
  get full(): boolean {
    return this.closed || this.bytes >= this.maxQueuedBytes;
  }

  /**
   * Writes `line` (its newline included) in this tick's batch, or queues it while the stream
   * pushes back. False when it was refused: the writer is closed, or {@link full}.
   */
  write(line: string): boolean {
    if (this.closed) return false;
    if (!this.waitingForDrain) {
      if (!this.writeBatched(line)) this.waitingForDrain = true;
      return true;
    }
    if (this.bytes >= this.maxQueuedBytes) return false;
    this.queue.push(line);
    this.bytes += line.length;
    return true;
  }

  /**
   * Stops writing: the `drain` listener is removed and what still waits is let go. Returns the
   * number of lines let go. Idempotent.
   */
  close(): number {
    if (this.closed) return 0;
    this.closed = true;
    this.stream.off("drain", this.onDrain);
    const dropped = this.queuedLines;
    this.queue = [];
    this.head = 0;
    this.bytes = 0;
    return dropped;
  }

  /**
   * Writes `line` as part of this tick's batch: the first write of a tick corks the stream and the
   * batch leaves in one `writev` once the tick's work is done (one system call, not one per line).
   */
  private writeBatched(line: string): boolean {
    if (!this.corked) {
      this.corked = true;
      this.stream.cork();
      process.nextTick(this.uncork);
    }
    return this.stream.write(line);
  }

  private readonly uncork = (): void => {
    this.corked = false;
    this.stream.uncork();
  };

  /** On `drain`: writes queued lines until the stream pushes back again or the queue is empty. */
  private readonly onDrain = (): void => {
    if (this.closed) return;
    this.waitingForDrain = false;
    while (this.head < this.queue.length) {
      const line = this.queue[this.head]!;
      this.queue[this.head] = "";
      this.head += 1;
      this.bytes -= line.length;
      if (!this.writeBatched(line)) {
        this.waitingForDrain = true;
        break;
      }
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  };
}
