/**
 * Stage-0 alignment (docs/method.md §8.1): before a swapped-in pretrained agent π_pre joins a
 * stage, each state's action distribution is projected into the KL ball of radius δ0 around the
 * current agent π_cur — π_new = argmin KL(π‖π_pre) s.t. KL(π‖π_cur) ≤ δ0 — so the first stage
 * starts inside the trust region the certificate assumes. The closed form
 * π_λ ∝ π_pre^{1/(1+λ)}·π_cur^{λ/(1+λ)} and the bisection for λ are derived in §8.1.
 *
 * Not here: distilling π_new into weights, sampling from it, choosing δ0(s), or plotting λ(s).
 */

import { ConfigError, NumericError } from '../core/errors';
import { klFromLogits, logSoftmax, type Logits } from './categorical';

export interface Stage0Options {
  /**
   * Stop when |KL(π_new‖π_cur) − δ0| ≤ min(tol, δ0·1e-3). Default tol 1e-9. The relative cap keeps
   * λ meaningful for tiny radii (with δ0 = 1e-12 an absolute 1e-9 would accept almost any t).
   */
  tol?: number;
  /** Most bisection steps (each is one KL evaluation). Default 200. */
  maxIter?: number;
}

export interface Stage0StateResult {
  /** Log-probabilities of π_new (normalised: logSumExp = 0). */
  logits: Float64Array;
  /**
   * The multiplier λ ≥ 0 (0 when π_pre was already inside the radius). By the envelope theorem it
   * is also the price of the radius: d/dδ0 of min KL(π‖π_pre) = −λ. Infinity only if maxIter ran
   * out before the bracket left t = 1 (then π_new = π_cur).
   */
  lambda: number;
  /** KL(π_new‖π_cur). */
  kl: number;
  /** KL(π_pre‖π_cur): how far outside the radius π_pre started. */
  klPre: number;
  /** Bisection steps taken (0 when λ = 0). */
  iterations: number;
}

export interface Stage0TableResult {
  /** One result per state, in input order. */
  states: Stage0StateResult[];
  /** λ(s) per state (for the histogram). */
  lambdas: number[];
  /** KL(π_new(·|s)‖π_cur(·|s)) per state (for the quantiles). */
  kls: number[];
  /** KL(π_pre(·|s)‖π_cur(·|s)) per state: what the first stage would have faced without Stage-0. */
  klsPre: number[];
  /** Fraction of states with λ > 0 (0 for an empty table). */
  projectedFraction: number;
}

const DEFAULT_TOL = 1e-9;
const DEFAULT_MAX_ITER = 200;
/** The stopping tolerance never exceeds this fraction of δ0 (see Stage0Options.tol). */
const REL_TOL_CAP = 1e-3;

function checkDelta(delta0: number, where: string): void {
  if (!Number.isFinite(delta0) || delta0 <= 0) {
    throw new ConfigError(
      'stage0Delta',
      delta0,
      `Stage-0 radius δ0${where} must be a finite number > 0, got ${delta0}`,
    );
  }
}

function readOptions(opts: Stage0Options | undefined): { tol: number; maxIter: number } {
  const tol = opts?.tol ?? DEFAULT_TOL;
  const maxIter = opts?.maxIter ?? DEFAULT_MAX_ITER;
  if (!Number.isFinite(tol) || tol <= 0) {
    throw new ConfigError('stage0Tol', tol, `Stage-0 tolerance must be a finite number > 0, got ${tol}`);
  }
  if (!Number.isInteger(maxIter) || maxIter < 1) {
    throw new ConfigError(
      'stage0MaxIter',
      maxIter,
      `Stage-0 maxIter must be an integer ≥ 1, got ${maxIter}`,
    );
  }
  return { tol, maxIter };
}

function checkFinite(logits: Logits, what: string): void {
  for (let i = 0; i < logits.length; i++) {
    const z = logits[i]!;
    if (!Number.isFinite(z)) {
      throw new NumericError(`${what}[${i}] is ${z}; Stage-0 needs finite logits`);
    }
  }
}

/** log π_t = logSoftmax((1−t)·lpPre + t·lpCur), written into `out` (the geometric path). */
function mixInto(lpPre: Float64Array, lpCur: Float64Array, t: number, out: Float64Array): void {
  const s = 1 - t;
  for (let i = 0; i < out.length; i++) out[i] = s * lpPre[i]! + t * lpCur[i]!;
  logSoftmax(out, out);
}

/** The projection, δ0 and options already validated; `label` names the state in error messages. */
function projectValidated(
  logitsPre: Logits,
  logitsCur: Logits,
  delta0: number,
  tol: number,
  maxIter: number,
  label: string,
): Stage0StateResult {
  if (logitsPre.length !== logitsCur.length) {
    throw new RangeError(
      `Stage-0${label}: π_pre has ${logitsPre.length} actions but π_cur has ${logitsCur.length}`,
    );
  }
  if (logitsPre.length === 0) throw new RangeError(`Stage-0${label}: empty action set`);
  checkFinite(logitsPre, `logitsPre${label}`);
  checkFinite(logitsCur, `logitsCur${label}`);

  const lpPre = logSoftmax(logitsPre);
  const lpCur = logSoftmax(logitsCur);
  const klPre = klFromLogits(lpPre, lpCur);

  // Complementary slackness, case λ = 0: π_pre is feasible, so it is its own projection.
  if (klPre <= delta0) return { logits: lpPre, lambda: 0, kl: klPre, klPre, iterations: 0 };

  // Case "constraint tight": solve f(t) = KL(π_t‖π_cur) = δ0 on the bracket f(lo) > δ0 ≥ f(hi).
  const tolEff = Math.min(tol, delta0 * REL_TOL_CAP);
  let lo = 0;
  let hi = 1;
  let klHi = 0; // f(1) = KL(π_cur‖π_cur) = 0
  const cand = new Float64Array(lpPre.length);
  let iterations = 0;
  while (iterations < maxIter) {
    const mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break; // the bracket is one ulp wide: double precision is spent
    iterations++;
    mixInto(lpPre, lpCur, mid, cand);
    const kl = klFromLogits(cand, lpCur);
    if (Math.abs(kl - delta0) <= tolEff) {
      return { logits: cand, lambda: mid / (1 - mid), kl, klPre, iterations };
    }
    if (kl > delta0) lo = mid;
    else {
      hi = mid;
      klHi = kl;
    }
  }
  // Tolerance not met: return the feasible end of the bracket (KL ≤ δ0).
  mixInto(lpPre, lpCur, hi, cand);
  return { logits: cand, lambda: hi / (1 - hi), kl: klHi, klPre, iterations };
}

/**
 * Stage-0 projection of one state: bisection in t = λ/(1+λ) ∈ [0, 1] on f(t) = KL(π_t‖π_cur),
 * which falls monotonically from KL(π_pre‖π_cur) to 0 (docs/method.md §8.1). The result has
 * |KL(π_new‖π_cur) − δ0| ≤ min(tol, δ0·1e-3) when bisection meets the tolerance, else it is the
 * bracket's feasible end; either way KL(π_new‖π_cur) ≤ δ0 + tol.
 *
 * @param logitsPre logits (or log-probs) of π_pre over the actions
 * @param logitsCur logits (or log-probs) of π_cur over the same actions
 * @param delta0    KL radius δ0 > 0 (the stage0Delta setting, default 0.01; docs/method.md §8.2)
 * @throws ConfigError('stage0Delta') for δ0 ≤ 0 or non-finite; ConfigError('stage0Tol' |
 *         'stage0MaxIter') for bad options; RangeError for a length mismatch or no actions;
 *         NumericError for a non-finite logit.
 */
export function projectState(
  logitsPre: Logits,
  logitsCur: Logits,
  delta0: number,
  opts?: Stage0Options,
): Stage0StateResult {
  checkDelta(delta0, '');
  const { tol, maxIter } = readOptions(opts);
  return projectValidated(logitsPre, logitsCur, delta0, tol, maxIter, '');
}

/**
 * Stage-0 projection of every state of a tabular agent, plus the summary arrays the UI plots
 * (λ(s) histogram, KL quantiles). `delta0` is one radius for all states or one per state (δ0(s)).
 *
 * @throws as projectState, with the state index in the message; RangeError when the tables (or a
 *         per-state δ0 array) have different numbers of states.
 */
export function projectTable(
  pre: readonly Logits[],
  cur: readonly Logits[],
  delta0: number | readonly number[],
  opts?: Stage0Options,
): Stage0TableResult {
  if (pre.length !== cur.length) {
    throw new RangeError(`Stage-0: π_pre has ${pre.length} states but π_cur has ${cur.length}`);
  }
  if (typeof delta0 !== 'number' && delta0.length !== pre.length) {
    throw new RangeError(`Stage-0: ${delta0.length} radii δ0(s) for ${pre.length} states`);
  }
  const { tol, maxIter } = readOptions(opts);
  const states: Stage0StateResult[] = [];
  const lambdas: number[] = [];
  const kls: number[] = [];
  const klsPre: number[] = [];
  let projected = 0;
  for (let s = 0; s < pre.length; s++) {
    const d = typeof delta0 === 'number' ? delta0 : delta0[s]!;
    checkDelta(d, ` (state ${s})`);
    const r = projectValidated(pre[s]!, cur[s]!, d, tol, maxIter, ` (state ${s})`);
    states.push(r);
    lambdas.push(r.lambda);
    kls.push(r.kl);
    klsPre.push(r.klPre);
    if (r.lambda > 0) projected++;
  }
  const projectedFraction = pre.length === 0 ? 0 : projected / pre.length;
  return { states, lambdas, kls, klsPre, projectedFraction };
}

/** Edges of the λ(s) histogram the CLI and the charts show (the last bin is open: λ ≥ 10). */
export const LAMBDA_EDGES: readonly number[] = [0, 1e-3, 1e-2, 0.1, 1, 10, Infinity];

/** Counts of λ(s) per bin [LAMBDA_EDGES[b], LAMBDA_EDGES[b+1]). */
export function lambdaHistogram(lambdas: readonly number[]): number[] {
  return LAMBDA_EDGES.slice(1).map((hi, b) => lambdas.filter((l) => l >= LAMBDA_EDGES[b]! && l < hi).length);
}
