/**
 * The certify report's arithmetic (src/studies/certReport.ts) on real stage records: certified
 * among the improving stages, the verdict counts in the verdicts' own four states (held, not held,
 * undecided, not checked) adding up to the stages, and the per-decade rows adding up to the whole.
 * Not here: running the presets (the CLI's --certify-report) or the bound itself.
 */
import { describe, expect, it } from 'vitest';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { presetConfig } from '../src/sat/presets';
import type { StageRecord } from '../src/sat/stage';
import { certReportRow } from '../src/studies/certReport';

const num = (s: StageRecord, k: string) => s.metrics[k] as number;

describe('certify report', () => {
  it('counts certified among improving stages, every verdict once, and decades that add up', async () => {
    const runs = await Promise.all([1, 2].map((seed) => runStages(createTabularExperiment(presetConfig('relay', { seed: String(seed), stages: '12' })), 12)));
    // One stage of the second run marked as a language stage would be: its bound not checked.
    const unchecked = { ...runs[1]![3]!, held: { state: 'unchecked' as const, estimate: Number.NaN, se: Number.NaN, pairs: 0 }, metrics: { ...runs[1]![3]!.metrics, 'cert/held': Number.NaN } };
    const notHeld = { ...runs[1]![4]!, held: { state: 'not held' as const, estimate: num(runs[1]![4]!, 'team/dJ'), se: 0, pairs: 0 }, metrics: { ...runs[1]![4]!.metrics, 'cert/held': 0 } };
    const edited = [runs[0]!, runs[1]!.map((s, i) => (i === 3 ? unchecked : i === 4 ? notHeld : s))];
    const row = certReportRow('relay', edited);
    const all = edited.flat();
    const dJ = (s: StageRecord) => (s.held && Number.isFinite(s.held.estimate) ? s.held.estimate : num(s, 'team/dJ'));
    const improved = all.filter((s) => dJ(s) > 0);
    expect(row.stages).toBe(24);
    expect(row.improved).toBe(improved.length);
    expect(row.certified).toBe(improved.filter((s) => num(s, 'cert/lower') > 0).length);
    expect(row.certified).toBeGreaterThan(0);
    // Every stage has one verdict: held + not held + undecided + not checked = stages.
    const held = Math.round(row.holdRate * row.stages);
    expect(row.unchecked).toBe(1);
    expect(row.notHeld).toBeGreaterThanOrEqual(1);
    expect(held + row.notHeld + row.undecided + row.unchecked).toBe(row.stages);
    // Decades 1–10 and 11–12, every seed: they add up to the whole.
    expect(row.decades.map((d) => [d.from, d.to])).toEqual([[1, 10], [11, 12]]);
    expect(row.decades.reduce((a, d) => a + d.improved, 0)).toBe(row.improved);
    expect(row.decades.reduce((a, d) => a + d.certified, 0)).toBe(row.certified);
    for (const d of row.decades) {
      const eps = all.filter((s) => s.stage >= d.from && s.stage <= d.to).map((s) => num(s, 'cert/episodes'));
      expect(d.episodesMax).toBe(Math.max(...eps));
      expect(d.episodesMean).toBeCloseTo(eps.reduce((a, x) => a + x, 0) / eps.length, 9);
    }
  });
});
