/** Where one line of a cache file is: what {@link LineIndex.find} answers. */
export interface LineLocation {
  /** Byte offset of the line's first byte; -1 for an entry that is in memory only. */
  offset: number;
  /** Length in bytes, newline excluded. */
  length: number;
  /** 1-based physical line number, for reports. */
  lineNumber: number;
}

const INITIAL_SLOTS = 1024;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a (32 bits) of `bytes[from..to)`. */
function hashBytes(bytes: Uint8Array, from: number, to: number): number {
  let hash = FNV_OFFSET;
  for (let i = from; i < to; i++) hash = Math.imul(hash ^ (bytes[i] as number), FNV_PRIME);
  return hash >>> 0;
}

/**
 * Key -> place of its newest line in the cache file, with no JavaScript object or string per key:
 * the keys' UTF-8 bytes sit in one byte arena, the places in typed arrays, and an open-addressing
 * table of slot numbers (linear probing over an FNV-1a hash, keys compared byte for byte) finds
 * them. A million keys cost their bytes and about 40 bytes each, and nothing for the garbage
 * collector to trace or copy: with a `Map` of key strings, inserting and collecting them was two
 * thirds of loading a million-line file. Keys come back as strings only when listed.
 */
export class LineIndex {
  private capacity = INITIAL_SLOTS;
  private offsets = new Float64Array(INITIAL_SLOTS);
  private lengths = new Uint32Array(INITIAL_SLOTS);
  private lineNumbers = new Uint32Array(INITIAL_SLOTS);
  private hashes = new Uint32Array(INITIAL_SLOTS);
  private keyStarts = new Uint32Array(INITIAL_SLOTS);
  private keyLengths = new Uint32Array(INITIAL_SLOTS);
  /**
   * 1 for a live slot. A deleted key's slot stays in the table as a probe-chain filler and is never
   * found again; setting the key again takes a new slot, so keys keep a Map's order.
   */
  private live = new Uint8Array(INITIAL_SLOTS);
  /** Slot number + 1 per table position; 0 is empty. Twice the slots, so probes stay short. */
  private table = new Int32Array(INITIAL_SLOTS * 2);
  private arena = new Uint8Array(INITIAL_SLOTS * 64);
  private arenaUsed = 0;
  private used = 0;
  private liveCount = 0;

  /** Number of keys. */
  get size(): number {
    return this.liveCount;
  }

  /**
   * Records where the newest line of the key `bytes[keyFrom..keyTo)` (UTF-8) is; a later call for
   * the same key replaces it. The bytes are copied.
   */
  setKeyBytes(bytes: Uint8Array, keyFrom: number, keyTo: number, offset: number, length: number, lineNumber: number): void {
    // Grown first, so that the table position the probe ends at is still valid for an insert.
    if (this.used === this.capacity) this.grow();
    const hash = hashBytes(bytes, keyFrom, keyTo);
    const at = this.probe(bytes, keyFrom, keyTo, hash);
    let slot = (this.table[at] as number) - 1;
    if (slot < 0) {
      slot = this.add(bytes, keyFrom, keyTo, hash);
      this.table[at] = slot + 1;
      this.live[slot] = 1;
      this.liveCount += 1;
    }
    this.offsets[slot] = offset;
    this.lengths[slot] = length;
    this.lineNumbers[slot] = lineNumber;
  }

  /** {@link setKeyBytes} for a key string. */
  set(key: string, offset: number, length: number, lineNumber: number): void {
    const bytes = Buffer.from(key, "utf8");
    this.setKeyBytes(bytes, 0, bytes.length, offset, length, lineNumber);
  }

  has(key: string): boolean {
    return this.liveSlot(key) >= 0;
  }

  /** Where the newest line of `key` is, if the key is indexed. */
  find(key: string): LineLocation | undefined {
    const slot = this.liveSlot(key);
    if (slot < 0) return undefined;
    return { offset: this.offsets[slot] as number, length: this.lengths[slot] as number, lineNumber: this.lineNumbers[slot] as number };
  }

  /** Forgets `key`. */
  delete(key: string): void {
    const slot = this.liveSlot(key);
    if (slot < 0) return;
    this.live[slot] = 0;
    this.liveCount -= 1;
  }

  clear(): void {
    this.table.fill(0);
    this.live.fill(0);
    this.used = 0;
    this.liveCount = 0;
    this.arenaUsed = 0;
  }

  /** Every key, in the order it was first indexed. Deleting the current key while iterating is safe. */
  *keys(): IterableIterator<string> {
    for (let slot = 0; slot < this.used; slot++) {
      if (this.live[slot] === 1) yield this.keyOf(slot);
    }
  }

  private keyOf(slot: number): string {
    const start = this.keyStarts[slot] as number;
    return Buffer.from(this.arena.buffer, this.arena.byteOffset + start, this.keyLengths[slot] as number).toString("utf8");
  }

  private liveSlot(key: string): number {
    const bytes = Buffer.from(key, "utf8");
    return (this.table[this.probe(bytes, 0, bytes.length, hashBytes(bytes, 0, bytes.length))] as number) - 1;
  }

  /** The table position of the live slot holding these key bytes, else of the empty position where it would go. */
  private probe(bytes: Uint8Array, from: number, to: number, hash: number): number {
    const mask = this.table.length - 1;
    const length = to - from;
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const entry = this.table[at] as number;
      if (entry === 0) return at;
      const slot = entry - 1;
      if (this.hashes[slot] === hash && this.keyLengths[slot] === length && this.live[slot] === 1 && this.sameKey(slot, bytes, from, length)) return at;
    }
  }

  private sameKey(slot: number, bytes: Uint8Array, from: number, length: number): boolean {
    const arena = this.arena;
    const start = this.keyStarts[slot] as number;
    for (let i = 0; i < length; i++) {
      if (arena[start + i] !== bytes[from + i]) return false;
    }
    return true;
  }

  /** Copies a new key into the arena and gives it the next slot (the caller puts it in the table). */
  private add(bytes: Uint8Array, from: number, to: number, hash: number): number {
    const length = to - from;
    if (this.arenaUsed + length > this.arena.length) {
      const arena = new Uint8Array(Math.max(this.arena.length * 2, this.arenaUsed + length));
      arena.set(this.arena.subarray(0, this.arenaUsed));
      this.arena = arena;
    }
    // A byte loop: a key is a few dozen bytes, and subarray() + set() cost more than copying them.
    const arena = this.arena;
    const start = this.arenaUsed;
    for (let i = 0; i < length; i++) arena[start + i] = bytes[from + i] as number;
    const slot = this.used++;
    this.keyStarts[slot] = this.arenaUsed;
    this.keyLengths[slot] = length;
    this.hashes[slot] = hash;
    this.arenaUsed += length;
    return slot;
  }

  private place(slot: number): void {
    const mask = this.table.length - 1;
    let at = (this.hashes[slot] as number) & mask;
    while (this.table[at] !== 0) at = (at + 1) & mask;
    this.table[at] = slot + 1;
  }

  private grow(): void {
    const capacity = this.capacity * 2;
    this.offsets = copyInto(new Float64Array(capacity), this.offsets);
    this.lengths = copyInto(new Uint32Array(capacity), this.lengths);
    this.lineNumbers = copyInto(new Uint32Array(capacity), this.lineNumbers);
    this.hashes = copyInto(new Uint32Array(capacity), this.hashes);
    this.keyStarts = copyInto(new Uint32Array(capacity), this.keyStarts);
    this.keyLengths = copyInto(new Uint32Array(capacity), this.keyLengths);
    this.live = copyInto(new Uint8Array(capacity), this.live);
    this.capacity = capacity;
    this.table = new Int32Array(capacity * 2);
    for (let slot = 0; slot < this.used; slot++) if (this.live[slot] === 1) this.place(slot);
  }
}

function copyInto<T extends Float64Array | Uint32Array | Uint8Array>(target: T, source: T): T {
  target.set(source as never);
  return target;
}
