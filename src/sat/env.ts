/**
 * The team's environment as the stage loop sees it: something that can roll out episodes under the
 * team's current policies and measure the team's return J. The stage loop (stage.ts) only talks to
 * this interface, so the same loop trains tabular tables on exact games and language models on
 * verifiable text tasks.
 *
 *   TabularEnv   a TabularGame; J is exact (enumeration), so its confidence half-width is 0.
 *
 * Not here: sampling details (rollout.ts) or the games themselves (src/tasks).
 */
import type { Rng } from '../core/rng';
import { exactJ } from '../tasks/tabular';
import type { TabularGame } from '../tasks/types';
import { sampleBatch, tablePolicy, teamTables } from './rollout';
import type { AgentPolicy, Batch } from './types';

export interface TeamEvaluation {
  /** The team's expected return. */
  readonly J: number;
  /** Half-width of its 95 % confidence interval (0 when exact). */
  readonly ci: number;
  /** True when J is exact rather than estimated. */
  readonly exact: boolean;
}

export interface TeamEnv {
  readonly nAgents: number;
  /** Largest number of turns in an episode (H of the episodic certificate). */
  readonly horizon: number;
  readonly rewardRange: readonly [number, number];
  /** True when evaluate() is cheap enough to run after every agent step (exact tabular J). */
  readonly evaluatePerAgent: boolean;
  /** Samples B groups × G episodes (group-major) under the team's current policies. */
  rollout(team: readonly AgentPolicy[], B: number, G: number, rng: Rng): Promise<Batch>;
  /** The current team's J. */
  evaluate(team: readonly AgentPolicy[]): Promise<TeamEvaluation>;
}

export class TabularEnv implements TeamEnv {
  readonly game: TabularGame;
  readonly evaluatePerAgent = true;
  constructor(game: TabularGame) {
    this.game = game;
  }
  get nAgents(): number {
    return this.game.nAgents;
  }
  get horizon(): number {
    return this.game.horizon;
  }
  get rewardRange(): readonly [number, number] {
    return this.game.rewardRange;
  }
  async rollout(team: readonly AgentPolicy[], B: number, G: number, rng: Rng): Promise<Batch> {
    return sampleBatch(this.game, await teamTables(this.game, team), B, G, rng);
  }
  async evaluate(team: readonly AgentPolicy[]): Promise<TeamEvaluation> {
    return { J: exactJ(this.game, tablePolicy(this.game, await teamTables(this.game, team))), ci: 0, exact: true };
  }
}
