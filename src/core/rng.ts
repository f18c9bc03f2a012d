/**
 * Counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
 * as 1, 2, 3", SC 2011), checked against the Random123 known-answer vectors.
 *
 * Why counter-based: every random number is a pure function of (key, counter), so the same stream
 * can be recomputed anywhere — in a Web Worker, or inside a WGSL shader where each thread derives
 * its own numbers from its index — and a run is fixed by its seed, whatever order work is done in.
 *
 * Uniforms carry 24 bits (`u32 >>> 8` × 2⁻²⁴) so that they are exact in f32: the GPU backend can
 * reproduce them bit for bit.
 *
 * Not here: distributions beyond what the SAT core needs (uniform, integer, categorical, normal).
 */

const M0 = 0xd2511f53;
const M1 = 0xcd9e8d57;
const W0 = 0x9e3779b9;
const W1 = 0xbb67ae85;

/** High 32 bits of the 64-bit product of two u32s (exact, via 16-bit halves). */
function mulhi32(a: number, b: number): number {
  const aLo = a & 0xffff;
  const aHi = a >>> 16;
  const bLo = b & 0xffff;
  const bHi = b >>> 16;
  const lolo = aLo * bLo;
  const lohi = aLo * bHi;
  const hilo = aHi * bLo;
  const hihi = aHi * bHi;
  const mid = (lolo >>> 16) + (lohi & 0xffff) + (hilo & 0xffff);
  return (hihi + (lohi >>> 16) + (hilo >>> 16) + (mid >>> 16)) >>> 0;
}

/**
 * Philox4x32-10 block: four u32 outputs from a 4-word counter and a 2-word key.
 * Writes into `out` (length ≥ 4) and returns it.
 */
export function philox4x32(
  c0: number,
  c1: number,
  c2: number,
  c3: number,
  k0: number,
  k1: number,
  out: Uint32Array = new Uint32Array(4),
): Uint32Array {
  let x0 = c0 >>> 0;
  let x1 = c1 >>> 0;
  let x2 = c2 >>> 0;
  let x3 = c3 >>> 0;
  let key0 = k0 >>> 0;
  let key1 = k1 >>> 0;
  for (let round = 0; round < 10; round++) {
    const hi0 = mulhi32(M0, x0);
    const lo0 = Math.imul(M0, x0) >>> 0;
    const hi1 = mulhi32(M1, x2);
    const lo1 = Math.imul(M1, x2) >>> 0;
    const y0 = (hi1 ^ x1 ^ key0) >>> 0;
    const y1 = lo1;
    const y2 = (hi0 ^ x3 ^ key1) >>> 0;
    const y3 = lo0;
    x0 = y0;
    x1 = y1;
    x2 = y2;
    x3 = y3;
    key0 = (key0 + W0) >>> 0;
    key1 = (key1 + W1) >>> 0;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
  return out;
}

/** A u32 → uniform in [0, 1) with 24 bits, exact in f32. */
export function u32ToUniform(u: number): number {
  return (u >>> 8) * 5.9604644775390625e-8; // 2^-24
}

/** Mixes a list of small integers into one u32 (used to name sub-streams). FNV-1a over words. */
export function mixPath(path: readonly number[]): number {
  let h = 0x811c9dc5;
  for (const v of path) {
    let w = v >>> 0;
    for (let b = 0; b < 4; b++) {
      h ^= w & 0xff;
      h = Math.imul(h, 0x01000193) >>> 0;
      w >>>= 8;
    }
  }
  return h >>> 0;
}

/**
 * A seeded stream. key = (seed, mixPath(path)); counter = (index, 0, 0, 0) counting up.
 * `fork(...path)` names an independent sub-stream deterministically (e.g. fork(stage, agent)),
 * so adding draws in one place never shifts the numbers used elsewhere.
 */
export class Rng {
  readonly seed: number;
  readonly path: readonly number[];
  private readonly k0: number;
  private readonly k1: number;
  private counter = 0;
  private readonly block = new Uint32Array(4);
  private used = 4;
  private spareNormal: number | null = null;

  constructor(seed: number, path: readonly number[] = []) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
      throw new RangeError(`Rng seed must be an integer in [0, 4294967295], got ${seed}`);
    }
    this.seed = seed;
    this.path = [...path];
    this.k0 = seed >>> 0;
    this.k1 = mixPath(path);
  }

  /** An independent stream named by `path` under the same seed. */
  fork(...path: number[]): Rng {
    return new Rng(this.seed, [...this.path, ...path]);
  }

  /** Next raw u32. */
  nextU32(): number {
    if (this.used === 4) {
      philox4x32(this.counter, 0, 0, 0, this.k0, this.k1, this.block);
      this.counter = (this.counter + 1) >>> 0;
      this.used = 0;
    }
    return this.block[this.used++]!;
  }

  /** Uniform in [0, 1), 24 bits. */
  uniform(): number {
    return u32ToUniform(this.nextU32());
  }

  /** Integer in [0, n), for 1 ≤ n ≤ 2²⁴ (uniforms carry 24 bits, so larger n could not reach every value). */
  int(n: number): number {
    if (!Number.isInteger(n) || n < 1 || n > 0x1000000) throw new RangeError(`Rng.int(n) needs an integer n in [1, 16777216], got ${n}`);
    return Math.min(n - 1, Math.floor(this.uniform() * n));
  }

  /** Standard normal (Box–Muller; the second value is kept for the next call). */
  normal(): number {
    if (this.spareNormal !== null) {
      const z = this.spareNormal;
      this.spareNormal = null;
      return z;
    }
    const u1 = 1 - this.uniform(); // (0, 1]
    const u2 = this.uniform();
    const r = Math.sqrt(-2 * Math.log(u1));
    this.spareNormal = r * Math.sin(2 * Math.PI * u2);
    return r * Math.cos(2 * Math.PI * u2);
  }

  /** Index drawn from the probabilities `p` (need not be normalised). */
  categorical(p: ArrayLike<number>): number {
    return sampleCategorical(p, this.uniform());
  }

  /** A uniformly random permutation of 0..n-1 (Fisher–Yates). */
  permutation(n: number): number[] {
    const a = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [a[i], a[j]] = [a[j]!, a[i]!];
    }
    return a;
  }
}

/** Inverse-CDF draw: the first index whose cumulative mass exceeds u·total. */
export function sampleCategorical(p: ArrayLike<number>, u: number): number {
  let total = 0;
  for (let i = 0; i < p.length; i++) total += p[i]!;
  const target = u * total;
  let acc = 0;
  for (let i = 0; i < p.length; i++) {
    acc += p[i]!;
    if (target < acc) return i;
  }
  // u·total can round up to total; fall back to the last index with mass.
  for (let i = p.length - 1; i >= 0; i--) if (p[i]! > 0) return i;
  return p.length - 1;
}
