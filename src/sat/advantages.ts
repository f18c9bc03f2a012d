/**
 * Sequence-aware advantages (docs/method.md §4): group normalisation and clipping,
 *   raw_e = R_e − μ_g,   Ã_e = clip(raw_e / (σ + 1e-8), ±A_clip),   σ per group, per batch or 1,
 * and the per-episode corrections of the estimator modes that reuse the stage batch (§4.2): the
 * predecessors' ratios ρ_t = π̂ⁱ⁻¹(a_t|s_t)/π_cur(a_t|s_t) over their steps, as the truncated
 * trace w(τ) = Π min(1, ρ_t) (`truncated-is`) or the plain product M(τ) = Π ρ_t (`happo`).
 *
 * Not here: sampling (rollout.ts) or the objective (objective.ts).
 */
import type { Batch } from './types';

export type Norm = 'group' | 'batch' | 'none';
export const ADV_EPS = 1e-8;

export interface Advantages {
  /** Ã_e: normalised and clipped. */
  readonly norm: Float64Array;
  /** R_e − μ_g in reward units (what the certificate's measured gain uses). */
  readonly raw: Float64Array;
}

/**
 * Group-normalised advantages of a batch whose episodes are stored group by group
 * (episode e belongs to group ⌊e / G⌋). `weights` (optional) makes μ and σ weighted.
 */
export function groupAdvantages(rewards: ArrayLike<number>, groups: number, G: number, norm: Norm, aClip: number, weights?: ArrayLike<number>): Advantages {
  const N = groups * G;
  if (rewards.length !== N) throw new RangeError(`groupAdvantages: ${rewards.length} rewards for ${groups}×${G} episodes`);
  const raw = new Float64Array(N);
  const sd = new Float64Array(groups);
  for (let g = 0; g < groups; g++) {
    let ws = 0;
    let m = 0;
    for (let k = 0; k < G; k++) {
      const w = weights ? weights[g * G + k]! : 1;
      ws += w;
      m += w * rewards[g * G + k]!;
    }
    m = ws > 0 ? m / ws : 0;
    let v = 0;
    for (let k = 0; k < G; k++) {
      const w = weights ? weights[g * G + k]! : 1;
      const d = rewards[g * G + k]! - m;
      raw[g * G + k] = d;
      v += w * d * d;
    }
    sd[g] = ws > 0 ? Math.sqrt(v / ws) : 0;
  }
  let batchSd = 0;
  if (norm === 'batch') {
    let ws = 0;
    let v = 0;
    for (let e = 0; e < N; e++) {
      const w = weights ? weights[e]! : 1;
      ws += w;
      v += w * raw[e]! * raw[e]!;
    }
    batchSd = ws > 0 ? Math.sqrt(v / ws) : 0;
  }
  const out = new Float64Array(N);
  for (let e = 0; e < N; e++) {
    const scale = norm === 'group' ? sd[Math.floor(e / G)]! + ADV_EPS : norm === 'batch' ? batchSd + ADV_EPS : 1;
    out[e] = Math.max(-aClip, Math.min(aClip, raw[e]! / scale));
  }
  return { norm: out, raw };
}

/**
 * log(π_now(a|s) / π_then(a|s)) of one sampled step from two log-probs of the sampler's distribution
 * (top-k truncated when topK > 0, so either may be −Infinity). −Infinity when the new policy can no
 * longer draw a (r = 0). NaN when `then` is −Infinity: the sampler drew a token the scorer says the
 * old policy cannot (f32 rounding between the KV-cached sampler and the full forward at a top-k
 * boundary); each caller says how it scores that.
 */
export function stepLogRatio(now: number, then: number): number {
  return then === -Infinity ? NaN : now - then;
}

/**
 * Σ over the steps of `predecessors` in each episode of log ρ_t = log π̂ⁱ⁻¹(a_t|s_t) − log π_cur(a_t|s_t),
 * given the predecessors' current log-probs of their own steps (`nowLogp[agent][k]` for its k-th step
 * in batch order) and the log-probs recorded at sampling time (π_cur).
 * Returns per-episode sums of log ρ_t and of log min(1, ρ_t).
 */
export function predecessorLogRatios(batch: Batch, predecessors: readonly number[], nowLogp: ReadonlyMap<number, Float64Array>): { logM: Float64Array; logW: Float64Array } {
  const N = batch.episodes.length;
  const logM = new Float64Array(N);
  const logW = new Float64Array(N);
  const cursor = new Map<number, number>(predecessors.map((p) => [p, 0]));
  batch.episodes.forEach((ep, e) => {
    for (const turn of ep.turns) {
      if (!cursor.has(turn.agent)) continue;
      const k = cursor.get(turn.agent)!;
      cursor.set(turn.agent, k + 1);
      // A draw the old scorer calls impossible (NaN, see stepLogRatio) keeps the weight of ρ = 1.
      const lr = stepLogRatio(nowLogp.get(turn.agent)![k]!, turn.logp) || 0;
      logM[e]! += lr;
      logW[e]! += Math.min(0, lr);
    }
  });
  return { logM, logW };
}
