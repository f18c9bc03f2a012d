/**
 * The playground's charts and timeline: the maths of src/app/charts/series.ts on records from a real
 * small run (the climbing preset, seed 7, a few stages, orders fixed / reverse / random; seed 11 for
 * 8 stages to count certified ones) and on
 * fresh random inputs (seeded Rng 20261129), then every component rendered to static markup with
 * react-dom/server on that real data — its data-testid and a positive data-points must be there, and
 * its empty state must say what to do. (recharts draws little on the server: these tests check our
 * wrapper and numbers, the browser tests check the SVG.)
 *
 * Not here: the browser (tests/e2e) or the stage loop's own correctness (tests/sat.test.ts).
 */
import { createElement as h } from 'react';
import { renderToString } from 'react-dom/server';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { Rng } from '../src/core/rng';
import { heldTolerance } from '../src/sat/heldCheck';
import { certificate, type AgentCertInput, type BoundTerms } from '../src/sat/certificate';
import { createTabularExperiment, runStages, stepThrough, type TabularExperiment } from '../src/sat/experiment';
import type { LmEpisodeRecord } from '../src/sat/env/lm';
import { presetConfig } from '../src/sat/presets';
import { stageRow } from '../src/app/stageRow';
import { signed3, tickLabels } from '../src/app/format';
import { stageTitle } from '../src/app/components/Timeline';
import { frameAt, gameFrame, payoffGrids, probsOfLogits } from '../src/app/gameFrame';
import { CLIMBING_PAYOFFS, pairwiseMeanPayoff } from '../src/tasks/matrix';
import { radiusWords, swapAnnouncement, vacuousFloor } from '../src/app/components/SwapCard';
import { axisWidth, tickText } from '../src/app/components/RunLogView';
import { ADV_HIST_BINS, type AgentStepRecord, type StageRecord } from '../src/sat/stage';
import {
  ADV_BINS, AdvantageChart, BetaChart, JChart, KlChart, OrderChart, Timeline, TranscriptTable, ViolationChart, WaterfallChart,
  advantageRows, aggregateViolation, betaRows, decadeTicks, executionOrder, niceScale, findStep, isVacuous, jSeries, klRows, lastStepRef, moveSelection,
  orderRows, partialStage, producerOf, toStepRef, violationPointsFromRuns, sqrtReference, symmetricHistogram, timelineStages, transcriptRows, violationFit,
  violationPointsFromStages, violationPointsFromSweep, waterfallRows,
} from '../src/app/charts';
import { dropNoise, J_MIN_SPAN, termsOf } from '../src/app/charts/series';
import { term } from '../src/app/charts/fmt';
import { stageTicks } from '../src/app/charts/JChart';
import {
  type PartialStage, type TranscriptBatch, type TranscriptEpisode, type Waterfall,
} from '../src/app/charts';

const SEED = 7;
const STAGES = 4;

function close(a: number, b: number, tol = 1e-9): boolean {
  return Math.abs(a - b) <= tol * Math.max(1, Math.abs(a), Math.abs(b));
}

let exp: TabularExperiment;
let records: StageRecord[];
/** A stage stopped after its first agent step. */
let partial: PartialStage;
let reverse: StageRecord[];
let random: StageRecord[];

beforeAll(async () => {
  exp = createTabularExperiment(presetConfig('climbing', { seed: SEED }));
  records = await runStages(exp, STAGES);
  const gen = stepThrough(exp);
  const first = await gen.next();
  if (first.done) throw new Error('a stage of 3 agents ended before its first step');
  partial = { stage: STAGES + 1, steps: [first.value] };
  const r = createTabularExperiment(presetConfig('climbing', { seed: SEED, order: 'reverse' }));
  reverse = await runStages(r, STAGES);
  const q = createTabularExperiment(presetConfig('climbing', { seed: SEED, order: 'random' }));
  random = await runStages(q, STAGES);
});

/** The held state a chart must show for a record: the run's own cert/held decision. */
function recorded(r: StageRecord): string {
  const h = r.metrics['cert/held'];
  return h === 1 ? 'held' : h === 0 ? 'not held' : 'unchecked';
}

describe('held for stages whose J is estimated (language teams)', () => {
  it('follows the common-random-numbers verdict, never the held-out ΔJ: unchecked and undecided stay open', () => {
    const base = records[0]!;
    const estimated = (held: StageRecord['held'], dJ: number): StageRecord => ({
      ...base, jAfter: base.jBefore + dJ, evaluation: { ...base.evaluation, exact: false, ci: 0.02 }, held,
      metrics: { ...base.metrics, 'cert/held': held?.state === 'held' ? 1 : held?.state === 'not held' ? 0 : Number.NaN },
    });
    const lower = termsOf(base, 'chosen').lower;
    // A held-out ΔJ far above the bound would have said "held"; unchecked, it says nothing.
    const unchecked = estimated({ state: 'unchecked', estimate: Number.NaN, se: Number.NaN, pairs: 0 }, lower + 1);
    const undecided = estimated({ state: 'undecided', estimate: lower, se: 0.01, pairs: 2048 }, lower + 1);
    const notHeld = estimated({ state: 'not held', estimate: lower - 1, se: 0.01, pairs: 2048 }, lower + 1);
    const s = jSeries([unchecked, undecided, notHeld]);
    expect(s.rows.slice(1).map((r) => r.held)).toEqual(['unchecked', 'undecided', 'not held']);
    expect([s.heldCount, s.checkedCount, s.stages]).toEqual([0, 1, 3]);
    expect(s.rows[1]!.jHeld).toBeNull();
    expect(s.rows[1]!.jNotHeld).toBeNull();
    expect(waterfallRows(unchecked).held).toBe('unchecked');
    expect(stageRow(undecided, 3).held).toBe('undecided');
    expect(timelineStages([notHeld], 3)[0]!.held).toBe('not held');
    // The waterfall says what the bound rests on and how the stage was checked.
    // One batch of 768 (no rounds: the base record's own sequential record left out).
    const teamCert = { ...base.certificate, sequential: undefined, scope: 'team' as const, team: { ess: 701.4, truncationCost: 0.0039, maxRatio: 3.2, mismatches: 0, episodes: 768 } };
    const html = renderToString(h(WaterfallChart, { record: { ...notHeld, certificate: teamCert } }));
    expect(html).toContain('held-out ΔJ (an estimate)');
    expect(html).toMatch(/team-level bound: 768 episodes, ESS 701, truncation cost/);
    // Drawn in rounds: N is every round's episodes; the ESS is the first round's.
    const looks = [1, 2, 3].map((k) => ({ units: 64 * k, gain: 0.01, lower: k === 3 ? 0.001 : -0.01 }));
    const seqCert = { ...teamCert, team: { ...teamCert.team, episodes: 192 }, sequential: { roundUnits: 64, maxRounds: 16, horizon: 256, stop: 'certified' as const, looks } };
    expect(renderToString(h(WaterfallChart, { record: { ...notHeld, certificate: seqCert } }))).toMatch(/team-level bound: 576 episodes in 3 rounds, ESS 701 of the first round&#x27;s 192, truncation cost/);
    expect(html).toMatch(/ΔJ ≈ .* ± .* \(± one standard error of the paired estimate, about a 68 % interval; 2,048 pairs\)/);
    expect(renderToString(h(WaterfallChart, { record: { ...unchecked, certificate: { ...teamCert, refused: 'topK > 0 with a projected seat' } } }))).toContain('No certificate: topK &gt; 0 with a projected seat');
    // A language stage (finite c) lists each agent's share of the team summand, labelled a diagnostic;
    // a stage without a truncation (tabular, c = ∞) does not.
    expect(html).not.toContain('data-testid="agent-shares"');
    expect(html).not.toContain('wf-swatch');
    const langRec = { ...notHeld, certificate: teamCert, metrics: { ...notHeld.metrics, 'cert/clip': 10 } };
    const text = (x: string) => x.replace(/<!-- -->/g, '').replace(/<[^>]*>/g, '');
    const lang = renderToString(h(WaterfallChart, { record: langRec }));
    expect(notHeld.steps.length).toBeGreaterThan(1);
    const listed = notHeld.steps.map((s) => `agent ${s.agent} ${term(s.cert.gain)}`).join(', ');
    // The episodic form draws the shares as bars: the line is their key; the γ control lists them only.
    expect(text(lang)).toContain(`per-agent bars: diagnostics, not the certificate — ${listed}`);
    expect(lang.match(/class="wf-swatch"/g)).toHaveLength(notHeld.steps.length);
    const gamma = renderToString(h(WaterfallChart, { record: langRec, form: 'gamma' }));
    expect(text(gamma)).toContain(`per-agent shares (diagnostic): ${listed}`);
    expect(gamma).not.toContain('wf-swatch');
    expect(stageTitle(timelineStages([notHeld], 3)[0]!, false)).toBe(`stage ${notHeld.stage}: certificate not held (ΔJ estimated ${signed3(lower - 1)} ± 0.010, ± one standard error of the paired estimate, about a 68 % interval; 2,048 pairs)`);
    expect(stageTitle(timelineStages([unchecked], 3)[0]!, false)).toBe(`stage ${unchecked.stage}: certificate not checked`);
    // The γ control form was not the one checked: it stays unchecked whatever the verdict.
    expect(waterfallRows(notHeld, 'gamma').held).toBe('unchecked');
  });
});

describe('team J per stage', () => {
  it('a J that never changes beyond rounding is flat, on an axis at least 0.1 tall, and says so; a real change is not', () => {
    const base = records[0]!;
    const still = (k: number, j: number): StageRecord => ({ ...base, stage: k, jBefore: j, jAfter: j + 1e-6 * k });
    const flat = jSeries([still(1, 0.33), still(2, 0.33)]);
    expect(flat.flat).toBe(true);
    expect(flat.domain[1] - flat.domain[0]).toBeGreaterThanOrEqual(0.1);
    const moved = jSeries(records);
    expect(moved.flat).toBe(false);
  });
  it('has the initial team, then one row per stage, with the certified floor and held exactly as the run recorded', () => {
    const s = jSeries(records);
    expect(s.rows).toHaveLength(STAGES + 1);
    expect(s.rows[0]!.j).toBe(exp.j0);
    expect(s.rows[0]!.held).toBeNull();
    records.forEach((r, k) => {
      const row = s.rows[k + 1]!;
      expect(row.stage).toBe(r.stage);
      expect(row.j).toBe(r.jAfter);
      expect(row.band[0]).toBeLessThanOrEqual(row.j);
      expect(row.band[1]).toBeGreaterThanOrEqual(row.j);
      expect(close(row.floor!, r.jBefore + (r.metrics['cert/lower'] as number))).toBe(true);
      expect(row.held).toBe(recorded(r));
      expect((row.jHeld ?? row.jNotHeld)!).toBe(row.j);
    });
    expect(s.heldCount).toBe(records.filter((r) => r.metrics['cert/held'] === 1).length);
    for (const row of s.rows) {
      expect(row.band[0]).toBeGreaterThanOrEqual(s.domain[0]);
      expect(row.band[1]).toBeLessThanOrEqual(s.domain[1]);
      if (row.floorShown !== null) expect(row.floorShown).toBeGreaterThanOrEqual(s.domain[0]);
    }
  });

  it("clips the paper's vacuous γ-form floors to the bottom edge and counts them, and keeps the episodic ones", () => {
    const g = jSeries(records, { form: 'gamma', span: exp.aMax });
    expect(g.clipped).toBe(STAGES);
    expect(g.vacuous).toBe(STAGES);
    for (const row of g.rows.slice(1)) {
      expect(row.floorClipped).toBe(true);
      expect(row.floorShown).toBe(g.domain[0]);
      expect(row.floor!).toBeLessThan(g.domain[0]);
    }
    // The y-range stays about J, not about −10⁴.
    expect(g.domain[1] - g.domain[0]).toBeLessThan(10 * exp.aMax);
    const e = jSeries(records, { form: 'episodic', span: exp.aMax });
    expect(e.vacuous).toBe(0);
  });

  it('rounds the y-domain outward to nice ticks (1–2–5 steps) on random ranges', () => {
    const rng = new Rng(20261129, [4]);
    for (let trial = 0; trial < 200; trial++) {
      const lo = (rng.uniform() - 0.5) * 10 ** (rng.int(8) - 3);
      const hi = lo + rng.uniform() * 10 ** (rng.int(8) - 3);
      const { domain, ticks } = niceScale(lo, hi);
      expect(domain[0]).toBeLessThanOrEqual(lo);
      expect(domain[1]).toBeGreaterThanOrEqual(hi);
      expect(ticks.length).toBeGreaterThanOrEqual(2);
      expect(ticks.length).toBeLessThanOrEqual(12);
      const step = ticks[1]! - ticks[0]!;
      const lead = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
      expect([1, 2, 5, 10].some((m) => close(lead, m, 1e-6))).toBe(true);
    }
    expect(decadeTicks(3e-4, 0.2)).toEqual({ domain: [1e-4, 1], ticks: [1e-4, 1e-3, 1e-2, 1e-1, 1] });
  });

  it('draws the initial team’s band from its own interval when given', () => {
    const s = jSeries(records, { j0ci: 0.25 });
    expect(s.rows[0]!.band).toEqual([exp.j0 - 0.25, exp.j0 + 0.25]);
  });

  it('is empty without records', () => {
    const s = jSeries([]);
    expect(s.rows).toHaveLength(0);
    expect(s.stages).toBe(0);
    expect(s.certifiedCount).toBe(0);
  });

  it('counts certified stages exactly as the run recorded cert/certified, on a climbing run of 8 stages', async () => {
    const run = await runStages(createTabularExperiment(presetConfig('climbing', { seed: 11 })), 8);
    const want = run.filter((r) => r.metrics['cert/certified'] === 1).length;
    expect(want).toBeGreaterThan(0); // the climbing game climbs: something to count
    const s = jSeries(run, { span: exp.aMax });
    expect(s.certifiedCount).toBe(want);
    run.forEach((r, k) => {
      expect(s.rows[k + 1]!.certified).toBe(r.metrics['cert/certified'] === 1);
      expect(s.rows[k + 1]!.certified).toBe((r.metrics['cert/lower'] as number) > 0);
      expect(stageRow(r, 3).certified).toBe(r.metrics['cert/certified'] === 1);
    });
    expect(s.rows[0]!.certified).toBeNull();
    // The paper's γ form certifies nothing: its bound is vacuous.
    expect(jSeries(run, { form: 'gamma', span: exp.aMax }).certifiedCount).toBe(0);
    const html = renderToString(h(JChart, { records: run, span: exp.aMax }));
    expect(html).toMatch(new RegExp(`data-testid="certified-count" data-value="${want}"`));
    expect(html).toContain(`certified in <!-- -->${want} of 8 stages`);
    // The plot itself (plain SVG, drawn on the server too): one ✓ per certified stage, one mark per stage and stage 0, one tick label per J tick.
    expect(html.match(/data-certified="true"/g)?.length ?? 0).toBe(want);
    // …plus the verdict legend's four marks (held, not held, undecided, not checked).
    expect(html.match(/<circle /g)?.length ?? 0).toBe(s.rows.length + 4);
    expect(html.match(/data-verdict-key="/g)?.length ?? 0).toBe(5);
    expect(html.match(/class="j-tick-value"/g)?.length ?? 0).toBe(s.ticks.length + stageTicks(0, 8).length);
    expect(html).not.toContain('j-overlay-line');
    const withOverlay = renderToString(h(JChart, { records: run, span: exp.aMax, overlay: { label: 'simultaneous', stages: run.slice(0, 3) } }));
    expect(withOverlay.match(/class="j-overlay-line"/g)?.length).toBe(1);
  });

  it('the J chart\'s stage axis: whole stages, at most about six ticks, spanning the run', () => {
    expect(stageTicks(0, 1)).toEqual([0, 1]);
    expect(stageTicks(0, 8)).toEqual([0, 2, 4, 6, 8]);
    expect(stageTicks(0, 30)).toEqual([0, 5, 10, 15, 20, 25, 30]);
    expect(stageTicks(4, 7)).toEqual([4, 5, 6, 7]);
    for (const t of stageTicks(0, 137)) expect(Number.isInteger(t)).toBe(true);
    expect(stageTicks(0, 137).length).toBeLessThanOrEqual(8);
  });
});

describe('certificate waterfall', () => {
  /** The running sum fresh gain → −shift → −bias → −finite ends exactly at the lower bound; the in-sample bar is outside it. */
  function expectRunningSum(wf: Waterfall, t: BoundTerms, tol = 1e-9): void {
    const sum = wf.rows.filter((x) => x.inSum);
    expect(sum.map((x) => x.kind)).toEqual(['gain', 'shift', 'bias', 'finite']);
    expect(sum[0]!.from).toBe(0);
    for (let k = 1; k < sum.length; k++) expect(sum[k]!.from).toBe(sum[k - 1]!.to);
    expect(sum[sum.length - 1]!.to).toBe(t.lower);
    expect(close(sum.reduce((a, x) => a + x.value, 0), t.lower, tol)).toBe(true);
    const ins = wf.rows.find((x) => x.kind === 'insample')!;
    expect(ins.inSum).toBe(false);
    expect(ins.total).toBe(true);
    expect(ins.from).toBe(0);
    expect(ins.to).toBe(t.gainInSample);
    expect(wf.rows.find((x) => x.kind === 'lower')!.to).toBe(t.lower);
    for (const x of wf.rows) expect(x.range[0]).toBeLessThanOrEqual(x.range[1]);
    expect(wf.certified).toBe(t.lower > 0);
    expect(wf.certified).toBe(t.certified);
  }

  it('runs fresh gain → −shift → −bias → −finite to exactly the lower bound, beside the in-sample gain and the realised ΔJ (real run, both forms)', () => {
    for (const r of records) {
      for (const form of ['episodic', 'gamma'] as const) {
        const wf = waterfallRows(r, form, exp.aMax);
        const t = form === 'gamma' ? r.certificate.gamma : r.certificate.episodic;
        expect(wf.rows.map((x) => x.kind)).toEqual(['insample', 'gain', 'shift', 'bias', 'finite', 'lower', 'realised']);
        expect(wf.rows[0]!.label).toBe('in-sample gain (optimistic)');
        expectRunningSum(wf, t);
        expect(wf.rows[6]!.to).toBe(r.jAfter - r.jBefore);
        expect(wf.held).toBe(t.lower <= r.jAfter - r.jBefore + heldTolerance(r.jBefore, r.jAfter) ? 'held' : 'not held');
        expect(wf.vacuous).toBe(form === 'gamma');
        expect(close(wf.optimism, t.gainInSample - t.gain)).toBe(true);
        if (form === 'episodic') {
          // Our form: no shift, no bias, by construction; finite is the confidence width gain − lower.
          expect(t.shift).toBe(0);
          expect(t.bias).toBe(0);
          expect(close(t.finite, t.gain - t.lower)).toBe(true);
        }
      }
      const chosen = waterfallRows(r);
      expect(chosen.held).toBe(recorded(r));
      expect(chosen.certified).toBe(r.metrics['cert/certified'] === 1);
      expect(close(chosen.rows[0]!.value, r.metrics['cert/gain_insample'] as number)).toBe(true);
      expect(close(chosen.rows[1]!.value, r.metrics['cert/gain'] as number)).toBe(true);
    }
  });

  it('sums to the lower bound on fresh random certificate inputs, whatever the in-sample gain, and certifies exactly when the bound is above 0', () => {
    const rng = new Rng(20261129, [1]);
    let certified = 0;
    for (let trial = 0; trial < 200; trial++) {
      const n = 1 + rng.int(4);
      const steps: AgentCertInput[] = Array.from({ length: n }, (_, agent) => {
        const moved = rng.uniform() > 0.1;
        const gain = moved ? (rng.uniform() - 0.3) * 2 : 0;
        const lower = moved ? gain - rng.uniform() * 0.5 : 0;
        const A = 1 + rng.uniform() * 4;
        return {
          agent, gain, lower, gainInSample: moved ? gain + (rng.uniform() - 0.2) * 2 : 0, range: moved ? [-A, A] : [0, 0],
          units: 1 + rng.int(5000), episodes: 1 + rng.int(20000), clip: rng.uniform() > 0.5 ? Infinity : 2, klMax: moved ? rng.uniform() * 0.1 : 0,
          turns: 1 + rng.int(3), bias: rng.uniform() * 0.2, moved,
        };
      });
      const opts = { n, aMax: 1 + rng.uniform() * 9, gamma: 0.5 + rng.uniform() * 0.49, deltaConf: 0.05, form: trial % 2 ? 'gamma' : 'episodic' } as const;
      const sum = steps.reduce((a, x) => a + x.gain, 0);
      const joint = { gain: sum, lower: sum - rng.uniform() * 0.5 };
      const cert = certificate(steps, joint, opts);
      const dJ = (rng.uniform() - 0.5) * 2;
      const rec = { ...records[0]!, certificate: cert, jBefore: 0, jAfter: dJ } as StageRecord;
      const wf = waterfallRows(rec);
      expectRunningSum(wf, cert.chosen, 1e-12);
      expect(wf.held).toBe(cert.chosen.lower <= dJ + heldTolerance(0, dJ) ? 'held' : 'not held');
      if (wf.certified) certified++;
      // The in-sample gain moves only its own bar: every bar of the sum, and the verdicts, stay put.
      const other = certificate(steps.map((s) => ({ ...s, gainInSample: s.gainInSample + 10 * (rng.uniform() - 0.5) })), joint, opts);
      const wf2 = waterfallRows({ ...rec, certificate: other } as StageRecord);
      expect(wf2.rows.filter((x) => x.kind !== 'insample')).toEqual(wf.rows.filter((x) => x.kind !== 'insample'));
      expect([wf2.held, wf2.certified]).toEqual([wf.held, wf.certified]);
    }
    expect(certified).toBeGreaterThan(0);
    expect(certified).toBeLessThan(200);
  });

  it('a language stage (finite c) adds each agent\'s share as a diagnostic bar after the totals; the certificate\'s bars stay put', () => {
    // A tabular run's records are team-level with c = ∞; cert/clip = 10 makes them a language stage's.
    for (const r of records) {
      const tabular = waterfallRows(r, 'chosen', exp.aMax);
      expect(tabular.agentShares).toBe(false);
      expect(tabular.rows.some((x) => x.kind === 'agent')).toBe(false);
      const lang = { ...r, metrics: { ...r.metrics, 'cert/clip': 10 } } as StageRecord;
      const wf = waterfallRows(lang, 'chosen', exp.aMax);
      expect(wf.agentShares).toBe(true);
      expect(wf.rows.map((x) => x.kind)).toEqual(['insample', 'gain', 'shift', 'bias', 'finite', 'lower', 'realised', ...r.steps.map(() => 'agent')]);
      // Outside the sum: every bar the certificate is made of, and its verdicts, are the tabular ones.
      expect(wf.rows.slice(0, 7)).toEqual(tabular.rows);
      expect([wf.terms, wf.held, wf.certified]).toEqual([tabular.terms, tabular.held, tabular.certified]);
      const shares = wf.rows.slice(7);
      expect(shares.map((x) => x.agent!.index)).toEqual(r.steps.map((s) => s.agent));
      expect(shares.map((x) => x.agent!.position)).toEqual(r.steps.map((_, k) => k));
      expect(shares.map((x) => x.agent!.lower)).toEqual(r.steps.map((s) => s.cert.lower));
      expect(new Set(wf.rows.map((x) => x.label)).size).toBe(wf.rows.length);
      for (const [k, x] of shares.entries()) {
        expect(x.label).toBe(`agent ${r.steps[k]!.agent} share`);
        expect([x.inSum, x.total, x.from]).toEqual([false, true, 0]);
        expect(close(x.value, r.steps[k]!.cert.gain)).toBe(true);
        expect(x.to).toBe(x.value);
        expect(x.range).toEqual([Math.min(0, x.value), Math.max(0, x.value)]);
      }
      // The shares telescope: they add up to the team's fresh gain (docs/certificate.md §5.1).
      expect(close(shares.reduce((a, x) => a + x.value, 0), wf.terms.gain)).toBe(true);
      // The γ control is not the team-level bound: no shares beside it.
      expect(waterfallRows(lang, 'gamma', exp.aMax).rows.some((x) => x.kind === 'agent')).toBe(false);
    }
    expect(records.some((r) => r.steps.some((s) => s.cert.gain !== 0))).toBe(true);
  });

  it('a share within a few ulps of J\'s scale is drawn as 0; a small real one is kept', () => {
    const base = records[0]!;
    const scale = Math.max(Math.abs(base.jBefore), Math.abs(base.jAfter), 41);
    const gains = [3 * Number.EPSILON * scale, -3 * Number.EPSILON * scale, 1e-6, -2e-9 * scale];
    const steps = gains.map((gain, k) => ({ ...base.steps[k % base.steps.length]!, agent: k, cert: { ...base.steps[k % base.steps.length]!.cert, agent: k, gain } }));
    const wf = waterfallRows({ ...base, steps, metrics: { ...base.metrics, 'cert/clip': 10 } } as StageRecord, 'episodic', 41);
    const shares = wf.rows.filter((x) => x.kind === 'agent');
    expect(shares.map((x) => x.value)).toEqual([0, 0, 1e-6, -2e-9 * scale]);
    expect(shares.map((x) => x.range)).toEqual([[0, 0], [0, 0], [0, 1e-6], [-2e-9 * scale, 0]]);
  });

  it('calls a bound vacuous only below the largest possible drop', () => {
    expect(isVacuous(-47000, 41)).toBe(true);
    expect(isVacuous(-40, 41)).toBe(false);
    expect(isVacuous(-2000)).toBe(true);
    expect(isVacuous(-0.5)).toBe(false);
  });
});

describe('advantage and KL histograms', () => {
  it('count every episode, and the normalised one reproduces the run’s own agent/<j>/adv_hist', () => {
    for (const r of records) {
      for (const s of r.steps) {
        for (const mode of ['norm', 'raw'] as const) {
          const rows = advantageRows(s, mode, { aClip: exp.cfg.aClip });
          expect(rows.reduce((a, b) => a + b.count, 0)).toBe(s.advNorm.length);
        }
        const norm = advantageRows(s, 'norm', { aClip: exp.cfg.aClip, bins: ADV_HIST_BINS });
        expect(norm.map((b) => b.count)).toEqual(s.metrics[`agent/${s.agent}/adv_hist`]);
      }
    }
  });

  it('puts every value of random data in the bin that holds it', () => {
    const rng = new Rng(20261129, [2]);
    for (let trial = 0; trial < 20; trial++) {
      const n = 1 + rng.int(300);
      const xs = Float64Array.from({ length: n }, () => (rng.uniform() - 0.5) * 10 * rng.uniform());
      const bins = 1 + rng.int(30);
      const rows = symmetricHistogram(xs, bins);
      expect(rows.reduce((a, b) => a + b.count, 0)).toBe(n);
      for (const x of xs) expect(rows.some((b, i) => b.lo <= x && (x < b.hi || (i === bins - 1 && x <= b.hi)))).toBe(true);
      expect(rows[0]!.lo).toBe(-rows[rows.length - 1]!.hi);
    }
    expect(symmetricHistogram(new Float64Array(8), 4).reduce((a, b) => a + b.count, 0)).toBe(8);
  });

  it('bins per-state KL on a log scale that spans δ, counting every visit, with violations right of δ', () => {
    for (const s of records.flatMap((r) => r.steps)) {
      const k = klRows(s);
      expect(k.n).toBe(s.kl.length);
      expect(k.rows.reduce((a, b) => a + b.count, 0)).toBe(s.kl.length);
      expect(k.logDelta).toBeGreaterThanOrEqual(k.rows[0]!.lo);
      expect(k.logDelta).toBeLessThanOrEqual(k.rows[k.rows.length - 1]!.hi);
      const atLeast = Array.from(s.kl).filter((x) => x >= s.delta).length;
      const over = Array.from(s.kl).filter((x) => x > s.delta).length;
      expect(k.rows.filter((b) => b.over).reduce((a, b) => a + b.count, 0)).toBeLessThanOrEqual(atLeast);
      expect(k.rows.filter((b) => b.hi > k.logDelta).reduce((a, b) => a + b.count, 0)).toBeGreaterThanOrEqual(over);
      if (s.check.q > 0) expect(close(10 ** k.logQ, s.check.q)).toBe(true);
    }
  });

  it('handles KL exactly zero and values far beyond δ', () => {
    const step = { ...records[0]!.steps[0]!, kl: Float64Array.from([0, 0, 1e-9, 3e-4, 0.02, 5]), delta: 0.01 } as AgentStepRecord;
    const k = klRows(step);
    expect(k.zeros).toBe(2);
    expect(k.rows.reduce((a, b) => a + b.count, 0)).toBe(6);
    expect(k.rows[0]!.count).toBeGreaterThanOrEqual(2);
    expect(k.rows.filter((b) => b.over).reduce((a, b) => a + b.count, 0)).toBe(2);
  });
});

describe('KL violation rate against δ', () => {
  it('takes one point per agent step of a run, at that step’s δ and violation rate', () => {
    const pts = violationPointsFromStages(records, 'run', partial);
    expect(pts).toHaveLength(STAGES * 3 + 1);
    pts.forEach((p) => expect(p.delta).toBe(exp.cfg.delta));
    const agg = aggregateViolation(pts);
    expect(agg).toHaveLength(1);
    const mean = pts.reduce((s, p) => s + p.rate, 0) / pts.length;
    expect(close(agg[0]!.rate, mean)).toBe(true);
    expect(violationFit(pts)).toBeNull(); // one δ: no exponent
  });

  it('recovers a known exponent from synthetic sweep points, and draws √δ with slope exactly ½', () => {
    const rng = new Rng(20261129, [3]);
    for (const p of [0.5, 0.8, 1.3]) {
      const deltas = [1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1];
      const rates = deltas.map((d) => 0.4 * d ** p * Math.exp(0.05 * (rng.uniform() - 0.5)));
      const pts = [...violationPointsFromSweep(deltas, rates, 'sweep'), { delta: 0.5, rate: 0, source: 'sweep' }];
      const fit = violationFit(pts)!;
      expect(fit.used).toBe(deltas.length);
      expect(Math.abs(fit.p - p)).toBeLessThan(0.03);
      expect(Math.abs(Math.log(fit.c / 0.4))).toBeLessThan(0.1);
      const ref = sqrtReference(pts)!;
      const slope = (Math.log(ref[1]![1]) - Math.log(ref[0]![1])) / (Math.log(ref[1]![0]) - Math.log(ref[0]![0]));
      expect(close(slope, 0.5, 1e-12)).toBe(true);
    }
    expect(() => violationPointsFromSweep([1, 2], [1])).toThrow(RangeError);
  });

  it('pools whole sweep runs into one source', () => {
    const pts = violationPointsFromRuns([{ stages: records }, { stages: reverse }], 'δ sweep');
    expect(pts).toHaveLength(2 * STAGES * 3);
    expect(new Set(pts.map((p) => p.source))).toEqual(new Set(['δ sweep']));
  });

  it('weights repeated points by their weight when averaging per (source, δ)', () => {
    const agg = aggregateViolation([
      { delta: 0.1, rate: 0.2, source: 'a', weight: 3 },
      { delta: 0.1, rate: 0.6, source: 'a', weight: 1 },
      { delta: 0.1, rate: 0.9, source: 'b' },
      { delta: 0, rate: 0.5, source: 'a' },
    ]);
    expect(agg).toHaveLength(2);
    expect(close(agg.find((p) => p.source === 'a')!.rate, 0.3)).toBe(true);
    expect(agg.find((p) => p.source === 'a')!.weight).toBe(4);
  });
});

describe('β, orders, transcripts', () => {
  it('has one β row per agent step, with each agent’s β in its own column only', () => {
    const rows = betaRows(records, partial);
    expect(rows).toHaveLength(STAGES * 3 + 1);
    rows.forEach((r, i) => {
      expect(r.i).toBe(i + 1);
      expect(r.beta).toBe(findStep(records, partial, r)!.metrics[`agent/${r.agent}/beta`]);
      for (let j = 0; j < 3; j++) expect(r[`beta${j}`]).toBe(j === r.agent ? r.beta : undefined);
    });
    expect(rows.map((r) => r.label).slice(0, 3)).toEqual(['1·1', '1·2', '1·3']);
  });

  it('lines several orders up by stage, each series’ J and held mark as recorded', () => {
    const series = [
      { label: 'fixed', stages: records },
      { label: 'reverse', stages: reverse },
      { label: 'random', stages: random },
    ];
    expect(reverse[0]!.order).toEqual([2, 1, 0]);
    const rows = orderRows(series);
    expect(rows).toHaveLength(STAGES + 1);
    expect(rows[0]!.s0).toBe(exp.j0);
    expect(rows[0]!.s1).toBe(exp.j0); // same seed, same initial team
    expect(rows[0]!.h0).toBeUndefined();
    series.forEach((s, k) => {
      s.stages.forEach((r, i) => {
        expect(rows[i + 1]![`s${k}`]).toBe(r.jAfter);
        expect(rows[i + 1]![`h${k}`]).toBe(r.metrics['cert/held']);
      });
    });
  });

  it('credits each message to the latest accepted step of its agent before the rollout', () => {
    const r2 = records[1]!; // stage 2
    const at = { stage: 2, before: 1 }; // sampled after σ(0) of stage 2 was updated
    const first = r2.order[0]!;
    const later = r2.order[2]!;
    expect(producerOf(first, at, records)).toEqual(records[1]!.steps[0]!.accepted ? { stage: 2, agent: first } : producerOf(first, { stage: 2, before: 0 }, records));
    const prevLater = records[0]!.steps.find((s) => s.agent === later)!;
    expect(producerOf(later, at, records)).toEqual(prevLater.accepted ? { stage: 1, agent: later } : null);
    expect(producerOf(first, { stage: 1, before: 0 }, records)).toBeNull();
    // A rejected step produced nothing: its agent keeps the policy of its previous accepted step.
    const rejected = records.map((r, k) =>
      k === 1 ? { ...r, steps: r.steps.map((s) => (s.agent === first ? { ...s, accepted: false } : s)) } : r,
    ) as StageRecord[];
    const prevFirst = records[0]!.steps.find((s) => s.agent === first)!;
    expect(producerOf(first, { stage: 3, before: 0 }, rejected)).toEqual(prevFirst.accepted ? { stage: 1, agent: first } : null);

    // LmEnv's episode record is a TranscriptEpisode as it stands (checked by the compiler).
    const lm: LmEpisodeRecord = {
      problem: { id: 'arithmetic-l1:train:0', split: 'train', index: 0, key: '3+4', prompt: '3+4=', answer: '7', meta: {} },
      sample: 0,
      messages: [{ turn: 0, agent: 0, text: '8' }, { turn: 1, agent: 1, text: '7' }, { turn: 2, agent: 2, text: '7' }],
      reward: 1,
      correct: true,
    };
    const ep: TranscriptEpisode = lm;
    const batch: TranscriptBatch = { ...at, episodes: [ep, { ...ep, correct: false, reward: 0, reason: 'wrong sum' }] };
    const rows = transcriptRows(batch, records);
    expect(rows).toHaveLength(2);
    expect(rows[0]!.messages.map((m) => m.agent)).toEqual([0, 1, 2]);
    for (const m of rows[0]!.messages) expect(m.producer).toEqual(producerOf(m.agent, at, records));
    expect(rows[1]!.reason).toBe('wrong sum');
    expect(transcriptRows(null, records)).toEqual([]);
    expect(transcriptRows(batch, records, { limit: 1 })).toHaveLength(1);
  });
});

describe('timeline', () => {
  it('numbers each finished stage’s cells by σ and marks the running stage’s unrun agents pending', () => {
    const stages = timelineStages(records, 3, partial);
    expect(stages).toHaveLength(STAGES + 1);
    records.forEach((r, k) => {
      const st = stages[k]!;
      expect(st.finished).toBe(true);
      expect(st.held).toBe(recorded(r));
      r.order.forEach((agent, i) => expect(st.cells[agent]!.position).toBe(i + 1));
      for (const c of st.cells) {
        const s = r.steps.find((x) => x.agent === c.agent)!;
        expect(c.status).toBe(!s.accepted ? 'rejected' : s.backtracks > 0 ? 'backtracked' : 'done');
      }
    });
    const run = stages[STAGES]!;
    expect(run.finished).toBe(false);
    expect(run.cells.filter((c) => c.status === 'pending')).toHaveLength(2);
    expect(run.cells[partial.steps[0]!.agent]!.position).toBe(1);
    expect(lastStepRef(records, partial)).toEqual({ stage: STAGES + 1, agent: partial.steps[0]!.agent });
  });

  it('names a step by agent, or a stage by its last step, and builds the running stage from the store’s partial steps', () => {
    const cur = partialStage(partial.steps)!;
    expect(cur.stage).toBe(STAGES + 1);
    expect(partialStage([])).toBeNull();
    for (const r of records) {
      for (const s of r.steps) {
        expect(toStepRef(records, cur, { stage: s.stage, agent: s.agent })).toEqual({ stage: s.stage, agent: s.agent });
      }
      const last = r.steps[r.steps.length - 1]!;
      expect(toStepRef(records, cur, { stage: r.stage })).toEqual({ stage: r.stage, agent: last.agent });
    }
    const pending = [0, 1, 2].find((a) => !partial.steps.some((p) => p.agent === a))!;
    expect(toStepRef(records, cur, { stage: STAGES + 1, agent: pending })).toBeNull(); // not run yet
    const html = renderToString(h(Timeline, { nAgents: 3, records, current: cur, selected: { stage: 2, agent: records[1]!.order[0]! }, onSelect: () => {} }));
    const sel = /<div[^>]*aria-selected="true"[^>]*>/.exec(html)![0];
    expect(sel).toContain(`data-agent="${records[1]!.order[0]}"`);
    expect(sel).toContain('data-stage="2"');
  });

  it('moves the selection through steps in update order with ←/→, across agents with ↑/↓, never onto unrun cells', () => {
    const stages = timelineStages(reverse, 3);
    const order = executionOrder(stages);
    expect(order.slice(0, 3)).toEqual([{ stage: 1, agent: 2 }, { stage: 1, agent: 1 }, { stage: 1, agent: 0 }]);
    expect(moveSelection(stages, { stage: 1, agent: 2 }, 'ArrowRight')).toEqual({ stage: 1, agent: 1 });
    expect(moveSelection(stages, { stage: 1, agent: 0 }, 'ArrowRight')).toEqual({ stage: 2, agent: 2 });
    expect(moveSelection(stages, { stage: 1, agent: 2 }, 'ArrowLeft')).toEqual({ stage: 1, agent: 2 });
    expect(moveSelection(stages, { stage: 2, agent: 0 }, 'ArrowDown')).toEqual({ stage: 2, agent: 1 });
    expect(moveSelection(stages, { stage: 2, agent: 1 }, 'ArrowUp')).toEqual({ stage: 2, agent: 0 });
    expect(moveSelection(stages, { stage: 2, agent: 0 }, 'ArrowUp')).toEqual({ stage: 2, agent: 0 });
    expect(moveSelection(stages, { stage: 2, agent: 2 }, 'ArrowDown')).toEqual({ stage: 2, agent: 2 });
    expect(moveSelection(stages, null, 'Home')).toEqual({ stage: STAGES, agent: 0 });
    expect(moveSelection(stages, { stage: 3, agent: 1 }, 'Home')).toEqual({ stage: 1, agent: 2 });
    const withRunning = timelineStages(records, 3, partial);
    const last = { stage: STAGES + 1, agent: partial.steps[0]!.agent };
    expect(moveSelection(withRunning, last, 'ArrowRight')).toEqual(last);
    expect(moveSelection(withRunning, { stage: 1, agent: 0 }, 'End')).toEqual(last);
    const other = (last.agent + 1) % 3;
    expect(moveSelection(withRunning, last, other > last.agent ? 'ArrowDown' : 'ArrowUp')).toEqual(last);
  });
});

describe('components render to static markup with real data', () => {
  function points(html: string, testid: string): number {
    const m = new RegExp(`data-testid="${testid}"[^>]*data-points="(\\d+)"`).exec(html);
    if (!m) throw new Error(`no data-testid="${testid}" with data-points in the markup`);
    return Number(m[1]);
  }

  it('draws every chart and the timeline with a positive data-points', () => {
    const step = records[STAGES - 1]!.steps[1]!;
    const last = records[STAGES - 1]!;
    const cases: [string, ReturnType<typeof h>, number][] = [
      ['chart-j', h(JChart, { records, span: exp.aMax }), STAGES],
      ['chart-waterfall', h(WaterfallChart, { record: last, form: 'gamma', onFormChange: () => {}, gamma: 0.99, span: exp.aMax }), 7],
      ['chart-adv', h(AdvantageChart, { step, aClip: exp.cfg.aClip }), ADV_BINS],
      ['chart-kl', h(KlChart, { step, alpha: exp.cfg.alpha }), klRows(step).rows.length],
      ['chart-beta', h(BetaChart, { records, current: partial, nAgents: 3 }), STAGES * 3 + 1],
      ['chart-orders', h(OrderChart, { series: [{ label: 'σ = 0→1→2', stages: records }, { label: 'σ = 2→1→0', stages: reverse }] }), 2 * STAGES],
      ['timeline', h(Timeline, { nAgents: 3, records, current: partial, selected: { stage: 2, agent: 1 }, onSelect: () => {} }), STAGES * 3 + 1],
    ];
    for (const [id, el, n] of cases) {
      const html = renderToString(el);
      expect(points(html, id)).toBe(n);
      expect(html).toContain('How to read this');
    }
    const wf = renderToString(cases[1]![1]);
    expect(wf).toContain('data-testid="vacuous-note"');
    expect(wf).toContain('Vacuous');
    expect(wf).toContain('aria-checked="true"');
    expect(wf).not.toContain('data-testid="certified-note"'); // the γ form certifies nothing
    const episodic = renderToString(h(WaterfallChart, { record: last, form: 'episodic', span: exp.aMax, deltaConf: 0.05 }));
    expect(last.certificate.episodic.certified).toBe(true);
    expect(episodic).toContain('data-testid="certified-note"');
    expect(episodic).toContain('certified improvement');
    expect(episodic).toContain('with probability ≥ 95 %');
    expect(episodic).not.toContain('data-testid="vacuous-note"');
    for (const cite of ['SAT.md', 'UX.md', 'ARCHITECTURE.md']) expect(episodic + renderToString(cases[0]![1]) + renderToString(cases[6]![1])).not.toContain(cite);
    const tl = renderToString(cases[6]![1]);
    expect(tl.match(/data-testid="timeline-cell"/g)).toHaveLength(3 * (STAGES + 1));
    expect(tl.match(/aria-selected="true"/g)).toHaveLength(1);
    expect(tl.match(/data-status="pending"/g)).toHaveLength(2);
    expect(tl).toContain('data-cursor="true"');
    // Each finished stage's header title says whether it was certified.
    for (const r of records) {
      const title = new RegExp(`title="stage ${r.stage}: ([^"]*)"`).exec(tl)![1]!;
      expect(title.startsWith('certified improvement')).toBe(r.metrics['cert/certified'] === 1);
      expect(title).toContain(r.metrics['cert/held'] === 1 ? 'certificate held' : 'certificate not held');
    }
    expect(tl).toContain(`title="stage ${STAGES + 1}: running"`);
  });

  it('draws the violation chart from sweep points with its fit', () => {
    const deltas = [1e-3, 1e-2, 1e-1];
    const pts = [...violationPointsFromStages(records), ...violationPointsFromSweep(deltas, deltas.map((d) => 0.3 * Math.sqrt(d)))];
    const html = renderToString(h(ViolationChart, { points: pts }));
    expect(points(html, 'chart-violation')).toBe(aggregateViolation(pts).filter((p) => p.rate > 0).length);
    expect(html).toMatch(/fit v ≈/);
  });

  it('draws transcripts with each message in its agent’s colour', () => {
    const ep: TranscriptEpisode = {
      problem: { id: 'p', prompt: '3+4=', answer: '7' }, sample: 0, reward: 1, correct: true,
      messages: [{ turn: 0, agent: 0, text: '8' }, { turn: 1, agent: 1, text: '7' }],
    };
    const rows = transcriptRows({ stage: 2, before: 0, episodes: [ep, ep, ep] }, records);
    const html = renderToString(h(TranscriptTable, { rows, caption: 'stage 2, stage batch', onSelectStep: () => {} }));
    expect(points(html, 'transcripts')).toBe(3);
    expect(html.match(/data-testid="transcript-row"/g)).toHaveLength(3);
    expect(html).toContain('--agent:#0072B2');
    expect(html).toContain('3+4=');
  });

  it('lazy.tsx gives one lazy component per chart name, the same on every ask, drawing that chart once loaded', async () => {
    const { lazyCharts } = await import('../src/app/charts/lazy');
    expect(lazyCharts.JChart).toBe(lazyCharts.JChart);
    expect(lazyCharts.KlChart).not.toBe(lazyCharts.JChart);
    expect((lazyCharts as unknown as Record<string, unknown>)['$$typeof']).toBeUndefined();
    const chart = (): string => renderToString(h(lazyCharts.JChart, { records }));
    expect(chart()).toContain('Loading the charts');
    await vi.waitFor(async () => {
      await new Promise((r) => setTimeout(r, 10));
      expect(points(chart(), 'chart-j')).toBe(STAGES);
    });
  });

  it('shows a calm placeholder, not a blank box, before the first stage', () => {
    const empties: [string, ReturnType<typeof h>][] = [
      ['chart-j', h(JChart, { records: [] })],
      ['chart-waterfall', h(WaterfallChart, { record: null })],
      ['chart-adv', h(AdvantageChart, { step: null })],
      ['chart-kl', h(KlChart, { step: null })],
      ['chart-violation', h(ViolationChart, { points: [] })],
      ['chart-beta', h(BetaChart, { records: [], nAgents: 3 })],
      ['chart-orders', h(OrderChart, { series: [] })],
      ['transcripts', h(TranscriptTable, { rows: [] })],
      ['timeline', h(Timeline, { nAgents: 3, records: [], selected: null, onSelect: () => {} })],
    ];
    for (const [id, el] of empties) {
      const html = renderToString(el);
      expect(points(html, id)).toBe(0);
      expect(html).toMatch(/Step (an agent|a stage)|Compare orders/);
    }
  });
});

describe('numbers at the precision they deserve', () => {
  it('a difference within a few ulps of its scale is drawn as 0, a real one is kept', () => {
    expect(dropNoise(-1.2e-17, 0.206)).toBe(0);
    expect(dropNoise(3e-15, 11)).toBe(0);
    expect(dropNoise(1e-9, 0.206)).toBe(1e-9);
    expect(dropNoise(-0.004, 0.206)).toBe(-0.004);
    expect(dropNoise(Number.NaN, 1)).toBeNaN();
  });

  it('the waterfall of a stage that moved nothing draws no bar; held stays the recorded decision', () => {
    const exp = createTabularExperiment(presetConfig('climbing', { stages: 1 }));
    return runStages(exp, 1).then(([rec]) => {
      const r = rec!;
      // The same stage as if every agent had been rejected: J after = J before + rounding noise.
      const still: StageRecord = { ...r, jAfter: r.jBefore - 1.2e-17 * Math.sign(r.jBefore || 1) };
      const wf = waterfallRows(still, 'chosen', 41);
      expect(wf.dJ).toBe(0);
      expect(wf.rows.find((x) => x.kind === 'realised')!.value).toBe(0);
      expect(wf.held).toBe(termsOf(still, 'chosen').lower <= still.jAfter - still.jBefore + heldTolerance(still.jBefore, still.jAfter) ? 'held' : 'not held');
    });
  });

  it('the J axis of a nearly flat run has distinct tick labels at 3 decimals', () => {
    const exp = createTabularExperiment(presetConfig('climbing', { stages: 2 }));
    return runStages(exp, 2).then((recs) => {
      const flat = recs.map((r, i) => ({ ...r, jBefore: 0.2055 + i * 1e-5, jAfter: 0.2055 + (i + 1) * 1e-5 }));
      const s = jSeries(flat, { span: 0 });
      const labels = s.ticks.map((t) => t.toFixed(3));
      expect(new Set(labels).size).toBe(labels.length);
      expect(s.domain[1] - s.domain[0]).toBeGreaterThanOrEqual(J_MIN_SPAN - 1e-12);
    });
  });

  it('an overlaid run (scheme = simultaneous) widens the J axis to hold it and keeps its stage 0', async () => {
    const seq = await runStages(createTabularExperiment(presetConfig('climbing', { stages: 3 })), 3);
    const sim = await runStages(createTabularExperiment(presetConfig('climbing', { stages: 5, scheme: 'simultaneous' })), 5);
    const s = jSeries(seq, { overlay: sim });
    expect(s.overlay.map((p) => p.stage)).toEqual([0, 1, 2, 3, 4, 5]);
    for (const p of s.overlay) {
      expect(p.j).toBeGreaterThanOrEqual(s.domain[0]);
      expect(p.j).toBeLessThanOrEqual(s.domain[1]);
    }
    expect(s.overlay[5]!.j).toBe(sim[4]!.jAfter);
  });
});

describe('the game view', () => {
  it('a matrix game: marginals are the tables, the most likely joint action is each agent\u2019s likeliest, its payoff the game\u2019s', () => {
    const exp = createTabularExperiment(presetConfig('climbing')) as TabularExperiment;
    const game = exp.env.game;
    const rng = new Rng(5);
    const probs = [0, 1, 2].map(() => probsOfLogits(Float64Array.from({ length: 3 }, () => rng.normal()), 3));
    const f = gameFrame(game, probs, 1, 0);
    for (let j = 0; j < 3; j++) for (let a = 0; a < 3; a++) expect(close(f.marginals[j]![a]!, probs[j]![a]!, 1e-12)).toBe(true);
    const arg = probs.map((p) => [...p].indexOf(Math.max(...p)));
    expect(f.top.moves.map((m) => m.action)).toEqual(arg);
    expect(close(f.top.prob, arg.reduce((x, a, j) => x * probs[j]![a]!, 1), 1e-12)).toBe(true);
    expect(f.top.reward).toBe(pairwiseMeanPayoff(CLIMBING_PAYOFFS, arg));
    const grids = payoffGrids(game)!;
    expect(grids.length).toBe(3);
    expect(grids[0]![0]![0]).toBe(11);
    expect(grids[2]![1]![0]).toBe(pairwiseMeanPayoff(CLIMBING_PAYOFFS, [1, 0, 2]));
  });

  it('a relay (many states): marginals are distributions over actions, the top episode is an episode of the game, no payoff table', () => {
    const exp = createTabularExperiment(presetConfig('relay', { initScale: 1 })) as TabularExperiment;
    const game = exp.env.game;
    const rng = new Rng(9);
    const probs = game.nActions.map((k, j) => probsOfLogits(Float64Array.from({ length: k * game.nObs[j]! }, () => rng.normal()), k));
    const f = gameFrame(game, probs, 2, 1);
    for (const row of f.marginals) expect(close(row.reduce((a, b) => a + b, 0), 1, 1e-9)).toBe(true);
    expect(f.top.moves.length).toBeGreaterThan(0);
    expect(f.top.prob).toBeGreaterThan(0);
    expect(payoffGrids(game)).toBeNull();
    expect(frameAt([f, { ...f, stage: 3, position: 0 }], 2, 2)).toBe(f);
    expect(frameAt([f, { ...f, stage: 3, position: 0 }], 3, 0)!.stage).toBe(3);
  });
});

describe('the swap card says what its radius is', () => {
  it('a language seat: the per-message bound maxNew·δ₀, each token within δ₀ — never "largest KL ≤ δ₀" for a number above δ₀', () => {
    const s = { certRadius: 3 * 0.1, stage0: true, delta0: 0.1 };
    const w = radiusWords(s, 3);
    expect(w).toContain('each token of its messages is within KL δ₀ = 0.1');
    expect(w).toContain('within 3.0e\u22121 (= 3·δ₀)');
    expect(w).not.toMatch(/≤ δ₀/);
  });
  it('a table: the measured largest per-state KL, said ≤ δ₀ only with Stage-0', () => {
    expect(radiusWords({ certRadius: 0.04, stage0: true, delta0: 0.05 }, null)).toBe('its largest KL to the replaced agent at any state is 4.0e\u22122 (≤ δ₀ = 0.05 by Stage-0)');
    expect(radiusWords({ certRadius: 0.9, stage0: false, delta0: 0.05 }, null)).toBe('its largest KL to the replaced agent at any state is 9.0e\u22121');
  });
  it('a swap is announced only when the next step starts its stage; a table swap is cheap, a distilled one about SWAP_STAGE_COST', () => {
    const pnp = presetConfig('arith-pnp'); // swap at stage 3
    expect(swapAnnouncement(pnp, 1, false, 'arith-pnp')).toBeNull();
    expect(swapAnnouncement(pnp, 2, true, 'arith-pnp')).toBeNull(); // stage 3 under way: its swap is done
    expect(swapAnnouncement(pnp, 3, false, 'arith-pnp')).toBeNull();
    expect(swapAnnouncement(pnp, 2, false, 'arith-pnp')).toMatch(/^The next step starts stage 3 with a plug-and-play swap: agent 1's seat gets the arithmetic-M model, projected by Stage-0 .* about 13× a normal stage \(measured on the arith-pnp preset: the distillation is most of it\)\.$/);
    expect(swapAnnouncement(pnp, 2, false, 'custom')).toContain('measured on the arith-pnp preset; other settings differ');
    expect(swapAnnouncement({ ...pnp, swapStage0: false }, 2, false, 'custom')).toMatch(/seated as it is \(no Stage-0\).*about as much as a normal one/);
    const relay = presetConfig('relay-pnp');
    expect(swapAnnouncement(relay, relay.swapAt - 1, false, 'relay-pnp')).toMatch(/best response to the team, computed exactly from the tables and projected by Stage-0 .* about the cost of a normal stage/);
    expect(swapAnnouncement(presetConfig('climbing'), 0, false, 'climbing')).toBeNull();
  });
  it('a floor wider than J could fall is called vacuous in words; a tighter one is not', () => {
    // arith-pnp's swap: "cannot have lowered J by more than 0.387" while J stood at 0.066 (rewards in [0, 1]).
    expect(vacuousFloor(0.387, 0.066, 1, 0)).toMatch(/^vacuous here: J stood at 0\.066, only 0\.066 above the lowest J there is/);
    expect(vacuousFloor(0.05, 0.4, 1, 0)).toBeNull();
    // A table game: only J's whole range is known.
    expect(vacuousFloor(45, 5, 41, null)).toMatch(/wider than J's whole range \(41\.000\)/);
    expect(vacuousFloor(3, 5, 41, null)).toBeNull();
  });
  it('relay-pnp: the measured radius really is within δ₀ (the projection keeps every state inside)', async () => {
    const exp = createTabularExperiment(presetConfig('relay-pnp', { stages: 8 }));
    const recs = await runStages(exp, 8);
    const sw = recs.find((r) => r.swap)!.swap!;
    expect(sw.certRadius).toBeGreaterThan(0);
    expect(sw.certRadius).toBeLessThanOrEqual(sw.delta0 * (1 + 1e-9));
  });
});

describe('tickLabels', () => {
  it('writes ticks at the fewest decimals that keep each exact, with the typographic minus and no −0', () => {
    expect(tickLabels([-4, -2, 0, 2, 4, 6, 8])).toEqual(['\u22124', '\u22122', '0', '2', '4', '6', '8']);
    expect(tickLabels([0, 0.25, 0.5, 0.75])).toEqual(['0.00', '0.25', '0.50', '0.75']);
    expect(tickLabels([0.2045, 0.205, 0.2055, 0.206])).toEqual(['0.2045', '0.2050', '0.2055', '0.2060']);
    const fresh = Array.from({ length: 6 }, (_, k) => Number((-0.3 + k * 0.1).toPrecision(12)));
    const labels = tickLabels(fresh);
    expect(new Set(labels).size).toBe(labels.length);
    labels.forEach((l, k) => expect(Number(l.replace('\u2212', '-'))).toBeCloseTo(fresh[k]!, 12));
  });
});

describe('an imported run\'s y axes', () => {
  it('tick labels stay short and the axis is as wide as the longest one at the page\'s font size', () => {
    expect(tickText(0.0016)).toBe('1.6e\u22123');
    expect(tickText(0.5625)).toBe('0.563');
    expect(tickText(-13.0001)).toBe('\u221213');
    expect(tickText(123456)).toBe('1.2e+5');
    for (const x of [0.0016, 0.5625, -13.0001, 123456, -0.00123, 98765]) expect(tickText(x).length).toBeLessThanOrEqual(7);
    // Seven characters at 13 px fit 13·0.62 px each; projector mode's 16 px need a wider axis.
    expect(axisWidth([0.0012, 0.0036], false)).toBeGreaterThanOrEqual(7 * 13 * 0.62);
    expect(axisWidth([0.0012, 0.0036], true)).toBeGreaterThan(axisWidth([0.0012, 0.0036], false));
    expect(axisWidth([0.4, 0.6], false)).toBeLessThan(axisWidth([0.0012, 0.0036], false));
  });
});
