/**
 * The sequential certificate (docs/certificate.md §5.3): the betting bound with a horizon fixed in
 * advance is a confidence sequence — it may be read after every round and the stage may stop when
 * it likes — while the fixed-N bound recomputed after every round is not (the negative control);
 * the plan of rounds and the run's budget; the stage loop's stopping rule and seeded determinism on
 * a tiny language team and a tabular game; the mixture estimator's summand (§5.4): exactly ΔJ in
 * expectation on random pairs of distributions, inside its stated range.
 *
 * Not here: the validity suites on exact J (tests/certificate.test.ts, tests/certificate-lm.test.ts),
 * which run the sequential family on real stages.
 */
import { describe, expect, it } from 'vitest';
import { lowerConfidenceBound, lowerConfidenceBoundBelow } from '../src/core/confidence';
import { Rng } from '../src/core/rng';
import { mixtureRange, mixtureSummands, mixtureWeight, SequentialCert, sequentialPlan } from '../src/sat/certificate';
import { certEpisodesOf, parseConfig } from '../src/sat/config';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { normalLower } from './helpers/peeking';
import { tinyStages, tinyTeam } from './helpers/tinyTeam';

describe('the betting bound read after every round', () => {
  it('with a fixed horizon misses at no round in ≥ 1 − η of sequences; a fixed-N bound read after every round misses more often', () => {
    // Skewed samples of known mean: 0.6 with probability ¼ else 0 — mean 0.15, the kind of
    // sample (mostly one value, a rare larger one) the certificate sees.
    const rng = new Rng(20261207);
    const eta = 0.05;
    const rounds = 16;
    const per = 24;
    const sequences = 400;
    const mu = 0.15;
    const miss = { seq: 0, peekBetting: 0, fixedNormal: 0, peekNormal: 0 };
    for (let s = 0; s < sequences; s++) {
      const x = Float64Array.from({ length: rounds * per }, () => (rng.uniform() < 0.25 ? 0.6 : 0));
      const hit = { seq: false, peekBetting: false, peekNormal: false };
      let best = -Infinity;
      for (let r = 1; r <= rounds; r++) {
        const prefix = x.subarray(0, r * per);
        best = Math.max(best, lowerConfidenceBound('betting', prefix, 0, 1, eta, (rounds * per) / 2));
        if (best > mu) hit.seq = true;
        if (lowerConfidenceBound('betting', prefix, 0, 1, eta) > mu) hit.peekBetting = true;
        if (normalLower(prefix) > mu) hit.peekNormal = true;
      }
      if (normalLower(x) > mu) miss.fixedNormal++;
      for (const k of ['seq', 'peekBetting', 'peekNormal'] as const) if (hit[k]) miss[k]++;
    }
    console.log(`η = ${eta}, ${sequences} sequences of ${rounds} rounds: confidence sequence missed at some round in ${miss.seq}; fixed-N betting bound recomputed after every round ${miss.peekBetting}; ` +
      `normal approximation at the final N only ${miss.fixedNormal}, recomputed after every round ${miss.peekNormal}`);
    expect(miss.seq / sequences).toBeLessThanOrEqual(eta);
    // The negative control: at one fixed N the normal bound misses about η of the time; read after
    // every round and stopped when it suits, several times that.
    expect(miss.fixedNormal / sequences).toBeLessThanOrEqual(1.5 * eta);
    expect(miss.peekNormal / sequences).toBeGreaterThan(2 * eta);
  });

  it('with the horizon equal to the sample count is the fixed-N bound, and reads the same prefix the same way', () => {
    const rng = new Rng(5);
    const x = Float64Array.from({ length: 300 }, () => rng.uniform() * 2 - 1);
    expect(lowerConfidenceBound('betting', x, -1, 1, 0.05, 300)).toBe(lowerConfidenceBound('betting', x, -1, 1, 0.05));
    expect(lowerConfidenceBoundBelow(x, -1, 2, 0.05, 300)).toBe(lowerConfidenceBoundBelow(x, -1, 2, 0.05));
    // A longer horizon bets less at first: on the same 100 samples the bound is lower, and it does
    // not depend on samples not yet seen.
    const early = lowerConfidenceBoundBelow(x.subarray(0, 100), -1, 2, 0.05, 300);
    expect(early).toBeLessThan(lowerConfidenceBoundBelow(x.subarray(0, 100), -1, 2, 0.05));
    expect(() => lowerConfidenceBound('hoeffding', x, -1, 1, 0.05, 300)).toThrow(/betting/);
  });
});

describe('the plan and the stopping rule', () => {
  it('splits the average budget into rounds, spends what earlier stages left, never more than the cap', () => {
    expect(sequentialPlan(768, { rounds: 4, cap: 4, slots: 1, credit: 0 })).toEqual({ roundEpisodes: 192, roundUnits: 192, maxRounds: 4, horizon: 768 });
    expect(sequentialPlan(768, { rounds: 4, cap: 4, slots: 1, credit: 1e9 })).toEqual({ roundEpisodes: 192, roundUnits: 192, maxRounds: 16, horizon: 1536 });
    expect(sequentialPlan(768, { rounds: 4, cap: 4, slots: 1, credit: 400 })).toMatchObject({ maxRounds: 6 });
    // Three slots a unit: rounds of whole units.
    expect(sequentialPlan(768, { rounds: 4, cap: 1, slots: 3, credit: 0 })).toMatchObject({ roundUnits: 64, roundEpisodes: 192, maxRounds: 4 });
    // One round at cap 1: the fixed-size batch and the fixed-N bound's horizon.
    expect(sequentialPlan(768, { rounds: 1, cap: 1, slots: 1, credit: 0 })).toEqual({ roundEpisodes: 768, roundUnits: 768, maxRounds: 1, horizon: 768 });
  });

  it('stops when certified, keeps the running best, and with bernstein splits δ over the rounds', () => {
    const x = Float64Array.from({ length: 400 }, (_, k) => (k % 4 === 0 ? 1 : 0.1));
    const seq = new SequentialCert(100, 4, 200, [-1, 1], 0.05, 'betting', undefined, true);
    const first = seq.look(x.subarray(0, 100));
    expect(first.lower).toBe(lowerConfidenceBound('betting', x.subarray(0, 100), -1, 1, 0.05, 200));
    expect(first.lower).toBeGreaterThan(0);
    expect(seq.stopAfter(x.subarray(0, 100))).toBe('certified');
    const b = new SequentialCert(100, 4, 200, [-1, 1], 0.05, 'bernstein', undefined, false);
    expect(b.look(x.subarray(0, 100)).lower).toBe(lowerConfidenceBound('bernstein', x.subarray(0, 100), -1, 1, 0.05 / 4));
    expect(b.stopAfter(x.subarray(0, 100))).toBeUndefined(); // 'cap': every round
  });
});

describe('the sequential certificate in the stage loop', () => {
  it.each(['mixture', 'truncated-is', 'paired'] as const)('language (%s): rounds until certified, futile or out of budget; the same seed gives the same run', { timeout: 120_000 }, async (certEstimator) => {
    const run = async () => {
      const cfg = parseConfig({ task: 'arithmetic', agents: 2, maxNew: 2, batch: 3, group: 4, epochs: 2, geoIters: 0, probeEpisodes: 12, delta: 0.5, lr: 0.3, seed: 11, certEpisodes: 32 });
      const { env, team } = tinyTeam({ agents: 2, maxNew: 2, temperature: 1, topK: 0, seed: 4 });
      env.certEstimator = certEstimator;
      const looks: number[][] = [];
      const stages = await tinyStages(env, team, cfg, 5, (stage, x) => (looks[stage - 1] ??= []).push(x.length));
      return { cfg, stages, looks };
    };
    const a = await run();
    const b = await run();
    const key = (r: typeof a) => JSON.stringify(r.stages.map((s) => [s.jAfter, s.certificate.chosen.lower, s.metrics['cert/episodes'], s.certificate.sequential]));
    expect(key(a)).toBe(key(b));
    const base = certEpisodesOf(a.cfg) * 2;
    let spent = 0;
    for (const [k, s] of a.stages.entries()) {
      const q = s.certificate.sequential!;
      expect(s.certificate.estimator).toBe(certEstimator);
      // A mixture or paired unit is a pair: one episode of each team.
      expect(q.unitEpisodes).toBe(certEstimator === 'truncated-is' ? 1 : 2);
      expect(Number.isFinite(s.metrics['cert/baseline'])).toBe(certEstimator === 'mixture');
      expect(Number.isFinite(s.metrics['cert/pairs_differ'])).toBe(certEstimator === 'paired');
      expect(a.looks[k]).toEqual(q.looks.map((l) => l.units));
      expect(s.metrics['cert/episodes']).toBe(q.looks.length * q.roundUnits * q.unitEpisodes!);
      for (let i = 1; i < q.looks.length; i++) expect(q.looks[i]!.lower).toBeGreaterThanOrEqual(q.looks[i - 1]!.lower);
      const last = q.looks[q.looks.length - 1]!;
      expect(s.certificate.chosen.lower).toBe(last.lower);
      if (q.stop === 'certified') expect(last.lower).toBeGreaterThan(0);
      else expect(last.lower).toBeLessThanOrEqual(0);
      if (q.stop === 'budget') expect(q.looks.length).toBe(q.maxRounds);
      spent += s.metrics['cert/episodes'] as number;
      expect(spent).toBeLessThanOrEqual(base * (k + 1));
      expect(s.metrics['cert/credit']).toBe(base * (k + 1) - spent);
    }
  });

  it('tabular: fewer draws than the fixed batch where the bound clears 0 early, the run within its budget, deterministic', async () => {
    const run = async () => {
      const cfg = parseConfig({ task: 'penalty', agents: 2, stages: 8, seed: 3, lr: 0.3, delta: 0.5 });
      const exp = await createTabularExperiment(cfg);
      return { cfg, stages: await runStages(exp, cfg.stages) };
    };
    const a = await run();
    const b = await run();
    expect(a.stages.map((s) => [s.certificate.chosen.lower, s.metrics['cert/episodes']])).toEqual(b.stages.map((s) => [s.certificate.chosen.lower, s.metrics['cert/episodes']]));
    const base = certEpisodesOf(a.cfg);
    const used = a.stages.map((s) => s.metrics['cert/episodes'] as number);
    expect(used.reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(base * a.stages.length);
    expect(Math.min(...used)).toBeLessThan(base);
    expect(a.stages.some((s) => s.certificate.sequential!.stop === 'certified' && (s.metrics['cert/episodes'] as number) < base)).toBe(true);
  });
});

describe('the mixture estimator (docs/certificate.md §5.4)', () => {
  /** A random distribution over k outcomes, with about a quarter of them impossible. */
  const dist = (rng: Rng, k: number): number[] => {
    const w: number[] = Array.from({ length: k }, () => (rng.uniform() < 0.25 ? 0 : rng.uniform() ** 3));
    if (w.every((v) => v <= 0)) w[rng.int(k)] = 1;
    const z = w.reduce((a, v) => a + v, 0);
    return w.map((v) => v / z);
  };

  it('pairs of one draw of each team: exactly ΔJ in expectation for any baseline, inside the stated range', () => {
    const seed = 20261210;
    const rng = new Rng(seed);
    let worst = 0;
    for (let trial = 0; trial < 200; trial++) {
      const k = 2 + rng.int(7);
      const p = dist(rng, k); // π_cur
      const q = dist(rng, k); // π̄
      const [rMin, rMax] = rng.uniform() < 0.5 ? [0, 1] : [-5 + 4 * rng.uniform(), 1 + 4 * rng.uniform()];
      const R = Array.from({ length: k }, () => (rng.uniform() < 0.5 ? (rng.uniform() < 0.5 ? rMin : rMax) : rMin + (rMax - rMin) * rng.uniform()));
      // Any baseline, even one outside the reward range (clamped by mixtureRange).
      const { b, range } = mixtureRange(rMin, rMax, rMin - 1 + (rMax - rMin + 2) * rng.uniform());
      const logR = R.map((_, i) => Math.log(q[i]!) - Math.log(p[i]!)); // ±∞ where one team cannot draw it
      let expect_ = 0;
      for (let i = 0; i < k; i++) {
        for (let j = 0; j < k; j++) {
          if (p[i]! === 0 || q[j]! === 0) continue;
          const x = mixtureSummands({ reward: [R[i]!], logR: [logR[i]!] }, { reward: [R[j]!], logR: [logR[j]!] }, b, 1)[0]!;
          expect(x).toBeGreaterThanOrEqual(range[0] - 1e-12);
          expect(x).toBeLessThanOrEqual(range[1] + 1e-12);
          expect_ += p[i]! * q[j]! * x;
        }
      }
      const dJ = R.reduce((a, r, i) => a + (q[i]! - p[i]!) * r, 0);
      worst = Math.max(worst, Math.abs(expect_ - dJ));
    }
    console.log(`mixture estimator, seed ${seed}: 200 random pairs of distributions, largest |E[X] − ΔJ| = ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-12);
  });

  it('weights in [−2, 2]; a draw its own scorer calls impossible scores the least value; units of several slots average', () => {
    expect(mixtureWeight(0)).toBe(0);
    expect(mixtureWeight(Infinity)).toBe(2);
    expect(mixtureWeight(-Infinity)).toBe(-2);
    expect(mixtureWeight(Math.log(3))).toBeCloseTo((2 * (3 - 1)) / (3 + 1), 14);
    // NaN: −2|R − b| whatever the sign of R − b.
    expect(mixtureSummands({ reward: [1], logR: [NaN] }, { reward: [0], logR: [NaN] }, 0.25, 1)[0]).toBeCloseTo((-2 * 0.75 - 2 * 0.25) / 2, 14);
    const x = mixtureSummands({ reward: [1, 0, 1, 1], logR: [0.5, -1, 0, 2] }, { reward: [0, 1, 1, 0], logR: [1, -0.5, 0, 0] }, 0.5, 2);
    const w = mixtureWeight;
    expect(Array.from(x)).toEqual([
      (w(0.5) * 0.5 + w(-1) * -0.5 + w(1) * -0.5 + w(-0.5) * 0.5) / 4,
      (w(0) * 0.5 + w(2) * 0.5 + w(0) * 0.5 + w(0) * -0.5) / 4,
    ].map((v) => expect.closeTo(v, 14)));
    expect(() => mixtureSummands({ reward: [1, 0], logR: [0, 0] }, { reward: [1], logR: [0] }, 0, 1)).toThrow(/pair/);
    expect(mixtureRange(0, 1, 0.3)).toEqual({ b: 0.3, range: [-1.4, 1.4] });
    expect(mixtureRange(0, 1, 7)).toEqual({ b: 1, range: [-2, 2] });
  });
});
