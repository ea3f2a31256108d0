/**
 * The entries a Redis-backed summary cache holds in memory, and the bound on them. It lives apart
 * from the store's connection and write logic because the hash is shared by a whole fleet: anyone
 * who can write to Redis can add entries by the hundred thousand, so which entries stay in memory
 * is a policy of its own (keys asked for and entries written here always; others up to a count
 * and a size).
 */
import type { CacheEntry } from "./cacheEntry.js";

/** An entry in memory, with the size of its line. */
interface Held {
  entry: CacheEntry;
  bytes: number;
}

/** What {@link RedisMemory.offer} did with an entry. */
export type OfferOutcome = "taken" | "stale" | "noRoom";

/** The entries in memory, by key, with the bookkeeping that bounds entries of keys not asked for. */
export class RedisMemory {
  private readonly held = new Map<string, Held>();
  /** Size of the entries held (their lines' lengths). */
  private heldBytes = 0;
  /** How many entries of keys not {@link wanted} are held, and their size: what the bounds limit. */
  private readonly others = { entries: 0, bytes: 0 };
  /** Keys asked for or written here: always kept in memory. */
  private readonly wanted = new Set<string>();
  private readonly entriesBound: number;
  private readonly bytesBound: number;

  constructor(entriesBound: number, bytesBound: number) {
    this.entriesBound = entriesBound;
    this.bytesBound = bytesBound;
  }

  get size(): number {
    return this.held.size;
  }

  /** Size of the entries held. */
  get bytes(): number {
    return this.heldBytes;
  }

  get(key: string): CacheEntry | undefined {
    return this.held.get(key)?.entry;
  }

  has(key: string): boolean {
    return this.held.has(key);
  }

  *entries(): IterableIterator<CacheEntry> {
    for (const held of this.held.values()) yield held.entry;
  }

  /**
   * Takes an entry unless memory has it, or (unless `authoritative`) a newer one for its key, or
   * has no room for it: past the bound of entries not asked for, an entry of a key not asked for
   * is left out (and an older one of its key let go).
   */
  offer(entry: CacheEntry, bytes: number, authoritative: boolean): OfferOutcome {
    const current = this.held.get(entry.key);
    if (current !== undefined && (sameEntry(current.entry, entry) || (!authoritative && current.entry.createdAt > entry.createdAt))) return "stale";
    if (!this.wanted.has(entry.key) && !this.hasRoom(bytes - (current?.bytes ?? 0), current === undefined)) {
      if (current !== undefined) this.forget(entry.key, current);
      return "noRoom";
    }
    this.hold(entry, bytes, current);
    return "taken";
  }

  /** An entry written here (or spooled by an earlier run): kept whatever the bound, its key wanted. */
  keepWritten(entry: CacheEntry, bytes: number): void {
    this.want(entry.key);
    this.hold(entry, bytes, this.held.get(entry.key));
  }

  /**
   * Marks a key as one this bridge serves, so its entry is always kept. Keys asked for are the
   * tools a bridge lists; they are bounded like the others, in case something asks for many.
   */
  want(key: string): void {
    if (this.wanted.has(key) || this.wanted.size >= this.entriesBound) return;
    this.wanted.add(key);
    const held = this.held.get(key);
    if (held !== undefined) {
      this.others.entries--;
      this.others.bytes -= held.bytes;
    }
  }

  private hold(entry: CacheEntry, bytes: number, current: Held | undefined): void {
    const grown = bytes - (current?.bytes ?? 0);
    this.heldBytes += grown;
    if (!this.wanted.has(entry.key)) {
      this.others.bytes += grown;
      if (current === undefined) this.others.entries++;
    }
    this.held.set(entry.key, { entry, bytes });
  }

  private forget(key: string, current: Held): void {
    this.heldBytes -= current.bytes;
    if (!this.wanted.has(key)) {
      this.others.bytes -= current.bytes;
      this.others.entries--;
    }
    this.held.delete(key);
  }

  /** Whether the entries of keys not asked for may grow by `bytes` (and one entry when `added`). */
  private hasRoom(bytes: number, added: boolean): boolean {
    return this.others.entries + (added ? 1 : 0) <= this.entriesBound && this.others.bytes + bytes <= this.bytesBound;
  }
}

function sameEntry(a: CacheEntry, b: CacheEntry): boolean {
  return a.createdAt === b.createdAt && a.summarizer === b.summarizer && a.summary === b.summary;
}
