/**
 * The gradient of SAT's per-agent objective with respect to the policy's logits (docs/method.md
 * §5.3) — the one implementation, used by the tabular agent (f64 rows, τ = 1), the language agent
 * (f32 logits at its sampling temperature) and as the GPU loss kernel's CPU reference. Computes in
 * f64 from raw logits z and τ; dlogits ACCUMULATES scale · ∂L/∂z (L is maximised; scale = −1 gives
 * the loss an optimizer descends):
 *
 *   ∂L/∂z_k,v = (1/τ) [ c_k (1[v=a_k] − p_k,v) − (β/K) p_k,v ((lp_k,v − lq_k,v) − KL_k) ]
 *   c_k = w_e r_e Ã_e / N on the unclipped branch, 0 on the clipped one (§5.1, §5.2 for tokens)
 *
 * Shapes: K steps, V vocabulary, N episodes, H horizon (dr_grpo).
 *   logitsTheta, logitsRef, dlogits [K × V];  actions, episodeOf [K] int32;  adv, weight [N]
 *   stats [4] = (objective, surrogate, klMean, clipfrac)
 *
 * Not here: advantages (src/sat/advantages.ts), where the logits come from, the optimizer.
 */
import type { ClippedLossSpec, ClippedLossStats, FloatArray } from '../types';
import { checkClippedLoss } from '../check';
import { rowKl, rowLogSumExp } from './softmax';

/**
 * One term min(r·a, clip(r)·a): its value, d/du, and whether the clipped branch is active (also
 * what the token inspector marks as clipped, src/sat/inspect.ts).
 */
export function clippedTerm(u: number, a: number, logLo: number, logHi: number): { value: number; dvdu: number; clipped: boolean } {
  const r = Math.exp(u);
  const uc = Math.min(logHi, Math.max(logLo, u));
  const unclipped = r * a;
  const clippedValue = Math.exp(uc) * a;
  if (clippedValue < unclipped) return { value: clippedValue, dvdu: 0, clipped: true };
  return { value: unclipped, dvdu: unclipped, clipped: false };
}

/**
 * dlogits += scale · ∂L/∂z_θ (header); returns L's parts and, when `stats` is given, writes
 * them there as (objective, surrogate, klMean, clipfrac).
 */
export function clippedLossBackward(
  dlogits: FloatArray,
  stats: FloatArray | null,
  logitsTheta: FloatArray,
  logitsRef: FloatArray,
  actions: Int32Array,
  episodeOf: Int32Array,
  adv: FloatArray,
  weight: FloatArray,
  K: number,
  V: number,
  N: number,
  horizon: number,
  temperature: number,
  spec: ClippedLossSpec,
  scale = 1,
): ClippedLossStats {
  const op = 'clippedLossBackward';
  checkClippedLoss({ dlogits, stats, logitsTheta, logitsRef, actions, episodeOf, adv, weight }, K, V, N, temperature);
  for (let k = 0; k < K; k++) {
    const a = actions[k]!;
    const e = episodeOf[k]!;
    if (!(a >= 0 && a < V)) throw new RangeError(`${op}: action ${a} at step ${k} is outside [0, ${V})`);
    if (!(e >= 0 && e < N)) throw new RangeError(`${op}: episode ${e} at step ${k} is outside [0, ${N})`);
  }
  const invT = 1 / temperature;
  const logLo = Math.log(1 - spec.epsLow);
  const logHi = Math.log(1 + spec.epsHigh);

  // Per step: log-sum-exps, log-ratio of the action taken, exact KL.
  const lseT = new Float64Array(K);
  const lseR = new Float64Array(K);
  const stepU = new Float64Array(K);
  const klK = new Float64Array(K);
  for (let k = 0; k < K; k++) {
    const off = k * V;
    const a = actions[k]!;
    lseT[k] = rowLogSumExp(logitsTheta, off, V, invT);
    lseR[k] = rowLogSumExp(logitsRef, off, V, invT);
    stepU[k] = logitsTheta[off + a]! * invT - lseT[k]! - (logitsRef[off + a]! * invT - lseR[k]!);
    klK[k] = rowKl(logitsTheta, logitsRef, off, V, invT, lseT[k]!, lseR[k]!);
  }

  // c_k = ∂L/∂u for each step.
  const coef = new Float64Array(K);
  let surrogate = 0;
  let clippedCount = 0;
  let termCount = 0;
  if (spec.level === 'sequence') {
    const u = new Float64Array(N);
    const acts = new Uint8Array(N);
    for (let k = 0; k < K; k++) {
      u[episodeOf[k]!]! += stepU[k]!;
      acts[episodeOf[k]!] = 1;
    }
    const dEp = new Float64Array(N);
    for (let e = 0; e < N; e++) {
      const t = clippedTerm(u[e]!, adv[e]!, logLo, logHi);
      surrogate += (weight[e]! * t.value) / N;
      dEp[e] = (weight[e]! * t.dvdu) / N;
      if (acts[e]) {
        termCount++;
        if (t.clipped) clippedCount++;
      }
    }
    for (let k = 0; k < K; k++) coef[k] = dEp[episodeOf[k]!]!;
  } else {
    const stepsIn = new Float64Array(N);
    for (let k = 0; k < K; k++) stepsIn[episodeOf[k]!]! += 1;
    for (let k = 0; k < K; k++) {
      const e = episodeOf[k]!;
      const norm = spec.tokenAgg === 'grpo' ? N * stepsIn[e]! : spec.tokenAgg === 'bnpo' ? Math.max(1, K) : N * Math.max(1, horizon);
      const t = clippedTerm(stepU[k]!, adv[e]!, logLo, logHi);
      surrogate += (weight[e]! * t.value) / norm;
      coef[k] = (weight[e]! * t.dvdu) / norm;
      termCount++;
      if (t.clipped) clippedCount++;
    }
  }

  // Chain rule into the logits, plus the KL penalty −β·(1/K)Σ_k KL_k.
  let klSum = 0;
  const kb = K > 0 ? spec.beta / K : 0;
  for (let k = 0; k < K; k++) {
    const off = k * V;
    const kl = klK[k]!;
    klSum += kl;
    const a = actions[k]!;
    const c = coef[k]!;
    const lt = lseT[k]!;
    const lr = lseR[k]!;
    const g = scale * invT;
    for (let v = 0; v < V; v++) {
      const lp = logitsTheta[off + v]! * invT - lt;
      const p = Math.exp(lp);
      const dLogPi = (v === a ? 1 : 0) - p;
      const dKl = p > 0 ? p * (lp - (logitsRef[off + v]! * invT - lr) - kl) : 0;
      dlogits[off + v]! += g * (c * dLogPi - kb * dKl);
    }
  }
  const klMean = K > 0 ? klSum / K : 0;
  const res: ClippedLossStats = {
    objective: surrogate - spec.beta * klMean,
    surrogate,
    klMean,
    clipfrac: termCount > 0 ? clippedCount / termCount : 0,
  };
  if (stats !== null) {
    stats[0] = res.objective;
    stats[1] = res.surrogate;
    stats[2] = res.klMean;
    stats[3] = res.clipfrac;
  }
  return res;
}
