/**
 * The per-agent objective of SAT.md §5 and its gradient with respect to the logits — the CPU
 * reference ("twin") of the clipped-loss-gradient kernel that the GPU backend will implement.
 *
 *   u_e   = Σ_{k ∈ steps of episode e} [log π_θ(a_k|s_k) − log π_cur(a_k|s_k)],   r_e = exp(u_e)
 *   L     = (1/N) Σ_e w_e · min( r_e Ã_e , exp(clip(u_e, log(1−ε_low), log(1+ε_high))) Ã_e )
 *           − β · (1/K) Σ_k KL(π_θ(·|s_k) ‖ π_cur(·|s_k))
 *
 * Shapes: K steps of this agent in the batch, V actions (vocabulary), N episodes.
 *   lpTheta, lpRef : [K × V]  log-probabilities of π_θ and π_cur at each step's state
 *   actions        : [K]      the action taken at each step
 *   episodeOf      : [K]      the episode each step belongs to, in [0, N)
 *   adv, weight    : [N]      Ã_e and w_e
 *   dlogits (out)  : [K × V]  ∂L/∂z for the logits z of π_θ at each step (ascent direction)
 *
 * Gradients used (softmax with log-probs lp, probs p):
 *   ∂ log p_a / ∂z_b = 1[a=b] − p_b
 *   ∂ KL(p‖q) / ∂z_b = p_b · ((lp_b − lq_b) − KL(p‖q))
 * The min() passes the gradient of its unclipped branch unless the clipped branch is the smaller
 * one and constant in θ (ratio outside [1−ε_low, 1+ε_high] on the side that Ã favours).
 *
 * The token-level variant replaces u_e by per-step log-ratios and aggregates as GRPO (mean per
 * episode, then over episodes), BNPO (over all steps) or Dr.GRPO (sum / (N·H)).
 *
 * Not here: where the logits come from (a table, a transformer) or the optimizer.
 */
import type { ObjectiveSpec } from './types';

export interface ObjectiveInput {
  readonly K: number;
  readonly V: number;
  readonly N: number;
  readonly lpTheta: Float64Array;
  readonly lpRef: Float64Array;
  readonly actions: Int32Array;
  readonly episodeOf: Int32Array;
  readonly adv: Float64Array;
  readonly weight: Float64Array;
  /** Horizon H, for dr_grpo. */
  readonly horizon: number;
}

export interface ObjectiveValue {
  objective: number;
  surrogate: number;
  klMean: number;
  clipfrac: number;
}

/** One term of the clipped objective: value and d(value)/du for log-ratio u and advantage a. */
function clippedTerm(u: number, a: number, logLo: number, logHi: number): { value: number; dvdu: number; clipped: boolean } {
  const r = Math.exp(u);
  const uc = Math.min(logHi, Math.max(logLo, u));
  const unclipped = r * a;
  const clippedValue = Math.exp(uc) * a;
  // min(r·a, clip(r)·a): the clipped branch wins (and is flat in u) only outside the band on the side a favours.
  if (clippedValue < unclipped) return { value: clippedValue, dvdu: 0, clipped: true };
  return { value: unclipped, dvdu: unclipped, clipped: false };
}

/**
 * L_j and ∂L_j/∂logits. Writes `dlogits` (length K·V) and returns the objective's parts.
 */
export function clippedObjectiveGrad(inp: ObjectiveInput, spec: ObjectiveSpec, dlogits: Float64Array): ObjectiveValue {
  const { K, V, N, lpTheta, lpRef, actions, episodeOf, adv, weight } = inp;
  const logLo = Math.log(1 - spec.epsLow);
  const logHi = Math.log(1 + spec.epsHigh);
  dlogits.fill(0);

  // Per-step log-ratio of the action taken.
  const stepU = new Float64Array(K);
  for (let k = 0; k < K; k++) {
    const a = actions[k]!;
    stepU[k] = lpTheta[k * V + a]! - lpRef[k * V + a]!;
  }

  // dL/du per step (the coefficient multiplying ∂ log π_θ(a_k|s_k)).
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
    // Episodes where the agent never acts have u = 0, r = 1: they add w·Ã/N, a constant.
  } else {
    const stepsIn = new Float64Array(N);
    for (let k = 0; k < K; k++) stepsIn[episodeOf[k]!]! += 1;
    for (let k = 0; k < K; k++) {
      const e = episodeOf[k]!;
      const norm = spec.tokenAgg === 'grpo' ? N * stepsIn[e]! : spec.tokenAgg === 'bnpo' ? Math.max(1, K) : N * Math.max(1, inp.horizon);
      const t = clippedTerm(stepU[k]!, adv[e]!, logLo, logHi);
      surrogate += (weight[e]! * t.value) / norm;
      coef[k] = (weight[e]! * t.dvdu) / norm;
      termCount++;
      if (t.clipped) clippedCount++;
    }
  }

  // Chain rule into the logits, plus the KL penalty −β·(1/K)Σ_k KL_k.
  let klSum = 0;
  for (let k = 0; k < K; k++) {
    const row = k * V;
    let kl = 0;
    for (let b = 0; b < V; b++) {
      const lp = lpTheta[row + b]!;
      kl += Math.exp(lp) * (lp - lpRef[row + b]!);
    }
    klSum += kl;
    const a = actions[k]!;
    const c = coef[k]!;
    const kb = K > 0 ? spec.beta / K : 0;
    for (let b = 0; b < V; b++) {
      const lp = lpTheta[row + b]!;
      const p = Math.exp(lp);
      const dLogPi = (b === a ? 1 : 0) - p;
      const dKl = p * (lp - lpRef[row + b]! - kl);
      dlogits[row + b] = c * dLogPi - kb * dKl;
    }
  }
  const klMean = K > 0 ? klSum / K : 0;
  return {
    objective: surrogate - spec.beta * klMean,
    surrogate,
    klMean,
    clipfrac: termCount > 0 ? clippedCount / termCount : 0,
  };
}

/**
 * The sequence log-ratios u_e = Σ_k (log π_θ − log π_cur) of the action taken, per episode.
 * Shared by the certificate's measured gain and by the tests.
 */
export function sequenceLogRatios(K: number, V: number, N: number, lpTheta: Float64Array, lpRef: Float64Array, actions: Int32Array, episodeOf: Int32Array): Float64Array {
  const u = new Float64Array(N);
  for (let k = 0; k < K; k++) {
    const a = actions[k]!;
    u[episodeOf[k]!]! += lpTheta[k * V + a]! - lpRef[k * V + a]!;
  }
  return u;
}
