/**
 * What the game view draws for a table game at one point of the run (a "frame"): each agent's
 * action probabilities — how often, per turn it takes, it plays each action under the team's
 * current tables — and the episode the team plays most (its joint actions, payoff and
 * probability), both exact by enumerating the game tree (src/tasks/tabular.ts). For a one-shot
 * matrix game (one prompt, one turn, every agent acting once) also the payoff of every joint action
 * of two or three agents, the table the view draws.
 *
 * Not here: drawing (components/GameView.tsx) or reading the agents (session.ts hands in their
 * logit tables).
 */
import { forEachTrajectory } from '../tasks/tabular';
import type { TabularGame, TurnRecord } from '../tasks/types';

export interface GameFrame {
  /** Stages finished when it was taken, and the position in σ of the agent step it follows (−1: at the stage boundary). */
  readonly stage: number;
  readonly position: number;
  /** Per agent, per action: the share of that agent's turns on which it plays the action (exact). */
  readonly marginals: readonly (readonly number[])[];
  /** The most probable complete episode: its labelled moves, reward and probability. */
  readonly top: { readonly moves: readonly { readonly agent: number; readonly action: number }[]; readonly reward: number; readonly prob: number };
}

/** Softmax of each nActions-long row of a logit table, [nObs × nActions]. */
export function probsOfLogits(z: ArrayLike<number>, nActions: number): Float64Array {
  const out = new Float64Array(z.length);
  for (let s = 0; s < z.length; s += nActions) {
    let max = -Infinity;
    for (let a = 0; a < nActions; a++) max = Math.max(max, z[s + a]!);
    let sum = 0;
    for (let a = 0; a < nActions; a++) sum += out[s + a] = Math.exp(z[s + a]! - max);
    for (let a = 0; a < nActions; a++) out[s + a]! /= sum;
  }
  return out;
}

/** True for a one-shot matrix game: one prompt, one slot, one turn in which every agent acts once. */
export function isMatrixGame(game: TabularGame): boolean {
  if (game.promptProbs.length !== 1 || game.nSlots !== 1 || game.horizon !== 1) return false;
  const first = game.turn(0, 0, []);
  return first.length === game.nAgents && first.every((d, i) => d.agent === i);
}

/** The team's tables (agent → [nObs × nActions] probabilities) summarised for the game view. */
export function gameFrame(game: TabularGame, probs: readonly Float64Array[], stage: number, position: number): GameFrame {
  const marg = game.nActions.map((k) => new Array<number>(k).fill(0));
  const turns = new Array<number>(game.nAgents).fill(0);
  let best: { history: readonly TurnRecord[]; reward: number; prob: number } | null = null;
  forEachTrajectory(game, (agent, obs) => probs[agent]!.subarray(obs * game.nActions[agent]!, (obs + 1) * game.nActions[agent]!), (t) => {
    for (const turn of t.history) {
      turn.decisions.forEach((d, i) => {
        marg[d.agent]![turn.actions[i]!]! += t.prob;
        turns[d.agent]! += t.prob;
      });
    }
    if (!best || t.prob > best.prob) best = { history: t.history, reward: t.reward, prob: t.prob };
  });
  const top = best as { history: readonly TurnRecord[]; reward: number; prob: number } | null;
  return {
    stage,
    position,
    marginals: marg.map((row, j) => row.map((x) => (turns[j]! > 0 ? x / turns[j]! : 0))),
    top: {
      moves: top ? top.history.flatMap((turn) => turn.decisions.map((d, i) => ({ agent: d.agent, action: turn.actions[i]! }))) : [],
      reward: top?.reward ?? Number.NaN,
      prob: top?.prob ?? 0,
    },
  };
}

/**
 * A matrix game's payoffs for two or three agents: `grid[k][r][c]` = the payoff when agent 0
 * plays r, agent 1 plays c and (three agents) agent 2 plays k; null for other games and sizes.
 */
export function payoffGrids(game: TabularGame): number[][][] | null {
  if (!isMatrixGame(game) || game.nAgents > 3) return null;
  const [m0, m1] = [game.nActions[0]!, game.nActions[1]!];
  const m2 = game.nAgents === 3 ? game.nActions[2]! : 1;
  const decisions = game.turn(0, 0, []);
  const grids: number[][][] = [];
  for (let k = 0; k < m2; k++) {
    grids.push(Array.from({ length: m0 }, (_, r) => Array.from({ length: m1 }, (_, c) => game.reward(0, 0, [{ decisions, actions: game.nAgents === 3 ? [r, c, k] : [r, c] }]))));
  }
  return grids;
}

/** The frame to show for the step in view: the latest one at or before (stage, position). */
export function frameAt(frames: readonly GameFrame[], stage: number, position: number): GameFrame | null {
  let out: GameFrame | null = null;
  for (const f of frames) if (f.stage < stage || (f.stage === stage && f.position <= position)) out = f;
  return out ?? frames[0] ?? null;
}
