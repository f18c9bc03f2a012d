/**
 * The trust-region monitor of docs/method.md §6: after each optimizer step on agent j, the exact KL
 * κ(s) = KL(π_θ⁽ʲ⁾(·|s) ‖ π_cur⁽ʲ⁾(·|s)) at every state j visited in the batch (one value per visit,
 * so states count by their occupancy), its empirical (1−α)-quantile q and the violation rate.
 *
 * q uses the inverted-CDF quantile (Hyndman–Fan type 1): q is the smallest observed κ with at least
 * a (1−α) fraction of visits at or below it, so "q ≤ δ" really means "≥ (1−α) of visits inside δ".
 *
 * Not here: what to do about a violation (the stage loop backtracks; see stage.ts).
 */
import { quantile } from '../core/stats';

export interface TrustCheck {
  /** (1−α)-quantile of κ. */
  readonly q: number;
  readonly mean: number;
  readonly max: number;
  /** Fraction of visits with κ(s) > δ. */
  readonly violRate: number;
  /** q ≤ δ. */
  readonly ok: boolean;
}

export function checkTrustRegion(kl: ArrayLike<number>, delta: number, alpha: number): TrustCheck {
  if (kl.length === 0) return { q: 0, mean: 0, max: 0, violRate: 0, ok: true };
  let sum = 0;
  let max = 0;
  let viol = 0;
  for (let i = 0; i < kl.length; i++) {
    sum += kl[i]!;
    max = Math.max(max, kl[i]!);
    if (kl[i]! > delta) viol++;
  }
  const q = quantile(kl, 1 - alpha, 'inverted-cdf');
  return { q, mean: sum / kl.length, max, violRate: viol / kl.length, ok: q <= delta };
}

/** β raised after a backtrack (×1.5; from a floor so that β = 0 can grow). */
export function raiseBeta(beta: number): number {
  return Math.min(1e4, Math.max(beta * 1.5, 1e-2));
}

/** β lowered after an update whose quantile ended well inside the radius (q < δ/1.5). */
export function lowerBeta(beta: number): number {
  return Math.max(1e-4, beta / 1.5);
}
