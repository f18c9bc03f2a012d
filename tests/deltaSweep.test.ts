/**
 * The δ-sweep protocol (src/studies/deltaSweep.ts, docs/method.md §9.2): only δ changes between runs
 * (the configs differ in delta and lr alone; the first update of a run starts from the same tables
 * and batch, and its KL scales with δ), the step scaled to the radius keeps mean KL/δ in a narrow
 * band, the bootstrap interval of the exponent contains its point estimate and is deterministic,
 * and a negative control — lr fixed, the old protocol — gives an exponent far outside it.
 *
 * Also the page's view of a sweep (series.ts `deltaSweepFit`, `klScaleCheck`; ViolationChart rendered
 * to static markup). Seeds 1–8 of the delta-sweep preset, 3 stages, 4 radii; bootstrap seed fixed.
 *
 * Not here: the CLI's table (tests/cli.test.ts) or the charts' other maths (tests/charts.test.ts).
 */
import { createElement as h } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ViolationChart } from '../src/app/charts/ViolationChart';
import { deltaSweepFit, klScaleCheck, violationPointsFromDeltaSweep } from '../src/app/charts/series';
import { CONFIG_KEYS } from '../src/sat/config';
import { bootstrapExponentCI, deltaSweep, SWEEP_PINNED, sweepConfig, sweepLr, type DeltaSweepResult } from '../src/studies/deltaSweep';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { presetConfig } from '../src/sat/presets';

const base = presetConfig('delta-sweep');
const DELTAS = [0.001, 0.005, 0.02, 0.1];
const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8];
const STAGES = 3;

describe('δ sweep: only δ changes', () => {
  it('runs the preset on a game with many states, with the protocol pinned', () => {
    const exp = createTabularExperiment(sweepConfig(base, 0.01, 1));
    const states = exp.game.nObs.reduce((a, b) => a + b, 0);
    expect(states).toBeGreaterThanOrEqual(200);
    for (const [k, v] of Object.entries(SWEEP_PINNED)) expect(exp.cfg[k as keyof typeof exp.cfg]).toEqual(v);
    expect(exp.cfg.betaAdapt).toBe(false);
  });

  it('the configs of one seed differ only in delta and lr, and lr ∝ √δ', () => {
    const a = sweepConfig(base, 0.001, 3);
    const b = sweepConfig(base, 0.1, 3);
    const differ = CONFIG_KEYS.filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
    expect(differ.sort()).toEqual(['delta', 'lr']);
    expect(b.lr / a.lr).toBeCloseTo(Math.sqrt(0.1 / 0.001), 12);
    expect(sweepLr(base, base.delta)).toBe(base.lr);
    // The fixed-lr control differs in delta alone.
    const c = sweepConfig(base, 0.001, 3, 'fixed');
    const d = sweepConfig(base, 0.1, 3, 'fixed');
    expect(CONFIG_KEYS.filter((k) => JSON.stringify(c[k]) !== JSON.stringify(d[k]))).toEqual(['delta']);
  });

  it('same seed: the same starting tables and first batch at every δ; the first step’s KL scales with δ', async () => {
    const runs = await Promise.all([0.001, 0.004].map(async (delta) => {
      const exp = createTabularExperiment(sweepConfig(base, delta, 5));
      const start = exp.team.map((t) => Array.from(t.distributionTable()));
      const [rec] = await runStages(exp, 1);
      return { start, first: rec!.steps[0]! };
    }));
    expect(runs[1]!.start).toEqual(runs[0]!.start);
    expect(Array.from(runs[1]!.first.advRaw)).toEqual(Array.from(runs[0]!.first.advRaw));
    // Adam's first step is lr·sign(g) per logit, and KL ≈ ½Var(Δz) ∝ lr² ∝ δ: ×4 in δ is ×4 in KL, state by state.
    const k0 = runs[0]!.first.kl;
    const k1 = runs[1]!.first.kl;
    expect(k1.length).toBe(k0.length);
    // Second order only: the cubic term of the KL makes the ratio drift by a few per cent at these steps.
    const dev: number[] = [];
    for (let i = 0; i < k0.length; i++) if (k0[i]! > 1e-12) dev.push(Math.abs(k1[i]! / k0[i]! / 4 - 1));
    console.log(`first step, δ ×4: KL ×4 within ${(100 * Math.max(...dev)).toFixed(1)} % at ${dev.length} visits`);
    expect(dev.length).toBeGreaterThan(10);
    expect(Math.max(...dev)).toBeLessThan(0.08);
  });
});

describe('δ sweep: scaling check, exponent and its interval', () => {
  let scaled: DeltaSweepResult;
  let fixed: DeltaSweepResult;

  it('keeps mean KL/δ within ±15 % of its mean across two decades of δ (the scaling worked)', async () => {
    scaled = (await deltaSweep({ base, deltas: DELTAS, seeds: SEEDS, stages: STAGES }))!;
    const ks = scaled.points.map((p) => p.klOverDelta);
    const m = ks.reduce((a, b) => a + b, 0) / ks.length;
    console.log(`lr ∝ √δ: mean KL/δ per δ ${ks.map((k) => k.toFixed(3)).join(' ')}; violation rate ${scaled.points.map((p) => p.violRate.toFixed(4)).join(' ')}`);
    for (const k of ks) expect(Math.abs(k / m - 1)).toBeLessThan(0.15);
    expect(scaled.klSpread).toBeLessThan(1.3);
    expect(scaled.complete).toBe(true);
    for (const p of scaled.points) {
      expect(p.visits).toBe(p.visitsBySeed.reduce((a, b) => a + b, 0));
      expect(p.violRateBySeed).toHaveLength(SEEDS.length);
    }
  }, 20_000);

  it('the bootstrap CI contains the point estimate and is deterministic for a fixed seed', () => {
    const { fit, ci } = scaled;
    expect(fit).not.toBeNull();
    expect(ci).not.toBeNull();
    console.log(`lr ∝ √δ: p = ${fit!.p.toFixed(3)}, 95% CI [${ci!.lo.toFixed(3)}, ${ci!.hi.toFixed(3)}] over ${SEEDS.length} seeds`);
    expect(ci!.lo).toBeLessThanOrEqual(fit!.p);
    expect(ci!.hi).toBeGreaterThanOrEqual(fit!.p);
    expect(ci!.resamples).toBeGreaterThanOrEqual(1000);
    expect(bootstrapExponentCI(scaled.points)).toEqual(ci);
    expect(bootstrapExponentCI(scaled.points, ci!.resamples, 12345)).not.toEqual(ci);
  });

  it('negative control: with lr fixed (the old protocol) the exponent differs by more than the CI width', async () => {
    fixed = (await deltaSweep({ base, deltas: DELTAS, seeds: SEEDS, stages: STAGES, lrScaling: 'fixed' }))!;
    expect(fixed.fit).not.toBeNull();
    const width = Math.max(scaled.ci!.hi - scaled.ci!.lo, fixed.ci ? fixed.ci.hi - fixed.ci.lo : 0);
    const gap = Math.abs(fixed.fit!.p - scaled.fit!.p);
    console.log(
      `lr fixed: p = ${fixed.fit!.p.toFixed(3)}${fixed.ci ? ` [${fixed.ci.lo.toFixed(3)}, ${fixed.ci.hi.toFixed(3)}]` : ''}, mean KL/δ ${fixed.points.map((p) => p.klOverDelta.toFixed(3)).join(' ')}; ` +
        `gap to lr ∝ √δ ${gap.toFixed(3)} vs CI width ${width.toFixed(3)}`,
    );
    expect(gap).toBeGreaterThan(width);
    // Without the scaling, KL/δ runs with 1/δ: the scaling check fails, as it should.
    expect(fixed.klSpread).toBeGreaterThan(50);
  }, 20_000);

  it('the violation chart draws the sweep: its points, the fit with its CI band, the √δ line and the KL/δ check', () => {
    const view = deltaSweepFit(scaled)!;
    const slope = (l: readonly (readonly [number, number])[]) => Math.log(l[1]![1] / l[0]![1]) / Math.log(l[1]![0] / l[0]![0]);
    expect(slope(view.line)).toBeCloseTo(scaled.fit!.p, 10);
    expect(slope(view.band!.lo)).toBeCloseTo(scaled.ci!.lo, 10);
    expect(slope(view.band!.hi)).toBeCloseTo(scaled.ci!.hi, 10);
    expect(klScaleCheck(scaled).spread).toBeCloseTo(scaled.klSpread, 12);
    const pts = violationPointsFromDeltaSweep(scaled);
    expect(pts.map((p) => p.delta)).toEqual(DELTAS);
    const html = renderToString(h(ViolationChart, { points: [], sweep: scaled }));
    expect(Number(/data-testid="chart-violation"[^>]*data-points="(\d+)"/.exec(html)![1])).toBe(pts.filter((p) => p.rate > 0).length);
    expect(html).toMatch(/fit v ≈/);
    expect(html).toMatch(/p 95 % CI \[/);
    expect(html).toMatch(/check: mean KL\/δ/);
  });

  it('a cancelled sweep keeps only the seeds it finished for every δ', async () => {
    let calls = 0;
    const r = await deltaSweep({ base, deltas: [0.001, 0.1], seeds: [1, 2, 3], stages: 1, cancelled: () => calls >= 3, onProgress: () => void calls++ });
    expect(r!.complete).toBe(false);
    expect(r!.protocol.seeds).toEqual([1]);
    expect(r!.points[0]!.visitsBySeed).toHaveLength(1);
  });
});
