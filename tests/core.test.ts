/**
 * Tests for the core utilities: the Philox4x32-10 generator and `Rng` (src/core/rng.ts) and the
 * statistics module (src/core/stats.ts), and the whole-vector loops of src/core/vec.ts against the
 * same sums written out element by element (bit for bit: they replace loops the SAT update ran
 * inline, and a stage's numbers must not move).
 *
 * Known-answer vectors come from Random123's tests/kat_vectors; statistical values are checked
 * against closed forms or hand computation written out in the test. Randomised checks use fixed
 * seeds (stated at each use), so they are deterministic; their tolerances are ~4–5 standard
 * errors, so a wrong implementation fails them while a right one passes with room to spare.
 *
 * Not here: tests of the SAT algorithm, tasks or app.
 */

import { describe, expect, it } from 'vitest';
import { NumericError } from '../src/core/errors';
import { Rng, mixPath, philox4x32, sampleCategorical, u32ToUniform } from '../src/core/rng';
import { fitPowerLaw, histogram, linreg, mean, meanCI, quantile, sampleStd, sum, weightedQuantile } from '../src/core/stats';
import { addScaled, divided, dot, lerp, sumOfSquares } from '../src/core/vec';

const hex = (a: ArrayLike<number>): string[] =>
  Array.from(a, (x) => (x >>> 0).toString(16).padStart(8, '0'));

// ---------------------------------------------------------------------------------------------
// Philox4x32-10 and Rng
// ---------------------------------------------------------------------------------------------

describe('philox4x32 known-answer vectors (Random123 kat_vectors)', () => {
  it('counter 0, key 0', () => {
    expect(hex(philox4x32(0, 0, 0, 0, 0, 0))).toEqual(['6627e8d5', 'e169c58d', 'bc57ac4c', '9b00dbd8']);
  });
  it('counter and key all ones', () => {
    const f = 0xffffffff;
    expect(hex(philox4x32(f, f, f, f, f, f))).toEqual(['408f276d', '41c83b0e', 'a20bc7c6', '6d5451fd']);
  });
  it('digits of pi', () => {
    const out = philox4x32(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0);
    expect(hex(out)).toEqual(['d16cfe09', '94fdcceb', '5001e420', '24126ea1']);
  });
  it('writes into the provided buffer', () => {
    const buf = new Uint32Array(4);
    expect(philox4x32(0, 0, 0, 0, 0, 0, buf)).toBe(buf);
    expect(buf[0]).toBe(0x6627e8d5);
  });
});

describe('Rng', () => {
  const take = (r: Rng, n: number): number[] => Array.from({ length: n }, () => r.nextU32());

  it('same seed and path give the same stream, however the path is built', () => {
    const a = take(new Rng(42, [1, 2]), 1000);
    expect(take(new Rng(42, [1, 2]), 1000)).toEqual(a);
    expect(take(new Rng(42).fork(1, 2), 1000)).toEqual(a);
    expect(take(new Rng(42).fork(1).fork(2), 1000)).toEqual(a);
  });

  it('the stream is Philox of (counter, 0, 0, 0) under key (seed, mixPath(path))', () => {
    const r = new Rng(7, [3]);
    const first8 = take(r, 8);
    const b0 = philox4x32(0, 0, 0, 0, 7, mixPath([3]));
    const b1 = philox4x32(1, 0, 0, 0, 7, mixPath([3]));
    expect(first8).toEqual([...b0, ...b1]);
  });

  it('different seeds and different fork paths give different streams', () => {
    const base = new Rng(42);
    const streams = [
      take(base, 64),
      take(new Rng(43), 64),
      take(base.fork(1), 64),
      take(base.fork(2), 64),
      take(base.fork(1, 0), 64),
      take(base.fork(0, 1), 64),
      take(base.fork(0), 64),
    ];
    const keys = new Set(streams.map((s) => s.join(',')));
    expect(keys.size).toBe(streams.length);
  });

  it('forking does not consume or disturb the parent stream', () => {
    const a = new Rng(5);
    const b = new Rng(5);
    a.nextU32();
    b.nextU32();
    take(a.fork(9), 10);
    expect(take(a, 20)).toEqual(take(b, 20));
  });

  it('uniforms lie in [0, 1) and are exact f32 multiples of 2^-24', () => {
    const r = new Rng(1);
    let bad = 0;
    for (let i = 0; i < 20_000; i++) {
      const u = r.uniform();
      const ok = u >= 0 && u < 1 && Math.fround(u) === u && Number.isInteger(u * 2 ** 24);
      if (!ok) bad++;
    }
    expect(bad).toBe(0);
    expect(u32ToUniform(0)).toBe(0);
    expect(u32ToUniform(0xffffffff)).toBe(1 - 2 ** -24);
  });

  it('1e5 uniforms (seed 2024) have mean ½ and variance 1/12', () => {
    const r = new Rng(2024);
    const xs = new Float64Array(100_000);
    for (let i = 0; i < xs.length; i++) xs[i] = r.uniform();
    // SE(mean) = √(1/12/n) ≈ 9.1e-4; SE(var) = √((1/80 − 1/144)/n) ≈ 2.4e-4.
    expect(Math.abs(mean(xs) - 0.5)).toBeLessThan(0.0045);
    expect(Math.abs(sampleStd(xs) ** 2 - 1 / 12)).toBeLessThan(0.0012);
  });

  it('1e5 normals (seed 11) have mean 0 and variance 1', () => {
    const r = new Rng(11);
    const xs = Array.from({ length: 100_000 }, () => r.normal());
    // SE(mean) = 1/√n ≈ 3.2e-3; SE(var) = √(2/n) ≈ 4.5e-3.
    expect(Math.abs(mean(xs))).toBeLessThan(0.016);
    expect(Math.abs(sampleStd(xs) ** 2 - 1)).toBeLessThan(0.022);
    expect(xs.every(Number.isFinite)).toBe(true);
  });

  it('int(n) stays in [0, n) and hits every value', () => {
    const r = new Rng(3);
    const seen = new Array<number>(7).fill(0);
    for (let i = 0; i < 7000; i++) {
      const k = r.int(7);
      expect(Number.isInteger(k) && k >= 0 && k < 7).toBe(true);
      seen[k]!++;
    }
    expect(seen.every((c) => c > 800)).toBe(true); // expected 1000 each, SD ≈ 29
  });

  it('categorical frequencies match the probabilities (chi-square, seed 99)', () => {
    const probs = [1, 2, 3, 4]; // unnormalised on purpose: 0.1, 0.2, 0.3, 0.4
    const r = new Rng(99);
    const N = 100_000;
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < N; i++) counts[r.categorical(probs)]!++;
    let chi2 = 0;
    for (let k = 0; k < 4; k++) {
      const expected = (N * probs[k]!) / 10;
      chi2 += (counts[k]! - expected) ** 2 / expected;
    }
    expect(chi2).toBeLessThan(16.27); // χ²₃ 0.999 quantile
  });

  it('categorical never picks an index with zero mass, even at the edges of u', () => {
    const r = new Rng(8);
    for (let i = 0; i < 10_000; i++) expect([1, 3]).toContain(r.categorical([0, 1, 0, 3, 0]));
    expect(sampleCategorical([0, 1, 0, 3, 0], 0)).toBe(1);
    expect(sampleCategorical([0, 1, 0, 3, 0], 1 - 2 ** -24)).toBe(3);
    expect(sampleCategorical([0, 1, 0, 3, 0], 1)).toBe(3); // u = 1 is out of contract; still safe
  });

  it('permutation returns a permutation', () => {
    const r = new Rng(12);
    for (const n of [0, 1, 2, 5, 50]) {
      const p = r.permutation(n);
      expect([...p].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i));
    }
  });

  it('permutations of 3 are uniform over all 6 orders (chi-square, seed 31)', () => {
    const r = new Rng(31);
    const N = 60_000;
    const counts = new Map<string, number>();
    for (let i = 0; i < N; i++) {
      const key = r.permutation(3).join('');
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    expect(counts.size).toBe(6);
    let chi2 = 0;
    for (const c of counts.values()) chi2 += (c - N / 6) ** 2 / (N / 6);
    expect(chi2).toBeLessThan(20.52); // χ²₅ 0.999 quantile
  });

  it('rejects invalid seeds', () => {
    for (const bad of [-1, 1.5, 2 ** 32, NaN, Infinity]) {
      expect(() => new Rng(bad)).toThrow(RangeError);
    }
    expect(() => new Rng(0)).not.toThrow();
    expect(() => new Rng(0xffffffff)).not.toThrow();
  });
});

// ---------------------------------------------------------------------------------------------
// stats: moments
// ---------------------------------------------------------------------------------------------

describe('moments', () => {
  const xs = [2, 4, 4, 4, 5, 5, 7, 9]; // mean 5, Σ(x − 5)² = 32

  it('sum, mean, sampleStd by hand', () => {
    expect(sum(xs)).toBe(40);
    expect(sum([])).toBe(0);
    expect(mean(xs)).toBe(5);
    expect(sampleStd(xs)).toBeCloseTo(Math.sqrt(32 / 7), 14);
    expect(mean(Float64Array.from(xs))).toBe(5);
  });

  it('compensated sum keeps small terms next to a large one', () => {
    const big = [1e16, ...new Array<number>(1000).fill(1), -1e16];
    expect(sum(big)).toBe(1000); // naive left-to-right gives 0
  });

  it('sampleStd does not lose precision to a large offset', () => {
    expect(sampleStd(xs.map((x) => x + 1e9))).toBeCloseTo(Math.sqrt(32 / 7), 6);
  });

  it('rejects too-short input', () => {
    expect(() => mean([])).toThrow(RangeError);
    expect(() => sampleStd([3])).toThrow(RangeError);
  });
});

// ---------------------------------------------------------------------------------------------
// stats: quantiles
// ---------------------------------------------------------------------------------------------

describe('quantile', () => {
  const xs = [3, 1, 4, 1, 5]; // sorted: 1 1 3 4 5

  it("type 7 ('linear') matches hand interpolation", () => {
    // h = 4p; Q = x₍⌊h⌋₎ + frac(h)·(next − x₍⌊h⌋₎), 0-based.
    expect(quantile(xs, 0)).toBe(1);
    expect(quantile(xs, 0.25)).toBe(1); // h = 1
    expect(quantile(xs, 0.3)).toBeCloseTo(1.4, 14); // h = 1.2 → 1 + 0.2·2
    expect(quantile(xs, 0.5)).toBe(3); // h = 2
    expect(quantile(xs, 0.9)).toBeCloseTo(4.6, 14); // h = 3.6 → 4 + 0.6·1
    expect(quantile(xs, 1)).toBe(5);
    expect(quantile(xs, 0.5, 'linear')).toBe(3);
  });

  it("type 1 ('inverted-cdf') is the smallest x with ECDF ≥ p", () => {
    // ECDF: 1 → 0.4, 3 → 0.6, 4 → 0.8, 5 → 1.
    const q = (p: number) => quantile(xs, p, 'inverted-cdf');
    expect(q(0)).toBe(1);
    expect(q(0.2)).toBe(1);
    expect(q(0.4)).toBe(1); // ECDF(1) = 0.4 ≥ 0.4
    expect(q(0.41)).toBe(3);
    expect(q(0.5)).toBe(3);
    expect(q(0.8)).toBe(4);
    expect(q(0.9)).toBe(5);
    expect(q(1)).toBe(5);
  });

  it('type 1 tests ECDF ≥ p directly, not the rounded ⌈np⌉', () => {
    const ys = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(100 * 0.07).toBeGreaterThan(7); // the floating-point trap
    expect(quantile(ys, 0.07, 'inverted-cdf')).toBe(7); // ECDF(7) = 0.07 ≥ 0.07
  });

  it('does not modify its input and accepts Float64Array', () => {
    const copy = [...xs];
    quantile(xs, 0.5);
    expect(xs).toEqual(copy);
    expect(quantile(Float64Array.from(xs), 0.5)).toBe(3);
  });

  it('throws on empty input, p outside [0, 1] and NaN data', () => {
    expect(() => quantile([], 0.5)).toThrow(RangeError);
    expect(() => quantile(xs, -0.01)).toThrow(RangeError);
    expect(() => quantile(xs, 1.01)).toThrow(RangeError);
    expect(() => quantile(xs, NaN)).toThrow(RangeError);
    expect(() => quantile([1, NaN], 0.5)).toThrow(RangeError);
  });
});

// ---------------------------------------------------------------------------------------------
// stats: special functions and quantiles of distributions
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// stats: confidence intervals
// ---------------------------------------------------------------------------------------------

describe('meanCI', () => {
  it('hand-computed interval for 1..5', () => {
    // x̄ = 3, s = √2.5, t_{0.975,4} = 2.7764451052, half = t·s/√5 = t·√0.5.
    const ci = meanCI([1, 2, 3, 4, 5]);
    expect(ci.mean).toBe(3);
    expect(ci.n).toBe(5);
    expect(ci.halfWidth).toBeCloseTo(2.7764451052 * Math.SQRT1_2, 8);
    expect(ci.lo).toBeCloseTo(3 - ci.halfWidth, 14);
    expect(ci.hi).toBeCloseTo(3 + ci.halfWidth, 14);
  });

  it('n = 1 gives the whole line, not NaN; empty throws', () => {
    const ci = meanCI([4]);
    expect(ci).toEqual({ mean: 4, lo: -Infinity, hi: Infinity, halfWidth: Infinity, n: 1 });
    expect(() => meanCI([])).toThrow(RangeError);
    expect(() => meanCI([1, 2], 1)).toThrow(RangeError);
  });

  it('covers the true mean ~95% of the time (2000 normal samples of size 10, seed 7)', () => {
    const r = new Rng(7);
    const mu = 3;
    const sigma = 2;
    let covered = 0;
    for (let rep = 0; rep < 2000; rep++) {
      const xs = Array.from({ length: 10 }, () => mu + sigma * r.normal());
      const ci = meanCI(xs, 0.95);
      if (ci.lo <= mu && mu <= ci.hi) covered++;
    }
    // SE of the coverage estimate ≈ √(0.95·0.05/2000) ≈ 0.005.
    const coverage = covered / 2000;
    expect(coverage).toBeGreaterThanOrEqual(0.93);
    expect(coverage).toBeLessThanOrEqual(0.97);
  });

  it('uses the Student-t quantile (table values): wider than the normal interval at small n', () => {
    // t_{0.975, 9} = 2.2621572 and t_{0.975, 30} = 2.0422725 (tables); z_{0.975} = 1.959964.
    const ten = Array.from({ length: 10 }, (_, i) => i);
    const s10 = sampleStd(ten);
    expect(meanCI(ten).halfWidth).toBeCloseTo((2.2621572 * s10) / Math.sqrt(10), 6);
    const x31 = Array.from({ length: 31 }, (_, i) => (i * 7) % 5);
    expect(meanCI(x31).halfWidth).toBeCloseTo((2.0422725 * sampleStd(x31)) / Math.sqrt(31), 6);
    expect(meanCI(ten).halfWidth).toBeGreaterThan((1.959964 * s10) / Math.sqrt(10) + 0.25 * (s10 / Math.sqrt(10)));
  });
});

// ---------------------------------------------------------------------------------------------
// stats: histogram, regression, power law, DKW
// ---------------------------------------------------------------------------------------------

describe('histogram', () => {
  it('hand counts, last bin closed', () => {
    const xs = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    const h = histogram(xs, 5);
    expect(h.edges).toEqual([0, 2, 4, 6, 8, 10]);
    expect(h.counts).toEqual([2, 2, 2, 2, 3]); // 10 falls in the last bin
  });

  it('values outside an explicit range are not counted', () => {
    const h = histogram([-1, 0, 0.5, 1, 2], 2, [0, 1]);
    expect(h.counts).toEqual([1, 2]);
  });

  it('counts sum to n and every value lies within its bin edges (seed 5)', () => {
    const r = new Rng(5);
    const xs = Array.from({ length: 5000 }, () => r.normal());
    const bins = 37;
    const h = histogram(xs, bins);
    expect(h.counts.reduce((a, b) => a + b, 0)).toBe(xs.length);
    expect(h.edges.length).toBe(bins + 1);
    expect(h.edges[0]).toBe(Math.min(...xs));
    expect(h.edges[bins]).toBe(Math.max(...xs));
    // Recount by the definition edges[i] ≤ x < edges[i+1] (last bin closed).
    const recount = new Array<number>(bins).fill(0);
    for (const x of xs) {
      let i = 0;
      while (i < bins - 1 && x >= h.edges[i + 1]!) i++;
      recount[i]!++;
    }
    expect(h.counts).toEqual(recount);
  });

  it('a value equal to an edge goes in the bin that starts there, despite rounding', () => {
    // With range [0.001, 0.9] and 13 bins, ⌊(x − lo)/width · bins⌋ puts edges 1, 2, 4 and 8 one
    // bin too low; the exact edge comparison must correct that.
    const h0 = histogram([], 13, [0.001, 0.9]);
    for (let i = 0; i < 13; i++) {
      const h = histogram([h0.edges[i]!], 13, [0.001, 0.9]);
      expect(h.counts.indexOf(1)).toBe(i);
    }
  });

  it('handles awkward edges and constant data', () => {
    // 0.3/3 is not exactly 0.1; 0.1 must still land in a bin consistent with the edges.
    const h = histogram([0, 0.1, 0.2, 0.3], 3, [0, 0.3]);
    expect(h.counts.reduce((a, b) => a + b, 0)).toBe(4);
    expect(histogram([2, 2, 2], 4)).toEqual({ edges: [1.5, 1.75, 2, 2.25, 2.5], counts: [0, 0, 3, 0] });
    expect(histogram([], 3, [0, 1]).counts).toEqual([0, 0, 0]);
    expect(() => histogram([], 3)).toThrow(RangeError);
    expect(() => histogram([1, 2], 0)).toThrow(RangeError);
    expect(() => histogram([1, 2], 2, [1, 1])).toThrow(RangeError);
    expect(() => histogram([1, NaN], 2)).toThrow(RangeError);
  });
});

describe('linreg and fitPowerLaw', () => {
  it('linreg recovers an exact line and scores r² = 1', () => {
    const xs = [0, 1, 2, 3, 4];
    const fit = linreg(xs, xs.map((x) => 2 - 0.5 * x));
    expect(fit.slope).toBeCloseTo(-0.5, 14);
    expect(fit.intercept).toBeCloseTo(2, 14);
    expect(fit.r2).toBeCloseTo(1, 14);
    expect(fit.n).toBe(5);
  });

  it('linreg r² by hand on noisy points', () => {
    // x = 0,1,2; y = 0,2,1: slope 0.5, intercept 0.5, SS_res = 1.5, SS_tot = 2, r² = 0.25.
    const fit = linreg([0, 1, 2], [0, 2, 1]);
    expect(fit.slope).toBeCloseTo(0.5, 14);
    expect(fit.intercept).toBeCloseTo(0.5, 14);
    expect(fit.r2).toBeCloseTo(0.25, 14);
    expect(() => linreg([1, 1], [1, 2])).toThrow(RangeError);
    expect(() => linreg([1], [1])).toThrow(RangeError);
  });

  it('fitPowerLaw recovers c = 0.3, p = 0.5 from exact data with r² = 1', () => {
    const xs = [1, 2, 4, 10, 100, 1000];
    const fit = fitPowerLaw(xs, xs.map((x) => 0.3 * Math.sqrt(x)));
    expect(fit.c).toBeCloseTo(0.3, 12);
    expect(fit.p).toBeCloseTo(0.5, 12);
    expect(fit.r2).toBeCloseTo(1, 12);
    expect(fit.used).toBe(6);
  });

  it('fitPowerLaw drops points with zero y or non-positive x, and says how many it used', () => {
    const xs = [0, 1, 2, 4, 8, 16];
    const ys = xs.map((x) => 5 * x ** -1);
    ys[3] = 0; // e.g. a run that reached zero error
    const fit = fitPowerLaw(xs, ys);
    expect(fit.used).toBe(4); // x = 0 and the zero-y point are gone
    expect(fit.c).toBeCloseTo(5, 12);
    expect(fit.p).toBeCloseTo(-1, 12);
    expect(() => fitPowerLaw([1, 2], [0, 0])).toThrow(RangeError);
  });
});

describe('errors', () => {
  it('NumericError is a SatError with code "numeric"', () => {
    const e = new NumericError('x');
    expect(e.code).toBe('numeric');
    expect(e.name).toBe('NumericError');
  });
});

describe('weightedQuantile', () => {
  it('equals the inverted-CDF quantile of the values repeated by their integer weights (seed 77)', () => {
    const rng = new Rng(77);
    for (let t = 0; t < 200; t++) {
      const n = 1 + rng.int(12);
      const xs = Array.from({ length: n }, () => Math.round(rng.normal() * 100) / 10);
      const ws = Array.from({ length: n }, () => rng.int(5));
      if (!ws.some((w) => w > 0)) ws[0] = 1;
      const repeated = xs.flatMap((x, i) => new Array<number>(ws[i]!).fill(x));
      for (const p of [0, 0.1, 0.5, 0.9, 0.99, 1]) expect(weightedQuantile(xs, ws, p)).toBe(quantile(repeated, p, 'inverted-cdf'));
    }
  });

  it('rejects bad input with specific errors', () => {
    expect(() => weightedQuantile([], [], 0.5)).toThrow(/empty/);
    expect(() => weightedQuantile([1, 2], [1], 0.5)).toThrow(/2 values but 1 weights/);
    expect(() => weightedQuantile([1], [0], 0.5)).toThrow(/sum to 0/);
    expect(() => weightedQuantile([1], [-1], 0.5)).toThrow(/weight 0/);
    expect(() => weightedQuantile([1], [1], 1.5)).toThrow(/p = 1.5/);
  });
});

describe('vec: whole-vector loops', () => {
  const seed = Date.now() % 1_000_000;
  const rng = new Rng(seed);
  const f64 = (n: number) => Float64Array.from({ length: n }, () => rng.uniform() * 2 - 1);
  const f32 = (n: number) => Float32Array.from({ length: n }, () => rng.uniform() * 2 - 1);

  it(`equal element-by-element sums and updates on random vectors, f64 and f32 (seed ${seed})`, () => {
    for (const n of [0, 1, 7, 28_832]) {
      for (const [a, b] of [
        [f64(n), f64(n)],
        [f32(n), f32(n)],
        [f32(n), f64(n)],
      ] as const) {
        let d = 0;
        let q = 0;
        for (let i = 0; i < n; i++) {
          d += a[i]! * b[i]!;
          q += a[i]! * a[i]!;
        }
        expect(dot(a, b)).toBe(d);
        expect(sumOfSquares(a)).toBe(q);
        const c = rng.uniform() * 4 - 2;
        for (const Out of [Float64Array, Float32Array]) {
          const out = new Out(n);
          addScaled(out, a, c, b);
          const want = new Out(n);
          for (let i = 0; i < n; i++) want[i] = a[i]! + c * b[i]!;
          expect(out).toEqual(want);
          lerp(out, a, c, b);
          for (let i = 0; i < n; i++) want[i] = a[i]! + c * (b[i]! - a[i]!);
          expect(out).toEqual(want);
        }
      }
    }
  });

  it('divided equals Float64Array.map((x) => x / d) bit for bit', () => {
    const x = f64(5000);
    const d = rng.uniform() * 3 + 0.1;
    expect(divided(x, d)).toEqual(x.map((v) => v / d));
  });

  it('addScaled may write over its own input (w ← w + a·q)', () => {
    const w = f64(1000);
    const q = f64(1000);
    const want = w.map((x, i) => x - 0.37 * q[i]!);
    addScaled(w, w, -0.37, q);
    expect(w).toEqual(want);
  });
});
