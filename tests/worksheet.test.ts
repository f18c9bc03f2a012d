/**
 * The presets' "predict, then run" questions (src/studies/worksheet.ts): every preset has one, and each
 * answer, on a real short run of its preset (the tabular presets as configured, seed 3; the language
 * presets with their shipped models at a tiny batch), is what the records say — checked by hand
 * against those records for several (counted again here from the metrics or the steps' own fields,
 * not through the worksheet's helpers) — and changes when the records change. Too short a run gets
 * "run N more stages", never a guess.
 *
 * Not here: the preset card on the page (tests/e2e/formulas.test.ts reveals one).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { PRESETS, presetConfig } from '../src/sat/presets';
import type { StageRecord } from '../src/sat/stage';
import { answerWorksheet, FALL, WORKSHEET, type WorksheetAnswer } from '../src/studies/worksheet';

const SEED = 3;
const runs = new Map<string, StageRecord[]>();
const load = async (name: string) => new Uint8Array(readFileSync(join(import.meta.dirname, '../public/models', `${name}.safetensors`)));
/** The language presets at a batch small enough for a unit test (the question does not depend on the batch). */
const TINY_LM = { batch: 2, group: 2, evalEpisodes: 8, geoIters: 0, probeEpisodes: 4, certEpisodes: 4 };

beforeAll(async () => {
  for (const p of PRESETS) {
    const need = WORKSHEET[p.name]!.stages;
    if (p.kind === 'tabular') runs.set(p.name, await runStages(createTabularExperiment(presetConfig(p.name, { seed: SEED })), need));
    else runs.set(p.name, await runStages(await createLlmExperiment(presetConfig(p.name, { seed: SEED, ...TINY_LM }), load), need));
  }
}, 300_000);

const answer = (preset: string, records = runs.get(preset)!): WorksheetAnswer => {
  const r = answerWorksheet(preset, records);
  if (!r.ready) throw new Error(`${preset}: not ready (${r.have} of ${r.need})`);
  return r.answer;
};
const num = (r: { metrics: StageRecord['metrics'] }, k: string) => r.metrics[k] as number;

describe('worksheet questions', () => {
  it('every preset has one question, and no question names a preset that does not exist', () => {
    expect(Object.keys(WORKSHEET).sort()).toEqual(PRESETS.map((p) => p.name).sort());
    for (const [name, q] of Object.entries(WORKSHEET)) {
      expect(q.question.trim().endsWith('?'), name).toBe(true);
      expect(q.stages, name).toBeGreaterThanOrEqual(1);
    }
  });

  it('each answer, on a real run of its preset, is a sentence with the facts it rests on', () => {
    for (const p of PRESETS) {
      const a = answer(p.name);
      expect(a.text.length, p.name).toBeGreaterThan(10);
      expect(a.text, p.name).not.toMatch(/NaN|undefined/);
      expect(Object.keys(a.facts).length, p.name).toBeGreaterThan(0);
    }
  });

  it('too short a run says how many more stages it needs; a longer one reads only stages 1…N', () => {
    const rs = runs.get('climbing')!;
    expect(answerWorksheet('climbing', rs.slice(0, 2))).toEqual({ ready: false, need: 5, have: 2 });
    expect(answerWorksheet('climbing', [])).toEqual({ ready: false, need: 5, have: 0 });
    expect(() => answerWorksheet('no-such-preset', rs)).toThrow(/No worksheet question/);
    const later = { ...rs[4]!, stage: 6, metrics: { ...rs[4]!.metrics, 'team/dJ': -1 } };
    expect(answer('climbing', [...rs, later])).toEqual(answer('climbing'));
  });

  it('climbing: the stages where J fell, counted from team/dJ — and a fall written into the records shows up', () => {
    const rs = runs.get('climbing')!;
    const fell = rs.filter((r) => r.jAfter - r.jBefore < FALL).map((r) => r.stage);
    expect(answer('climbing').facts.fell).toEqual(fell);
    const edited = rs.map((r) => (r.stage === 2 ? { ...r, metrics: { ...r.metrics, 'team/dJ': -0.25 } } : r));
    expect(answer('climbing', edited).facts.fell).toEqual([...new Set([...fell, 2])].sort((a, b) => a - b));
    expect(answer('climbing', edited).text).toMatch(/stages? .*2/);
  });

  it('climbing2 and plan-team-2: certified stages are those with a lower bound above 0', () => {
    for (const name of ['climbing2', 'plan-team-2']) {
      const rs = runs.get(name)!;
      const want = rs.filter((r) => num(r, 'cert/lower') > 0).map((r) => r.stage);
      expect(answer(name).facts.certified, name).toEqual(want);
      expect(answer(name).text.startsWith(`${want.length} of ${rs.length}`), name).toBe(true);
    }
  });

  it('penalty: the first agent step with a backtrack, in the order the steps ran', () => {
    const steps = runs.get('penalty')!.flatMap((r) => r.steps);
    const firstBt = steps.find((s) => s.backtracks > 0);
    expect(answer('penalty').facts.agent).toBe(firstBt ? firstBt.agent : null);
    expect(answer('penalty').facts.stage).toBe(firstBt ? firstBt.stage : null);
  });

  it('relay: held in every stage ⇔ cert/lower ≤ ΔJ in each', () => {
    const rs = runs.get('relay')!;
    const notHeld = rs.filter((r) => !(num(r, 'cert/lower') <= r.jAfter - r.jBefore)).map((r) => r.stage);
    expect(answer('relay').facts.notHeld).toEqual(notHeld);
    expect(answer('relay').text.startsWith(notHeld.length === 0 ? 'Yes' : 'No')).toBe(true);
  });

  it('random-matrix: the agent whose own update raised J most, from each step\'s J before and after', () => {
    const [r] = runs.get('random-matrix')!;
    const gains = r!.steps.map((s) => ({ agent: s.agent, dJ: s.jAfter - s.jBefore }));
    const best = Math.max(...gains.map((g) => g.dJ));
    expect(answer('random-matrix').facts.agents).toEqual(gains.filter((g) => g.dJ === best).map((g) => g.agent).sort());
  });

  it('router: backtracks and rejected updates per agent over 5 stages, from agent/<j>/backtracks and agent/<j>/accepted', () => {
    const rs = runs.get('router')!;
    const totals = [0, 1, 2].map((j) => rs.reduce((x, r) => x + num(r, `agent/${j}/backtracks`), 0));
    const rejected = [0, 1, 2].map((j) => rs.filter((r) => num(r, `agent/${j}/accepted`) === 0).length);
    const f = answer('router').facts;
    expect([f.totals, f.rejected]).toEqual([totals, rejected]);
    const max = Math.max(...totals);
    expect(f.agents).toEqual(max === 0 ? [] : [0, 1, 2].filter((j) => totals[j] === max));
  });

  it('delta-sweep: the pooled share of visits past δ equals the visit-weighted mean of agent/<j>/viol_rate', () => {
    const [r] = runs.get('delta-sweep')!;
    let w = 0;
    let s = 0;
    for (const st of r!.steps) {
      s += num(st, `agent/${st.agent}/viol_rate`) * st.kl.length;
      w += st.kl.length;
    }
    expect(Math.abs((answer('delta-sweep').facts.share as number) - s / w)).toBeLessThan(1e-12);
  });

  it('order: who went first in stages 1 and 5, from order/sigma', () => {
    const rs = runs.get('order')!;
    const f = answer('order').facts;
    expect(f.first1).toBe((rs[0]!.metrics['order/sigma'] as number[])[0]);
    expect(f.first5).toBe((rs[4]!.metrics['order/sigma'] as number[])[0]);
  });

  it('relay-pnp: the jump at the swap is the swap summary\'s J after − J before, and stage 8 held as recorded', () => {
    const r8 = runs.get('relay-pnp')![7]!;
    expect(r8.swap).toBeDefined();
    expect(answer('relay-pnp').facts.jump).toBe(r8.swap!.jAfter - r8.swap!.jBefore);
    expect(answer('relay-pnp').facts.held).toBe(num(r8, 'cert/held') === 1);
  });

  it('arith-pnp: backtracks of stage 2 and stage 3 (after the M model is swapped in) summed over the steps', () => {
    const rs = runs.get('arith-pnp')!;
    const bt = (k: number) => rs[k - 1]!.steps.reduce((s, x) => s + num(x, `agent/${x.agent}/backtracks`), 0);
    const f = answer('arith-pnp').facts;
    expect([f.b2, f.b3, f.swapped]).toEqual([bt(2), bt(3), true]);
  });
});
