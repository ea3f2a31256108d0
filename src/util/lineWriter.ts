import type { Writable } from "node:stream";

/**
 * Bytes of lines (counted in UTF-16 units, which equal bytes for ASCII JSON) that may wait for a
 * stream that pushes back before {@link LineWriter.write} refuses more: 64 MiB.
 */
export const DEFAULT_MAX_QUEUED_LINE_BYTES = 64 * 1024 * 1024;

/** Options of a {@link LineWriter}. */
export interface LineWriterOptions {
  /**
   * Bytes of lines that may wait while the stream pushes back (default 64 MiB; `Infinity` when the
   * owner bounds its writes another way, e.g. by no longer reading requests). A line is taken
   * while less than this waits, so one line larger than the bound still goes out.
   */
  maxQueuedBytes?: number;
  /**
   * How long a batch gathers lines before it leaves in one `writev`: to the end of this tick
   * (`"tick"`, the default: a lone line waits for nothing), or to the end of this turn of the event
   * loop (`"turn"`: also the lines that promise chains of this turn's other I/O callbacks write,
   * e.g. the answers a daemon gets from several upstream reads at once).
   */
  batch?: "tick" | "turn";
  /**
   * Called after each `drain` the writer handled, once queued lines have been written (some may
   * still wait): the owner may take up work it held back while the stream pushed back.
   */
  afterDrain?: () => void;
}

/**
 * Writes newline-delimited messages to a stream that may push back (a child's stdin, a client's
 * stdout, a daemon's socket): the lines of one tick leave in one `writev`, and while the stream
 * pushes back lines wait in one queue behind one `drain` listener, bounded in bytes.
 *
 * Waiting for `drain` once per write (`stream.once("drain", ...)` for every write that met
 * backpressure) adds a listener per waiting line, and with 100,000 of them every `drain` walked
 * them all: quadratic time on the event loop once the reader reads again. Here the listener is
 * one for the writer's life, and a drain writes queued lines until the stream pushes back again.
 * Callers that wait for the stream ({@link drained}) share one promise, not one listener each.
 *
 * When the stream closes the writer closes with it: what waits is let go and later writes are
 * refused. {@link end} ends the stream after everything queued, so a last line (an error answer)
 * never overtakes the lines written before it.
 */
export class LineWriter {
  private readonly maxQueuedBytes: number;
  private readonly batchUntil: "tick" | "turn";
  private readonly afterDrain: (() => void) | undefined;
  /** Lines waiting for `drain`, from `head` on (a moving start: no O(n) shift per line). */
  private queue: string[] = [];
  /** Whether each queued line was written `marked` (kept only once a marked line was written). */
  private marks: boolean[] | undefined;
  private head = 0;
  private bytes = 0;
  private marked = 0;
  /** True from a write the stream refused more of until the queue has gone out. */
  private waitingForDrain = false;
  /** True while this tick's lines are held in the stream's buffer, to leave together. */
  private corked = false;
  private closed = false;
  /** Set by {@link end}: the stream ends once the queue has gone out, with this last line. */
  private ending: { line: string | undefined } | undefined;
  /** Settles when nothing waits for the stream any more (see {@link drained}). */
  private drainWait: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    private readonly stream: Writable,
    options: LineWriterOptions = {},
  ) {
    this.maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_LINE_BYTES;
    this.batchUntil = options.batch ?? "tick";
    this.afterDrain = options.afterDrain;
    stream.on("drain", this.onDrain);
    stream.once("close", this.onClose);
  }

  /** Lines waiting for the stream to drain. */
  get queuedLines(): number {
    return this.queue.length - this.head;
  }

  /** Bytes of the lines waiting for the stream to drain. */
  get queuedBytes(): number {
    return this.bytes;
  }

  /** Lines written with `marked` that wait for the stream to drain. */
  get queuedMarked(): number {
    return this.marked;
  }

  /** The largest number of bytes that may wait (see {@link LineWriterOptions.maxQueuedBytes}). */
  get limit(): number {
    return this.maxQueuedBytes;
  }

  /** True while the stream pushes back: the next {@link write} is queued, not handed to the stream. */
  get pushingBack(): boolean {
    return this.waitingForDrain;
  }

  /** True once closed (by {@link close}, {@link end} or the stream's `close`): writes are refused. */
  get isClosed(): boolean {
    return this.closed || this.ending !== undefined;
  }

  /** True when the next {@link write} would be refused: the queue is at its bound, or the writer closed. */
  get full(): boolean {
    return this.isClosed || this.bytes >= this.maxQueuedBytes;
  }

  /**
   * Writes `line` (its newline included) in this tick's batch, or queues it while the stream
   * pushes back. False when it was refused: the writer is closed, or {@link full}. A `marked` line
   * is counted in {@link queuedMarked} while it waits (the owner's own kind of line, e.g. one it
   * may drop while too many wait).
   */
  write(line: string, marked = false): boolean {
    if (this.isClosed) return false;
    if (!this.waitingForDrain) {
      if (!this.writeBatched(line)) this.waitingForDrain = true;
      return true;
    }
    if (this.bytes >= this.maxQueuedBytes) return false;
    if (marked || this.marks) {
      this.marks ??= new Array<boolean>(this.queue.length).fill(false);
      this.marks.push(marked);
      if (marked) this.marked += 1;
    }
    this.queue.push(line);
    this.bytes += line.length;
    return true;
  }

  /** Sends this tick's batch now instead of at the end of the tick (or turn). */
  flush(): void {
    if (!this.corked) return;
    this.corked = false;
    this.stream.uncork();
  }

  /**
   * Resolves once nothing waits for the stream: at once while it takes lines, else at the `drain`
   * that empties the queue, or when the writer closes. Every caller shares one promise.
   */
  drained(): Promise<void> {
    if (!this.waitingForDrain || this.closed) return Promise.resolve();
    if (!this.drainWait) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.drainWait = { promise, resolve };
    }
    return this.drainWait.promise;
  }

  /**
   * Ends the stream once every queued line has gone out, with `line` last when given; later writes
   * are refused. Idempotent (a second call's line is ignored).
   */
  end(line?: string): void {
    if (this.isClosed) return;
    this.ending = { line };
    if (!this.waitingForDrain) this.finishEnd();
  }

  /**
   * Stops writing: the listeners are removed and what still waits is let go. Returns the number of
   * lines let go. Idempotent.
   */
  close(): number {
    if (this.closed) return 0;
    this.closed = true;
    this.stream.off("drain", this.onDrain);
    this.stream.off("close", this.onClose);
    const dropped = this.queuedLines;
    this.queue = [];
    this.marks = undefined;
    this.head = 0;
    this.bytes = 0;
    this.marked = 0;
    this.settleDrained();
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
      if (this.batchUntil === "turn") setImmediate(this.uncork);
      else process.nextTick(this.uncork);
    }
    return this.stream.write(line);
  }

  private readonly uncork = (): void => {
    this.flush();
  };

  private finishEnd(): void {
    const line = this.ending?.line;
    this.corked = false;
    // end() uncorks the stream fully: this tick's batch leaves before the last line.
    if (line === undefined) this.stream.end();
    else this.stream.end(line);
    this.close();
  }

  private settleDrained(): void {
    const wait = this.drainWait;
    this.drainWait = undefined;
    wait?.resolve();
  }

  private readonly onClose = (): void => {
    this.close();
  };

  /** On `drain`: writes queued lines until the stream pushes back again or the queue is empty. */
  private readonly onDrain = (): void => {
    if (this.closed) return;
    this.waitingForDrain = false;
    while (this.head < this.queue.length) {
      const line = this.queue[this.head]!;
      this.queue[this.head] = "";
      if (this.marks?.[this.head]) this.marked -= 1;
      this.head += 1;
      this.bytes -= line.length;
      if (!this.writeBatched(line)) {
        this.waitingForDrain = true;
        break;
      }
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.marks = undefined;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.marks = this.marks?.slice(this.head);
      this.head = 0;
    }
    if (!this.waitingForDrain) {
      if (this.ending) this.finishEnd();
      this.settleDrained();
    }
    this.afterDrain?.();
  };
}
