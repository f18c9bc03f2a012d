/**
 * The δ sweep: does the KL violation rate grow like √δ (docs/method.md §9.2)? A protocol in which
 * only the radius δ changes — every (seed, δ) run is `sweepConfig`: one never-undone Adam step per
 * update, fixed β, lr ∝ √δ so KL/δ stays the same at every δ — then the fit v ≈ c·δ^p with a
 * seed-bootstrap interval of p. Tabular runs are fresh teams; a language team is swept from where
 * it stands (orderComparison.ts `TeamStart`).
 *
 * Not here: printing (src/cli/sat.ts), the page's button (src/app/sideRuns.ts), the chart
 * (src/app/charts/ViolationChart.tsx).
 */
import { Rng } from '../core/rng';
import { fitPowerLaw, mean, quantile, sampleStd, type PowerLawFit } from '../core/stats';
import { type Config, isLlmTask, parseConfig } from '../sat/config';
import { createTabularExperiment, runStages, type Experiment, type TableExperiment } from '../sat/experiment';

/** The radii the preset and the page sweep by default: three decades' worth, log-spaced. */
export const SWEEP_DELTAS: readonly number[] = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1];
/** Seeds per δ by default. */
export const SWEEP_SEEDS = 10;
/** Bootstrap resamples of the seeds behind the exponent's interval. */
export const SWEEP_RESAMPLES = 2000;
/** The certification batch of each sweep run: irrelevant to the sweep, so small. */
export const SWEEP_CERT_EPISODES = 64;

export type LrScaling = 'sqrt' | 'fixed';

/** The settings the protocol pins (besides delta and lr). */
export const SWEEP_PINNED = { epochs: 1, maxBacktracks: 0, onExhausted: 'keep', betaAdapt: false, certEpisodes: SWEEP_CERT_EPISODES } as const;

/** lr at radius δ: lr_ref·√(δ/δ_ref) with (δ_ref, lr_ref) = the base config's (delta, lr); or lr_ref ('fixed'). */
export function sweepLr(base: Config, delta: number, scaling: LrScaling = 'sqrt'): number {
  return scaling === 'fixed' ? base.lr : base.lr * Math.sqrt(delta / base.delta);
}

/** The config of one sweep run: the base with the protocol's pins, radius δ, its lr and the seed. */
export function sweepConfig(base: Config, delta: number, seed: number, scaling: LrScaling = 'sqrt'): Config {
  return parseConfig({
    ...base,
    ...SWEEP_PINNED,
    geoIters: base.order === 'greedy' ? base.geoIters : 0,
    delta,
    deltas: [],
    lr: sweepLr(base, delta, scaling),
    seed,
  });
}

export interface DeltaSweepOptions {
  /** The base settings; its `delta` and `lr` are the reference point of the lr scaling. */
  readonly base: Config;
  readonly deltas: readonly number[];
  /** Run seeds (each gives one run per δ). */
  readonly seeds: readonly number[];
  /** Stages of each run. */
  readonly stages: number;
  readonly lrScaling?: LrScaling;
  readonly resamples?: number;
  /** Seed of the bootstrap's Rng. */
  readonly bootstrapSeed?: number;
  /** After every stage of every run; awaited (the page yields to the browser here). */
  readonly onProgress?: (done: number, total: number, what: string) => void | Promise<void>;
  /** Checked between stages; a cancelled sweep returns the seeds it finished for every δ (null if none). */
  readonly cancelled?: () => boolean;
  /**
   * Builds each run's experiment from its config (default: createTabularExperiment, a fresh tabular team).
   * A language sweep passes a TeamStart's `side` (orderComparison.ts): every run starts from the
   * same snapshot of a team where it stands, in its own agents (workers in the page).
   */
  readonly open?: (cfg: Config) => Experiment | Promise<Experiment>;
}

export interface DeltaSweepPoint {
  readonly delta: number;
  readonly lr: number;
  /** Visited states (visits, counted by occupancy as the monitor does, §6.1) over all seeds and agent steps. */
  readonly visits: number;
  /** Visits with KL > δ. */
  readonly violations: number;
  /** violations / visits, pooled over seeds. */
  readonly violRate: number;
  /** The same per seed (in `seeds` order), and the counts behind it (the bootstrap resamples these). */
  readonly violRateBySeed: readonly number[];
  readonly violationsBySeed: readonly number[];
  readonly visitsBySeed: readonly number[];
  /** Mean per-visit KL / δ, pooled over seeds: the scaling check (flat across δ ⇔ the step scaled with the radius). */
  readonly klOverDelta: number;
  /** The same per seed, and its sample standard deviation across seeds. */
  readonly klOverDeltaBySeed: readonly number[];
  readonly klOverDeltaSd: number;
  /** Median and 90th percentile of KL/δ over the pooled visits. */
  readonly klOverDeltaQ50: number;
  readonly klOverDeltaQ90: number;
}

export interface DeltaSweepResult {
  readonly protocol: {
    readonly task: string;
    readonly agents: number;
    readonly actions: number;
    /** Local states per agent summed over the team (how many rows the tables have); 0 for a language team (its states are token prefixes, counted as visits). */
    readonly states: number;
    readonly stages: number;
    readonly seeds: readonly number[];
    readonly lrScaling: LrScaling;
    /** The reference point lr(δ_ref) = lr_ref. */
    readonly deltaRef: number;
    readonly lrRef: number;
    readonly pinned: typeof SWEEP_PINNED;
  };
  readonly points: readonly DeltaSweepPoint[];
  /** v ≈ c·δ^p over the δ with a pooled rate > 0; null when fewer than two. */
  readonly fit: PowerLawFit | null;
  /** Percentile bootstrap 95 % interval of p over seeds; null without a fit or with one seed. */
  readonly ci: { readonly lo: number; readonly hi: number; readonly level: number; readonly resamples: number; readonly used: number } | null;
  /** max/min of the per-δ mean KL/δ (1 = perfectly scaled). */
  readonly klSpread: number;
  /** False when the sweep was cancelled (then `seeds` lists the seeds that finished). */
  readonly complete: boolean;
}

/** Per (seed, δ) tallies. */
interface Cell {
  visits: number;
  violations: number;
  klSum: number;
  /** Per-visit KL/δ (for the pooled quantiles). */
  ratios: number[];
}

/** Per δ, violations / visits pooled over the seeds at indices `picks` (repeats count again). */
function pooledRates(points: readonly Pick<DeltaSweepPoint, 'violationsBySeed' | 'visitsBySeed'>[], picks: readonly number[]): number[] {
  return points.map((p) => {
    let v = 0;
    let n = 0;
    for (const s of picks) {
      v += p.violationsBySeed[s]!;
      n += p.visitsBySeed[s]!;
    }
    return n > 0 ? v / n : 0;
  });
}

function tryFit(deltas: readonly number[], rates: readonly number[]): PowerLawFit | null {
  const usable = new Set(deltas.filter((d, i) => d > 0 && rates[i]! > 0)).size;
  return usable >= 2 ? fitPowerLaw(deltas, rates) : null;
}

/** Runs the protocol (module comment) and returns the per-δ numbers, the fit and its bootstrap CI. */
export async function deltaSweep(opts: DeltaSweepOptions): Promise<DeltaSweepResult | null> {
  const { base, deltas, seeds, stages } = opts;
  const scaling = opts.lrScaling ?? 'sqrt';
  if (isLlmTask(base.task) && !opts.open) throw new RangeError('deltaSweep builds fresh tabular teams; a language sweep runs from a team where it stands (opts.open: a TeamStart\'s side)');
  if (deltas.length < 2) throw new RangeError(`deltaSweep needs at least two radii δ, got ${deltas.length}`);
  if (seeds.length < 1) throw new RangeError('deltaSweep needs at least one seed');
  if (!Number.isInteger(stages) || stages < 1) throw new RangeError(`deltaSweep: stages must be a positive integer, got ${stages}`);
  const cancelled = opts.cancelled ?? (() => false);
  const total = seeds.length * deltas.length * stages;
  let done = 0;
  let states = 0;
  const cells: Cell[][] = [];
  for (const seed of seeds) {
    const row: Cell[] = [];
    for (const delta of deltas) {
      const cfg = sweepConfig(base, delta, seed, scaling);
      const exp = opts.open ? await opts.open(cfg) : createTabularExperiment(cfg);
      const game = (exp as Partial<TableExperiment>).game;
      states = game ? game.nObs.reduce((a, b) => a + b, 0) : 0;
      const cell: Cell = { visits: 0, violations: 0, klSum: 0, ratios: [] };
      for (let k = 0; k < stages; k++) {
        if (cancelled()) break;
        const [rec] = await runStages(exp, 1);
        for (const step of rec!.steps) {
          for (const kl of step.kl) {
            cell.visits++;
            if (kl > step.delta) cell.violations++;
            cell.klSum += kl;
            cell.ratios.push(kl / step.delta);
          }
        }
        await opts.onProgress?.(++done, total, `δ sweep: seed ${seed}, δ = ${delta}, stage ${k + 1} / ${stages}`);
      }
      if (cancelled()) break;
      row.push(cell);
    }
    if (cancelled()) break;
    cells.push(row);
  }
  if (cells.length === 0) return null;
  const used = seeds.slice(0, cells.length);
  const all = cells.map((_, i) => i);

  const points: DeltaSweepPoint[] = deltas.map((delta, d) => {
    const col = cells.map((r) => r[d]!);
    const visits = col.reduce((a, c) => a + c.visits, 0);
    const violations = col.reduce((a, c) => a + c.violations, 0);
    const bySeed = col.map((c) => (c.visits > 0 ? c.klSum / c.visits / delta : 0));
    const ratios = col.flatMap((c) => c.ratios);
    return {
      delta,
      lr: sweepLr(base, delta, scaling),
      visits,
      violations,
      violRate: visits > 0 ? violations / visits : 0,
      violRateBySeed: col.map((c) => (c.visits > 0 ? c.violations / c.visits : 0)),
      violationsBySeed: col.map((c) => c.violations),
      visitsBySeed: col.map((c) => c.visits),
      klOverDelta: visits > 0 ? col.reduce((a, c) => a + c.klSum, 0) / visits / delta : 0,
      klOverDeltaBySeed: bySeed,
      klOverDeltaSd: bySeed.length > 1 ? sampleStd(bySeed) : 0,
      klOverDeltaQ50: ratios.length > 0 ? quantile(ratios, 0.5) : 0,
      klOverDeltaQ90: ratios.length > 0 ? quantile(ratios, 0.9) : 0,
    };
  });

  const fit = tryFit(deltas, pooledRates(points, all));
  const ci = fit && cells.length > 1 ? bootstrapExponentCI(points, opts.resamples ?? SWEEP_RESAMPLES, opts.bootstrapSeed) : null;
  const ks = points.map((p) => p.klOverDelta).filter((x) => x > 0);
  return {
    protocol: {
      task: base.task, agents: base.agents, actions: base.actions, states, stages, seeds: used, lrScaling: scaling,
      deltaRef: base.delta, lrRef: base.lr, pinned: SWEEP_PINNED,
    },
    points,
    fit,
    ci,
    klSpread: ks.length > 0 ? Math.max(...ks) / Math.min(...ks) : Number.NaN,
    complete: cells.length === seeds.length,
  };
}

/** The bootstrap's default seed. */
export const SWEEP_BOOTSTRAP_SEED = 0x62737470;

/**
 * Percentile bootstrap 95 % interval of the exponent p over seeds: `resamples` times, draw as many
 * seeds as there are with replacement (Rng(seed), so the same inputs give the same interval), pool
 * each δ's violations and visits over the draws and refit v ≈ c·δ^p; resamples that leave fewer
 * than two δ with a rate > 0 have no fit and are skipped (`used` counts the rest). Null with fewer
 * than two seeds or no fitted resample.
 */
export function bootstrapExponentCI(
  points: readonly Pick<DeltaSweepPoint, 'delta' | 'violationsBySeed' | 'visitsBySeed'>[],
  resamples = SWEEP_RESAMPLES,
  seed = SWEEP_BOOTSTRAP_SEED,
): DeltaSweepResult['ci'] {
  const n = points[0]?.visitsBySeed.length ?? 0;
  if (n < 2) return null;
  const deltas = points.map((p) => p.delta);
  const rng = new Rng(seed, [0x64656c74]);
  const ps: number[] = [];
  for (let b = 0; b < resamples; b++) {
    const picks = Array.from({ length: n }, () => rng.int(n));
    const f = tryFit(deltas, pooledRates(points, picks));
    if (f) ps.push(f.p);
  }
  if (ps.length === 0) return null;
  return { lo: quantile(ps, 0.025), hi: quantile(ps, 0.975), level: 0.95, resamples, used: ps.length };
}
