/**
 * One SAT stage (docs/method.md §3; the paper's Algorithm 1), top to bottom:
 *
 *   B ← rollout(π_cur);  σ ← order(B)
 *   for i in 1..n:  j ← σ(i)
 *       batch, Â ← advantages under π̂ⁱ⁻¹                        (§4)
 *       update j on L_j inside the trust region (update.ts)       (§5, §6)
 *       π_cur⁽ʲ⁾ ← π_tar⁽ʲ⁾; its certificate summands from a batch drawn under π̂ⁱ⁻¹ before the update
 *   certificate = one lower bound on the summands (§7); J(π̄) ⇒ realised ΔJ, held, certified
 *
 * `runStage` is an async generator: it yields after every agent step and returns the stage record.
 * Every draw comes from a named sub-stream of the run seed, so a run is fixed by (seed, config).
 * `simultaneous` is the baseline SAT replaces: every agent trained on the same batch and advantages
 * (§3.2).
 *
 * Not here: building the team or looping over stages (experiment.ts), the maths of each piece
 * (advantages.ts, objective.ts, monitor.ts, certificate.ts, geometry.ts).
 */
import { histogram } from '../core/stats';
import type { Rng } from '../core/rng';
import { groupAdvantages, predecessorLogRatios, stepLogRatio } from './advantages';
import { certificate, freshBound, mixtureRange, mixtureSummands, pairedRange, perAgentEta, SequentialCert, sequentialPlan, TeamCertBatch, teamRange, type AgentCertInput, type Certificate, type CertScope, type CertStop, type MixtureHalf, type SequentialSummary, type TeamCertStats } from './certificate';
import { checkHeld, checkHeldWatched, crnUnits, heldTolerance, type CheckWatch, type HeldCheck } from './heldCheck';
import { agentDelta, certEpisodesOf, type Config } from './config';
import { chooseOrder } from './order';
import type { TeamCertSpace, TeamEnv, TeamEvaluation } from './env/types';
import { trajectoryLogRatios } from './env/tabular';
import { agentSteps } from './rollout';
import type { StageProfiler } from './profile';
import type { TrustCheck } from './monitor';
import type { AgentBatch, AgentPolicy, AgentSnapshot, Batch } from './types';
import { agentGeometry, updateAgent, updateSettings, type UpdatePlan } from './update';

/** Metric values: numbers, or arrays (histograms, σ). Keys: docs/method.md §9. */
export type Metrics = Record<string, number | number[]>;

/** Sub-stream purposes (the second element of every fork path). */
const STREAM = { stageBatch: 1, resample: 2, probe: 3, order: 4, cert: 5, teamCert: 6, heldCheck: 7 } as const;

/** `cert/stop` as a number (metrics are numbers): 1 certified, 2 futile, 3 out of budget. */
export const CERT_STOP_CODE: Record<CertStop, number> = { certified: 1, futile: 2, budget: 3 };

/** Histogram bins of the advantage chart: fixed edges over [−A_clip, A_clip]. */
export const ADV_HIST_BINS = 20;

export interface StageContext {
  readonly env: TeamEnv;
  readonly cfg: Config;
  readonly team: readonly AgentPolicy[];
  /** The run's root stream. */
  readonly rng: Rng;
  /** β per agent, carried across stages (adaptive β). Mutated. */
  readonly betas: number[];
  /** Stage index (1-based). */
  readonly stage: number;
  /** A_max in reward units. */
  readonly aMax: number;
  /** The team's evaluation at the stage start, when already known (the previous stage's end). */
  readonly startEval?: TeamEvaluation;
  /** Told which phase the stage is in (npm run sat -- --profile); absent, nothing is measured. */
  readonly profiler?: StageProfiler;
  /**
   * Certification episodes earlier stages of the run left unspent (docs/certificate.md §5.3): this
   * stage may draw its average budget plus this, up to certCap × the budget. Absent: 0. The stage
   * reports what it leaves in `cert/credit`.
   */
  readonly certCredit?: number;
  /**
   * Told every look of the sequential certificate: the units so far, the range they lie in and the
   * betting bound's scale (undefined: the whole range) — the validity suites' controls; absent, nothing.
   */
  readonly onCertLook?: (x: Float64Array, range: readonly [number, number], scale: number | undefined) => void;
}

export interface AgentStepRecord {
  readonly stage: number;
  /** Position i in σ (0-based). */
  readonly position: number;
  readonly agent: number;
  readonly metrics: Metrics;
  /** Ã per episode of the agent's batch (normalised, clipped) and raw R − μ. */
  readonly advNorm: Float64Array;
  readonly advRaw: Float64Array;
  /** Final per-visit KL κ(s) to π_cur. */
  readonly kl: Float64Array;
  readonly delta: number;
  readonly check: TrustCheck;
  readonly accepted: boolean;
  readonly backtracks: number;
  /** Exact team J before and after this agent's update. */
  readonly jBefore: number;
  readonly jAfter: number;
  readonly cert: AgentCertInput;
}

export interface StageRecord {
  readonly stage: number;
  readonly order: number[];
  readonly steps: AgentStepRecord[];
  readonly certificate: Certificate;
  readonly jBefore: number;
  readonly jAfter: number;
  readonly metrics: Metrics;
  /** The team's evaluation at the stage end. */
  readonly evaluation: TeamEvaluation;
  /** A plug-and-play swap made just before this stage (experiment.ts), if any. */
  readonly swap?: SwapSummary;
  /**
   * Did the bound hold? Tabular: exact (lower ≤ ΔJ + a few ulps of |J|). Language teams: judged
   * against a common-random-numbers estimate of ΔJ when the stage was checked (heldCheck.ts), else
   * 'unchecked'. Absent in records older than this field.
   */
  readonly held?: HeldCheck;
}

/** What a plug-and-play swap did to one seat (docs/method.md §8.3), in plain numbers. */
export interface SwapSummary {
  readonly agent: number;
  /** What was swapped in: "best response" or a model name. */
  readonly incoming: string;
  readonly stage0: boolean;
  readonly delta0: number;
  /** Occupancy-weighted quantiles of KL(seated policy ‖ π_cur) over the agent's states. */
  readonly klQuantiles: { readonly q50: number; readonly q90: number; readonly q99: number };
  /** Share of the agent's states whose KL to π_cur exceeds δ_0, before and after the projection. */
  readonly outsideBefore: number;
  readonly outsideAfter: number;
  /** Counts of λ(s) per bin of stage0.LAMBDA_EDGES ([0,1e-3), …, [10,∞)). */
  readonly lambdaHist: readonly number[];
  /** Team J just before and just after the swap. */
  readonly jBefore: number;
  readonly jAfter: number;
  /**
   * The swap's own certificate (docs/certificate.md §8), deterministic: jAfter − jBefore ≥ certFloor
   * = −min(1, m_j·√(certRadius/2))·A with m_j the agent's turns per episode and certRadius the largest
   * per-state KL between the seated policy and the agent it replaced (≤ δ₀ with Stage-0; NaN when
   * not known, and then the floor is the trivial −A).
   */
  readonly certRadius: number;
  readonly certFloor: number;
}

/** The swap floor of SwapSummary.certFloor: −min(1, m·√(radius/2))·A (J cannot fall by more than A anyway). */
export function swapFloor(radius: number, turns: number, span: number): number {
  return Number.isFinite(radius) ? -Math.min(1, turns * Math.sqrt(Math.max(0, radius) / 2)) * span : -span;
}

/** The agent's own steps in `batch`, with per-episode advantages and weights. */
function buildAgentBatch(batch: Batch, agent: number, adv: Float64Array, weight: Float64Array, horizon: number): AgentBatch {
  const s = agentSteps(batch, agent);
  return { nEpisodes: batch.episodes.length, obs: s.obs, actions: s.actions, episodeOf: s.episodeOf, context: s.context, adv, weight, horizon };
}

/**
 * Measured surrogate gain (reward units): (1/N) Σ_e w_e·raw_e·(r_e − 1)·G/(G−1),
 * r_e = exp(Σ (log π_θ − log π_sampled)), from the episodes' log-ratios `u`. Agent j is still at
 * π_cur in every batch it is trained on, so the recorded log-probs are π_cur's. The factor
 * G/(G−1) turns the group-mean baseline, which includes the episode itself, into the
 * leave-one-out baseline (RLOO): without it the estimate of J(π̂ⁱ) − J(π̂ⁱ⁻¹) for a fixed θ would
 * be short by a factor (1 − 1/G) (docs/certificate.md).
 */
function measuredGain(batch: Batch, u: Float64Array, raw: Float64Array, weight: Float64Array): number {
  const G = batch.groupSize;
  let g = 0;
  for (let e = 0; e < u.length; e++) if (!Number.isNaN(u[e]!)) g += weight[e]! * raw[e]! * Math.expm1(u[e]!);
  return (g / Math.max(1, u.length)) * (G / (G - 1));
}

/**
 * Per episode of `batch`, log r = Σ over the agent's steps `s` of (log π_θ now (`now`, one per
 * step) − the log-prob recorded when the batch was sampled): the log of its sequence ratio (0
 * where the agent never acts).
 */
function episodeLogRatios(batch: Batch, s: { readonly episodeOf: Int32Array; readonly logp: Float64Array }, now: Float64Array): Float64Array {
  const u = new Float64Array(batch.episodes.length);
  for (let k = 0; k < now.length; k++) u[s.episodeOf[k]!]! += stepLogRatio(now[k]!, s.logp[k]!);
  return u;
}

/** What certifyStep needs from before the update (the team is π̂ⁱ⁻¹ then). */
interface CertDraw {
  /** Language teams: the certification batch itself, rolled out under π̂ⁱ⁻¹. */
  readonly batch?: Batch;
  /** Tabular games: every agent's table under π̂ⁱ⁻¹ (the env samples from them after the update). */
  readonly before?: readonly Float64Array[];
}

/** What certifyStep needs from after the update (update.ts measured it beside the parameters). */
interface AfterUpdate {
  /** Language teams: per episode of the certification batch, log r_j. */
  readonly certLogRatios?: Float64Array;
  /** Tabular games: agent j's new table. */
  readonly table?: Float64Array;
}

/**
 * Agent j's certificate (docs/certificate.md §4–§5): per unit of a certification batch drawn under
 * π̂ⁱ⁻¹ from its own stream — never seen by the update — the summand X = (min(r_j, c) − 1)·(R − b),
 * with r_j the trajectory ratio π̂ⁱ/π̂ⁱ⁻¹; then Ĝ = mean X and L = its one-sided (1 − δ_conf/n)
 * lower confidence bound.
 *
 * The range of X must be known without looking at the batch. Tabular games: no truncation
 * (c = ∞), b = the training batch's mean reward (independent of the certification batch), and the
 * exact range of X over every trajectory the old team can produce (enumeration). Language teams:
 * c = certClip and b = R_min, so min(r, c) ∈ [0, c] and R − b ∈ [0, A] give X ∈ [−A, (c − 1)·A];
 * truncating r can only lower E[X], because R − b ≥ 0; the betting bound uses only the lower end −A
 * (docs/certificate.md §5.2). A unit is one episode, or for the
 * `independent` protocol one episode per slot (env.slots), averaged.
 */
function certifyStep(
  env: TeamEnv, j: number, draw: CertDraw, after: AfterUpdate, trainMean: number, moved: boolean, cfg: Config, n: number, rng: Rng,
): Pick<AgentCertInput, 'gain' | 'lower' | 'range' | 'units' | 'episodes' | 'clip' | 'moved'> & { x: Float64Array } {
  const units = draw.batch ? draw.batch.groups : certEpisodesOf(cfg);
  const episodes = draw.batch ? draw.batch.episodes.length : certEpisodesOf(cfg);
  // A rejected update restores the parameters bit for bit: ΔJ_i = 0 exactly, nothing to estimate.
  if (!moved) return { gain: 0, lower: 0, range: [0, 0], units, episodes, clip: 1, moved, x: new Float64Array(units) };
  let x: Float64Array;
  let range: [number, number];
  let clip = Infinity;
  if (draw.before && env.certSample && after.table) {
    ({ x, range } = env.certSample(draw.before, j, after.table, trainMean, episodes, rng));
  } else {
    const batch = draw.batch!;
    const [rMin, rMax] = env.rewardRange;
    const A = rMax - rMin;
    clip = cfg.certClip;
    range = [-A, (clip - 1) * A];
    const u = after.certLogRatios!;
    const G = batch.groupSize;
    x = new Float64Array(units);
    batch.episodes.forEach((ep, e) => {
      // NaN: a draw the old scorer calls impossible (stepLogRatio) — scored r := 0, the least X.
      const r = Number.isNaN(u[e]!) ? 0 : Math.min(Math.exp(u[e]!), clip);
      x[Math.floor(e / G)]! += ((r - 1) * (ep.reward - rMin)) / G;
    });
  }
  const lang = !(draw.before && env.certSample && after.table);
  const { gain, lower } = freshBound(x, range, perAgentEta(n, cfg.deltaConf), cfg.certBound, lang ? env.rewardRange[1] - env.rewardRange[0] : undefined);
  return { gain, lower, range, units, episodes, clip, moved, x };
}

/**
 * Why this setting gets no certificate, or undefined. A Stage-0 projection seat scores its tokens
 * with the projection's full softmax, while with top-k its sampler draws from the truncated one:
 * the ratio would not be the sampler's (docs/certificate.md §3.1), so nothing is claimed.
 */
export function certRefusal(cfg: Config, team: readonly AgentPolicy[]): string | undefined {
  const projected = team.some((a) => (a as { sampler?: unknown }).sampler === 'projection');
  if (cfg.topK > 0 && projected) {
    return `no certificate with topK = ${cfg.topK} while a Stage-0 projection holds a seat: the projection scores tokens with its full softmax but samples from the top ${cfg.topK}, so the importance ratio would not be the sampler's (docs/certificate.md §3.1). Set topK = 0 for a certified stage.`;
  }
  return undefined;
}

/**
 * Agent j's share of the team-level certificate (docs/certificate.md §5.1): advance the team batch's
 * ratios by r_j (log-ratios of the language batch, or of every enumerated trajectory on a tabular
 * game) and bound the share X_i at δ_conf/n. With c = ∞ (tabular) E[X_i] = ΔJ_i exactly and the
 * range is exact, so L_i bounds ΔJ_i; with a finite c the shares only add up to the team's
 * truncated summand, and L_i is a labelled diagnostic.
 */
function teamShare(
  t: TeamCert, j: number, after: AfterUpdate, moved: boolean, cfg: Config, n: number, span: number,
): Pick<AgentCertInput, 'gain' | 'lower' | 'range' | 'units' | 'episodes' | 'clip' | 'moved'> & { x: Float64Array } {
  let x: Float64Array;
  let range: [number, number];
  if (t.space && t.all && t.cur) {
    const u = moved && after.table ? trajectoryLogRatios(t.space, j, t.cur[j]!, after.table) : new Float64Array(t.space.reward.length);
    if (after.table) t.cur[j] = after.table;
    const shares = t.all.advance(u);
    x = t.tc.advance(gather(u, t.space.draws.subarray(0, t.tc.episodes), 0));
    range = moved ? extent(shares) : [0, 0];
  } else {
    x = t.tc.advance(after.certLogRatios ?? new Float64Array(t.tc.episodes));
    range = moved ? teamRange(span, cfg.certClip).share : [0, 0];
  }
  const { gain, lower } = moved ? freshBound(x, range, perAgentEta(n, cfg.deltaConf), cfg.certBound, t.all ? undefined : span) : { gain: 0, lower: 0 };
  return { gain, lower, range, units: t.tc.units, episodes: t.tc.episodes, clip: t.all ? Infinity : cfg.certClip, moved, x };
}

/**
 * The team-level certificate's state through a stage (§5.1, §5.3): the first round's batch `tc`
 * (its ratios advanced agent by agent), the plan of the sequential bound, and on tabular games the
 * exact space (every trajectory, `all`; every round's draws) and the tables as they move.
 */
interface TeamCert {
  readonly tc: TeamCertBatch;
  readonly batch?: Batch;
  readonly space?: TeamCertSpace;
  readonly all?: TeamCertBatch;
  readonly cur?: Float64Array[];
  readonly plan: ReturnType<typeof sequentialPlan>;
  /** The stage's average budget (episodes). */
  readonly base: number;
  /**
   * The mixture estimator (§5.4, language teams): its baseline b, fixed before any certification
   * draw, and the summand's range. Absent: the truncated ratio on π_cur's episodes.
   */
  readonly mixture?: { readonly b: number; readonly range: [number, number] };
  /** The paired estimator (§5.5, language teams): each unit one round's stream answered by π̄ and by π_cur. */
  readonly paired?: boolean;
}

/**
 * One more round of a language team's certification batch (§5.3), drawn after the stage's updates:
 * the team is put back to π_cur (`start`) to roll out from the round's own stream, then to π̄
 * (`final`) to score every agent's messages; the units' summands (min(r̄, c) − 1)·(R − R_min).
 */
async function languageRound(env: TeamEnv, team: readonly AgentPolicy[], start: readonly AgentSnapshot[], final: readonly AgentSnapshot[], units: number, clip: number, rng: Rng): Promise<{ x: Float64Array; tc: TeamCertBatch }> {
  await Promise.all(team.map((a, k) => a.restore(start[k]!)));
  let batch: Batch;
  try {
    batch = await env.rollout(team, units, env.slots, rng, { record: false });
  } finally {
    await Promise.all(team.map((a, k) => a.restore(final[k]!)));
  }
  const tc = new TeamCertBatch(Float64Array.from(batch.episodes, (e) => e.reward - env.rewardRange[0]), env.slots, clip);
  for (const a of team) {
    const s = agentSteps(batch, a.index);
    tc.advance(episodeLogRatios(batch, s, await a.logProbs(s)));
  }
  return { x: tc.summands(), tc };
}

/**
 * One round of the mixture estimator (§5.4), drawn after the stage's updates with the team at π̄
 * (`final`) on entry and on exit: `units` × slots episodes under π̄ from `rng.fork(2)`, scored under
 * π_cur (`start`); and, unless the round's π_cur half is given (the first round's, drawn at the stage
 * start), as many under π_cur from `rng`, scored under π̄. Per episode its reward and log r̄.
 */
async function mixtureRound(
  env: TeamEnv, team: readonly AgentPolicy[], start: readonly AgentSnapshot[], final: readonly AgentSnapshot[], units: number, rng: Rng, given?: MixtureHalf,
): Promise<{ cur: MixtureHalf; bar: MixtureHalf }> {
  const barBatch = await env.rollout(team, units, env.slots, rng.fork(2), { record: false });
  let curBatch: Batch | undefined;
  let barLog: Float64Array;
  await Promise.all(team.map((a, k) => a.restore(start[k]!)));
  try {
    if (!given) curBatch = await env.rollout(team, units, env.slots, rng, { record: false });
    barLog = (await teamLogRatios(team, barBatch)).map((u) => -u); // the batch recorded π̄'s log-probs: now π_cur's over them is 1/r̄
  } finally {
    await Promise.all(team.map((a, k) => a.restore(final[k]!)));
  }
  const cur = given ?? { reward: rewardsOf(curBatch!), logR: await teamLogRatios(team, curBatch!) };
  return { cur, bar: { reward: rewardsOf(barBatch), logR: barLog } };
}

/** Per episode, Σ over every agent's messages of log π_now − the log-prob recorded when it was drawn (NaN: a mismatch, §3.1). */
async function teamLogRatios(team: readonly AgentPolicy[], batch: Batch): Promise<Float64Array> {
  const out = new Float64Array(batch.episodes.length);
  for (const a of team) {
    const s = agentSteps(batch, a.index);
    const u = episodeLogRatios(batch, s, await a.logProbs(s));
    for (let e = 0; e < u.length; e++) out[e]! += u[e]!;
  }
  return out;
}

/** Two arrays end to end. */
function concat(a: Float64Array, b: Float64Array): Float64Array {
  const out = new Float64Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** values[idx[i]] − minus for every i: a plain loop (Float64Array.from with a map function is several times slower on 16,384 draws). */
function gather(values: ArrayLike<number>, idx: ArrayLike<number>, minus: number): Float64Array {
  const out = new Float64Array(idx.length);
  for (let i = 0; i < idx.length; i++) out[i] = values[idx[i]!]! - minus;
  return out;
}

/** [min, max] of an array (a loop: spreading a large array into Math.min overflows the stack). */
function extent(xs: ArrayLike<number>): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (let k = 0; k < xs.length; k++) {
    lo = Math.min(lo, xs[k]!);
    hi = Math.max(hi, xs[k]!);
  }
  return [lo, hi];
}

function rewardsOf(batch: Batch): Float64Array {
  return Float64Array.from(batch.episodes, (e) => e.reward);
}


function now(): number {
  return typeof performance !== 'undefined' ? performance.now() : Date.now();
}

export async function* runStage(ctx: StageContext): AsyncGenerator<AgentStepRecord, StageRecord, void> {
  const { env, cfg, team, rng, stage, betas } = ctx;
  const phase = (p: Parameters<StageProfiler['enter']>[0]) => ctx.profiler?.enter(p);
  const n = team.length;
  const B = cfg.batch;
  const G = cfg.group;
  const simultaneous = cfg.scheme === 'simultaneous';
  const estimator = simultaneous ? 'naive' : cfg.estimator;
  let msRollout = 0;
  let msUpdate = 0;
  let msCert = 0;
  let certEpisodes = 0;
  // The stage's joint certificate (docs/certificate.md §5): per unit index t, the sum over agents
  // of their t-th summands, and the sum of their ranges.
  let certSum: Float64Array | null = null;
  const certRange: [number, number] = [0, 0];
  const [rMin, rMax] = env.rewardRange;
  const span = rMax - rMin;
  // Which bound decides: the team-level one (§5.1; the default for language teams) or the agents'
  // steps added (§5). A sampler whose probabilities the ratios cannot reproduce gets no certificate.
  const scope: CertScope = env.certScope ?? 'agents';
  const refused = certRefusal(cfg, team);
  let decisions = 0;
  let episodesUsed = 0;

  // ── 1. The stage batch under π_cur, and every agent's π_cur frozen as its reference. ──
  let t0 = now();
  // Tabular games: every agent's table under π_cur = π̂⁰, fetched once and kept up to date as
  // agents move, so J, the rollouts and each certification sample's π̂ⁱ⁻¹ need no agent call.
  phase('rollout');
  let tables = env.certSample && env.tableSteps && env.tables ? await env.tables(team) : undefined;
  phase('evaluate');
  const start0 = ctx.startEval ?? (tables && env.evaluateTables ? env.evaluateTables(tables) : await env.evaluate(team));
  const jStart = start0.J;
  phase('rollout');
  const stageBatch = await env.rollout(team, B, G, rng.fork(stage, STREAM.stageBatch), tables ? { tables } : {});
  episodesUsed += stageBatch.episodes.length;
  for (const ep of stageBatch.episodes) decisions += ep.turns.length;
  await Promise.all(team.map((a) => a.setReference()));
  const stageAdv = groupAdvantages(rewardsOf(stageBatch), B, G, cfg.norm, cfg.aClip);
  msRollout += now() - t0;
  // The starting team, kept only when the stage will check its bound against a CRN estimate of ΔJ.
  const heldPairs = env.heldPairs ?? 0;
  const startSnapshots: AgentSnapshot[] | null = heldPairs > 0 && !env.evaluatePerAgent ? await Promise.all(team.map((a) => a.snapshot())) : null;

  // The team-level certification batch (§5.1): drawn under π_cur = π̂⁰ from its own stream, before
  // anything about any update is decided; no update ever sees it. Language teams roll it out;
  // tabular games draw trajectories from the exact distribution (and score every trajectory, for
  // the summands' exact ranges). Its size: language teams, the per-agent budget times n (episodes
  // are what costs); tabular games, the per-agent budget (draws are free, the bounds are what
  // costs, and one batch of that size already beats n of them).
  t0 = now();
  phase('certificate');
  // The batch is the first round of the sequential certificate (§5.3); its plan — round size, most
  // rounds, the horizon of the bets — is fixed here, before any certification draw.
  let team0: TeamCert | null = null;
  const credit = ctx.certCredit ?? 0;
  if (scope === 'team' && refused === undefined) {
    const base = tables ? certEpisodesOf(cfg) : certEpisodesOf(cfg) * n;
    const slots = tables ? 1 : env.slots;
    // The mixture's and the paired estimator's unit is a pair: `slots` episodes of each team (§5.4, §5.5).
    const mixed = !tables && env.certEstimator === 'mixture';
    const paired = !tables && env.certEstimator === 'paired';
    const plan = sequentialPlan(base, { rounds: cfg.certRounds, cap: cfg.certCap, slots: mixed || paired ? 2 * slots : slots, credit });
    const teamRng = rng.fork(stage, STREAM.teamCert);
    if (tables && env.teamCertSpace) {
      // c = ∞ and b = the stage batch's mean reward (independent of this batch): E[X] = ΔJ exactly.
      // Exact draws are free: every round the plan allows is drawn now, and read one round at a time.
      const b = rewardsOf(stageBatch).reduce((a, r) => a + r, 0) / Math.max(1, stageBatch.episodes.length);
      const space = env.teamCertSpace(tables, plan.maxRounds * plan.roundUnits, teamRng);
      const all = new TeamCertBatch(space.reward.map((r) => r - b), 1, Infinity);
      const tc = new TeamCertBatch(gather(space.reward, space.draws.subarray(0, plan.roundUnits), b), 1, Infinity);
      team0 = { tc, space, all, cur: tables.slice(), plan, base };
    } else {
      // The first round's π_cur episodes (with the mixture and the paired estimator, the π_cur half
      // of its pairs; the paired estimator's π̄ half answers from this same stream). The mixture's
      // baseline: the stage batch's mean reward, fixed before any certification draw.
      const batch = await env.rollout(team, plan.roundUnits, env.slots, teamRng, { record: false });
      const tc = new TeamCertBatch(Float64Array.from(batch.episodes, (e) => e.reward - rMin), env.slots, cfg.certClip);
      const mixture = mixed ? mixtureRange(rMin, rMax, rewardsOf(stageBatch).reduce((a, r) => a + r, 0) / Math.max(1, stageBatch.episodes.length)) : undefined;
      team0 = { tc, batch, plan, base, ...(mixture ? { mixture } : {}), ...(paired ? { paired } : {}) };
    }
  }
  // Language rounds after the first, and the mixture's π̄ halves, are drawn after the updates, and
  // scored or rolled out under π_cur: the starting team is kept.
  const startTeam = startSnapshots ?? (team0?.batch && (team0.plan.maxRounds > 1 || team0.mixture || team0.paired) ? await Promise.all(team.map((a) => a.snapshot())) : null);
  msCert += now() - t0;

  // ── 2. The order σ. Greedy ranks agents by their first-order predicted gain κ_j·√δ_j. ──
  let predicted: number[] | undefined;
  if (cfg.order === 'greedy') {
    phase('order');
    predicted = [];
    for (const a of team) {
      const ab = buildAgentBatch(stageBatch, a.index, stageAdv.norm, new Float64Array(stageBatch.episodes.length).fill(1), env.horizon);
      const kappa = a.kappa ? await a.kappa(ab, stageAdv.raw, cfg.geoIters) : (await agentGeometry(a, ab, stageAdv.raw, cfg.geoIters)).kappa;
      predicted.push(kappa * Math.sqrt(agentDelta(cfg, a.index)));
    }
  }
  const order = chooseOrder(cfg.order, n, { rng: rng.fork(stage, STREAM.order), custom: cfg.customOrder, predictedGain: predicted });

  // ── 3. Agents one at a time. ──
  const steps: AgentStepRecord[] = [];
  let jPrev = jStart;
  let lastEval = start0;
  for (let i = 0; i < n; i++) {
    const j = order[i]!;
    const agent = team[j]!;
    const predecessors = simultaneous ? [] : order.slice(0, i);
    const delta = agentDelta(cfg, j);

    // 3a. The certification batch under π̂ⁱ⁻¹, before anything about this update is decided; its
    // own stream, so the training run is the same whatever certEpisodes is.
    t0 = now();
    phase('certificate');
    const certRng = rng.fork(stage, STREAM.cert, i);
    const draw: CertDraw = team0 || refused !== undefined
      ? {}
      : tables
        ? { before: tables }
        : { batch: await env.rollout(team, Math.max(1, Math.ceil(certEpisodesOf(cfg) / env.slots)), env.slots, certRng, { record: false, scored: [j] }) };
    msCert += now() - t0;

    // 3b. Data and advantages under π̂ⁱ⁻¹ (§4).
    t0 = now();
    phase('resample');
    let batch = stageBatch;
    let adv = stageAdv;
    let weight = new Float64Array(stageBatch.episodes.length).fill(1);
    if (i > 0 && predecessors.length > 0 && estimator === 'resample') {
      batch = await env.rollout(team, B, G, rng.fork(stage, STREAM.resample, i), { scored: [j], ...(tables ? { tables } : {}) }); // only agent j trains on it
      episodesUsed += batch.episodes.length;
      for (const ep of batch.episodes) decisions += ep.turns.length;
      adv = groupAdvantages(rewardsOf(batch), B, G, cfg.norm, cfg.aClip);
    } else if (predecessors.length > 0 && (estimator === 'truncated-is' || estimator === 'happo')) {
      const nowLogp = new Map<number, Float64Array>();
      for (const p of predecessors) {
        const s = agentSteps(stageBatch, p);
        nowLogp.set(p, await team[p]!.logProbs(s));
      }
      const { logM, logW } = predecessorLogRatios(stageBatch, predecessors, nowLogp);
      if (estimator === 'truncated-is') {
        weight = logW.map(Math.exp);
        adv = groupAdvantages(rewardsOf(stageBatch), B, G, cfg.norm, cfg.aClip, weight);
      } else {
        const M = logM.map(Math.exp);
        adv = { norm: stageAdv.norm.map((a, e) => a * M[e]!), raw: stageAdv.raw.map((a, e) => a * M[e]!) };
      }
    }
    // A fresh on-policy probe under π̂ⁱ⁻¹ measures the bias ζ of reuse estimators (§7).
    let probe: { batch: Batch; raw: Float64Array } | undefined;
    if (estimator !== 'resample' && i > 0) {
      phase('probe');
      const pg = Math.max(1, Math.ceil(cfg.probeEpisodes / G));
      // Not recorded: the transcripts show the batch agent j trains on, not this probe.
      const pb = await env.rollout(team, pg, G, rng.fork(stage, STREAM.probe, i), { scored: [j], record: false, ...(tables ? { tables } : {}) }); // agent j's gain on it
      episodesUsed += pb.episodes.length;
      probe = { batch: pb, raw: groupAdvantages(rewardsOf(pb), pg, G, cfg.norm, cfg.aClip).raw };
    }
    msRollout += now() - t0;

    // 3c. Optimise L_j inside the trust region (§5, §6), beside the parameters (update.ts): one
    // call for an agent in a worker. It also returns, after the update, the log-probs the gains
    // below need (training batch, certification batch, probe) and a table's new distributions.
    t0 = now();
    const agentBatch = buildAgentBatch(batch, j, adv.norm, weight, env.horizon);
    const certSteps = draw.batch ? agentSteps(draw.batch, j) : team0?.batch ? agentSteps(team0.batch, j) : null;
    const probeSteps = probe ? agentSteps(probe.batch, j) : null;
    const plan: UpdatePlan = {
      batch: agentBatch,
      rawAdv: adv.raw,
      delta,
      beta: betas[j]!,
      settings: updateSettings(cfg),
      after: {
        logProbs: [agentBatch, ...(certSteps ? [certSteps] : []), ...(probeSteps ? [probeSteps] : [])],
        ...((draw.before || team0?.space || (tables && refused !== undefined)) && env.tableSteps ? { distributions: env.tableSteps(j) } : {}),
      },
    };
    const up = agent.update ? await agent.update(plan) : await updateAgent(agent, plan, phase);
    const { kl, check, last, backtracks, rejected } = up;
    betas[j] = up.beta;
    const [lpBatch, ...lpRest] = up.after.logProbs;
    const lpCert = certSteps ? lpRest.shift()! : null;
    const lpProbe = probeSteps ? lpRest.shift()! : null;
    msUpdate += now() - t0;

    // 3d. The certificate for this agent, and what really happened (exact ΔJ).
    t0 = now();
    phase('certificate');
    const trainMean = rewardsOf(batch).reduce((a, r) => a + r, 0) / Math.max(1, batch.episodes.length);
    const certBatch = draw.batch ?? team0?.batch;
    const after: AfterUpdate = { certLogRatios: lpCert && certBatch ? episodeLogRatios(certBatch, certSteps!, lpCert) : undefined, table: up.after.distributions };
    const { x: certX, ...fresh } = team0
      ? teamShare(team0, j, after, !rejected, cfg, n, span)
      : refused !== undefined
        ? { gain: NaN, lower: -Infinity, range: [0, 0] as [number, number], units: 0, episodes: 0, clip: cfg.certClip, moved: !rejected, x: new Float64Array(0) }
        : certifyStep(env, j, draw, after, trainMean, !rejected, cfg, n, certRng);
    // Only agent j moved: the tables of π̂ⁱ are those of π̂ⁱ⁻¹ with its new one (a rejected update
    // restored it exactly).
    if (tables && after.table) tables = tables.map((t, k) => (k === j ? after.table! : t));
    certSum ??= new Float64Array(certX.length);
    if (certSum.length !== certX.length) throw new RangeError(`certification batches of ${certSum.length} and ${certX.length} units in one stage`);
    for (let t = 0; t < certX.length; t++) certSum[t]! += certX[t]!;
    certRange[0] += fresh.range[0];
    certRange[1] += fresh.range[1];
    certEpisodes += team0 ? 0 : draw.batch ? draw.batch.episodes.length : fresh.moved ? fresh.episodes : 0;
    msCert += now() - t0;
    phase('gain');
    const gain = measuredGain(batch, episodeLogRatios(batch, agentSteps(batch, j), lpBatch!), adv.raw, weight);
    const bias = probe ? Math.abs(gain - measuredGain(probe.batch, episodeLogRatios(probe.batch, probeSteps!, lpProbe!), probe.raw, new Float64Array(probe.raw.length).fill(1))) : 0;
    // J after this agent's update: after every agent when evaluation is cheap (exact), otherwise
    // only after the last one (NaN in between; the stage's ΔJ is still exact in what it compares).
    const evaluateNow = env.evaluatePerAgent || i === n - 1;
    phase('evaluate');
    // Tabular games: from the tables the stage keeps up to date (agent j's new one came back with its update).
    if (evaluateNow) lastEval = tables && env.evaluateTables ? env.evaluateTables(tables) : await env.evaluate(team);
    const jNow = evaluateNow ? lastEval.J : NaN;
    const cert: AgentCertInput = { agent: j, ...fresh, gainInSample: gain, klMax: env.stepsPerTurn * check.max, turns: env.agentTurns(j), bias };
    const p = `agent/${j}/`;
    const metrics: Metrics = {
      [p + 'surrogate']: last.surrogate,
      [p + 'objective']: last.objective,
      [p + 'gain']: fresh.gain,
      [p + 'gain_insample']: gain,
      [p + 'cert_lower']: fresh.lower,
      [p + 'cert_lo']: fresh.range[0],
      [p + 'cert_hi']: fresh.range[1],
      [p + 'cert_clip']: fresh.clip,
      [p + 'gain_geo']: up.geoGain,
      [p + 'kappa']: up.kappa,
      [p + 'bias']: bias,
      [p + 'kl_q']: check.q,
      [p + 'kl_mean']: check.mean,
      [p + 'kl_max']: check.max,
      [p + 'viol_rate']: check.violRate,
      [p + 'delta']: delta,
      [p + 'backtracks']: backtracks,
      [p + 'accepted']: rejected ? 0 : 1,
      [p + 'beta']: betas[j]!,
      [p + 'adv_hist']: histogram(adv.norm, ADV_HIST_BINS, [-cfg.aClip, cfg.aClip]).counts,
      [p + 'clipfrac']: last.clipfrac,
      [p + 'grad_norm']: last.gradNorm,
      [p + 'dJ']: jNow - jPrev,
      [p + 'position']: i,
    };
    const record: AgentStepRecord = {
      stage, position: i, agent: j, metrics, advNorm: adv.norm, advRaw: adv.raw, kl, delta, check,
      accepted: !rejected, backtracks, jBefore: jPrev, jAfter: jNow, cert,
    };
    steps.push(record);
    if (evaluateNow) jPrev = jNow;
    ctx.profiler?.stop();
    yield record;
  }

  // ── 4. The certificate against the realised improvement. ──
  t0 = now();
  phase('certificate');
  let teamStats: TeamCertStats | undefined;
  let sequential: SequentialSummary | undefined;
  let joint: { gain: number; lower: number };
  let creditLeft = credit;
  let pairsDiffer = NaN;
  if (team0) {
    // One bound on the team's step at δ_conf (§5.1): X = (min(r̄, c) − 1)·(R − b) per unit, read
    // as a confidence sequence after every round until it certifies, turns futile or runs out (§5.3).
    // With the mixture (§5.4) X = w·(R − b) per pair, in [−2A_b, 2A_b], and the paired estimator
    // (§5.5) X = R_π̄ − R_πcur per pair, in [−A, A]: both ends are known, so the whole range is
    // used, as on tabular games.
    const { plan, mixture, paired } = team0;
    const xs = team0.all?.summands();
    const range: [number, number] = xs ? extent(xs) : mixture ? mixture.range : paired ? pairedRange(rMin, rMax) : teamRange(span, cfg.certClip).team;
    const scale = team0.all || mixture || paired ? undefined : span;
    const seq = new SequentialCert(plan.roundUnits, plan.maxRounds, plan.horizon, range, cfg.deltaConf, cfg.certBound, scale, cfg.certStop === 'early');
    let final: AgentSnapshot[] | null = null;
    const mixRound = async (round: number, given?: MixtureHalf) => {
      final ??= await Promise.all(team.map((a) => a.snapshot()));
      const r = await mixtureRound(env, team, startTeam!, final, plan.roundUnits, rng.fork(stage, STREAM.teamCert, round), given);
      return mixtureSummands(r.cur, r.bar, mixture!.b, env.slots);
    };
    // The paired estimator's round r: π̄ and π_cur answer the round's stream with the same uniforms;
    // the first round's π_cur half is the batch drawn at the stage start from that stream.
    const pairRound = async (round: number, before?: Float64Array) => {
      final ??= await Promise.all(team.map((a) => a.snapshot()));
      return (await crnUnits(env, team, startTeam!, plan.roundUnits, round === 1 ? rng.fork(stage, STREAM.teamCert) : rng.fork(stage, STREAM.teamCert, round), { final, ...(before ? { before } : {}) }))!;
    };
    let x = mixture
      ? await mixRound(1, { reward: rewardsOf(team0.batch!), logR: team0.tc.logRatios() })
      : paired ? await pairRound(1, rewardsOf(team0.batch!)) : team0.tc.summands();
    let stop: CertStop | undefined;
    for (let round = 1; ; round++) {
      if (round > 1) {
        if (mixture) {
          x = concat(x, await mixRound(round));
        } else if (paired) {
          x = concat(x, await pairRound(round));
        } else if (xs && team0.space) {
          x = concat(x, gather(xs, team0.space.draws.subarray((round - 1) * plan.roundUnits, round * plan.roundUnits), 0));
        } else {
          final ??= await Promise.all(team.map((a) => a.snapshot()));
          const r = await languageRound(env, team, startTeam!, final, plan.roundUnits, cfg.certClip, rng.fork(stage, STREAM.teamCert, round));
          x = concat(x, r.x);
        }
      }
      ctx.onCertLook?.(x, range, scale);
      const look = seq.look(x);
      stop = seq.stopAfter(x);
      if (stop) {
        joint = { gain: look.gain, lower: look.lower };
        break;
      }
    }
    const unitEpisodes = team0.space ? 1 : mixture || paired ? 2 * env.slots : env.slots;
    sequential = seq.summary(stop!, unitEpisodes);
    teamStats = team0.tc.stats(); // ESS and truncation cost of the first round's π_cur episodes (diagnostics)
    const used = x.length * unitEpisodes;
    certEpisodes += used;
    if (paired) pairsDiffer = x.reduce((k, v) => k + (v !== 0 ? 1 : 0), 0) / Math.max(1, x.length);
    creditLeft = credit + team0.base - used;
  } else if (refused !== undefined) {
    joint = { gain: NaN, lower: -Infinity };
  } else {
    joint = freshBound(certSum ?? new Float64Array(0), certRange, cfg.deltaConf, cfg.certBound);
  }
  msCert += now() - t0;
  ctx.profiler?.stop();
  const cert = certificate(steps.map((s) => s.cert), joint, {
    n, aMax: ctx.aMax, gamma: cfg.gamma, deltaConf: cfg.deltaConf, form: cfg.certForm,
  }, {
    scope: refused !== undefined ? scope : team0 ? 'team' : 'agents', ...(teamStats ? { team: teamStats } : {}), ...(sequential ? { sequential } : {}), ...(refused !== undefined ? { refused } : {}),
    ...(team0?.batch ? { estimator: team0.mixture ? 'mixture' as const : team0.paired ? 'paired' as const : 'truncated-is' as const } : {}),
  });
  const dJ = jPrev - jStart;
  // Did it hold? Exact J: within a few ulps of |J| (a ΔJ of exactly 0 computed as −2e−16 is a tie).
  // Estimated J: only against a common-random-numbers estimate of ΔJ, when the stage was checked.
  t0 = now();
  let held: HeldCheck;
  if (lastEval.exact) {
    held = { state: cert.chosen.lower <= dJ + heldTolerance(jStart, jPrev) ? 'held' : 'not held', estimate: dJ, se: 0, pairs: 0 };
  } else if (startSnapshots) {
    phase('evaluate');
    held = await checkHeld(env, team, startSnapshots, cert.chosen.lower, heldPairs, rng.fork(stage, STREAM.heldCheck));
  } else {
    held = { state: 'unchecked', estimate: NaN, se: NaN, pairs: 0 };
  }
  const msHeld = now() - t0;
  const sumAgents = steps.reduce((a, s) => a + s.cert.lower, 0);
  const metrics: Metrics = {
    'team/J': jPrev,
    'team/dJ': dJ,
    'team/J_ci': lastEval.ci, // 0 when J is exact (tabular enumeration)
    'cert/gain': cert.chosen.gain,
    'cert/gain_insample': cert.chosen.gainInSample,
    'cert/shift': cert.chosen.shift,
    'cert/bias': cert.chosen.bias,
    'cert/finite': cert.chosen.finite,
    'cert/lower': cert.chosen.lower,
    ...heldMetrics(held),
    'cert/sum_agents': sumAgents,
    'cert/ess': teamStats ? teamStats.ess : NaN,
    'cert/trunc_cost': teamStats ? teamStats.truncationCost : NaN,
    'cert/max_ratio': teamStats ? teamStats.maxRatio : NaN,
    'cert/mismatch': teamStats ? teamStats.mismatches : 0,
    'cert/team': team0 ? 1 : 0,
    'cert/certified': cert.chosen.certified ? 1 : 0,
    'cert/episodes': certEpisodes,
    'cert/rounds': sequential ? sequential.looks.length : NaN,
    'cert/max_episodes': team0 ? team0.plan.maxRounds * team0.plan.roundEpisodes : NaN,
    'cert/stop': sequential ? CERT_STOP_CODE[sequential.stop] : NaN,
    'cert/credit': creditLeft,
    'cert/clip': team0 && !team0.all ? team0.tc.clip : NaN,
    'cert/baseline': team0?.mixture ? team0.mixture.b : NaN,
    'cert/pairs_differ': pairsDiffer,
    'cert/oracle': cert.chosen.oracle,
    'cert/gain_geo': steps.reduce((s, r) => s + (r.metrics[`agent/${r.agent}/gain_geo`] as number), 0),
    'cert/lower_episodic': cert.episodic.lower,
    'cert/shift_episodic': cert.episodic.shift,
    'cert/lower_gamma': cert.gamma.lower,
    'cert/shift_gamma': cert.gamma.shift,
    'cert/held_gamma': lastEval.exact ? (cert.gamma.lower <= dJ + heldTolerance(jStart, jPrev) ? 1 : 0) : NaN,
    'order/sigma': order,
    'perf/ms_rollout': msRollout,
    'perf/ms_update': msUpdate,
    'perf/ms_cert': msCert,
    'perf/ms_held': msHeld,
    'perf/tokens_per_s': decisions / Math.max(1e-9, (msRollout + msUpdate) / 1000),
    'perf/episodes': episodesUsed,
  };
  for (const s of steps) Object.assign(metrics, s.metrics);
  return { stage, order, steps, certificate: cert, jBefore: jStart, jAfter: jPrev, metrics, evaluation: lastEval, held };
}

/** The metrics of a held check (docs/certificate.md §12): 1 held, 0 not held, NaN undecided or unchecked. */
function heldMetrics(held: HeldCheck): Metrics {
  return { 'cert/held': held.state === 'held' ? 1 : held.state === 'not held' ? 0 : NaN, 'cert/held_dj': held.estimate, 'cert/held_se': held.se, 'cert/held_pairs': held.pairs };
}

/**
 * A finished language stage's bound checked afterwards (the page's "Check bound"): the team as the
 * stage left it against `start`, its snapshots at the stage's start, on the stream a stage checked
 * as it ran uses, so the verdict is the one `heldPairs` would have given. Returns the record with
 * its held check and metrics replaced, or null when `watch` cancelled it; the agents are left as
 * they were either way.
 */
export async function checkFinishedStage(env: TeamEnv, team: readonly AgentPolicy[], start: readonly AgentSnapshot[], rec: StageRecord, pairs: number, rng: Rng, watch: CheckWatch = {}): Promise<StageRecord | null> {
  const held = await checkHeldWatched(env, team, start, rec.certificate.chosen.lower, pairs, rng.fork(rec.stage, STREAM.heldCheck), watch);
  return held && { ...rec, held, metrics: { ...rec.metrics, ...heldMetrics(held) } };
}
