/**
 * Does the certificate certify? For each preset, run it over several seeds at its own settings and
 * count, among the stages whose ΔJ > 0 — exact on tabular games; for language teams the
 * common-random-numbers estimate of each stage's ΔJ on the distribution the bound is about
 * (heldCheck.ts; the report asks every stage to be checked) — how many the certificate proved
 * (cert/lower > 0), and how tight it was there (Σ lower / Σ ΔJ over those stages). Also how often
 * it held (exact, or held / undecided / not held against the estimate), the episodes and the time
 * the certificate costs, and for the team-level form its effective sample size and truncation
 * cost. `npm run sat -- --certify-report` prints it (docs/certificate.md, "Measured").
 *
 * Not here: running a stage (experiment.ts) or printing (src/cli/sat.ts).
 */
import type { Config } from '../sat/config';
import type { StageRecord } from '../sat/stage';

export interface CertReportRow {
  readonly preset: string;
  readonly seeds: number;
  readonly stages: number;
  /** Stages with realised ΔJ > 0. */
  readonly improved: number;
  /** …of which the certificate proved (lower > 0). */
  readonly certified: number;
  /** certified / improved. */
  readonly certifiedFraction: number;
  /** Σ lower / Σ ΔJ over the improved stages (negative lower bounds count as they are). */
  readonly tightness: number;
  /** Σ max(lower, 0) / Σ ΔJ over the improved stages: the share of the improvement proved. */
  readonly provedShare: number;
  /** Stages where the bound held (exact, or decided against the CRN estimate), over all stages. */
  readonly holdRate: number;
  /** Stages whose bound was not held (exact, or above the CRN estimate by 2 se). */
  readonly notHeld: number;
  /** Language teams: stages whose CRN check was undecided, and those not checked. */
  readonly undecided: number;
  readonly unchecked: number;
  /** The team-level form: median ESS of r̄ over the stages, mean truncation cost (NaN for the per-agent form). */
  readonly essMedian: number;
  readonly truncCostMean: number;
  /** Certificate time per stage (ms), and the CRN check's (not counted in msPerStage). */
  readonly msCertPerStage: number;
  readonly msHeldPerStage: number;
  /** Certified stages whose ΔJ was in fact ≤ 0 (a failure of the bound; should be rare). */
  readonly falseCertified: number;
  /** Certification episodes per agent step, and per stage. */
  readonly certEpisodesPerAgent: number;
  readonly certEpisodesPerStage: number;
  /** Wall time per stage, and the share of it spent on the certificate. */
  readonly msPerStage: number;
  readonly certTimeShare: number;
  /**
   * What it would take: over the improved stages whose fresh gain is > 0, the median number of
   * certification episodes per agent at which the width would fall below the gain, extrapolating
   * width ∝ 1/√N from the episodes used (the variance-limited regime; Infinity when no stage had a
   * positive fresh gain).
   */
  readonly episodesToCertify: number;
  /** Per stage: its index, realised ΔJ, fresh gain, lower bound, certification episodes and wall time (ms, without the CRN check). */
  readonly perStage: readonly CertReportStage[];
  /** Per decade of stages (1–10, 11–20, …): the same measures over those stages of every seed. */
  readonly decades: readonly CertReportDecade[];
}

/** One stage of a report row. */
export interface CertReportStage {
  readonly stage: number;
  readonly dJ: number;
  readonly se: number;
  readonly gain: number;
  readonly lower: number;
  readonly episodes: number;
  readonly ms: number;
}

/** A decade of stages of a report row (docs/certificate.md, "Measured"). */
export interface CertReportDecade {
  /** First and last stage index of the decade. */
  readonly from: number;
  readonly to: number;
  readonly improved: number;
  readonly certified: number;
  /** Σ lower / Σ ΔJ over the decade's improved stages. */
  readonly tightness: number;
  /** Certification episodes per stage: the mean and the largest. */
  readonly episodesMean: number;
  readonly episodesMax: number;
  /** Wall time per stage (s, without the CRN check). */
  readonly secondsPerStage: number;
}

const num = (s: StageRecord, k: string): number => s.metrics[k] as number;

/** Wall time of a stage without the CRN check (ms). */
const stageMs = (s: StageRecord): number => num(s, 'perf/ms_rollout') + num(s, 'perf/ms_update') + num(s, 'perf/ms_cert');

/** The report's measures per decade of stage indices (stages 1–10, 11–20, …) over every seed's stages. */
export function certDecades(stages: readonly StageRecord[]): CertReportDecade[] {
  const out: CertReportDecade[] = [];
  const last = Math.max(0, ...stages.map((s) => s.stage));
  for (let from = 1; from <= last; from += 10) {
    const d = stages.filter((s) => s.stage >= from && s.stage < from + 10);
    const improved = d.filter((s) => deltaJ(s) > 0);
    const sumDJ = improved.reduce((a, s) => a + deltaJ(s), 0);
    const ep = d.map((s) => num(s, 'cert/episodes'));
    out.push({
      from, to: Math.min(from + 9, last), improved: improved.length, certified: improved.filter((s) => num(s, 'cert/lower') > 0).length,
      tightness: sumDJ > 0 ? improved.reduce((a, s) => a + num(s, 'cert/lower'), 0) / sumDJ : Number.NaN,
      episodesMean: ep.reduce((a, x) => a + x, 0) / Math.max(1, ep.length), episodesMax: Math.max(0, ...ep),
      secondsPerStage: d.reduce((a, s) => a + stageMs(s), 0) / Math.max(1, d.length) / 1000,
    });
  }
  return out;
}

/** The stage's ΔJ as the report judges it: the held check's (exact, or the CRN estimate), else the recorded team/dJ. */
function deltaJ(s: StageRecord): number {
  return s.held && Number.isFinite(s.held.estimate) ? s.held.estimate : num(s, 'team/dJ');
}

function median(xs: number[]): number {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length > 0 ? v[Math.floor((v.length - 1) / 2)]! : Number.NaN;
}

/** The report row of one preset from its finished runs (one run's stage records per seed). */
export function certReportRow(preset: string, runs: readonly (readonly StageRecord[])[]): CertReportRow {
  const stages = runs.flat();
  const improved = stages.filter((s) => deltaJ(s) > 0);
  const certified = improved.filter((s) => num(s, 'cert/lower') > 0);
  const sumDJ = improved.reduce((a, s) => a + deltaJ(s), 0);
  const sumLower = improved.reduce((a, s) => a + num(s, 'cert/lower'), 0);
  const sumProved = improved.reduce((a, s) => a + Math.max(0, num(s, 'cert/lower')), 0);
  const certEp = stages.reduce((a, s) => a + num(s, 'cert/episodes'), 0);
  const agentSteps = stages.reduce((a, s) => a + s.steps.length, 0);
  const ms = stages.reduce((a, s) => a + stageMs(s), 0);
  const msCert = stages.reduce((a, s) => a + num(s, 'perf/ms_cert'), 0);
  const perAgent = certEp / Math.max(1, agentSteps);
  const needed = improved
    .filter((s) => num(s, 'cert/gain') > 0)
    .map((s) => perAgent * (num(s, 'cert/finite') / num(s, 'cert/gain')) ** 2)
    .sort((a, b) => a - b);
  return {
    preset,
    seeds: runs.length,
    stages: stages.length,
    improved: improved.length,
    certified: certified.length,
    certifiedFraction: improved.length > 0 ? certified.length / improved.length : Number.NaN,
    tightness: sumDJ > 0 ? sumLower / sumDJ : Number.NaN,
    provedShare: sumDJ > 0 ? sumProved / sumDJ : Number.NaN,
    holdRate: stages.filter((s) => num(s, 'cert/held') === 1).length / Math.max(1, stages.length),
    notHeld: stages.filter((s) => (s.held?.state ?? (num(s, 'cert/held') === 1 ? 'held' : 'not held')) === 'not held').length,
    undecided: stages.filter((s) => s.held?.state === 'undecided').length,
    unchecked: stages.filter((s) => s.held === undefined || s.held.state === 'unchecked').length,
    essMedian: median(stages.map((s) => num(s, 'cert/ess'))),
    truncCostMean: stages.reduce((a, s) => a + (Number.isFinite(num(s, 'cert/trunc_cost')) ? num(s, 'cert/trunc_cost') : 0), 0) / Math.max(1, stages.length),
    msCertPerStage: msCert / Math.max(1, stages.length),
    msHeldPerStage: stages.reduce((a, s) => a + (num(s, 'perf/ms_held') || 0), 0) / Math.max(1, stages.length),
    falseCertified: stages.filter((s) => num(s, 'cert/lower') > 0 && deltaJ(s) <= 0).length,
    certEpisodesPerAgent: perAgent,
    certEpisodesPerStage: certEp / Math.max(1, stages.length),
    msPerStage: ms / Math.max(1, stages.length),
    certTimeShare: ms > 0 ? msCert / ms : Number.NaN,
    episodesToCertify: needed.length > 0 ? needed[Math.floor((needed.length - 1) / 2)]! : Infinity,
    perStage: stages.map((s) => ({ stage: s.stage, dJ: deltaJ(s), se: s.held?.se ?? Number.NaN, gain: num(s, 'cert/gain'), lower: num(s, 'cert/lower'), episodes: num(s, 'cert/episodes'), ms: stageMs(s) })),
    decades: certDecades(stages),
  };
}

/** Runs `preset` for `seeds` seeds (seed0, seed0 + 1, …) with `open` and returns its row. */
export async function certReport(
  preset: string, configFor: (seed: number) => Config, seeds: number, run: (cfg: Config) => Promise<readonly StageRecord[]>, seed0 = 1,
): Promise<CertReportRow> {
  const runs: (readonly StageRecord[])[] = [];
  for (let s = 0; s < seeds; s++) runs.push(await run(configFor(seed0 + s)));
  return certReportRow(preset, runs);
}
