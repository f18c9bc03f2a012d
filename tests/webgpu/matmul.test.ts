/**
 * WebGPU vs CPU twin: dense matmul in every numbered variant (forward, dinp, dW — one dispatch
 * for both on v3 —, and with the
 * residual add folded in: matmulResidualForward), matmul from
 * int8 / int4 blocks (forward and input gradient), and the AdamW step — fresh random inputs,
 * odd sizes, NaN-poisoned outputs with a guard band (tests/webgpu/gpu.ts).
 *
 * Tolerances. A matmul output is a K-term dot product; f32 accumulation (GPU) vs one f64
 * accumulator rounded once (CPU) differs by at most ≈ K·u·Σ_k |a_k b_k| (u = 2⁻²⁴), so the
 * error of each element is measured against that scale — floor_ij = Σ_k |A_ik||B_kj| (+ the
 * accumulator's initial value for the backward products), computed by the CPU twin on |A|, |B|
 * — and the tolerance is 1e-5 (K ≤ 70 here: K·u ≈ 4e-6). AdamW is elementwise f32 but its
 * moments cancel (m = β1 m + (1−β1) g with g of either sign): the update θ_new − θ_old is
 * checked relative to lr (tolerance 1e-4: f32 m̂ after cancellation, and one rounding of θ,
 * ≈ 2⁻²³ for |θ| ≈ 1, i.e. 1.2e-5·lr at lr = 1e-2), m against (1−β1)·max|g| and v against
 * (1−β2)·max g² — one step's contribution — to 1e-5.
 *
 * Not here: the per-op objective kernels (objective.test.ts), sampling (sample.test.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { adamwStep } from '../../src/backend/cpu/adamw';
import { matmulBackward, matmulForward, matmulResidualForward } from '../../src/backend/cpu/matmul';
import { dequantizeQ4, dequantizeQ8, matmulBackwardInputQ4, matmulBackwardInputQ8, matmulForwardQ4, matmulForwardQ8 } from '../../src/backend/cpu/quant';
import * as G from '../../src/backend/webgpu/index';
import { f32ToF16 } from '../../src/core/f16';
import { Rng } from '../../src/core/rng';
import { absOf, gpu, poisoned, printTable, rand, readOut, record, runSeed } from './gpu';

const ctx = typeof gpu === 'string' ? null : gpu;
const seed = runSeed('matmul.test.ts');
const TOL = 1e-5;

describe.skipIf(ctx === null)(`WebGPU matmul / quantized matmul / AdamW (seed ${seed})`, () => {
  const c = ctx!;
  const rng = new Rng(seed, [2]);
  afterAll(() => printTable('matmul.test.ts'));

  for (const [B, T, C, OC] of [[7, 1, 13, 33], [2, 35, 45, 67], [1, 3, 1, 5]] as const) {
    const N = B * T;
    const shape = `N${N} C${C} OC${OC}`;
    for (const v of G.MATMUL_VARIANTS) {
      it(`matmul_${v} forward + backward ${shape}`, async () => {
        const inp = rand(rng, N * C);
        const w = rand(rng, OC * C);
        const dout = rand(rng, N * OC);
        const dinp0 = rand(rng, N * C);
        const dw0 = rand(rng, OC * C);

        const want = new Float32Array(N * OC);
        matmulForward(want, inp, w, B, T, C, OC);
        const scale = new Float32Array(N * OC);
        matmulForward(scale, absOf(inp), absOf(w), B, T, C, OC);
        const wantDinp = dinp0.slice();
        const wantDw = dw0.slice();
        matmulBackward(wantDinp, wantDw, dout, inp, w, B, T, C, OC);
        const sDinp = absOf(dinp0);
        const sDw = absOf(dw0);
        matmulBackward(sDinp, sDw, absOf(dout), absOf(inp), absOf(w), B, T, C, OC);

        const ti = c.upload('f32', inp);
        const tw = c.upload('f32', w);
        const td = c.upload('f32', dout);
        const out = poisoned(c, N * OC);
        const t0 = performance.now();
        G.matmulForward(c, out, ti, tw, B, T, C, OC, v);
        const got = await readOut(c, out, N * OC);
        const ms = performance.now() - t0;
        const dI = poisoned(c, N * C, dinp0);
        const dW = poisoned(c, OC * C, dw0);
        const cb = c.countsNow();
        G.matmulBackward(c, dI, dW, td, ti, tw, B, T, C, OC, v);
        expect(c.countsSince(cb).dispatches).toBe(v === 'v3' ? 1 : 2); // v3: both GEMMs in one dispatch
        const gotDinp = await readOut(c, dI, N * C);
        const gotDw = await readOut(c, dW, OC * C);
        expect(record(`matmul_${v} forward`, shape, got, want, scale, TOL, ms)).toBeLessThanOrEqual(TOL);
        expect(record(`matmul_${v} dinp`, shape, gotDinp, wantDinp, sDinp, TOL)).toBeLessThanOrEqual(TOL);
        expect(record(`matmul_${v} dW`, shape, gotDw, wantDw, sDw, TOL)).toBeLessThanOrEqual(TOL);

        // One gradient only: the other tensor must be untouched.
        const dI2 = poisoned(c, N * C, dinp0);
        G.matmulBackward(c, dI2, null, td, ti, tw, B, T, C, OC, v);
        expect(record(`matmul_${v} dinp only`, shape, await readOut(c, dI2, N * C), wantDinp, sDinp, TOL)).toBeLessThanOrEqual(TOL);
      });
    }
  }

  // The fused residual matmul (out = res + inp · Wᵀ): against its CPU twin (the composed pair,
  // floor Σ|inp||W| + |res| as for an accumulating product), and bit for bit against the GPU's own
  // unfused pair (matmulForward, then residualForward with scale 1: both round res + dot once).
  for (const [B, T, C, OC] of [[7, 1, 13, 33], [2, 35, 45, 67], [1, 3, 1, 5]] as const) {
    const N = B * T;
    const shape = `N${N} C${C} OC${OC}`;
    for (const v of G.MATMUL_VARIANTS) {
      it(`matmul_${v} + residual epilogue ${shape}`, async () => {
        const inp = rand(rng, N * C);
        const w = rand(rng, OC * C);
        const res = rand(rng, N * OC, -2, 2);
        const want = new Float32Array(N * OC);
        matmulResidualForward(want, inp, w, res, B, T, C, OC);
        const scale = new Float32Array(N * OC);
        matmulResidualForward(scale, absOf(inp), absOf(w), absOf(res), B, T, C, OC);
        const [ti, tw, tr] = [c.upload('f32', inp), c.upload('f32', w), c.upload('f32', res)];
        const out = poisoned(c, N * OC);
        const before = c.countsNow();
        G.matmulResidualForward(c, out, ti, tw, tr, B, T, C, OC, v);
        expect(c.countsSince(before).dispatches).toBe(1);
        const got = await readOut(c, out, N * OC);
        expect(record(`matmul_${v} + residual`, shape, got, want, scale, TOL)).toBeLessThanOrEqual(TOL);
        const proj = c.zeros('f32', N * OC);
        const sep = poisoned(c, N * OC);
        G.matmulForward(c, proj, ti, tw, B, T, C, OC, v);
        G.residualForward(c, sep, tr, proj, N * OC, 1);
        expect(Array.from(got)).toEqual(Array.from(await readOut(c, sep, N * OC)));
        expect(() => G.matmulResidualForward(c, tr, ti, tw, tr, B, T, C, OC, v)).toThrow(/share a buffer/);
      });
    }
  }

  /** Random Q8 / Q4 weights with f16 scales in [0.005, 0.05). */
  function quantWeights(OC: number, C: number): { q8: Int8Array; q4: Uint8Array; scales: Uint16Array } {
    const q8 = new Int8Array(OC * C);
    for (let i = 0; i < q8.length; i++) q8[i] = rng.int(255) - 127;
    const q4 = new Uint8Array((OC * C) / 2);
    for (let i = 0; i < q4.length; i++) q4[i] = rng.int(256);
    const scales = new Uint16Array((OC * C) / 32);
    for (let i = 0; i < scales.length; i++) scales[i] = f32ToF16(0.005 + 0.045 * rng.uniform());
    return { q8, q4, scales };
  }

  for (const [B, T, C, OC] of [[7, 1, 32, 13], [1, 5, 96, 37]] as const) {
    const N = B * T;
    const shape = `N${N} C${C} OC${OC}`;
    it(`matmul_q Q8 / Q4 forward + input gradient ${shape}`, async () => {
      const { q8, q4, scales } = quantWeights(OC, C);
      const inp = rand(rng, N * C);
      const dout = rand(rng, N * OC);
      const dinp0 = rand(rng, N * C);
      const tq8 = c.upload('i8', q8);
      const tq4 = c.upload('u8', q4);
      const ts = c.upload('u16', scales);
      const ti = c.upload('f32', inp);
      const td = c.upload('f32', dout);
      for (const bits of [8, 4] as const) {
        const W = bits === 8 ? dequantizeQ8(q8, scales, OC, C) : dequantizeQ4(q4, scales, OC, C);
        const want = new Float32Array(N * OC);
        if (bits === 8) matmulForwardQ8(want, inp, q8, scales, B, T, C, OC);
        else matmulForwardQ4(want, inp, q4, scales, B, T, C, OC);
        const scale = new Float32Array(N * OC);
        matmulForward(scale, absOf(inp), absOf(W), B, T, C, OC);
        const out = poisoned(c, N * OC);
        if (bits === 8) G.matmulForwardQ8(c, out, ti, tq8, ts, B, T, C, OC);
        else G.matmulForwardQ4(c, out, ti, tq4, ts, B, T, C, OC);
        expect(record(`matmul_q Q${bits} forward`, shape, await readOut(c, out, N * OC), want, scale, TOL)).toBeLessThanOrEqual(TOL);

        const wantD = dinp0.slice();
        if (bits === 8) matmulBackwardInputQ8(wantD, dout, q8, scales, B, T, C, OC);
        else matmulBackwardInputQ4(wantD, dout, q4, scales, B, T, C, OC);
        const sD = absOf(dinp0);
        matmulBackward(sD, null, absOf(dout), absOf(inp), absOf(W), B, T, C, OC);
        const dI = poisoned(c, N * C, dinp0);
        if (bits === 8) G.matmulBackwardInputQ8(c, dI, td, tq8, ts, B, T, C, OC);
        else G.matmulBackwardInputQ4(c, dI, td, tq4, ts, B, T, C, OC);
        expect(record(`matmul_q Q${bits} dinp`, shape, await readOut(c, dI, N * C), wantD, sD, TOL)).toBeLessThanOrEqual(TOL);
      }
    });
  }

  // Decoding: the forward of up to MATVEC_MAX_ROWS rows runs matvec.wgsl (a workgroup per 4 output
  // columns, a tree over C) — f32, Q8 and Q4, every row count, odd C and OC, overwriting and
  // accumulating; against the CPU twins.
  for (const [C, OC] of [[7, 1], [33, 9], [130, 203], [576, 37]] as const) {
    for (let N = 1; N <= G.MATVEC_MAX_ROWS; N++) {
      const shape = `N${N} C${C} OC${OC}`;
      it(`matvec f32 forward (and + residual) ${shape}`, async () => {
        const inp = rand(rng, N * C), w = rand(rng, OC * C), res = rand(rng, N * OC, -2, 2);
        const want = new Float32Array(N * OC), scale = new Float32Array(N * OC);
        matmulForward(want, inp, w, 1, N, C, OC);
        matmulForward(scale, absOf(inp), absOf(w), 1, N, C, OC);
        const [ti, tw, tr] = [c.upload('f32', inp), c.upload('f32', w), c.upload('f32', res)];
        const out = poisoned(c, N * OC);
        const before = c.countsNow();
        G.matmulForward(c, out, ti, tw, 1, N, C, OC);
        expect(c.countsSince(before).dispatches).toBe(1);
        expect(record('matvec f32', shape, await readOut(c, out, N * OC), want, scale, TOL)).toBeLessThanOrEqual(TOL);
        const wantR = new Float32Array(N * OC), scaleR = new Float32Array(N * OC);
        matmulResidualForward(wantR, inp, w, res, 1, N, C, OC);
        matmulResidualForward(scaleR, absOf(inp), absOf(w), absOf(res), 1, N, C, OC);
        const outR = poisoned(c, N * OC);
        G.matmulResidualForward(c, outR, ti, tw, tr, 1, N, C, OC);
        expect(record('matvec f32 + residual', shape, await readOut(c, outR, N * OC), wantR, scaleR, TOL)).toBeLessThanOrEqual(TOL);
      });
    }
  }
  for (const [C, OC] of [[32, 1], [96, 13], [576, 67]] as const) {
    for (const N of [1, 2, 4]) {
      const shape = `N${N} C${C} OC${OC}`;
      it(`matvec Q8 / Q4 forward ${shape}`, async () => {
        const { q8, q4, scales } = quantWeights(OC, C);
        const inp = rand(rng, N * C);
        const [ti, tq8, tq4, ts] = [c.upload('f32', inp), c.upload('i8', q8), c.upload('u8', q4), c.upload('u16', scales)];
        for (const bits of [8, 4] as const) {
          const W = bits === 8 ? dequantizeQ8(q8, scales, OC, C) : dequantizeQ4(q4, scales, OC, C);
          const want = new Float32Array(N * OC), scale = new Float32Array(N * OC);
          if (bits === 8) matmulForwardQ8(want, inp, q8, scales, 1, N, C, OC);
          else matmulForwardQ4(want, inp, q4, scales, 1, N, C, OC);
          matmulForward(scale, absOf(inp), absOf(W), 1, N, C, OC);
          const out = poisoned(c, N * OC);
          if (bits === 8) G.matmulForwardQ8(c, out, ti, tq8, ts, 1, N, C, OC);
          else G.matmulForwardQ4(c, out, ti, tq4, ts, 1, N, C, OC);
          expect(record(`matvec Q${bits}`, shape, await readOut(c, out, N * OC), want, scale, TOL)).toBeLessThanOrEqual(TOL);
        }
      });
    }
  }

  it('quantized matmul rejects C not a multiple of 32', () => {
    const t = c.zeros('f32', 64);
    expect(() => G.matmulForwardQ8(c, t, t, c.zeros('i8', 64), c.zeros('u16', 4), 1, 1, 20, 2)).toThrow(/multiple of 32/);
  });

  it('AdamW step (3 steps) n=1001', async () => {
    const n = 1001;
    const hp = { lr: 1e-2, beta1: 0.85, beta2: 0.995, eps: 1e-8, weightDecay: 0.1 };
    const p = rand(rng, n);
    const m = new Float32Array(n);
    const v = new Float32Array(n);
    const tp = c.upload('f32', p);
    const tm = c.upload('f32', m);
    const tv = c.upload('f32', v);
    let worstUpd = 0;
    let gMax = 0;
    for (let t = 1; t <= 3; t++) {
      const g = rand(rng, n);
      for (const x of g) gMax = Math.max(gMax, Math.abs(x));
      const before = p.slice();
      adamwStep(p, g, m, v, n, t, hp);
      G.adamwStep(c, tp, c.upload('f32', g), tm, tv, n, t, hp);
      const gp = await c.download('f32', tp);
      // The update itself, relative to lr (|update| ≲ lr·(1 + λ|θ|)).
      const du = new Float32Array(n).map((_, i) => gp[i]! - before[i]!);
      const want = new Float32Array(n).map((_, i) => p[i]! - before[i]!);
      worstUpd = Math.max(worstUpd, record(`adamw update (t=${t})`, `n${n}`, du, want, hp.lr, 1e-4));
    }
    expect(worstUpd).toBeLessThanOrEqual(1e-4);
    expect(record('adamw m', `n${n}`, await c.download('f32', tm), m, (1 - hp.beta1) * gMax, TOL)).toBeLessThanOrEqual(TOL);
    expect(record('adamw v', `n${n}`, await c.download('f32', tv), v, (1 - hp.beta2) * gMax * gMax, TOL)).toBeLessThanOrEqual(TOL);
  });

  it('a buffer over maxStorageBufferBindingSize fails with a message naming the limit', () => {
    const lim = c.device.limits.maxStorageBufferBindingSize;
    expect(() => G.checkBufferSize(c.device, lim + 4, 'weights')).toThrow(/maxStorageBufferBindingSize/);
    expect(() => c.zeros('f32', Math.floor(lim / 4) + 1)).toThrow(/maxStorageBufferBindingSize|maxBufferSize/);
  });
});
