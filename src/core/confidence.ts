/**
 * One-sided lower confidence bounds L with P(E[x] ≥ L) ≥ 1 − η on the mean of i.i.d. samples known
 * to lie in [lo, hi] — the "finite" term of the certificate (docs/certificate.md §5). Three bounds,
 * tightest first: `betting` (Waudby-Smith & Ramdas 2023, variance-adaptive; the default),
 * `bernstein` (Maurer & Pontil 2009, Theorem 4), `hoeffding` (1963). Each is computed on
 * z = (x − lo)/(hi − lo) ∈ [0, 1], mapped back and clamped to [lo, hi]; a sample outside [lo, hi]
 * throws, since a range that does not cover the samples voids the bound.
 *
 * `lowerConfidenceBoundBelow` is the betting bound for samples known only to lie above lo: a lower
 * bound needs nothing more (docs/certificate.md §5.2).
 *
 * Anytime validity (docs/certificate.md §5.3): the betting bound's stakes depend on the samples before
 * them and on a `horizon` — the number of samples they are tuned for. Fixed before the first sample,
 * the capital is one test martingale over the whole sequence, so by Ville's inequality the bound
 * holds at every sample count at once: it is a confidence sequence, valid at any stopping time.
 * Left out, the horizon is the sample count itself — the fixed-N bound, valid only when N was fixed
 * in advance (recomputing it after every look and stopping when it suits is not valid).
 *
 * Not here: where samples and ranges come from (src/sat/certificate.ts), two-sided versions, the
 * stopping rule (src/sat/stage.ts).
 */
export type BoundKind = 'betting' | 'bernstein' | 'hoeffding';

export const BOUND_KINDS: readonly BoundKind[] = ['betting', 'bernstein', 'hoeffding'];

/** Samples scaled to [0, 1]; throws when one lies outside [lo, hi] (beyond rounding). */
function scaled(xs: ArrayLike<number>, lo: number, hi: number, fn: string): Float64Array {
  if (!(Number.isFinite(lo) && Number.isFinite(hi) && hi >= lo)) throw new RangeError(`${fn}: range [${lo}, ${hi}] is not a finite interval`);
  const c = hi - lo;
  const tol = 1e-9 * Math.max(1, Math.abs(lo), Math.abs(hi));
  const z = new Float64Array(xs.length);
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i]!;
    if (!Number.isFinite(x) || x < lo - tol || x > hi + tol) throw new RangeError(`${fn}: sample ${i} = ${x} lies outside the stated range [${lo}, ${hi}]`);
    z[i] = c > 0 ? Math.min(1, Math.max(0, (x - lo) / c)) : 0;
  }
  return z;
}

function checkEta(eta: number, fn: string): void {
  if (!(eta > 0 && eta < 1)) throw new RangeError(`${fn}: failure probability η = ${eta}; expected a number in (0, 1)`);
}

/** Largest share of the stake a bet may risk (Waudby-Smith & Ramdas use 1/2 or 3/4; any c < 1 keeps K > 0). */
const BET_CAP = 0.75;

/**
 * The betting lower bound on [0, 1] samples ("predictable plug-in" bets tuned for a fixed N, with
 * the hedged-capital cap; Waudby-Smith & Ramdas 2023, §4–§5):
 *
 *   λ_i(m) = min( λ̃_i, BET_CAP/m ),   λ̃_i = √(2 ln(1/η) / (N σ̂²_{i−1})),
 *   μ̂_i = (½ + Σ_{k≤i} z_k)/(i + 1),   σ̂²_i = (¼ + Σ_{k≤i} (z_k − μ̂_k)²)/(i + 1),
 *   K_N(m) = Π_i (1 + λ_i(m)·(z_i − m)).
 *
 * λ̃_i depends only on z_1 … z_{i−1} (it is predictable), so at the true mean K_N is a martingale
 * with mean 1; z_i − m ≥ −m and λ_i(m)·m ≤ BET_CAP < 1 keep every factor positive. Each factor
 * decreases in m, so the m that are not rejected (K_N(m) < 1/η) form an interval (L, 1]; L solves
 * log K_N(L) = ln(1/η), found by Newton's method kept inside a bracket (bisection when a step
 * would leave it). The cap BET_CAP/m instead of a fixed BET_CAP matters when the samples vary
 * little compared with their range: near m = ½ it doubles the largest bet.
 */
function bettingLower01(z: Float64Array, eta: number, horizon?: number): number {
  return bettingLowerZ(z, eta, 1, horizon);
}

/**
 * The predictable plug-in bets λ̃_i of `bettingLower01` for the samples in the order given, tuned
 * for `horizon` samples (the sample count when absent). λ̃_i depends only on z_1 … z_{i−1} and the
 * horizon, so for a horizon fixed in advance the bets of the first t samples do not change as more
 * samples arrive — what makes the capital one martingale over the sequence.
 */
function plugInBets(z: Float64Array, target: number, horizon = z.length): Float64Array {
  const N = z.length;
  if (!(horizon >= 1)) throw new RangeError(`betting bound: horizon ${horizon}; expected a number of samples ≥ 1`);
  const lt = new Float64Array(N);
  let sumZ = 0;
  let sumSq = 0;
  for (let i = 0; i < N; i++) {
    lt[i] = Math.sqrt((2 * target) / (horizon * ((0.25 + sumSq) / (i + 1))));
    sumZ += z[i]!;
    sumSq += (z[i]! - (0.5 + sumZ) / (i + 2)) ** 2;
  }
  return lt;
}

/**
 * The betting lower bound for samples z ≥ 0 whose largest possible value may be unknown: `top` is
 * an m known to be at or above the mean's bound search (1 for [0, 1] samples; max(1, max z)
 * otherwise — at m ≥ max z every factor is ≤ 1, so log K_N(m) ≤ 0 < ln(1/η) and m is not
 * rejected). Only z ≥ 0 is needed for validity: it keeps every factor 1 + λ(z − m) ≥ 1 − λm > 0.
 */
function bettingLowerZ(z: Float64Array, eta: number, top: number, horizon?: number): number {
  const N = z.length;
  const target = Math.log(1 / eta);
  const lt = plugInBets(z, target, horizon);
  // f(m) = log K_N(m) − ln(1/η) and its derivative.
  const fd = (m: number): [number, number] => {
    const cap = m > 0 ? BET_CAP / m : Infinity;
    let f = -target;
    let d = 0;
    for (let i = 0; i < N; i++) {
      const zi = z[i]!;
      if (lt[i]! <= cap) {
        const q = 1 + lt[i]! * (zi - m);
        f += Math.log(q);
        d -= lt[i]! / q;
      } else {
        const q = 1 + cap * (zi - m); // = 1 + c·z/m − c
        f += Math.log(q);
        d -= (BET_CAP * zi) / (m * m * q);
      }
    }
    return [f, d];
  };
  // Newton starts near the root: the mean less a normal-approximation width (a guess, not a bound;
  // the bracket below keeps the answer a rejected point whatever the guess).
  const { mean, ss } = moments(z);
  let x = Math.min(top, mean - Math.sqrt((2 * ss * target) / (N * N)));
  if (!(x > 0)) {
    if (fd(0)[0] < 0) return 0; // not even m = 0 is rejected: the trivial bound
    x = top;
  }
  let a = 0; // f(a) ≥ 0: rejected (m = 0 is, unless the search finds no rejected m, then 0 is the answer)
  let b = top; // f(b) < 0: log K_N(top) ≤ 0 < ln(1/η)
  const eps = 1e-13 * top;
  // Newton can bounce between the two ends of a bracket where f bends, each step landing just inside
  // the other end, up to the iteration cap: two steps on alternate sides that do not halve the
  // bracket are followed by a bisection step. (Steps from one side, Newton's usual approach to the
  // root, are left alone.)
  let width2 = Infinity;
  let width1 = b - a;
  let side = 0;
  for (let it = 0; it < 200 && b - a > eps; it++) {
    const [f, d] = fd(x);
    if (f >= 0) a = x;
    else b = x;
    const now = f >= 0 ? 1 : -1;
    const slow = now !== side && b - a > 0.5 * width2;
    side = now;
    width2 = width1;
    width1 = b - a;
    if (d < 0 && Math.abs(f) <= -d * eps) {
      // Within eps of the root: x itself when rejected, else one probe just below it (a Newton
      // step from the right rounds back onto x and would fall into bisection from 0).
      if (f >= 0) return x;
      const probe = x - Math.max((2 * f) / d, eps);
      if (fd(probe)[0] >= 0) return probe;
      b = probe;
      x = 0.5 * (a + b);
      continue;
    }
    let next = d < 0 && !slow ? x - f / d : Number.NaN;
    if (!(next > a && next < b)) next = 0.5 * (a + b);
    if (Math.abs(next - x) < 0.1 * eps) {
      // Converged onto the root from one side: make sure the answer is a rejected point.
      const probe = Math.max(a, b - 100 * eps);
      if (fd(probe)[0] >= 0) return probe;
      next = 0.5 * (a + b);
    }
    x = next;
  }
  return a;
}

/** The samples' mean and their sum of squared deviations from it (two passes). */
function moments(z: Float64Array): { mean: number; ss: number } {
  let mean = 0;
  for (let i = 0; i < z.length; i++) mean += z[i]!;
  mean /= z.length;
  let ss = 0;
  for (let i = 0; i < z.length; i++) ss += (z[i]! - mean) ** 2;
  return { mean, ss };
}

/** Empirical Bernstein: x̄ − √(2 V ln(2/η) / N) − 7 ln(2/η) / (3 (N − 1)), V the unbiased sample variance. */
function bernsteinLower01(z: Float64Array, eta: number): number {
  const N = z.length;
  if (N < 2) return 0;
  const { mean, ss } = moments(z);
  const V = ss / (N - 1);
  const l = Math.log(2 / eta);
  return Math.max(0, mean - Math.sqrt((2 * V * l) / N) - (7 * l) / (3 * (N - 1)));
}

/** Hoeffding: x̄ − √(ln(1/η) / (2N)); the worst-case-range control. */
function hoeffdingLower01(z: Float64Array, eta: number): number {
  const N = z.length;
  return Math.max(0, moments(z).mean - Math.sqrt(Math.log(1 / eta) / (2 * N)));
}

const LOWER01: Record<BoundKind, (z: Float64Array, eta: number, horizon?: number) => number> = {
  betting: bettingLower01,
  bernstein: bernsteinLower01,
  hoeffding: hoeffdingLower01,
};

/**
 * L with P(E[x] ≥ L) ≥ 1 − η, for i.i.d. samples known to lie in [lo, hi]. With no samples the
 * only honest answer is lo. `horizon` (betting only): the sample count the stakes are tuned for;
 * fixed in advance it makes the bound a confidence sequence (header). Bernstein and Hoeffding have
 * no anytime form here and refuse one.
 */
export function lowerConfidenceBound(kind: BoundKind, xs: ArrayLike<number>, lo: number, hi: number, eta: number, horizon?: number): number {
  const fn = `lowerConfidenceBound(${kind})`;
  checkEta(eta, fn);
  if (horizon !== undefined && kind !== 'betting') throw new RangeError(`${fn}: a horizon (anytime-valid bound) needs the betting bound`);
  const z = scaled(xs, lo, hi, fn);
  if (z.length === 0 || hi === lo) return lo;
  return lo + (hi - lo) * LOWER01[kind](z, eta, horizon);
}

/**
 * L with P(E[x] ≥ L) ≥ 1 − η for i.i.d. samples known only to satisfy x ≥ lo — no upper end
 * (docs/certificate.md §5.2). The betting bound needs no more: the gambler bets only that the mean
 * exceeds m (λ ≥ 0), so a factor 1 + λ(x − m) can reach 0 only through a low x, and λ·(m − lo) ≤
 * BET_CAP < 1 keeps it positive; a high x only raises the capital. At the true mean each factor
 * has expectation 1 whatever the upper tail (the mean must be finite), so Markov's inequality
 * applies as in `bettingLower01`. `scale` > 0 is the unit the bets' plug-in estimates start from
 * (their priors ½ and ¼ are in units of `scale` above lo); any positive value fixed before the
 * samples keeps the bound valid; the reward range is the natural one. `horizon`: as in
 * `lowerConfidenceBound`.
 */
export function lowerConfidenceBoundBelow(xs: ArrayLike<number>, lo: number, scale: number, eta: number, horizon?: number): number {
  const fn = 'lowerConfidenceBoundBelow';
  checkEta(eta, fn);
  if (!(Number.isFinite(lo) && Number.isFinite(scale) && scale > 0)) throw new RangeError(`${fn}: lower end ${lo} and scale ${scale}; expected a finite lower end and a positive finite scale`);
  const tol = 1e-9 * Math.max(1, Math.abs(lo));
  const z = new Float64Array(xs.length);
  let top = 1;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i]!;
    if (!Number.isFinite(x) || x < lo - tol) throw new RangeError(`${fn}: sample ${i} = ${x} lies below the stated lower end ${lo} (or is not finite)`);
    z[i] = Math.max(0, (x - lo) / scale);
    top = Math.max(top, z[i]!);
  }
  if (z.length === 0) return lo;
  return lo + scale * bettingLowerZ(z, eta, top, horizon);
}
