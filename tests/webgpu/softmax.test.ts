/**
 * WebGPU vs CPU twin: log-softmax forward/backward, log-prob gather forward/backward, the fused
 * next-token chain (crossEntropy), exact per-state KL forward/backward (src/backend/cpu/softmax.ts),
 * on fresh random inputs.
 *
 * Tolerances (f32 GPU vs f64-internal CPU, u = 2⁻²⁴ ≈ 6e-8):
 *   - log-probs: |lp| is O(1–10); the error is that of z/τ − lse, a few u·|lse|: floor 1,
 *     tolerance 1e-5 relative;
 *   - gradients: each element is a difference of terms, so it can cancel to far below the terms'
 *     size; its error is measured against the size of those terms (a per-element floor, the
 *     condition scale): logSoftmaxBackward (|dlogp_v| + p_v Σ|dlogp|)/τ, klBackward dzp
 *     |dout| p_v (|lp_v| + |lq_v| + KL)/τ, dzq |dout| (p_v + q_v)/τ — plus the accumulator's
 *     initial value; tolerance 2e-5 (lse carries ~u·|lse| absolute error into every p);
 *   - KL: a sum of V terms p(lp − lq) ≥ 0 whose rounding is ~V·u·Σ|p(lp−lq)|; floor 1e-3
 *     (KL of random logits is O(0.1–1)), tolerance 1e-4.
 *
 * Not here: sampling (sample.test.ts), the clipped objective (objective.test.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { crossEntropy, gatherBackward, gatherForward, klBackward, klForward, logSoftmaxBackward, logSoftmaxForward } from '../../src/backend/cpu/softmax';
import * as G from '../../src/backend/webgpu/index';
import { Rng } from '../../src/core/rng';
import { gpu, poisoned, printTable, rand, randInt, readOut, record, runSeed } from './gpu';

const ctx = typeof gpu === 'string' ? null : gpu;
const seed = runSeed('softmax.test.ts');

/** Per-row p = softmax(z/τ) and lp = log p, in f64. */
function probs(z: Float32Array, N: number, V: number, tau: number): { p: Float64Array; lp: Float64Array } {
  const lp = new Float64Array(N * V);
  logSoftmaxForward(lp, z, N, V, tau);
  return { p: lp.map(Math.exp), lp };
}

describe.skipIf(ctx === null)(`WebGPU softmax / gather / KL (seed ${seed})`, () => {
  const c = ctx!;
  const rng = new Rng(seed, [1]);
  afterAll(() => printTable('softmax.test.ts'));

  for (const [N, V, tau] of [[7, 13, 1], [5, 131, 0.7], [3, 1000, 1.3]] as const) {
    it(`logSoftmaxForward / Backward N=${N} V=${V} τ=${tau}`, async () => {
      const z = rand(rng, N * V, -4, 4);
      const want = new Float32Array(N * V);
      logSoftmaxForward(want, z, N, V, tau);
      const zt = c.upload('f32', z);
      const out = poisoned(c, N * V);
      const t0 = performance.now();
      G.logSoftmaxForward(c, out, zt, N, V, tau);
      const got = await readOut(c, out, N * V);
      expect(record('logSoftmaxForward', `${N}x${V}`, got, want, 1, 1e-5, performance.now() - t0)).toBeLessThanOrEqual(1e-5);

      const dlogp = rand(rng, N * V);
      const init = rand(rng, N * V);
      const wantD = init.slice();
      logSoftmaxBackward(wantD, dlogp, want, N, V, tau);
      const dz = poisoned(c, N * V, init);
      G.logSoftmaxBackward(c, dz, c.upload('f32', dlogp), c.upload('f32', want), N, V, tau);
      const gotD = await readOut(c, dz, N * V);
      const { p } = probs(z, N, V, tau);
      const floor = new Float64Array(N * V);
      for (let n = 0; n < N; n++) {
        let sAbs = 0;
        for (let v = 0; v < V; v++) sAbs += Math.abs(dlogp[n * V + v]!);
        for (let v = 0; v < V; v++) {
          const i = n * V + v;
          floor[i] = Math.abs(init[i]!) + (Math.abs(dlogp[i]!) + p[i]! * sAbs) / tau;
        }
      }
      expect(record('logSoftmaxBackward', `${N}x${V}`, gotD, wantD, floor, 2e-5)).toBeLessThanOrEqual(2e-5);
    });
  }

  // The fused next-token chain (crossEntropy, one dispatch) against its CPU twin — the four ops
  // composed — with the tolerances of those ops: lrow is a log-prob (floor 1, 1e-5); dlogits
  // accumulates dout·(δ − p), whose terms are |init| + |dout|·(δ + p) (2e-5, as logSoftmaxBackward).
  for (const [N, V] of [[7, 13], [5, 131], [3, 1000], [33, 40]] as const) {
    it(`crossEntropy (fused logSoftmax → gather → backward) N=${N} V=${V}`, async () => {
      const z = rand(rng, N * V, -4, 4);
      const tg = randInt(rng, N, V);
      const dout = rand(rng, N);
      const init = rand(rng, N * V);
      const wantL = new Float32Array(N);
      const wantD = init.slice();
      crossEntropy(wantL, wantD, z, tg, dout, N, V);
      const [zt, tt, dt] = [c.upload('f32', z), c.upload('i32', tg), c.upload('f32', dout)];
      const lrow = poisoned(c, N);
      const dz = poisoned(c, N * V, init);
      const before = c.countsNow();
      G.crossEntropy(c, lrow, dz, zt, tt, dt, N, V);
      expect(c.countsSince(before).dispatches).toBe(1);
      const gotL = await readOut(c, lrow, N);
      const gotD = await readOut(c, dz, N * V);
      expect(record('crossEntropy lrow', `${N}x${V}`, gotL, wantL, 1, 1e-5)).toBeLessThanOrEqual(1e-5);
      const { p } = probs(z, N, V, 1);
      const floor = new Float64Array(N * V);
      for (let n = 0; n < N; n++) {
        for (let v = 0; v < V; v++) floor[n * V + v] = Math.abs(init[n * V + v]!) + Math.abs(dout[n]!) * ((v === tg[n] ? 1 : 0) + p[n * V + v]!);
      }
      expect(record('crossEntropy dlogits', `${N}x${V}`, gotD, wantD, floor, 2e-5)).toBeLessThanOrEqual(2e-5);
      // Without the gradient: lrow alone, dlogits untouched (null).
      const lrow2 = poisoned(c, N);
      G.crossEntropy(c, lrow2, null, zt, tt, null, N, V);
      expect(Array.from(await readOut(c, lrow2, N))).toEqual(Array.from(gotL));
      // The GPU's own unfused chain, for the record (same f32 expressions).
      const lp = c.zeros('f32', N * V);
      const dlp = c.zeros('f32', N * V);
      const l3 = poisoned(c, N);
      const d3 = poisoned(c, N * V, init);
      G.logSoftmaxForward(c, lp, zt, N, V, 1);
      G.gatherForward(c, l3, lp, tt, N, V);
      G.gatherBackward(c, dlp, dt, tt, N, V);
      G.logSoftmaxBackward(c, d3, dlp, lp, N, V, 1);
      record('crossEntropy vs unfused GPU chain: lrow', `${N}x${V}`, gotL, await readOut(c, l3, N), 1, Infinity);
      record('crossEntropy vs unfused GPU chain: dlogits', `${N}x${V}`, gotD, await readOut(c, d3, N * V), floor, Infinity);
    });
  }

  it('gatherForward / Backward N=37 V=29', async () => {
    const N = 37;
    const V = 29;
    const lp = rand(rng, N * V, -6, -0.01);
    const tg = randInt(rng, N, V);
    const want = new Float32Array(N);
    gatherForward(want, lp, tg, N, V);
    const out = poisoned(c, N);
    const tt = c.upload('i32', tg);
    G.gatherForward(c, out, c.upload('f32', lp), tt, N, V);
    expect(record('gatherForward', `${N}x${V}`, await readOut(c, out, N), want, 1e-30, 0)).toBe(0);

    const dout = rand(rng, N);
    const init = rand(rng, N * V);
    const wantD = init.slice();
    gatherBackward(wantD, dout, tg, N, V);
    const d = poisoned(c, N * V, init);
    G.gatherBackward(c, d, c.upload('f32', dout), tt, N, V);
    expect(record('gatherBackward', `${N}x${V}`, await readOut(c, d, N * V), wantD, 1e-3, 1e-6)).toBeLessThanOrEqual(1e-6);
  });

  for (const [N, V, tau] of [[7, 13, 1], [6, 257, 0.8]] as const) {
    it(`klForward / klBackward N=${N} V=${V} τ=${tau}`, async () => {
      const zp = rand(rng, N * V, -3, 3);
      const zq = rand(rng, N * V, -3, 3);
      const want = new Float32Array(N);
      klForward(want, zp, zq, N, V, tau);
      const pt = c.upload('f32', zp);
      const qt = c.upload('f32', zq);
      const out = poisoned(c, N);
      G.klForward(c, out, pt, qt, N, V, tau);
      expect(record('klForward', `${N}x${V}`, await readOut(c, out, N), want, 1e-3, 1e-4)).toBeLessThanOrEqual(1e-4);

      const dout = rand(rng, N);
      const initP = rand(rng, N * V, -0.01, 0.01);
      const initQ = rand(rng, N * V, -0.01, 0.01);
      const wantP = initP.slice();
      const wantQ = initQ.slice();
      klBackward(wantP, wantQ, dout, zp, zq, N, V, tau);
      const dP = poisoned(c, N * V, initP);
      const dQ = poisoned(c, N * V, initQ);
      G.klBackward(c, dP, dQ, c.upload('f32', dout), pt, qt, N, V, tau);
      const gotP = await readOut(c, dP, N * V);
      const gotQ = await readOut(c, dQ, N * V);
      const P = probs(zp, N, V, tau);
      const Q = probs(zq, N, V, tau);
      const floorP = new Float64Array(N * V);
      const floorQ = new Float64Array(N * V);
      for (let i = 0; i < N * V; i++) {
        const n = Math.floor(i / V);
        const g = Math.abs(dout[n]!) / tau;
        floorP[i] = Math.abs(initP[i]!) + g * P.p[i]! * (Math.abs(P.lp[i]!) + Math.abs(Q.lp[i]!) + want[n]!);
        floorQ[i] = Math.abs(initQ[i]!) + g * (P.p[i]! + Q.p[i]!);
      }
      expect(record('klBackward dP', `${N}x${V}`, gotP, wantP, floorP, 2e-5)).toBeLessThanOrEqual(2e-5);
      expect(record('klBackward dQ', `${N}x${V}`, gotQ, wantQ, floorQ, 2e-5)).toBeLessThanOrEqual(2e-5);

      // One side only (the other passed as null).
      const wantP2 = initP.slice();
      klBackward(wantP2, null, dout, zp, zq, N, V, tau);
      const dP2 = poisoned(c, N * V, initP);
      G.klBackward(c, dP2, null, c.upload('f32', dout), pt, qt, N, V, tau);
      expect(record('klBackward dP only', `${N}x${V}`, await readOut(c, dP2, N * V), wantP2, floorP, 2e-5)).toBeLessThanOrEqual(2e-5);
    });
  }
});
