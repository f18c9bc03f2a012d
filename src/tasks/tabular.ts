/**
 * Machinery that works for any `TabularGame` (see `./types`): list every trajectory with its exact
 * probability, compute J(π) and each agent's state-visit occupancy exactly, sample one episode
 * with a seeded `Rng`, and check that a game definition is sound.
 *
 * Because a tabular game is a small finite tree (deterministic transitions, few actions), we can
 * afford to walk the whole tree. That lets the playground show the *true* value of a policy next
 * to the noisy estimates a learner sees.
 *
 * Not here: any particular game (matrix.ts, relay.ts, router.ts, guess.ts), and anything that
 * changes a policy (learning, advantages, trust regions live elsewhere). This file only plays.
 */

import { SatError } from '../core/errors';
import type { Rng } from '../core/rng';
import type { Decision, PolicyTable, TabularGame, Trajectory, TurnRecord } from './types';

// ---------------------------------------------------------------------------------------------
// Team-size limits shared by every game factory
// ---------------------------------------------------------------------------------------------

/**
 * Sizes every game factory accepts. The limits keep exact enumeration cheap: the largest tree
 * (8 actions, 6 agents acting one after another, 8 prompts) has 8⁷ ≈ 2 million leaves.
 */
export const TEAM_LIMITS = {
  minAgents: 2,
  maxAgents: 6,
  minActions: 2,
  maxActions: 8,
} as const;

/** Throws a RangeError naming `task` unless n agents and m actions are within TEAM_LIMITS. */
export function checkTeamSize(task: string, n: number, m: number): void {
  const { minAgents, maxAgents, minActions, maxActions } = TEAM_LIMITS;
  if (!Number.isInteger(n) || n < minAgents || n > maxAgents) {
    throw new RangeError(`${task}: agents must be an integer in [${minAgents}, ${maxAgents}], got ${n}`);
  }
  if (!Number.isInteger(m) || m < minActions || m > maxActions) {
    throw new RangeError(`${task}: actions must be an integer in [${minActions}, ${maxActions}], got ${m}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Policies
// ---------------------------------------------------------------------------------------------

/** The policy that picks every action with equal probability, in every state, for every agent. */
export function uniformPolicy(game: TabularGame): PolicyTable {
  // One row per agent, shared by all its states (the uniform row does not depend on the state).
  const rows = game.nActions.map((k) => new Float64Array(k).fill(1 / k));
  return (agent: number) => rows[agent]!;
}

/** Reads π(a | obs) for one decision, checking that the policy row has the right length. */
function actionProbs(game: TabularGame, policy: PolicyTable, d: Decision): ArrayLike<number> {
  const probs = policy(d.agent, d.obs);
  const k = game.nActions[d.agent]!;
  if (probs.length !== k) {
    throw new SatError(
      'policy',
      `policy row for agent ${d.agent}, state ${d.obs} has ${probs.length} entries; ` +
        `game "${game.name}" gives that agent ${k} actions`,
    );
  }
  return probs;
}

/** Throws if a decision the game produced names an agent or local state out of range. */
function checkDecision(game: TabularGame, d: Decision): void {
  if (!Number.isInteger(d.agent) || d.agent < 0 || d.agent >= game.nAgents) {
    throw new SatError('game', `game "${game.name}": decision for agent ${d.agent}, but it has ${game.nAgents} agents`);
  }
  const nObs = game.nObs[d.agent]!;
  if (!Number.isInteger(d.obs) || d.obs < 0 || d.obs >= nObs) {
    throw new SatError(
      'game',
      `game "${game.name}": agent ${d.agent} is in local state ${d.obs}, but it has ${nObs} states`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Exact enumeration
// ---------------------------------------------------------------------------------------------

/**
 * Walks every complete trajectory and calls `visit` on each, with its exact probability
 * p(x) · (1/nSlots) · Π over turns and active agents of π(a | obs).
 *
 * This is the one place the game tree is explored; enumerateTrajectories, exactJ and
 * stateVisitProbs are all built on it. It never stores the whole tree, so exactJ stays cheap in
 * memory even for the largest games.
 */
export function forEachTrajectory(
  game: TabularGame,
  policy: PolicyTable,
  visit: (t: Trajectory) => void,
): void {
  for (let prompt = 0; prompt < game.promptProbs.length; prompt++) {
    for (let slot = 0; slot < game.nSlots; slot++) {
      const startProb = game.promptProbs[prompt]! / game.nSlots;
      walk(game, policy, prompt, slot, [], startProb, visit);
    }
  }
}

/** Recursive step of forEachTrajectory: expands the turn after `history`. */
function walk(
  game: TabularGame,
  policy: PolicyTable,
  prompt: number,
  slot: number,
  history: readonly TurnRecord[],
  prob: number,
  visit: (t: Trajectory) => void,
): void {
  const decisions = game.turn(prompt, slot, history);

  // No one acts: the episode is over, and the verifier scores it.
  if (decisions.length === 0) {
    const reward = game.reward(prompt, slot, history);
    visit({ prompt, slot, history, reward, prob });
    return;
  }

  // A guard against games that never end: a turn beyond the horizon is a bug in the game.
  if (history.length >= game.horizon) {
    throw new SatError(
      'game',
      `game "${game.name}": an episode has more than horizon = ${game.horizon} turns`,
    );
  }
  for (const d of decisions) checkDecision(game, d);

  // Every joint action of this turn: choose agent 0's action, then agent 1's, ... (a
  // mixed-radix counter written as recursion). `actions` is refilled in place and copied
  // into the turn record once all decisions have an action.
  const actions: number[] = decisions.map(() => 0);
  const chooseFrom = (i: number, p: number): void => {
    if (i === decisions.length) {
      const record: TurnRecord = { decisions, actions: [...actions] };
      walk(game, policy, prompt, slot, [...history, record], p, visit);
      return;
    }
    const d = decisions[i]!;
    const probs = actionProbs(game, policy, d);
    for (let a = 0; a < probs.length; a++) {
      actions[i] = a;
      chooseFrom(i + 1, p * probs[a]!);
    }
  };
  chooseFrom(0, prob);
}

/**
 * Every complete trajectory with its exact probability. Zero-probability branches are kept (the
 * games are small, and keeping them makes the list the same shape for every policy).
 */
export function enumerateTrajectories(game: TabularGame, policy: PolicyTable): Trajectory[] {
  const all: Trajectory[] = [];
  forEachTrajectory(game, policy, (t) => all.push(t));
  return all;
}

/** J(π) = E[R(τ)] = Σ over trajectories of prob · reward, exactly. */
export function exactJ(game: TabularGame, policy: PolicyTable): number {
  let j = 0;
  forEachTrajectory(game, policy, (t) => {
    j += t.prob * t.reward;
  });
  return j;
}

/**
 * The occupancy d of one agent: entry s is the expected number of times per episode that
 * `agent` acts while in local state s (over prompts, slots and everyone's actions).
 * The entries sum to the expected number of turns the agent takes per episode.
 */
export function stateVisitProbs(game: TabularGame, policy: PolicyTable, agent: number): Float64Array {
  const visits = new Float64Array(game.nObs[agent] ?? 0);
  forEachTrajectory(game, policy, (t) => {
    for (const turn of t.history) {
      for (const d of turn.decisions) {
        if (d.agent === agent) visits[d.obs] = visits[d.obs]! + t.prob;
      }
    }
  });
  return visits;
}

// ---------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------

/** Draws a prompt x from the game's prompt distribution p(x). */
export function samplePrompt(game: TabularGame, rng: Rng): number {
  return rng.categorical(game.promptProbs);
}

/**
 * Plays one episode for a given prompt and slot. At each turn, every active agent's action is
 * drawn with `rng.categorical(π(·|obs))`, in the order the decisions are listed.
 *
 * The returned `prob` is the product of the sampled actions' probabilities only: the prompt and
 * slot were chosen by the caller, so their probabilities are not included.
 */
export function sampleEpisode(
  game: TabularGame,
  prompt: number,
  slot: number,
  policy: PolicyTable,
  rng: Rng,
): Trajectory {
  const history: TurnRecord[] = [];
  let prob = 1;
  for (;;) {
    const decisions = game.turn(prompt, slot, history);
    if (decisions.length === 0) break;
    if (history.length >= game.horizon) {
      throw new SatError(
        'game',
        `game "${game.name}": an episode has more than horizon = ${game.horizon} turns`,
      );
    }
    const actions: number[] = [];
    for (const d of decisions) {
      checkDecision(game, d);
      const probs = actionProbs(game, policy, d);
      const a = rng.categorical(probs);
      actions.push(a);
      prob *= probs[a]!;
    }
    history.push({ decisions, actions });
  }
  return { prompt, slot, history, reward: game.reward(prompt, slot, history), prob };
}

// ---------------------------------------------------------------------------------------------
// Checking a game definition
// ---------------------------------------------------------------------------------------------

/**
 * Checks a game definition and returns the problems found, as sentences; [] means the game is
 * sound. Checked: table sizes, the prompt distribution sums to 1, every decision names an agent
 * and local state in range with no agent twice in one turn, every reward (under the uniform
 * policy, which reaches every trajectory) is finite and inside rewardRange, no episode is longer
 * than the horizon, and the trajectory probabilities sum to 1.
 */
export function validateGame(game: TabularGame): string[] {
  const problems: string[] = [];
  const n = game.nAgents;

  if (!Number.isInteger(n) || n < 1) problems.push(`nAgents is ${n}; expected a positive integer`);
  if (game.nActions.length !== n) problems.push(`nActions has ${game.nActions.length} entries for ${n} agents`);
  if (game.nObs.length !== n) problems.push(`nObs has ${game.nObs.length} entries for ${n} agents`);
  game.nActions.forEach((k, i) => {
    if (!Number.isInteger(k) || k < 1) problems.push(`agent ${i} has ${k} actions; expected a positive integer`);
  });
  game.nObs.forEach((k, i) => {
    if (!Number.isInteger(k) || k < 1) problems.push(`agent ${i} has ${k} local states; expected a positive integer`);
  });
  if (!Number.isInteger(game.nSlots) || game.nSlots < 1) {
    problems.push(`nSlots is ${game.nSlots}; expected a positive integer`);
  }
  if (!Number.isInteger(game.horizon) || game.horizon < 1) {
    problems.push(`horizon is ${game.horizon}; expected a positive integer`);
  }

  const [rMin, rMax] = game.rewardRange;
  if (!Number.isFinite(rMin) || !Number.isFinite(rMax) || rMin > rMax) {
    problems.push(`rewardRange [${rMin}, ${rMax}] is not a finite interval`);
  }

  if (game.promptProbs.length === 0) problems.push('there are no prompts');
  let promptTotal = 0;
  game.promptProbs.forEach((p, x) => {
    if (!Number.isFinite(p) || p < 0) problems.push(`prompt ${x} has probability ${p}`);
    promptTotal += p;
  });
  if (Math.abs(promptTotal - 1) > 1e-9) problems.push(`prompt probabilities sum to ${promptTotal}, not 1`);

  // The table sizes must be right before the tree can be walked.
  if (problems.length > 0) return problems;

  // Walk the whole tree under the uniform policy. Errors thrown by the walk (a decision out of
  // range, an episode past the horizon) are reported as problems, not thrown.
  let totalProb = 0;
  let badRewards = 0;
  let doubledAgents = 0;
  try {
    forEachTrajectory(game, uniformPolicy(game), (t) => {
      totalProb += t.prob;
      if (!Number.isFinite(t.reward) || t.reward < rMin - 1e-12 || t.reward > rMax + 1e-12) {
        if (badRewards === 0) {
          problems.push(`reward ${t.reward} (prompt ${t.prompt}, slot ${t.slot}) is outside [${rMin}, ${rMax}]`);
        }
        badRewards++;
      }
      for (const turn of t.history) {
        const agents = new Set(turn.decisions.map((d) => d.agent));
        if (agents.size !== turn.decisions.length) doubledAgents++;
      }
    });
  } catch (e) {
    problems.push(e instanceof Error ? e.message : String(e));
    return problems;
  }
  if (badRewards > 1) problems.push(`${badRewards} trajectories in all have a reward outside the range`);
  if (doubledAgents > 0) problems.push(`${doubledAgents} turns list the same agent twice`);
  if (Math.abs(totalProb - 1) > 1e-9) problems.push(`trajectory probabilities sum to ${totalProb}, not 1`);
  return problems;
}
