/**
 * Tests for the per-agent objective of docs/method.md §5 (src/backend/cpu/objective.ts →
 * `clippedLossBackward`, the one implementation every agent uses) and the sequence-aware
 * advantages of docs/method.md §4 (src/sat/advantages.ts).
 *
 * Advantages: group normalisation (population std, ε = 1e-8) against values computed by hand in
 * this file, the all-equal group giving 0 (not NaN), the 'batch' and 'none' modes and the weighted
 * version by hand, clipping |Ã| ≤ A_clip on heavy-tailed random rewards, and predecessorLogRatios
 * on a hand-made batch.
 *
 * Objective: `clippedLossBackward` runs on the log-probs lpTheta and lpRef as its logits (τ = 1;
 * log-probs are valid logits, and its gradient w.r.t. them is the one w.r.t. the logits z behind
 * them). Its value equals an independent implementation of the formula
 * (tests/helpers/objectiveRef.ts), and its gradient matches central finite differences of that
 * formula with respect to the logits z (z → log-softmax → lpTheta), on random inputs away from
 * the clip kinks, for the sequence level and every token aggregation, with β > 0 (max relative
 * error printed; tolerance 1e-6). The clipped branch: far outside the band on the side Ã favours the
 * episode's gradient is exactly zero, on the other side it is not; clipfrac by hand. At
 * lpTheta == lpRef the ratio is exactly 1: u is exactly 0, the objective is exactly the mean of
 * w·Ã and the KL exactly 0.
 *
 * Random inputs use fixed seeds (Rng(2025, …), stated at each use).
 */

import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { clippedLossBackward } from '../src/backend/cpu/objective';
import type { ClippedLossStats } from '../src/backend/types';
import { ADV_EPS, groupAdvantages, predecessorLogRatios } from '../src/sat/advantages';
import type { Batch, ObjectiveSpec } from '../src/sat/types';
import { logSoftmaxRows, objectiveRef } from './helpers/objectiveRef';

// ---------------------------------------------------------------------------------------------
// Helpers (plain Math, independent of the code under test, except `objectiveGrad`, which calls it)
// ---------------------------------------------------------------------------------------------

const spec = (over: Partial<ObjectiveSpec> = {}): ObjectiveSpec => ({
  level: 'sequence',
  tokenAgg: 'grpo',
  epsLow: 0.2,
  epsHigh: 0.2,
  beta: 0.3,
  lr: 0.1,
  weightDecay: 0,
  ...over,
});

interface Problem {
  K: number;
  V: number;
  N: number;
  /** Logits of π_θ at each step, [K × V]. */
  z: Float64Array;
  lpRef: Float64Array;
  actions: Int32Array;
  episodeOf: Int32Array;
  adv: Float64Array;
  weight: Float64Array;
  horizon: number;
}

/**
 * The kernel under test, on lpTheta and lpRef as logits (τ = 1), into g (zeroed first: the kernel
 * accumulates), scale +1 (∂L/∂z, the ascent direction).
 */
function objectiveGrad(p: Problem, lpTheta: Float64Array, s: ObjectiveSpec, g: Float64Array): ClippedLossStats {
  g.fill(0);
  return clippedLossBackward(g, null, lpTheta, p.lpRef, p.actions, p.episodeOf, p.adv, p.weight, p.K, p.V, p.N, p.horizon, 1, s, 1);
}

/**
 * The sequence log-ratios u_e = Σ_k (log π_θ − log π_cur) of the action taken, per episode.
 */
function sequenceLogRatios(K: number, V: number, N: number, lpTheta: Float64Array, lpRef: Float64Array, actions: Int32Array, episodeOf: Int32Array): Float64Array {
  const u = new Float64Array(N);
  for (let k = 0; k < K; k++) {
    const a = actions[k]!;
    u[episodeOf[k]!]! += lpTheta[k * V + a]! - lpRef[k * V + a]!;
  }
  return u;
}

/** A random problem: π_θ near π_cur (some ratios outside the band), mixed-sign advantages. */
function randomProblem(rng: Rng): Problem {
  const V = 2 + rng.int(5);
  const N = 2 + rng.int(6);
  const K = 1 + rng.int(10);
  const zRef = Float64Array.from({ length: K * V }, () => 1.5 * rng.normal());
  const z = Float64Array.from(zRef, (x) => x + 0.35 * rng.normal());
  const actions = Int32Array.from({ length: K }, () => rng.int(V));
  const episodeOf = Int32Array.from({ length: K }, () => rng.int(N));
  const adv = Float64Array.from({ length: N }, () => 2 * rng.normal());
  const weight = Float64Array.from({ length: N }, () => 0.2 + 1.5 * rng.uniform());
  return { K, V, N, z, lpRef: logSoftmaxRows(zRef, V), actions, episodeOf, adv, weight, horizon: 1 + rng.int(4) + Math.ceil(K / N) };
}

/** Smallest distance of any log-ratio the objective clips (per episode or per step) from a kink. */
function kinkMargin(p: Problem, s: ObjectiveSpec): number {
  const lp = logSoftmaxRows(p.z, p.V);
  const kinks = [Math.log(1 - s.epsLow), Math.log(1 + s.epsHigh)];
  let us: number[];
  const stepU = Array.from({ length: p.K }, (_, k) => lp[k * p.V + p.actions[k]!]! - p.lpRef[k * p.V + p.actions[k]!]!);
  if (s.level === 'sequence') {
    us = new Array<number>(p.N).fill(0);
    stepU.forEach((u, k) => (us[p.episodeOf[k]!]! += u));
  } else us = stepU;
  return Math.min(...us.flatMap((u) => kinks.map((c) => Math.abs(u - c))));
}

// ---------------------------------------------------------------------------------------------
// Advantages (docs/method.md §4)
// ---------------------------------------------------------------------------------------------

describe('groupAdvantages', () => {
  const rewards = [1, 0, 0, 1, 3, 3, 3, 3];

  it("'group': (R − group mean)/(population std + 1e-8); an all-equal group gives 0, not NaN", () => {
    // Group 0: mean 1/2, population std √((4·¼)/4) = 1/2. Group 1: mean 3, std 0.
    const a = groupAdvantages(rewards, 2, 4, 'group', 5);
    const s = 0.5 / (0.5 + 1e-8);
    const expected = [s, -s, -s, s, 0, 0, 0, 0];
    for (let e = 0; e < 8; e++) expect(a.norm[e]).toBeCloseTo(expected[e]!, 15);
    expect(Array.from(a.raw)).toEqual([0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0]);
    expect(a.norm.every((x) => Number.isFinite(x))).toBe(true);
    for (let e = 4; e < 8; e++) expect(a.norm[e]).toBe(0);
    // Population, not sample, std: with the sample std (√(1/3)) the values would be ±0.866.
    expect(Math.abs(a.norm[0]! - 0.5 / Math.sqrt(1 / 3))).toBeGreaterThan(0.1);
    expect(ADV_EPS).toBe(1e-8);
  });

  it("'group' on a hand example with unequal spread: rewards [2, 4, 4, 4, 5, 5, 7, 9] in one group", () => {
    // mean 5, population variance (9+1+1+1+0+0+4+16)/8 = 4, std 2.
    const a = groupAdvantages([2, 4, 4, 4, 5, 5, 7, 9], 1, 8, 'group', 5);
    const expected = [-3, -1, -1, -1, 0, 0, 2, 4].map((d) => d / (2 + 1e-8));
    for (let e = 0; e < 8; e++) expect(a.norm[e]).toBeCloseTo(expected[e]!, 14);
  });

  it("'batch': group mean, one std over the whole batch", () => {
    // raw = [½, −½, −½, ½, 0, 0, 0, 0]; batch population std = √(4·¼ / 8) = √(1/8).
    const a = groupAdvantages(rewards, 2, 4, 'batch', 5);
    const s = 0.5 / (Math.sqrt(1 / 8) + 1e-8);
    const expected = [s, -s, -s, s, 0, 0, 0, 0];
    for (let e = 0; e < 8; e++) expect(a.norm[e]).toBeCloseTo(expected[e]!, 14);
  });

  it("'none': R − group mean, no scaling (Dr.GRPO); still clipped", () => {
    const a = groupAdvantages([10, 0, 2, 4], 2, 2, 'none', 5);
    // group 0: mean 5 → [5, −5]; group 1: mean 3 → [−1, 1].
    expect(Array.from(a.norm)).toEqual([5, -5, -1, 1]);
    const b = groupAdvantages([10, 0, 2, 4], 2, 2, 'none', 2);
    expect(Array.from(b.norm)).toEqual([2, -2, -1, 1]);
    expect(Array.from(b.raw)).toEqual([5, -5, -1, 1]); // raw is never clipped
  });

  it('weighted: μ and σ are w-weighted (truncated-IS), by hand', () => {
    // R = [1, 0, 2, 5], w = [1, 1, 2, 0]: μ = (1 + 0 + 4 + 0)/4 = 1.25;
    // σ² = (1·0.0625 + 1·1.5625 + 2·0.5625 + 0)/4 = 0.6875.
    const a = groupAdvantages([1, 0, 2, 5], 1, 4, 'group', 5, [1, 1, 2, 0]);
    const sd = Math.sqrt(0.6875);
    const expectedRaw = [-0.25, -1.25, 0.75, 3.75];
    for (let e = 0; e < 4; e++) {
      expect(a.raw[e]).toBeCloseTo(expectedRaw[e]!, 15);
      expect(a.norm[e]).toBeCloseTo(expectedRaw[e]! / (sd + 1e-8), 14);
    }
    // Weighted batch std: Σ w raw² / Σ w over the batch, here the same single group.
    const b = groupAdvantages([1, 0, 2, 5], 1, 4, 'batch', 5, [1, 1, 2, 0]);
    for (let e = 0; e < 4; e++) expect(b.norm[e]).toBeCloseTo(expectedRaw[e]! / (sd + 1e-8), 14);
    // All-one weights are the unweighted case.
    const c = groupAdvantages(rewards, 2, 4, 'group', 5, new Array<number>(8).fill(1));
    const d = groupAdvantages(rewards, 2, 4, 'group', 5);
    expect(Array.from(c.norm)).toEqual(Array.from(d.norm));
  });

  it('a group whose weights are all zero stays finite and leaves the other groups alone', () => {
    // Group 1: R = [3, 4], w = [1, 1]: mean 3.5, std 0.5.
    const a = groupAdvantages([1, 2, 3, 4], 2, 2, 'group', 5, [0, 0, 1, 1]);
    expect(a.norm.every((x) => Number.isFinite(x))).toBe(true);
    expect(a.raw.every((x) => Number.isFinite(x))).toBe(true);
    expect(a.norm[2]).toBeCloseTo(-0.5 / (0.5 + 1e-8), 14);
    expect(a.norm[3]).toBeCloseTo(0.5 / (0.5 + 1e-8), 14);
  });

  it('clips |Ã| ≤ A_clip on heavy-tailed random rewards (seed 2025), leaving the rest exact', () => {
    const rng = new Rng(2025, [1]);
    let clipped = 0;
    let total = 0;
    for (let t = 0; t < 200; t++) {
      const G = [2, 8, 64][t % 3]!;
      const B = 1 + rng.int(4);
      const aClip = 0.5 + 4.5 * rng.uniform();
      const norm = (['group', 'batch', 'none'] as const)[t % 3 === 0 ? 2 : rng.int(3)]!;
      // Cauchy rewards (heavy tails), sometimes with ties.
      const R = Array.from({ length: B * G }, () => (rng.uniform() < 0.2 ? 1 : Math.tan(Math.PI * (rng.uniform() - 0.5))));
      const a = groupAdvantages(R, B, G, norm, aClip);
      // Independent unclipped value.
      let batchVar = 0;
      const raw: number[] = [];
      const sds: number[] = [];
      for (let g = 0; g < B; g++) {
        const xs = R.slice(g * G, (g + 1) * G);
        const mu = xs.reduce((x, y) => x + y, 0) / G;
        sds.push(Math.sqrt(xs.reduce((x, y) => x + (y - mu) ** 2, 0) / G));
        for (const x of xs) raw.push(x - mu);
      }
      for (const r of raw) batchVar += r * r;
      const batchSd = Math.sqrt(batchVar / (B * G));
      for (let e = 0; e < B * G; e++) {
        total++;
        const scale = norm === 'group' ? sds[Math.floor(e / G)]! + 1e-8 : norm === 'batch' ? batchSd + 1e-8 : 1;
        const un = raw[e]! / scale;
        const x = a.norm[e]!;
        expect(Math.abs(x)).toBeLessThanOrEqual(aClip);
        if (Math.abs(un) > aClip) {
          clipped++;
          expect(x).toBe(Math.sign(un) * aClip);
        } else expect(x).toBeCloseTo(un, 9);
      }
    }
    expect(clipped).toBeGreaterThan(50); // the bound was really exercised
    expect(clipped).toBeLessThan(total);
  });

  it('rejects a reward count that is not groups × G', () => {
    expect(() => groupAdvantages([1, 2, 3], 2, 2, 'group', 5)).toThrow(RangeError);
  });
});

describe('predecessorLogRatios', () => {
  it('sums log ρ (logM) and log min(1, ρ) (logW) over the predecessors’ steps, by hand', () => {
    const turn = (agent: number, t: number, logp: number) => ({ agent, t, obs: 0, action: 0, logp });
    const batch: Batch = {
      groups: 1,
      groupSize: 2,
      episodes: [
        { prompt: 0, slot: 0, group: 0, reward: 1, turns: [turn(0, 0, -1.0), turn(1, 1, -0.5), turn(2, 2, -2.0), turn(0, 3, -0.3)] },
        { prompt: 0, slot: 0, group: 0, reward: 0, turns: [turn(1, 0, -0.7), turn(2, 1, -0.1)] },
      ],
    };
    // Predecessors 0 and 2. Agent 0's steps in batch order: ep0 t0, ep0 t3. Agent 2's: ep0 t2, ep1 t1.
    const now = new Map<number, Float64Array>([
      [0, Float64Array.from([-0.8, -0.5])], // log ρ: +0.2, −0.2
      [2, Float64Array.from([-2.5, -0.05])], // log ρ: −0.5, +0.05
    ]);
    const { logM, logW } = predecessorLogRatios(batch, [0, 2], now);
    expect(logM[0]).toBeCloseTo(0.2 - 0.5 - 0.2, 14);
    expect(logW[0]).toBeCloseTo(0 - 0.5 - 0.2, 14);
    expect(logM[1]).toBeCloseTo(0.05, 14);
    expect(logW[1]).toBe(0);
    // No predecessors (the first agent of the order): weight 1 for everyone.
    const none = predecessorLogRatios(batch, [], now);
    expect(Array.from(none.logM)).toEqual([0, 0]);
    expect(Array.from(none.logW)).toEqual([0, 0]);
  });
});

// ---------------------------------------------------------------------------------------------
// The objective (docs/method.md §5)
// ---------------------------------------------------------------------------------------------

const VARIANTS: ObjectiveSpec[] = [
  spec({ level: 'sequence' }),
  spec({ level: 'token', tokenAgg: 'grpo' }),
  spec({ level: 'token', tokenAgg: 'bnpo' }),
  spec({ level: 'token', tokenAgg: 'dr_grpo' }),
  spec({ level: 'sequence', epsLow: 0.1, epsHigh: 0.28, beta: 2 }),
  spec({ level: 'token', tokenAgg: 'grpo', epsLow: 0.3, epsHigh: 0.05, beta: 0.01 }),
];

describe('clippedLossBackward: value and gradient', () => {
  it.each(VARIANTS.map((s) => [`${s.level === 'sequence' ? 'sequence' : `token/${s.tokenAgg}`} ε=(${s.epsLow},${s.epsHigh}) β=${s.beta}`, s] as const))(
    '%s: value equals the formula and the gradient matches central finite differences (seed 2025)',
    (_name, s) => {
      const rng = new Rng(2025, [2, VARIANTS.indexOf(s)]);
      const h = 1e-6;
      let maxRel = 0;
      let cases = 0;
      let clippedTerms = 0;
      let terms = 0;
      while (cases < 40) {
        const p = randomProblem(rng);
        if (kinkMargin(p, s) < 1e-3) continue; // away from the kinks of min/clip
        cases++;
        const lpTheta = logSoftmaxRows(p.z, p.V);
        const g = new Float64Array(p.K * p.V);
        const val = objectiveGrad(p, lpTheta, s, g);
        // The value: the code's objective equals the formula written in this file.
        const ref = objectiveRef(p, p.z, s);
        expect(Math.abs(val.objective - ref)).toBeLessThanOrEqual(1e-12 * (1 + Math.abs(ref)));
        expect(val.objective).toBeCloseTo(val.surrogate - s.beta * val.klMean, 14);
        clippedTerms += val.clipfrac;
        terms++;
        // The gradient, against central differences of the formula.
        const zp = p.z.slice();
        let gMax = 0;
        let errMax = 0;
        for (let i = 0; i < zp.length; i++) {
          const z0 = zp[i]!;
          zp[i] = z0 + h;
          const fp = objectiveRef(p, zp, s);
          zp[i] = z0 - h;
          const fm = objectiveRef(p, zp, s);
          zp[i] = z0;
          const fd = (fp - fm) / (2 * h);
          gMax = Math.max(gMax, Math.abs(g[i]!), Math.abs(fd));
          errMax = Math.max(errMax, Math.abs(g[i]! - fd));
        }
        if (gMax > 0) maxRel = Math.max(maxRel, errMax / gMax);
      }
      console.info(`[FD] ${_name}: max relative error ${maxRel.toExponential(2)} over ${cases} random cases`);
      expect(maxRel).toBeLessThan(1e-6);
      // The cases really mixed clipped and unclipped terms.
      expect(clippedTerms / terms).toBeGreaterThan(0.02);
      expect(clippedTerms / terms).toBeLessThan(0.9);
    },
  );
});

describe('clippedLossBackward: the clipped branch', () => {
  /** One step per episode at its own state: episode e's row is step e. */
  function oneStepEach(us: number[], adv: number[], V = 5): Problem {
    const N = adv.length;
    const K = us.length;
    const zRef = Float64Array.from({ length: K * V }, (_, i) => 0.1 * ((i * 7) % 5));
    const lpRef = logSoftmaxRows(zRef, V);
    const actions = Int32Array.from({ length: K }, (_, k) => k % V);
    // Logits of π_θ: raise the taken action's logit by c, so that u = log π_θ(a) − log π_cur(a) = us[k].
    // With the other logits fixed, p(a) = σ(x) with x = logit(a) − lse(others): solve for c.
    const z = zRef.slice();
    for (let k = 0; k < K; k++) {
      const a = actions[k]!;
      const target = lpRef[k * V + a]! + us[k]!; // desired log p(a)
      let sumOthers = 0;
      for (let b = 0; b < V; b++) if (b !== a) sumOthers += Math.exp(zRef[k * V + b]!);
      const lseOthers = Math.log(sumOthers);
      // log p = x − log(1 + e^x), x = z_a − lseOthers  ⇒  x = target − log(1 − e^target)
      z[k * V + a] = lseOthers + target - Math.log(1 - Math.exp(target));
    }
    return { K, V, N, z, lpRef, actions, episodeOf: Int32Array.from({ length: K }, (_, k) => k), adv: Float64Array.from(adv), weight: Float64Array.from({ length: N }, () => 1), horizon: 1 };
  }

  it('far outside the band on the side Ã favours, the episode’s gradient is exactly zero (β = 0)', () => {
    // ε = 0.2: band of u is [log 0.8, log 1.2] = [−0.223, 0.182].
    // ep0: Ã > 0, u = +1 (ratio 2.7 ≫ 1.2): clipped, flat.   ep1: Ã < 0, u = −1: clipped, flat.
    // ep2: Ã > 0, u = −1 (ratio ≪ 0.8, pessimistic min keeps r·Ã): gradient flows.
    // ep3: Ã < 0, u = +1: gradient flows.   ep4: inside the band: gradient flows.   ep5: no steps.
    const p = oneStepEach([1, -1, -1, 1, 0.05], [1.5, -0.7, 1.5, -0.7, 0.9, 2]);
    const s = spec({ beta: 0 });
    const lpTheta = logSoftmaxRows(p.z, p.V);
    const u = sequenceLogRatios(p.K, p.V, p.N, lpTheta, p.lpRef, p.actions, p.episodeOf);
    for (const [e, want] of [[0, 1], [1, -1], [2, -1], [3, 1], [4, 0.05]] as const) expect(u[e]).toBeCloseTo(want, 12);
    expect(u[5]).toBe(0);
    const g = new Float64Array(p.K * p.V);
    const val = objectiveGrad(p, lpTheta, s, g);
    const row = (k: number) => Array.from(g.subarray(k * p.V, (k + 1) * p.V));
    // Exactly zero (±0).
    expect(row(0).every((x) => x === 0)).toBe(true);
    expect(row(1).every((x) => x === 0)).toBe(true);
    for (const k of [2, 3, 4]) {
      // The unclipped branch: (w·Ã·r/N)·(1[a=b] − p_b), by hand.
      const r = Math.exp(u[k]!);
      const a = p.actions[k]!;
      const c = (p.adv[k]! * r) / p.N;
      for (let b = 0; b < p.V; b++) expect(g[k * p.V + b]).toBeCloseTo(c * ((b === a ? 1 : 0) - Math.exp(lpTheta[k * p.V + b]!)), 14);
      expect(Math.max(...row(k).map(Math.abs))).toBeGreaterThan(0.01);
    }
    // clipfrac counts the episodes where the agent acts: 2 clipped of 5.
    expect(val.clipfrac).toBeCloseTo(2 / 5, 15);
    // The surrogate by hand: clipped terms at (1±ε)·Ã, the others r·Ã, the step-less episode Ã (r = 1).
    const expected = (1.2 * 1.5 + 0.8 * -0.7 + Math.exp(-1) * 1.5 + Math.exp(1) * -0.7 + Math.exp(0.05) * 0.9 + 2) / 6;
    expect(val.surrogate).toBeCloseTo(expected, 12);
  });

  it('with β > 0 a clipped episode keeps only the KL part of its gradient', () => {
    const p = oneStepEach([0.9, -0.9], [1, -1]);
    const s = spec({ beta: 0.5 });
    const lpTheta = logSoftmaxRows(p.z, p.V);
    const g = new Float64Array(p.K * p.V);
    const val = objectiveGrad(p, lpTheta, s, g);
    expect(val.clipfrac).toBe(1);
    for (let k = 0; k < p.K; k++) {
      let kl = 0;
      for (let b = 0; b < p.V; b++) kl += Math.exp(lpTheta[k * p.V + b]!) * (lpTheta[k * p.V + b]! - p.lpRef[k * p.V + b]!);
      for (let b = 0; b < p.V; b++) {
        const pb = Math.exp(lpTheta[k * p.V + b]!);
        const dKl = pb * (lpTheta[k * p.V + b]! - p.lpRef[k * p.V + b]! - kl);
        expect(g[k * p.V + b]).toBeCloseTo((-s.beta / p.K) * dKl, 14);
      }
    }
    // …and that KL gradient pulls back toward π_cur: a small step along g lowers the KL.
    const z2 = Float64Array.from(p.z, (x, i) => x + 1e-3 * g[i]!);
    const kl = (z: Float64Array) => {
      const lp = logSoftmaxRows(z, p.V);
      let s2 = 0;
      for (let i = 0; i < lp.length; i++) s2 += Math.exp(lp[i]!) * (lp[i]! - p.lpRef[i]!);
      return s2;
    };
    expect(kl(z2)).toBeLessThan(kl(p.z));
  });

  it('token level: per-step clipping, far outside on the favoured side gives zero gradient for that step', () => {
    // One episode (Ã > 0) with three steps: u = +1 (clipped), −1 (unclipped), 0 (unclipped).
    const p = oneStepEach([1, -1, 0], [1]);
    const q: Problem = { ...p, N: 1, episodeOf: Int32Array.from([0, 0, 0]) };
    const lpTheta = logSoftmaxRows(q.z, q.V);
    const g = new Float64Array(q.K * q.V);
    const val = objectiveGrad(q, lpTheta, spec({ level: 'token', tokenAgg: 'grpo', beta: 0 }), g);
    expect(g.subarray(0, q.V).every((x) => x === 0)).toBe(true);
    expect(Math.max(...Array.from(g.subarray(q.V, 3 * q.V), Math.abs))).toBeGreaterThan(0.01);
    expect(val.clipfrac).toBeCloseTo(1 / 3, 15);
    // grpo surrogate by hand: mean over the 3 steps of min(rÃ, clip(r)Ã), Ã = 1.
    expect(val.surrogate).toBeCloseTo((1.2 + Math.exp(-1) + 1) / 3, 12);
  });
});

describe('clippedLossBackward: r = 1 exactly at π_θ = π_cur', () => {
  it('u is exactly 0, the objective is exactly the mean of w·Ã, the KL exactly 0 (seed 2025)', () => {
    const rng = new Rng(2025, [3]);
    for (let t = 0; t < 50; t++) {
      const p = randomProblem(rng);
      const lpTheta = p.lpRef.slice(); // the same numbers, as after setReference()
      const u = sequenceLogRatios(p.K, p.V, p.N, lpTheta, p.lpRef, p.actions, p.episodeOf);
      for (const x of u) expect(x).toBe(0);
      let mean = 0;
      for (let e = 0; e < p.N; e++) mean += (p.weight[e]! * p.adv[e]!) / p.N;
      const g = new Float64Array(p.K * p.V);
      const s = spec({ beta: 0.7 });
      const val = objectiveGrad(p, lpTheta, s, g);
      expect(val.klMean).toBe(0);
      expect(val.clipfrac).toBe(0);
      expect(val.surrogate).toBe(mean);
      expect(val.objective).toBe(mean);
      // At r = 1 the gradient is the plain policy gradient (w·Ã/N)(1[a=b] − p_b); the KL adds nothing.
      for (let k = 0; k < p.K; k++) {
        const e = p.episodeOf[k]!;
        const c = (p.weight[e]! * p.adv[e]!) / p.N;
        for (let b = 0; b < p.V; b++) {
          const want = c * ((b === p.actions[k] ? 1 : 0) - Math.exp(lpTheta[k * p.V + b]!));
          expect(Math.abs(g[k * p.V + b]! - want)).toBeLessThanOrEqual(1e-15 * (1 + Math.abs(want)));
        }
      }
    }
  });

  it('token level at r = 1: the objective is the aggregated Ã with KL exactly 0', () => {
    const rng = new Rng(2025, [4]);
    for (let t = 0; t < 20; t++) {
      const p = randomProblem(rng);
      const g = new Float64Array(p.K * p.V);
      for (const agg of ['grpo', 'bnpo', 'dr_grpo'] as const) {
        const s = spec({ level: 'token', tokenAgg: agg });
        const val = objectiveGrad(p, p.lpRef.slice(), s, g);
        expect(val.klMean).toBe(0);
        expect(val.clipfrac).toBe(0);
        expect(val.objective).toBeCloseTo(objectiveRef(p, p.lpRef, s), 14);
      }
    }
  });
});
