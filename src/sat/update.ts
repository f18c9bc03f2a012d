/**
 * One agent's whole update (docs/method.md §5–§6, step 3c of a stage): train epochs on L_j inside
 * the trust region — the monitor, backtracking, the 'reject' / 'keep' / 'shrink' policy — then what
 * the stage records from the parameters (the geometric gain of §7.3, the log-probs its gains and
 * certificate need). A function of the agent alone, so an agent in a Web Worker runs it beside its
 * parameters in one round trip (src/workers/agentApi.ts `update`), with the same numbers bit for
 * bit as in-process. Plan and result are plain cloneable data.
 *
 *   const r = await updateAgent(agent, { batch, rawAdv, delta, beta, settings, after: { logProbs: [batch] } });
 *
 * Not here: rollouts, advantages, the certification batch (stage.ts, beside the environment), the
 * maths of the monitor (monitor.ts) and geometry (geometry.ts).
 */
import { geometricGain, geometryAt, type GeometryBefore } from './geometry';
import { checkTrustRegion, lowerBeta, raiseBeta, type TrustCheck } from './monitor';
import type { Config } from './config';
import type { AgentBatch, AgentPolicy, ObjectiveSpec, StepSet, TrainReport } from './types';

/** The settings of an update (a slice of the experiment Config; plain data). */
export interface UpdateSettings {
  readonly objective: ObjectiveSpec['level'];
  readonly tokenAgg: ObjectiveSpec['tokenAgg'];
  readonly epsLow: number;
  readonly epsHigh: number;
  readonly lr: number;
  readonly weightDecay: number;
  readonly epochs: number;
  readonly alpha: number;
  readonly maxBacktracks: number;
  readonly retryLrFactor: number;
  readonly onExhausted: 'reject' | 'keep' | 'shrink';
  readonly betaAdapt: boolean;
  /** Conjugate-gradient / Lanczos iterations of the geometric gain; 0 skips it. */
  readonly geoIters: number;
}

/** The update's slice of the config (plain data: it crosses to a worker). */
export function updateSettings(cfg: Config): UpdateSettings {
  return {
    objective: cfg.objective, tokenAgg: cfg.tokenAgg, epsLow: cfg.epsLow, epsHigh: cfg.epsHigh, lr: cfg.lr, weightDecay: cfg.weightDecay,
    epochs: cfg.epochs, alpha: cfg.alpha, maxBacktracks: cfg.maxBacktracks, retryLrFactor: cfg.retryLrFactor, onExhausted: cfg.onExhausted,
    betaAdapt: cfg.betaAdapt, geoIters: cfg.geoIters,
  };
}

/** What one update is asked to do. */
export interface UpdatePlan {
  /** The agent's steps in its training batch, with normalised advantages and IS weights. */
  readonly batch: AgentBatch;
  /** The same episodes' raw advantages R − μ (reward units: the geometric gain's surrogate). */
  readonly rawAdv: Float64Array;
  /** The agent's trust radius δ_j and its penalty β at the stage start. */
  readonly delta: number;
  readonly beta: number;
  readonly settings: UpdateSettings;
  /** Evaluated after the update: log-probs at each step set, and distributions at one. */
  readonly after?: { readonly logProbs?: readonly StepSet[]; readonly distributions?: StepSet };
}

/** What one update did. */
export interface UpdateResult {
  /** Final per-visit KL κ(s) to π_cur on the batch's steps, and its check. */
  readonly kl: Float64Array;
  readonly check: TrustCheck;
  /** The last optimizer step's report. */
  readonly last: TrainReport;
  readonly backtracks: number;
  /** Out of tries with onExhausted 'reject': the parameters were restored bit for bit. */
  readonly rejected: boolean;
  /** β for the agent's next stage: adapted when betaAdapt, else the plan's β. */
  readonly beta: number;
  /** κ = √(2 gᵀF⁻¹g) at the start (NaN when geoIters = 0) and the geometric gain (docs/method.md §7.3). */
  readonly kappa: number;
  readonly geoGain: number;
  /** What `plan.after` asked for, in its order. */
  readonly after: { readonly logProbs: Float64Array[]; readonly distributions?: Float64Array };
}

/** The phases an update passes through, for the stage profile (src/sat/profile.ts). */
export type UpdatePhase = 'geometry' | 'train' | 'monitor' | 'retry' | 'gain';

function objectiveSpec(s: UpdateSettings, beta: number, lr: number): ObjectiveSpec {
  return { level: s.objective, tokenAgg: s.tokenAgg, epsLow: s.epsLow, epsHigh: s.epsHigh, beta, lr, weightDecay: s.weightDecay };
}

/** κ and λ_min of the agent at its current parameters on a batch (raw advantages): geometry.ts `geometryAt`. */
export async function agentGeometry(agent: AgentPolicy, batch: AgentBatch, rawAdv: Float64Array, iters: number): Promise<GeometryBefore> {
  return geometryAt(await agent.surrogateGradient({ ...batch, adv: rawAdv }), (v) => agent.fisherVectorProduct(batch, v), iters);
}

/** The update (file header). `phase` is told where it is (the stage profile); absent, nothing is measured. */
export async function updateAgent(agent: AgentPolicy, plan: UpdatePlan, phase?: (p: UpdatePhase) => void): Promise<UpdateResult> {
  const { batch, delta, settings: s } = plan;
  const geoOn = s.geoIters > 0;
  if (geoOn) phase?.('geometry');
  const geo = geoOn ? await agentGeometry(agent, batch, plan.rawAdv, s.geoIters) : null;
  const start = await agent.snapshot();
  let beta = plan.beta;
  let backtracks = 0;
  let exhausted = false;
  let rejected = false;
  let check: TrustCheck = checkTrustRegion(new Float64Array(0), delta, s.alpha);
  let kl: Float64Array = new Float64Array(batch.obs.length);
  let last: TrainReport = { objective: 0, surrogate: 0, clipfrac: 0, gradNorm: 0 };
  for (let epoch = 0; epoch < s.epochs && !exhausted; epoch++) {
    // The first epoch starts where the update did: its snapshot is `start` (restore copies it).
    const pre = epoch === 0 ? start : await agent.snapshot();
    // A retry restores the parameters and optimizer state, raises β, and (retryLrFactor < 1)
    // shrinks the step itself — an Adam step's size barely depends on β.
    let lr = s.lr;
    for (let attempt = 0; ; attempt++) {
      phase?.(attempt > 0 ? 'retry' : 'train');
      last = await agent.trainStep(batch, objectiveSpec(s, beta, lr));
      if (attempt === 0) phase?.('monitor');
      kl = await agent.klToReference(batch);
      check = checkTrustRegion(kl, delta, s.alpha);
      if (check.ok) break;
      if (attempt >= s.maxBacktracks) {
        exhausted = true;
        break;
      }
      backtracks++;
      beta = raiseBeta(beta);
      lr *= s.retryLrFactor;
      await agent.restore(pre);
    }
  }
  if (exhausted) {
    phase?.('monitor');
    if (s.onExhausted === 'reject') {
      await agent.restore(start);
      rejected = true;
    } else if (s.onExhausted === 'shrink') {
      // Halve the step toward π_cur until the quantile is inside δ (KL = 0 at π_cur, so this ends).
      for (let h = 0; h < 40 && !check.ok; h++) {
        await agent.interpolate(start, 0.5);
        kl = await agent.klToReference(batch);
        check = checkTrustRegion(kl, delta, s.alpha);
      }
    }
    kl = await agent.klToReference(batch);
    check = checkTrustRegion(kl, delta, s.alpha);
  }
  // β for the next stage: adapted from where the retries left it, or unchanged.
  const nextBeta = s.betaAdapt ? (check.q < delta / 1.5 ? lowerBeta(beta) : beta) : plan.beta;
  let geoGain = NaN;
  if (geo) {
    phase?.('geometry');
    const end = await agent.snapshot();
    geoGain = geometricGain(geo, await agent.surrogateGradient({ ...batch, adv: plan.rawAdv }), start.params, end.params, check.mean).gain;
  }
  phase?.('gain');
  const logProbs: Float64Array[] = [];
  for (const st of plan.after?.logProbs ?? []) logProbs.push(st.obs.length === 0 ? new Float64Array(0) : await agent.logProbs(st));
  const dist = plan.after?.distributions;
  const distributions = dist ? await agent.distributions(dist) : undefined;
  return { kl, check, last, backtracks, rejected, beta: nextBeta, kappa: geo ? geo.kappa : NaN, geoGain, after: { logProbs, ...(distributions ? { distributions } : {}) } };
}
