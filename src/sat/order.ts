/**
 * Update orders σ (docs/method.md §3.1). The certificate holds for any σ; the order changes the
 * numbers, which is what the playground's order comparison shows.
 *
 *   fixed    0, 1, …, n−1
 *   reverse  n−1, …, 0
 *   random   a fresh permutation each stage, from the stage's own sub-stream
 *   custom   the user's permutation
 *   greedy   largest predicted first-order gain κ_j·√δ_j first (κ from geometry.ts), ties by index
 *
 * Not here: computing the predicted gains.
 */
import type { Rng } from '../core/rng';

export type OrderKind = 'fixed' | 'random' | 'reverse' | 'custom' | 'greedy';

export function chooseOrder(kind: OrderKind, n: number, opts: { rng: Rng; custom?: readonly number[]; predictedGain?: readonly number[] }): number[] {
  const identity = Array.from({ length: n }, (_, i) => i);
  switch (kind) {
    case 'fixed':
      return identity;
    case 'reverse':
      return identity.reverse();
    case 'random':
      return opts.rng.permutation(n);
    case 'custom':
      if (!opts.custom || opts.custom.length !== n) throw new RangeError('custom order needs a permutation of the agents');
      return [...opts.custom];
    case 'greedy': {
      const g = opts.predictedGain;
      if (!g || g.length !== n) throw new RangeError('greedy order needs one predicted gain per agent');
      return identity.sort((a, b) => g[b]! - g[a]! || a - b);
    }
  }
}
