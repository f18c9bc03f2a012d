/**
 * One-shot matrix games (protocol 'vote'): one prompt, one turn, every agent acts at once, and the
 * team's reward is the payoff of the joint action. Climbing and penalty are Claus & Boutilier's
 * cooperative traps (AAAI 1998: big miscoordination penalties next to the optimum); a random game
 * draws every payoff from a seeded stream. For n ≥ 3 agents (our extension) the reward is the mean
 * over pairs i < j of M[a_i][a_j]: exactly the original game at n = 2, the same optima beyond.
 *
 * Not here: repeated or stateful games, and anything about learning them.
 */
import { Rng } from '../core/rng';
import { checkTeamSize } from './tabular';
import type { Decision, TabularGame, TurnRecord } from './types';

/** Climbing game payoffs (Claus & Boutilier 1998). Row = agent 0's action, column = agent 1's. */
export const CLIMBING_PAYOFFS: readonly (readonly number[])[] = [
  [11, -30, 0],
  [-30, 7, 6],
  [0, 0, 5],
];

/** Penalty game payoffs (Claus & Boutilier 1998) with miscoordination penalty k (usually k ≤ 0). */
export function penaltyPayoffs(k: number): number[][] {
  return [
    [10, 0, k],
    [0, 2, 0],
    [k, 0, 10],
  ];
}

/** Action names a, b, c, ... as in the paper. */
function letter(action: number): string {
  return String.fromCharCode('a'.charCodeAt(0) + action);
}

/**
 * Builds the one-shot game shared by all matrix games: n agents, m actions each, one prompt,
 * one state per agent, and the reward `payoff(jointAction)`.
 */
function oneShotGame(spec: {
  name: string;
  title: string;
  n: number;
  m: number;
  rewardRange: readonly [number, number];
  payoff: (joint: readonly number[]) => number;
}): TabularGame {
  const { n, m } = spec;
  // Turn 0: everyone acts, each in its only local state (0).
  const everyone: Decision[] = Array.from({ length: n }, (_, agent) => ({ agent, obs: 0 }));
  return {
    name: spec.name,
    title: spec.title,
    protocol: 'vote',
    nAgents: n,
    nActions: Array.from({ length: n }, () => m),
    nObs: Array.from({ length: n }, () => 1),
    horizon: 1,
    rewardRange: spec.rewardRange,
    promptProbs: [1],
    nSlots: 1,
    turn: (_prompt: number, _slot: number, history: readonly TurnRecord[]) =>
      history.length === 0 ? everyone : [],
    reward: (_prompt: number, _slot: number, history: readonly TurnRecord[]) =>
      spec.payoff(history[0]!.actions),
    promptLabel: () => 'play once',
    obsLabel: () => 'the game',
    actionLabel: (_agent: number, action: number) => letter(action),
  };
}

/** Mean over all pairs i < j of M[a_i][a_j] (for two agents: just M[a_0][a_1]). */
export function pairwiseMeanPayoff(matrix: readonly (readonly number[])[], joint: readonly number[]): number {
  let total = 0;
  let pairs = 0;
  for (let i = 0; i < joint.length; i++) {
    for (let j = i + 1; j < joint.length; j++) {
      total += matrix[joint[i]!]![joint[j]!]!;
      pairs++;
    }
  }
  return total / pairs;
}

/** Smallest and largest entry of a matrix: every pairwise mean lies between them. */
function matrixRange(matrix: readonly (readonly number[])[]): [number, number] {
  const all = matrix.flat();
  return [Math.min(...all), Math.max(...all)];
}

/** Climbing game for n agents (3 actions). Optimum (a,a) = 11; (b,b) = 7 and (c,c) = 5 are traps. */
export function climbing(n = 2): TabularGame {
  checkTeamSize('climbing', n, 3);
  return oneShotGame({
    name: 'climbing',
    title: n === 2 ? 'Climbing game (Claus & Boutilier 1998)' : `Climbing game, ${n} agents (pairwise mean)`,
    n,
    m: 3,
    rewardRange: matrixRange(CLIMBING_PAYOFFS),
    payoff: (joint) => pairwiseMeanPayoff(CLIMBING_PAYOFFS, joint),
  });
}

/** Penalty game for n agents (3 actions): two optima (a,a) = (c,c) = 10 next to penalty k. */
export function penalty(n = 2, k = -10): TabularGame {
  checkTeamSize('penalty', n, 3);
  if (!Number.isFinite(k)) throw new RangeError(`penalty: k must be a finite number, got ${k}`);
  const matrix = penaltyPayoffs(k);
  return oneShotGame({
    name: 'penalty',
    title: n === 2 ? `Penalty game, k = ${k} (Claus & Boutilier 1998)` : `Penalty game, k = ${k}, ${n} agents (pairwise mean)`,
    n,
    m: 3,
    rewardRange: matrixRange(matrix),
    payoff: (joint) => pairwiseMeanPayoff(matrix, joint),
  });
}

/** Index of a joint action in row-major order: agent 0's action is the most significant digit. */
export function jointIndex(joint: readonly number[], m: number): number {
  let index = 0;
  for (const a of joint) index = index * m + a;
  return index;
}

/**
 * A random n-agent, m-action game: one payoff per joint action (m^n of them), each uniform in
 * [0, 1), drawn from `new Rng(seed, [0x6d61])` ('ma') in row-major joint-action order.
 */
export function randomMatrix(n: number, m: number, seed: number): TabularGame {
  checkTeamSize('random-matrix', n, m);
  const rng = new Rng(seed, [0x6d61 /* 'ma' */]);
  const payoffs = new Float64Array(m ** n);
  for (let i = 0; i < payoffs.length; i++) payoffs[i] = rng.uniform();
  return oneShotGame({
    name: 'random-matrix',
    title: `Random ${n}-agent game, ${m} actions each (seed ${seed})`,
    n,
    m,
    rewardRange: [0, 1],
    payoff: (joint) => payoffs[jointIndex(joint, m)]!,
  });
}
