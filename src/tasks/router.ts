/**
 * Router (protocol 'router'): agent 0 is a router, agents 1..n-1 are solvers. A prompt is one of
 * K = 2(n-1) problem types x, drawn uniformly. At turn 0 the router sees x and picks a solver
 * (action k means agent k+1). At turn 1 only that solver acts: it sees x and answers in 0..m-1.
 *
 * The answer key: the correct answer to x is (7x + 3) mod m. Solver k (1-based) is the expert
 * on the types with x mod (n-1) = k-1, so each solver is the expert on exactly two types.
 * Reward: 1 for a correct answer from the expert; 0.25 for a correct answer from a non-expert
 * (it "guesses with bad working"); 0 for a wrong answer. So the team does best when the router
 * learns who the experts are and each expert learns its answers.
 *
 * Not here: routers that pick several solvers, or solvers that see each other.
 */

import { checkTeamSize } from './tabular';
import type { Decision, TabularGame, TurnRecord } from './types';

/** Reward for a correct answer from a solver that is not the expert on the problem type. */
export const NON_EXPERT_CREDIT = 0.25;

/** The correct answer to problem type x with m possible answers. */
export function routerAnswer(x: number, m: number): number {
  return (x * 7 + 3) % m;
}

/** The solver (agent index, 1..n-1) that is the expert on problem type x. */
export function routerExpert(x: number, n: number): number {
  return (x % (n - 1)) + 1;
}

/** Router game: 1 router + (n-1) solvers, m answers. */
export function router(n: number, m: number): TabularGame {
  checkTeamSize('router', n, m);
  const solvers = n - 1;
  const K = 2 * solvers;
  return {
    name: 'router',
    title: `Router: agent 0 sends each of ${K} problem types to one of ${solvers} solvers`,
    protocol: 'router',
    nAgents: n,
    // The router chooses among the solvers; each solver chooses an answer.
    nActions: Array.from({ length: n }, (_, i) => (i === 0 ? solvers : m)),
    // Everyone who acts sees the problem type.
    nObs: Array.from({ length: n }, () => K),
    horizon: 2,
    rewardRange: [0, 1],
    promptProbs: Array.from({ length: K }, () => 1 / K),
    nSlots: 1,
    turn(prompt: number, _slot: number, history: readonly TurnRecord[]): Decision[] {
      if (history.length === 0) return [{ agent: 0, obs: prompt }];
      if (history.length === 1) {
        const chosen = history[0]!.actions[0]! + 1; // router action k → agent k+1
        return [{ agent: chosen, obs: prompt }];
      }
      return [];
    },
    reward(prompt: number, _slot: number, history: readonly TurnRecord[]): number {
      const solver = history[1]!.decisions[0]!.agent;
      const answer = history[1]!.actions[0]!;
      if (answer !== routerAnswer(prompt, m)) return 0;
      return solver === routerExpert(prompt, n) ? 1 : NON_EXPERT_CREDIT;
    },
    promptLabel: (prompt: number) => `problem type ${prompt}`,
    obsLabel: (_agent: number, obs: number) => `problem type ${obs}`,
    actionLabel: (agent: number, action: number) =>
      agent === 0 ? `send to agent ${action + 1}` : `answer ${action}`,
  };
}
