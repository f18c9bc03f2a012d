/**
 * One SAT stage (docs/method.md §3; the paper's Algorithm 1), top to bottom:
 *
 *   B ← rollout(π_cur)                         the stage batch, on-policy
 *   σ ← order(B)
 *   for i in 1..n:  j ← σ(i)
 *       batch, Â ← advantages under π̂ⁱ⁻¹       estimator mode (§4)
 *       repeat epochs: one optimizer step on L_j (§5), then the trust-region check (§6):
 *           (1−α)-quantile of KL > δ_j  ⇒  undo the step (parameters and optimizer state),
 *                                           β ×1.5, retry; out of tries ⇒ reject | keep | shrink
 *       π_cur⁽ʲ⁾ ← π_tar⁽ʲ⁾; its certificate summands: the importance-weighted gain on a
 *           certification batch drawn under π̂ⁱ⁻¹ before the update and never used by it
 *   certificate (§7) = one lower confidence bound on the agents' summands added unit by unit;
 *   J(π̄) exactly (tabular) ⇒ realised ΔJ, cert/held, cert/certified
 *
 * `runStage` is an async generator: it yields after every agent step (the playground's
 * "Step agent ▸") and returns the stage record. Every random draw comes from a named sub-stream
 * of the run seed (rng.fork(stage, purpose, …)), so a run is fixed by (seed, config).
 *
 * The `simultaneous` scheme is the baseline SAT replaces: every agent is trained from the same
 * stage batch with the same advantages, none sees the others' updates. (Because each agent's
 * objective depends only on its own parameters, this is exactly what the `naive` estimator does
 * too — the released code's behaviour *is* a simultaneous update.)
 *
 * Not here: building the team or looping over stages (experiment.ts), the maths of each piece
 * (advantages.ts, objective.ts, monitor.ts, certificate.ts, geometry.ts).
 */
import { histogram } from '../core/stats';
import type { Rng } from '../core/rng';
import { groupAdvantages, predecessorLogRatios } from './advantages';
import { certificate, freshBound, perAgentEta, type AgentCertInput, type Certificate } from './certificate';
import { agentDelta, certEpisodesOf, type Config } from './config';
import { chooseOrder } from './order';
import type { TeamEnv, TeamEvaluation } from './env/types';
import { agentSteps } from './rollout';
import type { StageProfiler } from './profile';
import type { TrustCheck } from './monitor';
import type { AgentBatch, AgentPolicy, Batch } from './types';
import { agentGeometry, updateAgent, type UpdatePlan, type UpdateSettings } from './update';

/** Metric values: numbers, or arrays (histograms, σ). Keys: docs/method.md §9. */
export type Metrics = Record<string, number | number[]>;

/** Sub-stream purposes (the second element of every fork path). */
const STREAM = { stageBatch: 1, resample: 2, probe: 3, order: 4, cert: 5 } as const;

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
  for (let e = 0; e < u.length; e++) g += weight[e]! * raw[e]! * Math.expm1(u[e]!);
  return (g / Math.max(1, u.length)) * (G / (G - 1));
}

/**
 * Per episode of `batch`, log r = Σ over the agent's steps `s` of (log π_θ now (`now`, one per
 * step) − the log-prob recorded when the batch was sampled): the log of its sequence ratio (0
 * where the agent never acts).
 */
function episodeLogRatios(batch: Batch, s: { readonly episodeOf: Int32Array; readonly logp: Float64Array }, now: Float64Array): Float64Array {
  const u = new Float64Array(batch.episodes.length);
  for (let k = 0; k < now.length; k++) u[s.episodeOf[k]!]! += now[k]! - s.logp[k]!;
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
 * truncating r can only lower E[X], because R − b ≥ 0. A unit is one episode, or for the
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
      x[Math.floor(e / G)]! += ((Math.min(Math.exp(u[e]!), clip) - 1) * (ep.reward - rMin)) / G;
    });
  }
  const { gain, lower } = freshBound(x, range, perAgentEta(n, cfg.deltaConf), cfg.certBound);
  return { gain, lower, range, units, episodes, clip, moved, x };
}

function rewardsOf(batch: Batch): Float64Array {
  return Float64Array.from(batch.episodes, (e) => e.reward);
}

/** The update's slice of the config (plain data: it crosses to a worker). */
function updateSettings(cfg: Config): UpdateSettings {
  return {
    objective: cfg.objective, tokenAgg: cfg.tokenAgg, epsLow: cfg.epsLow, epsHigh: cfg.epsHigh, lr: cfg.lr, weightDecay: cfg.weightDecay,
    epochs: cfg.epochs, alpha: cfg.alpha, maxBacktracks: cfg.maxBacktracks, retryLrFactor: cfg.retryLrFactor, onExhausted: cfg.onExhausted,
    betaAdapt: cfg.betaAdapt, geoIters: cfg.geoIters,
  };
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
    const draw: CertDraw = tables
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
      const pb = await env.rollout(team, pg, G, rng.fork(stage, STREAM.probe, i), { scored: [j], ...(tables ? { tables } : {}) }); // agent j's gain on it
      episodesUsed += pb.episodes.length;
      probe = { batch: pb, raw: groupAdvantages(rewardsOf(pb), pg, G, cfg.norm, cfg.aClip).raw };
    }
    msRollout += now() - t0;

    // 3c. Optimise L_j inside the trust region (§5, §6), beside the parameters (update.ts): one
    // call for an agent in a worker. It also returns, after the update, the log-probs the gains
    // below need (training batch, certification batch, probe) and a table's new distributions.
    t0 = now();
    const agentBatch = buildAgentBatch(batch, j, adv.norm, weight, env.horizon);
    const certSteps = draw.batch ? agentSteps(draw.batch, j) : null;
    const probeSteps = probe ? agentSteps(probe.batch, j) : null;
    const plan: UpdatePlan = {
      batch: agentBatch,
      rawAdv: adv.raw,
      delta,
      beta: betas[j]!,
      settings: updateSettings(cfg),
      after: {
        logProbs: [agentBatch, ...(certSteps ? [certSteps] : []), ...(probeSteps ? [probeSteps] : [])],
        ...(draw.before && env.tableSteps ? { distributions: env.tableSteps(j) } : {}),
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
    const after: AfterUpdate = { certLogRatios: lpCert && draw.batch ? episodeLogRatios(draw.batch, certSteps!, lpCert) : undefined, table: up.after.distributions };
    const { x: certX, ...fresh } = certifyStep(env, j, draw, after, trainMean, !rejected, cfg, n, certRng);
    // Only agent j moved: the tables of π̂ⁱ are those of π̂ⁱ⁻¹ with its new one (a rejected update
    // restored it exactly).
    if (tables && after.table) tables = tables.map((t, k) => (k === j ? after.table! : t));
    certSum ??= new Float64Array(certX.length);
    if (certSum.length !== certX.length) throw new RangeError(`certification batches of ${certSum.length} and ${certX.length} units in one stage`);
    for (let t = 0; t < certX.length; t++) certSum[t]! += certX[t]!;
    certRange[0] += fresh.range[0];
    certRange[1] += fresh.range[1];
    certEpisodes += draw.batch ? draw.batch.episodes.length : fresh.moved ? fresh.episodes : 0;
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
  phase('certificate');
  const joint = freshBound(certSum ?? new Float64Array(0), certRange, cfg.deltaConf, cfg.certBound);
  ctx.profiler?.stop();
  const cert = certificate(steps.map((s) => s.cert), joint, {
    n, aMax: ctx.aMax, gamma: cfg.gamma, deltaConf: cfg.deltaConf, form: cfg.certForm,
  });
  const dJ = jPrev - jStart;
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
    'cert/held': cert.chosen.lower <= dJ ? 1 : 0,
    'cert/certified': cert.chosen.certified ? 1 : 0,
    'cert/episodes': certEpisodes,
    'cert/oracle': cert.chosen.oracle,
    'cert/gain_geo': steps.reduce((s, r) => s + (r.metrics[`agent/${r.agent}/gain_geo`] as number), 0),
    'cert/lower_episodic': cert.episodic.lower,
    'cert/shift_episodic': cert.episodic.shift,
    'cert/lower_gamma': cert.gamma.lower,
    'cert/shift_gamma': cert.gamma.shift,
    'cert/held_gamma': cert.gamma.lower <= dJ ? 1 : 0,
    'order/sigma': order,
    'perf/ms_rollout': msRollout,
    'perf/ms_update': msUpdate,
    'perf/ms_cert': msCert,
    'perf/tokens_per_s': decisions / Math.max(1e-9, (msRollout + msUpdate) / 1000),
    'perf/episodes': episodesUsed,
  };
  for (const s of steps) Object.assign(metrics, s.metrics);
  return { stage, order, steps, certificate: cert, jBefore: jStart, jAfter: jPrev, metrics, evaluation: lastEval };
}
