/**
 * Where a stage's time goes: the stage loop names its phase as it enters it
 * (`StageProfiler.enter`), and whoever measures — `npm run sat -- --profile` — counts wall time and
 * any attached counters (forward/backward passes, tokens, agent calls) against the phase in force.
 *
 * Not here: the counters themselves (the CLI wraps the models), printing.
 */
/**
 * The phases, in the order a stage meets them (docs/method.md §3):
 *   evaluate     the team's J (held-out episodes for language teams; exact for tables)
 *   rollout      the stage batch under π_cur, and every agent's reference
 *   order        greedy order's κ (Fisher-vector products), when order = greedy
 *   certificate  drawing and scoring each agent's certification batch (docs/certificate.md §4)
 *   resample     the fresh batch under π̂ⁱ⁻¹ (resample), predecessor ratios (reuse estimators)
 *   probe        the reuse estimators' probe batch
 *   geometry     κ and λ_min before the update, the geometric gain after it (Fisher products)
 *   train        the accepted tries of optimizer steps
 *   monitor      the trust-region KL after each step, reject / shrink
 *   retry        optimizer steps and KL checks after a backtrack
 *   gain         the in-sample gain and the reuse estimators' bias
 */
export const STAGE_PHASES = ['evaluate', 'rollout', 'order', 'certificate', 'resample', 'probe', 'geometry', 'train', 'monitor', 'retry', 'gain'] as const;
export type StagePhase = (typeof STAGE_PHASES)[number];

export interface PhaseTally {
  ms: number;
  /** Named counters (e.g. "fwd", "fwdTokens", "bwd", "genTokens"). */
  readonly counts: Record<string, number>;
}

function now(): number {
  return typeof performance !== 'undefined' ? performance.now() : Date.now();
}

export class StageProfiler {
  private current: StagePhase | null = null;
  private since = 0;
  readonly phases = new Map<StagePhase, PhaseTally>();

  private tally(p: StagePhase): PhaseTally {
    let t = this.phases.get(p);
    if (!t) this.phases.set(p, (t = { ms: 0, counts: {} }));
    return t;
  }

  /** Leaves the phase in force (charging its time) and enters `p`. */
  enter(p: StagePhase): void {
    const t = now();
    if (this.current) this.tally(this.current).ms += t - this.since;
    this.current = p;
    this.since = t;
  }

  /** Stops the clock (the stage ended). */
  stop(): void {
    const t = now();
    if (this.current) this.tally(this.current).ms += t - this.since;
    this.current = null;
  }

  /** Adds `n` to counter `name` of the phase in force (work outside any phase is not counted). */
  count(name: string, n = 1): void {
    if (!this.current) return;
    const c = this.tally(this.current).counts;
    c[name] = (c[name] ?? 0) + n;
  }

  /** Forgets everything (the next stage starts from zero). */
  reset(): void {
    this.phases.clear();
    this.current = null;
  }
}
