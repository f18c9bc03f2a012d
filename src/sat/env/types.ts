/**
 * The team's environment as the stage loop sees it: something that can roll out episodes under the
 * team's current policies and measure the team's return J. The stage loop (src/sat/stage.ts) only
 * talks to this interface, so the same loop trains tabular tables on exact games (tabular.ts) and
 * language models on verifiable text tasks (lm.ts).
 *
 * Not here: any environment (tabular.ts, lm.ts), sampling details (src/sat/rollout.ts).
 */
import type { Rng } from '../../core/rng';
import type { CertEstimator, CertScope } from '../certificate';
import type { AgentPolicy, Batch, StepSet } from '../types';

export interface TeamEvaluation {
  /** The team's expected return. */
  readonly J: number;
  /** Half-width of its 95 % confidence interval (0 when exact). */
  readonly ci: number;
  /** True when J is exact rather than estimated. */
  readonly exact: boolean;
}

/** Options of `TeamEnv.rollout`. */
export interface RolloutOptions {
  readonly record?: boolean;
  readonly scored?: readonly number[];
  /** Tabular games: the team's current tables, when the caller already holds them (the rollout then asks no agent). */
  readonly tables?: readonly Float64Array[];
}

/** Tabular games: every trajectory of π_cur with positive probability, and i.i.d. draws of them (docs/certificate.md §5.1). */
export interface TeamCertSpace {
  readonly reward: Float64Array;
  /** Per trajectory: (agent, table entry) pairs, flat. */
  readonly decisions: readonly Int32Array[];
  /** Indices of the drawn trajectories. */
  readonly draws: Int32Array;
}

export interface TeamEnv {
  readonly nAgents: number;
  /** Largest number of turns in an episode (H of the episodic certificate). */
  readonly horizon: number;
  readonly rewardRange: readonly [number, number];
  /** True when evaluate() is cheap enough to run after every agent step (exact tabular J). */
  readonly evaluatePerAgent: boolean;
  /**
   * Episodes in one independent unit of a certification batch: the `independent` protocol's slots
   * (sample k of a group is answered by agent k mod n, so a unit holds one episode per slot), else 1.
   */
  readonly slots: number;
  /**
   * Which bound decides the stage's certificate (docs/certificate.md §5, §5.1): 'team' — one batch
   * under π_cur scored with the final team's ratio — or 'agents' — one batch per agent step, the
   * agents' summands added. Absent: 'agents'. Settable, so a report can measure both.
   */
  certScope?: CertScope;
  /**
   * A language team's team-level estimator (docs/certificate.md §5.1, §5.4, §5.5): 'truncated-is'
   * (absent: the same), 'mixture', pairs of one episode of each team, or 'paired', one problem
   * answered by both teams with common random numbers. Settable, so a report can measure each.
   */
  certEstimator?: CertEstimator;
  /**
   * Estimated J only: common-random-numbers pairs with which each stage checks its bound against ΔJ
   * (heldCheck.ts); 0 or absent: stages are not checked ('unchecked').
   */
  heldPairs?: number;
  /** Most turns at which `agent` acts in one episode (a language agent's turn is one message). */
  agentTurns(agent: number): number;
  /** Most action steps in one turn of an agent (1 for tables, maxNew tokens for a language agent). */
  readonly stepsPerTurn: number;
  /**
   * Samples B groups × G episodes (group-major) under the team's current policies. `record: false`
   * keeps the batch out of what the page shows (a certification batch is not training data);
   * `scored` lists the agents whose steps need their log-probs recorded (default: all) — a batch
   * only one agent trains or is certified on skips the others' scoring passes (their steps' logp
   * is NaN then). Sampling does not depend on it. `tables` (tabular games) spares the agents the
   * question when the caller keeps the team's tables up to date.
   */
  rollout(team: readonly AgentPolicy[], B: number, G: number, rng: Rng, opts?: RolloutOptions): Promise<Batch>;
  /** The current team's J. */
  evaluate(team: readonly AgentPolicy[]): Promise<TeamEvaluation>;
  /**
   * Exact certificates (tabular games): every agent's table now, the step set whose distributions
   * are one agent's table, and a certification sample with the summand's exact range.
   */
  tables?(team: readonly AgentPolicy[]): Promise<Float64Array[]>;
  tableSteps?(agent: number): StepSet;
  /** The team's J from its tables (what `tables` returned, kept up to date), without asking the agents again. */
  evaluateTables?(tables: readonly Float64Array[]): TeamEvaluation;
  certSample?(before: readonly Float64Array[], agent: number, newTable: Float64Array, b: number, N: number, rng: Rng): { x: Float64Array; range: [number, number] };
  teamCertSpace?(tables: readonly Float64Array[], draws: number, rng: Rng): TeamCertSpace;
}
