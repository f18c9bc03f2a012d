/**
 * Does the certificate certify? For each preset, run it over several seeds at its own settings and
 * count, among the stages whose realised ΔJ > 0 (exact on tabular games; held-out J for language
 * teams), how many the certificate proved (cert/lower > 0), and how tight it was there
 * (Σ lower / Σ ΔJ over those stages). Also the hold rate over all stages and the episodes the
 * certification batches cost. `npm run sat -- --certify-report` prints it (docs/certificate.md,
 * "Measured").
 *
 * Not here: running a stage (experiment.ts) or printing (src/cli/sat.ts).
 */
import type { Config } from './config';
import type { StageRecord } from './stage';

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
  /** Stages where lower ≤ ΔJ, over all stages. */
  readonly holdRate: number;
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
  /** Per stage: realised ΔJ, fresh gain, lower bound (for plots and the extrapolation). */
  readonly perStage: readonly { readonly dJ: number; readonly gain: number; readonly lower: number }[];
}

const num = (s: StageRecord, k: string): number => s.metrics[k] as number;

/** The report row of one preset from its finished runs (one run's stage records per seed). */
export function certReportRow(preset: string, runs: readonly (readonly StageRecord[])[]): CertReportRow {
  const stages = runs.flat();
  const improved = stages.filter((s) => num(s, 'team/dJ') > 0);
  const certified = improved.filter((s) => num(s, 'cert/lower') > 0);
  const sumDJ = improved.reduce((a, s) => a + num(s, 'team/dJ'), 0);
  const sumLower = improved.reduce((a, s) => a + num(s, 'cert/lower'), 0);
  const sumProved = improved.reduce((a, s) => a + Math.max(0, num(s, 'cert/lower')), 0);
  const certEp = stages.reduce((a, s) => a + num(s, 'cert/episodes'), 0);
  const agentSteps = stages.reduce((a, s) => a + s.steps.length, 0);
  const ms = stages.reduce((a, s) => a + num(s, 'perf/ms_rollout') + num(s, 'perf/ms_update') + num(s, 'perf/ms_cert'), 0);
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
    falseCertified: stages.filter((s) => num(s, 'cert/lower') > 0 && num(s, 'team/dJ') <= 0).length,
    certEpisodesPerAgent: perAgent,
    certEpisodesPerStage: certEp / Math.max(1, stages.length),
    msPerStage: ms / Math.max(1, stages.length),
    certTimeShare: ms > 0 ? msCert / ms : Number.NaN,
    episodesToCertify: needed.length > 0 ? needed[Math.floor((needed.length - 1) / 2)]! : Infinity,
    perStage: stages.map((s) => ({ dJ: num(s, 'team/dJ'), gain: num(s, 'cert/gain'), lower: num(s, 'cert/lower') })),
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
