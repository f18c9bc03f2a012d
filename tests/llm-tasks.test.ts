/**
 * Tests for the language-model tasks and the team protocols: generators are pure functions of
 * (seed, split, index) and keep train and held-out disjoint; reference answers verify, wrong ones
 * do not; verifiers survive any string; prompts and answers fit their limits and the alphabet;
 * the protocols build the documented contexts, schedules and team answers on hand-made messages.
 * Seeds are fixed: tasks use seeds 1, 2 and 7; adversarial strings come from Rng(99).
 *
 * Not here: model calls or training on these tasks.
 */

import { describe, expect, it } from 'vitest';
import { ConfigError, FormatError } from '../src/core/errors';
import { Rng } from '../src/core/rng';
import { arithmetic, verifyInteger } from '../src/tasks/llm/arithmetic';
import { countdown, evaluate, parseExpression, printExpr, solveCountdown, verifyCountdown } from '../src/tasks/llm/countdown';
import { LLM_TASK_NAMES, LLM_TASKS, generateMany, isLlmTaskName, makeLlmTask } from '../src/tasks/llm/index';
import {
  MAX_AGENTS,
  activeAgents,
  buildContext,
  cleanMessage,
  contextTokenCount,
  formatTranscript,
  nextTurn,
  parseRoute,
  protocolHorizon,
  splitSpecial,
  tallyVotes,
  teamVerdict,
} from '../src/tasks/llm/protocols';
import type { Message, TeamSpec } from '../src/tasks/llm/protocols';
import { LLM_ALPHABET, isAlphabetText, splitOfKey } from '../src/tasks/llm/types';
import type { LlmTask, Problem, Split } from '../src/tasks/llm/types';

// ---------------------------------------------------------------------------------------------
// Every task at every level
// ---------------------------------------------------------------------------------------------

interface Case {
  readonly label: string;
  readonly make: (seed: number) => LlmTask;
}

const CASES: Case[] = [
  ...[1, 2, 3, 4].map((level) => ({ label: `arithmetic l${level}`, make: (seed: number) => arithmetic({ seed, level }) as LlmTask })),
  ...[1, 2, 3].map((level) => ({ label: `countdown l${level}`, make: (seed: number) => countdown({ seed, level }) as LlmTask })),
];

/** Adversarial answers: garbage, huge, unicode, control chars, near misses, markers. */
function adversarialStrings(): unknown[] {
  const rng = new Rng(99);
  const fixed: unknown[] = [
    '',
    ' ',
    '\n\t',
    '-',
    '--5',
    '+5',
    '5-',
    '1e3',
    '0x1f',
    'NaN',
    'Infinity',
    '3.0',
    '١٢',
    '１２',
    '12\u0000',
    '😀',
    '\ud800',
    'é',
    '((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))',
    '('.repeat(200),
    ')'.repeat(200),
    '9'.repeat(200),
    '9'.repeat(5000),
    '1+'.repeat(3000),
    'x'.repeat(1_000_000),
    '<a1>',
    '<eos>',
    'constructor',
    '__proto__',
    'toString',
    '3*(5+7',
    '3*5+7)',
    '()',
    '3**5',
    '3 5',
    'eval(1)',
    null,
    undefined,
    42,
    {},
    [],
  ];
  const chars = `${LLM_ALPHABET}()<>\u00e9\u4e2d😀\n\t\\"'`;
  const random = Array.from({ length: 400 }, () => {
    const len = rng.int(20);
    let s = '';
    for (let i = 0; i < len; i++) s += [...chars][rng.int([...chars].length)];
    return s;
  });
  return [...fixed, ...random];
}

describe.each(CASES)('$label', ({ make }) => {
  const task = make(1);

  it('is a pure function of (seed, split, index)', () => {
    const again = make(1);
    const other = make(2);
    let differ = 0;
    for (const split of ['train', 'heldout'] as Split[]) {
      for (let i = 0; i < 200; i++) {
        const p = task.generate(split, i);
        expect(again.generate(split, i)).toEqual(p);
        expect(task.generate(split, i)).toEqual(p); // no hidden state
        expect(p.split).toBe(split);
        expect(p.index).toBe(i);
        if (other.generate(split, i).prompt !== p.prompt) differ++;
      }
    }
    expect(differ).toBeGreaterThan(0); // the seed matters
    expect(new Set(Array.from({ length: 200 }, (_, i) => task.generate('train', i).id)).size).toBe(200);
  });

  it('keeps train and held-out disjoint (5k train vs 1k held-out canonical problems)', () => {
    const train = new Set(generateMany(task, 'train', 0, 5000).map((p) => p.key));
    const held = new Set(generateMany(task, 'heldout', 0, 1000).map((p) => p.key));
    expect(held.size).toBeGreaterThan(0);
    for (const k of held) expect(train.has(k)).toBe(false);
    // The split does not depend on the seed: another seed's held-out keys are held out here too.
    for (const p of generateMany(make(7), 'heldout', 0, 500)) {
      expect(train.has(p.key)).toBe(false);
      expect(splitOfKey(task.name, p.key, task.heldoutFraction)).toBe('heldout');
    }
  });

  it('verifies every reference answer as correct, and respects lengths and the alphabet', () => {
    for (const split of ['train', 'heldout'] as Split[]) {
      for (let i = 0; i < 2000; i++) {
        const p = task.generate(split, i);
        const v = task.verify(p, p.answer);
        expect(v, `${p.prompt}${p.answer}`).toMatchObject({ reward: 1, correct: true });
        expect(v.reason).toBeUndefined();
        expect(task.verify(p, `  ${p.answer} `).correct).toBe(true);
        expect(p.prompt.length).toBeLessThanOrEqual(task.maxPromptChars);
        expect(p.answer.length).toBeLessThanOrEqual(task.maxAnswerChars);
        expect(p.answer.length).toBeGreaterThan(0);
        expect(isAlphabetText(p.prompt), p.prompt).toBe(true);
        expect(isAlphabetText(p.answer), p.answer).toBe(true);
      }
    }
  });

  it('fits a 64-token context even at the end of a 4-agent chain of longest answers', () => {
    const p = task.generate('train', 0);
    const longest = 'x'.repeat(task.maxAnswerChars);
    const earlier = [0, 1, 2].map((agent) => ({ turn: agent, agent, text: longest }));
    const ctx = buildContext('9'.repeat(task.maxPromptChars), earlier, 3);
    expect(ctx.startsWith('9')).toBe(true);
    expect(contextTokenCount(ctx) + task.maxAnswerChars + 1).toBeLessThanOrEqual(64); // + answer + <eos>
    expect(p.prompt.length).toBeLessThanOrEqual(task.maxPromptChars);
  });

  it('never throws on adversarial answers, and scores them 0 with a reason', () => {
    const problems = generateMany(task, 'heldout', 0, 5);
    for (const p of problems) {
      for (const s of adversarialStrings()) {
        const v = task.verify(p, s as string);
        expect(v.reward).toBeGreaterThanOrEqual(0);
        expect(v.reward).toBeLessThanOrEqual(1);
        if (!v.correct) {
          expect(v.reward).toBe(0); // formatReward is 0 by default
          expect(typeof v.reason).toBe('string');
          expect(v.reason!.length).toBeGreaterThan(0);
        }
      }
    }
  });
});

describe('task options and registry', () => {
  it('rejects bad options with ConfigError', () => {
    expect(() => arithmetic({ seed: 1, level: 5 })).toThrow(ConfigError);
    expect(() => arithmetic({ seed: 1, level: 0 })).toThrow(ConfigError);
    expect(() => countdown({ seed: 1, level: 4 })).toThrow(ConfigError);
    expect(() => arithmetic({ seed: -1 })).toThrow(ConfigError);
    expect(() => arithmetic({ seed: 1, formatReward: 1 })).toThrow(ConfigError);
    expect(() => countdown({ seed: 1, heldoutFraction: 0 })).toThrow(ConfigError);
    const t = arithmetic({ seed: 1 });
    expect(() => t.generate('train', -1)).toThrow(ConfigError);
    expect(() => t.generate('train', 1.5)).toThrow(ConfigError);
    expect(() => t.generate('test' as Split, 0)).toThrow(ConfigError);
  });

  it('builds every registered task at every level', () => {
    expect(LLM_TASK_NAMES).toEqual(['arithmetic', 'countdown']);
    for (const name of LLM_TASK_NAMES) {
      const info = LLM_TASKS[name];
      expect(info.levels.length).toBe(info.maxLevel);
      for (let level = 1; level <= info.maxLevel; level++) {
        const t = makeLlmTask(name, { seed: 3, level });
        expect(t.name).toBe(name);
        expect(t.level).toBe(level);
        expect(t.rewardRange).toEqual([0, 1]);
      }
      expect(makeLlmTask(name, { seed: 3 }).level).toBe(info.defaultLevel);
    }
    expect(isLlmTaskName('arithmetic')).toBe(true);
    expect(isLlmTaskName('blocks')).toBe(false);
    expect(() => makeLlmTask('nope' as never, { seed: 1 })).toThrow(ConfigError);
  });

  it('throws FormatError when verifying a problem of another task', () => {
    const a = arithmetic({ seed: 1 });
    const c = countdown({ seed: 1 });
    expect(() => c.verify(a.generate('train', 0) as never, '1')).toThrow(FormatError);
    expect(() => a.verify(c.generate('train', 0) as never, '1')).toThrow(FormatError);
  });
});

// ---------------------------------------------------------------------------------------------
// Arithmetic
// ---------------------------------------------------------------------------------------------

describe('arithmetic', () => {
  it('writes prompts like "12+34=" with the operations of each level', () => {
    const opsAt = (level: number): Set<string> => new Set(generateMany(arithmetic({ seed: 1, level }), 'train', 0, 500).map((p) => String(p.meta.op)));
    expect(opsAt(1)).toEqual(new Set(['+']));
    expect(opsAt(2)).toEqual(new Set(['+', '-']));
    expect(opsAt(3)).toEqual(new Set(['+', '-', '*']));
    expect(opsAt(4)).toEqual(new Set(['+', '-', '*']));
    for (const level of [1, 2, 3, 4]) {
      for (const p of generateMany(arithmetic({ seed: 2, level }), 'train', 0, 500)) {
        const m = /^(\d+)([-+*])(\d+)=$/.exec(p.prompt);
        expect(m, p.prompt).not.toBeNull();
        const a = Number(m![1]);
        const b = Number(m![3]);
        const value = m![2] === '+' ? a + b : m![2] === '-' ? a - b : a * b;
        expect(p.answer).toBe(String(value));
        const maxA = level === 1 ? 9 : m![2] === '*' ? (level === 3 ? 9 : 99) : level === 4 ? 999 : 99;
        const maxB = level === 1 ? 9 : m![2] === '*' ? 9 : level === 4 ? 999 : 99;
        expect(a).toBeLessThanOrEqual(maxA);
        expect(b).toBeLessThanOrEqual(maxB);
      }
    }
    // Negative answers appear from level 2 on.
    expect(generateMany(arithmetic({ seed: 1, level: 2 }), 'train', 0, 200).some((p) => p.answer.startsWith('-'))).toBe(true);
  });

  it('puts 3+4 and 4+3 in the same split (commutative key)', () => {
    const t = arithmetic({ seed: 1, level: 1 });
    const seen = new Map<string, string>();
    for (const split of ['train', 'heldout'] as Split[]) {
      for (const p of generateMany(t, split, 0, 1000)) seen.set(p.prompt, split);
    }
    for (const [prompt, split] of seen) {
      const [a, b] = prompt.slice(0, -1).split('+');
      const swapped = `${b}+${a}=`;
      if (seen.has(swapped)) expect(seen.get(swapped)).toBe(split);
    }
  });

  it('scores wrong answers as wrong, with the format reward when set', () => {
    const t = arithmetic({ seed: 1, level: 4 });
    const tf = arithmetic({ seed: 1, level: 4, formatReward: 0.1 });
    for (const p of generateMany(t, 'heldout', 0, 300)) {
      const v = Number(p.answer);
      for (const wrong of [v + 1, v - 1, -v - 1, v * 10 + 1]) {
        expect(t.verify(p, String(wrong))).toMatchObject({ reward: 0, correct: false, parsed: String(wrong) });
        expect(tf.verify(p, String(wrong))).toMatchObject({ reward: 0.1, correct: false });
      }
      expect(tf.verify(p, `${p.answer}x`)).toMatchObject({ reward: 0, correct: false });
      expect(tf.verify(p, p.answer).reward).toBe(1);
    }
  });

  it('reads integers the documented way', () => {
    expect(verifyInteger(7, '07', 0)).toMatchObject({ correct: true, parsed: '7' });
    expect(verifyInteger(0, '-0', 0)).toMatchObject({ correct: true, parsed: '0' });
    expect(verifyInteger(-7, ' -7\n', 0).correct).toBe(true);
    expect(verifyInteger(7, '7.0', 0).reason).toMatch(/unexpected "\." at position 1/);
    expect(verifyInteger(7, '', 0).reason).toBe('empty answer');
    expect(verifyInteger(7, '-', 0).reason).toMatch(/lone/);
    expect(verifyInteger(7, '1234567890123', 0).reason).toMatch(/12 digits/);
    expect(verifyInteger(7, '7😀', 0).reason).toMatch(/U\+1F600/);
    expect(verifyInteger(7, null, 0).reason).toMatch(/null/);
  });
});

// ---------------------------------------------------------------------------------------------
// Countdown
// ---------------------------------------------------------------------------------------------

describe('countdown', () => {
  it('writes prompts like "3,5,7>22:" with solvable targets in 1..99 that need an operation', () => {
    for (const level of [1, 2, 3]) {
      const t = countdown({ seed: 2, level });
      for (const p of generateMany(t, 'train', 0, 500)) {
        const m = /^([\d,]+)>(\d+):$/.exec(p.prompt);
        expect(m, p.prompt).not.toBeNull();
        const numbers = m![1]!.split(',').map(Number);
        const target = Number(m![2]);
        expect(numbers).toEqual(p.meta.numbers);
        expect(target).toBe(p.meta.target);
        expect(numbers.length).toBe(level === 1 ? 2 : 3);
        expect(Math.max(...numbers)).toBeLessThanOrEqual(level === 3 ? 12 : 9);
        expect(Math.min(...numbers)).toBeGreaterThanOrEqual(1);
        expect(target).toBeGreaterThanOrEqual(1);
        expect(target).toBeLessThanOrEqual(99);
        expect(numbers).not.toContain(target);
        expect(solveCountdown(numbers, target)).toBe(p.answer); // the reference is a function of the prompt
      }
    }
  });

  it('parses with precedence and prints with minimal parentheses', () => {
    const read = (s: string) => {
      const r = parseExpression(s);
      if ('error' in r) throw new Error(r.error);
      return r.expr;
    };
    expect(evaluate(read('3*5+7'))).toBe(22);
    expect(evaluate(read('3+5*7'))).toBe(38);
    expect(evaluate(read('(3+5)*7'))).toBe(56);
    expect(evaluate(read('9-3-2'))).toBe(4); // left associative
    expect(evaluate(read('9-(3-2)'))).toBe(8);
    expect(evaluate(read(' 2 * ( 3 + 4 ) '))).toBe(14);
    expect(printExpr(read('((3)+(5))'))).toBe('3+5');
    expect(printExpr(read('9-(3-2)'))).toBe('9-(3-2)');
    expect(printExpr(read('9-(3+2)'))).toBe('9-(3+2)');
    expect(printExpr(read('9+(3-2)'))).toBe('9+3-2');
    expect(printExpr(read('(9*3)*2'))).toBe('9*3*2');
    expect(printExpr(read('2*(3*4)'))).toBe('2*3*4');
    expect(printExpr(read('(2+3)*4'))).toBe('(2+3)*4');
    expect(parseExpression('3+')).toEqual({ error: 'expected a number or "(" but found end of answer' });
    expect(parseExpression('3)')).toEqual({ error: 'unexpected ")" at position 1 after a complete expression' });
    expect(parseExpression('(3')).toEqual({ error: 'expected ")" but found end of answer' });
    expect(parseExpression('3/4')).toEqual({ error: 'unexpected "/" at position 1' });
    expect('error' in parseExpression(`${'('.repeat(17)}1${')'.repeat(17)}`)).toBe(true);
    expect('error' in parseExpression(`${'('.repeat(16)}1${')'.repeat(16)}`)).toBe(false);
  });

  it('checks number usage and the target', () => {
    const v = (text: string, fr = 0) => verifyCountdown([3, 5, 7], 22, text, fr);
    expect(v('3*5+7')).toMatchObject({ reward: 1, correct: true, parsed: '3*5+7' });
    expect(v('7+5*3')).toMatchObject({ reward: 1, correct: true });
    expect(v('(5*3)+7')).toMatchObject({ reward: 1, correct: true, parsed: '5*3+7' });
    expect(v('3+5+7')).toMatchObject({ reward: 0, correct: false, reason: '3+5+7 = 15, not 22' });
    expect(v('3+5+7', 0.1)).toMatchObject({ reward: 0.1, correct: false });
    expect(v('3*5+7+7')).toMatchObject({ reward: 0, reason: '7 is used 2 times but given once' });
    expect(v('3*5+7+7', 0.1).reward).toBe(0); // illegal use earns no format reward
    expect(v('22')).toMatchObject({ reward: 0, reason: '22 is not one of the numbers 3,5,7' });
    expect(v('03*5+7')).toMatchObject({ reward: 0, reason: '03 is not one of the numbers 3,5,7' });
    expect(v('3*5+7=22').reason).toMatch(/unexpected "="/);
    expect(verifyCountdown([5, 5, 2], 12, '5+5+2', 0).correct).toBe(true); // repeated numbers may each be used
    expect(verifyCountdown([5, 2], 3, '5-2', 0).correct).toBe(true);
    expect(verifyCountdown([5, 2], 3, '2-5', 0).reason).toBe('2-5 = -3, not 3');
  });

  it('scores corrupted reference answers as wrong', () => {
    const t = countdown({ seed: 1, level: 3 });
    let checked = 0;
    for (const p of generateMany(t, 'heldout', 0, 300)) {
      // Swap the first operator for another: a legal expression with (usually) another value.
      const ops = ['+', '-', '*'];
      const at = [...p.answer].findIndex((c) => ops.includes(c));
      for (const op of ops) {
        const wrong = p.answer.slice(0, at) + op + p.answer.slice(at + 1);
        const r = parseExpression(wrong);
        if ('error' in r || evaluate(r.expr) === p.meta.target) continue;
        expect(t.verify(p, wrong)).toMatchObject({ reward: 0, correct: false });
        checked++;
      }
      expect(t.verify(p, `${p.answer}+${p.meta.numbers[0]}`).correct).toBe(false); // over-used or wrong
      expect(t.verify(p, String(p.meta.target)).correct).toBe(false);
    }
    expect(checked).toBeGreaterThan(300);
  });

  it('solves what it can and reports null otherwise', () => {
    expect(solveCountdown([3, 5, 7], 22)).toBe('3*5+7');
    expect(solveCountdown([8, 2, 5], 11)).toBe('8-2+5');
    expect(solveCountdown([2, 3, 4], 20)).toBe('(2+3)*4');
    expect(solveCountdown([1, 1, 1], 50)).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------
// Protocols
// ---------------------------------------------------------------------------------------------

describe('protocols', () => {
  const task = arithmetic({ seed: 1, level: 2 }) as LlmTask;
  const problem: Problem = { id: 'arithmetic-l2:heldout:0', split: 'heldout', index: 0, key: '+:12,34', prompt: '12+34=', answer: '46', meta: { level: 2, op: '+', a: 12, b: 34, value: 46 } };
  const msg = (turn: number, agent: number, text: string): Message => ({ turn, agent, text });

  it('builds contexts with literal markers', () => {
    expect(buildContext('12+34=', [], 2)).toBe('12+34=<a2>');
    expect(buildContext('12+34=', [msg(0, 0, '45'), msg(1, 1, '46<eos>junk')], 2)).toBe('12+34=<a0>45<sep><a1>46<sep><a2>');
    expect(cleanMessage('4<a1>6')).toBe('4');
    expect(splitSpecial('1+2=<a0>3<sep><a1>')).toEqual(['1+2=', '<a0>', '3', '<sep>', '<a1>']);
    expect(splitSpecial('<a9><b')).toEqual(['<a9><b']);
    expect(contextTokenCount('12+34=<a0>45<sep><a1>')).toBe(6 + 1 + 2 + 1 + 1);
    expect(() => buildContext('x', [], MAX_AGENTS)).toThrow(ConfigError);
  });

  it('independent: sample k is answered by agent k mod n alone', () => {
    for (let k = 0; k < 7; k++) {
      const spec: TeamSpec = { protocol: 'independent', nAgents: 3, sample: k };
      const slots = nextTurn(spec, problem, []);
      expect(slots).toEqual([{ turn: 0, agent: k % 3, context: `12+34=<a${k % 3}>` }]);
      const done = [msg(0, k % 3, k % 2 === 0 ? '46' : '47')];
      expect(nextTurn(spec, problem, done)).toEqual([]);
      const v = teamVerdict(spec, task, problem, done);
      expect(v).toMatchObject({ gradedAgent: k % 3, correct: k % 2 === 0, reward: k % 2 === 0 ? 1 : 0 });
    }
    expect(protocolHorizon({ protocol: 'independent', nAgents: 3 })).toBe(1);
  });

  it('chain: agent t speaks at turn t, sees everything before, and the last message is graded', () => {
    const spec: TeamSpec = { protocol: 'chain', nAgents: 3 };
    const msgs: Message[] = [];
    const texts = ['45', 'maybe 46', '46'];
    for (let t = 0; t < 3; t++) {
      const slots = nextTurn(spec, problem, msgs);
      expect(slots.map((s) => s.agent)).toEqual([t]);
      expect(activeAgents(spec, msgs)).toEqual([t]);
      msgs.push(msg(t, t, texts[t]!));
    }
    expect(nextTurn(spec, problem, msgs.slice(0, 2))[0]!.context).toBe('12+34=<a0>45<sep><a1>maybe 46<sep><a2>');
    expect(nextTurn(spec, problem, msgs)).toEqual([]);
    expect(teamVerdict(spec, task, problem, msgs)).toMatchObject({ correct: true, reward: 1, gradedAgent: 2, answer: '46' });
    // Only the last message counts.
    const wrongLast = [msg(0, 0, '46'), msg(1, 1, '46'), msg(2, 2, '45')];
    expect(teamVerdict(spec, task, problem, wrongLast)).toMatchObject({ correct: false, reward: 0, gradedAgent: 2 });
    expect(protocolHorizon(spec)).toBe(3);
  });

  it('vote: everyone answers the bare prompt; majority of parsed answers, ties to agent order', () => {
    const spec: TeamSpec = { protocol: 'vote', nAgents: 3 };
    expect(nextTurn(spec, problem, []).map((s) => s.context)).toEqual(['12+34=<a0>', '12+34=<a1>', '12+34=<a2>']);
    const votes = (texts: string[]) => teamVerdict(spec, task, problem, texts.map((t, i) => msg(0, i, t)));
    // Parsed answers vote: "046" and " 46" read as 46.
    expect(votes(['45', '046', ' 46'])).toMatchObject({ correct: true, gradedAgent: 1, answer: '046' });
    expect(votes(['45', '45', '46'])).toMatchObject({ correct: false, gradedAgent: 0, parsed: '45' });
    // Three-way tie → first agent's answer.
    expect(votes(['46', '45', '44'])).toMatchObject({ correct: true, gradedAgent: 0 });
    expect(votes(['44', '45', '46'])).toMatchObject({ correct: false, gradedAgent: 0 });
    // Unreadable answers do not vote.
    expect(votes(['abc', '', '46'])).toMatchObject({ correct: true, gradedAgent: 2 });
    expect(votes(['abc', '', '?'])).toMatchObject({ correct: false, reward: 0, gradedAgent: null, answer: null });
    expect(votes(['abc', '', '?']).reason).toMatch(/no agent gave a readable answer/);
    const v4 = teamVerdict({ protocol: 'vote', nAgents: 4 }, task, problem, ['45', '46', '46', '45'].map((t, i) => msg(0, i, t)));
    expect(v4).toMatchObject({ parsed: '45', gradedAgent: 0 }); // 2–2 tie: 45 was given first
    expect(tallyVotes(['1', undefined, '2', '2'])).toEqual([
      { parsed: '2', count: 2, agents: [2, 3] },
      { parsed: '1', count: 1, agents: [0] },
    ]);
    // A partial turn: the agents still to answer.
    expect(activeAgents(spec, [msg(0, 0, '46')])).toEqual([1, 2]);
  });

  it('router: agent 0 names a solver with one char; only that solver answers', () => {
    const spec: TeamSpec = { protocol: 'router', nAgents: 3 };
    expect(nextTurn(spec, problem, [])).toEqual([{ turn: 0, agent: 0, context: '12+34=<a0>' }]);
    const routed = [msg(0, 0, '2')];
    expect(nextTurn(spec, problem, routed)).toEqual([{ turn: 1, agent: 2, context: '12+34=<a2>' }]);
    expect(teamVerdict(spec, task, problem, [...routed, msg(1, 2, '46')])).toMatchObject({ correct: true, reward: 1, route: 2, gradedAgent: 2 });
    expect(teamVerdict(spec, task, problem, [msg(0, 0, ' 1 '), msg(1, 1, '40')])).toMatchObject({ correct: false, route: 1, gradedAgent: 1 });
    for (const bad of ['0', '3', '12', 'a', '', ' ', '1<a1>']) {
      // '1<a1>' is cut to '1' by cleanMessage, so it is a valid route; the rest end the episode.
      const m = [msg(0, 0, bad)];
      if (bad === '1<a1>') {
        expect(activeAgents(spec, m)).toEqual([1]);
        continue;
      }
      expect(nextTurn(spec, problem, m)).toEqual([]);
      const v = teamVerdict(spec, task, problem, m);
      expect(v).toMatchObject({ reward: 0, correct: false, route: null, gradedAgent: null });
      expect(v.reason).toMatch(/does not name a solver: expected one of 1, 2/);
    }
    expect(parseRoute('3', 4)).toEqual({ solver: 3 });
    expect(protocolHorizon(spec)).toBe(2);
    expect(() => protocolHorizon({ protocol: 'router', nAgents: 1 })).toThrow(ConfigError);
  });

  it('rejects message sets that break the protocol, and unfinished episodes', () => {
    expect(() => nextTurn({ protocol: 'chain', nAgents: 2 }, problem, [msg(0, 1, '46')])).toThrow(FormatError);
    expect(() => teamVerdict({ protocol: 'chain', nAgents: 2 }, task, problem, [msg(0, 0, '46')])).toThrow(FormatError);
    expect(() => teamVerdict({ protocol: 'independent', nAgents: 2 }, task, problem, [msg(0, 0, '46'), msg(1, 1, '46')])).toThrow(FormatError);
    expect(() => teamVerdict({ protocol: 'router', nAgents: 3 }, task, problem, [msg(0, 0, '9'), msg(1, 1, '46')])).toThrow(FormatError);
    expect(() => nextTurn({ protocol: 'vote', nAgents: 5 }, problem, [])).toThrow(ConfigError);
    expect(() => nextTurn({ protocol: 'nope' as never, nAgents: 2 }, problem, [])).toThrow(ConfigError);
  });

  it('grades countdown teams through the same plumbing', () => {
    const cd = countdown({ seed: 1, level: 2 }) as LlmTask;
    const p = cd.generate('heldout', 0);
    const spec: TeamSpec = { protocol: 'vote', nAgents: 3 };
    const v = teamVerdict(spec, cd, p, [msg(0, 0, 'garbage'), msg(0, 1, p.answer), msg(0, 2, `(${p.answer})`)]);
    expect(v).toMatchObject({ correct: true, gradedAgent: 1 });
    expect(v.votes![0]!.count).toBe(2); // "(x)" and "x" parse to the same expression
  });

  it('formats a readable transcript', () => {
    const spec: TeamSpec = { protocol: 'vote', nAgents: 3 };
    const msgs = [msg(0, 0, '45'), msg(0, 1, '46'), msg(0, 2, '46')];
    const text = formatTranscript(problem, msgs, teamVerdict(spec, task, problem, msgs));
    const lines = text.split('\n');
    expect(lines[0]).toBe('problem arithmetic-l2:heldout:0 (vote)');
    expect(lines).toContain('prompt: "12+34="');
    expect(lines).toContain('reference: "46"');
    expect(lines).toContain('turn 0 agent 0 <a0>: "45"');
    expect(lines).toContain('turn 0 agent 2 <a2>: "46"');
    expect(lines).toContain('votes: "46" x2 (agents 1,2); "45" x1 (agent 0)');
    expect(lines).toContain('team answer: "46" from agent 1');
    expect(lines).toContain('verdict: correct, reward 1.000');

    const r = [msg(0, 0, 'x')];
    const rt = formatTranscript(problem, r, teamVerdict({ protocol: 'router', nAgents: 3 }, task, problem, r)).split('\n');
    expect(rt).toContain('route: invalid');
    expect(rt).toContain('team answer: none');
    expect(rt).toContain('verdict: wrong, reward 0.000');
    expect(rt.some((l) => l.startsWith('reason: router message "x" does not name a solver'))).toBe(true);

    // A plain task verdict works too; odd text is quoted on one line.
    const plain = formatTranscript(problem, [msg(0, 0, '4\n5')], task.verify(problem, '4\n5'));
    expect(plain.split('\n')).toContain('turn 0 agent 0 <a0>: "4\\n5"');
    expect(plain).toMatch(/^reason: not an integer/m);
  });
});
