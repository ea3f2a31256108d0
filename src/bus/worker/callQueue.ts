/**
 * Admission of calls to one bus worker: at most `maxConcurrent` running and `maxQueued` waiting,
 * shared fairly among requesters, so one requester that floods the worker cannot take every slot
 * from the others.
 *
 * - A requester (the key: one NATS connection's reply inbox) runs at most
 *   {@link CallQueue.perRequester} calls at once, a little below `maxConcurrent`: a few slots stay
 *   free for everyone else even while one requester's slow calls hold the rest.
 * - Waiting calls are started one requester after another in turn (round robin), each
 *   requester's own in the order they came.
 * - When the queue is full, a newcomer whose requester waits for fewer calls than the requester
 *   waiting for the most takes the place of that requester's newest call; otherwise the newcomer
 *   is refused. Either way the refused call is handed back to be answered `busy`: nothing is
 *   dropped without an answer.
 */

/** Options of {@link CallQueue}. */
export interface CallQueueOptions {
  maxConcurrent: number;
  maxQueued: number;
}

/** What {@link CallQueue.offer} decided. */
export interface Admission<T> {
  /** Start the offered call now (it counts as running). */
  start: boolean;
  /** A call refused (the offered one, or a waiting one it replaced), to be answered `busy`. */
  refused?: T;
}

export class CallQueue<T> {
  readonly maxConcurrent: number;
  readonly maxQueued: number;
  /** The most calls one requester may run at once: `maxConcurrent` less an eighth (at least 1). */
  readonly perRequester: number;
  private runningCount = 0;
  private waitingCount = 0;
  private readonly runningBy = new Map<string, number>();
  /** Waiting calls by requester; the map's order is the round robin's. */
  private readonly waitingBy = new Map<string, T[]>();

  constructor(options: CallQueueOptions) {
    if (!(options.maxConcurrent >= 1) || !(options.maxQueued >= 0)) throw new RangeError("maxConcurrent must be at least 1 and maxQueued at least 0");
    this.maxConcurrent = options.maxConcurrent;
    this.maxQueued = options.maxQueued;
    this.perRequester = Math.max(1, options.maxConcurrent - Math.ceil(options.maxConcurrent / 8));
  }

  /** Calls running now. */
  get running(): number {
    return this.runningCount;
  }

  /** Calls waiting now. */
  get waiting(): number {
    return this.waitingCount;
  }

  /** A call from `key` arrived: start it, queue it, or refuse a call (it or another). */
  offer(key: string, item: T): Admission<T> {
    if (!this.waitingBy.has(key) && this.canStart(key)) {
      this.started(key);
      return { start: true };
    }
    if (this.waitingCount < this.maxQueued) {
      this.enqueue(key, item);
      return { start: false };
    }
    const own = this.waitingBy.get(key)?.length ?? 0;
    let longestKey: string | undefined;
    let longest = 0;
    for (const [k, items] of this.waitingBy) {
      if (items.length > longest) {
        longest = items.length;
        longestKey = k;
      }
    }
    // Replacing a call of a requester that would then wait for no fewer than this one is no fairer.
    if (longestKey === undefined || longest <= own + 1) return { start: false, refused: item };
    const victims = this.waitingBy.get(longestKey)!;
    const refused = victims.pop() as T;
    this.waitingCount -= 1;
    if (victims.length === 0) this.waitingBy.delete(longestKey);
    this.enqueue(key, item);
    return { start: false, refused };
  }

  /**
   * The next waiting call that may start now (counted as running from here), in turn among
   * requesters below their limit; undefined when none may.
   */
  next(): { key: string; item: T } | undefined {
    if (this.runningCount >= this.maxConcurrent) return undefined;
    for (const [key, items] of this.waitingBy) {
      if ((this.runningBy.get(key) ?? 0) >= this.perRequester) continue;
      const item = items.shift() as T;
      this.waitingCount -= 1;
      // To the back of the round: the other requesters go first next time.
      this.waitingBy.delete(key);
      if (items.length > 0) this.waitingBy.set(key, items);
      this.started(key);
      return { key, item };
    }
    return undefined;
  }

  /** A call of `key` that was started has finished. */
  done(key: string): void {
    const count = this.runningBy.get(key) ?? 0;
    if (count <= 0) return;
    this.runningCount -= 1;
    if (count === 1) this.runningBy.delete(key);
    else this.runningBy.set(key, count - 1);
  }

  /** Takes every waiting call out of the queue (at shutdown, to answer them). */
  takeWaiting(): T[] {
    const all = [...this.waitingBy.values()].flat();
    this.waitingBy.clear();
    this.waitingCount = 0;
    return all;
  }

  private canStart(key: string): boolean {
    return this.runningCount < this.maxConcurrent && (this.runningBy.get(key) ?? 0) < this.perRequester;
  }

  private started(key: string): void {
    this.runningCount += 1;
    this.runningBy.set(key, (this.runningBy.get(key) ?? 0) + 1);
  }

  private enqueue(key: string, item: T): void {
    const items = this.waitingBy.get(key);
    if (items === undefined) this.waitingBy.set(key, [item]);
    else items.push(item);
    this.waitingCount += 1;
  }
}
