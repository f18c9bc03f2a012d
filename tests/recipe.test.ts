/**
 * "Export for a real run" (src/bridge/recipe.ts): the mapping's rows are settings of the config
 * table, each mapped or saying why not; a setting with no row is NOT_MAPPED and every export that
 * runs lists it as not carried (a row removed from a copy of the table shows it); the SAT authors'
 * trainer's YAML parses back (the `yaml` library) to what was exported; importing it reproduces
 * the experiment exactly (its `playground` section) and lets an edited trainer key win; the files
 * land where the commands look; bad or oversized files get specific messages; docs/real-run.md's
 * table is the one the code produces. The engines' own checks are in tests/bridge-schema.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { FormatError } from '../src/core/errors';
import { CONFIG_KEYS, defaultConfig, parseConfig, type Config } from '../src/sat/config';
import { PRESETS, presetConfig } from '../src/sat/presets';
import { DEFAULT_MODELS, NOT_MAPPED, readRecipe, recipe, RECIPE, recipeEntry, recipeNames, recipeTable } from '../src/bridge/recipe';

const DOC = join(import.meta.dirname, '../docs/real-run.md');

/** The LLM presets made exportable to the SAT authors' trainer (independent protocol, fixed order, arithmetic). */
const exportable = PRESETS.filter((p) => p.kind === 'llm')
  .map((p) => parseConfig({ ...presetConfig(p.name), protocol: 'independent', swapAgent: -1, order: presetConfig(p.name).order === 'random' ? 'random' : 'fixed' }))
  .filter((c) => c.task === 'arithmetic');

describe('recipe for a real run', () => {
  it('each row is a setting of the config table, and says why for each engine that cannot take it', () => {
    for (const k of Object.keys(RECIPE)) expect(CONFIG_KEYS, k).toContain(k);
    for (const k of CONFIG_KEYS) {
      const e = recipeEntry(k);
      if (e.satTrainer === null || e.verl === null || e.teamtr === null) expect(e.note, k).toMatch(/\S+( \S+){3,}/);
    }
    const r = recipe(presetConfig('arith-team'));
    expect(r.unmapped.length).toBeGreaterThan(0);
    expect(r.unmapped.every((k) => { const e = recipeEntry(k); return e.satTrainer === null && e.verl === null && e.teamtr === null; })).toBe(true);
  });

  it('a setting with no row goes nowhere, and every export that runs lists it as not carried, with its value', () => {
    const cfg = parseConfig({ ...presetConfig('arith-team'), protocol: 'independent', order: 'fixed', swapAgent: -1, topK: 5 });
    const { topK: _, ...table } = RECIPE;
    const line = 'topK: not mapped by this engine: topK = 5 is not carried.';
    const without = recipe(cfg, DEFAULT_MODELS, 1, 'x.sat.yaml', { table, data: false });
    expect(without.unmapped).toContain('topK');
    expect(recipeTable(table)).toContain(`| \`topK\` | — | — | — | ${NOT_MAPPED.note} |`);
    for (const e of Object.values(without.engines)) {
      expect(e.ok, e.engine).toBe(true);
      if (!e.ok) continue;
      expect(e.differs.map((d) => `${d.setting}: ${d.message}`), e.engine).toContain(line);
      expect(e.files[0]!.text, e.engine).toContain(`#   ${line}`);
    }
    // With the row, topK is mapped (verl, TeamTR) and no export says "not mapped".
    const withRow = recipe(cfg, DEFAULT_MODELS, 1, 'x.sat.yaml', { data: false });
    expect(withRow.unmapped).not.toContain('topK');
    for (const e of Object.values(withRow.engines)) expect(e.ok && e.differs.filter((d) => d.message.startsWith('not mapped'))).toEqual([]);
  });

  it('the YAML parses back to what was exported, and the files sit where the commands look', () => {
    expect(exportable.length).toBeGreaterThan(1);
    for (const cfg of exportable) {
      const r = recipe(cfg, DEFAULT_MODELS, 1, 'runs/team.sat.yaml');
      const doc = parse(r.yaml!);
      expect(doc.training.num_stages).toBe(cfg.stages);
      expect(doc.data.train_batch_size).toBe(cfg.batch * cfg.group);
      expect(doc.sat.agents).toHaveLength(cfg.agents);
      const paths = r.files.map((f) => f.path);
      const n = recipeNames('runs/team.sat.yaml');
      expect(n).toEqual({ name: 'team', yamlFile: 'team.sat.yaml', verlScript: 'team.verl.sh', verlOverrides: 'team.verl.txt', teamtrScript: 'team.teamtr.sh', dataDir: 'team.data' });
      expect(paths).toEqual(expect.arrayContaining(['team.sat.yaml', 'team.verl.sh', 'team.verl.txt', 'team.teamtr.sh', 'team.data/train.verl.jsonl', 'team.data/val.verl.jsonl', 'team.data/reward.py', 'team.data/train.sat.jsonl']));
      expect(paths).toContain(doc.dataset.train_path);
      const script = r.files.find((f) => f.path === 'team.verl.sh')!.text;
      expect(script).toContain('"data.train_files=$DATA/train.verl.jsonl"');
      expect(script).toContain('DATA="$(cd "$(dirname "$0")" && pwd)/team.data"');
      const val = r.files.find((f) => f.path === 'team.data/val.verl.jsonl')!.text.trim().split('\n');
      expect(val).toHaveLength(cfg.evalEpisodes);
      const row = JSON.parse(val[0]!);
      expect(Object.keys(row)).toEqual(['data_source', 'prompt', 'ability', 'reward_model', 'extra_info']);
      expect(row.prompt[0].role).toBe('user');
      expect(row.extra_info.split).toBe('heldout');
    }
  });

  it('an import of the YAML reproduces the experiment exactly, for every exportable preset', () => {
    for (const cfg of exportable) {
      const back = readRecipe(recipe(cfg, DEFAULT_MODELS, 1).yaml!, defaultConfig(), { aMaxOfTask: 1 });
      expect(back).toEqual(cfg);
    }
  });

  it('an edited trainer key wins over the playground section; without the section the trainer keys alone are read', () => {
    const cfg = exportable[0]!;
    const y = recipe(cfg).yaml!;
    const edited = readRecipe(y.replace(/kl_coef: [^\n]+/, 'kl_coef: 0.37').replace(/target_kl: [^\n]+/, 'target_kl: 0.0123').replace('mode: static', 'mode: random'), defaultConfig());
    expect([edited.beta, edited.delta, edited.order]).toEqual([0.37, 0.0123, 'random']);
    const bare = y.slice(0, y.indexOf('playground:'));
    const base = parseConfig({ task: 'arithmetic', agents: 2, stages: 3 });
    const back = readRecipe(bare, base);
    for (const k of ['beta', 'delta', 'alpha', 'group', 'batch', 'lr', 'stages', 'maxBacktracks', 'agents', 'model', 'temperature'] as const) expect(back[k], k).toEqual(cfg[k]);
    const mixed: Config = parseConfig({ ...cfg, agentModels: ['S', 'M', 'L'], agents: 3, swapAgent: 1, swapTo: 'L', swapAt: 2, stage0Delta: 0.03 });
    const m = readRecipe(recipe(mixed).yaml!.split('playground:')[0]!, base);
    for (const k of ['agentModels', 'swapAgent', 'swapTo', 'swapStage0', 'stage0Delta'] as const) expect(m[k], k).toEqual(mixed[k]);
  });

  it('bad files get their own messages, and a huge file is refused before it is parsed', () => {
    const base = defaultConfig();
    const err = (text: string) => {
      try {
        readRecipe(text, base);
      } catch (e) {
        return e as Error;
      }
      return null;
    };
    expect(err('sat: [unclosed')).toBeInstanceOf(FormatError);
    expect(err('sat: [unclosed')!.message).toMatch(/^This is not a YAML file/);
    expect(err('algorithm: {}')!.message).toMatch(/no "sat" section/);
    expect(err('sat: { agents: [] }')!.message).toMatch(/"sat.agents" must be a non-empty list/);
    expect(err('sat: { agents: [{ name: a, path: someone/else }, { name: b, path: someone/else }] }')!.message).toMatch(/sat.agents\[0\].path is "someone\/else", which is none of the model ids/);
    expect(err('sat: { group_size: 999999 }')!.message).toMatch(/"group" = 999999 is out of range/);
    expect(err('sat: { scheduler: { mode: greedy_info_gain } }')!.message).toMatch(/sat.scheduler.mode is "greedy_info_gain"; the playground reads static .* and random/);
    expect(err('sat: {}\nplayground: [1, 2]')!.message).toMatch(/"playground" must be a map/);
    // Two million keys in 37 MB: refused by the size cap at once, and a key count cap below the size cap too.
    const big = 'sat: {}\n' + 'k: 1\n'.repeat(2_000_000);
    const t0 = performance.now();
    expect(err(big)!.message).toMatch(/This recipe is .* MB; the playground reads at most 256 kB of it\. Nothing was read\./);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(err('sat: {}\n' + 'a: 1\n'.repeat(6000))!.message).toMatch(/more than 5,000 lines/);
    expect(err('sat: {' + 'k: 1, '.repeat(6000) + '}')!.message).toMatch(/more than 5,000 keys/);
  });

  it('tabular games export to no engine, and say why', () => {
    const r = recipe(presetConfig('climbing'));
    expect(r.yaml).toBeNull();
    expect(r.files).toEqual([]);
    for (const e of Object.values(r.engines)) expect(e.ok ? '' : e.refused[0]!.message).toMatch(/"climbing" is a tabular game/);
  });

  it('docs/real-run.md carries the table the code produces', () => {
    expect(readFileSync(DOC, 'utf8')).toContain(recipeTable());
  });
});
