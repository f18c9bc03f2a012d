/**
 * The shapes the SAT core works with: episodes, the per-agent training batch, the objective's
 * settings, and the `AgentPolicy` interface that any agent — a tabular softmax table, a small
 * language model on the CPU or WebGPU backend — implements so the stage loop can train it.
 *
 * Every method of `AgentPolicy` returns a Promise: an agent may live in a Web Worker (comlink) or
 * on a GPU, and the stage loop must not care.
 *
 * Not here: how an agent computes anything (see src/sat/agents/), or how episodes are sampled
 * (see `rollout.ts`).
 */
import type { UpdatePlan, UpdateResult } from './update';

/** One agent's action at one turn of an episode. (Tabular: one step; a language model's turn is a message of many token-steps.) */
export interface AgentTurn {
  readonly agent: number;
  /** Turn index t within the episode. */
  readonly t: number;
  /** Agent-local state index. */
  readonly obs: number;
  readonly action: number;
  /** log π(a|s) under the policy that sampled it (π_cur for the stage batch, π̂ⁱ⁻¹ for resampled batches). */
  readonly logp: number;
}

export interface Episode {
  readonly prompt: number;
  /** Slot (independent protocol: which agent answers; otherwise 0). */
  readonly slot: number;
  /** Which group (prompt draw) of the batch this episode belongs to. */
  readonly group: number;
  readonly turns: readonly AgentTurn[];
  readonly reward: number;
}

/** B groups × G samples. */
export interface Batch {
  readonly episodes: readonly Episode[];
  readonly groups: number;
  readonly groupSize: number;
  /**
   * What the steps' `obs` handles refer to, for agents whose states are not table rows (a
   * language model's token prefixes). Passed unchanged to the agents with their steps.
   */
  readonly context?: unknown;
}

/**
 * A list of an agent's steps: where it was (`obs`) and what it did (`actions`).
 * Tabular agents read `obs` as a row of their table. Agents whose states are token prefixes read
 * `obs[k]` as an index into the `context` payload they attach (each step a (sequence, position)).
 */
export interface StepSet {
  readonly obs: Int32Array;
  /** Needed by logProbs and training; ignored by distributions and klToReference. */
  readonly actions?: Int32Array;
  /** Agent-specific description of the states behind `obs` (unused by tabular agents). */
  readonly context?: unknown;
}

/**
 * What agent j trains on: its steps in the batch, flattened, and one advantage and one weight per
 * episode. Episodes where j never acts still count in the mean (their ratio is 1).
 */
export interface AgentBatch extends StepSet {
  readonly nEpisodes: number;
  readonly actions: Int32Array;
  /** Per step: the index of its episode. */
  readonly episodeOf: Int32Array;
  /** Per episode: the normalised, clipped advantage Ã (times the HAPPO factor M when used). */
  readonly adv: Float64Array;
  /** Per episode: the importance weight (truncated-IS w(τ); 1 otherwise). */
  readonly weight: Float64Array;
  /** Horizon H (dr_grpo's constant length). */
  readonly horizon: number;
}

/** Settings of the per-agent objective L_j (docs/method.md §5). */
export interface ObjectiveSpec {
  readonly level: 'sequence' | 'token';
  readonly tokenAgg: 'grpo' | 'bnpo' | 'dr_grpo';
  readonly epsLow: number;
  readonly epsHigh: number;
  readonly beta: number;
  readonly lr: number;
  readonly weightDecay: number;
}

/** What one optimizer step reports (values at the parameters before the step). */
export interface TrainReport {
  /** L_j: clipped surrogate minus β·KL. */
  readonly objective: number;
  /** The clipped surrogate part alone. */
  readonly surrogate: number;
  /** Fraction of episodes (or steps) whose clipped branch was active. */
  readonly clipfrac: number;
  /** ‖∇L_j‖₂. */
  readonly gradNorm: number;
}

/** Parameters and optimizer state, opaque to the core (restored exactly on backtrack). */
export interface AgentSnapshot {
  readonly params: Float64Array;
  readonly optim: Float64Array;
}

export interface AgentInfo {
  readonly name: string;
  readonly kind: 'tabular' | 'lm';
  readonly parameters: number;
  readonly backend: string;
}

export interface AgentPolicy {
  readonly index: number;
  info(): Promise<AgentInfo>;
  /** π(·|s) at each listed step's state, row-major [steps × actions]. */
  distributions(steps: StepSet): Promise<Float64Array>;
  /** log π_θ(a|s) for each step (s = obs[k], a = actions[k]). */
  logProbs(steps: StepSet): Promise<Float64Array>;
  /** Freeze the current parameters as π_cur: the reference for ratios, KL and 'shrink'. */
  setReference(): Promise<void>;
  /** Exact KL(π_θ(·|s) ‖ π_cur(·|s)) over the full action set, at each listed step's state. */
  klToReference(steps: StepSet): Promise<Float64Array>;
  /** Gradient of L_j (docs/method.md §5) at the current parameters and one optimizer ascent step. */
  trainStep(batch: AgentBatch, spec: ObjectiveSpec): Promise<TrainReport>;
  /**
   * ∇θ of the reward-unit importance-sampling surrogate (1/N) Σ_e w_e A_e (r_e − 1) at the current
   * parameters (for the information-geometric gain). `adv` here is in reward units.
   */
  surrogateGradient(batch: AgentBatch): Promise<Float64Array>;
  /** F v: the Fisher of π_θ on the listed steps' states (occupancy-weighted), times v. */
  fisherVectorProduct(steps: StepSet, v: Float64Array): Promise<Float64Array>;
  snapshot(): Promise<AgentSnapshot>;
  restore(s: AgentSnapshot): Promise<void>;
  /** θ ← θ_from + f·(θ − θ_from), optimizer state from `from` (the 'shrink' policy). */
  interpolate(from: AgentSnapshot, f: number): Promise<void>;
  /**
   * Optional, for an agent whose parameters live elsewhere (a Web Worker): its whole update run
   * there, with the result of src/sat/update.ts `updateAgent(agent, plan)` on the agent itself.
   * Absent, the stage loop calls updateAgent here.
   */
  update?(plan: UpdatePlan): Promise<UpdateResult>;
  /** Optional, likewise: κ of `agentGeometry(agent, batch, rawAdv, iters)` (the greedy order's predicted gain). */
  kappa?(batch: AgentBatch, rawAdv: Float64Array, iters: number): Promise<number>;
}
