/**
 * Guess the answer: one question-answer task that runs under all four protocols (docs/method.md
 * §2.2), so they can be compared on one problem. A prompt is x in 0..m-1; its answer comes from a
 * seeded permutation; reward 1 if right, else 0. independent: agent k alone in slot k; chain: agent
 * t sees x and a_{t-1}, the last message is graded; vote: the most frequent action (ties: smallest);
 * router: agent 0 picks a solver among 1..n-1 — all experts here, unlike router.ts, so routing
 * does not matter.
 *
 * Not here: partial credit, format rewards, or answers longer than one symbol.
 */
import { Rng } from '../core/rng';
import { checkTeamSize } from './tabular';
import type { Decision, Protocol, TabularGame, TurnRecord } from './types';

/** The answer key: target[x] is the correct answer to question x. */
export function guessTargets(m: number, seed: number): number[] {
  return new Rng(seed, [0x6775 /* 'gu' */]).permutation(m);
}

/**
 * The team answer of a vote: the most frequent action; among equally frequent actions the
 * smallest index wins.
 */
export function majorityVote(actions: readonly number[]): number {
  const counts = new Map<number, number>();
  for (const a of actions) counts.set(a, (counts.get(a) ?? 0) + 1);
  let best = -1;
  let bestCount = 0;
  for (const [a, c] of counts) {
    if (c > bestCount || (c === bestCount && a < best)) {
      best = a;
      bestCount = c;
    }
  }
  return best;
}

/** Guess game for n agents, m answers, under `protocol`, with the answer key fixed by `seed`. */
export function guess(n: number, m: number, protocol: Protocol, seed: number): TabularGame {
  checkTeamSize('guess', n, m);
  const target = guessTargets(m, seed);
  const score = (x: number, y: number): number => (y === target[x] ? 1 : 0);

  // What every protocol shares.
  const common = {
    name: 'guess',
    protocol,
    nAgents: n,
    rewardRange: [0, 1] as const,
    promptProbs: Array.from({ length: m }, () => 1 / m),
    promptLabel: (x: number) => `question ${x}`,
  };
  const everyAgent = <T>(f: (agent: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
  const answerLabel = (_agent: number, action: number) => `answer ${action}`;
  const questionLabel = (_agent: number, obs: number) => `question ${obs}`;

  switch (protocol) {
    case 'independent':
      return {
        ...common,
        title: `Guess: ${n} agents answer ${m} questions, one agent per sample`,
        nActions: everyAgent(() => m),
        nObs: everyAgent(() => m),
        horizon: 1,
        nSlots: n,
        // Slot k is answered by agent k alone.
        turn: (x: number, slot: number, history: readonly TurnRecord[]): Decision[] =>
          history.length === 0 ? [{ agent: slot, obs: x }] : [],
        reward: (x: number, _slot: number, history: readonly TurnRecord[]) => score(x, history[0]!.actions[0]!),
        obsLabel: questionLabel,
        actionLabel: answerLabel,
      };

    case 'chain':
      return {
        ...common,
        title: `Guess: a chain of ${n} agents answers ${m} questions; the last answer counts`,
        nActions: everyAgent(() => m),
        // Agent 0 sees x; later agents see (x, previous message) encoded as x·m + a_{t-1}.
        nObs: everyAgent((t) => (t === 0 ? m : m * m)),
        horizon: n,
        nSlots: 1,
        turn(x: number, _slot: number, history: readonly TurnRecord[]): Decision[] {
          const t = history.length;
          if (t >= n) return [];
          if (t === 0) return [{ agent: 0, obs: x }];
          const previous = history[t - 1]!.actions[0]!;
          return [{ agent: t, obs: x * m + previous }];
        },
        reward: (x: number, _slot: number, history: readonly TurnRecord[]) =>
          score(x, history[history.length - 1]!.actions[0]!),
        obsLabel: (agent: number, obs: number) =>
          agent === 0 ? `question ${obs}` : `question ${Math.floor(obs / m)}, heard ${obs % m}`,
        actionLabel: answerLabel,
      };

    case 'vote':
      return {
        ...common,
        title: `Guess: ${n} agents vote on ${m} questions; the majority answer counts`,
        nActions: everyAgent(() => m),
        nObs: everyAgent(() => m),
        horizon: 1,
        nSlots: 1,
        turn: (x: number, _slot: number, history: readonly TurnRecord[]): Decision[] =>
          history.length === 0 ? everyAgent((agent) => ({ agent, obs: x })) : [],
        reward: (x: number, _slot: number, history: readonly TurnRecord[]) =>
          score(x, majorityVote(history[0]!.actions)),
        obsLabel: questionLabel,
        actionLabel: answerLabel,
      };

    case 'router':
      return {
        ...common,
        title: `Guess: agent 0 routes ${m} questions to one of ${n - 1} solvers`,
        nActions: everyAgent((i) => (i === 0 ? n - 1 : m)),
        nObs: everyAgent(() => m),
        horizon: 2,
        nSlots: 1,
        turn(x: number, _slot: number, history: readonly TurnRecord[]): Decision[] {
          if (history.length === 0) return [{ agent: 0, obs: x }];
          if (history.length === 1) return [{ agent: history[0]!.actions[0]! + 1, obs: x }];
          return [];
        },
        reward: (x: number, _slot: number, history: readonly TurnRecord[]) => score(x, history[1]!.actions[0]!),
        obsLabel: questionLabel,
        actionLabel: (agent: number, action: number) =>
          agent === 0 ? `send to agent ${action + 1}` : `answer ${action}`,
      };
  }
  // Only reachable from untyped callers (e.g. a protocol name read from a URL).
  throw new RangeError(`guess: unknown protocol "${String(protocol)}"`);
}
