/**
 * Tests for the WebAssembly SIMD kernels of the CPU backend (src/backend/cpu/simd.ts, kernels in
 * wasm/kernels.ts) against their TypeScript twins — the matmul family (matmul.ts, quant.ts), causal
 * attention forward / backward / cached forward (attention.ts), RMSNorm, SwiGLU, log-softmax, RoPE
 * and the residual add, forward and backward (rmsnorm.ts, mlp.ts, softmax.ts, rope.ts, residual.ts) — on FRESH random inputs each run: the seed
 * is printed (set SIMD_SEED=<n> to replay a run).
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
 * to the SIMD dense matmul on dequantized weights bit for bit; a batch's rows (linear kernels for a
 * few rows, packed panels for more; Q8 / Q4 dequantized on the fly, special f16 scales included)
 * equal the same rows computed alone bit for bit; f64 arguments take the TS path;
 * with WebAssembly.validate stubbed to fail, a fresh simd.ts runs the TS twins and warns once;
 * short buffers throw the TS twins' RangeErrors; `cpuBackend` really dispatches to the kernel and a
 * small Model's logits on it stay close to `cpuBackendReference`'s; the committed artifact equals a
 * fresh build of wasm/kernels.ts byte for byte.
 *
 * Attention and the row kernels: each element's tolerance is a worst-case f32 bound derived from the
 * kernel's order of operations (stated above each tolerance function, with 4 ulps allowed for the
 * kernel's polynomial e^x), evaluated on the very inputs; odd T, HS, C, V (every vector tail), one
 * key, T > 32 and bench-sized shapes; accumulation into non-zero gradients; poisoned outputs; the
 * cached forward (prefill, then one token at a time) equal to the SIMD full forward bit for bit;
 * SwiGLU at |a| > 87, where e^x is clamped (absolute error ≤ 1e−30 there); log-softmax and RoPE
 * in place.
 * The worst |Δ|/tol of each is printed.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ARTIFACT, buildKernels, renderArtifact } from '../scripts/build-wasm.mjs';
import {
  attentionBackward,
  attentionCachedForward,
  attentionForward,
  cpuBackend,
  cpuBackend64,
  cpuBackendReference,
  kvCacheWrite,
  logSoftmaxBackward,
  logSoftmaxForward,
  residualBackward,
  residualForward,
  rmsnormBackward,
  rmsnormForward,
  ropeBackward,
  ropeForward,
  ropeTable,
  swigluBackward,
  swigluForward,
  dequantizeQ4,
  dequantizeQ8,
  matmulBackward,
  matmulBackwardInputQ4,
  matmulBackwardInputQ8,
  matmulForward,
  matmulForwardQ4,
  matmulForwardQ8,
  matmulForwardQAct,
  quantizeActs,
  simdAvailable,
  simdKernelCalls,
} from '../src/backend/cpu';
import {
  simdAttentionBackward,
  simdAttentionCachedForward,
  simdAttentionForward,
  simdLogSoftmaxBackward,
  simdLogSoftmaxForward,
  simdResidualBackward,
  simdResidualForward,
  simdRmsnormBackward,
  simdRmsnormForward,
  simdRopeBackward,
  simdRopeForward,
  simdSwigluBackward,
  simdSwigluForward,
  simdMatmulBackward,
  simdMatmulBackwardInputQ4,
  simdMatmulBackwardInputQ8,
  simdMatmulForward,
  simdMatmulForwardQ4,
  simdMatmulForwardQ8,
  simdMatmulForwardQ8Act,
  simdMatmulForwardQ4Act,
  LINEAR_MAX_ROWS,
} from '../src/backend/cpu/simd';
import { KERNELS_WASM_BASE64, KERNELS_WASM_RELAXED_BASE64, KERNELS_WASM_SHARED_BASE64 } from '../src/backend/cpu/wasm/kernels.wasm';
import { Rng } from '../src/core/rng';
import { MODEL_PRESETS } from '../src/model/config';
import { Model } from '../src/model/model';
import { quantizeQ4, quantizeQ8 } from '../src/model/quant';
import { quantizeWeights } from '../src/model/weights';
import { randomWeights } from './helpers/randomWeights';
import { freshSeed, randF32 } from './helpers/freshSeed';

const SEED = freshSeed('tests/simd.test.ts', 'SIMD_SEED');
const U = 2 ** -24;

let path = 0;
function rng(): Rng {
  return new Rng(SEED, [path++]);
}
/** Uniform in [−1, 1), f32-exact. */
const rand = randF32;
/** An f32 array's bits, for bit-for-bit comparisons (NaN payloads and −0 included). */
const bits = (a: Float32Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length);

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

  // The forward reads W as stored: one row (and up to LINEAR_MAX_ROWS) through the linear kernels,
  // more through packed panels and gemm's register tile. Every path sums each element in the same
  // order, so a row is the same bits however many rows share the call — what makes decoding one
  // token give the plain forward's logits.
  it(`a batch's rows equal the same rows computed alone bit for bit (linear ≤ ${LINEAR_MAX_ROWS} rows, panels above): f32, Q8, Q4`, () => {
    const r = rng();
    const Ns = [2, 3, 4, 5, 6, 7, 9, 17];
    const alone = (fwd: (o: Float32Array, x: Float32Array, N: number) => void, inp: Float32Array, N: number, C: number, OC: number): Float32Array => {
      const want = new Float32Array(N * OC);
      for (let n = 0; n < N; n++) fwd(want.subarray(n * OC, (n + 1) * OC), inp.subarray(n * C, (n + 1) * C), 1);
      return want;
    };
    // OC: every tile remainder (mod 8: 8-row tiles, a 4-row tile, single rows); C: every k remainder (f32).
    for (const [C, OC] of [[5, 1], [7, 3], [12, 8], [33, 13], [64, 4], [96, 203], [130, 31], [16, 12]] as const) {
      const fwd = (o: Float32Array, x: Float32Array, N: number): void => simdMatmulForward(o, x, w, 1, N, C, OC);
      const w = rand(OC * C, r);
      for (const N of Ns) {
        const inp = rand(N * C, r);
        const got = new Float32Array(N * OC).fill(NaN);
        fwd(got, inp, N);
        expect(bits(got), `f32 N ${N} C ${C} OC ${OC}`).toEqual(bits(alone(fwd, inp, N, C, OC)));
      }
    }
    for (const [C, OC] of [[32, 1], [32, 7], [64, 12], [96, 203], [160, 40]] as const) {
      const w = rand(OC * C, r);
      const q8 = quantizeQ8(w, OC, C), q4 = quantizeQ4(w, OC, C);
      for (const [name, fwd] of [
        ['Q8', (o: Float32Array, x: Float32Array, N: number): void => simdMatmulForwardQ8(o, x, q8.q, q8.scales, 1, N, C, OC)],
        ['Q4', (o: Float32Array, x: Float32Array, N: number): void => simdMatmulForwardQ4(o, x, q4.q, q4.scales, 1, N, C, OC)],
      ] as const) {
        for (const N of Ns) {
          const inp = rand(N * C, r);
          const got = new Float32Array(N * OC).fill(NaN);
          fwd(got, inp, N);
          expect(bits(got), `${name} N ${N} C ${C} OC ${OC}`).toEqual(bits(alone(fwd, inp, N, C, OC)));
        }
      }
    }
  });

  it('Q8 / Q4 scales that are f16 subnormals, zero, negative or huge dequantize exactly as the TS twin does', () => {
    const r = rng();
    const [N, C, OC] = [3, 64, 9];
    const inp = rand(N * C, r);
    const q8 = quantizeQ8(rand(OC * C, r), OC, C), q4 = quantizeQ4(rand(OC * C, r), OC, C);
    // 0x0001 (smallest subnormal), 0x03ff (largest subnormal), 0x8000 (−0), 0x7bff (65504), 0xfbff, 0x3c00 (1), 0x8400 (−2⁻¹⁴).
    const special = [0x0001, 0x03ff, 0x8000, 0x7bff, 0xfbff, 0x3c00, 0x8400];
    for (const sc of [q8.scales, q4.scales]) for (let i = 0; i < sc.length; i++) sc[i] = special[i % special.length]!;
    for (const [name, ts, simd, w] of [
      ['Q8', (o: Float32Array) => matmulForwardQ8(o, inp, q8.q, q8.scales, 1, N, C, OC), (o: Float32Array) => simdMatmulForwardQ8(o, inp, q8.q, q8.scales, 1, N, C, OC), dequantizeQ8(q8.q, q8.scales, OC, C)],
      ['Q4', (o: Float32Array) => matmulForwardQ4(o, inp, q4.q, q4.scales, 1, N, C, OC), (o: Float32Array) => simdMatmulForwardQ4(o, inp, q4.q, q4.scales, 1, N, C, OC), dequantizeQ4(q4.q, q4.scales, OC, C)],
    ] as const) {
      const want = new Float32Array(N * OC), got = new Float32Array(N * OC).fill(NaN);
      ts(want);
      simd(got);
      expectClose(`matmulForward${name}`, `special scales N${N} C${C} OC${OC}`, got, want, magForward(inp, w, N, C, OC), null, C);
    }
  });

  // int8 activations: the kernels (quantActs + linQ8a / linQ4a) and the TS twin are the same
  // sequence of f32 operations, so they must agree bit for bit on every shape, tile remainder and N.
  it('int8-activation Q8 / Q4 forward equals its TS twin bit for bit (N 1–17, every OC remainder, special scales and activations)', () => {
    const r = rng();
    const cases: [string, (o: Float32Array, x: Float32Array, N: number, C: number, OC: number) => void, (o: Float32Array, x: Float32Array, N: number, C: number, OC: number) => void][] = [];
    for (const [C, OC] of [[32, 1], [32, 7], [64, 12], [96, 203], [160, 40], [576, 9]] as const) {
      const w = rand(OC * C, r);
      const q8 = quantizeQ8(w, OC, C), q4 = quantizeQ4(w, OC, C);
      cases.length = 0;
      cases.push(
        ['Q8', (o, x, N) => simdMatmulForwardQ8Act(o, x, q8.q, q8.scales, 1, N, C, OC), (o, x, N) => matmulForwardQAct('t', o, x, q8.q, q8.scales, 1, N, C, OC)],
        ['Q4', (o, x, N) => simdMatmulForwardQ4Act(o, x, q4.q, q4.scales, 1, N, C, OC), (o, x, N) => matmulForwardQAct('t', o, x, q4.q, q4.scales, 1, N, C, OC)],
      );
      for (const [name, simd, ts] of cases) {
        for (const N of [1, 2, 3, 5, 17]) {
          const inp = rand(N * C, r);
          for (let i = 0; i < N * C; i++) inp[i] = inp[i]! * 2 ** ((i % 7) - 3); // blocks of different scales
          const got = new Float32Array(N * OC).fill(NaN), want = new Float32Array(N * OC).fill(NaN);
          simd(got, inp, N, C, OC);
          ts(want, inp, N, C, OC);
          expect(bits(got), `${name} N ${N} C ${C} OC ${OC}`).toEqual(bits(want));
        }
      }
    }
    // Special activations: a zero block (d = 0), ties of x·(1/d) (d = 1: ±0.5, 2.5, −3.5 …),
    // a block with one huge value, subnormals; and the special f16 scales of the test above.
    const [N, C, OC] = [4, 64, 9];
    const inp = new Float32Array(N * C);
    inp[32] = 127; // row 0, block 1: d = 1, so every x below is its own x·(1/d)
    [0.5, -0.5, 1.5, -2.5, 2.5, -3.5, 126.5, -126.5].forEach((v, i) => (inp[33 + i] = v));
    for (let i = 0; i < 32; i++) inp[C + i] = i === 5 ? 3e38 : rand(1, r)[0]!; // row 1, block 0: one huge value
    for (let i = 0; i < 32; i++) inp[C + 32 + i] = (i - 16) * 1e-41; // row 1, block 1: subnormals
    inp.set(rand(2 * C, r), 2 * C);
    const q8 = quantizeQ8(rand(OC * C, r), OC, C), q4 = quantizeQ4(rand(OC * C, r), OC, C);
    const special = [0x0001, 0x03ff, 0x8000, 0x7bff, 0xfbff, 0x3c00, 0x8400];
    for (let i = 0; i < q8.scales.length; i++) if (i % 3 === 0) q8.scales[i] = q4.scales[i] = special[i % special.length]!;
    for (const [name, q, sc, simd] of [['Q8', q8.q, q8.scales, simdMatmulForwardQ8Act], ['Q4', q4.q, q4.scales, simdMatmulForwardQ4Act]] as const) {
      const got = new Float32Array(N * OC).fill(NaN), want = new Float32Array(N * OC).fill(NaN);
      (simd as (o: Float32Array, x: Float32Array, q: Int8Array | Uint8Array, s: Uint16Array, B: number, T: number, C: number, OC: number) => void)(got, inp, q, sc, 1, N, C, OC);
      matmulForwardQAct('t', want, inp, q, sc, 1, N, C, OC);
      expect(bits(got), `${name} special`).toEqual(bits(want));
    }
    const { xq, dx } = quantizeActs(inp, N, C);
    expect(dx[0]).toBe(0);
    expect(Array.from(xq.subarray(0, 32)).every((v) => v === 0)).toBe(true);
    expect(dx[1]).toBe(1);
    expect(Array.from(xq.subarray(33, 41))).toEqual([0, 0, 2, -2, 2, -4, 126, -126]); // ties to even
    // A block of subnormals: 1/d overflows, so x·(1/d) is ±∞ (NaN at 0), clamped to ±127 (0).
    expect(Array.from(xq.subarray(C + 32, C + 64))).toEqual(Array.from({ length: 32 }, (_, i) => Math.sign(i - 16) * 127));
  });

  // The price of int8 activations against the exact product on the same weights: each activation
  // moves by at most half its block's step d_j (plus f32 rounding of x·(1/d)), so
  // |Δ| ≤ Σ_j d_j·(½ + 2⁻¹⁶)·Σ_i |w_ji| + (C + 4)·2⁻²³·(Σ|w·x| + Σ_j |S_j·s_j·d_j|).
  it('int8-activation output stays within the activation-rounding bound of the exact Q8 / Q4 product', () => {
    const r = rng();
    let worst = 0;
    for (const [N, C, OC] of [[1, 576, 64], [3, 1536, 17], [8, 96, 40]] as const) {
      const inp = rand(N * C, r), w = rand(OC * C, r);
      for (const [q, sc, deq] of [
        (() => { const t = quantizeQ8(w, OC, C); return [t.q, t.scales, dequantizeQ8(t.q, t.scales, OC, C)] as const; })(),
        (() => { const t = quantizeQ4(w, OC, C); return [t.q, t.scales, dequantizeQ4(t.q, t.scales, OC, C)] as const; })(),
      ]) {
        const exact = new Float32Array(N * OC), act = new Float32Array(N * OC);
        (q instanceof Int8Array ? matmulForwardQ8 : matmulForwardQ4)(exact, inp, q as never, sc, 1, N, C, OC);
        (q instanceof Int8Array ? simdMatmulForwardQ8Act : simdMatmulForwardQ4Act)(act, inp, q as never, sc, 1, N, C, OC);
        const { dx } = quantizeActs(inp, N, C);
        const nb = C / 32;
        for (let n = 0; n < N; n++) {
          for (let o = 0; o < OC; o++) {
            let bound = 0, mag = 0;
            for (let j = 0; j < nb; j++) {
              let sw = 0;
              for (let i = 0; i < 32; i++) {
                const k = j * 32 + i;
                sw += Math.abs(deq[o * C + k]!);
                mag += Math.abs(deq[o * C + k]! * inp[n * C + k]!);
              }
              bound += dx[n * nb + j]! * (0.5 + 2 ** -16) * sw;
            }
            bound += (C + 4) * 2 ** -23 * 2 * (mag + bound);
            const d = Math.abs(act[n * OC + o]! - exact[n * OC + o]!);
            expect(d, `N${N} C${C} OC${OC} n${n} o${o}`).toBeLessThanOrEqual(bound);
            worst = Math.max(worst, d / bound);
          }
        }
      }
    }
    console.log(`int8 activations vs the exact quantized product: worst |Δ| is ${worst.toFixed(3)} of the rounding bound`);
    expect(worst).toBeGreaterThan(0); // the activations really were rounded
  });

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

// ───────────────────────── attention and the row kernels ─────────────────────────
// Each tolerance below is a worst-case f32 bound derived from the kernel's operation order
// (wasm/kernels.ts), evaluated per element on the very inputs; `ulpExp` is the relative error
// allowed for the kernel's polynomial e^x (4 f32 ulps). The worst |Δ|/tol per kernel is printed.

const EXP_ULPS = 4;
const rowSeen = new Map<string, { ofTol: number; shape: string }>();
afterAll(() => {
  console.log('SIMD vs TS twin, attention and row kernels, worst |Δ|/tol (seed ' + SEED + '):');
  for (const [k, v] of rowSeen) console.log(`  ${k.padEnd(26)} ${v.ofTol.toFixed(3)} (${v.shape})`);
});

/** |got − want| ≤ tol element-wise (NaN fails); records the worst ratio. */
function expectWithin(kernel: string, shape: string, got: Float32Array, want: Float32Array, tol: Float64Array): void {
  expect(got.length).toBe(want.length);
  let worst = 0;
  for (let i = 0; i < got.length; i++) {
    const d = Math.abs(got[i]! - want[i]!);
    if (!(d <= tol[i]!)) expect.fail(`${kernel} ${shape}: element ${i}: simd ${got[i]} vs ts ${want[i]} (tol ${tol[i]})`);
    if (tol[i]! > 0) worst = Math.max(worst, d / tol[i]!);
  }
  const prev = rowSeen.get(kernel);
  if (prev === undefined || worst >= prev.ofTol) rowSeen.set(kernel, { ofTol: worst, shape });
}

/**
 * Attention forward tolerances for the full forward [out, att], per query row (len keys):
 *   ε = (HS + 1)·u·scale·max_j Σ_i |q_i k_ji|   (score sums),  S = max_j |s_j|,
 *   δP = 4ε + 4u·S + (len + 10 + 4·EXP_ULPS)·u   (shift, e^x, the f32 sum, 1/sum, ·),
 *   tol(P_j) = 1.01·P_j·(δP + 2u),  tol(out_i) = 1.01·Σ_j P_j|v_ji|·(δP + (len + 3)·u).
 */
function attentionForwardTol(q: Float32Array, k: Float32Array, v: Float32Array, att: Float32Array, B: number, T: number, NH: number, HS: number): [Float64Array, Float64Array] {
  const C = NH * HS, scale = 1 / Math.sqrt(HS);
  const tOut = new Float64Array(B * T * C), tAtt = new Float64Array(B * NH * T * T);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < NH; h++)
      for (let t = 0; t < T; t++) {
        const row = (b * T + t) * C + h * HS, ar = ((b * NH + h) * T + t) * T;
        let eps = 0, S = 0;
        for (let j = 0; j <= t; j++) {
          let a = 0, s = 0;
          for (let i = 0; i < HS; i++) {
            a += Math.abs(q[row + i]! * k[(b * T + j) * C + h * HS + i]!);
            s += q[row + i]! * k[(b * T + j) * C + h * HS + i]!;
          }
          eps = Math.max(eps, (HS + 1) * U * scale * a);
          S = Math.max(S, Math.abs(s * scale));
        }
        const dP = 4 * eps + 4 * U * S + (t + 1 + 10 + 4 * EXP_ULPS) * U;
        for (let j = 0; j <= t; j++) tAtt[ar + j] = 1.01 * att[ar + j]! * (dP + 2 * U);
        for (let i = 0; i < HS; i++) {
          let m = 0;
          for (let j = 0; j <= t; j++) m += att[ar + j]! * Math.abs(v[(b * T + j) * C + h * HS + i]!);
          tOut[row + i] = 1.01 * m * (dP + (t + 1 + 3) * U);
        }
      }
  return [tOut, tAtt];
}

/**
 * Attention backward tolerances [dq, dk, dv] (P given, the same for both twins). With
 * A_tj = Σ_i |dout_ti v_ji|, D_t = Σ_j P_tj A_tj and M_tj = P_tj·scale·(A_tj + D_t) (a bound on
 * |ds_tj|), every f32 step of the kernel is covered by γ = (2T + HS + 10)·u:
 *   tol(dq_ti) = 1.01·(γ Σ_j M_tj|k_ji| + 2u|init|),  tol(dk_ji) = 1.01·(γ Σ_t M_tj|q_ti| + (T + 2)u|init|),
 *   tol(dv_ji) = 1.01·(γ Σ_t P_tj|dout_ti| + (T + 2)u|init|).
 * The |init| terms count the roundings that see the initial value: the SIMD kernel adds each
 * element's sum to it once (one rounding, ≤ u·|init + sum|); the TS twin does the same for dq (its
 * sum is an f64 accumulator) but adds into dk_j and dv_j once per query row t ≥ j, in f32 — up to T
 * roundings of a running value ≤ |init| + its partial sum. (The partial-sum part is inside γ.)
 */
function attentionBackwardTol(
  init: [Float32Array, Float32Array, Float32Array],
  dout: Float32Array,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  att: Float32Array,
  B: number,
  T: number,
  NH: number,
  HS: number,
): Float64Array[] {
  const C = NH * HS, scale = 1 / Math.sqrt(HS), g = (2 * T + HS + 10) * U;
  const mags = [new Float64Array(B * T * C), new Float64Array(B * T * C), new Float64Array(B * T * C)];
  const A = new Float64Array(T);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < NH; h++)
      for (let t = 0; t < T; t++) {
        const rt = (b * T + t) * C + h * HS, ar = ((b * NH + h) * T + t) * T;
        let D = 0;
        for (let j = 0; j <= t; j++) {
          let a = 0;
          for (let i = 0; i < HS; i++) a += Math.abs(dout[rt + i]! * v[(b * T + j) * C + h * HS + i]!);
          A[j] = a;
          D += att[ar + j]! * a;
        }
        for (let j = 0; j <= t; j++) {
          const rj = (b * T + j) * C + h * HS, P = att[ar + j]!, M = P * scale * (A[j]! + D);
          for (let i = 0; i < HS; i++) {
            mags[0]![rt + i]! += M * Math.abs(k[rj + i]!);
            mags[1]![rj + i]! += M * Math.abs(q[rt + i]!);
            mags[2]![rj + i]! += P * Math.abs(dout[rt + i]!);
          }
        }
      }
  // The first version gave every gradient 2u|init|, which holds for dq only: SIMD_SEED=1717792587
  // (B64 T32 NH4 HS16) found a dv element of 0.697 two ulps (1.19e-7) apart — the TS twin's T
  // running f32 adds into dv (header).
  const initUlps = [2, T + 2, T + 2];
  return mags.map((m, x) => m.map((mi, i) => 1.01 * (g * mi + initUlps[x]! * U * Math.abs(init[x]![i]!))));
}

// [B, T, NH, HS]: T and HS around multiples of 4 (every tail), one key only, T > 32, bench-sized.
const ATT_SHAPES: readonly [number, number, number, number][] = [
  [1, 1, 1, 1],
  [1, 5, 1, 3],
  [2, 7, 3, 5],
  [3, 9, 2, 16],
  [1, 13, 4, 6],
  [2, 37, 2, 8],
  [64, 32, 4, 16],
];
const attLabel = ([B, T, NH, HS]: readonly number[]): string => `B${B} T${T} NH${NH} HS${HS}`;

describe('WebAssembly SIMD attention and row kernels vs their TypeScript twins', () => {
  for (const s of ATT_SHAPES) {
    const [B, T, NH, HS] = s;
    const C = NH * HS, n = B * T * C, na = B * NH * T * T;
    it(`attentionForward / attentionBackward ${attLabel(s)}`, () => {
      const r = rng();
      const q = rand(n, r), k = rand(n, r), v = rand(n, r), dout = rand(n, r);
      const want = new Float32Array(n), wantAtt = new Float32Array(na);
      attentionForward(want, wantAtt, q, k, v, B, T, NH, HS);
      const got = new Float32Array(n).fill(NaN), gotAtt = new Float32Array(na).fill(NaN);
      simdAttentionForward(got, gotAtt, q, k, v, B, T, NH, HS);
      const [tOut, tAtt] = attentionForwardTol(q, k, v, wantAtt, B, T, NH, HS);
      expectWithin('attentionForward out', attLabel(s), got, want, tOut);
      expectWithin('attentionForward att', attLabel(s), gotAtt, wantAtt, tAtt);
      for (let b = 0; b < B * NH; b++) for (let t = 0; t < T; t++) for (let j = t + 1; j < T; j++) expect(gotAtt[(b * T + t) * T + j]).toBe(0);

      const init = [rand(n, r), rand(n, r), rand(n, r)] as [Float32Array, Float32Array, Float32Array];
      const w = init.map((a) => a.slice()), g = init.map((a) => a.slice());
      const ins = [dout, q, k, v, wantAtt].map((a) => a.slice());
      attentionBackward(w[0]!, w[1]!, w[2]!, dout, q, k, v, wantAtt, B, T, NH, HS);
      simdAttentionBackward(g[0]!, g[1]!, g[2]!, dout, q, k, v, wantAtt, B, T, NH, HS);
      const tol = attentionBackwardTol(init, dout, q, k, v, wantAtt, B, T, NH, HS);
      ['dq', 'dk', 'dv'].forEach((name, i) => expectWithin(`attentionBackward ${name}`, attLabel(s), g[i]!, w[i]!, tol[i]!));
      expect([dout, q, k, v, wantAtt]).toEqual(ins);
    });
  }

  it('attentionCachedForward: prefill then one-token steps equal the SIMD full forward bit for bit, and stay close to the TS cached forward', () => {
    const r = rng();
    const [B, T, NH, HS, Tmax] = [3, 11, 2, 6, 14];
    const C = NH * HS, n = B * T * C;
    const q = rand(n, r), k = rand(n, r), v = rand(n, r);
    const full = new Float32Array(n);
    simdAttentionForward(full, new Float32Array(B * NH * T * T), q, k, v, B, T, NH, HS);
    const kc = rand(B * Tmax * C, r), vc = rand(B * Tmax * C, r); // rows past pos are garbage: never read
    const rows = (a: Float32Array, t0: number, t1: number): Float32Array => {
      const o = new Float32Array(B * (t1 - t0) * C);
      for (let b = 0; b < B; b++) o.set(a.subarray((b * T + t0) * C, (b * T + t1) * C), b * (t1 - t0) * C);
      return o;
    };
    const P0 = 4;
    for (const [t0, t1] of [[0, P0], ...Array.from({ length: T - P0 }, (_, i) => [P0 + i, P0 + i + 1])] as [number, number][]) {
      kvCacheWrite(kc, vc, rows(k, t0, t1), rows(v, t0, t1), B, t1 - t0, C, t0, Tmax);
      const got = new Float32Array(B * (t1 - t0) * C).fill(NaN), ts = new Float32Array(B * (t1 - t0) * C);
      simdAttentionCachedForward(got, rows(q, t0, t1), kc, vc, B, t1 - t0, NH, HS, t0, Tmax);
      attentionCachedForward(ts, rows(q, t0, t1), kc, vc, B, t1 - t0, NH, HS, t0, Tmax);
      expect(got, `positions ${t0}..${t1 - 1}`).toEqual(rows(full, t0, t1));
      let worst = 0;
      for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i]! - ts[i]!));
      expect(worst).toBeLessThan(1e-5);
    }
    expect(() => simdAttentionCachedForward(new Float32Array(C), new Float32Array(C), kc, vc, 1, 1, NH, HS, Tmax, Tmax)).toThrow(/do not fit a cache/);
  });

  // [N, C]: every tail (C mod 4), one row, one channel, bench-sized.
  const ROW_SHAPES: readonly [number, number][] = [
    [1, 1],
    [3, 5],
    [7, 6],
    [5, 32],
    [9, 43],
    [2048, 64],
    [2048, 172],
  ];
  for (const [N, C] of ROW_SHAPES) {
    const shape = `N${N} C${C}`;
    it(`rmsnormForward / rmsnormBackward ${shape}`, () => {
      const r = rng();
      const inp = rand(N * C, r), w = rand(C, r), dout = rand(N * C, r), di0 = rand(N * C, r), dw0 = rand(C, r);
      const want = new Float32Array(N * C), wantR = new Float32Array(N);
      rmsnormForward(want, wantR, inp, w, 1, N, C);
      const got = new Float32Array(N * C).fill(NaN), gotR = new Float32Array(N).fill(NaN);
      simdRmsnormForward(got, gotR, inp, w, 1, N, C);
      // rstd: (C + 8)·u relative (the f32 Σx², /C, +eps, √, 1/); out adds two products.
      const g = (C + 8) * U;
      expectWithin('rmsnormForward rstd', shape, gotR, wantR, Float64Array.from(wantR, (x) => 1.01 * g * x));
      expectWithin('rmsnormForward out', shape, got, want, Float64Array.from(want, (x) => 1.01 * (g + 3 * U) * Math.abs(x)));
      // Backward, from the same rstd: G = Σ|dy·w·x|, mag(dinp_c) = r(|dy_c w_c| + |x_c| r² G/C) with
      // (C + 10)·u; dw_c += Σ_rows dy·x·r summed into init in row order: (N + 4)·u·(Σ|dy x r| + |init|).
      const wI = di0.slice(), wW = dw0.slice(), gI = di0.slice(), gW = dw0.slice();
      rmsnormBackward(wI, wW, dout, inp, w, wantR, 1, N, C);
      simdRmsnormBackward(gI, gW, dout, inp, w, wantR, 1, N, C);
      const tI = new Float64Array(N * C), mW = new Float64Array(C);
      for (let row = 0; row < N; row++) {
        const rs = wantR[row]!;
        let G = 0;
        for (let c = 0; c < C; c++) G += Math.abs(dout[row * C + c]! * w[c]! * inp[row * C + c]!);
        for (let c = 0; c < C; c++) {
          const i = row * C + c;
          tI[i] = 1.01 * ((C + 10) * U * rs * (Math.abs(dout[i]! * w[c]!) + (Math.abs(inp[i]!) * rs * rs * G) / C) + 2 * U * Math.abs(di0[i]!));
          mW[c]! += Math.abs(dout[i]! * inp[i]! * rs);
        }
      }
      expectWithin('rmsnormBackward dinp', shape, gI, wI, tI);
      expectWithin('rmsnormBackward dweight', shape, gW, wW, mW.map((m, c) => 1.01 * (N + 4) * U * (m + Math.abs(dw0[c]!))));
    });

    it(`swigluForward / swigluBackward ${shape} (a spread over [−12, 12], plus the e^x clamp at |a| > 87)`, () => {
      const r = rng();
      const M = N * C;
      const a = rand(M, r).map((x) => 12 * x), b = rand(M, r), dout = rand(M, r), da0 = rand(M, r), db0 = rand(M, r);
      if (M >= 4) a.set([-100, 100, -87.5, 90]); // the clamp: e^−a is wrong there, but silu stays within 1e−30
      const want = new Float32Array(M), got = new Float32Array(M).fill(NaN);
      swigluForward(want, a, b, M);
      simdSwigluForward(got, a, b, M);
      // e^x (EXP_ULPS), 1 +, /, ·b, and the twin's own rounding: (EXP_ULPS + 6)·u relative; 1e−30 for the clamp.
      expectWithin('swigluForward', shape, got, want, Float64Array.from(want, (x) => 1.01 * (EXP_ULPS + 6) * U * Math.abs(x) + 1e-30));
      const wA = da0.slice(), wB = db0.slice(), gA = da0.slice(), gB = db0.slice();
      swigluBackward(wA, wB, dout, a, b, M);
      simdSwigluBackward(gA, gB, dout, a, b, M);
      // σ (EXP_ULPS + 3)·u; 1 − σ cancels, so da is bounded on |g b σ|(1 + 2|a|) with (EXP_ULPS + 20)·u.
      const tA = new Float64Array(M), tB = new Float64Array(M);
      for (let i = 0; i < M; i++) {
        const x = a[i]!, sg = 1 / (1 + Math.exp(-x)), gi = dout[i]!;
        tA[i] = 1.01 * ((EXP_ULPS + 20) * U * Math.abs(gi * b[i]! * sg) * (1 + 2 * Math.abs(x)) + 2 * U * Math.abs(da0[i]!)) + 1e-30;
        tB[i] = 1.01 * ((EXP_ULPS + 8) * U * Math.abs(gi * x * sg) + 2 * U * Math.abs(db0[i]!)) + 1e-30;
      }
      expectWithin('swigluBackward da', shape, gA, wA, tA);
      expectWithin('swigluBackward db', shape, gB, wB, tB);
    });

    it(`logSoftmaxForward / logSoftmaxBackward N${N} V${C}, τ = 0.7`, () => {
      const r = rng();
      const V = C, tau = 0.7, inv = 1 / tau;
      const z = rand(N * V, r).map((x) => 8 * x), dlp = rand(N * V, r), dz0 = rand(N * V, r);
      const want = new Float32Array(N * V), got = new Float32Array(N * V).fill(NaN);
      logSoftmaxForward(want, z, N, V, tau);
      simdLogSoftmaxForward(got, z, N, V, tau);
      // Per row, with M = max|z/τ| and ls = log Σ e^(z/τ − m): u·(V + 10 + 4·EXP_ULPS + 8(M + ls + |lp_v|)).
      const tF = new Float64Array(N * V), tB = new Float64Array(N * V);
      for (let row = 0; row < N; row++) {
        let M = 0, m = -Infinity;
        for (let c = 0; c < V; c++) {
          M = Math.max(M, Math.abs(z[row * V + c]! * inv));
          m = Math.max(m, z[row * V + c]! * inv);
        }
        const ls = Math.abs(-want[row * V]! + z[row * V]! * inv - m);
        let sAbs = 0, s = 0;
        for (let c = 0; c < V; c++) {
          sAbs += Math.abs(dlp[row * V + c]!);
          s += dlp[row * V + c]!;
        }
        for (let c = 0; c < V; c++) {
          const i = row * V + c, lp = want[i]!, p = Math.exp(lp);
          tF[i] = 1.01 * U * (V + 10 + 4 * EXP_ULPS + 8 * (M + ls + Math.abs(lp)));
          // Σ dlp (V + 1)·u·Σ|dlp|; e^lp (EXP_ULPS + |lp|)·u; the rest a few roundings of each term.
          tB[i] = 1.01 * U * ((V + EXP_ULPS + 8 + Math.abs(lp)) * (Math.abs(dlp[i]!) + p * Math.abs(s) + p * sAbs) * inv + 2 * Math.abs(dz0[i]!));
        }
      }
      expectWithin('logSoftmaxForward', `N${N} V${V}`, got, want, tF);
      const wZ = dz0.slice(), gZ = dz0.slice();
      logSoftmaxBackward(wZ, dlp, want, N, V, tau);
      simdLogSoftmaxBackward(gZ, dlp, want, N, V, tau);
      expectWithin('logSoftmaxBackward', `N${N} V${V}`, gZ, wZ, tB);
      // In place (out = logits), as the TS twin allows.
      const zz = z.slice();
      simdLogSoftmaxForward(zz, zz, N, V, tau);
      expect(zz).toEqual(got);
    });
  }

  // [B, T, NH, HS, pos0]: HS ≡ 2 mod 4 (the one-pair tail), HS = 2, an offset into the table, bench-sized.
  for (const [B, T, NH, HS, pos0] of [
    [1, 1, 1, 2, 0],
    [2, 5, 3, 6, 3],
    [3, 7, 2, 8, 0],
    [1, 4, 4, 10, 9],
    [64, 32, 4, 16, 0],
  ] as const) {
    const shape = `B${B} T${T} NH${NH} HS${HS} pos0 ${pos0}`;
    it(`ropeForward / ropeBackward ${shape}; in place`, () => {
      const r = rng();
      const n = B * T * NH * HS;
      const table = ropeTable(pos0 + T, HS) as Float32Array;
      const x = rand(n, r), dy = rand(n, r), d0 = rand(n, r);
      // Each output is one pair's 2-term dot product: f32 products and sum (3 roundings) against the
      // twin's f64 sum rounded once: 1.01·4u·(|x0 cos| + |x1 sin|); backward adds 2u·|init|.
      const mag = (v: Float32Array): Float64Array => {
        const m = new Float64Array(n);
        for (let row = 0; row < B * T; row++)
          for (let h = 0; h < NH; h++)
            for (let i = 0; i < HS; i += 2) {
              const o = (row * NH + h) * HS + i, tb = (pos0 + (row % T)) * HS + i;
              const a = Math.abs(v[o]! * table[tb]!) + Math.abs(v[o + 1]! * table[tb + 1]!);
              const b = Math.abs(v[o]! * table[tb + 1]!) + Math.abs(v[o + 1]! * table[tb]!);
              m[o] = 1.01 * 4 * U * a;
              m[o + 1] = 1.01 * 4 * U * b;
            }
        return m;
      };
      const want = new Float32Array(n), got = new Float32Array(n).fill(NaN);
      ropeForward(want, x, table, B, T, NH, HS, pos0);
      simdRopeForward(got, x, table, B, T, NH, HS, pos0);
      expectWithin('ropeForward', shape, got, want, mag(x));
      const inPlace = x.slice();
      simdRopeForward(inPlace, inPlace, table, B, T, NH, HS, pos0);
      expect(inPlace).toEqual(got);
      const wD = d0.slice(), gD = d0.slice();
      ropeBackward(wD, dy, table, B, T, NH, HS, pos0);
      simdRopeBackward(gD, dy, table, B, T, NH, HS, pos0);
      // backward swaps which of cos, sin meets which input; mag() of dy covers both orders.
      const mB = mag(dy), alt = new Float64Array(n);
      for (let i = 0; i < n; i += 2) [alt[i], alt[i + 1]] = [Math.max(mB[i]!, mB[i + 1]!), Math.max(mB[i]!, mB[i + 1]!)];
      expectWithin('ropeBackward', shape, gD, wD, alt.map((m, i) => m + 1.01 * 2 * U * Math.abs(d0[i]!)));
    });
  }

  for (const N of [1, 3, 4, 7, 2048 * 64 + 5]) {
    it(`residualForward / residualBackward N${N}: bit-equal at scale 1, within 2u|a| + 4u|s·b| at scale 0.3; aliasing`, () => {
      const r = rng();
      const a = rand(N, r), b = rand(N, r), d0 = rand(N, r), d1 = rand(N, r);
      const want = new Float32Array(N), got = new Float32Array(N).fill(NaN);
      residualForward(want, a, b, N);
      simdResidualForward(got, a, b, N);
      expect(got).toEqual(want);
      const s = 0.3; // not an f32: the kernel rounds it, and its product, once more than the twin
      const tol = (x: Float32Array, y: Float32Array): Float64Array => Float64Array.from(x, (xi, i) => 1.01 * U * (2 * Math.abs(xi) + 4 * Math.abs(s * y[i]!)));
      residualForward(want, a, b, N, s);
      simdResidualForward(got, a, b, N, s);
      expectWithin('residualForward (scale 0.3)', `N${N}`, got, want, tol(a, b));
      const inPlace = a.slice();
      simdResidualForward(inPlace, inPlace, b, N, s); // out = a
      expect(inPlace).toEqual(got);
      const [wA, wB, gA, gB] = [d0.slice(), d1.slice(), d0.slice(), d1.slice()];
      residualBackward(wA, wB, b, N, s);
      simdResidualBackward(gA, gB, b, N, s);
      expect(gA).toEqual(wA);
      expectWithin('residualBackward db (scale 0.3)', `N${N}`, gB, wB, tol(d1, b));
      const onlyB = d1.slice();
      simdResidualBackward(null, onlyB, b, N, s);
      expect(onlyB).toEqual(gB);
      const same = d0.slice(), sameWant = d0.slice(); // da and db the same array: both added
      residualBackward(sameWant, sameWant, b, N, 1);
      simdResidualBackward(same, same, b, N, 1);
      expect(same).toEqual(sameWant);
    });
  }

  it('short buffers and bad arguments throw the TS twins\u2019 RangeErrors; f64 arguments take the TS path bit for bit', () => {
    const f = (n: number): Float32Array => new Float32Array(n);
    expect(() => simdAttentionForward(f(11), f(8), f(12), f(12), f(12), 1, 2, 2, 3)).toThrow(/attentionForward: out has/);
    expect(() => simdAttentionForward(f(12), f(7), f(12), f(12), f(12), 1, 2, 2, 3)).toThrow(/attentionForward: att has/);
    expect(() => simdAttentionBackward(f(12), f(12), f(11), f(12), f(12), f(12), f(12), f(8), 1, 2, 2, 3)).toThrow(/attentionBackward: dv has/);
    expect(() => simdRmsnormForward(f(6), f(1), f(6), f(2), 1, 2, 3)).toThrow(/rmsnormForward: rstd has/);
    expect(() => simdRmsnormBackward(f(6), f(3), f(6), f(6), f(3), f(1), 1, 2, 3)).toThrow(/rmsnormBackward: rstd has/);
    expect(() => simdSwigluForward(f(4), f(3), f(4), 4)).toThrow(/swigluForward: a has/);
    expect(() => simdSwigluBackward(f(4), f(4), f(4), f(4), f(3), 4)).toThrow(/swigluBackward: b has/);
    expect(() => simdLogSoftmaxForward(f(4), f(4), 2, 2, 0)).toThrow(/temperature/);
    expect(() => simdLogSoftmaxBackward(f(4), f(3), f(4), 2, 2)).toThrow(/logSoftmaxBackward: dlogp has/);
    expect(() => simdSwigluForward(f(4), f(4), f(4), -1)).toThrow(/non-negative integer/);
    expect(() => simdResidualForward(f(4), f(3), f(4), 4)).toThrow(/residualForward: a has/);
    expect(() => simdResidualBackward(null, f(3), f(4), 4)).toThrow(/residualBackward: db has/);

    const r = rng();
    const [B, T, NH, HS] = [1, 5, 2, 3];
    const n = B * T * NH * HS;
    const q = Float64Array.from(rand(n, r)), k = Float64Array.from(rand(n, r)), v = Float64Array.from(rand(n, r));
    const o = [new Float64Array(n), new Float64Array(n)], att = [new Float64Array(NH * T * T), new Float64Array(NH * T * T)];
    attentionForward(o[0]!, att[0]!, q, k, v, B, T, NH, HS);
    simdAttentionForward(o[1]!, att[1]!, q, k, v, B, T, NH, HS);
    expect(o[1]).toEqual(o[0]);
    expect(att[1]).toEqual(att[0]);
    const s = [new Float64Array(n), new Float64Array(n)];
    swigluForward(s[0]!, q, k, n);
    simdSwigluForward(s[1]!, q, k, n);
    expect(s[1]).toEqual(s[0]);
  });
});

describe('cpuBackend uses the SIMD kernels', () => {
  it('dispatches the matmul family, attention and the row kernels to simd.ts; cpuBackendReference and cpuBackend64 keep the TS kernels', () => {
    expect(cpuBackend.matmulForward).toBe(simdMatmulForward);
    expect(cpuBackend.matmulBackward).toBe(simdMatmulBackward);
    expect(cpuBackend.matmulForwardQ8).toBe(simdMatmulForwardQ8);
    expect(cpuBackend.matmulBackwardInputQ4).toBe(simdMatmulBackwardInputQ4);
    const rows = [
      ['attentionForward', simdAttentionForward, attentionForward],
      ['attentionBackward', simdAttentionBackward, attentionBackward],
      ['attentionCachedForward', simdAttentionCachedForward, attentionCachedForward],
      ['rmsnormForward', simdRmsnormForward, rmsnormForward],
      ['rmsnormBackward', simdRmsnormBackward, rmsnormBackward],
      ['swigluForward', simdSwigluForward, swigluForward],
      ['swigluBackward', simdSwigluBackward, swigluBackward],
      ['logSoftmaxForward', simdLogSoftmaxForward, logSoftmaxForward],
      ['logSoftmaxBackward', simdLogSoftmaxBackward, logSoftmaxBackward],
      ['ropeForward', simdRopeForward, ropeForward],
      ['ropeBackward', simdRopeBackward, ropeBackward],
      ['residualForward', simdResidualForward, residualForward],
      ['residualBackward', simdResidualBackward, residualBackward],
    ] as const;
    for (const [name, simd] of rows) expect(cpuBackend[name], name).toBe(simd);
    for (const be of [cpuBackendReference, cpuBackend64]) {
      expect(be.matmulForward).toBe(matmulForward);
      expect(be.matmulBackward).toBe(matmulBackward);
      expect(be.matmulForwardQ8).toBe(matmulForwardQ8);
      for (const [name, , ts] of rows) expect(be[name], name).toBe(ts);
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
  it('a fresh simd.ts runs the TS twins bit for bit (matmuls, attention, row kernels), and says so once', async () => {
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
      // Attention and the row kernels, too.
      const [NH, HS] = [2, 3];
      const n = T * NH * HS;
      const q1 = rand(n, r), k1 = rand(n, r), v1 = rand(n, r);
      const o = [new Float32Array(n), new Float32Array(n)], att = [new Float32Array(NH * T * T), new Float32Array(NH * T * T)];
      attentionForward(o[0]!, att[0]!, q1, k1, v1, 1, T, NH, HS);
      fresh.simdAttentionForward(o[1]!, att[1]!, q1, k1, v1, 1, T, NH, HS);
      expect(o[1]).toEqual(o[0]);
      expect(att[1]).toEqual(att[0]);
      const g = [[q1.slice(), k1.slice(), v1.slice()], [q1.slice(), k1.slice(), v1.slice()]];
      attentionBackward(g[0]![0]!, g[0]![1]!, g[0]![2]!, v1, q1, k1, v1, att[0]!, 1, T, NH, HS);
      fresh.simdAttentionBackward(g[1]![0]!, g[1]![1]!, g[1]![2]!, v1, q1, k1, v1, att[0]!, 1, T, NH, HS);
      expect(g[1]).toEqual(g[0]);
      const sw = [new Float32Array(n), new Float32Array(n)], rs = [new Float32Array(T), new Float32Array(T)], ls = [new Float32Array(n), new Float32Array(n)];
      swigluForward(sw[0]!, q1, k1, n);
      fresh.simdSwigluForward(sw[1]!, q1, k1, n);
      rmsnormForward(sw[0]!, rs[0]!, q1, k1, 1, T, NH * HS);
      fresh.simdRmsnormForward(sw[1]!, rs[1]!, q1, k1, 1, T, NH * HS);
      logSoftmaxForward(ls[0]!, q1, T, NH * HS, 0.9);
      fresh.simdLogSoftmaxForward(ls[1]!, q1, T, NH * HS, 0.9);
      expect([sw[1], rs[1], ls[1]]).toEqual([sw[0], rs[0], ls[0]]);
      expect(fresh.simdAvailable()).toBe(false);
      expect(fresh.simdUnavailableReason()).toMatch(/SIMD/);
      expect(fresh.simdKernelCalls()).toBe(0);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toMatch(/using the TypeScript kernels/);
    } finally {
      validate.mockRestore();
      warn.mockRestore();
      vi.resetModules();
    }
  });
});

describe('the committed kernels artifact', () => {
  it(`${ARTIFACT} is a fresh build of wasm/kernels.ts, byte for byte (all three builds)`, async () => {
    const bytes = await buildKernels('plain');
    const shared = await buildKernels('shared');
    const relaxed = await buildKernels('relaxed');
    expect(Buffer.from(KERNELS_WASM_BASE64, 'base64').equals(Buffer.from(bytes))).toBe(true);
    expect(Buffer.from(KERNELS_WASM_SHARED_BASE64, 'base64').equals(Buffer.from(shared))).toBe(true);
    expect(Buffer.from(KERNELS_WASM_RELAXED_BASE64, 'base64').equals(Buffer.from(relaxed))).toBe(true);
    expect(readFileSync(ARTIFACT, 'utf8')).toBe(renderArtifact(bytes, shared, relaxed));
  });
});
