/**
 * Small, exact-where-possible statistics for reporting results: moments, quantiles, confidence
 * intervals (Student t for means, Wilson for proportions), histograms, a log–log power-law fit and
 * the Dvoretzky–Kiefer–Wolfowitz band width.
 *
 * Everything is a pure function of its arguments (`ArrayLike<number>`, so `number[]` and
 * `Float64Array` both work). The special functions the intervals need — log Γ, the regularized
 * incomplete beta and gamma functions, erfc, and the normal and Student-t quantiles — are written
 * out here from their textbook series and continued fractions, so a reader can follow every digit;
 * each cites the formula it implements.
 *
 * Conventions: invalid arguments (empty input where a value is needed, a probability outside
 * [0, 1], mismatched lengths, NaN where an order is needed) throw `RangeError` with a message that
 * names the argument. A continued fraction that fails to converge throws `NumericError`.
 *
 * Not here: random sampling (see `rng.ts`), streaming/online statistics, hypothesis tests, or any
 * distribution beyond normal and Student t. Not a replacement for a statistics library: only what
 * the playground reports.
 */

import { NumericError } from './errors';

// ---------------------------------------------------------------------------------------------
// Moments
// ---------------------------------------------------------------------------------------------

function requireNonEmpty(xs: ArrayLike<number>, fn: string): void {
  if (xs.length === 0) throw new RangeError(`${fn}: input is empty; need at least one value`);
}

/**
 * Σ xᵢ, by Neumaier's compensated summation: a running correction term keeps the low-order bits
 * that plain left-to-right addition throws away (error O(ε) instead of O(nε)). Empty sum = 0.
 */
export function sum(xs: ArrayLike<number>): number {
  let s = 0;
  let c = 0; // accumulated lost low-order bits
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i]!;
    const t = s + x;
    c += Math.abs(s) >= Math.abs(x) ? s - t + x : x - t + s;
    s = t;
  }
  return s + c;
}

/** Arithmetic mean x̄ = (1/n) Σ xᵢ. Throws RangeError on empty input. */
export function mean(xs: ArrayLike<number>): number {
  requireNonEmpty(xs, 'mean');
  return sum(xs) / xs.length;
}

/** Σ (xᵢ − m)², two-pass (m computed first), which avoids the cancellation of Σx² − n·m². */
function sumSquaredDeviations(xs: ArrayLike<number>, m: number): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) {
    const d = xs[i]! - m;
    s += d * d;
  }
  return s;
}

/** Population standard deviation σ = √((1/n) Σ (xᵢ − x̄)²). Throws RangeError on empty input. */
export function popStd(xs: ArrayLike<number>): number {
  requireNonEmpty(xs, 'popStd');
  return Math.sqrt(sumSquaredDeviations(xs, mean(xs)) / xs.length);
}

/**
 * Sample standard deviation s = √((1/(n−1)) Σ (xᵢ − x̄)²) (Bessel's correction: s² is unbiased
 * for the variance). Throws RangeError when n < 2.
 */
export function sampleStd(xs: ArrayLike<number>): number {
  if (xs.length < 2) throw new RangeError(`sampleStd: need at least 2 values, got ${xs.length}`);
  return Math.sqrt(sumSquaredDeviations(xs, mean(xs)) / (xs.length - 1));
}

function checkWeights(xs: ArrayLike<number>, ws: ArrayLike<number>, fn: string): number {
  if (xs.length !== ws.length) {
    throw new RangeError(`${fn}: ${xs.length} values but ${ws.length} weights; need equal lengths`);
  }
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i]!;
    if (!(w >= 0) || !Number.isFinite(w)) {
      throw new RangeError(`${fn}: weight ${i} is ${w}; weights must be finite and ≥ 0`);
    }
  }
  const total = sum(ws);
  if (!(total > 0)) throw new RangeError(`${fn}: weights sum to ${total}; need a positive total`);
  return total;
}

/**
 * Weighted mean μ_w = Σ wᵢxᵢ / Σ wᵢ. Weights need not be normalised but must be finite, ≥ 0 and
 * not all zero (else RangeError).
 */
export function weightedMean(xs: ArrayLike<number>, ws: ArrayLike<number>): number {
  const total = checkWeights(xs, ws, 'weightedMean');
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += ws[i]! * xs[i]!;
  return s / total;
}

/**
 * Weighted population standard deviation σ_w = √(Σ wᵢ (xᵢ − μ_w)² / Σ wᵢ): the standard deviation
 * of the distribution that puts mass wᵢ/Σw on xᵢ. (No "n − 1" correction: with weights that are
 * probabilities there is no sample size to correct for.)
 */
export function weightedPopStd(xs: ArrayLike<number>, ws: ArrayLike<number>): number {
  const total = checkWeights(xs, ws, 'weightedPopStd');
  const m = weightedMean(xs, ws);
  let s = 0;
  for (let i = 0; i < xs.length; i++) {
    const d = xs[i]! - m;
    s += ws[i]! * d * d;
  }
  return Math.sqrt(s / total);
}

// ---------------------------------------------------------------------------------------------
// Quantiles
// ---------------------------------------------------------------------------------------------

function checkProbability(p: number, fn: string): void {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`${fn}: p = ${p}; must lie in [0, 1]`);
}

/** A sorted copy (ascending). Throws RangeError on NaN, which has no place in an order. */
function sortedCopy(xs: ArrayLike<number>, fn: string): Float64Array {
  const a = Float64Array.from(xs);
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(a[i]!)) throw new RangeError(`${fn}: value ${i} is NaN`);
  }
  return a.sort(); // typed-array sort is numeric
}

export type QuantileMethod = 'inverted-cdf' | 'linear';

/**
 * The p-quantile of a sample x₍₁₎ ≤ … ≤ x₍ₙ₎ (Hyndman & Fan 1996, "Sample quantiles in
 * statistical packages"):
 *
 * - `'inverted-cdf'` (type 1): the smallest x₍ₖ₎ whose empirical CDF k/n is ≥ p, i.e.
 *   k = max(1, ⌈np⌉). Always a value from the sample. The condition k/n ≥ p is tested directly,
 *   because ⌈np⌉ can be off by one in floating point (100 × 0.07 = 7.000000000000001).
 * - `'linear'` (type 7, the numpy and R default): with h = (n − 1)p (0-based),
 *   Q = x₍⌊h⌋₎ + (h − ⌊h⌋)(x₍⌊h⌋+1₎ − x₍⌊h⌋₎), linear between order statistics; Q(0) = min,
 *   Q(1) = max.
 *
 * Throws RangeError on empty input, on p outside [0, 1], or on NaN in the data.
 */
export function quantile(
  xs: ArrayLike<number>,
  p: number,
  method: QuantileMethod = 'linear',
): number {
  requireNonEmpty(xs, 'quantile');
  checkProbability(p, 'quantile');
  const a = sortedCopy(xs, 'quantile');
  const n = a.length;
  if (method === 'inverted-cdf') {
    // Start from ⌈np⌉ and correct by the definition ECDF(x₍ₖ₎) = k/n ≥ p.
    let k = Math.min(n, Math.max(1, Math.ceil(n * p)));
    while (k > 1 && (k - 1) / n >= p) k--;
    while (k < n && k / n < p) k++;
    return a[k - 1]!;
  }
  const h = (n - 1) * p;
  const lo = Math.floor(h);
  if (lo >= n - 1) return a[n - 1]!;
  const lower = a[lo]!;
  const upper = a[lo + 1]!;
  return lower + (h - lo) * (upper - lower);
}

// ---------------------------------------------------------------------------------------------
// Special functions
// ---------------------------------------------------------------------------------------------

/** Machine-level target for the series and continued fractions below. */
const EPS = 1e-15;
/** Stands in for 0 in Lentz's method, where a zero denominator would divide by zero. */
const TINY = 1e-300;
/** Continued fractions for large shape parameters need O(√max(a, b)) terms; this is ample. */
const MAX_ITER = 100_000;

/** Lanczos coefficients, g = 7, n = 9 (Godfrey's set; relative error ~1e-15 for z > 0). */
const LANCZOS_G = 7;
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
  -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
  1.5056327351493116e-7,
];

/**
 * Weighted inverted-CDF quantile: the smallest x_i whose cumulative weight (values sorted
 * ascending) reaches p of the total — `quantile(…, 'inverted-cdf')` with weights instead of
 * repeated values (e.g. states weighted by how often they are visited). Zero-weight values never
 * count. Throws RangeError on empty input, mismatched lengths, p outside [0, 1], NaN values, or
 * weights that are negative, non-finite or all zero.
 */
export function weightedQuantile(xs: ArrayLike<number>, ws: ArrayLike<number>, p: number): number {
  if (xs.length === 0) throw new RangeError('weightedQuantile: input is empty');
  if (xs.length !== ws.length) throw new RangeError(`weightedQuantile: ${xs.length} values but ${ws.length} weights`);
  if (!(p >= 0 && p <= 1)) throw new RangeError(`weightedQuantile: p = ${p}; need 0 ≤ p ≤ 1`);
  let total = 0;
  for (let i = 0; i < ws.length; i++) {
    if (Number.isNaN(xs[i]!)) throw new RangeError(`weightedQuantile: value ${i} is NaN`);
    if (!(ws[i]! >= 0 && Number.isFinite(ws[i]!))) throw new RangeError(`weightedQuantile: weight ${i} = ${ws[i]}; need finite ≥ 0`);
    total += ws[i]!;
  }
  if (total <= 0) throw new RangeError('weightedQuantile: the weights sum to 0');
  const order = Array.from({ length: xs.length }, (_, i) => i).filter((i) => ws[i]! > 0).sort((a, b) => xs[a]! - xs[b]!);
  let acc = 0;
  for (const i of order) {
    acc += ws[i]!;
    if (acc >= p * total * (1 - 1e-12)) return xs[i]!;
  }
  return xs[order[order.length - 1]!]!;
}

/**
 * ln Γ(z) for z > 0, by the Lanczos approximation (Lanczos 1964):
 * Γ(z + 1) ≈ √(2π) (z + g + ½)^(z + ½) e^−(z + g + ½) · [c₀ + Σₖ cₖ/(z + k)].
 * For 0 < z < ½ it uses the reflection formula Γ(z)Γ(1 − z) = π / sin(πz).
 */
export function logGamma(z: number): number {
  if (!(z > 0)) throw new RangeError(`logGamma: z = ${z}; implemented for z > 0 only`);
  if (z < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * z)) - logGamma(1 - z);
  const zm1 = z - 1;
  let series = LANCZOS[0]!;
  for (let k = 1; k < LANCZOS.length; k++) series += LANCZOS[k]! / (zm1 + k);
  const t = zm1 + LANCZOS_G + 0.5;
  return 0.5 * Math.log(2 * Math.PI) + (zm1 + 0.5) * Math.log(t) - t + Math.log(series);
}

/**
 * I_x(a, b) given both x and y = 1 − x, so that callers who know the small one of the two exactly
 * do not lose it to the subtraction 1 − x.
 *
 * I_x(a, b) = x^a y^b / (a B(a, b)) · 1 / (1 + d₁/(1 + d₂/(1 + …))), with
 *   d₂ₘ₊₁ = −(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)),
 *   d₂ₘ   =  m (b − m) x / ((a + 2m − 1)(a + 2m))
 * (Abramowitz & Stegun 26.5.8; Numerical Recipes §6.4). The fraction converges fast for
 * x < (a + 1)/(a + b + 2); above that we use the symmetry I_x(a, b) = 1 − I_y(b, a).
 * The fraction is evaluated by the modified Lentz method (Lentz 1976; Thompson & Barnett 1986).
 */
function incompleteBeta(x: number, y: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (y <= 0) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - incompleteBeta(y, x, b, a);
  const logFront =
    a * Math.log(x) + b * Math.log(y) - (logGamma(a) + logGamma(b) - logGamma(a + b));
  // Lentz: f = b₀ + a₁/(b₁ + a₂/(b₂ + …)) with b₀ = bⱼ = 1 and aⱼ = dⱼ.
  let f = 1;
  let C = 1;
  let D = 0;
  for (let j = 1; j <= MAX_ITER; j++) {
    const m = Math.floor(j / 2);
    const dj =
      j % 2 === 1
        ? (-(a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))
        : (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m));
    D = 1 + dj * D;
    if (Math.abs(D) < TINY) D = TINY;
    C = 1 + dj / C;
    if (Math.abs(C) < TINY) C = TINY;
    D = 1 / D;
    const delta = C * D;
    f *= delta;
    if (Math.abs(delta - 1) < EPS) return Math.exp(logFront) / (a * f);
  }
  throw new NumericError(
    `incomplete beta I_${x}(${a}, ${b}): continued fraction did not converge in ${MAX_ITER} terms`,
  );
}

/**
 * The regularized incomplete beta function I_x(a, b) = B(x; a, b) / B(a, b)
 * = (1/B(a, b)) ∫₀ˣ t^(a−1) (1 − t)^(b−1) dt, for a, b > 0 and x ∈ [0, 1]: the CDF of a
 * Beta(a, b) variable. Computed by its continued fraction (see `incompleteBeta` above).
 */
export function regularizedIncompleteBeta(x: number, a: number, b: number): number {
  if (!(a > 0 && b > 0)) throw new RangeError(`regularizedIncompleteBeta: a = ${a}, b = ${b}; need a, b > 0`);
  if (!(x >= 0 && x <= 1)) throw new RangeError(`regularizedIncompleteBeta: x = ${x}; need x ∈ [0, 1]`);
  return incompleteBeta(x, 1 - x, a, b);
}

/**
 * The regularized lower and upper incomplete gamma functions P(a, x) = γ(a, x)/Γ(a) and
 * Q(a, x) = 1 − P(a, x), returned as the pair [P, Q] (each computed without subtracting from 1
 * where it is the small one). Numerical Recipes §6.2:
 * - x < a + 1: the series γ(a, x) = e^−x x^a Σₙ xⁿ / (a(a + 1)…(a + n)) (A&S 6.5.29);
 * - otherwise: the continued fraction
 *   Γ(a, x) = e^−x x^a · 1/(x + 1 − a − 1·(1 − a)/(x + 3 − a − 2·(2 − a)/(x + 5 − a − …)))
 *   (A&S 6.5.31), by modified Lentz.
 */
function incompleteGamma(a: number, x: number): [number, number] {
  if (x <= 0) return [0, 1];
  const logFront = -x + a * Math.log(x) - logGamma(a);
  if (x < a + 1) {
    let term = 1 / a;
    let total = term;
    for (let n = 1; n <= MAX_ITER; n++) {
      term *= x / (a + n);
      total += term;
      if (Math.abs(term) < Math.abs(total) * EPS) {
        const P = total * Math.exp(logFront);
        return [P, 1 - P];
      }
    }
    throw new NumericError(`incomplete gamma P(${a}, ${x}): series did not converge`);
  }
  // Lentz on 1/(b₁ + a₂/(b₂ + a₃/(b₃ + …))), bⱼ = x + 2j − 1 − a, aⱼ₊₁ = −j(j − a).
  let bj = x + 1 - a;
  let C = 1 / TINY;
  let D = 1 / bj;
  let h = D;
  for (let j = 1; j <= MAX_ITER; j++) {
    const aj = -j * (j - a);
    bj += 2;
    D = aj * D + bj;
    if (Math.abs(D) < TINY) D = TINY;
    C = bj + aj / C;
    if (Math.abs(C) < TINY) C = TINY;
    D = 1 / D;
    const delta = C * D;
    h *= delta;
    if (Math.abs(delta - 1) < EPS) {
      const Q = h * Math.exp(logFront);
      return [1 - Q, Q];
    }
  }
  throw new NumericError(`incomplete gamma Q(${a}, ${x}): continued fraction did not converge`);
}

/**
 * The complementary error function erfc(x) = (2/√π) ∫ₓ^∞ e^(−t²) dt, accurate to ~1e-15
 * relative even far in the tail, via erfc(x) = Q(½, x²) for x ≥ 0 (A&S 7.1.2 with 6.5.17) and
 * erfc(−x) = 2 − erfc(x).
 */
export function erfc(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (x < 0) return 2 - erfc(-x);
  return incompleteGamma(0.5, x * x)[1];
}

/** Standard normal CDF Φ(x) = ½ erfc(−x/√2). */
export function normalCdf(x: number): number {
  return 0.5 * erfc(-x / Math.SQRT2);
}

// Acklam's rational approximation to Φ⁻¹ (P. J. Acklam, 2003), relative error < 1.15e-9.
const ACKLAM_A = [
  -3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2,
  -3.066479806614716e1, 2.506628277459239,
];
const ACKLAM_B = [
  -5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1,
  -1.328068155288572e1,
];
const ACKLAM_C = [
  -7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734,
  4.374664141464968, 2.938163982698783,
];
const ACKLAM_D = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
const ACKLAM_P_LOW = 0.02425;

/** Horner evaluation of c₀xⁿ + c₁xⁿ⁻¹ + … + cₙ. */
function horner(coeffs: readonly number[], x: number): number {
  let acc = 0;
  for (const c of coeffs) acc = acc * x + c;
  return acc;
}

/** Acklam's approximation for p ∈ (0, ½] (the lower half; the upper half follows by symmetry). */
function acklamLowerHalf(p: number): number {
  if (p < ACKLAM_P_LOW) {
    const q = Math.sqrt(-2 * Math.log(p));
    return horner(ACKLAM_C, q) / (horner(ACKLAM_D, q) * q + 1);
  }
  const q = p - 0.5;
  const r = q * q;
  return (horner(ACKLAM_A, r) * q) / (horner(ACKLAM_B, r) * r + 1);
}

/**
 * Standard normal quantile Φ⁻¹(p): Acklam's rational approximation (relative error < 1.15e-9),
 * then one Halley step on Φ(x) − p using the accurate `normalCdf`, which brings it to near full
 * double precision: with e = Φ(x) − p and u = e / φ(x) = e·√(2π)·e^(x²/2),
 * x ← x − u / (1 + x·u/2).
 * For p > ½ we return −Φ⁻¹(1 − p); 1 − p is exact there (Sterbenz), so no precision is lost.
 * Φ⁻¹(0) = −∞, Φ⁻¹(1) = +∞; p outside [0, 1] throws RangeError.
 */
export function normalQuantile(p: number): number {
  checkProbability(p, 'normalQuantile');
  if (p === 0) return -Infinity;
  if (p === 1) return Infinity;
  if (p > 0.5) return -normalQuantile(1 - p);
  const x = acklamLowerHalf(p);
  const e = normalCdf(x) - p;
  const u = e * Math.sqrt(2 * Math.PI) * Math.exp((x * x) / 2);
  const refined = x - u / (1 + (x * u) / 2);
  return Number.isFinite(refined) ? refined : x; // the Halley step can overflow for p ~ 1e-308
}

function checkDf(df: number, fn: string): void {
  if (!(df > 0)) throw new RangeError(`${fn}: df = ${df}; degrees of freedom must be > 0`);
}

/**
 * CDF of Student's t with ν = df degrees of freedom (df > 0, not necessarily an integer):
 * for t ≤ 0, F(t) = ½ I_x(ν/2, ½) with x = ν/(ν + t²) (A&S 26.7.1 with 26.5.27), and
 * F(t) = 1 − F(−t). df = ∞ gives Φ(t).
 */
export function studentTCdf(t: number, df: number): number {
  checkDf(df, 'studentTCdf');
  if (df === Infinity) return normalCdf(t);
  if (Number.isNaN(t)) return NaN;
  if (!Number.isFinite(t)) return t > 0 ? 1 : 0;
  const t2 = t * t;
  const tail = 0.5 * incompleteBeta(df / (df + t2), t2 / (df + t2), df / 2, 0.5);
  return t > 0 ? 1 - tail : tail;
}

/**
 * Finds x ∈ [lo, hi] with f(x) = target for an increasing f, by bisection run until the interval
 * cannot shrink further in floating point (so the answer is as good as f's own accuracy).
 */
function bisectIncreasing(f: (x: number) => number, target: number, lo: number, hi: number): number {
  for (let i = 0; i < 2200; i++) {
    const mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    if (f(mid) < target) lo = mid;
    else hi = mid;
  }
  return lo + (hi - lo) / 2;
}

/**
 * Quantile of Student's t with ν = df > 0 degrees of freedom (df = ∞ gives the normal quantile).
 *
 * By symmetry take the tail probability q = 2·min(p, 1 − p) = P(|T| > t) = I_x(ν/2, ½) with
 * x = ν/(ν + t²). We solve that equation for x by bisection on the continued-fraction I_x (which
 * is increasing in x) and return t = √(ν(1 − x)/x). When q ≥ ½ the solution has x near 1, so we
 * solve instead for y = 1 − x = t²/(ν + t²) through I_y(½, ν/2) = 1 − q (the same identity
 * I_x(a, b) = 1 − I_{1−x}(b, a)) and return t = √(νy/(1 − y)): that way the small one of x, y is
 * always the unknown, and t keeps full relative precision even near p = ½.
 * Every subtraction here (1 − p for p ≥ ½, 1 − q for q ≥ ½) is exact in floating point.
 */
export function studentTQuantile(p: number, df: number): number {
  checkProbability(p, 'studentTQuantile');
  checkDf(df, 'studentTQuantile');
  if (df === Infinity) return normalQuantile(p);
  if (p === 0) return -Infinity;
  if (p === 1) return Infinity;
  if (p === 0.5) return 0;
  const sign = p < 0.5 ? -1 : 1;
  const q = 2 * Math.min(p, 1 - p); // two-sided tail probability, in (0, 1)
  const a = df / 2;
  let t: number;
  if (q < 0.5) {
    const x = bisectIncreasing((v) => incompleteBeta(v, 1 - v, a, 0.5), q, 0, 1);
    t = Math.sqrt((df * (1 - x)) / x);
  } else {
    const y = bisectIncreasing((v) => incompleteBeta(v, 1 - v, 0.5, a), 1 - q, 0, 1);
    t = Math.sqrt((df * y) / (1 - y));
  }
  return sign * t;
}

// ---------------------------------------------------------------------------------------------
// Confidence intervals
// ---------------------------------------------------------------------------------------------

function checkLevel(level: number, fn: string): void {
  if (!(level > 0 && level < 1)) throw new RangeError(`${fn}: level = ${level}; must lie in (0, 1)`);
}

export interface MeanCI {
  readonly mean: number;
  readonly lo: number;
  readonly hi: number;
  readonly halfWidth: number;
  readonly n: number;
}

/**
 * Two-sided confidence interval for the mean, x̄ ± t_{(1+level)/2, n−1} · s/√n (Student 1908;
 * exact when the data are i.i.d. normal, approximately right otherwise for moderate n).
 *
 * With fewer than 2 values the spread is unknown, so the interval is the whole line:
 * halfWidth = Infinity, lo = −Infinity, hi = +Infinity (never NaN). Empty input throws RangeError.
 */
export function meanCI(xs: ArrayLike<number>, level = 0.95): MeanCI {
  requireNonEmpty(xs, 'meanCI');
  checkLevel(level, 'meanCI');
  const n = xs.length;
  const m = mean(xs);
  if (n < 2) return { mean: m, lo: -Infinity, hi: Infinity, halfWidth: Infinity, n };
  const t = studentTQuantile((1 + level) / 2, n - 1);
  const halfWidth = (t * sampleStd(xs)) / Math.sqrt(n);
  return { mean: m, lo: m - halfWidth, hi: m + halfWidth, halfWidth, n };
}

export interface ProportionCI {
  /** The observed proportion p̂ = successes / n. */
  readonly p: number;
  readonly lo: number;
  readonly hi: number;
  /** The interval's midpoint (p̂ + z²/2n) / (1 + z²/n), pulled toward ½ from p̂. */
  readonly center: number;
  readonly n: number;
}

/**
 * Wilson score interval for a binomial proportion (Wilson 1927): the set of p for which the
 * score test |p̂ − p| ≤ z·√(p(1 − p)/n) does not reject, i.e.
 *   (p̂ + z²/2n ± z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n),   z = Φ⁻¹((1 + level)/2).
 * Unlike p̂ ± z·√(p̂(1 − p̂)/n) it stays inside [0, 1] and has sensible width at 0 or n successes.
 * Needs integers 0 ≤ successes ≤ n and n ≥ 1 (RangeError otherwise).
 */
export function wilsonInterval(successes: number, n: number, level = 0.95): ProportionCI {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`wilsonInterval: n = ${n}; need an integer ≥ 1`);
  if (!Number.isInteger(successes) || successes < 0 || successes > n) {
    throw new RangeError(`wilsonInterval: successes = ${successes}; need an integer in [0, ${n}]`);
  }
  checkLevel(level, 'wilsonInterval');
  const z = normalQuantile((1 + level) / 2);
  const z2 = z * z;
  const pHat = successes / n;
  const denom = 1 + z2 / n;
  const center = (pHat + z2 / (2 * n)) / denom;
  const half = (z / denom) * Math.sqrt((pHat * (1 - pHat)) / n + z2 / (4 * n * n));
  // At 0 or n successes the bound is exactly 0 or 1; clamp away rounding on the other side.
  const lo = successes === 0 ? 0 : Math.max(0, center - half);
  const hi = successes === n ? 1 : Math.min(1, center + half);
  return { p: pHat, lo, hi, center, n };
}

// ---------------------------------------------------------------------------------------------
// Histograms, regression, power laws, DKW
// ---------------------------------------------------------------------------------------------

export interface Histogram {
  /** bins + 1 increasing edges; edges[0] = lo, edges[bins] = hi exactly. */
  readonly edges: number[];
  readonly counts: number[];
}

/**
 * Equal-width histogram (numpy's convention): bin i holds edges[i] ≤ x < edges[i+1], except the
 * last bin, which also holds x = hi. Values outside [lo, hi] are not counted, so the counts sum to
 * the number of values in range.
 *
 * `range` defaults to [min, max] of the data; if those are equal it becomes [v − ½, v + ½].
 * Throws RangeError if bins is not a positive integer, the range is not finite with lo < hi, the
 * data contain NaN, or the data are empty and no range is given.
 */
export function histogram(
  xs: ArrayLike<number>,
  bins: number,
  range?: readonly [number, number],
): Histogram {
  if (!Number.isInteger(bins) || bins < 1) throw new RangeError(`histogram: bins = ${bins}; need an integer ≥ 1`);
  for (let i = 0; i < xs.length; i++) {
    if (Number.isNaN(xs[i]!)) throw new RangeError(`histogram: value ${i} is NaN`);
  }
  let lo: number;
  let hi: number;
  if (range) {
    [lo, hi] = range;
  } else {
    if (xs.length === 0) throw new RangeError('histogram: input is empty and no range was given');
    lo = Infinity;
    hi = -Infinity;
    for (let i = 0; i < xs.length; i++) {
      lo = Math.min(lo, xs[i]!);
      hi = Math.max(hi, xs[i]!);
    }
    if (lo === hi) {
      lo -= 0.5;
      hi += 0.5;
    }
  }
  if (!(Number.isFinite(lo) && Number.isFinite(hi) && lo < hi)) {
    throw new RangeError(`histogram: range [${lo}, ${hi}]; need finite lo < hi`);
  }
  const width = hi - lo;
  const edges = Array.from({ length: bins + 1 }, (_, i) => (i === bins ? hi : lo + (width * i) / bins));
  const counts = new Array<number>(bins).fill(0);
  for (let k = 0; k < xs.length; k++) {
    const x = xs[k]!;
    if (x < lo || x > hi) continue;
    // Arithmetic guess, then nudge so that edges[i] ≤ x < edges[i+1] holds exactly.
    let i = Math.min(bins - 1, Math.max(0, Math.floor(((x - lo) / width) * bins)));
    while (i > 0 && x < edges[i]!) i--;
    while (i < bins - 1 && x >= edges[i + 1]!) i++;
    counts[i]!++;
  }
  return { edges, counts };
}

export interface LinearFit {
  readonly slope: number;
  readonly intercept: number;
  /** Coefficient of determination 1 − SS_res/SS_tot (1 when the ys are all equal and fit exactly). */
  readonly r2: number;
  readonly n: number;
}

/**
 * Ordinary least squares y ≈ intercept + slope·x: slope = Sxy/Sxx, intercept = ȳ − slope·x̄, with
 * centred sums Sxx = Σ(x − x̄)², Sxy = Σ(x − x̄)(y − ȳ). r² = 1 − SS_res/SS_tot.
 * Throws RangeError on mismatched lengths, fewer than 2 points, or all x equal (Sxx = 0).
 */
export function linreg(xs: ArrayLike<number>, ys: ArrayLike<number>): LinearFit {
  if (xs.length !== ys.length) throw new RangeError(`linreg: ${xs.length} xs but ${ys.length} ys`);
  const n = xs.length;
  if (n < 2) throw new RangeError(`linreg: need at least 2 points, got ${n}`);
  const mx = mean(xs);
  const my = mean(ys);
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = xs[i]! - mx;
    const dy = ys[i]! - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (!(sxx > 0)) throw new RangeError('linreg: all x values are equal; the slope is undefined');
  const slope = sxy / sxx;
  const intercept = my - slope * mx;
  let ssRes = 0;
  for (let i = 0; i < n; i++) {
    const r = ys[i]! - (intercept + slope * xs[i]!);
    ssRes += r * r;
  }
  const r2 = syy > 0 ? 1 - ssRes / syy : 1;
  return { slope, intercept, r2, n };
}

export interface PowerLawFit {
  /** Prefactor c in y ≈ c·x^p. */
  readonly c: number;
  /** Exponent p. */
  readonly p: number;
  /** r² of the straight-line fit in log–log space. */
  readonly r2: number;
  /** How many points were kept (those with finite x > 0 and y > 0). */
  readonly used: number;
}

/**
 * Fits y ≈ c·x^p by least squares on log y = log c + p·log x (`linreg` in log–log space).
 * Points with x ≤ 0 or y ≤ 0 (or non-finite) have no logarithm and are DROPPED — in particular
 * zero-y points, such as a run that reached zero error; `used` says how many points remained.
 * Note that least squares in log space weights relative, not absolute, errors.
 * Throws RangeError if fewer than 2 points with distinct x remain.
 */
export function fitPowerLaw(xs: ArrayLike<number>, ys: ArrayLike<number>): PowerLawFit {
  if (xs.length !== ys.length) throw new RangeError(`fitPowerLaw: ${xs.length} xs but ${ys.length} ys`);
  const lx: number[] = [];
  const ly: number[] = [];
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i]!;
    const y = ys[i]!;
    if (x > 0 && y > 0 && Number.isFinite(x) && Number.isFinite(y)) {
      lx.push(Math.log(x));
      ly.push(Math.log(y));
    }
  }
  if (lx.length < 2) {
    throw new RangeError(`fitPowerLaw: only ${lx.length} points have x > 0 and y > 0; need at least 2`);
  }
  const fit = linreg(lx, ly);
  return { c: Math.exp(fit.intercept), p: fit.slope, r2: fit.r2, used: lx.length };
}

/**
 * Dvoretzky–Kiefer–Wolfowitz inequality with Massart's (1990) tight constant:
 * P(sup_x |F̂ₙ(x) − F(x)| > ε) ≤ 2e^(−2nε²). Setting the right side to η gives the width
 * ε = √(ln(2/η) / (2n)) of a band that holds the whole true CDF with probability ≥ 1 − η.
 * Needs n > 0 and η ∈ (0, 1] (RangeError otherwise).
 */
export function dkwEpsilon(n: number, eta: number): number {
  if (!(n > 0)) throw new RangeError(`dkwEpsilon: n = ${n}; need n > 0`);
  if (!(eta > 0 && eta <= 1)) throw new RangeError(`dkwEpsilon: eta = ${eta}; need η ∈ (0, 1]`);
  return Math.sqrt(Math.log(2 / eta) / (2 * n));
}
