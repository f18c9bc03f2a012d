/**
 * The task registry: every tabular game the playground offers, by name, with the protocols it
 * supports, a one-line title, and a hint on what to watch for while training. `makeGame` is the
 * one entry point the CLI and the app use to build a game from user settings.
 *
 * Not here: the games themselves (matrix.ts, relay.ts, router.ts, guess.ts), or how settings are
 * parsed and shown.
 */

import { ConfigError } from '../core/errors';
import { guess } from './guess';
import { climbing, penalty, randomMatrix } from './matrix';
import { relay } from './relay';
import { router } from './router';
import type { Protocol, TabularGame } from './types';

export type { Protocol, TabularGame } from './types';

/** The registered task names. */
export type TaskName = 'climbing' | 'penalty' | 'random-matrix' | 'relay' | 'router' | 'guess';

/** The settings a task is built from. Tasks ignore the ones that do not apply to them. */
export interface TaskOptions {
  /** Number of agents n. */
  agents: number;
  /** Number of actions m (ignored by tasks with `fixedActions`). */
  actions: number;
  /** One of the task's allowed protocols. */
  protocol: Protocol;
  /** Seed of the task's own randomness (random-matrix payoffs, guess answer key). */
  taskSeed: number;
  /** Penalty k of the penalty game. */
  penaltyK: number;
}

export interface TaskInfo {
  /** One line for people. */
  readonly title: string;
  /** Protocols this task can be played with. */
  readonly protocols: readonly Protocol[];
  readonly defaultProtocol: Protocol;
  /** Set when the number of actions is fixed by the task (climbing and penalty: 3). */
  readonly fixedActions?: number;
  /** Builds the game. Prefer `makeGame`, which also checks the protocol. */
  make(opts: TaskOptions): TabularGame;
  /** What to watch for while training on this task. */
  readonly whatToLookFor: string;
}

export const TASKS: Readonly<Record<TaskName, TaskInfo>> = {
  climbing: {
    title: 'Climbing game (Claus & Boutilier 1998): a high optimum guarded by heavy penalties',
    protocols: ['vote'],
    defaultProtocol: 'vote',
    fixedActions: 3,
    make: (o) => climbing(o.agents),
    whatToLookFor:
      'The optimum (a,a) = 11 sits next to −30 miscoordination penalties, so a looks bad on ' +
      'average while the partner is uncertain. Agents that learn at the same time tend to settle ' +
      'on (b,b) = 7 or (c,c) = 5; watch whether updating one agent at a time climbs to 11.',
  },
  penalty: {
    title: 'Penalty game (Claus & Boutilier 1998): two optima, a penalty for mixing them',
    protocols: ['vote'],
    defaultProtocol: 'vote',
    fixedActions: 3,
    make: (o) => penalty(o.agents, o.penaltyK),
    whatToLookFor:
      'Both (a,a) and (c,c) pay 10, but mixing a with c pays k. The team must agree on one ' +
      'optimum; with a large penalty it may hide in the safe (b,b) = 2 instead. Try k = 0 and ' +
      'k = −100 and compare.',
  },
  'random-matrix': {
    title: 'Random matrix game: one seeded payoff in [0, 1) per joint action',
    protocols: ['vote'],
    defaultProtocol: 'vote',
    make: (o) => randomMatrix(o.agents, o.actions, o.taskSeed),
    whatToLookFor:
      'A coordination problem with no story. Compare the final J with the best joint payoff, ' +
      'and check that J never drops from one stage to the next by more than the certificate allows.',
  },
  relay: {
    title: 'Relay: agent 0 sees a secret; the last agent in the chain must say it',
    protocols: ['chain'],
    defaultProtocol: 'chain',
    make: (o) => relay(o.agents, o.actions),
    whatToLookFor:
      'A pure communication task: under the uniform policy J = 1/m, and a working code gives 1. ' +
      'Watch the agents invent a code; early agents only get credit once later agents listen.',
  },
  router: {
    title: 'Router: agent 0 sends each problem to a solver; only the expert answers well',
    protocols: ['router'],
    defaultProtocol: 'router',
    make: (o) => router(o.agents, o.actions),
    whatToLookFor:
      'The router must learn which solver is the expert on each problem type while the solvers ' +
      'learn the answers; a non-expert earns only 0.25 for a correct answer. Only the chosen ' +
      'solver acts, so watch how rarely-chosen solvers get little data (masked activation).',
  },
  guess: {
    title: 'Guess the answer: one question-answer task under any of the four protocols',
    protocols: ['independent', 'chain', 'vote', 'router'],
    defaultProtocol: 'independent',
    make: (o) => guess(o.agents, o.actions, o.protocol, o.taskSeed),
    whatToLookFor:
      'The same answer key under every protocol: compare how fast independent, chain, vote and ' +
      'router teams reach J = 1, and how much each agent has to learn.',
  },
};

/** All task names, in registry order. */
export const TASK_NAMES = Object.keys(TASKS) as TaskName[];

/** True if `name` is a registered task. */
export function isTaskName(name: string): name is TaskName {
  return Object.prototype.hasOwnProperty.call(TASKS, name);
}

/**
 * Builds a registered task from user settings. Throws ConfigError for an unknown task or a
 * protocol the task does not support; the game factories throw RangeError for sizes out of range.
 */
export function makeGame(name: TaskName, opts: TaskOptions): TabularGame {
  if (!isTaskName(name)) {
    throw new ConfigError('task', name, `unknown task "${name}"; choose one of ${TASK_NAMES.join(', ')}`);
  }
  const info = TASKS[name];
  if (!info.protocols.includes(opts.protocol)) {
    throw new ConfigError(
      'protocol',
      opts.protocol,
      `task "${name}" supports protocol ${info.protocols.join(' or ')}, not "${opts.protocol}"`,
    );
  }
  return info.make(opts);
}
