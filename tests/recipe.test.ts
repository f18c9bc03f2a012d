/**
 * "Export for a real run" (src/sat/recipe.ts): the mapping covers every setting of the config
 * table (each mapped, or unmapped with a note saying why); the SAT-style YAML parses back (the
 * `yaml` library) to the very object exported; importing it reproduces every setting it maps, for
 * every preset, from a base where those settings differ; the verl overrides name only mapped keys;
 * bad files get specific messages; docs/real-run.md's table is the one the code produces.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { FormatError } from '../src/core/errors';
import { CONFIG_KEYS, defaultConfig, isLlmTask, parseConfig, type Config, type ConfigKey } from '../src/sat/config';
import { PRESETS, presetConfig } from '../src/sat/presets';
import { DEFAULT_MODELS, readRecipe, recipe, RECIPE, recipeTable } from '../src/sat/recipe';

const DOC = join(import.meta.dirname, '../docs/real-run.md');

/** A base that keeps what the YAML cannot carry (the task…) but moves every mapped setting away from `cfg`'s value where it can. */
function baseFor(cfg: Config): Config {
  const keep: Record<string, unknown> = {};
  for (const k of CONFIG_KEYS) if (RECIPE[k].sat === null) keep[k] = cfg[k];
  return parseConfig({ ...keep, beta: cfg.beta === 0.5 ? 0.25 : 0.5, delta: cfg.delta === 0.3 ? 0.2 : 0.3, group: cfg.group === 3 ? 5 : 3, maxBacktracks: cfg.maxBacktracks === 7 ? 2 : 7 });
}

describe('recipe for a real run', () => {
  it('maps every setting of the config table, and says why for each one it cannot', () => {
    expect(Object.keys(RECIPE).sort()).toEqual([...CONFIG_KEYS].sort());
    for (const k of CONFIG_KEYS) {
      const e = RECIPE[k];
      if (e.sat === null && e.verl === null) expect(e.note, k).toMatch(/\w{3,}/);
    }
    const r = recipe(presetConfig('arith-team'));
    expect(r.unmapped.length).toBeGreaterThan(0);
    expect(r.unmapped.every((k) => RECIPE[k].sat === null && RECIPE[k].verl === null)).toBe(true);
  });

  it('the YAML parses back to the exported object; the overrides are key=value of mapped verl keys', () => {
    const verlKeys = new Set([...CONFIG_KEYS.map((k) => RECIPE[k].verl).filter((x): x is string => x !== null), 'algorithm.adv_estimator', 'actor_rollout_ref.actor.use_kl_loss']);
    for (const p of PRESETS) {
      const r = recipe(presetConfig(p.name));
      expect(parse(r.yaml), p.name).toEqual(r.sat);
      for (const o of r.verl) {
        const m = /^([a-z_.]+)=(.+)$/.exec(o);
        expect(m, o).not.toBeNull();
        expect(verlKeys.has(m![1]!), o).toBe(true);
      }
    }
    const arith = recipe(presetConfig('arith-team'), { ...DEFAULT_MODELS, S: 'my-org/tiny' });
    expect(arith.verl).toContain('actor_rollout_ref.model.path=my-org/tiny');
    expect(arith.verl).toContain('actor_rollout_ref.rollout.n=8');
    expect((arith.sat.sat as { agents: { path: string }[] }).agents.map((a) => a.path)).toEqual(['my-org/tiny', 'my-org/tiny', 'my-org/tiny']);
  });

  it('an import of the YAML reproduces every setting it maps, for every preset', () => {
    for (const p of PRESETS) {
      const cfg = presetConfig(p.name);
      const range = 1; // stands for the task's reward range: aMax = 0 exports as it and reads back as 0
      const back = readRecipe(recipe(cfg, DEFAULT_MODELS, range).yaml, baseFor(cfg), { aMaxOfTask: range });
      const mapped = CONFIG_KEYS.filter((k) => RECIPE[k].sat !== null);
      const skip = new Set<ConfigKey>(['epsHigh', 'customOrder']);
      for (const k of mapped) {
        if (skip.has(k) || (k === 'stage0Delta' && !cfg.swapStage0) || (k === 'customOrder' && cfg.order !== 'custom')) continue;
        if (k === 'swapTo' && cfg.swapAgent < 0) continue;
        if ((k === 'model' || k === 'agentModels') && !isLlmTask(cfg.task)) continue;
        expect(back[k], `${p.name}: ${k}`).toEqual(cfg[k]);
      }
    }
  });

  it('a mixed team, per-agent radii, a custom order and a swap travel too', () => {
    const cfg = parseConfig({ task: 'arithmetic', agents: 3, agentModels: ['S', 'M', 'S'], deltas: [0.05, 0.1, 0.2], order: 'custom', customOrder: [2, 0, 1], swapAgent: 1, swapTo: 'L', stage0Delta: 0.03, stages: 4, swapAt: 2 });
    const back = readRecipe(recipe(cfg).yaml, parseConfig({ task: 'arithmetic', agents: 3, stages: 4 }));
    for (const k of ['agentModels', 'deltas', 'order', 'customOrder', 'swapAgent', 'swapTo', 'swapStage0', 'stage0Delta'] as const) expect(back[k], k).toEqual(cfg[k]);
  });

  it('bad files get their own messages', () => {
    const base = defaultConfig();
    const err = (text: string) => {
      try {
        readRecipe(text, base);
      } catch (e) {
        return e;
      }
      return null;
    };
    expect(err('sat: [unclosed')).toBeInstanceOf(FormatError);
    expect((err('sat: [unclosed') as Error).message).toMatch(/^This is not a YAML file/);
    expect((err('algorithm: {}') as Error).message).toMatch(/no "sat" section/);
    expect((err('sat: { agents: [] }') as Error).message).toMatch(/"sat.agents" must be a non-empty list/);
    const unknown = err('sat: { agents: [{ name: a, path: someone/else }, { name: b, path: someone/else }] }');
    expect((unknown as Error).message).toMatch(/sat.agents\[0\].path is "someone\/else", which is none of the model ids/);
    const range = err('sat: { group_size: 999999 }');
    expect((range as Error).message).toMatch(/"group" = 999999 is out of range/);
  });

  it('docs/real-run.md carries the table the code produces', () => {
    expect(readFileSync(DOC, 'utf8')).toContain(recipeTable());
  });
});
