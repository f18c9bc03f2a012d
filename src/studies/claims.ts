/**
 * The five claims of docs/method.md §10b as runnable definitions: for each claim what runs
 * (presets, settings, seeds and stages, at two scales), the statistic, and the rule that turns its
 * 95 % confidence interval into a verdict in words — a verdict at the scale it ran at, never the
 * paper's. Pure functions of settings and seeds; `npm run claims` runs all five into
 * docs/claims.md, the page's Claims view re-runs the tabular ones (2, 3, 5).
 *
 * Not here: files, markdown or SVG (src/cli/claims.ts, src/cli/claimsReport.ts), drawing
 * (src/app/components/ClaimsView.tsx), the δ-sweep protocol itself (deltaSweep.ts).
 */
import { mean, meanCI } from '../core/stats';
import { SatError } from '../core/errors';
import { type Config, isLlmTask } from '../sat/config';
import { deltaSweep, SWEEP_DELTAS } from './deltaSweep';
import { createTabularExperiment, type Experiment, type LmSeat, type ModelLoader, runStages } from '../sat/experiment';
import { createLlmExperiment } from '../sat/llmExperiment';
import { presetConfig } from '../sat/presets';
import { LESSON_GAP, LESSON_OPTIMUM } from './worksheet';
import type { StageRecord } from '../sat/stage';

export type Verdict = 'holds' | 'does not hold' | 'not established';
export const VERDICTS: readonly Verdict[] = ['holds', 'does not hold', 'not established'];

/** 'quick': seconds, for CI (checks the report's format, not its numbers); 'full': the committed report. */
export type ClaimScale = 'quick' | 'full';
export const CLAIM_SCALES: readonly ClaimScale[] = ['quick', 'full'];

export type ClaimId = 1 | 2 | 3 | 4 | 5;
export const CLAIM_IDS: readonly ClaimId[] = [1, 2, 3, 4, 5];

/** A mean with its 95 % interval. */
export interface Estimate {
  readonly mean: number;
  readonly lo: number;
  readonly hi: number;
  /** Seeds behind it. */
  readonly n: number;
  /** 'wilson' only: the trials pooled over the seeds (stages), of which mean · trials succeeded. */
  readonly trials?: number;
  readonly method: 'student-t' | 'bootstrap' | 'wilson';
}

export interface ClaimTest {
  /** What is measured, in words ("final J, team − single L, paired by seed"). */
  readonly label: string;
  readonly estimate: Estimate;
  readonly direction: 'above' | 'contains';
  readonly threshold: number;
  /** 'contains' only: the value the CI must exclude. */
  readonly exclude?: number;
  readonly verdict: Verdict;
}

/** One plotted point: a mean over seeds with its 95 % interval (lo = hi = y for a fitted curve). */
export interface PlotPoint {
  readonly x: number;
  readonly y: number;
  readonly lo: number;
  readonly hi: number;
}

export interface PlotSeries {
  readonly name: string;
  readonly points: readonly PlotPoint[];
  /** false: a fitted or reference curve, drawn as a dashed line without error bars. */
  readonly errorBars: boolean;
}

export interface ClaimPlot {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly xLog: boolean;
  /** Category names by x (x = 0, 1, …) when the x axis is categorical. */
  readonly xCategories?: readonly string[];
  readonly series: readonly PlotSeries[];
  /** Horizontal reference lines (a threshold the verdict compares with). */
  readonly refs: readonly { readonly y: number; readonly label: string }[];
}

export interface ClaimResult {
  readonly id: ClaimId;
  readonly title: string;
  /** The claim as docs/method.md §10b states it. */
  readonly statement: string;
  readonly kind: 'tabular' | 'llm';
  readonly scale: ClaimScale;
  /** What ran, in words: presets, stages, seeds, settings changed. */
  readonly setup: string;
  readonly seeds: readonly number[];
  /** The verdict rule of this claim, in words. */
  readonly rule: string;
  readonly tests: readonly ClaimTest[];
  readonly verdict: Verdict;
  /** One or two sentences: what the numbers say. */
  readonly summary: string;
  /** Commands that reproduce it: the claims runner, then the same runs through `npm run sat`. */
  readonly commands: readonly string[];
  readonly plot: ClaimPlot;
  /** The per-seed numbers behind the tests, by name. */
  readonly perSeed: Readonly<Record<string, readonly number[]>>;
}

export interface ClaimsReport {
  readonly format: 'sat-claims/1';
  readonly scale: ClaimScale;
  readonly claims: readonly ClaimResult[];
  /** Seconds each claim took where it was run, by id (machine-dependent; for the reader only). */
  readonly seconds?: Readonly<Record<number, number>>;
}

export interface ClaimContext {
  /** Reads a shipped model (language claims 1 and 4 only). */
  readonly load?: ModelLoader;
  /** After every stage of every run; awaited (the page yields to the browser here). */
  readonly onProgress?: (done: number, total: number, what: string) => void | Promise<void>;
  /** Checked between stages; a cancelled claim returns null and nothing else changes. */
  readonly cancelled?: () => boolean;
}

// ── the verdict rule ──

/**
 * The verdict of one interval. 'above' t: holds when the CI lies above t (lo > t), does not hold
 * when below (hi < t), else not established. 'contains' t: holds when t is inside the CI and the
 * CI excludes `exclude` (claim 5: p = ½ inside, p = 0 outside), does not hold when the CI excludes
 * t, else not established. A CI with an infinite end (one seed) decides nothing.
 */
export function verdictOf(est: Pick<Estimate, 'lo' | 'hi'>, direction: ClaimTest['direction'], threshold: number, exclude?: number): Verdict {
  const { lo, hi } = est;
  if (!(Number.isFinite(lo) && Number.isFinite(hi)) || lo > hi) return 'not established';
  if (direction === 'above') return lo > threshold ? 'holds' : hi < threshold ? 'does not hold' : 'not established';
  if (lo > threshold || hi < threshold) return 'does not hold';
  return exclude !== undefined && lo <= exclude && exclude <= hi ? 'not established' : 'holds';
}

/** All hold → holds; any does not hold → does not hold; else not established (no tests: not established). */
export function combineVerdicts(vs: readonly Verdict[]): Verdict {
  if (vs.length === 0) return 'not established';
  if (vs.includes('does not hold')) return 'does not hold';
  return vs.every((v) => v === 'holds') ? 'holds' : 'not established';
}

/** Student-t 95 % interval of the mean over seeds. */
export function estimate(xs: readonly number[]): Estimate {
  const c = meanCI(xs);
  return { mean: c.mean, lo: c.lo, hi: c.hi, n: c.n, method: 'student-t' };
}

/**
 * Wilson's score 95 % interval (Wilson 1927) of a share: k successes in `trials` pooled over
 * `seeds` seeds. For a share near 1 it is the right interval where Student t is not: it stays in
 * [0, 1] and keeps a width when every trial succeeded (t over seeds gives upper ends above 1 and a
 * zero-width interval at 10 of 10). It treats the trials as independent; stages of one seed are
 * not quite, which the verdict's wording says.
 */
export function wilson(k: number, trials: number, seeds: number): Estimate {
  if (!(Number.isInteger(k) && Number.isInteger(trials) && trials > 0 && k >= 0 && k <= trials)) throw new RangeError(`wilson: ${k} successes in ${trials} trials`);
  const z = 1.959963984540054;
  const p = k / trials;
  const z2n = (z * z) / trials;
  const centre = (p + z2n / 2) / (1 + z2n);
  const half = (z / (1 + z2n)) * Math.sqrt((p * (1 - p)) / trials + z2n / (4 * trials));
  // At k = 0 (k = trials) the lower (upper) end is exactly 0 (1); rounding would leave 1 − 1e-16.
  const lo = k === 0 ? 0 : Math.max(0, centre - half);
  const hi = k === trials ? 1 : Math.min(1, centre + half);
  return { mean: p, lo, hi, n: seeds, trials, method: 'wilson' };
}

/** The n column: seeds, or for a Wilson interval the trials pooled over them ("300 (10 seeds)"). */
export function sampleSize(e: Estimate): string {
  return e.trials !== undefined ? `${e.trials} (${e.n} seeds)` : String(e.n);
}

function test(label: string, est: Estimate, direction: ClaimTest['direction'], threshold: number, exclude?: number): ClaimTest {
  return { label, estimate: est, direction, threshold, ...(exclude !== undefined ? { exclude } : {}), verdict: verdictOf(est, direction, threshold, exclude) };
}

/** Per-seed differences a[i] − b[i] (two variants run on the same seeds). */
export function paired(a: readonly number[], b: readonly number[]): number[] {
  if (a.length !== b.length) throw new RangeError(`paired: ${a.length} values against ${b.length}`);
  return a.map((x, i) => x - b[i]!);
}

/** Per x, the mean and 95 % interval over seeds of rows[seed][x] (rows of equal length). */
export function curve(rows: readonly (readonly number[])[], xs?: readonly number[]): PlotPoint[] {
  const n = rows[0]?.length ?? 0;
  return Array.from({ length: n }, (_, k) => {
    const c = meanCI(rows.map((r) => r[k]!));
    return { x: xs?.[k] ?? k, y: c.mean, lo: c.lo, hi: c.hi };
  });
}

// ── scales ──

/** How big each claim runs; every scale keeps ≥ 2 seeds so every interval is finite. */
export interface ScaleSpec {
  readonly seeds: number;
  readonly stages: number;
  /** Settings changed from the presets' own (shrunk batches at the quick scale). */
  readonly settings: Readonly<Record<string, string>>;
}

const LM_QUICK = { batch: '4', group: '2', evalEpisodes: '16', certEpisodes: '16', geoIters: '0', epochs: '1' } as const;
const TAB_QUICK = { certEpisodes: '256' } as const;

export const SCALES: Readonly<Record<ClaimId, Readonly<Record<ClaimScale, ScaleSpec>>>> = {
  1: { full: { seeds: 5, stages: 15, settings: {} }, quick: { seeds: 2, stages: 1, settings: LM_QUICK } },
  2: { full: { seeds: 20, stages: 30, settings: {} }, quick: { seeds: 2, stages: 4, settings: TAB_QUICK } },
  3: { full: { seeds: 10, stages: 30, settings: {} }, quick: { seeds: 2, stages: 3, settings: { ...TAB_QUICK, geoIters: '4' } } },
  4: { full: { seeds: 5, stages: 3, settings: {} }, quick: { seeds: 2, stages: 2, settings: { ...LM_QUICK, swapAt: '2' } } },
  5: { full: { seeds: 10, stages: 5, settings: {} }, quick: { seeds: 2, stages: 1, settings: {} } },
};

/** Seeds 1 … n: the presets' own seed first. */
const seedList = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

function scaleOf(id: ClaimId, scale: ClaimScale): ScaleSpec {
  const s = SCALES[id][scale];
  if (s.seeds < 2) throw new RangeError(`claim ${id} at scale ${scale}: ${s.seeds} seed(s); a 95 % interval needs at least 2`);
  return s;
}

const setFlags = (settings: Readonly<Record<string, string>>) => Object.entries(settings).map(([k, v]) => ` --set ${k}=${v}`).join('');
const settingsWords = (settings: Readonly<Record<string, string>>) => {
  const e = Object.entries(settings);
  return e.length ? `; changed from the presets: ${e.map(([k, v]) => `${k} = ${v}`).join(', ')}` : '';
};
/** A shell loop over the seeds (the runs of one variant, one `npm run sat` each). */
const forSeeds = (seeds: readonly number[]) => `for s in ${seeds.join(' ')}; do`;
const claimsCommand = (id: ClaimId, scale: ClaimScale) => `npm run claims -- --only ${id}${scale === 'quick' ? ' --quick' : ''}`;

// ── running ──

/** Counts stages across a claim's runs and reports each; knows whether the run was cancelled. */
class Progress {
  private done = 0;
  constructor(private readonly ctx: ClaimContext, private readonly total: number) {}
  get cancelled(): boolean {
    return this.ctx.cancelled?.() ?? false;
  }
  async tick(what: string): Promise<void> {
    await this.ctx.onProgress?.(++this.done, this.total, what);
  }
}

interface Run {
  readonly j0: number;
  readonly stages: StageRecord[];
  /** Trainable parameters summed over the team (language teams; 0 for tables). */
  readonly params: number;
}

/** One config for cfg.stages stages; null when cancelled. */
async function runConfig(cfg: Config, ctx: ClaimContext, progress: Progress, label: string): Promise<Run | null> {
  let exp: Experiment;
  let params = 0;
  if (isLlmTask(cfg.task)) {
    if (!ctx.load) throw new SatError('claims', `Claim runs on task ${cfg.task} load shipped models: pass a model loader (npm run claims reads public/models).`);
    const lm = await createLlmExperiment(cfg, ctx.load);
    params = lm.team.reduce((a, s: LmSeat) => a + ('model' in s ? s.model.paramCount() : 0), 0);
    exp = lm;
  } else {
    exp = createTabularExperiment(cfg);
  }
  const stages: StageRecord[] = [];
  for (let k = 0; k < cfg.stages; k++) {
    if (progress.cancelled) return null;
    stages.push(...(await runStages(exp, 1)));
    await progress.tick(`${label}, stage ${k + 1} / ${cfg.stages}`);
  }
  return { j0: exp.j0, stages, params };
}

/** J at the start and after every stage. */
const jCurve = (r: Run) => [r.j0, ...r.stages.map((s) => s.jAfter)];
/** Share of stages in which J fell (ΔJ < 0 beyond rounding). */
export const fallRate = (stages: readonly StageRecord[]) => stages.filter((s) => (s.metrics['team/dJ'] as number) < -1e-9).length / Math.max(1, stages.length);

/** Each variant's settings over the seeds: one Run per (variant, seed), variant-major; null when cancelled. */
async function runVariants(variants: readonly { name: string; preset: string; settings: Record<string, string> }[], seeds: readonly number[], stages: number, ctx: ClaimContext): Promise<Run[][] | null> {
  const progress = new Progress(ctx, variants.length * seeds.length * stages);
  const out: Run[][] = [];
  for (const v of variants) {
    const runs: Run[] = [];
    for (const seed of seeds) {
      const cfg = presetConfig(v.preset, { ...v.settings, stages: String(stages), seed: String(seed) });
      const r = await runConfig(cfg, ctx, progress, `${v.name}, seed ${seed}`);
      if (!r) return null;
      runs.push(r);
    }
    out.push(runs);
  }
  return out;
}

const f3 = (x: number) => x.toFixed(3);
const stagesWord = (n: number) => `${n} stage${n === 1 ? '' : 's'}`;
const ci = (e: Estimate) => `${f3(e.mean)} [${f3(e.lo)}, ${f3(e.hi)}]`;

// ── the five claims ──

export interface ClaimDef {
  readonly id: ClaimId;
  readonly title: string;
  readonly statement: string;
  readonly kind: 'tabular' | 'llm';
  readonly rule: string;
  run(scale: ClaimScale, ctx: ClaimContext): Promise<ClaimResult | null>;
}

/** The part of a result that restates the claim and where it ran. */
function head(def: ClaimDef, scale: ClaimScale, seeds: readonly number[]) {
  return { id: def.id, title: def.title, statement: def.statement, kind: def.kind, rule: def.rule, scale, seeds };
}

const claim1: ClaimDef = {
  id: 1,
  title: 'A team of small agents beats one bigger model',
  statement: 'A SAT-trained team of three small agents beats a single model with ≥ 2.5× the team\u2019s total parameters, trained with GRPO for the same number of episodes.',
  kind: 'llm',
  rule: 'Holds when the single model has ≥ 2.5× the team\u2019s parameters and the 95 % CI of the final held-out J difference (team − single, paired by seed) lies above 0; does not hold when it lies below 0; otherwise not established.',
  async run(scale, ctx) {
    const sc = scaleOf(1, scale);
    const seeds = seedList(sc.seeds);
    const team = presetConfig('arith-team', sc.settings);
    // The same episodes per stage: SAT draws a batch for every agent, so the single model gets agents × batch.
    const single = { ...sc.settings, batch: String(team.batch * team.agents) };
    const runs = await runVariants([
      { name: 'arith-team', preset: 'arith-team', settings: { ...sc.settings } },
      { name: 'arith-single-L', preset: 'arith-single-L', settings: single },
    ], seeds, sc.stages, ctx);
    if (!runs) return null;
    const [t, s] = runs as [Run[], Run[]];
    const finalT = t.map((r) => r.stages.at(-1)!.jAfter);
    const finalS = s.map((r) => r.stages.at(-1)!.jAfter);
    const ratio = s[0]!.params / t[0]!.params;
    const diff = test('final held-out J, team − single L (paired by seed)', estimate(paired(finalT, finalS)), 'above', 0);
    const premise = ratio >= 2.5;
    const verdict = premise ? diff.verdict : 'not established';
    const xs = Array.from({ length: sc.stages + 1 }, (_, k) => k);
    return {
      ...head(this, scale, seeds),
      setup: `arith-team (three S models in a chain, SAT) vs arith-single-L (one L model, ${s[0]!.params.toLocaleString('en-US')} parameters = ${ratio.toFixed(1)}× the team\u2019s ${t[0]!.params.toLocaleString('en-US')}; batch ${team.batch * team.agents} = the team\u2019s episodes per stage), ${stagesWord(sc.stages)}, seeds ${seeds[0]}–${seeds.at(-1)}${settingsWords(sc.settings)}`,
      tests: [diff],
      verdict,
      summary: `After ${stagesWord(sc.stages)} the team\u2019s held-out J is ${ci(estimate(finalT))} and the single L\u2019s ${ci(estimate(finalS))}; the paired difference is ${ci(diff.estimate)}${premise ? '' : ` — but the single model has only ${ratio.toFixed(1)}× the parameters, short of 2.5×`}.`,
      commands: [
        claimsCommand(1, scale),
        `${forSeeds(seeds)} npm run sat -- --preset arith-team --stages ${sc.stages} --seed $s${setFlags(sc.settings)}; done`,
        `${forSeeds(seeds)} npm run sat -- --preset arith-single-L --stages ${sc.stages} --seed $s${setFlags(single)}; done`,
      ],
      plot: {
        title: 'Held-out J by stage: SAT team vs one larger model', xLabel: 'stage', yLabel: 'held-out J', xLog: false,
        series: [
          { name: 'team of 3 S (SAT)', points: curve(t.map(jCurve), xs), errorBars: true },
          { name: `single L (${ratio.toFixed(1)}× params)`, points: curve(s.map(jCurve), xs), errorBars: true },
        ],
        refs: [],
      },
      perSeed: { teamFinalJ: finalT, singleFinalJ: finalS },
    };
  },
};

const claim2: ClaimDef = {
  id: 2,
  title: 'SAT vs simultaneous and naive',
  statement: 'SAT (resample) improves monotonically where simultaneous and naive updates oscillate or fall.',
  kind: 'tabular',
  rule: 'Holds when, for both simultaneous and naive on the climbing game, and for simultaneous on the coordination lesson (two equal optima from a symmetric start), the 95 % CI of the share of stages in which J fell (that variant − SAT, paired by seed) lies above 0, and on the lesson the CI of final J (SAT − simultaneous, paired) lies above 0 too; does not hold when any lies below 0; otherwise not established.',
  async run(scale, ctx) {
    const sc = scaleOf(2, scale);
    const seeds = seedList(sc.seeds);
    // The second game: the coordination lesson preset, at its own stages (the quick scale's settings shrink it).
    const lessonStages = scale === 'quick' ? sc.stages : presetConfig('coordination').stages;
    const lesson = [
      { name: 'SAT (resample), lesson', preset: 'coordination', settings: { ...sc.settings, estimator: 'resample', scheme: 'sequential' } },
      { name: 'simultaneous, lesson', preset: 'coordination', settings: { ...sc.settings, scheme: 'simultaneous' } },
    ];
    const variants = [
      { name: 'SAT (resample)', preset: 'climbing', settings: { ...sc.settings, estimator: 'resample', scheme: 'sequential' } },
      { name: 'naive', preset: 'climbing', settings: { ...sc.settings, estimator: 'naive', scheme: 'sequential' } },
      { name: 'simultaneous', preset: 'climbing', settings: { ...sc.settings, scheme: 'simultaneous' } },
    ];
    const runs = await runVariants(variants, seeds, sc.stages, ctx);
    if (!runs) return null;
    const lessonRuns = await runVariants(lesson, seeds, lessonStages, ctx);
    if (!lessonRuns) return null;
    const falls = runs.map((rs) => rs.map((r) => fallRate(r.stages)));
    const finals = runs.map((rs) => rs.map((r) => r.stages.at(-1)!.jAfter));
    const lessonFalls = lessonRuns.map((rs) => rs.map((r) => fallRate(r.stages)));
    const lessonFinals = lessonRuns.map((rs) => rs.map((r) => r.stages.at(-1)!.jAfter));
    const tests = [
      ...[1, 2].map((v) => test(`share of stages with ΔJ < 0, ${variants[v]!.name} − SAT (paired by seed)`, estimate(paired(falls[v]!, falls[0]!)), 'above', 0)),
      test('coordination lesson: share of stages with ΔJ < 0, simultaneous − SAT (paired by seed)', estimate(paired(lessonFalls[1]!, lessonFalls[0]!)), 'above', 0),
      test('coordination lesson: final J, SAT − simultaneous (paired by seed)', estimate(paired(lessonFinals[0]!, lessonFinals[1]!)), 'above', 0),
    ];
    const xs = Array.from({ length: sc.stages + 1 }, (_, k) => k);
    return {
      ...head(this, scale, seeds),
      setup: `climbing preset (3 agents, exact J), ${stagesWord(sc.stages)}, seeds ${seeds[0]}–${seeds.at(-1)}, three variants on the same seeds${settingsWords(sc.settings)}; naive reuse is exactly the simultaneous update (docs/method.md §3.2), so those two agree. Second game: the coordination lesson preset (penalty game, 2 agents, k = ${presetConfig('coordination').penaltyK.toString().replace('-', '−')}, uniform start: (a, a) and (c, c) equally good), SAT vs simultaneous, ${stagesWord(lessonStages)}, the same seeds`,
      tests,
      verdict: combineVerdicts(tests.map((x) => x.verdict)),
      summary: `J fell in ${ci(estimate(falls[0]!))} of stages under SAT, ${ci(estimate(falls[1]!))} under naive and ${ci(estimate(falls[2]!))} under simultaneous; final J ${f3(mean(finals[0]!))} / ${f3(mean(finals[1]!))} / ${f3(mean(finals[2]!))}. On the coordination lesson J fell in ${ci(estimate(lessonFalls[0]!))} of stages under SAT and ${ci(estimate(lessonFalls[1]!))} under simultaneous; final J ${ci(estimate(lessonFinals[0]!))} vs ${ci(estimate(lessonFinals[1]!))}; ${lessonSeeds(lessonFinals[0]!, lessonFinals[1]!, seeds)}.`,
      commands: [
        claimsCommand(2, scale),
        `npm run sat -- --preset climbing --compare resample,naive,simultaneous --seeds ${sc.seeds} --stages ${sc.stages}${setFlags(sc.settings)}`,
        `npm run sat -- --preset coordination --compare resample,simultaneous --seeds ${sc.seeds} --stages ${lessonStages}${setFlags(sc.settings)}`,
      ],
      plot: {
        title: 'Team J by stage on the climbing game', xLabel: 'stage', yLabel: 'J (exact)', xLog: false,
        series: variants.map((v, i) => ({ name: v.name, points: curve(runs[i]!.map(jCurve), xs), errorBars: true })),
        refs: [],
      },
      perSeed: { satFallRate: falls[0]!, naiveFallRate: falls[1]!, simultaneousFallRate: falls[2]!, lessonSatFallRate: lessonFalls[0]!, lessonSimultaneousFallRate: lessonFalls[1]!, lessonSatFinalJ: lessonFinals[0]!, lessonSimultaneousFinalJ: lessonFinals[1]! },
    };
  },
};

/**
 * The coordination lesson per seed, in the words its preset card uses: on how many seeds each
 * scheme ends at an optimum (J above LESSON_OPTIMUM) and on how many SAT ends more than LESSON_GAP
 * above simultaneous — the share the gallery's "what to look for" cites.
 */
export function lessonSeeds(sat: readonly number[], sim: readonly number[], seeds: readonly number[]): string {
  const at = (xs: readonly number[]) => xs.filter((j) => j > LESSON_OPTIMUM).length;
  const gap = sat.filter((j, i) => j - sim[i]! > LESSON_GAP).length;
  return `SAT ends at an optimum (J > ${LESSON_OPTIMUM}) on ${at(sat)} of seeds ${seeds[0]}–${seeds.at(-1)} and simultaneous on ${at(sim)}; SAT ends more than ${LESSON_GAP} above simultaneous on ${gap} of ${seeds.length}`;
}

const ORDERS = ['fixed', 'reverse', 'random', 'greedy'] as const;

const claim3: ClaimDef = {
  id: 3,
  title: 'Any order',
  statement: 'The certificate holds for any update order σ, though σ changes the numbers.',
  kind: 'tabular',
  rule: 'Holds when, for every order, the 95 % Wilson interval of the share of stages whose certificate held (stages pooled over seeds) lies above 1 − δ_conf (the bound\u2019s promised rate); does not hold when it lies below for some order; otherwise not established.',
  async run(scale, ctx) {
    const sc = scaleOf(3, scale);
    const seeds = seedList(sc.seeds);
    const variants = ORDERS.map((o) => ({ name: o, preset: 'order', settings: { ...sc.settings, order: o } }));
    const runs = await runVariants(variants, seeds, sc.stages, ctx);
    if (!runs) return null;
    const target = 1 - presetConfig('order').deltaConf;
    const finals = runs.map((rs) => rs.map((r) => r.stages.at(-1)!.jAfter));
    const held = (r: Run) => r.stages.filter((s) => s.metrics['cert/held'] === 1).length;
    const holds = runs.map((rs) => rs.map((r) => held(r) / Math.max(1, r.stages.length)));
    // A share near 1: Wilson over the stages pooled across seeds, not t over seeds (see wilson).
    const shares = runs.map((rs) => {
      return wilson(rs.reduce((k, r) => k + held(r), 0), rs.reduce((n, r) => n + r.stages.length, 0), rs.length);
    });
    const tests = ORDERS.map((o, i) => test(`share of stages whose certificate held, σ = ${o}`, shares[i]!, 'above', target));
    const points = shares.map((e, i) => ({ x: i, y: e.mean, lo: e.lo, hi: e.hi }));
    return {
      ...head(this, scale, seeds),
      setup: `order preset (relay, 3 agents), σ ∈ {${ORDERS.join(', ')}}, ${stagesWord(sc.stages)}, seeds ${seeds[0]}–${seeds.at(-1)}${settingsWords(sc.settings)}`,
      tests,
      verdict: combineVerdicts(tests.map((x) => x.verdict)),
      summary: `Certificate held in ${ORDERS.map((o, i) => `${ci(shares[i]!)} (${o})`).join(', ')} of stages, against 1 − δ_conf = ${target}; final J ${ORDERS.map((o, i) => `${f3(mean(finals[i]!))} (${o})`).join(', ')} — the order changes the numbers, not the guarantee.`,
      commands: [claimsCommand(3, scale), `npm run sat -- --preset order --compare ${ORDERS.map((o) => `order=${o}`).join(',')} --seeds ${sc.seeds} --stages ${sc.stages}${setFlags(sc.settings)}`],
      plot: {
        title: 'Share of stages whose certificate held, by update order', xLabel: 'update order σ', yLabel: 'certificate held (share of stages)', xLog: false,
        xCategories: [...ORDERS],
        series: [{ name: 'held', points, errorBars: true }],
        refs: [{ y: target, label: `1 − δ_conf = ${target}` }],
      },
      perSeed: Object.fromEntries(ORDERS.map((o, i) => [`${o}HoldRate`, holds[i]!])),
    };
  },
};

const claim4: ClaimDef = {
  id: 4,
  title: 'Plug-and-play, with and without Stage-0',
  statement: 'Swapping in a larger agent with Stage-0 raises the team\u2019s score without retraining the others; without Stage-0 the first stage violates monotonicity more often.',
  kind: 'llm',
  rule: 'Holds when both 95 % CIs lie above 0: (a) with Stage-0, held-out J after the first stage after the swap minus J just before the swap; (b) that first stage\u2019s ΔJ with Stage-0 minus without (paired by seed; a lower ΔJ is a larger fall). Does not hold when either lies below 0; otherwise not established.',
  async run(scale, ctx) {
    const sc = scaleOf(4, scale);
    const seeds = seedList(sc.seeds);
    const base = presetConfig('arith-pnp', sc.settings);
    if (sc.stages !== base.swapAt) throw new RangeError(`claim 4 runs up to the first stage after the swap: stages (${sc.stages}) must equal swapAt (${base.swapAt})`);
    const runs = await runVariants([
      { name: 'with Stage-0', preset: 'arith-pnp', settings: { ...sc.settings, swapStage0: 'true' } },
      { name: 'without Stage-0', preset: 'arith-pnp', settings: { ...sc.settings, swapStage0: 'false' } },
    ], seeds, sc.stages, ctx);
    if (!runs) return null;
    const [w, wo] = runs as [Run[], Run[]];
    const swapStage = (r: Run) => r.stages.at(-1)!;
    const raise = w.map((r) => swapStage(r).jAfter - swapStage(r).swap!.jBefore);
    const dj = (rs: Run[]) => rs.map((r) => swapStage(r).metrics['team/dJ'] as number);
    const tests = [
      test('with Stage-0: J after the first stage after the swap − J before the swap', estimate(raise), 'above', 0),
      test('ΔJ of the first stage after the swap, with − without Stage-0 (paired by seed)', estimate(paired(dj(w), dj(wo))), 'above', 0),
    ];
    const bt = (rs: Run[]) => rs.map((r) => swapStage(r).steps.reduce((a, s) => a + s.backtracks, 0));
    const xs = Array.from({ length: sc.stages + 1 }, (_, k) => k);
    return {
      ...head(this, scale, seeds),
      setup: `arith-pnp (three S models in a chain; agent 1 ← the M model just before stage ${base.swapAt}, δ₀ = ${base.stage0Delta}), with and without Stage-0, ${stagesWord(sc.stages)} (up to the first stage after the swap), seeds ${seeds[0]}–${seeds.at(-1)}${settingsWords(sc.settings)}`,
      tests,
      verdict: combineVerdicts(tests.map((x) => x.verdict)),
      summary: `With Stage-0 the swap and its first stage move held-out J by ${ci(tests[0]!.estimate)}; that stage\u2019s ΔJ is ${ci(estimate(dj(w)))} with Stage-0 and ${ci(estimate(dj(wo)))} without (ΔJ < 0 in ${dj(w).filter((x) => x < 0).length} vs ${dj(wo).filter((x) => x < 0).length} of ${seeds.length} seeds; backtracks ${f3(mean(bt(w)))} vs ${f3(mean(bt(wo)))}).`,
      commands: [
        claimsCommand(4, scale),
        `${forSeeds(seeds)} npm run sat -- --preset arith-pnp --stages ${sc.stages} --seed $s${setFlags(sc.settings)}; done`,
        `${forSeeds(seeds)} npm run sat -- --preset arith-pnp --stages ${sc.stages} --seed $s --no-stage0${setFlags(sc.settings)}; done`,
      ],
      plot: {
        title: `Held-out J by stage; agent 1 ← M before stage ${base.swapAt}`, xLabel: 'stage', yLabel: 'held-out J', xLog: false,
        series: [
          { name: 'with Stage-0', points: curve(w.map(jCurve), xs), errorBars: true },
          { name: 'without Stage-0', points: curve(wo.map(jCurve), xs), errorBars: true },
        ],
        refs: [],
      },
      perSeed: { raiseWithStage0: raise, firstStageDJWith: dj(w), firstStageDJWithout: dj(wo), backtracksWith: bt(w), backtracksWithout: bt(wo) },
    };
  },
};

/** Claim 5's radii at each scale. */
export const CLAIM5_DELTAS: Readonly<Record<ClaimScale, readonly number[]>> = { full: SWEEP_DELTAS, quick: [0.001, 0.01, 0.1] };
const CLAIM5_RESAMPLES: Readonly<Record<ClaimScale, number>> = { full: 2000, quick: 200 };

const claim5: ClaimDef = {
  id: 5,
  title: 'Violation rate vs δ',
  statement: 'The fraction of states past the KL radius grows roughly like √δ.',
  kind: 'tabular',
  rule: 'Fit v ≈ c·δ^p under the δ-sweep protocol (docs/method.md §9.2). Holds when the bootstrap 95 % CI of p contains ½ and excludes 0; does not hold when it excludes ½; otherwise not established.',
  async run(scale, ctx) {
    const sc = scaleOf(5, scale);
    const seeds = seedList(sc.seeds);
    const deltas = CLAIM5_DELTAS[scale];
    const r = await deltaSweep({
      base: presetConfig('delta-sweep', sc.settings), deltas, seeds, stages: sc.stages, resamples: CLAIM5_RESAMPLES[scale],
      onProgress: ctx.onProgress, cancelled: ctx.cancelled,
    });
    if (!r || !r.complete) return null;
    const fit = r.fit;
    const est: Estimate = fit && r.ci
      ? { mean: fit.p, lo: r.ci.lo, hi: r.ci.hi, n: seeds.length, method: 'bootstrap' }
      : { mean: fit?.p ?? Number.NaN, lo: -Infinity, hi: Infinity, n: seeds.length, method: 'bootstrap' };
    const t = test('exponent p of v ≈ c·δ^p (bootstrap over seeds)', est, 'contains', 0.5, 0);
    const measured = r.points.map((p) => {
      const e = estimate(p.violRateBySeed);
      return { x: p.delta, y: e.mean, lo: e.lo, hi: e.hi };
    });
    const series: PlotSeries[] = [{ name: 'violation rate', points: measured, errorBars: true }];
    if (fit) series.push({ name: `fit c·δ^p, p = ${f3(fit.p)}`, points: deltas.map((d) => ({ x: d, y: fit.c * d ** fit.p, lo: fit.c * d ** fit.p, hi: fit.c * d ** fit.p })), errorBars: false });
    // √δ drawn through the geometric middle of the measured rates, for the eye.
    const mid = Math.sqrt(deltas[0]! * deltas.at(-1)!);
    const vMid = fit ? fit.c * mid ** fit.p : mean(measured.map((m) => m.y));
    series.push({ name: '√δ (the claim)', points: deltas.map((d) => ({ x: d, y: vMid * Math.sqrt(d / mid), lo: vMid * Math.sqrt(d / mid), hi: vMid * Math.sqrt(d / mid) })), errorBars: false });
    return {
      ...head(this, scale, seeds),
      setup: `delta-sweep preset (relay, ${r.protocol.agents} agents × ${r.protocol.actions} actions, ${r.protocol.states} local states), δ ∈ {${deltas.join(', ')}}, lr = ${r.protocol.lrRef}·√(δ/${r.protocol.deltaRef}), one step per update, no backtracking, ${stagesWord(sc.stages)}, seeds ${seeds[0]}–${seeds.at(-1)}, ${CLAIM5_RESAMPLES[scale]} bootstrap resamples`,
      tests: [t],
      verdict: t.verdict,
      summary: fit
        ? `The violation rate goes from ${f3(measured[0]!.y)} at δ = ${deltas[0]} to ${f3(measured.at(-1)!.y)} at δ = ${deltas.at(-1)}: p = ${ci(est)}, against ½ for √δ (mean KL/δ within ×${r.klSpread.toFixed(2)} across δ, so the step did scale with the radius).`
        : 'Fewer than two radii had a violation rate > 0, so no exponent could be fitted.',
      commands: [claimsCommand(5, scale), `npm run sat -- --preset delta-sweep --sweep delta=${deltas.join(',')} --seeds ${sc.seeds} --stages ${sc.stages}${setFlags(sc.settings)}`],
      plot: {
        title: 'Share of visited states past the radius, by δ', xLabel: 'δ (KL radius)', yLabel: 'violation rate', xLog: true,
        series,
        refs: [],
      },
      perSeed: Object.fromEntries(r.points.map((p) => [`violRate@${p.delta}`, p.violRateBySeed])),
    };
  },
};

export const CLAIMS: readonly ClaimDef[] = [claim1, claim2, claim3, claim4, claim5];

export function findClaim(id: number): ClaimDef {
  const c = CLAIMS.find((x) => x.id === id);
  if (!c) throw new RangeError(`No claim ${id}: the claims are numbered ${CLAIM_IDS.join(', ')} (docs/method.md §10b).`);
  return c;
}

/** Runs one claim at a scale; null when cancelled. */
export async function runClaim(id: number, scale: ClaimScale, ctx: ClaimContext = {}): Promise<ClaimResult | null> {
  if (!CLAIM_SCALES.includes(scale)) throw new RangeError(`Unknown claim scale "${scale}": ${CLAIM_SCALES.join(' or ')}.`);
  return findClaim(id).run(scale, ctx);
}
