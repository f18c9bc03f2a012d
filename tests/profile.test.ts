/**
 * The stage profile (src/sat/profile.ts, src/cli/profile.ts): the stage loop names its phases, the
 * counters land in the phase in force, and profiling changes no number the run computes.
 *
 * Not here: what the phases cost (npm run sat -- --profile prints that; it is not a timed test).
 */
import { describe, expect, it } from 'vitest';
import { attachProfiler, profileTable } from '../src/cli/profile';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { presetConfig } from '../src/sat/presets';
import { StageProfiler } from '../src/sat/profile';

const strip = (m: Record<string, unknown>) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('perf/')));

describe('stage profile', () => {
  it('counts land in the phase in force; nothing is counted outside a phase', () => {
    const p = new StageProfiler();
    p.count('x');
    p.enter('train');
    p.count('x', 2);
    p.enter('monitor');
    p.count('x');
    p.stop();
    p.count('x', 5);
    expect(p.phases.get('train')!.counts.x).toBe(2);
    expect(p.phases.get('monitor')!.counts.x).toBe(1);
    expect([...p.phases.keys()]).toEqual(['train', 'monitor']);
    for (const t of p.phases.values()) expect(t.ms).toBeGreaterThanOrEqual(0);
  });

  it('a profiled relay stage goes through its phases, counts agent calls, and computes the same metrics', async () => {
    const cfg = presetConfig('relay', { stages: 2, geoIters: 5 });
    const plain = await runStages(createTabularExperiment(cfg), 2);
    const profiled = createTabularExperiment(cfg);
    const prof = attachProfiler(profiled);
    const seen = new Set<string>();
    const entered = new Set<string>();
    const tables: string[] = [];
    const profiledStages = await runStages(profiled, 2, (s) => {
      for (const [ph, t] of prof.profiler.phases) {
        entered.add(ph);
        if (Object.keys(t.counts).length > 0) seen.add(ph);
      }
      tables.push(profileTable(s, prof));
      prof.profiler.reset();
    });
    for (const ph of ['rollout', 'geometry', 'train', 'monitor', 'gain']) expect(seen.has(ph), ph).toBe(true);
    // On a tabular game the stage keeps the team's tables (agent j's new one comes back with its
    // update), so J, the resampled batches and the certificate ask no agent anything.
    for (const ph of ['evaluate', 'resample', 'certificate']) expect(seen.has(ph), ph).toBe(false);
    for (const ph of ['evaluate', 'resample', 'certificate']) expect(entered.has(ph), ph).toBe(true);
    expect(profiledStages.map((s) => strip(s.metrics))).toEqual(plain.map((s) => strip(s.metrics)));
    expect(tables[0]).toMatch(/^stage 1 profile:\nphase/);
    console.log(tables[0]);
  });
});
