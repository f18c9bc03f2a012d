/**
 * The configured plug-and-play swap (swapAgent / swapAt / swapTo / swapStage0, docs/method.md §8.3) as the
 * stage loop runs it: it happens exactly before stage swapAt, is a pure function of the seed (a
 * replayed run swaps identically), Stage-0 keeps every state of the seat within δ₀ while a raw
 * seat leaves it, the summary agrees with a manual swap, and every inconsistent setting names
 * itself. Seeds: the presets' own (relay-pnp, seed 1–3).
 *
 * Not here: the projection maths (tests/stage0.test.ts) or language-model swaps (tests/lmswap.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, SatError } from '../src/core/errors';
import { parseConfig } from '../src/sat/config';
import { bestResponseLogits, createTabularExperiment, runStages, stepThrough, swapAgent } from '../src/sat/experiment';
import { presetConfig } from '../src/sat/presets';

describe('configured swap', () => {
  it('happens once, just before stage swapAt, and only then', async () => {
    const exp = createTabularExperiment(presetConfig('relay-pnp', { stages: 10 }));
    const recs = await runStages(exp, 10);
    expect(recs.map((r) => (r.swap ? r.stage : 0)).filter((s) => s > 0)).toEqual([8]);
    const s = recs[7]!.swap!;
    expect(s.agent).toBe(1);
    expect(s.incoming).toBe('best response');
    // The stage's starting J is the J right after the swap.
    expect(recs[7]!.jBefore).toBeCloseTo(s.jAfter, 12);
    expect(recs[6]!.jAfter).toBeCloseTo(s.jBefore, 12);
  });

  it('is a pure function of the seed: two runs give identical records', async () => {
    const a = await runStages(createTabularExperiment(presetConfig('relay-pnp', { seed: 3 })), 9);
    const b = await runStages(createTabularExperiment(presetConfig('relay-pnp', { seed: 3 })), 9);
    const strip = (r: (typeof a)[number]) => ({ ...r, metrics: Object.fromEntries(Object.entries(r.metrics).filter(([k]) => !k.startsWith('perf/'))) });
    expect(b.map(strip)).toEqual(a.map(strip));
  });

  for (const seed of [1, 2, 3]) {
    it(`Stage-0 seats inside δ₀, a raw seat leaves it (seed ${seed})`, async () => {
      const on = await runStages(createTabularExperiment(presetConfig('relay-pnp', { seed, stages: 8 })), 8);
      const off = await runStages(createTabularExperiment(presetConfig('relay-pnp', { seed, stages: 8, swapStage0: false })), 8);
      const s0 = on[7]!.swap!;
      const raw = off[7]!.swap!;
      expect(s0.outsideAfter).toBe(0);
      expect(s0.klQuantiles.q99).toBeLessThanOrEqual(s0.delta0 * (1 + 1e-6));
      expect(raw.outsideAfter).toBeGreaterThan(0);
      expect(raw.klQuantiles.q99).toBeGreaterThan(raw.delta0);
      // Same team before the swap either way (the seat is all that differs).
      expect(raw.jBefore).toBe(s0.jBefore);
      expect(s0.lambdaHist.reduce((x, y) => x + y, 0)).toBe(3); // relay agent 1 has 3 states
      // The swap's own certificate (docs/certificate.md §8): a floor from its largest per-state KL,
      // ≤ δ₀ with Stage-0, so the floor is at least −√(δ₀/2)·A; it holds in both cases.
      const A = 1; // relay rewards lie in [0, 1]
      expect(s0.certRadius).toBeLessThanOrEqual(s0.delta0 * (1 + 1e-6));
      expect(s0.certFloor).toBeGreaterThanOrEqual(-Math.sqrt((s0.delta0 * (1 + 1e-6)) / 2) * A);
      expect(raw.certRadius).toBeGreaterThan(raw.delta0);
      for (const w of [s0, raw]) expect(w.jAfter - w.jBefore).toBeGreaterThanOrEqual(w.certFloor);
      console.log(`relay-pnp seed ${seed}: swap ΔJ ${(s0.jAfter - s0.jBefore).toFixed(4)} ≥ floor ${s0.certFloor.toFixed(4)} (Stage-0); raw ${(raw.jAfter - raw.jBefore).toFixed(4)} ≥ ${raw.certFloor.toFixed(4)}`);
    });
  }

  it('agrees with a manual swap at the same point', async () => {
    const cfg = presetConfig('relay-pnp', { stages: 8 });
    const auto = await runStages(createTabularExperiment(cfg), 8);
    const manual = createTabularExperiment(parseConfig({ ...cfg, swapAgent: -1 }));
    await runStages(manual, 7);
    const r = await swapAgent(manual, 1, await bestResponseLogits(manual, 1), { stage0: true, delta0: cfg.stage0Delta });
    expect(r.jAfter).toBe(auto[7]!.swap!.jAfter);
    expect(r.klQuantiles).toEqual(auto[7]!.swap!.klQuantiles);
  });

  it('names every inconsistent swap setting', () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ task: 'relay', agents: 3, swapAgent: 3 }, 'swapAgent'],
      [{ task: 'relay', agents: 3, swapAgent: 1, swapAt: 40, stages: 20 }, 'swapAt'],
      [{ task: 'relay', agents: 3, swapAgent: 1, swapTo: 'M' }, 'swapTo'],
      [{ task: 'arithmetic', agents: 3, swapAgent: 1, swapTo: 'best' }, 'swapTo'],
      [{ task: 'countdown', agents: 3, swapAgent: 1, swapTo: 'L' }, 'swapTo'],
    ];
    for (const [input, key] of bad) {
      let err: unknown;
      try {
        parseConfig(input);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(input)).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).key).toBe(key);
      expect((err as ConfigError).message).toContain(`"${key}"`);
    }
  });

  it('a language swap on an experiment built without a model loader says so', async () => {
    // A tabular experiment object with a language config is enough to reach the check.
    const exp = createTabularExperiment(presetConfig('relay'));
    const lm = { ...exp, cfg: parseConfig({ task: 'arithmetic', agents: 3, swapAgent: 1, swapTo: 'M', swapAt: 1 }) };
    await expect(stepThrough(lm).next()).rejects.toThrow(SatError);
    await expect(stepThrough(lm).next()).rejects.toThrow(/needs a model loader/);
  });
});
