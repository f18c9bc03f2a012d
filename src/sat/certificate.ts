/**
 * The improvement certificate of SAT.md §7, in the paper's discounted (γ) form and in our
 * finite-horizon episodic form (derived in docs/certificate.md):
 *
 *   J(π̄) − J(π_cur) ≥ Σ_i G_i − shift − bias − finite          with probability ≥ 1 − δ_conf
 *
 *                     γ form                                  episodic form (horizon H, no discount)
 *   shift    (2γ/(1−γ)²)·A_max·Σ_i √(δ̂_i/2)                  H(H−1)·A_max·Σ_i √(δ̂_i/2)
 *   bias     (1/(1−γ))·Σ_i ζ_i                                Σ_i ζ_i
 *   finite   Σ_i (A_max/(1−γ))·√(log(2n/δ_conf)/(2N_i))      Σ_i A_max·√(log(2n/δ_conf)/(2N_i))
 *   oracle   Σ_i (A_max/(1−γ))·√(2δ̂_i)                       Σ_i H·A_max·√(δ̂_i/2)
 *
 * G_i is the measured surrogate gain of agent σ(i) (reward units), δ̂_i its realised KL radius
 * (the monitor's (1−α)-quantile), ζ_i the measured bias of its estimator (0 for resample), N_i the
 * episodes its gain was estimated on. For one-turn games (H = 1) the episodic shift is 0: with a
 * single decision there is no state distribution to shift, and the sequence-level importance ratio
 * makes the gain an unbiased estimate of the exact ΔJ.
 *
 * Not here: measuring the inputs (the stage loop does).
 */

export type CertForm = 'episodic' | 'gamma';

/** What one agent step contributes. */
export interface AgentCertInput {
  readonly agent: number;
  /** Measured surrogate gain G_i (reward units). */
  readonly gain: number;
  /** Realised radius δ̂_i. */
  readonly radius: number;
  /** Measured estimator bias ζ_i ≥ 0. */
  readonly bias: number;
  /** Episodes N_i behind the gain. */
  readonly episodes: number;
}

export interface CertOptions {
  readonly n: number;
  readonly aMax: number;
  readonly gamma: number;
  readonly horizon: number;
  readonly deltaConf: number;
  readonly form: CertForm;
}

export interface BoundTerms {
  readonly gain: number;
  readonly shift: number;
  readonly bias: number;
  readonly finite: number;
  /** gain − shift − bias − finite. */
  readonly lower: number;
  /** The oracle upper envelope. */
  readonly oracle: number;
}

export interface Certificate {
  /** The form chosen by config (what cert/lower and cert/held use). */
  readonly chosen: BoundTerms;
  readonly gamma: BoundTerms;
  readonly episodic: BoundTerms;
  readonly form: CertForm;
}

/** Hoeffding's deviation for one agent's gain, union-bounded over the n agents and both tails. */
export function finiteSampleWidth(aMax: number, n: number, deltaConf: number, N: number): number {
  return N > 0 ? aMax * Math.sqrt(Math.log((2 * n) / deltaConf) / (2 * N)) : Infinity;
}

export function boundTerms(steps: readonly AgentCertInput[], o: Omit<CertOptions, 'form'>, form: CertForm): BoundTerms {
  const { aMax, gamma, horizon: H, n, deltaConf } = o;
  const shiftFactor = form === 'gamma' ? (2 * gamma) / (1 - gamma) ** 2 : H * (H - 1);
  const biasFactor = form === 'gamma' ? 1 / (1 - gamma) : 1;
  const finiteFactor = form === 'gamma' ? 1 / (1 - gamma) : 1;
  const oracleFactor = form === 'gamma' ? 1 / (1 - gamma) : H;
  let gain = 0;
  let shift = 0;
  let bias = 0;
  let finite = 0;
  let oracle = 0;
  for (const s of steps) {
    gain += s.gain;
    shift += shiftFactor * aMax * Math.sqrt(Math.max(0, s.radius) / 2);
    bias += biasFactor * s.bias;
    finite += finiteFactor * finiteSampleWidth(aMax, n, deltaConf, s.episodes);
    // γ form as the paper states it; episodic: |Ā_t(s)| ≤ TV·A_max ≤ √(δ/2)·A_max per turn.
    oracle += form === 'gamma' ? oracleFactor * aMax * Math.sqrt(2 * Math.max(0, s.radius)) : oracleFactor * aMax * Math.sqrt(Math.max(0, s.radius) / 2);
  }
  return { gain, shift, bias, finite, lower: gain - shift - bias - finite, oracle };
}

export function certificate(steps: readonly AgentCertInput[], o: CertOptions): Certificate {
  const gamma = boundTerms(steps, o, 'gamma');
  const episodic = boundTerms(steps, o, 'episodic');
  return { gamma, episodic, chosen: o.form === 'gamma' ? gamma : episodic, form: o.form };
}
