/**
 * The contract every language-model task keeps: a generator of short text problems, a pure function
 * of (task seed, split, index), and a verifier that scores any answer string in [0, 1] without
 * ever throwing. Also the one train / held-out split rule (`splitOfKey`: the same held-out set for
 * every seed and level, so a model pretrained with one seed never saw another run's held-out
 * problems) and the alphabet every prompt and reference answer is written in.
 *
 * Not here: the tasks themselves (arithmetic.ts, countdown.ts), how a team of agents shares an
 * episode (protocols.ts), tokenization or model calls.
 */
import { ConfigError } from '../../core/errors';
import { Rng } from '../../core/rng';

/** Which side of the train/held-out split a problem comes from. */
export type Split = 'train' | 'heldout';

/** The number each split uses as the first element of its Rng path. */
export const SPLIT_ID: Readonly<Record<Split, number>> = { train: 0, heldout: 1 };

/**
 * Every character a prompt or reference answer may contain: digits, lowercase letters, space and
 * a few symbols. The char-level tokenizer's vocabulary is this plus its special tokens.
 */
export const LLM_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz +-*=(),:;>?.';

const ALPHABET_SET = new Set(LLM_ALPHABET);

/** True if every character of `text` is in LLM_ALPHABET. */
export function isAlphabetText(text: string): boolean {
  for (const ch of text) if (!ALPHABET_SET.has(ch)) return false;
  return true;
}

/** Per-problem details a verifier or a chart may need (operands, target, level, …). */
export type ProblemMeta = Readonly<Record<string, string | number | boolean | readonly number[]>>;

export interface Problem<M extends ProblemMeta = ProblemMeta> {
  /** Unique and stable: `${task}-l${level}:${split}:${index}`. */
  readonly id: string;
  readonly split: Split;
  readonly index: number;
  /** Canonical key: problems with the same key are the same problem (and share a split). */
  readonly key: string;
  /** What the model is shown, e.g. "12+34=". */
  readonly prompt: string;
  /** One canonical correct answer, e.g. "46" (other answers may also be correct). */
  readonly answer: string;
  readonly meta: M;
}

/** A verifier's judgement of one answer. */
export interface Verdict {
  /** In [0, 1]: 1 for a correct answer, the task's format reward for a well-formed wrong one. */
  readonly reward: number;
  readonly correct: boolean;
  /** The answer as the verifier read it (canonical form), when it could be read. */
  readonly parsed?: string;
  /** Why the answer is not correct (absent when it is). */
  readonly reason?: string;
}

export interface LlmTask<M extends ProblemMeta = ProblemMeta> {
  /** Registry name, e.g. "arithmetic". */
  readonly name: string;
  /** One line for people, including the level. */
  readonly title: string;
  readonly level: number;
  readonly seed: number;
  /** Fraction of canonical problems in the held-out split. */
  readonly heldoutFraction: number;
  /** Longest prompt `generate` can produce. */
  readonly maxPromptChars: number;
  /**
   * Longest well-formed answer worth generating (every reference answer fits): a sampler's
   * budget, EOS not counted. The verifier still reads longer strings (and scores them).
   */
  readonly maxAnswerChars: number;
  readonly rewardRange: readonly [0, 1];
  /** Problem `index` of `split`: a pure function of (seed, split, index). */
  generate(split: Split, index: number): Problem<M>;
  /** Scores any answer string; never throws on the answer (a malformed problem does throw). */
  verify(problem: Problem<M>, answerText: string): Verdict;
}

// ---------------------------------------------------------------------------------------------
// Shared helpers for tasks
// ---------------------------------------------------------------------------------------------

/** 32-bit hash of a string: FNV-1a over UTF-16 code units, then the murmur3 finaliser. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The split of canonical problem `key` of task family `family`: a fixed hash of both, independent
 * of seed and level. The key is the same for presentations of one problem (3+4 and 4+3).
 */
export function splitOfKey(family: string, key: string, heldoutFraction: number): Split {
  const u = hashString(`${family}|${key}`) / 4294967296;
  return u < heldoutFraction ? 'heldout' : 'train';
}

/** Checks the options every task shares; throws ConfigError naming the bad one. */
export function checkTaskOptions(task: string, seed: number, level: number, maxLevel: number, heldoutFraction: number): void {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new ConfigError('seed', seed, `${task}: seed must be an integer in [0, 4294967295], got ${seed}`);
  }
  if (!Number.isInteger(level) || level < 1 || level > maxLevel) {
    throw new ConfigError('level', level, `${task}: level must be an integer in [1, ${maxLevel}], got ${level}`);
  }
  if (!(heldoutFraction > 0 && heldoutFraction < 1)) {
    throw new ConfigError('heldoutFraction', heldoutFraction, `${task}: heldoutFraction must be in (0, 1), got ${heldoutFraction}`);
  }
}

/** Checks the format reward: a number in [0, 1). */
export function checkFormatReward(task: string, formatReward: number): void {
  if (!(formatReward >= 0 && formatReward < 1)) {
    throw new ConfigError('formatReward', formatReward, `${task}: formatReward must be in [0, 1), got ${formatReward}`);
  }
}

/** A candidate problem from one draw, before its split is known. */
export interface Candidate<M extends ProblemMeta> {
  readonly key: string;
  readonly prompt: string;
  readonly answer: string;
  readonly meta: M;
}

/** Most draws `drawInSplit` makes before giving up (a task whose split is empty). */
export const MAX_SPLIT_DRAWS = 100_000;

/**
 * Problem `index` of `split`: draws candidates from Rng(seed, [splitId, index]) until one is
 * valid (`draw` returns null to reject) and its key falls in `split`.
 */
export function drawInSplit<M extends ProblemMeta>(
  opts: { task: string; family: string; level: number; seed: number; heldoutFraction: number },
  split: Split,
  index: number,
  draw: (rng: Rng) => Candidate<M> | null,
): Problem<M> {
  if (split !== 'train' && split !== 'heldout') {
    throw new ConfigError('split', split, `${opts.task}: split must be "train" or "heldout", got ${String(split)}`);
  }
  if (!Number.isInteger(index) || index < 0 || index > 0xffffffff) {
    throw new ConfigError('index', index, `${opts.task}: problem index must be an integer in [0, 4294967295], got ${index}`);
  }
  const rng = new Rng(opts.seed, [SPLIT_ID[split], index]);
  for (let tries = 0; tries < MAX_SPLIT_DRAWS; tries++) {
    const c = draw(rng);
    if (c === null || splitOfKey(opts.family, c.key, opts.heldoutFraction) !== split) continue;
    return {
      id: `${opts.task}-l${opts.level}:${split}:${index}`,
      split,
      index,
      key: c.key,
      prompt: c.prompt,
      answer: c.answer,
      meta: c.meta,
    };
  }
  throw new ConfigError('heldoutFraction', opts.heldoutFraction, `${opts.task} level ${opts.level}: no ${split} problem found in ${MAX_SPLIT_DRAWS} draws; the split is empty at this heldoutFraction`);
}

/** Longest answer string a verifier reads at all; longer strings score 0 without parsing. */
export const MAX_VERIFY_CHARS = 256;

/** A zero-reward verdict with a reason. */
export function fail(reason: string, parsed?: string): Verdict {
  return parsed === undefined ? { reward: 0, correct: false, reason } : { reward: 0, correct: false, parsed, reason };
}

/** Shows one character of a bad answer safely in a reason (printable as is, else U+XXXX). */
export function showChar(text: string, at: number): string {
  const cp = text.codePointAt(at) ?? 0;
  return cp >= 0x20 && cp < 0x7f ? JSON.stringify(String.fromCodePoint(cp)) : `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * The common first checks on an answer: a string, not absurdly long, not empty after trimming.
 * Returns the trimmed text, or a failing Verdict.
 */
export function preCheck(answerText: unknown): string | Verdict {
  if (typeof answerText !== 'string') return fail(`answer is ${answerText === null ? 'null' : typeof answerText}, not text`);
  if (answerText.length > MAX_VERIFY_CHARS) return fail(`answer is ${answerText.length} chars long; the verifier reads at most ${MAX_VERIFY_CHARS}`);
  const t = answerText.trim();
  if (t.length === 0) return fail('empty answer');
  return t;
}
