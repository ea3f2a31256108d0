import type { CacheEntry } from "../cache/cacheEntry.js";
import type { ClaimLease, RemoteEntryListener, SummaryClaims } from "../cache/summaryStore.js";
import type { Logger } from "../log/logger.js";
import { silentLogger } from "../log/logger.js";
import { toAbridgeError } from "../model/errors.js";
import type { SummarizeInput } from "./types.js";

/** The store as the gate needs it: claims, what memory holds, and news of other processes' entries. */
export interface ClaimSource extends SummaryClaims {
  get(key: string): CacheEntry | undefined;
  onRemoteEntry(listener: RemoteEntryListener): () => void;
}

/** What the gate tells the queue about a job it parked. */
export interface ClaimGateEvents {
  /** The holder finished: `entry` is the summary it wrote. The job is done without a request. */
  landed(input: SummarizeInput, entry: CacheEntry): void;
  /** The holder died or gave up (its lease ran out or was released without an entry): run the job here. */
  resume(input: SummarizeInput): void;
}

/** Options of {@link ClaimGate}. */
export interface ClaimGateOptions {
  source: ClaimSource;
  events: ClaimGateEvents;
  logger?: Logger;
  /**
   * How long parked jobs wait before they try their claims again (default: a quarter of the lease,
   * 50 ms to 1 s). Each round in which every claim is refused doubles the wait, up to half the lease.
   */
  pollMs?: number;
}

interface Held {
  lease: ClaimLease;
  timer: NodeJS.Timeout | undefined;
  lost: boolean;
}

/** Two entries are the same summary when they were written at the same time by the same writer. */
function sameEntry(a: CacheEntry | undefined, b: CacheEntry | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  return a.createdAt === b.createdAt && a.summarizer === b.summarizer && a.summary === b.summary;
}

/**
 * Fleet-wide single flight in front of the summarize queue: a job runs only while this process
 * holds the key's claim, renewed at a third of the lease while it runs and released when it ends.
 * A job whose key another process holds is parked, costing no batch slot and no request: it ends
 * when that process's entry lands (heard at once through the store's news, or seen when the claim
 * is tried again), and runs here when the other's lease ran out (the holder died mid-job). Parked
 * claims are tried again together (so jobs freed together run in one batch) after `pollMs`, then,
 * while every claim is refused, after twice as long each round (with jitter) up to half the lease:
 * a live holder costs a few tries, a dead one's lease runs out within a lease, and a claim that
 * never expires cannot make a bridge hammer Redis.
 *
 * "Landed" means an entry other than the one the key had when the job was queued, so a forced or
 * stale re-summary is not satisfied by the old entry it is meant to replace.
 */
export class ClaimGate {
  private readonly source: ClaimSource;
  private readonly events: ClaimGateEvents;
  private readonly logger: Logger;
  private readonly pollMs: number;
  /** The entry each queued key had when it was queued. */
  private readonly before = new Map<string, CacheEntry | undefined>();
  private readonly held = new Map<string, Held>();
  private readonly parked = new Map<string, SummarizeInput>();
  private pollTimer: NodeJS.Timeout | undefined;
  private polling = false;
  /** The wait before the next round of tries: `pollMs`, doubled by each round refused in full. */
  private pollWaitMs: number;
  /** The longest wait between two rounds. */
  private readonly maxPollMs: number;
  /** When the next round is due. */
  private nextPollAt = 0;
  private closed = false;
  private readonly unsubscribe: () => void;

  constructor(options: ClaimGateOptions) {
    this.source = options.source;
    this.events = options.events;
    this.logger = options.logger ?? silentLogger;
    this.pollMs = options.pollMs ?? Math.min(1_000, Math.max(50, Math.floor(options.source.leaseMs / 4)));
    this.pollWaitMs = this.pollMs;
    this.maxPollMs = Math.max(this.pollMs, Math.floor(options.source.leaseMs / 2));
    this.unsubscribe = this.source.onRemoteEntry((entry) => this.heard(entry));
  }

  /** Jobs waiting for another process. */
  get parkedCount(): number {
    return this.parked.size;
  }

  /** Whether `key` waits for another process. */
  isParked(key: string): boolean {
    return this.parked.has(key);
  }

  /** Remembers what `key` holds now, when its job is queued. */
  noteQueued(key: string): void {
    this.before.set(key, this.source.get(key));
  }

  /**
   * Claims the keys of a batch. Returns the jobs to run here; the others are parked, or, when their
   * entry turned out to have landed already, reported as landed.
   */
  async acquire(batch: readonly SummarizeInput[]): Promise<SummarizeInput[]> {
    const results = await Promise.all(batch.map((input) => this.tryClaim(input)));
    const run: SummarizeInput[] = [];
    for (const [i, input] of batch.entries()) {
      const result = results[i];
      if (result === undefined || result.outcome === "run") run.push(input);
      else if (result.outcome === "wait") {
        // Closed meanwhile: neither run nor parked, so the queue drops the job.
        if (this.closed) continue;
        // The holder may have finished while the claim was refused, and its news come before
        // the job was parked to hear it.
        const now = this.source.get(input.key);
        if (now !== undefined && !sameEntry(now, this.before.get(input.key))) {
          this.before.delete(input.key);
          this.events.landed(input, now);
        } else {
          this.park(input);
        }
      } else if (result.entry !== undefined) this.events.landed(input, result.entry);
    }
    return run;
  }

  /** Gives up the claim of `key` (the job ended, with an entry or not). */
  release(key: string): void {
    this.before.delete(key);
    const held = this.held.get(key);
    if (held === undefined) return;
    this.held.delete(key);
    if (held.timer !== undefined) clearInterval(held.timer);
    void held.lease.release();
  }

  /** Stops waiting: parked jobs are dropped and returned, so the queue forgets them too. */
  dropParked(): SummarizeInput[] {
    this.closed = true;
    if (this.pollTimer !== undefined) clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    const dropped = [...this.parked.values()];
    this.parked.clear();
    return dropped;
  }

  /** Drops parked jobs and releases every claim still held, so another process takes them at once. */
  close(): void {
    this.dropParked();
    this.unsubscribe();
    for (const key of [...this.held.keys()]) this.release(key);
    this.before.clear();
  }

  /** "run": claimed and nothing landed; "wait": another holds it; "landed": its entry is there. */
  private async tryClaim(input: SummarizeInput): Promise<{ outcome: "run" | "wait" | "landed"; entry?: CacheEntry }> {
    if (this.held.has(input.key)) return { outcome: "run" };
    let lease: ClaimLease;
    try {
      const result = await this.source.claim(input.key);
      if (!result.granted) return { outcome: "wait" };
      lease = result.lease;
    } catch (err) {
      // Claims are granted locally when the store is unreachable; anything else still must not
      // stop the summary: run it here.
      this.logger.warn("summary claim failed; summarizing here", { key: input.key, error: toAbridgeError(err) });
      return { outcome: "run" };
    }
    // Another process may have finished and released just before this claim.
    const latest = await this.source.latest(input.key).catch(() => undefined);
    if (this.closed || (latest !== undefined && !sameEntry(latest, this.before.get(input.key)))) {
      await lease.release();
      this.before.delete(input.key);
      return { outcome: "landed", ...(latest !== undefined ? { entry: latest } : {}) };
    }
    this.hold(input.key, lease);
    return { outcome: "run" };
  }

  private hold(key: string, lease: ClaimLease): void {
    const held: Held = { lease, timer: undefined, lost: false };
    const leaseMs = this.source.leaseMs;
    if (leaseMs > 0) {
      held.timer = setInterval(
        () => {
          void lease.renew().then(
            (ok) => {
              if (!ok && !held.lost && this.held.get(key) === held) {
                held.lost = true;
                this.logger.warn("lost the summary claim of a key while summarizing it; another host may summarize it too", { key });
              }
            },
            () => undefined,
          );
        },
        Math.max(10, Math.floor(leaseMs / 3)),
      );
      held.timer.unref();
    }
    this.held.set(key, held);
  }

  private park(input: SummarizeInput): void {
    // A new job waits `pollMs` for its first retry, whatever the rounds before it found.
    const firstTry = Date.now() + this.pollMs;
    this.nextPollAt = this.parked.size === 0 ? firstTry : Math.min(this.nextPollAt, firstTry);
    this.pollWaitMs = this.pollMs;
    this.parked.set(input.key, input);
    if (this.pollTimer === undefined && !this.closed) {
      this.pollTimer = setInterval(() => void this.poll(), this.pollMs);
      // Not unref'd: `summarize warm` waits on parked jobs, and only this timer moves them on.
    }
  }

  private unpark(key: string): SummarizeInput | undefined {
    const input = this.parked.get(key);
    this.parked.delete(key);
    if (this.parked.size === 0 && this.pollTimer !== undefined) {
      clearInterval(this.pollTimer);
      this.pollTimer = undefined;
    }
    return input;
  }

  /** News of an entry from another process: a parked job for it is done. */
  private heard(entry: CacheEntry): void {
    if (!this.parked.has(entry.key) || sameEntry(entry, this.before.get(entry.key))) return;
    const input = this.unpark(entry.key);
    this.before.delete(entry.key);
    if (input !== undefined) this.events.landed(input, entry);
  }

  /**
   * Once a round is due, tries every parked key's claim again: granted means its holder finished
   * or died. A round in which every claim was refused doubles the wait before the next.
   */
  private async poll(): Promise<void> {
    if (this.polling || this.closed || Date.now() < this.nextPollAt) return;
    this.polling = true;
    try {
      const inputs = [...this.parked.values()];
      const results = await Promise.all(inputs.map((input) => this.tryClaim(input)));
      const refused = results.every((result) => result.outcome === "wait");
      this.pollWaitMs = refused ? Math.min(this.maxPollMs, this.pollWaitMs * 2) : this.pollMs;
      // At least half of the wait, so that the rounds of many bridges spread out but never rush.
      this.nextPollAt = Date.now() + Math.round(this.pollWaitMs / 2 + (Math.random() * this.pollWaitMs) / 2);
      for (const [i, input] of inputs.entries()) {
        const result = results[i];
        if (result === undefined || result.outcome === "wait") continue;
        if (!this.parked.has(input.key)) {
          // The entry was heard of while the claim was tried: the job is over already.
          if (result.outcome === "run") this.release(input.key);
          continue;
        }
        this.unpark(input.key);
        if (result.outcome === "run") this.events.resume(input);
        else if (result.entry !== undefined) this.events.landed(input, result.entry);
      }
    } finally {
      this.polling = false;
    }
  }
}
