/**
 * Arithmetic: "12+34=" → "46", in four levels for tiny char-level models (LEVELS below). The
 * canonical key sorts the operands of + and * (3+4 and 4+3 are one problem, one split). The
 * verifier reads a trimmed integer (optional '-', up to 12 digits, "07" = 7): right → 1, a wrong
 * well-formed integer → `formatReward` (default 0, in [0, 1)), anything else → 0 with a reason.
 *
 * Not here: the split rule and shared checks (types.ts), multi-agent plumbing (protocols.ts).
 */
import { FormatError } from '../../core/errors';
import type { Rng } from '../../core/rng';
import { checkFormatReward, checkTaskOptions, drawInSplit, fail, preCheck, showChar } from './types';
import type { LlmTask, Problem, Split, Verdict } from './types';

export type ArithOp = '+' | '-' | '*';

export interface ArithmeticMeta {
  readonly [key: string]: string | number;
  readonly level: number;
  readonly op: ArithOp;
  readonly a: number;
  readonly b: number;
  readonly value: number;
}

export interface ArithmeticOptions {
  /** Task seed (integer in [0, 2³²)). */
  seed: number;
  /** 1..4, see the file header. Default 2. */
  level?: number;
  /** Reward for a well-formed but wrong integer, in [0, 1). Default 0. */
  formatReward?: number;
  /** Fraction of canonical problems held out. Default 0.2. */
  heldoutFraction?: number;
}

export const ARITHMETIC_MAX_LEVEL = 4;

/**
 * Operand ranges per level (the operations equally likely; subtraction may go negative):
 *   level 1  a+b            a, b in 0..9                          "3+4="     → "7"
 *   level 2  a+b, a-b       a, b in 0..99                         "27-58="   → "-31"
 *   level 3  a+b, a-b       a, b in 0..99;  a*b with a, b in 0..9  "7*8="     → "56"
 *   level 4  a+b, a-b       a, b in 0..999; a*b with a in 0..99, b in 0..9    "47*6=" → "282"
 */
const LEVELS: Readonly<Record<number, { addMax: number; mulMaxA: number; mulMaxB: number; ops: readonly ArithOp[] }>> = {
  1: { addMax: 9, mulMaxA: 0, mulMaxB: 0, ops: ['+'] },
  2: { addMax: 99, mulMaxA: 0, mulMaxB: 0, ops: ['+', '-'] },
  3: { addMax: 99, mulMaxA: 9, mulMaxB: 9, ops: ['+', '-', '*'] },
  4: { addMax: 999, mulMaxA: 99, mulMaxB: 9, ops: ['+', '-', '*'] },
};

/** The value of a op b. */
export function applyOp(op: ArithOp, a: number, b: number): number {
  return op === '+' ? a + b : op === '-' ? a - b : a * b;
}

/** Canonical key: commutative operands sorted. */
export function arithmeticKey(op: ArithOp, a: number, b: number): string {
  return op === '-' ? `-:${a},${b}` : `${op}:${Math.min(a, b)},${Math.max(a, b)}`;
}

const INTEGER = /^-?[0-9]{1,12}$/;

/** Verifies `answerText` against the integer `expected`. */
export function verifyInteger(expected: number, answerText: unknown, formatReward: number): Verdict {
  const t = preCheck(answerText);
  if (typeof t !== 'string') return t;
  if (!INTEGER.test(t)) {
    for (let i = 0; i < t.length; i++) {
      const c = t[i]!;
      if (!(c >= '0' && c <= '9') && !(c === '-' && i === 0)) {
        return fail(`not an integer: unexpected ${showChar(t, i)} at position ${i}`);
      }
    }
    return fail(t === '-' ? 'not an integer: a lone "-"' : 'not an integer: more than 12 digits');
  }
  const v = Number(t);
  const parsed = String(v === 0 ? 0 : v); // "-0" reads as 0
  if (v === expected) return { reward: 1, correct: true, parsed };
  return { reward: formatReward, correct: false, parsed, reason: `${parsed} is not ${expected}` };
}

/** The arithmetic task at one level. */
export function arithmetic(opts: ArithmeticOptions): LlmTask<ArithmeticMeta> {
  const level = opts.level ?? 2;
  const formatReward = opts.formatReward ?? 0;
  const heldoutFraction = opts.heldoutFraction ?? 0.2;
  checkTaskOptions('arithmetic', opts.seed, level, ARITHMETIC_MAX_LEVEL, heldoutFraction);
  checkFormatReward('arithmetic', formatReward);
  const L = LEVELS[level]!;
  const addDigits = String(L.addMax).length;
  const mulDigits = L.mulMaxA > 0 ? String(L.mulMaxA).length + 1 : 0;
  const maxPromptChars = Math.max(2 * addDigits, mulDigits) + 2;
  const maxAnswerChars = Math.max(String(2 * L.addMax).length, addDigits + (L.ops.includes('-') ? 1 : 0), String(L.mulMaxA * L.mulMaxB).length);
  const where = { task: 'arithmetic', family: 'arithmetic', level, seed: opts.seed, heldoutFraction };

  const draw = (rng: Rng) => {
    const op = L.ops[rng.int(L.ops.length)]!;
    const a = op === '*' ? rng.int(L.mulMaxA + 1) : rng.int(L.addMax + 1);
    const b = op === '*' ? rng.int(L.mulMaxB + 1) : rng.int(L.addMax + 1);
    const value = applyOp(op, a, b);
    return {
      key: arithmeticKey(op, a, b),
      prompt: `${a}${op}${b}=`,
      answer: String(value),
      meta: { level, op, a, b, value },
    };
  };

  return {
    name: 'arithmetic',
    title: `Arithmetic level ${level}: ${['', 'one-digit a+b', 'two-digit a±b', 'two-digit a±b, one-digit a*b', 'three-digit a±b, two-by-one-digit a*b'][level]}`,
    level,
    seed: opts.seed,
    heldoutFraction,
    maxPromptChars,
    maxAnswerChars,
    rewardRange: [0, 1],
    generate(split: Split, index: number): Problem<ArithmeticMeta> {
      return drawInSplit(where, split, index, draw);
    },
    verify(problem: Problem<ArithmeticMeta>, answerText: string): Verdict {
      const expected = problem?.meta?.value;
      if (typeof expected !== 'number' || !Number.isInteger(expected)) {
        throw new FormatError(`arithmetic.verify: problem ${String(problem?.id)} has no integer meta.value; is it an arithmetic problem?`);
      }
      return verifyInteger(expected, answerText, formatReward);
    },
  };
}
