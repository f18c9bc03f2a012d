/**
 * Tests for the WebAssembly SIMD matmul family of the CPU backend (src/backend/cpu/simd.ts, kernel
 * wasm/kernels.ts) against its TypeScript twins (matmul.ts, quant.ts), on FRESH random inputs each
 * run: the seed is printed (set SIMD_SEED=<n> to replay a run).
 *
 * Tolerance, per output element, derived from the sum length K (C forward, OC for dinp, N for dW):
 *   |simd − ts| ≤ 1.01·(K + 2)·2⁻²⁴·(Σ_k |a_k·b_k| + |initial value|)
 * — the SIMD kernel sums in one f32 lane (worst case γ_K = K·2⁻²⁴ of Σ|a·b|), the TS twin in f64
 * (negligible), and each rounds once more when it adds into the output. This is the worst-case
 * bound, not a fitted one; the errors actually seen, in units of 2⁻²⁴·Σ|a·b|, are printed at the
 * end (typically ~√K, far below K).
 *
 * Also: shapes that are not multiples of 4 (every padding path), N = 1, C = 1, OC = 1, bench-sized
 * ones (2048 rows); accumulation into non-zero gradients; null outputs in the backward; Q8/Q4 equal
 * to the SIMD dense matmul on dequantized weights bit for bit; f64 arguments take the TS path;
 * with WebAssembly.validate stubbed to fail, a fresh simd.ts runs the TS twins and warns once;
 * short buffers throw the TS twins' RangeErrors; `cpuBackend` really dispatches to the kernel and a
 * small Model's logits on it stay close to `cpuBackendReference`'s; the committed artifact equals a
 * fresh build of wasm/kernels.ts byte for byte.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ARTIFACT, buildKernels, renderArtifact } from '../scripts/build-wasm.mjs';
import {
  cpuBackend,
  cpuBackend64,
  cpuBackendReference,
  dequantizeQ4,
  dequantizeQ8,
  matmulBackward,
  matmulBackwardInputQ4,
  matmulBackwardInputQ8,
  matmulForward,
  matmulForwardQ4,
  matmulForwardQ8,
  simdAvailable,
  simdKernelCalls,
} from '../src/backend/cpu';
import {
  simdMatmulBackward,
  simdMatmulBackwardInputQ4,
  simdMatmulBackwardInputQ8,
  simdMatmulForward,
  simdMatmulForwardQ4,
  simdMatmulForwardQ8,
} from '../src/backend/cpu/simd';
import { KERNELS_WASM_BASE64 } from '../src/backend/cpu/wasm/kernels.wasm';
import { Rng } from '../src/core/rng';
import { MODEL_PRESETS } from '../src/model/config';
import { Model } from '../src/model/model';
import { quantizeQ4, quantizeQ8 } from '../src/model/quant';
import { quantizeWeights } from '../src/model/weights';
import { randomWeights } from './helpers/randomWeights';

const SEED = process.env.SIMD_SEED !== undefined ? Number(process.env.SIMD_SEED) : Math.floor(Math.random() * 2 ** 31);
console.log(`tests/simd.test.ts: seed ${SEED} (replay with SIMD_SEED=${SEED})`);
const U = 2 ** -24;

let path = 0;
function rng(): Rng {
  return new Rng(SEED, [path++]);
}
/** Uniform in [−1, 1), f32-exact. */
function rand(n: number, r: Rng): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = r.uniform() * 2 - 1;
  return a;
}

/**
 * Per kernel, printed at the end: the worst |Δ|/tol (with its shape) and the worst |Δ| in units of
 * 2⁻²⁴·(Σ|a·b| + |init|) (with its sum length K, to set beside the bound's K + 2).
 */
const seen = new Map<string, { ofTol: number; tolShape: string; units: number; unitsK: number }>();
afterAll(() => {
  console.log('SIMD vs TS twin, worst element per kernel (seed ' + SEED + '):');
  for (const [k, v] of seen) {
    console.log(`  ${k.padEnd(24)} |Δ|/tol ${v.ofTol.toFixed(3)} (${v.tolShape})   |Δ| ≤ ${v.units.toFixed(2)}·2⁻²⁴·(Σ|a·b|+|init|) (at K = ${v.unitsK})`);
  }
});

/**
 * Checks got vs want element-wise against the bound (header). mag[i] = Σ_k |a_k·b_k| (f64), init the
 * output's value before the call (null for a forward), K the sum length.
 */
function expectClose(kernel: string, shape: string, got: Float32Array, want: Float32Array, mag: Float64Array, init: Float32Array | null, K: number): void {
  expect(got.length).toBe(want.length);
  let ofTol = 0;
  let units = 0;
  let bad = -1;
  for (let i = 0; i < got.length; i++) {
    const d = Math.abs(got[i]! - want[i]!);
    const scale = mag[i]! + (init === null ? 0 : Math.abs(init[i]!));
    const tol = 1.01 * (K + 2) * U * scale;
    if (!(d <= tol)) {
      bad = i;
      break;
    }
    if (scale > 0) {
      ofTol = Math.max(ofTol, d / tol);
      units = Math.max(units, d / (U * scale));
    }
  }
  expect(bad, `${kernel} ${shape}: element ${bad}: simd ${got[bad]} vs ts ${want[bad]}`).toBe(-1);
  const prev = seen.get(kernel) ?? { ofTol: 0, tolShape: '', units: 0, unitsK: 0 };
  if (ofTol >= prev.ofTol) Object.assign(prev, { ofTol, tolShape: shape });
  if (units >= prev.units) Object.assign(prev, { units, unitsK: K });
  seen.set(kernel, prev);
}

/** Σ_c |inp[n,c]·W[o,c]| → [N × OC]. */
function magForward(inp: Float32Array, w: Float32Array, N: number, C: number, OC: number): Float64Array {
  const m = new Float64Array(N * OC);
  for (let n = 0; n < N; n++)
    for (let o = 0; o < OC; o++) {
      let s = 0;
      for (let c = 0; c < C; c++) s += Math.abs(inp[n * C + c]! * w[o * C + c]!);
      m[n * OC + o] = s;
    }
  return m;
}
/** Σ_o |dout[n,o]·W[o,c]| → [N × C]. */
function magInput(dout: Float32Array, w: Float32Array, N: number, C: number, OC: number): Float64Array {
  const m = new Float64Array(N * C);
  for (let n = 0; n < N; n++)
    for (let o = 0; o < OC; o++) {
      const d = Math.abs(dout[n * OC + o]!);
      for (let c = 0; c < C; c++) m[n * C + c]! += d * Math.abs(w[o * C + c]!);
    }
  return m;
}
/** Σ_n |dout[n,o]·inp[n,c]| → [OC × C]. */
function magWeight(dout: Float32Array, inp: Float32Array, N: number, C: number, OC: number): Float64Array {
  const m = new Float64Array(OC * C);
  for (let n = 0; n < N; n++)
    for (let o = 0; o < OC; o++) {
      const d = Math.abs(dout[n * OC + o]!);
      for (let c = 0; c < C; c++) m[o * C + c]! += d * Math.abs(inp[n * C + c]!);
    }
  return m;
}

// [B, T, C, OC]: every padding path (C, OC mod 4 ∈ {0,1,2,3}), rows mod 4 ∈ {0,1,2,3}, degenerate
// sizes, and bench-sized (64·32 rows, the BENCH_400K widths).
const SHAPES: readonly [number, number, number, number][] = [
  [1, 1, 1, 1],
  [1, 1, 7, 5],
  [1, 3, 1, 9],
  [1, 5, 3, 7],
  [2, 2, 8, 8],
  [1, 6, 10, 2],
  [3, 7, 33, 13],
  [1, 17, 20, 12],
  [1, 1, 128, 344],
  [2, 9, 64, 40],
  [64, 32, 64, 172],
  [64, 32, 344, 128],
];
const label = ([B, T, C, OC]: readonly number[]): string => `B${B} T${T} C${C} OC${OC}`;

describe('WebAssembly SIMD kernels vs their TypeScript twins', () => {
  it('are available in this Node (the rest of the file would only test the fallback otherwise)', () => {
    expect(simdAvailable()).toBe(true);
  });

  for (const s of SHAPES) {
    const [B, T, C, OC] = s;
    const N = B * T;
    it(`matmulForward ${label(s)}`, () => {
      const r = rng();
      const inp = rand(N * C, r), w = rand(OC * C, r);
      const want = new Float32Array(N * OC);
      matmulForward(want, inp, w, B, T, C, OC);
      const got = new Float32Array(N * OC).fill(NaN); // poisoned: every element must be written
      simdMatmulForward(got, inp, w, B, T, C, OC);
      expectClose('matmulForward', label(s), got, want, magForward(inp, w, N, C, OC), null, C);
    });

    it(`matmulBackward ${label(s)}: accumulates into non-zero gradients; null outputs skipped`, () => {
      const r = rng();
      const inp = rand(N * C, r), w = rand(OC * C, r), dout = rand(N * OC, r);
      const di0 = rand(N * C, r), dw0 = rand(OC * C, r);
      const wantI = di0.slice(), wantW = dw0.slice();
      matmulBackward(wantI, wantW, dout, inp, w, B, T, C, OC);
      const gotI = di0.slice(), gotW = dw0.slice();
      simdMatmulBackward(gotI, gotW, dout, inp, w, B, T, C, OC);
      expectClose('matmulBackward dinp', label(s), gotI, wantI, magInput(dout, w, N, C, OC), di0, OC);
      expectClose('matmulBackward dweight', label(s), gotW, wantW, magWeight(dout, inp, N, C, OC), dw0, N);
      // Each output alone gives the same bits as both together; the inputs are left alone.
      const onlyI = di0.slice(), onlyW = dw0.slice();
      const [inp1, w1, dout1] = [inp.slice(), w.slice(), dout.slice()];
      simdMatmulBackward(onlyI, null, dout, inp, w, B, T, C, OC);
      simdMatmulBackward(null, onlyW, dout, inp, w, B, T, C, OC);
      expect(onlyI).toEqual(gotI);
      expect(onlyW).toEqual(gotW);
      expect([inp, w, dout]).toEqual([inp1, w1, dout1]);
      simdMatmulBackward(null, null, dout, inp, w, B, T, C, OC); // nothing to do, no throw
    });
  }

  // Quantized: C a multiple of 32.
  const QSHAPES: readonly [number, number, number, number][] = [
    [1, 1, 32, 1],
    [1, 5, 32, 7],
    [2, 7, 64, 41],
    [64, 32, 128, 344],
  ];
  for (const s of QSHAPES) {
    const [B, T, C, OC] = s;
    const N = B * T;
    it(`Q8 / Q4 forward and input gradient ${label(s)}: close to the TS twins, equal to the SIMD dense matmul on dequantized weights`, () => {
      const r = rng();
      const inp = rand(N * C, r), dout = rand(N * OC, r), di0 = rand(N * C, r);
      const q8 = quantizeQ8(rand(OC * C, r), OC, C);
      const q4 = quantizeQ4(rand(OC * C, r), OC, C);
      const cases = [
        {
          name: 'Q8',
          w: dequantizeQ8(q8.q, q8.scales, OC, C),
          fwd: (o: Float32Array) => matmulForwardQ8(o, inp, q8.q, q8.scales, B, T, C, OC),
          fwdS: (o: Float32Array) => simdMatmulForwardQ8(o, inp, q8.q, q8.scales, B, T, C, OC),
          bwd: (d: Float32Array) => matmulBackwardInputQ8(d, dout, q8.q, q8.scales, B, T, C, OC),
          bwdS: (d: Float32Array) => simdMatmulBackwardInputQ8(d, dout, q8.q, q8.scales, B, T, C, OC),
        },
        {
          name: 'Q4',
          w: dequantizeQ4(q4.q, q4.scales, OC, C),
          fwd: (o: Float32Array) => matmulForwardQ4(o, inp, q4.q, q4.scales, B, T, C, OC),
          fwdS: (o: Float32Array) => simdMatmulForwardQ4(o, inp, q4.q, q4.scales, B, T, C, OC),
          bwd: (d: Float32Array) => matmulBackwardInputQ4(d, dout, q4.q, q4.scales, B, T, C, OC),
          bwdS: (d: Float32Array) => simdMatmulBackwardInputQ4(d, dout, q4.q, q4.scales, B, T, C, OC),
        },
      ];
      for (const k of cases) {
        const want = new Float32Array(N * OC), got = new Float32Array(N * OC).fill(NaN), dense = new Float32Array(N * OC);
        k.fwd(want);
        k.fwdS(got);
        simdMatmulForward(dense, inp, k.w, B, T, C, OC);
        expectClose(`matmulForward${k.name}`, label(s), got, want, magForward(inp, k.w, N, C, OC), null, C);
        expect(got).toEqual(dense);
        const wantI = di0.slice(), gotI = di0.slice(), denseI = di0.slice();
        k.bwd(wantI);
        k.bwdS(gotI);
        simdMatmulBackward(denseI, null, dout, inp, k.w, B, T, C, OC);
        expectClose(`matmulBackwardInput${k.name}`, label(s), gotI, wantI, magInput(dout, k.w, N, C, OC), di0, OC);
        expect(gotI).toEqual(denseI);
      }
    });
  }

  it('f64 arguments take the TS path (bit for bit); short buffers throw the TS RangeErrors', () => {
    const r = rng();
    const [B, T, C, OC] = [1, 5, 6, 3];
    const inp = Float64Array.from(rand(T * C, r)), w = Float64Array.from(rand(OC * C, r)), dout = Float64Array.from(rand(T * OC, r));
    const a = new Float64Array(T * OC), b = new Float64Array(T * OC);
    matmulForward(a, inp, w, B, T, C, OC);
    simdMatmulForward(b, inp, w, B, T, C, OC);
    expect(b).toEqual(a);
    const gi = [new Float64Array(T * C).fill(1), new Float64Array(T * C).fill(1)];
    const gw = [new Float64Array(OC * C).fill(2), new Float64Array(OC * C).fill(2)];
    matmulBackward(gi[0]!, gw[0]!, dout, inp, w, B, T, C, OC);
    simdMatmulBackward(gi[1]!, gw[1]!, dout, inp, w, B, T, C, OC);
    expect(gi[1]).toEqual(gi[0]);
    expect(gw[1]).toEqual(gw[0]);

    const f = (n: number): Float32Array => new Float32Array(n);
    expect(() => simdMatmulForward(f(T * OC - 1), f(T * C), f(OC * C), B, T, C, OC)).toThrow(/matmulForward: out has/);
    expect(() => simdMatmulForward(f(T * OC), f(T * C), f(OC * C - 1), B, T, C, OC)).toThrow(/matmulForward: weight has/);
    expect(() => simdMatmulBackward(f(T * C - 1), null, f(T * OC), f(T * C), f(OC * C), B, T, C, OC)).toThrow(/matmulBackward: dinp has/);
    expect(() => simdMatmulBackward(null, f(OC * C), f(T * OC), f(T * C - 1), f(OC * C), B, T, C, OC)).toThrow(/matmulBackward: inp has/);
    expect(() => simdMatmulForward(f(1), f(1), f(1), 1, 1.5, 1, 1)).toThrow(/must be a non-negative integer/);
    const q = quantizeQ8(f(32), 1, 32);
    expect(() => simdMatmulForwardQ8(f(T), f(T * 32 - 1), q.q, q.scales, 1, T, 32, 1)).toThrow(/matmulForwardQ8: inp has/);
    expect(() => simdMatmulForwardQ8(f(T), f(T * 16), q.q, q.scales, 1, T, 16, 1)).toThrow(/multiple of 32/);
  });
});

describe('cpuBackend uses the SIMD kernels', () => {
  it('dispatches the matmul family to simd.ts; cpuBackendReference and cpuBackend64 keep the TS kernels', () => {
    expect(cpuBackend.matmulForward).toBe(simdMatmulForward);
    expect(cpuBackend.matmulBackward).toBe(simdMatmulBackward);
    expect(cpuBackend.matmulForwardQ8).toBe(simdMatmulForwardQ8);
    expect(cpuBackend.matmulBackwardInputQ4).toBe(simdMatmulBackwardInputQ4);
    for (const be of [cpuBackendReference, cpuBackend64]) {
      expect(be.matmulForward).toBe(matmulForward);
      expect(be.matmulBackward).toBe(matmulBackward);
      expect(be.matmulForwardQ8).toBe(matmulForwardQ8);
    }
    const before = simdKernelCalls();
    cpuBackend.matmulForward(new Float32Array(4), new Float32Array(4), new Float32Array(4), 1, 2, 2, 2);
    expect(simdKernelCalls()).toBe(before + 1);
  });

  it('a small Model (preset S, f32 and Q8) forward on cpuBackend stays within 1e-5·max|logit| of cpuBackendReference', () => {
    const cfg = MODEL_PRESETS.S;
    const r = rng();
    const w = randomWeights(cfg, r.fork(0));
    const [B, T] = [3, 17];
    const tokens = Int32Array.from({ length: B * T }, () => r.int(cfg.vocab));
    for (const [kind, weights] of [
      ['f32', w],
      ['q8', quantizeWeights(cfg, w, 'q8')],
    ] as const) {
      const calls = simdKernelCalls();
      const fast = new Model(cpuBackend, cfg, weights, { trainable: 'none' }).forward(tokens, B, T).slice();
      expect(simdKernelCalls(), 'the model ran its matmuls on the kernel').toBeGreaterThan(calls);
      const ref = new Model(cpuBackendReference, cfg, weights, { trainable: 'none' }).forward(tokens, B, T).slice();
      let maxAbs = 0, maxDiff = 0;
      for (let i = 0; i < ref.length; i++) {
        maxAbs = Math.max(maxAbs, Math.abs(ref[i]!));
        maxDiff = Math.max(maxDiff, Math.abs(fast[i]! - ref[i]!));
      }
      console.log(`Model S ${kind} forward: max|Δlogit| / max|logit| = ${(maxDiff / maxAbs).toExponential(2)}`);
      expect(maxDiff / maxAbs, kind).toBeLessThan(1e-5);
    }
  });
});

describe('without WebAssembly SIMD', () => {
  it('a fresh simd.ts runs the TS twins bit for bit, and says so once', async () => {
    vi.resetModules();
    const validate = vi.spyOn(WebAssembly, 'validate').mockReturnValue(false);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const fresh = await import('../src/backend/cpu/simd');
      const r = rng();
      const [B, T, C, OC] = [1, 9, 32, 5];
      const inp = rand(T * C, r), w = rand(OC * C, r), dout = rand(T * OC, r);
      const want = new Float32Array(T * OC), got = new Float32Array(T * OC);
      matmulForward(want, inp, w, B, T, C, OC);
      fresh.simdMatmulForward(got, inp, w, B, T, C, OC);
      expect(got).toEqual(want);
      const di = rand(T * C, r), dw = rand(OC * C, r);
      const wantI = di.slice(), wantW = dw.slice();
      matmulBackward(wantI, wantW, dout, inp, w, B, T, C, OC);
      fresh.simdMatmulBackward(di, dw, dout, inp, w, B, T, C, OC);
      expect(di).toEqual(wantI);
      expect(dw).toEqual(wantW);
      const q = quantizeQ8(w, OC, C);
      matmulForwardQ8(want, inp, q.q, q.scales, B, T, C, OC);
      fresh.simdMatmulForwardQ8(got, inp, q.q, q.scales, B, T, C, OC);
      expect(got).toEqual(want);
      expect(fresh.simdAvailable()).toBe(false);
      expect(fresh.simdUnavailableReason()).toMatch(/SIMD/);
      expect(fresh.simdKernelCalls()).toBe(0);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toMatch(/using the TypeScript matmuls/);
    } finally {
      validate.mockRestore();
      warn.mockRestore();
      vi.resetModules();
    }
  });
});

describe('the committed kernels artifact', () => {
  it(`${ARTIFACT} is a fresh build of wasm/kernels.ts, byte for byte`, async () => {
    const bytes = await buildKernels();
    expect(Buffer.from(KERNELS_WASM_BASE64, 'base64').equals(Buffer.from(bytes))).toBe(true);
    expect(readFileSync(ARTIFACT, 'utf8')).toBe(renderArtifact(bytes));
  });
});
