/**
 * A real run's episodes back (src/bridge/generations.ts): generation dumps written the way verl's
 * and TeamTR's `_write_generations` write them (tests/fixtures/bridge/logs/README.md) read to their
 * rows — prompt, reply, score, ground truth and the agent whose turn marker ends the prompt — with
 * a NaN score kept as none and said, bad lines named, oversized input refused before parsing; the
 * agent of every turn of random chain episodes, prompted as the exported rollout prompts them, is
 * read back; the budgeted input door's job gives the same; pages and filters keep what they say.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { Rng } from '../src/core/rng';
import { FormatError } from '../src/core/errors';
import { agentOfPrompt, generationPage, generationSummary, isGenerationDump, readGenerations } from '../src/bridge/generations';
import { runJob } from '../src/workers/inputJobs';
import { LLM_TASKS, nextTurn, type Message } from '../src/tasks/llm/index';
import { promptText } from '../src/bridge/taskData';
import { DEFAULT_MODELS, recipe } from '../src/bridge/recipe';
import { presetConfig } from '../src/sat/presets';

const fixture = (f: string) => ({ name: f.split('/').pop()!, text: readFileSync(join(import.meta.dirname, 'fixtures/bridge/logs', f), 'utf8') });

describe('generation dumps', () => {
  it('verl\'s and TeamTR\'s read to their rows, agents from the turn markers', () => {
    const verl = readGenerations([fixture('verl-generations/3.jsonl')]);
    expect(verl.rows.map((r) => [r.step, r.output, r.score, r.groundTruth, r.agent])).toEqual([
      [3, '7', 1, '7', null],
      [3, 'The answer is 7.', 0, '7', null],
      [3, '9', 1, '9', null],
      [3, '2', null, '2', null],
    ]);
    expect(verl.warnings).toEqual(['3.jsonl line 4: its score is not a number; the row is kept without one.']);
    expect(verl.agents).toBe(0);
    const team = readGenerations([fixture('teamtr-generations/2.jsonl')]);
    expect(team.rows.map((r) => [r.agent, r.output, r.groundTruth])).toEqual([[0, '7', null], [1, '7', null], [2, '7', null], [0, '8', null], [1, 'é 7<sep>', null], [2, '7', null]]);
    expect([team.agents, team.steps]).toEqual([3, [2]]);
    expect(generationSummary(team).map((s) => [s.step, s.agent, s.rows, s.meanScore])).toEqual([[2, 0, 2, 1], [2, 1, 2, 1], [2, 2, 2, 1]]);
    const both = readGenerations([fixture('teamtr-generations/2.jsonl'), fixture('verl-generations/3.jsonl')]);
    expect(both.steps).toEqual([2, 3]);
    expect(generationSummary(both).find((s) => s.agent === null)!.meanScore).toBeCloseTo(2 / 3, 12);
    expect([isGenerationDump(fixture('verl-generations/3.jsonl').text), isGenerationDump(fixture('verl-file.jsonl').text), isGenerationDump('')]).toEqual([true, false, false]);
  });

  it('names the agent of every turn of random chain episodes prompted as the exported rollout does', () => {
    const task = LLM_TASKS.countdown.make({ seed: 3, level: 2 });
    const rng = new Rng(7, [1]);
    const words = ['7', '3+4', '<sep>', '<a2>', 'é', ' ', '12-5', 'x<a0>'];
    const lines: string[] = [];
    const want: number[] = [];
    for (let e = 0; e < 300; e++) {
      const p0 = task.generate('train', e);
      const p = { ...p0, prompt: promptText('countdown', p0, 'extract') };
      const spec = { protocol: 'chain' as const, nAgents: 2 + rng.int(3) };
      const messages: Message[] = [];
      for (let slots = nextTurn(spec, p, messages); slots.length > 0; slots = nextTurn(spec, p, messages)) {
        const s = slots[0]!;
        const reply = Array.from({ length: rng.int(4) }, () => words[rng.int(words.length)]).join('');
        lines.push(JSON.stringify({ input: `system\nuser\n${s.context}\nassistant\n`, output: reply, score: rng.int(2), step: 1 + (e % 3) }));
        want.push(s.agent);
        messages.push({ turn: s.turn, agent: s.agent, text: reply });
      }
    }
    const dump = readGenerations([{ name: 'x.jsonl', text: lines.join('\n') }]);
    const byStep = [1, 2, 3].flatMap((st) => lines.map((l, i) => [JSON.parse(l).step, want[i]] as const).filter(([s]) => s === st).map(([, a]) => a));
    expect(dump.rows.map((r) => r.agent)).toEqual(byStep);
    expect(new Set(want).size).toBeGreaterThan(2);
    expect(agentOfPrompt('no marker')).toBeNull();
  });

  it('pages and filters keep what they say', () => {
    const dump = readGenerations([fixture('teamtr-generations/2.jsonl'), fixture('verl-generations/3.jsonl')]);
    expect(generationPage(dump, { agent: 1 }).rows.map((r) => r.output)).toEqual(['7', 'é 7<sep>']);
    expect(generationPage(dump, { step: 3, text: 'ANSWER' }).rows.map((r) => r.output)).toEqual(['The answer is 7.']);
    const pages = [0, 1, 2, 9].map((page) => generationPage(dump, { size: 4, page }));
    expect(pages.map((p) => [p.rows.length, p.total, p.pages])).toEqual([[4, 10, 3], [4, 10, 3], [2, 10, 3], [2, 10, 3]]);
  });

  it('a bad line is named, a file with no row or over the caps refused; the input door\'s job gives the same', async () => {
    const ok = '{"input": "a<a1>", "output": "b", "score": 1.0, "step": 4}';
    const mixed = readGenerations([{ name: 'm.jsonl', text: `${ok}\nnot json\n{"input": 1}\n{"input": "p", "output": "q", "score": Infinity, "step": 4}` }]);
    expect(mixed.rows.map((r) => [r.agent, r.score])).toEqual([[1, 1], [null, null]]);
    expect(mixed.warnings).toEqual(['m.jsonl line 2: not JSON.', 'm.jsonl line 3: not a {"input", "output", "step", …} record.', 'm.jsonl line 4: its score is not a number; the row is kept without one.']);
    expect(() => readGenerations([{ name: 'e.jsonl', text: 'hello\n' }])).toThrow(/“e\.jsonl” holds no generation row .* First problem: e\.jsonl line 1: not JSON\. Nothing was read\./);
    const parse = vi.spyOn(JSON, 'parse');
    expect(() => readGenerations([{ name: 'big.jsonl', text: `${ok}\n`.repeat(2_000_001) }])).toThrow(FormatError);
    expect(parse).not.toHaveBeenCalled();
    parse.mockRestore();
    const { name, text } = fixture('teamtr-generations/2.jsonl');
    const door = await runJob('generations', [{ name, source: new Blob([text]) }]);
    expect(door).toEqual({ ok: true, value: readGenerations([fixture('teamtr-generations/2.jsonl')]) });
    expect(await runJob('generations', [{ name: 'e.jsonl', source: new TextEncoder().encode('{}') }])).toMatchObject({ ok: false, errorClass: 'FormatError' });
  });

  it('the verl and TeamTR exports have their trainers write the dumps beside the run', () => {
    const r = recipe(presetConfig('arith-team'), DEFAULT_MODELS, 1, 'team.sat.yaml');
    for (const e of [r.engines.verl, r.engines.teamtr]) {
      expect(e.ok && e.overrides, e.engine).toEqual(expect.arrayContaining(['trainer.rollout_data_dir=$PWD/team.generations/train', 'trainer.validation_data_dir=$PWD/team.generations/val']));
    }
  });
});
