/**
 * The improvement certificate (docs/certificate.md, which derives it): with probability
 * ≥ 1 − δ_conf, J(π̄) − J(π_cur) ≥ L, L a one-sided lower confidence bound on the agents'
 * importance-weighted summands X = (min(r, c) − 1)·(R − b) over certification batches no update
 * saw. Two forms: per agent (each agent's fresh gain Ĝ_i and bound L_i, a rejected update counting
 * exactly 0) and team-level (`TeamCertBatch`: one batch at the stage start, the whole stage's
 * ratio, per-agent shares that add up to X). The paper's discounted form is computed beside them
 * as a control. The team-level bound is sequential (`SequentialCert`, §5.3): certification episodes
 * come in rounds, the bound is a confidence sequence, and the stage stops drawing as soon as it
 * certifies, or when it cannot get there, or at its budget. A language team's bound rests on one of
 * three estimators (`CertEstimator`): the truncated importance-sampling summand on episodes of the
 * starting team, the mixture of §5.4 on pairs of one episode of each team (`mixtureSummands`), or
 * the paired difference of §5.5, one problem answered by both teams with common random numbers.
 *
 * Not here: drawing the batches or computing r (stage.ts), the summand's range on tabular games
 * (env/tabular.ts), the confidence bounds (src/core/confidence.ts), the "held" check (heldCheck.ts).
 */
import { lowerConfidenceBound, lowerConfidenceBoundBelow, type BoundKind } from '../core/confidence';

export type CertForm = 'episodic' | 'gamma';

/**
 * The team-level estimator of a language team's ΔJ (docs/certificate.md §5.1, §5.4, §5.5):
 * `truncated-is` = (min(r̄, c) − 1)·(R − R_min) on episodes of π_cur; `mixture` = the balance
 * heuristic on pairs of one π_cur and one π̄ episode, w·(R − b) with w = 2(r̄ − 1)/(r̄ + 1);
 * `paired` = R_π̄ − R_πcur on one problem answered by both teams with the same sampler uniforms.
 */
export type CertEstimator = 'mixture' | 'truncated-is' | 'paired';

/** Every estimator, in the order a flag's help lists them. */
export const CERT_ESTIMATORS: readonly CertEstimator[] = ['truncated-is', 'mixture', 'paired'];

/** Which bound decides the episodic certificate: one on the whole team's step, or the agents' steps added (§5, §5.1). */
export type CertScope = 'team' | 'agents';

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

/** What the team-level form (§5.1) measures beside its bound (absent in the per-agent form). */
export interface TeamCertStats {
  /** Effective sample size of r̄ over the batch's episodes, (Σ r̄)² / Σ r̄² (= episodes when r̄ ≡ 1). */
  readonly ess: number;
  /** The truncation's measured cost: the batch mean of (r̄ − c)₊·(R − b), what min(r̄, c) gave up. */
  readonly truncationCost: number;
  /** Largest r̄ in the batch. */
  readonly maxRatio: number;
  /** Episodes whose draw the old scorer called impossible (scored pessimistically, r̄ := 0; §3.1). */
  readonly mismatches: number;
  readonly episodes: number;
}

export interface Certificate {
  /** The form chosen by config (what cert/lower and cert/held use). */
  readonly chosen: BoundTerms;
  readonly gamma: BoundTerms;
  readonly episodic: BoundTerms;
  readonly form: CertForm;
  /** Which bound `episodic` is: the team-level one (§5.1) or the agents' steps added (§5). Absent in records older than the team-level form. */
  readonly scope?: CertScope;
  /** The team-level form's ESS and truncation cost (scope 'team'). */
  readonly team?: TeamCertStats;
  /** How the sequential team-level bound went (§5.3): rounds, looks, why it stopped. Absent in older records. */
  readonly sequential?: SequentialSummary;
  /** A language team-level bound's estimator (§5.4, §5.5); absent in tabular records and in records older than the mixture ('truncated-is'). */
  readonly estimator?: CertEstimator;
  /**
   * Why no certificate was computed for this setting (e.g. a sampler whose probabilities the ratio
   * cannot reproduce); `lower` is then −Infinity — nothing is claimed.
   */
  readonly refused?: string;
}

/** Failure probability of each agent's bound: δ_conf split evenly over the n agents (union bound). */
export function perAgentEta(n: number, deltaConf: number): number {
  return deltaConf / Math.max(1, n);
}

/**
 * Ĝ_i and L_i from the certification units' summands, known to lie in `range`. `eta` is this
 * agent's failure probability (perAgentEta). With `scale` (the language summands, §5.2) the betting
 * bound uses only the range's lower end — a lower confidence bound needs nothing more — with its
 * bets' priors in units of `scale`; the upper end is still checked, and is all that Bernstein and
 * Hoeffding can use. Without it, the bound of the whole range (tabular, exact ranges).
 */
export function freshBound(
  summands: ArrayLike<number>, range: readonly [number, number], eta: number, kind: BoundKind, scale?: number, horizon?: number,
): { gain: number; lower: number } {
  let s = 0;
  let top = -Infinity;
  for (let i = 0; i < summands.length; i++) {
    s += summands[i]!;
    top = Math.max(top, summands[i]!);
  }
  const gain = summands.length > 0 ? s / summands.length : 0;
  if (scale === undefined || kind !== 'betting') return { gain, lower: lowerConfidenceBound(kind, summands, range[0], range[1], eta, horizon) };
  if (top > range[1] + 1e-9 * Math.max(1, Math.abs(range[1]))) throw new RangeError(`freshBound: a summand ${top} lies above the stated range's upper end ${range[1]}`);
  return { gain, lower: lowerConfidenceBoundBelow(summands, range[0], scale, eta, horizon) };
}

/**
 * The certification episodes the team-level bound rests on: every round the sequential
 * certificate drew (its last look's units × the first round's episodes per unit), or the one
 * batch of a record without rounds; 0 without a team-level bound.
 */
export function teamBoundEpisodes(c: Pick<Certificate, 'team' | 'sequential'>): number {
  const t = c.team;
  if (!t) return 0;
  const q = c.sequential;
  const last = q?.looks[q.looks.length - 1];
  if (!q || !last) return t.episodes;
  return q.unitEpisodes !== undefined ? last.units * q.unitEpisodes : Math.round((last.units * t.episodes) / q.roundUnits);
}

/** Why a sequential certificate stopped drawing (docs/certificate.md §5.3). */
export type CertStop = 'certified' | 'futile' | 'budget';

/** One look of the sequential certificate: the units seen so far, their mean and the bound then. */
export interface CertLook {
  readonly units: number;
  readonly gain: number;
  readonly lower: number;
}

/** How a stage's sequential certificate went (Certificate.sequential). */
export interface SequentialSummary {
  /** Units per round, most rounds the stage's budget allows, and the horizon the bets are tuned for (units). */
  readonly roundUnits: number;
  readonly maxRounds: number;
  readonly horizon: number;
  readonly stop: CertStop;
  readonly looks: readonly CertLook[];
  /** Episodes in one unit (2 × slots for the mixture's and the paired estimator's pairs); absent in older records: the first round's episodes / roundUnits. */
  readonly unitEpisodes?: number;
}

/**
 * The sequential team-level certificate (docs/certificate.md §5.3). Everything that shapes the
 * bound — the round size, the most rounds, the horizon the betting stakes are tuned for — is fixed
 * before the stage's first certification draw; then `look` is called after every round with all
 * the units so far. The betting bound with a fixed horizon is a confidence sequence (Ville's
 * inequality), so its lower end may be read after every round and the running maximum kept: it
 * holds at whatever round the stage stops. Bernstein and Hoeffding have no anytime form; they get
 * δ_conf split over the rounds (a union bound over at most `maxRounds` looks).
 *
 * `stopAfter` says whether to stop: certified (lower > 0), futile, or out of rounds. The futility
 * rule only ever stops *without* certifying, so it spends no error: whatever the rule, the bound
 * read when drawing stops is a confidence sequence read at a stopping time.
 */
export class SequentialCert {
  private readonly looks: CertLook[] = [];
  private best = -Infinity;
  constructor(
    readonly roundUnits: number,
    readonly maxRounds: number,
    readonly horizon: number,
    private readonly range: readonly [number, number],
    private readonly deltaConf: number,
    private readonly kind: BoundKind,
    private readonly scale: number | undefined,
    /** false: draw every round up to the budget whatever the bound says ('cap', for studies). */
    private readonly early: boolean,
  ) {
    if (!(roundUnits >= 1 && maxRounds >= 1 && horizon >= 1)) throw new RangeError(`SequentialCert: rounds of ${roundUnits} units, ${maxRounds} rounds, horizon ${horizon}`);
  }

  /** The bound after a round: all the units so far (a prefix grows, never changes). */
  look(x: Float64Array): CertLook {
    const { gain, lower } = this.kind === 'betting'
      ? freshBound(x, this.range, this.deltaConf, 'betting', this.scale, this.horizon)
      : freshBound(x, this.range, this.deltaConf / this.maxRounds, this.kind, this.scale);
    this.best = Math.max(this.best, lower);
    const l: CertLook = { units: x.length, gain, lower: this.best };
    this.looks.push(l);
    return l;
  }

  /**
   * Whether to stop after the latest look, and why. Futile: even a mean two standard errors above
   * the one seen stays below √(2 ln(1/δ_conf)/N)·σ̂, about the least width a bound on the budget's
   * N units of this spread can have — a guess that saves episodes for later stages, not a claim.
   */
  stopAfter(x: Float64Array): CertStop | undefined {
    const l = this.looks[this.looks.length - 1]!;
    if (this.looks.length >= this.maxRounds) return l.lower > 0 ? 'certified' : 'budget';
    if (!this.early) return undefined;
    if (l.lower > 0) return 'certified';
    const N = x.length;
    let v = 0;
    for (let t = 0; t < N; t++) v += (x[t]! - l.gain) ** 2;
    const sd = N > 1 ? Math.sqrt(v / (N - 1)) : Infinity;
    const widthAtBudget = sd * Math.sqrt((2 * Math.log(1 / this.deltaConf)) / (this.maxRounds * this.roundUnits));
    return l.gain + (2 * sd) / Math.sqrt(N) < widthAtBudget ? 'futile' : undefined;
  }

  summary(stop: CertStop, unitEpisodes: number): SequentialSummary {
    return { roundUnits: this.roundUnits, maxRounds: this.maxRounds, horizon: this.horizon, stop, looks: this.looks.slice(), unitEpisodes };
  }
}

/**
 * The sequential certificate's plan for a stage (docs/certificate.md §5.3), fixed before its first
 * draw: `base` episodes a stage on average (n × certEpisodes for language teams, certEpisodes on
 * tabular games), rounds of base / certRounds, at most certCap × base or what the run's budget
 * holds (`credit`: what earlier stages left unspent), and the betting stakes tuned for the
 * geometric mean of base and that most.
 */
export function sequentialPlan(
  base: number, o: { rounds: number; cap: number; slots: number; credit: number },
): { roundEpisodes: number; roundUnits: number; maxRounds: number; horizon: number } {
  const roundUnits = Math.max(1, Math.ceil(base / o.rounds / o.slots));
  const roundEpisodes = roundUnits * o.slots;
  const most = Math.min(o.cap * base, base + Math.max(0, o.credit));
  const maxRounds = Math.max(1, Math.floor(most / roundEpisodes + 1e-9));
  const horizon = Math.max(1, Math.round(Math.sqrt(Math.ceil(base / o.slots) * maxRounds * roundUnits)));
  return { roundEpisodes, roundUnits, maxRounds, horizon };
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

export function certificate(
  steps: readonly AgentCertInput[], joint: JointBound, o: CertOptions, extra: { scope?: CertScope; team?: TeamCertStats; sequential?: SequentialSummary; refused?: string; estimator?: CertEstimator } = {},
): Certificate {
  const gamma = gammaTerms(steps, o);
  const refusedJoint = extra.refused !== undefined ? { gain: joint.gain, lower: -Infinity } : joint;
  const episodic = episodicTerms(steps, refusedJoint, o.aMax);
  return { gamma, episodic, chosen: o.form === 'gamma' ? gamma : episodic, form: o.form, ...extra };
}

/**
 * The team-level certification batch (docs/certificate.md §5.1): episodes drawn under π_cur = π̂⁰
 * before any update of the stage, each with R′ = R − b. As the agents of σ move one after the
 * other, `advance` multiplies each episode's ratio ρ by the moved agent's r_j (given as log r_j per
 * episode) and returns its share X_i = (min(ρ_≤i, c) − min(ρ_<i, c))·R′; the shares add up to the
 * team summand X = (min(r̄, c) − 1)·R′ (`summands`). c = Infinity: no truncation (tabular, with the
 * exact range). A NaN log-ratio marks a draw the old policy's scorer says it cannot make (f32
 * rounding between sampler and scorer at a top-k boundary): the episode is scored r̄ := 0 from
 * then on, the least value of the summand, so the bound stays valid (counted in `mismatches`).
 *
 * Units: `slots` consecutive episodes are averaged into one unit (the `independent` protocol).
 */
export class TeamCertBatch {
  private readonly logRho: Float64Array;
  private readonly bad: Uint8Array;
  constructor(
    /** R − b per episode (b = R_min when c is finite, so R′ ≥ 0 and truncation only lowers E[X]). */
    readonly gainOf: Float64Array,
    readonly slots: number,
    readonly clip: number,
  ) {
    if (!(slots >= 1) || gainOf.length % slots !== 0) throw new RangeError(`TeamCertBatch: ${gainOf.length} episodes do not split into units of ${slots}`);
    if (Number.isFinite(clip)) for (const g of gainOf) if (g < 0) throw new RangeError('TeamCertBatch: with a finite clip c the baseline must be R_min (R − b ≥ 0), or truncation could raise E[X]');
    this.logRho = new Float64Array(gainOf.length);
    this.bad = new Uint8Array(gainOf.length);
  }

  get episodes(): number {
    return this.gainOf.length;
  }

  get units(): number {
    return this.gainOf.length / this.slots;
  }

  private capped(e: number): number {
    return this.bad[e] ? 0 : Math.min(Math.exp(this.logRho[e]!), this.clip);
  }

  /** Agent σ(i) moved: per episode log r_j (0 where it does not act); returns the per-unit shares X_i. */
  advance(logR: ArrayLike<number>): Float64Array {
    if (logR.length !== this.gainOf.length) throw new RangeError(`TeamCertBatch.advance: ${logR.length} log-ratios for ${this.gainOf.length} episodes`);
    const x = new Float64Array(this.units);
    for (let e = 0; e < this.gainOf.length; e++) {
      const before = this.capped(e);
      const u = logR[e]!;
      if (Number.isNaN(u)) this.bad[e] = 1;
      else this.logRho[e]! += u;
      x[Math.floor(e / this.slots)]! += ((this.capped(e) - before) * this.gainOf[e]!) / this.slots;
    }
    return x;
  }

  /** log r̄ per episode, the team's final-over-starting ratio (NaN where a draw was scored impossible). */
  logRatios(): Float64Array {
    return this.logRho.map((u, e) => (this.bad[e] ? NaN : u));
  }

  /** The team summand per unit, (min(r̄, c) − 1)·R′ averaged over the unit's episodes. */
  summands(): Float64Array {
    const x = new Float64Array(this.units);
    for (let e = 0; e < this.gainOf.length; e++) x[Math.floor(e / this.slots)]! += ((this.capped(e) - 1) * this.gainOf[e]!) / this.slots;
    return x;
  }

  /** ESS of r̄, the truncation's cost, the largest ratio and the mismatches (TeamCertStats). */
  stats(): TeamCertStats {
    let s1 = 0;
    let s2 = 0;
    let cost = 0;
    let maxRatio = 0;
    let mismatches = 0;
    for (let e = 0; e < this.gainOf.length; e++) {
      const r = this.bad[e] ? 0 : Math.exp(this.logRho[e]!);
      if (this.bad[e]) mismatches++;
      s1 += r;
      s2 += r * r;
      maxRatio = Math.max(maxRatio, r);
      if (r > this.clip) cost += (r - this.clip) * this.gainOf[e]!;
    }
    const E = this.gainOf.length;
    return { ess: s2 > 0 ? (s1 * s1) / s2 : 0, truncationCost: E > 0 ? cost / E : 0, maxRatio, mismatches, episodes: E };
  }
}

/**
 * The range of the team-level summand for a truncated ratio (§5.1): min(r̄, c) ∈ [0, c] and
 * R − R_min ∈ [0, A] give X ∈ [−A, (c − 1)·A]; a share X_i is a difference of two values in
 * [0, c] times R′, so it lies in [−c·A, c·A].
 */
export function teamRange(A: number, c: number): { team: [number, number]; share: [number, number] } {
  return { team: [-A, (c - 1) * A], share: [-c * A, c * A] };
}

/** One half of the mixture's units: per episode its reward and log r̄ = log P_π̄(τ) − log P_πcur(τ). */
export interface MixtureHalf {
  readonly reward: ArrayLike<number>;
  readonly logR: ArrayLike<number>;
}

/**
 * The balance-heuristic weight of an episode (docs/certificate.md §5.4), w = 2(r̄ − 1)/(r̄ + 1) =
 * 2·tanh(log r̄ / 2) ∈ [−2, 2]: −2 where π̄ cannot write τ (log r̄ = −∞), 2 where π_cur cannot.
 */
export function mixtureWeight(logR: number): number {
  return 2 * Math.tanh(logR / 2);
}

/**
 * The mixture estimator's summands (docs/certificate.md §5.4). Unit u pairs `slots` episodes drawn
 * under π_cur (`cur`) with `slots` drawn under π̄ (`bar`), both its episodes u·slots … (u+1)·slots − 1:
 * X_u = (1 / (2·slots))·Σ over those 2·slots episodes of w(r̄)·(R − b). For any b fixed before the
 * draws E[X_u] = ΔJ exactly, and X_u ∈ mixtureRange(R_min, R_max, b). A NaN log r̄ (a draw its own
 * team's scorer calls impossible, §3.1) scores −2|R − b|, the least any weight could give it.
 */
export function mixtureSummands(cur: MixtureHalf, bar: MixtureHalf, b: number, slots: number): Float64Array {
  const E = cur.reward.length;
  if (!(slots >= 1) || E % slots !== 0 || bar.reward.length !== E || cur.logR.length !== E || bar.logR.length !== E) {
    throw new RangeError(`mixtureSummands: halves of ${E} and ${bar.reward.length} episodes (${cur.logR.length}, ${bar.logR.length} ratios) do not pair into units of ${slots}`);
  }
  const x = new Float64Array(E / slots);
  for (const h of [cur, bar]) {
    for (let e = 0; e < E; e++) {
      const g = h.reward[e]! - b;
      const u = h.logR[e]!;
      x[Math.floor(e / slots)]! += (Number.isNaN(u) ? -2 * Math.abs(g) : mixtureWeight(u) * g) / (2 * slots);
    }
  }
  return x;
}

/**
 * The mixture summand's range (§5.4): w ∈ [−2, 2] and R − b ∈ [R_min − b, R_max − b] give
 * X ∈ [−2A_b, 2A_b] with A_b = max(R_max − b, b − R_min); b is clamped to [R_min, R_max] first.
 */
export function mixtureRange(rMin: number, rMax: number, b: number): { b: number; range: [number, number] } {
  if (!(rMax > rMin) || !Number.isFinite(b)) throw new RangeError(`mixtureRange: rewards in [${rMin}, ${rMax}], baseline ${b}`);
  const bb = Math.min(rMax, Math.max(rMin, b));
  const A = Math.max(rMax - bb, bb - rMin);
  return { b: bb, range: [-2 * A, 2 * A] };
}

/**
 * The paired summand's range (§5.5): X = R_π̄ − R_πcur (averaged over a unit's slots) with both
 * rewards in [R_min, R_max] lies in [−A, A], A = R_max − R_min; both ends are known before any draw.
 */
export function pairedRange(rMin: number, rMax: number): [number, number] {
  if (!(rMax > rMin)) throw new RangeError(`pairedRange: rewards in [${rMin}, ${rMax}]`);
  return [-(rMax - rMin), rMax - rMin];
}
