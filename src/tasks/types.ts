/**
 * The shape every tabular team game has: a prompt, then turns; at each turn only the agents in the
 * active set act (masked activation, docs/method.md §2.1), each seeing its own local state; a
 * verifier scores the finished episode. Transitions are deterministic given the prompt and the
 * joint actions, so a game is a finite tree and J(π) can be computed exactly by enumeration
 * (`src/tasks/tabular.ts`).
 *
 * Not here: language-model tasks, whose turns are tokens (src/tasks/llm/types.ts).
 */

/** The four ways agents share an episode (docs/method.md §2.2). */
export type Protocol = 'independent' | 'chain' | 'vote' | 'router';

/** One agent acting at one turn: who acts and which of its local states it is in. */
export interface Decision {
  /** Agent index in [0, nAgents). */
  readonly agent: number;
  /** Agent-local state index in [0, nObs[agent]). */
  readonly obs: number;
}

/** A finished turn: the decisions taken and the action each one chose (same order). */
export interface TurnRecord {
  readonly decisions: readonly Decision[];
  readonly actions: readonly number[];
}

export interface TabularGame {
  /** Registry name, e.g. "climbing". */
  readonly name: string;
  /** One line for people: what the game is. */
  readonly title: string;
  readonly protocol: Protocol;
  readonly nAgents: number;
  /** Number of actions per agent. */
  readonly nActions: readonly number[];
  /** Number of distinct local states per agent (rows of its table). */
  readonly nObs: readonly number[];
  /** Largest number of turns an episode can have (H of the episodic certificate). */
  readonly horizon: number;
  /** [R_min, R_max]: every reward lies in this range. */
  readonly rewardRange: readonly [number, number];
  /** Prompt distribution p(x), summing to 1. */
  readonly promptProbs: readonly number[];
  /**
   * Number of slots. 1 except for `independent`, where sample k of a group is answered by agent
   * (k mod n): the slot is k mod nSlots, and exact J averages uniformly over slots.
   */
  readonly nSlots: number;
  /** Who acts next, and in which local state; [] when the episode is over. */
  turn(prompt: number, slot: number, history: readonly TurnRecord[]): Decision[];
  /** Verifier: the reward of a finished episode, in rewardRange. */
  reward(prompt: number, slot: number, history: readonly TurnRecord[]): number;
  /** Labels for people (CLI, transcripts, charts). */
  promptLabel(prompt: number): string;
  obsLabel(agent: number, obs: number): string;
  actionLabel(agent: number, action: number): string;
}

/** π⁽ⁱ⁾(·|s) for every agent and local state: probs(agent, obs) → a distribution over actions. */
export type PolicyTable = (agent: number, obs: number) => ArrayLike<number>;

/** One complete trajectory with its exact probability (enumeration) or as sampled (rollouts). */
export interface Trajectory {
  readonly prompt: number;
  readonly slot: number;
  readonly history: readonly TurnRecord[];
  readonly reward: number;
  /** Probability under the policy (and the prompt/slot distribution), for enumerations. */
  readonly prob: number;
}
