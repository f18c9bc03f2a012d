/**
 * The improvement certificate (docs/certificate.md): with probability ≥ 1 − δ_conf,
 *
 *   J(π̄) − J(π_cur) ≥ L,   L = a one-sided (1 − δ_conf) lower confidence bound on E[S],
 *   S_t = Σ_i X_{i,t}  (the t-th certification summand of every agent, summed),
 *
 * because E[S_t] = Σ_i E[X_i] ≤ Σ_i ΔJ_i = ΔJ and, given the training data, the agents'
 * certification batches are independent of each other and of every update (§5). Each agent's own
 * bound L_i (at 1 − δ_conf/n, so that Σ_i L_i is a valid but looser stage bound) is kept for the
 * per-agent view. For the agent j = σ(i) at position i of the order,
 *
 *   Ĝ_i   the *fresh* gain: the mean over a certification batch — units drawn under π̂ⁱ⁻¹ after
 *         j's training data and never seen by its update — of the importance-sampling summand
 *           X = (min(r_j, c) − 1)·(R − b),   r_j = Π over j's actions of π_new/π_old,
 *         whose expectation is ≤ ΔJ_i = J(π̂ⁱ) − J(π̂ⁱ⁻¹) (= when c covers every ratio) (§3–§4);
 *   L_i   a one-sided (1 − δ_conf/n) lower confidence bound for E[X] over the units, given an
 *         interval [lo, hi] that provably contains X (§5);
 *
 * and an agent whose update was rejected contributes exactly 0 (its parameters are restored bit
 * for bit, so ΔJ_i = 0). Because r_j is the exact trajectory likelihood ratio between π̂ⁱ and
 * π̂ⁱ⁻¹, the estimator targets ΔJ_i itself, not a per-step surrogate: there is no occupancy-shift
 * term and no estimator bias (shift = bias = 0, derived in §3 and §6), whatever the protocol.
 *
 * The paper's discounted form (γ, Hoeffding with the worst-case range over correlated episodes, a
 * shift of (2γ/(1−γ)²)·A_max·Σ√(δ_i/2)) is computed beside it as a control (§9): at γ = 0.99 it
 * is vacuous.
 *
 * Not here: drawing the certification batch or computing r (src/sat/stage.ts), the summand's exact
 * range on tabular games (src/sat/env/tabular.ts), the confidence bounds themselves (src/core/confidence.ts).
 */
import { lowerConfidenceBound, type BoundKind } from '../core/confidence';

export type CertForm = 'episodic' | 'gamma';

/** One agent step's certificate, measured by the stage loop. */
export interface AgentCertInput {
  readonly agent: number;
  /** Ĝ_i: the fresh estimate (mean summand over the certification units), reward units. */
  readonly gain: number;
  /** L_i: its own lower confidence bound at level 1 − δ_conf/n (the per-agent view). */
  readonly lower: number;
  /** The gain measured on the agent's own training batch at θ_new (optimistic; a diagnostic). */
  readonly gainInSample: number;
  /** The interval the summand provably lies in. */
  readonly range: readonly [number, number];
  /** Independent units (groups of `slots` episodes) and episodes in the certification batch. */
  readonly units: number;
  readonly episodes: number;
  /** The ratio truncation c (Infinity when the exact range covers every ratio). */
  readonly clip: number;
  /** Largest per-state KL(π_new‖π_old) the monitor saw (tabular: over every state, §8). */
  readonly klMax: number;
  /** Most turns at which agent j acts in one episode (the oracle envelope's multiplier). */
  readonly turns: number;
  /** The reuse estimator's measured bias ζ (probe vs training batch): a diagnostic, not in the bound. */
  readonly bias: number;
  /** False when the update was rejected: L_i = Ĝ_i = 0 exactly. */
  readonly moved: boolean;
}

export interface CertOptions {
  readonly n: number;
  readonly aMax: number;
  readonly gamma: number;
  readonly deltaConf: number;
  readonly form: CertForm;
}

export interface BoundTerms {
  /** Σ fresh gains Ĝ_i. */
  readonly gain: number;
  /** Σ in-sample gains (shown beside the fresh one: the optimism of fitting and scoring on the same data). */
  readonly gainInSample: number;
  readonly shift: number;
  readonly bias: number;
  readonly finite: number;
  /** gain − shift − bias − finite. */
  readonly lower: number;
  /** Upper envelope Σ_i m_j·A_max·√(klMax_i/2) on |ΔJ| (§7). */
  readonly oracle: number;
  /** lower > 0: the team certifiably improved. */
  readonly certified: boolean;
}

export interface Certificate {
  /** The form chosen by config (what cert/lower and cert/held use). */
  readonly chosen: BoundTerms;
  readonly gamma: BoundTerms;
  readonly episodic: BoundTerms;
  readonly form: CertForm;
}

/** Failure probability of each agent's bound: δ_conf split evenly over the n agents (union bound). */
export function perAgentEta(n: number, deltaConf: number): number {
  return deltaConf / Math.max(1, n);
}

/**
 * Ĝ_i and L_i from the certification units' summands, known to lie in `range`. `eta` is this
 * agent's failure probability (perAgentEta).
 */
export function freshBound(summands: ArrayLike<number>, range: readonly [number, number], eta: number, kind: BoundKind): { gain: number; lower: number } {
  let s = 0;
  for (let i = 0; i < summands.length; i++) s += summands[i]!;
  const gain = summands.length > 0 ? s / summands.length : 0;
  return { gain, lower: lowerConfidenceBound(kind, summands, range[0], range[1], eta) };
}

/** The paper's Hoeffding width: A_max √(log(2n/δ_conf)/(2N)), the γ form's finite term per agent. */
export function hoeffdingWidth(aMax: number, n: number, deltaConf: number, N: number): number {
  return N > 0 ? aMax * Math.sqrt(Math.log((2 * n) / deltaConf) / (2 * N)) : Infinity;
}

/** The stage's joint bound: the mean of S and its (1 − δ_conf) lower confidence bound (freshBound). */
export interface JointBound {
  readonly gain: number;
  readonly lower: number;
}

/** Our certificate (§5): the joint bound on the summed summands; shift and bias are 0 by construction. */
function episodicTerms(steps: readonly AgentCertInput[], joint: JointBound, aMax: number): BoundTerms {
  let gainInSample = 0;
  let oracle = 0;
  for (const s of steps) {
    gainInSample += s.gainInSample;
    oracle += s.turns * aMax * Math.sqrt(Math.max(0, s.klMax) / 2);
  }
  const { gain, lower } = joint;
  return { gain, gainInSample, shift: 0, bias: 0, finite: gain - lower, lower, oracle, certified: lower > 0 };
}

/** The paper's γ form (§9), as stated there, with the fresh gain and the largest per-state KL. */
function gammaTerms(steps: readonly AgentCertInput[], o: CertOptions): BoundTerms {
  const { aMax, gamma, n, deltaConf } = o;
  let gain = 0;
  let gainInSample = 0;
  let shift = 0;
  let bias = 0;
  let finite = 0;
  let oracle = 0;
  for (const s of steps) {
    const r = Math.max(0, s.klMax);
    gain += s.gain;
    gainInSample += s.gainInSample;
    shift += ((2 * gamma) / (1 - gamma) ** 2) * aMax * Math.sqrt(r / 2);
    bias += s.bias / (1 - gamma);
    finite += hoeffdingWidth(aMax, n, deltaConf, s.episodes) / (1 - gamma);
    oracle += (aMax / (1 - gamma)) * Math.sqrt(2 * r);
  }
  const lower = gain - shift - bias - finite;
  return { gain, gainInSample, shift, bias, finite, lower, oracle, certified: lower > 0 };
}

export function certificate(steps: readonly AgentCertInput[], joint: JointBound, o: CertOptions): Certificate {
  const gamma = gammaTerms(steps, o);
  const episodic = episodicTerms(steps, joint, o.aMax);
  return { gamma, episodic, chosen: o.form === 'gamma' ? gamma : episodic, form: o.form };
}
