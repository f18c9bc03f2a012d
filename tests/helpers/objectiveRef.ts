/**
 * An independent f64 statement of SAT's per-agent clipped objective (docs/method.md §5) and of its
 * gradient with respect to the logits — plain Math, no code shared with the kernel under test
 * (src/backend/cpu/objective.ts → `clippedLossBackward`). Used by tests/objective.test.ts and
 * tests/backend-cpu.test.ts.
 *
 *   lp = log_softmax(z/τ) per step k;  lq = the reference log-probs (given)
 *   u_e = Σ_{k ∈ e} (lp_k[a_k] − lq_k[a_k]),  r_e = exp(u_e)
 *   L   = (1/N) Σ_e w_e · min(r_e Ã_e, clip(r_e, 1−ε_low, 1+ε_high) Ã_e) − (β/K) Σ_k KL(p_k ‖ q_k)
 * Token level: per-step ratios, aggregated as GRPO (mean over the episode's steps, then over all N
 * episodes), BNPO (sum / K) or Dr.GRPO (sum / (N·H)).
 *
 *   ∂L/∂z_k,v = (1/τ) [ c_k (1[v=a_k] − p_k,v) − (β/K) p_k,v ((lp_k,v − lq_k,v) − KL_k) ]
 * with c_k = ∂(surrogate)/∂u: w_e r Ã_e / norm while the unclipped term r·Ã is the min, 0 when the
 * clipped one is strictly smaller (flat in θ).
 */

export interface RefSpec {
  readonly level: 'sequence' | 'token';
  readonly tokenAgg: 'grpo' | 'bnpo' | 'dr_grpo';
  readonly epsLow: number;
  readonly epsHigh: number;
  readonly beta: number;
}

/** K steps, V actions, N episodes; everything but π_θ's logits. */
export interface RefProblem {
  readonly K: number;
  readonly V: number;
  readonly N: number;
  /** Log-probs of the reference policy π_cur at each step, [K × V]. */
  readonly lpRef: ArrayLike<number>;
  readonly actions: ArrayLike<number>;
  readonly episodeOf: ArrayLike<number>;
  readonly adv: ArrayLike<number>;
  readonly weight: ArrayLike<number>;
  /** Horizon H, for dr_grpo. */
  readonly horizon: number;
}

export interface RefValue {
  objective: number;
  surrogate: number;
  klMean: number;
  clipfrac: number;
}

/** Row-wise log-softmax of a [rows × V] table at temperature τ, by the max shift. */
export function logSoftmaxRows(z: ArrayLike<number>, V: number, tau = 1): Float64Array {
  const out = new Float64Array(z.length);
  for (let r = 0; r < z.length / V; r++) {
    let m = -Infinity;
    for (let b = 0; b < V; b++) m = Math.max(m, z[r * V + b]! / tau);
    let s = 0;
    for (let b = 0; b < V; b++) s += Math.exp(z[r * V + b]! / tau - m);
    const lse = m + Math.log(s);
    for (let b = 0; b < V; b++) out[r * V + b] = z[r * V + b]! / tau - lse;
  }
  return out;
}

/** min(r·A, clip(r, 1−ε_low, 1+ε_high)·A), written from docs/method.md §5.1. */
export function clippedTermRef(u: number, a: number, s: RefSpec): number {
  const r = Math.exp(u);
  const rc = Math.min(1 + s.epsHigh, Math.max(1 - s.epsLow, r));
  return Math.min(r * a, rc * a);
}

/** Whether the clipped branch is the (strictly smaller) min, i.e. the term is flat in u. */
function clippedActive(u: number, a: number, s: RefSpec): boolean {
  const r = Math.exp(u);
  const rc = Math.min(1 + s.epsHigh, Math.max(1 - s.epsLow, r));
  return rc * a < r * a;
}

/** The log-ratio of the action taken at step k. */
function stepLogRatio(p: RefProblem, lp: Float64Array, k: number): number {
  const i = k * p.V + p.actions[k]!;
  return lp[i]! - p.lpRef[i]!;
}

/** KL(p_k ‖ q_k) over the full row, terms with p = 0 adding 0. */
function rowKlRef(p: RefProblem, lp: Float64Array, k: number): number {
  let kl = 0;
  for (let b = 0; b < p.V; b++) {
    const pb = Math.exp(lp[k * p.V + b]!);
    if (pb > 0) kl += pb * (lp[k * p.V + b]! - p.lpRef[k * p.V + b]!);
  }
  return kl;
}

/** L and its parts as a function of π_θ's logits z (at temperature τ). */
export function objectiveRefParts(p: RefProblem, z: ArrayLike<number>, s: RefSpec, tau = 1): RefValue {
  const { K, V, N } = p;
  const lp = logSoftmaxRows(z, V, tau);
  let surrogate = 0;
  let clipped = 0;
  let terms = 0;
  if (s.level === 'sequence') {
    for (let e = 0; e < N; e++) {
      let u = 0;
      let acts = false;
      for (let k = 0; k < K; k++)
        if (p.episodeOf[k] === e) {
          u += stepLogRatio(p, lp, k);
          acts = true;
        }
      surrogate += p.weight[e]! * clippedTermRef(u, p.adv[e]!, s);
      // clipfrac counts the episodes where the agent acts.
      if (acts) {
        terms++;
        if (clippedActive(u, p.adv[e]!, s)) clipped++;
      }
    }
    surrogate /= N;
  } else {
    for (let k = 0; k < K; k++) {
      terms++;
      if (clippedActive(stepLogRatio(p, lp, k), p.adv[p.episodeOf[k]!]!, s)) clipped++;
    }
    if (s.tokenAgg === 'grpo') {
      // Mean over the episode's steps, then mean over all N episodes (episodes without steps add 0).
      for (let e = 0; e < N; e++) {
        let sum = 0;
        let n = 0;
        for (let k = 0; k < K; k++)
          if (p.episodeOf[k] === e) {
            sum += clippedTermRef(stepLogRatio(p, lp, k), p.adv[e]!, s);
            n++;
          }
        if (n > 0) surrogate += (p.weight[e]! * sum) / n;
      }
      surrogate /= N;
    } else {
      for (let k = 0; k < K; k++) surrogate += p.weight[p.episodeOf[k]!]! * clippedTermRef(stepLogRatio(p, lp, k), p.adv[p.episodeOf[k]!]!, s);
      surrogate /= s.tokenAgg === 'bnpo' ? K : N * p.horizon;
    }
  }
  let kl = 0;
  for (let k = 0; k < K; k++) kl += rowKlRef(p, lp, k);
  const klMean = K > 0 ? kl / K : 0;
  return { objective: surrogate - s.beta * klMean, surrogate, klMean, clipfrac: terms > 0 ? clipped / terms : 0 };
}

/** L as a function of π_θ's logits z (at temperature τ). */
export function objectiveRef(p: RefProblem, z: ArrayLike<number>, s: RefSpec, tau = 1): number {
  return objectiveRefParts(p, z, s, tau).objective;
}

/** ∂L/∂z, [K × V], from the closed form in the header (ascent direction, not accumulated). */
export function gradRef(p: RefProblem, z: ArrayLike<number>, s: RefSpec, tau = 1): Float64Array {
  const { K, V, N } = p;
  const lp = logSoftmaxRows(z, V, tau);
  // c_k = ∂(surrogate)/∂u for the ratio step k contributes to.
  const c = new Float64Array(K);
  if (s.level === 'sequence') {
    for (let e = 0; e < N; e++) {
      let u = 0;
      for (let k = 0; k < K; k++) if (p.episodeOf[k] === e) u += stepLogRatio(p, lp, k);
      const ce = clippedActive(u, p.adv[e]!, s) ? 0 : (p.weight[e]! * Math.exp(u) * p.adv[e]!) / N;
      for (let k = 0; k < K; k++) if (p.episodeOf[k] === e) c[k] = ce;
    }
  } else {
    for (let k = 0; k < K; k++) {
      const e = p.episodeOf[k]!;
      let steps = 0;
      for (let j = 0; j < K; j++) if (p.episodeOf[j] === e) steps++;
      const norm = s.tokenAgg === 'grpo' ? N * steps : s.tokenAgg === 'bnpo' ? K : N * p.horizon;
      const u = stepLogRatio(p, lp, k);
      c[k] = clippedActive(u, p.adv[e]!, s) ? 0 : (p.weight[e]! * Math.exp(u) * p.adv[e]!) / norm;
    }
  }
  const g = new Float64Array(K * V);
  for (let k = 0; k < K; k++) {
    const kl = rowKlRef(p, lp, k);
    for (let v = 0; v < V; v++) {
      const i = k * V + v;
      const pv = Math.exp(lp[i]!);
      const dKl = pv > 0 ? pv * (lp[i]! - p.lpRef[i]! - kl) : 0;
      g[i] = (c[k]! * ((v === p.actions[k] ? 1 : 0) - pv) - (s.beta / K) * dKl) / tau;
    }
  }
  return g;
}
