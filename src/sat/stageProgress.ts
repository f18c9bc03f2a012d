/**
 * A language stage's progress while it runs, for the page's progress bar (time left, Cancel) and
 * the CLI's progress lines. The stage loop names each phase as it enters it (stage.ts, through
 * the StageProfiler hook); `stagePlan` lists, from the settings, the phases a stage meets in
 * order and what each costs in model work, so entering a phase says how much of the stage is
 * done. A unit is one agent's message sampled (its context read and maxNew tokens written) or
 * one pass over a message's tokens (scoring; training counts forward and backward as three).
 * The units are an estimate of where the time goes, not a measurement: the bar is honest about
 * order and proportion, and the time left comes from the pace so far.
 *
 * `cancelled` is asked at every phase boundary; when it answers an error the stage stops there by
 * throwing it — no agent call is in flight at a boundary, so the caller can put the team back at
 * the last finished stage (the page's Cancel).
 *
 * Not here: the phases themselves (stage.ts), the per-phase timing table (profile.ts, the CLI's
 * --profile, which this forwards to when given one).
 */
import { certEpisodesOf, type Config } from './config';
import { StageProfiler, type StagePhase } from './profile';

/** Where a stage stands: units done of the stage's total, and what runs now, in words. */
export interface StageProgressReport {
  readonly stage: number;
  readonly done: number;
  readonly total: number;
  readonly what: string;
}

/** One step of the plan: the phase the stage loop names when it starts, its cost, in words. 'update' is an agent's update (one worker call, or its own phases in-process). */
export interface PlanStep {
  readonly phase: StagePhase | 'update';
  readonly units: number;
  readonly what: string;
}

/** The phases an update passes through in-process (update.ts): all of them are the plan's one 'update' step. */
const UPDATE_PHASES: ReadonlySet<StagePhase> = new Set(['geometry', 'train', 'monitor', 'retry']);

/** Passes over a message a training step costs (forward, and backward at about twice a forward). */
const TRAIN_PASSES = 3;

/**
 * The phases of one language stage in the order stage.ts enters them, with their units, for a team
 * of `n` agents; `startKnown`: the team's J at the stage start is already known (every stage after
 * the first, unless a swap came between). Team-level certification (the language default) unless
 * `scope` is 'agents'.
 */
export function stagePlan(cfg: Config, n: number, startKnown: boolean, scope: 'team' | 'agents' = 'team'): PlanStep[] {
  const BG = cfg.batch * cfg.group;
  const cert = certEpisodesOf(cfg);
  const plan: PlanStep[] = [
    { phase: 'rollout', units: 0, what: 'starting' },
    { phase: 'evaluate', units: startKnown ? 0 : cfg.evalEpisodes * n, what: `the team's J at the start (${cfg.evalEpisodes} held-out episodes)` },
    { phase: 'rollout', units: BG * n, what: `the stage batch (${BG} episodes)` },
    { phase: 'certificate', units: scope === 'team' ? cert * n * n : 0, what: scope === 'team' ? `the certification batch (${cert * n} episodes)` : 'the certificate' },
  ];
  if (cfg.order === 'greedy') plan.push({ phase: 'order', units: n * cfg.geoIters * 2 * BG, what: 'the greedy order (each agent’s κ)' });
  for (let i = 0; i < n; i++) {
    const who = `agent ${i + 1} of ${n}`;
    plan.push({ phase: 'certificate', units: scope === 'agents' ? cert * n : 0, what: `${who}: its certification batch` });
    if (i > 0 && cfg.estimator === 'resample' && cfg.scheme !== 'simultaneous') plan.push({ phase: 'resample', units: BG * n, what: `${who}: a fresh batch under the agents before it (${BG} episodes)` });
    else plan.push({ phase: 'resample', units: 0, what: `${who}: its batch` });
    if (i > 0 && (cfg.estimator !== 'resample' || cfg.scheme === 'simultaneous')) plan.push({ phase: 'probe', units: Math.ceil(cfg.probeEpisodes / cfg.group) * cfg.group * n, what: `${who}: the probe batch` });
    // Training epochs over its batch, the geometry's Fisher products, then scoring the batch and the certification batch after the update.
    const scored = BG + (scope === 'team' ? cert * n : cert);
    plan.push({ phase: 'update', units: cfg.epochs * BG * TRAIN_PASSES + (cfg.geoIters > 0 ? 2 * cfg.geoIters * BG : 0) + scored, what: `${who}: its update (${cfg.epochs} epoch${cfg.epochs === 1 ? '' : 's'} over ${BG} messages)` });
    plan.push({ phase: 'gain', units: 0, what: `${who}: its update` });
    plan.push({ phase: 'certificate', units: 0, what: `${who}: its certificate` });
    plan.push({ phase: 'gain', units: 0, what: `${who}: its gain` });
    plan.push({ phase: 'evaluate', units: i === n - 1 ? cfg.evalEpisodes * n : 0, what: `the team's J at the end (${cfg.evalEpisodes} held-out episodes)` });
  }
  plan.push({ phase: 'certificate', units: 0, what: 'the stage’s certificate' });
  return plan;
}

export class StageProgress extends StageProfiler {
  private plan: PlanStep[] = [];
  private total = 0;
  /** Index of the plan step in force (−1 before the first phase). */
  private at = -1;
  private stage = 0;

  constructor(
    private readonly cfg: Config,
    private readonly n: number,
    startKnown: boolean,
    private readonly report: (r: StageProgressReport) => void,
    /** Asked at every phase boundary: an error stops the stage there (thrown from the stage loop). */
    private readonly cancelled: () => Error | null = () => null,
    /** The CLI's --profile, told every phase too. */
    private readonly inner?: StageProfiler,
    private readonly scope: 'team' | 'agents' = 'team',
  ) {
    super();
    this.begin(1, startKnown);
  }

  /** The next stage to follow: its number, and whether its starting J is already known (planned again). */
  begin(stage: number, startKnown: boolean): this {
    this.stage = stage;
    this.plan = stagePlan(this.cfg, this.n, startKnown, this.scope);
    this.total = this.plan.reduce((s, p) => s + p.units, 0);
    this.at = -1;
    return this;
  }

  /** Units before the plan step in force, the total, and its words. */
  where(): StageProgressReport {
    let done = 0;
    for (let k = 0; k < this.at; k++) done += this.plan[k]!.units;
    return { stage: this.stage, done, total: this.total, what: this.plan[Math.max(0, this.at)]!.what };
  }

  override enter(p: StagePhase): void {
    const stop = this.cancelled();
    if (stop) throw stop;
    super.enter(p);
    this.inner?.enter(p);
    const want = UPDATE_PHASES.has(p) ? 'update' : p;
    if (this.plan[this.at]?.phase === want) return; // still in it (an update's phases, a phase entered twice)
    for (let k = this.at + 1; k < this.plan.length; k++) {
      if (this.plan[k]!.phase === want) {
        this.at = k;
        this.report(this.where());
        return;
      }
    }
  }

  override stop(): void {
    super.stop();
    this.inner?.stop();
  }

  override count(name: string, n = 1): void {
    super.count(name, n);
    this.inner?.count(name, n);
  }

  override reset(): void {
    super.reset();
    this.inner?.reset();
  }
}
