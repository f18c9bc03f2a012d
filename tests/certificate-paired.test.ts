/**
 * The paired (common-random-numbers) estimator of the language team-level certificate
 * (docs/certificate.md §5.5), on tiny language teams whose J is exact (tests/helpers/tinyTeam.ts):
 * its units pair the same problem and sampler uniforms under both teams, so a team that did not
 * move gives X ≡ 0; its mean is ΔJ (each half an exact sample of its team); the stage loop records
 * it and counts both halves' episodes. Its determinism is checked with the other estimators'
 * (tests/certificate-sequential.test.ts), its validity family with sequential stopping in
 * tests/certificate-lm.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { pairedRange } from '../src/sat/certificate';
import { parseConfig } from '../src/sat/config';
import { crnUnits } from '../src/sat/heldCheck';
import { tinyStages, tinyTeam } from './helpers/tinyTeam';

const settings = {
  task: 'arithmetic', agents: 2, maxNew: 2, batch: 3, group: 4, epochs: 2, geoIters: 0, probeEpisodes: 12,
  delta: 1, lr: 0.3, deltaConf: 0.05, certEpisodes: 16, certRounds: 4, certCap: 4,
} as const;

describe('the paired estimator (docs/certificate.md §5.5)', () => {
  it('a team that did not move gives X = 0 in every unit: both halves answer with the same random numbers', async () => {
    const { env, team } = tinyTeam({ agents: 3, maxNew: 2, temperature: 1.3, topK: 2, seed: 11 });
    const start = await Promise.all(team.map((x) => x.snapshot()));
    const same = (await crnUnits(env, team, start, 500, new Rng(5)))!;
    for (const v of same) expect(v).toBe(0);
    // The control: the same team with its sampler uniforms not shared (each half its own stream).
    const rA = Float64Array.from((await env.rollout(team, 500, env.slots, new Rng(5), { record: false })).episodes, (e) => e.reward);
    const rB = Float64Array.from((await env.rollout(team, 500, env.slots, new Rng(6), { record: false })).episodes, (e) => e.reward);
    expect(rA.some((v, k) => v !== rB[k])).toBe(true);
  });

  it('its units average to the exact ΔJ between two fixed teams, within 4 standard errors, and lie in [−A, A]', async () => {
    const a = tinyTeam({ agents: 2, maxNew: 2, temperature: 1, topK: 0, seed: 21 });
    const b = tinyTeam({ agents: 2, maxNew: 2, temperature: 1, topK: 0, seed: 22 });
    const start = await Promise.all(a.team.map((x) => x.snapshot()));
    const other = await Promise.all(b.team.map((x) => x.snapshot()));
    await Promise.all(a.team.map((x, k) => x.restore(other[k]!)));
    const jNow = (await a.env.evaluate(a.team)).J;
    const d = (await crnUnits(a.env, a.team, start, 3000, new Rng(7)))!;
    // The team is left as it was (at `other`), and J(start) is exact too.
    expect((await a.env.evaluate(a.team)).J).toBe(jNow);
    await Promise.all(a.team.map((x, k) => x.restore(start[k]!)));
    const dJ = jNow - (await a.env.evaluate(a.team)).J;
    let m = 0;
    for (const v of d) m += v;
    m /= d.length;
    let v2 = 0;
    for (const v of d) v2 += (v - m) ** 2;
    const se = Math.sqrt(v2 / (d.length - 1) / d.length);
    const [lo, hi] = pairedRange(...a.env.rewardRange);
    for (const v of d) expect(v >= lo && v <= hi).toBe(true);
    console.log(`paired units between two random tiny teams: mean ${m.toFixed(4)} ± ${se.toFixed(4)} (se), exact ΔJ ${dJ.toFixed(4)}, zero in ${(d.filter((v) => v === 0).length / d.length).toFixed(2)}`);
    expect(Math.abs(dJ)).toBeGreaterThan(4 * se); // the two teams differ: the check below can fail
    expect(Math.abs(m - dJ)).toBeLessThan(4 * se);
  });

  it('the first round reuses the stage-start batch as its starting half: the same units as rolling it out again', async () => {
    const a = tinyTeam({ agents: 2, maxNew: 2, temperature: 1, topK: 0, seed: 31 });
    const b = tinyTeam({ agents: 2, maxNew: 2, temperature: 1, topK: 0, seed: 32 });
    const start = await Promise.all(a.team.map((x) => x.snapshot()));
    const rng = new Rng(9, [1, 6]);
    const before = Float64Array.from((await a.env.rollout(a.team, 40, a.env.slots, rng, { record: false })).episodes, (e) => e.reward);
    const other = await Promise.all(b.team.map((x) => x.snapshot()));
    await Promise.all(a.team.map((x, k) => x.restore(other[k]!)));
    const given = (await crnUnits(a.env, a.team, start, 40, rng, { before }))!;
    const drawn = (await crnUnits(a.env, a.team, start, 40, rng))!;
    expect(Array.from(given)).toEqual(Array.from(drawn));
    expect(given.some((v) => v !== 0)).toBe(true);
    await expect(crnUnits(a.env, a.team, start, 41, rng, { before })).rejects.toThrow(/40 starting-team rewards for 41 units/);
  });

  it('in the stage loop: recorded as paired, both halves counted, the whole range [−A, A]', async () => {
    const { env, team } = tinyTeam({ agents: 2, maxNew: 2, temperature: 1, topK: 0, seed: 41 });
    env.certEstimator = 'paired';
    const looks: { stage: number; range: readonly [number, number]; scale: number | undefined; x: Float64Array }[] = [];
    const stages = await tinyStages(env, team, parseConfig({ ...settings, seed: 8 }), 3, (stage, x, range, scale) => looks.push({ stage, range, scale, x: x.slice() }));
    const A = env.rewardRange[1] - env.rewardRange[0];
    expect(looks.length).toBeGreaterThan(0);
    for (const l of looks) {
      expect(l.range).toEqual([-A, A]);
      expect(l.scale).toBeUndefined();
      for (const v of l.x) expect(Math.abs(v)).toBeLessThanOrEqual(A);
    }
    for (const s of stages) {
      const q = s.certificate.sequential!;
      expect(s.certificate.estimator).toBe('paired');
      expect(q.unitEpisodes).toBe(2 * env.slots);
      expect(s.metrics['cert/episodes']).toBe(q.looks[q.looks.length - 1]!.units * 2 * env.slots);
      const last = looks.filter((l) => l.stage === s.stage).at(-1)!.x;
      expect(last.length).toBe(q.looks[q.looks.length - 1]!.units);
      expect(s.metrics['cert/pairs_differ']).toBe(last.filter((v) => v !== 0).length / last.length);
    }
  });
});
