/**
 * WebGPU vs CPU twin: the clipped objective's gradient w.r.t. the logits, with the exact KL
 * penalty (clippedLossBackward, src/backend/cpu/objective.ts), at sequence level and at token
 * level with each aggregation (GRPO, BNPO, Dr.GRPO), on random logits whose log-ratios spread
 * well past the clip band (so both branches occur), random advantages of both signs, random
 * weights, episodes with and without steps.
 *
 * Tolerances. dlogits: each element c_k (1[v=a] − p_v) − (β/K) p_v (lp − lq − KL) mixes terms
 * that can cancel; its error is measured against the size of those terms plus the accumulator's
 * initial value (per-element floor) — tolerance 2e-5 (the f32 log-sum-exp carries ~u·|lse|
 * into every p, and c_k carries the f32 rounding of exp(u_e) for a sum of up to K/N log-ratios).
 * Statistics are sums whose terms cancel (advantages of both signs; p (lp − lq) of both signs),
 * so each is measured against the size of its terms, tolerance 1e-5: surrogate against
 * Σ |w min(r Ã, clip(r) Ã)| / norm (the magnitudes of its terms), klMean against
 * mean_k Σ_v p_v (|lp_v| + |lq_v|), the objective against the larger of the two (× β for KL);
 * clipfrac exact (a clip decision flips only within f32 rounding of 1 ± ε: not expected).
 *
 * Not here: the objective's maths against an independent f64 statement (tests/objective.test.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { clippedLossBackward } from '../../src/backend/cpu/objective';
import { logSoftmaxForward } from '../../src/backend/cpu/softmax';
import type { ClippedLossSpec } from '../../src/backend/types';
import * as G from '../../src/backend/webgpu/index';
import { Rng } from '../../src/core/rng';
import { gpu, poisoned, printTable, rand, randInt, readOut, record, runSeed } from './gpu';

const ctx = typeof gpu === 'string' ? null : gpu;
const seed = runSeed('objective.test.ts');

describe.skipIf(ctx === null)(`WebGPU clipped objective gradient (seed ${seed})`, () => {
  const c = ctx!;
  const rng = new Rng(seed, [4]);
  afterAll(() => printTable('objective.test.ts'));

  const specs: ClippedLossSpec[] = [
    { level: 'sequence', tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.28, beta: 0.05 },
    { level: 'token', tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.28, beta: 0.05 },
    { level: 'token', tokenAgg: 'bnpo', epsLow: 0.1, epsHigh: 0.3, beta: 0.2 },
    { level: 'token', tokenAgg: 'dr_grpo', epsLow: 0.25, epsHigh: 0.25, beta: 0 },
  ];
  for (const [K, V, N, tau] of [[23, 13, 6, 0.8], [41, 67, 9, 1]] as const) {
    for (const spec of specs) {
      const name = `${spec.level}${spec.level === 'token' ? `/${spec.tokenAgg}` : ''}`;
      it(`clippedLossBackward ${name} K=${K} V=${V} N=${N} τ=${tau}`, async () => {
        const zr = rand(rng, K * V, -2, 2);
        const noise = rand(rng, K * V, -0.5, 0.5);
        const zt = zr.map((x, i) => x + noise[i]!);
        const actions = randInt(rng, K, V);
        const episodeOf = randInt(rng, K, N - 1); // episode N−1 has no steps
        const adv = rand(rng, N, -1.5, 1.5);
        // Episode 0: actions made much likelier under θ and a positive advantage, so that its
        // ratio leaves the band on the side Ã favours — the clipped branch occurs in every case.
        episodeOf[0] = 0;
        for (let k = 0; k < K; k++) if (episodeOf[k] === 0) zt[k * V + actions[k]!]! += 2;
        adv[0] = Math.abs(adv[0]!) + 0.1;
        const weight = rand(rng, N, 0.2, 1.5);
        const horizon = 7;
        const scale = -1;
        const init = rand(rng, K * V, -1e-3, 1e-3);

        const want = init.slice();
        const wantStats = new Float64Array(4);
        const res = clippedLossBackward(want, wantStats, zt, zr, actions, episodeOf, adv, weight, K, V, N, horizon, tau, spec, scale);

        const d = poisoned(c, K * V, init);
        const st = poisoned(c, 4);
        const t0 = performance.now();
        G.clippedLossBackward(c, d, st, c.upload('f32', zt), c.upload('f32', zr), c.upload('i32', actions), c.upload('i32', episodeOf), c.upload('f32', adv), c.upload('f32', weight), K, V, N, horizon, tau, spec, scale);
        const got = await readOut(c, d, K * V);
        const ms = performance.now() - t0;
        const gotStats = await readOut(c, st, 4);

        // Per-element floor: the size of the terms of the header's formula (f64).
        const lp = new Float64Array(K * V);
        const lq = new Float64Array(K * V);
        logSoftmaxForward(lp, zt, K, V, tau);
        logSoftmaxForward(lq, zr, K, V, tau);
        const kb = spec.beta / K;
        const floor = new Float64Array(K * V);
        let klTerms = 0;
        for (let i = 0; i < K * V; i++) klTerms += (Math.exp(lp[i]!) * (Math.abs(lp[i]!) + Math.abs(lq[i]!))) / K;
        // Size of the surrogate's terms: Σ |w min(r Ã, clip(r) Ã)| / norm.
        const uStep = Array.from({ length: K }, (_, k) => lp[k * V + actions[k]!]! - lq[k * V + actions[k]!]!);
        const steps = new Array<number>(N).fill(0);
        const uEp = new Array<number>(N).fill(0);
        for (let k = 0; k < K; k++) {
          steps[episodeOf[k]!]! += 1;
          uEp[episodeOf[k]!]! += uStep[k]!;
        }
        const logLo = Math.log(1 - spec.epsLow);
        const logHi = Math.log(1 + spec.epsHigh);
        const mag = (u: number, e: number) => weight[e]! * Math.abs(Math.min(Math.exp(u) * adv[e]!, Math.exp(Math.min(logHi, Math.max(logLo, u))) * adv[e]!));
        let surTerms = 0;
        // |c_k| ≤ w r |Ã| / norm (the unclipped branch's ∂/∂u) for the step's ratio r.
        const cAbs = new Float64Array(K);
        if (spec.level === 'sequence') {
          for (let e = 0; e < N; e++) surTerms += mag(uEp[e]!, e) / N;
          for (let k = 0; k < K; k++) {
            const e = episodeOf[k]!;
            cAbs[k] = (weight[e]! * Math.exp(uEp[e]!) * Math.abs(adv[e]!)) / N;
          }
        } else {
          for (let k = 0; k < K; k++) {
            const e = episodeOf[k]!;
            const norm = spec.tokenAgg === 'grpo' ? N * steps[e]! : spec.tokenAgg === 'bnpo' ? K : N * horizon;
            surTerms += mag(uStep[k]!, e) / norm;
            cAbs[k] = (weight[e]! * Math.exp(uStep[k]!) * Math.abs(adv[e]!)) / norm;
          }
        }
        for (let k = 0; k < K; k++) {
          let kl = 0;
          for (let v = 0; v < V; v++) kl += Math.exp(lp[k * V + v]!) * (lp[k * V + v]! - lq[k * V + v]!);
          for (let v = 0; v < V; v++) {
            const i = k * V + v;
            const p = Math.exp(lp[i]!);
            floor[i] = Math.abs(init[i]!) + (Math.abs(scale) / tau) * (cAbs[k]! * ((v === actions[k] ? 1 : 0) + p) + kb * p * (Math.abs(lp[i]!) + Math.abs(lq[i]!) + kl));
          }
        }
        const shape = `${name} K${K} V${V} N${N}`;
        expect(record('clippedLossBackward dlogits', shape, got, want, floor, 2e-5, ms)).toBeLessThanOrEqual(2e-5);
        expect(record('clippedLoss objective', shape, [gotStats[0]!], [res.objective], Math.max(surTerms, spec.beta * klTerms), 1e-5)).toBeLessThanOrEqual(1e-5);
        expect(record('clippedLoss surrogate', shape, [gotStats[1]!], [res.surrogate], surTerms, 1e-5)).toBeLessThanOrEqual(1e-5);
        expect(record('clippedLoss klMean', shape, [gotStats[2]!], [res.klMean], klTerms, 1e-5)).toBeLessThanOrEqual(1e-5);
        expect(record('clippedLoss clipfrac', shape, [gotStats[3]!], [res.clipfrac], 1e-2, 1e-6)).toBeLessThanOrEqual(1e-6);
        expect(res.clipfrac).toBeGreaterThan(0); // both branches exercised
      });
    }
  }
});
