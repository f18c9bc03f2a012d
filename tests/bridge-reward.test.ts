/**
 * The exported reward module (src/bridge/rewardPy.ts) is the playground's verifier: python3 runs
 * it (standard library only) on every episode of short real playground runs — both language
 * tasks, all four protocols, with and without a format reward — and on adversarial answers
 * (markers, Unicode spaces, leading zeros, "-0", deep parentheses, overflowing products, overlong
 * text), and must give exactly the rewards the TypeScript verifiers gave. Fails when either drifts.
 * The `rewardMode` extract mode (src/bridge/answer.ts) is held the same way: on thousands of random
 * worded replies (\boxed{}, ####, numbers with commas and decimals, markers, several lines), both
 * modes, every protocol, python3's extracted answer and rewards equal the TypeScript ones.
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
import { extractAnswer, withRewardMode, type RewardMode } from '../src/bridge/answer';
import { teamVerdict, type Message, type Protocol } from '../src/tasks/llm/index';
import { dataSource, groundTruth } from '../src/bridge/taskData';

const load = async (name: string) => new Uint8Array(readFileSync(join(import.meta.dirname, '../public/models', `${name}.safetensors`)));

interface Job {
  episodes: { protocol: string; n_agents: number; messages: string[]; ground_truth: string }[];
  answers: [string, string, string][];
}

/** Runs the exported module for `task` on `job` with python3. */
function python(task: LlmTaskName, formatReward: number, job: Job, mode: RewardMode = 'strict'): { team: number[]; single: number[]; extracted: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'sat-reward-'));
  const file = join(dir, 'reward.py');
  writeFileSync(file, rewardModule(task, formatReward, mode));
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

/** A random reply an instruct model might write: words, numbers, \boxed{}, ####, lines, markers, the answer somewhere. */
function wordedReply(p: Problem, rng: Rng): string {
  const nums = ((p.meta.numbers as number[] | undefined) ?? [p.meta.a as number, p.meta.b as number]).map(String);
  const pick = <T>(xs: readonly T[]) => xs[rng.int(xs.length)]!;
  const num = () => pick([String(rng.int(2000) - 1000), `${rng.int(9) + 1},${String(rng.int(1000)).padStart(3, '0')}`, `${rng.int(100)}.${pick(['0', '00', '5', '25'])}`, p.answer, `-${p.answer}`, pick(nums)]);
  const expr = () => (nums.length >= 2 ? `${pick(nums)}${pick(['+', '-', '*'])}${pick(nums)}${rng.int(2) ? `${pick(['+', '-'])}${pick(nums)}` : ''}` : num());
  const pieces = [
    () => pick(['The answer is', 'So', 'we get', 'Let me compute:', 'Result', 'therefore', '=', ':', '.', ',', 'é𝟘', '\u00a0', '\u2003', '<sep>', '<a1>', '<eos>', '{', '}', '\\boxed', '##', '###']),
    num,
    expr,
    () => `\\boxed{${pick([p.answer, num(), expr(), `${expr()} = ${pick([p.answer, num()])}`, `{${num()}}`, ''])}}`,
    () => `\\boxed{${num()}`,
    () => `#### ${pick([p.answer, num(), expr(), `${expr()}=${num()}`])}`,
    () => `${expr()} = ${pick([p.answer, num()])}${pick(['', '.', ' .'])}`,
    () => pick(['\n', '\n\n', ' \n ', '\t']),
    () => p.answer,
  ];
  return Array.from({ length: 1 + rng.int(9) }, () => pick(pieces)()).join(pick([' ', '', ' ', '\n']));
}

describe('rewardMode: reward.py extracts and grades exactly as the TypeScript verifier does', () => {
  const PROTOCOLS: readonly Protocol[] = ['independent', 'chain', 'vote', 'router'];
  it.each([
    { task: 'arithmetic' as LlmTaskName, level: 2, formatReward: 0 },
    { task: 'arithmetic' as LlmTaskName, level: 4, formatReward: 0.2 },
    { task: 'countdown' as LlmTaskName, level: 2, formatReward: 0 },
    { task: 'countdown' as LlmTaskName, level: 3, formatReward: 0.3 },
  ])('$task level $level, format reward $formatReward: 3,000 random replies and 800 episodes in both modes', ({ task, level, formatReward }) => {
    const verifier = LLM_TASKS[task].make({ seed: 5, level, formatReward });
    for (const mode of ['strict', 'extract'] as const) {
      const graded = withRewardMode(verifier, mode);
      const rng = new Rng(level, [mode.length, formatReward * 10]);
      const job: Job = { episodes: [], answers: [] };
      const want = { team: [] as number[], single: [] as number[], extracted: [] as string[] };
      for (let i = 0; i < 3000; i++) {
        const p = verifier.generate('train', i % 200);
        const text = wordedReply(p, rng);
        const gt = groundTruth(task, p);
        job.answers.push([dataSource(task), text, gt]);
        want.single.push(graded.verify(p, cleanMessage(text)).reward);
        want.extracted.push(extractAnswer(task, cleanMessage(text), mode));
      }
      for (let i = 0; i < 800; i++) {
        const p = verifier.generate('heldout', i % 100);
        const protocol = PROTOCOLS[i % 4]!;
        const n = 2 + rng.int(3);
        const agents = protocol === 'chain' ? Array.from({ length: n }, (_, a) => a) : protocol === 'vote' ? Array.from({ length: n }, (_, a) => a) : protocol === 'independent' ? [0] : [0, 1 + rng.int(n - 1)];
        const messages: Message[] = agents.map((agent, k) => ({ turn: protocol === 'vote' ? 0 : k, agent, text: protocol === 'router' && k === 0 ? ` ${agents[1]}` : wordedReply(p, rng) }));
        job.episodes.push({ protocol, n_agents: n, messages: messages.map((m) => m.text), ground_truth: groundTruth(task, p) });
        want.team.push(teamVerdict({ protocol, nAgents: n }, graded, p, messages).reward);
      }
      const got = python(task, formatReward, job, mode);
      expect(got.extracted).toEqual(want.extracted);
      expect(got.single).toEqual(want.single);
      expect(got.team).toEqual(want.team);
      // The replies are not trivial: in extract mode some score 1 that strict grading scores 0.
      if (mode === 'extract') expect(want.single.filter((r) => r === 1).length).toBeGreaterThan(300);
    }
  });

  it('an instruct reply scores only in extract mode; a bare answer scores in both', () => {
    const p = LLM_TASKS.arithmetic.make({ seed: 1, level: 1 }).generate('train', 0);
    const gt = groundTruth('arithmetic', p);
    const replies = [`The answer is ${p.answer}.`, `${p.meta.a} + ${p.meta.b} = \\boxed{${p.answer}}`, `#### ${p.answer}`, p.answer];
    const job: Job = { episodes: [], answers: replies.map((r) => [dataSource('arithmetic'), r, gt]) };
    expect(python('arithmetic', 0, job, 'strict').single).toEqual([0, 0, 0, 1]);
    expect(python('arithmetic', 0, job, 'extract').single).toEqual([1, 1, 1, 1]);
  });
});
