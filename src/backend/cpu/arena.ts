/**
 * A first-fit allocator of byte ranges in a linear memory that only grows (a WebAssembly.Memory),
 * so simdMemory.ts can keep the CPU backend's f32 tensors resident where the SIMD kernels read
 * them instead of copying them in and out. Blocks are ALIGN-aligned; free ranges are kept sorted
 * and merged on `free`; when none fits, `grow` extends the end (null: the caller falls back to an
 * ordinary array). Bookkeeping only: it never touches the memory itself.
 *
 * Not here: the memory, the views over it (simdMemory.ts), which tensors live in it (index.ts).
 */
/** Alignment and size granule of every block, in bytes (a cache line; 16 would do for v128). */
export const ALIGN = 64;

const up = (n: number): number => Math.ceil(n / ALIGN) * ALIGN;

export class Arena {
  /** Free ranges [start, end), sorted by start, never touching each other (merged). */
  private readonly holes: { start: number; end: number }[] = [];
  /** Size of each live block, by its start. */
  private readonly live = new Map<number, number>();
  private end: number;
  private inUse = 0;

  /**
   * Manages [start, end) of a memory whose current end is `end`; `grow(bytes)` makes the memory at
   * least `bytes` longer and returns its new end, or null when it cannot.
   */
  constructor(start: number, end: number, private readonly grow: (bytes: number) => number | null) {
    const s = up(start);
    this.end = Math.max(s, end);
    if (this.end > s) this.holes.push({ start: s, end: this.end });
  }

  /** A block of at least `bytes` (> 0): its start, or null when the memory cannot grow that far. */
  alloc(bytes: number): number | null {
    if (!(bytes > 0) || !Number.isFinite(bytes)) throw new RangeError(`Arena.alloc: ${bytes} bytes`);
    const size = up(bytes);
    let i = this.holes.findIndex((h) => h.end - h.start >= size);
    if (i < 0) {
      // Grow by what the last hole (if it touches the end) does not already cover.
      const last = this.holes[this.holes.length - 1];
      const tail = last !== undefined && last.end === this.end ? last.end - last.start : 0;
      const newEnd = this.grow(size - tail);
      if (newEnd === null || newEnd - this.end < size - tail) return null;
      if (tail > 0) last!.end = newEnd;
      else this.holes.push({ start: this.end, end: newEnd });
      this.end = newEnd;
      i = this.holes.length - 1;
    }
    const h = this.holes[i]!;
    const at = h.start;
    h.start += size;
    if (h.start === h.end) this.holes.splice(i, 1);
    this.live.set(at, size);
    this.inUse += size;
    return at;
  }

  /** Returns block `at` (a start `alloc` gave and not freed since) to the free ranges; its size. */
  free(at: number): number {
    const size = this.live.get(at);
    if (size === undefined) throw new Error(`Arena.free: ${at} is not a live block`);
    this.live.delete(at);
    this.inUse -= size;
    const end = at + size;
    // First hole after the block; merge with it and/or with the one before.
    let i = 0;
    while (i < this.holes.length && this.holes[i]!.start < at) i++;
    const prev = this.holes[i - 1];
    const next = this.holes[i];
    if (prev !== undefined && prev.end === at) {
      prev.end = end;
      if (next !== undefined && next.start === end) {
        prev.end = next.end;
        this.holes.splice(i, 1);
      }
    } else if (next !== undefined && next.start === end) {
      next.start = at;
    } else {
      this.holes.splice(i, 0, { start: at, end });
    }
    return size;
  }

  /** Bytes in live blocks (kept as blocks come and go: O(1), unlike stats()). */
  get bytes(): number {
    return this.inUse;
  }

  /** The size of live block `at`, or undefined when it is not one. */
  sizeOf(at: number): number | undefined {
    return this.live.get(at);
  }

  /** Bytes in live blocks, live blocks, free ranges, the largest free range, the managed end. */
  stats(): { bytes: number; blocks: number; holes: number; largest: number; end: number } {
    const largest = this.holes.reduce((m, h) => Math.max(m, h.end - h.start), 0);
    return { bytes: this.inUse, blocks: this.live.size, holes: this.holes.length, largest, end: this.end };
  }
}
