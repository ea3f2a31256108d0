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

/**
 * Key -> place of its newest line in the cache file, in compact form: the map holds a small
 * integer per key and the places sit in typed arrays, so a million entries cost their key strings,
 * the map's slots and 16 bytes each, and nothing for the garbage collector to trace or copy.
 * Objects per key (`{offset, length}`), or the line text, would be several times that.
 */
export class LineIndex {
  private readonly slots = new Map<string, number>();
  private offsets = new Float64Array(INITIAL_SLOTS);
  private lengths = new Uint32Array(INITIAL_SLOTS);
  private lineNumbers = new Uint32Array(INITIAL_SLOTS);
  private used = 0;

  /** Number of keys. */
  get size(): number {
    return this.slots.size;
  }

  /** Records where the newest line of `key` is; a later call for the same key replaces it. */
  set(key: string, offset: number, length: number, lineNumber: number): void {
    let slot = this.slots.get(key);
    if (slot === undefined) {
      if (this.used === this.offsets.length) this.grow();
      slot = this.used++;
      this.slots.set(key, slot);
    }
    this.offsets[slot] = offset;
    this.lengths[slot] = length;
    this.lineNumbers[slot] = lineNumber;
  }

  has(key: string): boolean {
    return this.slots.has(key);
  }

  /** Where the newest line of `key` is, if the key is indexed. */
  find(key: string): LineLocation | undefined {
    const slot = this.slots.get(key);
    if (slot === undefined) return undefined;
    return { offset: this.offsets[slot] as number, length: this.lengths[slot] as number, lineNumber: this.lineNumbers[slot] as number };
  }

  /** Forgets `key` (its slot is not reused until {@link clear}: removals are rare). */
  delete(key: string): void {
    this.slots.delete(key);
  }

  clear(): void {
    this.slots.clear();
    this.used = 0;
  }

  /** Every key, in the order it was first indexed. */
  keys(): IterableIterator<string> {
    return this.slots.keys();
  }

  private grow(): void {
    const capacity = this.offsets.length * 2;
    const offsets = new Float64Array(capacity);
    offsets.set(this.offsets);
    const lengths = new Uint32Array(capacity);
    lengths.set(this.lengths);
    const lineNumbers = new Uint32Array(capacity);
    lineNumbers.set(this.lineNumbers);
    this.offsets = offsets;
    this.lengths = lengths;
    this.lineNumbers = lineNumbers;
  }
}
