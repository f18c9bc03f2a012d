/**
 * The registry of language-model tasks: every text task the playground offers, by name, with its
 * levels, a one-line title and a hint on what to watch for. `makeLlmTask` is the one entry point
 * the CLI, pretraining and the app use to build a task from user settings. Every LLM task can be
 * played under every protocol (protocols.ts), so the registry does not list protocols.
 *
 * Not here: the tasks themselves (arithmetic.ts, countdown.ts), the team plumbing (protocols.ts).
 */

import { ConfigError } from '../../core/errors';
import { ARITHMETIC_MAX_LEVEL, arithmetic } from './arithmetic';
import { COUNTDOWN_MAX_LEVEL, countdown } from './countdown';
import type { LlmTask, Problem, ProblemMeta, Split } from './types';

export type { LlmTask, Problem, ProblemMeta, Split, Verdict } from './types';
export { LLM_ALPHABET, isAlphabetText } from './types';
export { arithmetic } from './arithmetic';
export { countdown } from './countdown';
export * from './protocols';

export type LlmTaskName = 'arithmetic' | 'countdown';

/** The settings an LLM task is built from. */
export interface LlmTaskOptions {
  seed: number;
  /** Difficulty level, 1..maxLevel. Default: the task's defaultLevel. */
  level?: number;
  /** Reward for a well-formed wrong answer, in [0, 1). Default 0. */
  formatReward?: number;
  /** Fraction of canonical problems held out. Default 0.2. */
  heldoutFraction?: number;
}

export interface LlmTaskInfo {
  readonly title: string;
  readonly maxLevel: number;
  readonly defaultLevel: number;
  /** One short line per level, index 0 = level 1. */
  readonly levels: readonly string[];
  make(opts: LlmTaskOptions): LlmTask;
  readonly whatToLookFor: string;
}

export const LLM_TASKS: Readonly<Record<LlmTaskName, LlmTaskInfo>> = {
  arithmetic: {
    title: 'Arithmetic: answer "12+34=" with "46"',
    maxLevel: ARITHMETIC_MAX_LEVEL,
    defaultLevel: 2,
    levels: [
      'one-digit a+b',
      'two-digit a+b and a-b (answers may be negative)',
      'two-digit a+b and a-b, one-digit a*b',
      'three-digit a+b and a-b, two-digit by one-digit a*b',
    ],
    make: (o) => arithmetic({ seed: o.seed, level: o.level ?? 2, formatReward: o.formatReward ?? 0, heldoutFraction: o.heldoutFraction ?? 0.2 }),
    whatToLookFor:
      'One right answer per problem: watch held-out accuracy per agent and whether a team ' +
      '(vote, chain) corrects single-agent carry and sign mistakes.',
  },
  countdown: {
    title: 'Countdown: reach the target with the given numbers, e.g. "3,5,7>22:" → "3*5+7"',
    maxLevel: COUNTDOWN_MAX_LEVEL,
    defaultLevel: 2,
    levels: [
      'two numbers in 1..9, one operation',
      'three numbers in 1..9, targets built with + and -',
      'three numbers in 1..12, targets built with + - * in any tree',
    ],
    make: (o) => countdown({ seed: o.seed, level: o.level ?? 2, formatReward: o.formatReward ?? 0, heldoutFraction: o.heldoutFraction ?? 0.2 }),
    whatToLookFor:
      'Many answers are correct, so reward comes from planning, not copying: watch how often ' +
      'answers are legal but miss the target (raise formatReward to see it in the reward) and ' +
      'whether a chain lets a later agent repair an earlier plan.',
  },
};

/** All LLM task names, in registry order. */
export const LLM_TASK_NAMES = Object.keys(LLM_TASKS) as LlmTaskName[];

export function isLlmTaskName(name: string): name is LlmTaskName {
  return Object.prototype.hasOwnProperty.call(LLM_TASKS, name);
}

/** Builds a registered LLM task. Throws ConfigError for an unknown name or a bad option. */
export function makeLlmTask(name: LlmTaskName, opts: LlmTaskOptions): LlmTask {
  if (!isLlmTaskName(name)) {
    throw new ConfigError('task', name, `unknown LLM task "${name}"; choose one of ${LLM_TASK_NAMES.join(', ')}`);
  }
  return LLM_TASKS[name].make(opts);
}

/** Problems start..start+count-1 of a split (e.g. a pretraining shard or an eval set). */
export function generateMany<M extends ProblemMeta>(task: LlmTask<M>, split: Split, start: number, count: number): Problem<M>[] {
  return Array.from({ length: count }, (_, i) => task.generate(split, start + i));
}
