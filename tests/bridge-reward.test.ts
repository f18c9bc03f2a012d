/**
 * The exported reward module (src/bridge/rewardPy.ts) is the playground's verifier: python3 runs
 * it (standard library only) on every episode of short real playground runs — both language
 * tasks, all four protocols, with and without a format reward — and on adversarial answers
 * (markers, Unicode spaces, leading zeros, "-0", deep parentheses, overflowing products, overlong
 * text), and must give exactly the rewards the TypeScript verifiers gave. Fails when either drifts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { parseConfig, type Config } from '../src/sat/config';
import { runStages } from '../src/sat/experiment';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import type { LmEnv } from '../src/sat/env/lm';
import { cleanMessage, LLM_TASKS, type LlmTaskName, type Problem } from '../src/tasks/llm/index';
import { rewardModule } from '../src/bridge/rewardPy';
import { dataSource, groundTruth } from '../src/bridge/taskData';

const load = async (name: string) => new Uint8Array(readFileSync(join(import.meta.dirname, '../public/models', `${name}.safetensors`)));

interface Job {
  episodes: { protocol: string; n_agents: number; messages: string[]; ground_truth: string }[];
  answers: [string, string, string][];
}

/** Runs the exported module for `task` on `job` with python3. */
function python(task: LlmTaskName, formatReward: number, job: Job): { team: number[]; single: number[] } {
  const dir = mkdtempSync(join(tmpdir(), 'sat-reward-'));
  const file = join(dir, 'reward.py');
  writeFileSync(file, rewardModule(task, formatReward));
  const r = spawnSync('python3', [file], { input: JSON.stringify(job), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw new Error(`python3 could not be run (${r.error.message}); the reward parity test needs python3 on the PATH.`);
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/** Answers meant to break a second implementation of the verifiers. */
function adversarial(p: Problem, rng: Rng): string[] {
  const chars = '0123456789+-*() ,>:=<a0>1<sep><eos>\t\n\u00a0\u2003\ufeff\u200bé𝟘x';
  const rand = Array.from({ length: 40 }, () => Array.from({ length: 1 + rng.int(14) }, () => chars[rng.int(chars.length)]).join(''));
  const nums = (p.meta.numbers as number[] | undefined) ?? [];
  const [a, b, c] = nums.map(String);
  return [
    p.answer, ` ${p.answer} `, `\ufeff${p.answer}\u3000`, `${p.answer}<eos>junk`, `${p.answer}<a1>`, `\u200b${p.answer}`, `\u001c${p.answer}`,
    '-0', '0', '007', '-', '', '   ', '1234567890123', '-999999999999', 'x'.repeat(257), ' '.repeat(300) + p.answer, `${p.answer}${' '.repeat(300)}`,
    '(((((((((((((((((1)))))))))))))))))', '((((((((((((((((1))))))))))))))))', '9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999*9999-9999*9999',
    ...(a && b ? [`${a}+${b}`, `${a}*${b}`, `${a}-${b}`, `(${a}+${b})`, `${a} + ${b}`, `0${a}+${b}`, `${a}+${a}`, `${a}+${b}+${c ?? a}`, `${c ?? a}-(${a}-${b})`, `${a}*(${b}+${c ?? b})`, `${a}+`, `)${a}(`] : []),
    ...rand,
  ];
}

const RUNS: { task: LlmTaskName; level: number; protocol: string; formatReward: number }[] = [
  { task: 'arithmetic', level: 1, protocol: 'chain', formatReward: 0 },
  { task: 'arithmetic', level: 2, protocol: 'vote', formatReward: 0.25 },
  { task: 'arithmetic', level: 3, protocol: 'router', formatReward: 0 },
  { task: 'arithmetic', level: 4, protocol: 'independent', formatReward: 0.1 },
  { task: 'countdown', level: 1, protocol: 'independent', formatReward: 0.3 },
  { task: 'countdown', level: 2, protocol: 'chain', formatReward: 0 },
  { task: 'countdown', level: 3, protocol: 'vote', formatReward: 0.5 },
  { task: 'countdown', level: 2, protocol: 'router', formatReward: 0.2 },
];

describe('reward.py gives exactly the TypeScript verifiers\' rewards', () => {
  it.each(RUNS)('$task level $level, $protocol, format reward $formatReward: every episode of a short run and every adversarial answer', async ({ task, level, protocol, formatReward }) => {
    const cfg: Config = parseConfig({ task, level, protocol, formatReward, model: 'S', agents: 3, stages: 1, batch: 6, group: 4, maxNew: task === 'countdown' ? 10 : 4, evalEpisodes: 8, certEpisodes: 8, probeEpisodes: 4, geoIters: 0, epochs: 1, seed: level * 7 + formatReward * 100 });
    const exp = await createLlmExperiment(cfg, load);
    await runStages(exp, 1);
    const episodes = (exp.env as LmEnv).lastEpisodes;
    expect(episodes.length).toBe(cfg.batch * cfg.group);
    const verifier = LLM_TASKS[task].make({ seed: cfg.taskSeed, level, formatReward });
    const job: Job = { episodes: [], answers: [] };
    const want: { team: number[]; single: number[] } = { team: [], single: [] };
    const rng = new Rng(level, [protocol.length]);
    for (const e of episodes) {
      const gt = groundTruth(task, e.problem);
      job.episodes.push({ protocol, n_agents: cfg.agents, messages: e.messages.map((m) => m.text), ground_truth: gt });
      want.team.push(e.reward);
      for (const text of [...e.messages.map((m) => m.text), ...adversarial(e.problem, rng)]) {
        job.answers.push([dataSource(task), text, gt]);
        want.single.push(verifier.verify(e.problem, cleanMessage(text)).reward);
      }
    }
    const got = python(task, formatReward, job);
    expect(got.team).toEqual(want.team);
    expect(got.single).toEqual(want.single);
    // The run is not trivial: its rewards take more than one value somewhere.
    expect(new Set([...want.team, ...want.single]).size).toBeGreaterThan(1);
  });

  it('compute_score refuses rows of another data source by name', () => {
    const p = LLM_TASKS.arithmetic.make({ seed: 1, level: 1 }).generate('train', 0);
    const dir = mkdtempSync(join(tmpdir(), 'sat-reward-'));
    writeFileSync(join(dir, 'reward.py'), rewardModule('arithmetic', 0));
    const r = spawnSync('python3', ['-c', `import sys; sys.path.insert(0, ${JSON.stringify(dir)}); import reward; reward.compute_score("openai/gsm8k", "1", ${JSON.stringify(groundTruth('arithmetic', p))})`], { encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/reward.py grades sat-playground\/arithmetic rows, got data_source 'openai\/gsm8k'/);
  });
});
