/**
 * The statistics the playground reports, and only those: mean and sample standard deviation,
 * sample and weighted quantiles, the mean's Student-t interval (quantile from
 * `@stdlib/stats-base-dists-t-quantile`), equal-width histograms and a log–log power-law fit. Pure
 * functions of `ArrayLike<number>`; invalid arguments throw a RangeError naming the argument.
 *
 * Not here: random sampling (rng.ts), the certificate's bounds (confidence.ts), hypothesis tests.
 */
import tQuantile from '@stdlib/stats-base-dists-t-quantile';
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

/**
 * Sample standard deviation s = √((1/(n−1)) Σ (xᵢ − x̄)²) (Bessel's correction: s² is unbiased
 * for the variance). Throws RangeError when n < 2.
 */
export function sampleStd(xs: ArrayLike<number>): number {
  if (xs.length < 2) throw new RangeError(`sampleStd: need at least 2 values, got ${xs.length}`);
  return Math.sqrt(sumSquaredDeviations(xs, mean(xs)) / (xs.length - 1));
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
  const t = tQuantile((1 + level) / 2, n - 1);
  const halfWidth = (t * sampleStd(xs)) / Math.sqrt(n);
  return { mean: m, lo: m - halfWidth, hi: m + halfWidth, halfWidth, n };
}

// ---------------------------------------------------------------------------------------------
// Histograms, regression, power laws
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
