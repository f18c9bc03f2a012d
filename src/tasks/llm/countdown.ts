/**
 * Countdown, the planning task: given a few small numbers and a target, write an expression with
 * + - * and parentheses that uses each number at most once and equals the target.
 *
 *   prompt "3,5,7>22:"   reference answer "3*5+7"   (also correct: "7+5*3", "(5*3)+7")
 *
 * Chosen because it scales from one-step sums to three-number plans, has many correct answers (a
 * real RL signal, not one string to copy), and enough problems that held-out ones are unseen.
 * The verifier parses (never eval) and gives any string a verdict, never a throw.
 *
 * Not here: the split rule and shared checks (types.ts), multi-agent plumbing (protocols.ts).
 */
import { FormatError } from '../../core/errors';
import type { Rng } from '../../core/rng';
import { checkFormatReward, checkTaskOptions, drawInSplit, fail, preCheck, showChar } from './types';
import type { LlmTask, Problem, Split, Verdict } from './types';

export type CdOp = '+' | '-' | '*';

/** An expression tree: a number literal (as written) or a binary operation. */
export type Expr =
  | { readonly kind: 'num'; readonly text: string; readonly value: number }
  | { readonly kind: 'bin'; readonly op: CdOp; readonly left: Expr; readonly right: Expr };

export interface CountdownMeta {
  readonly [key: string]: number | readonly number[];
  readonly level: number;
  readonly numbers: readonly number[];
  readonly target: number;
}

export interface CountdownOptions {
  /** Task seed (integer in [0, 2³²)). */
  seed: number;
  /** 1..3, see the file header. Default 2. */
  level?: number;
  /** Reward for a legal expression that misses the target, in [0, 1). Default 0. */
  formatReward?: number;
  /** Fraction of canonical problems held out. Default 0.2. */
  heldoutFraction?: number;
}

export const COUNTDOWN_MAX_LEVEL = 3;

/**
 *   level 1  two numbers in 1..9,    target = a op b with op in + - *         "4,7>28:"    → "4*7"
 *   level 2  three numbers in 1..9,  target = (a op b) op c with op in + -    "8,2,5>11:"  → "8-2+5"
 *   level 3  three numbers in 1..12, target from any tree with + - *          "8,9,4>40:"  → "8*(9-4)"
 * Every target is in 1..99 and differs from each given number (at least one operation is needed);
 * problems are solvable by construction.
 */
const LEVELS: Readonly<Record<number, { count: number; maxNumber: number; ops: readonly CdOp[]; rightShape: boolean }>> = {
  1: { count: 2, maxNumber: 9, ops: ['+', '-', '*'], rightShape: false },
  2: { count: 3, maxNumber: 9, ops: ['+', '-'], rightShape: false },
  3: { count: 3, maxNumber: 12, ops: ['+', '-', '*'], rightShape: true },
};

/** Targets lie in 1..MAX_TARGET. */
export const MAX_TARGET = 99;

const OPS: readonly CdOp[] = ['+', '-', '*'];
const PREC: Readonly<Record<CdOp, number>> = { '+': 1, '-': 1, '*': 2 };

// ---------------------------------------------------------------------------------------------
// Expressions: build, evaluate, print
// ---------------------------------------------------------------------------------------------

export function num(value: number): Expr {
  return { kind: 'num', text: String(value), value };
}

export function bin(op: CdOp, left: Expr, right: Expr): Expr {
  return { kind: 'bin', op, left, right };
}

/** Integer value of an expression. */
export function evaluate(e: Expr): number {
  if (e.kind === 'num') return e.value;
  const a = evaluate(e.left);
  const b = evaluate(e.right);
  return e.op === '+' ? a + b : e.op === '-' ? a - b : a * b;
}

/** Prints with the fewest parentheses that keep the tree's meaning (+ and * associative). */
export function printExpr(e: Expr): string {
  if (e.kind === 'num') return e.text;
  const p = PREC[e.op];
  const side = (c: Expr, right: boolean): string => {
    const s = printExpr(c);
    if (c.kind === 'num') return s;
    const cp = PREC[c.op];
    const needs = cp < p || (right && cp === p && e.op === '-');
    return needs ? `(${s})` : s;
  };
  return `${side(e.left, false)}${e.op}${side(e.right, true)}`;
}

/** The number literals of an expression, left to right, as written. */
export function literals(e: Expr, out: string[] = []): string[] {
  if (e.kind === 'num') out.push(e.text);
  else {
    literals(e.left, out);
    literals(e.right, out);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parser (no eval): expr := term (('+'|'-') term)* ; term := factor ('*' factor)* ;
// factor := number | '(' expr ')'
// ---------------------------------------------------------------------------------------------

class ParseFail extends Error {}

/** Deepest parenthesis nesting the parser accepts. */
export const MAX_PAREN_DEPTH = 16;
/** Longest number literal the parser accepts. */
export const MAX_LITERAL_DIGITS = 4;

/**
 * Parses an expression over digits, + - * ( ) (spaces allowed between tokens). Returns the tree
 * or a reason it cannot be read; never throws.
 */
export function parseExpression(text: string): { expr: Expr } | { error: string } {
  // Check characters first, so the reason names the first bad one.
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (!((c >= '0' && c <= '9') || c === '+' || c === '-' || c === '*' || c === '(' || c === ')' || c === ' ')) {
      return { error: `unexpected ${showChar(text, i)} at position ${i}` };
    }
  }
  let pos = 0;
  const skip = (): void => {
    while (text[pos] === ' ') pos++;
  };
  const where = (): string => (pos < text.length ? `${showChar(text, pos)} at position ${pos}` : 'end of answer');

  const factor = (depth: number): Expr => {
    skip();
    const c = text[pos];
    if (c === '(') {
      if (depth >= MAX_PAREN_DEPTH) throw new ParseFail(`parentheses nested more than ${MAX_PAREN_DEPTH} deep`);
      pos++;
      const e = expr(depth + 1);
      skip();
      if (text[pos] !== ')') throw new ParseFail(`expected ")" but found ${where()}`);
      pos++;
      return e;
    }
    if (c !== undefined && c >= '0' && c <= '9') {
      const start = pos;
      while (pos < text.length && text[pos]! >= '0' && text[pos]! <= '9') pos++;
      const lit = text.slice(start, pos);
      if (lit.length > MAX_LITERAL_DIGITS) throw new ParseFail(`number ${lit.slice(0, 8)}… is too long`);
      return { kind: 'num', text: lit, value: Number(lit) };
    }
    throw new ParseFail(`expected a number or "(" but found ${where()}`);
  };
  const term = (depth: number): Expr => {
    let left = factor(depth);
    for (;;) {
      skip();
      if (text[pos] !== '*') return left;
      pos++;
      left = bin('*', left, factor(depth));
    }
  };
  const expr = (depth: number): Expr => {
    let left = term(depth);
    for (;;) {
      skip();
      const c = text[pos];
      if (c !== '+' && c !== '-') return left;
      pos++;
      left = bin(c, left, term(depth));
    }
  };

  try {
    const e = expr(0);
    skip();
    if (pos < text.length) return { error: `unexpected ${where()} after a complete expression` };
    return { expr: e };
  } catch (err) {
    if (err instanceof ParseFail) return { error: err.message };
    if (err instanceof RangeError) return { error: 'expression too deeply nested' }; // stack overflow guard
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Solver
// ---------------------------------------------------------------------------------------------

/** Index sequences of length k over 0..n-1 without repeats, in lexicographic order. */
function arrangements(n: number, k: number): number[][] {
  const out: number[][] = [];
  const rec = (cur: number[]): void => {
    if (cur.length === k) {
      out.push([...cur]);
      return;
    }
    for (let i = 0; i < n; i++) if (!cur.includes(i)) rec([...cur, i]);
  };
  rec([]);
  return out;
}

/**
 * The canonical solution of a countdown problem (up to three numbers used), or null if none:
 * fewest numbers first, then index sequences in lexicographic (prompt) order, left-nested shape
 * before right-nested, operations + before - before *.
 */
export function solveCountdown(numbers: readonly number[], target: number): string | null {
  const leaves = numbers.map(num);
  for (const n of numbers) if (n === target) return String(n);
  for (const [i, j] of arrangements(numbers.length, 2) as [number, number][]) {
    for (const op of OPS) {
      const e = bin(op, leaves[i]!, leaves[j]!);
      if (evaluate(e) === target) return printExpr(e);
    }
  }
  for (const [i, j, k] of arrangements(numbers.length, 3) as [number, number, number][]) {
    const [x, y, z] = [leaves[i]!, leaves[j]!, leaves[k]!];
    for (const shape of [0, 1]) {
      for (const o1 of OPS) {
        for (const o2 of OPS) {
          const e = shape === 0 ? bin(o2, bin(o1, x, y), z) : bin(o1, x, bin(o2, y, z));
          if (evaluate(e) === target) return printExpr(e);
        }
      }
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Verifier
// ---------------------------------------------------------------------------------------------

/**
 * Verifies an answer to the countdown problem (numbers, target). Never throws. Digits, + - * ( )
 * and spaces; every literal must be a given number written the same way ("07" is not 7), each used
 * at most as often as given; integer evaluation. Correct → 1; legal but off target →
 * `formatReward` (default 0, in [0, 1)); anything else → 0 with a reason.
 */
export function verifyCountdown(numbers: readonly number[], target: number, answerText: unknown, formatReward: number): Verdict {
  const t = preCheck(answerText);
  if (typeof t !== 'string') return t;
  const r = parseExpression(t);
  if ('error' in r) return fail(`not an expression: ${r.error}`);
  const parsed = printExpr(r.expr);
  const given = new Map<string, number>();
  for (const n of numbers) given.set(String(n), (given.get(String(n)) ?? 0) + 1);
  const used = new Map<string, number>();
  for (const lit of literals(r.expr)) {
    const have = given.get(lit);
    if (have === undefined) return fail(`${lit} is not one of the numbers ${numbers.join(',')}`, parsed);
    const u = (used.get(lit) ?? 0) + 1;
    if (u > have) return fail(`${lit} is used ${u} times but given ${have === 1 ? 'once' : `${have} times`}`, parsed);
    used.set(lit, u);
  }
  const value = evaluate(r.expr);
  if (value === target) return { reward: 1, correct: true, parsed };
  return { reward: formatReward, correct: false, parsed, reason: `${parsed} = ${value}, not ${target}` };
}

// ---------------------------------------------------------------------------------------------
// The task
// ---------------------------------------------------------------------------------------------

/** Canonical key: the sorted numbers and the target. */
export function countdownKey(numbers: readonly number[], target: number): string {
  return `${[...numbers].sort((a, b) => a - b).join(',')}>${target}`;
}

/** The countdown task at one level. */
export function countdown(opts: CountdownOptions): LlmTask<CountdownMeta> {
  const level = opts.level ?? 2;
  const formatReward = opts.formatReward ?? 0;
  const heldoutFraction = opts.heldoutFraction ?? 0.2;
  checkTaskOptions('countdown', opts.seed, level, COUNTDOWN_MAX_LEVEL, heldoutFraction);
  checkFormatReward('countdown', formatReward);
  const L = LEVELS[level]!;
  const d = String(L.maxNumber).length;
  const tDigits = String(MAX_TARGET).length;
  const maxPromptChars = L.count * d + (L.count - 1) + 1 + tDigits + 1;
  // The longest minimally-parenthesised expression over ≤ 3 numbers: digits, operators, one pair
  // of parentheses when three numbers are used.
  const maxAnswerChars = L.count * d + (L.count - 1) + (L.count >= 3 ? 2 : 0);
  const where = { task: 'countdown', family: 'countdown', level, seed: opts.seed, heldoutFraction };

  const draw = (rng: Rng) => {
    const numbers = Array.from({ length: L.count }, () => 1 + rng.int(L.maxNumber));
    const leaves = numbers.map(num);
    const op = (): CdOp => L.ops[rng.int(L.ops.length)]!;
    let e: Expr;
    if (L.count === 2) e = bin(op(), leaves[0]!, leaves[1]!);
    else if (!L.rightShape || rng.int(2) === 0) e = bin(op(), bin(op(), leaves[0]!, leaves[1]!), leaves[2]!);
    else e = bin(op(), leaves[0]!, bin(op(), leaves[1]!, leaves[2]!));
    const target = evaluate(e);
    if (target < 1 || target > MAX_TARGET || numbers.includes(target)) return null;
    const answer = solveCountdown(numbers, target);
    if (answer === null) return null; // cannot happen: e itself is a solution
    return {
      key: countdownKey(numbers, target),
      prompt: `${numbers.join(',')}>${target}:`,
      answer,
      meta: { level, numbers, target },
    };
  };

  return {
    name: 'countdown',
    title: `Countdown level ${level}: reach the target from ${L.count} numbers in 1..${L.maxNumber} with ${L.ops.join(' ')}`,
    level,
    seed: opts.seed,
    heldoutFraction,
    maxPromptChars,
    maxAnswerChars,
    rewardRange: [0, 1],
    generate(split: Split, index: number): Problem<CountdownMeta> {
      return drawInSplit(where, split, index, draw);
    },
    verify(problem: Problem<CountdownMeta>, answerText: string): Verdict {
      const numbers = problem?.meta?.numbers;
      const target = problem?.meta?.target;
      if (!Array.isArray(numbers) || typeof target !== 'number') {
        throw new FormatError(`countdown.verify: problem ${String(problem?.id)} has no meta.numbers/meta.target; is it a countdown problem?`);
      }
      return verifyCountdown(numbers, target, answerText, formatReward);
    },
  };
}
