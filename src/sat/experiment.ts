/**
 * An experiment: a config turned into a game and a team, run stage by stage. The one entry point
 * shared by the CLI, the tests and the page.
 *
 *   const exp = createTabularExperiment(parseConfig({ task: 'climbing', seed: 3 }));
 *   for await (const step of stepThrough(exp)) …   // agent by agent
 *   await runStages(exp, 20);                        // or stage by stage
 *
 * Also the tabular plug-and-play swap (docs/method.md §8.2). The seam for agents that live
 * elsewhere (src/workers/remoteTeam.ts): `planTabular` / `planLlm` build everything but the agents
 * and describe each agent as plain, cloneable data (`TableInit`, `LmInit`); `tableAgent` here and
 * `lmAgent` (llmExperiment.ts) turn one into an in-process agent, so a team built elsewhere from
 * the same descriptions starts from bit-identical parameters.
 *
 * Not here: the in-process language team and its model code (llmExperiment.ts), printing
 * (src/cli), drawing (src/app), or workers (src/workers).
 */
import { Rng } from '../core/rng';
import { weightedQuantile } from '../core/stats';
import { ConfigError, SatError } from '../core/errors';
import type { GpuTensors } from '../backend/webgpu/backend';
import { makeGame } from '../tasks/index';
import { makeLlmTask } from '../tasks/llm/index';
import { exactJ, stateVisitProbs } from '../tasks/tabular';
import type { TabularGame } from '../tasks/types';
import type { TaskName } from '../tasks/index';
import { agentModelName, type Config, isLlmTask, resolvedProtocol } from './config';
import { TabularEnv } from './env/tabular';
import type { TeamEnv, TeamEvaluation } from './env/types';
import type { CheckWatch } from './heldCheck';
import type { LmAgent } from './agents/lm';
import type { ProjectedLmAgent } from './agents/projected';
import { LmEnv, type LmEpisodeRecord } from './env/lm';
import { tablePolicy, teamTables } from './rollout';
import { checkFinishedStage, runStage, swapFloor, type AgentStepRecord, type StageRecord, type SwapSummary } from './stage';
import type { AgentInfo, AgentPolicy, AgentSnapshot } from './types';
import type { StageProfiler } from './profile';
import { lambdaHistogram, projectTable } from './stage0';
import type { FrozenOnnxAgent } from './agents/frozen';
import { TabularSoftmaxAgent } from './agents/tabular';

export interface Experiment {
  readonly cfg: Config;
  readonly env: TeamEnv;
  readonly team: readonly AgentPolicy[];
  readonly rng: Rng;
  readonly betas: number[];
  readonly aMax: number;
  /** J of the initial team (exact for tabular games, a held-out estimate for language tasks). */
  readonly j0: number;
  /**
   * Stages the team has been through (numbers the next one, times a swap). The records themselves
   * belong to the caller — runStages returns them, the page keeps them in its store — so a
   * history is never kept twice.
   */
  stagesDone: number;
  /** The team's latest evaluation, if still current (reused as the next stage's start; a swap clears it). */
  lastEval?: TeamEvaluation;
  /** Told each stage's phases when set (npm run sat -- --profile). */
  profiler?: StageProfiler;
  /** Certification episodes the stages so far left unspent (docs/certificate.md §5.3); the next stage may draw them. */
  certCredit?: number;
  /** Language teams: how to seat model `name` in agent j's place (the configured swap; lmSwap.ts `configuredLmSwap` by default); see swapIfDue. */
  swapModel?: (exp: Experiment, j: number, name: string) => Promise<SwapSummary>;
}

/** A team of tables on an exact game. */
export interface TabularExperiment extends Experiment {
  readonly game: TabularGame;
  readonly env: TabularEnv;
  readonly team: TabularSoftmaxAgent[];
}

/** An agent that is a table, wherever it runs: a TabularSoftmaxAgent here, or one in a worker (src/workers/remoteTeam.ts). */
export interface TableAgent extends AgentPolicy {
  readonly nObs: number;
  readonly nActions: number;
  /** The current logits [nObs × nActions] (a copy). */
  getLogits(): Float64Array | Promise<Float64Array>;
  /** Replaces the logits; resets the optimizer. */
  setLogits(z: Float64Array): void | Promise<void>;
}

/** What the tabular swap needs: the exact game and a team of tables (in-process or in workers). */
export interface TableExperiment extends Experiment {
  readonly game: TabularGame;
  readonly team: readonly TableAgent[];
}

/**
 * A language seat, on any backend (HostTensors: the CPU; GpuTensors: a WebGPU device): an agent,
 * the Stage-0 projection of a plug-and-play swap (agents/projected.ts), or a frozen ONNX teammate
 * (agents/frozen.ts: no model of ours).
 */
export type LmSeat = LmAgent | ProjectedLmAgent | LmAgent<GpuTensors> | ProjectedLmAgent<GpuTensors> | FrozenOnnxAgent;

/** A team of small language models on a verifiable text task. */
export interface LlmExperiment extends Experiment {
  readonly env: LmEnv;
  readonly team: LmSeat[];
  /** The model file every agent started from, e.g. "arithmetic-S". */
  readonly modelName: string;
}

/** Reads a shipped model's bytes by name ("arithmetic-S"): from disk in Node, by fetch in the browser. */
export type ModelLoader = (name: string) => Promise<Uint8Array>;

/** Stream purpose for initial tables (stages use purposes ≥ 1 under their stage index ≥ 1). */
const INIT_STREAM = 0;

/** How agent `index` of a tabular team starts: its table's shape, and the stream of its random logits. */
export interface TableInit {
  readonly index: number;
  readonly nObs: number;
  readonly nActions: number;
  /** Std of the initial logits (0: uniform policy). */
  readonly initScale: number;
  /** The initial logits are drawn from new Rng(seed, path): the run seed's fork (INIT_STREAM, index). */
  readonly seed: number;
  readonly path: readonly number[];
}

/** A tabular experiment's parts that do not depend on where its agents run. */
export interface TabularPlan {
  readonly game: TabularGame;
  readonly env: TabularEnv;
  readonly aMax: number;
  readonly agents: readonly TableInit[];
}

export function planTabular(cfg: Config): TabularPlan {
  if (isLlmTask(cfg.task)) {
    throw new ConfigError('task', cfg.task, `Task "${cfg.task}" trains language models: open it with createLlmExperiment (it loads model files).`);
  }
  const game = makeGame(cfg.task as TaskName, { agents: cfg.agents, actions: cfg.actions, protocol: resolvedProtocol(cfg), taskSeed: cfg.taskSeed, penaltyK: cfg.penaltyK });
  const agents = Array.from({ length: game.nAgents }, (_, i): TableInit => ({
    index: i, nObs: game.nObs[i]!, nActions: game.nActions[i]!, initScale: cfg.initScale, seed: cfg.seed, path: [INIT_STREAM, i],
  }));
  const aMax = cfg.aMax > 0 ? cfg.aMax : game.rewardRange[1] - game.rewardRange[0];
  return { game, env: new TabularEnv(game), aMax, agents };
}

/** The in-process agent a `TableInit` describes. */
export function tableAgent(init: TableInit): TabularSoftmaxAgent {
  return new TabularSoftmaxAgent(init.index, init.nObs, init.nActions, { initScale: init.initScale, rng: new Rng(init.seed, init.path) });
}

export function createTabularExperiment(cfg: Config): TabularExperiment {
  const { game, env, aMax, agents } = planTabular(cfg);
  const team = agents.map(tableAgent);
  const j0 = exactJ(game, tablePolicy(game, team.map((a) => a.distributionTable())));
  return { cfg, game, env, team, rng: new Rng(cfg.seed), betas: team.map(() => cfg.beta), aMax, j0, stagesDone: 0 };
}

/** Stream purpose for the language team's evaluation seed. */
const EVAL_STREAM = 0x65;

/** How agent `index` of a language team starts from the shipped model (the model bytes travel separately). */
export interface LmInit {
  readonly index: number;
  /** Display name, e.g. "arithmetic-S#0". */
  readonly name: string;
  /** The shipped model this agent starts from, e.g. "arithmetic-M" (agentModels, else model). */
  readonly modelFile: string;
  /** LoRA rank (0: train all weights, dequantized). */
  readonly lora: number;
  readonly loraAlpha: number;
  /** Seed of the LoRA adapter's initialisation. */
  readonly seed: number;
  readonly temperature: number;
  readonly topK: number;
  /** How the frozen quantized base takes its input (the activations setting; LoRA agents only; default exact). */
  readonly activations?: 'exact' | 'int8';
}

/** A language experiment's parts that do not depend on where its agents run. */
export interface LlmPlan {
  /** The model file every agent starts from, e.g. "arithmetic-S". */
  readonly modelName: string;
  readonly env: LmEnv;
  readonly aMax: number;
  readonly agents: readonly LmInit[];
}

export function planLlm(cfg: Config): LlmPlan {
  if (!isLlmTask(cfg.task)) throw new ConfigError('task', cfg.task, `Task "${cfg.task}" is a tabular game: open it with createTabularExperiment.`);
  const modelName = `${cfg.task}-${cfg.model}`;
  const task = makeLlmTask(cfg.task, { seed: cfg.taskSeed, level: cfg.level, formatReward: cfg.formatReward });
  const rng = new Rng(cfg.seed);
  const agents = Array.from({ length: cfg.agents }, (_, i): LmInit => ({
    index: i, name: `${agentModelName(cfg, i)}#${i}`, modelFile: agentModelName(cfg, i), lora: cfg.lora, loraAlpha: cfg.loraAlpha, seed: rng.fork(INIT_STREAM, i).nextU32(), temperature: cfg.temperature, topK: cfg.topK, activations: cfg.activations,
  }));
  const env = new LmEnv(task, resolvedProtocol(cfg), cfg.agents, { maxNew: cfg.maxNew, evalEpisodes: cfg.evalEpisodes, evalSeed: rng.fork(EVAL_STREAM).nextU32() });
  const aMax = cfg.aMax > 0 ? cfg.aMax : task.rewardRange[1] - task.rewardRange[0];
  return { modelName, env, aMax, agents };
}

/** Runs the next stage agent by agent: yields every agent step, returns the stage's record when it ends. */
export async function* stepThrough(exp: Experiment): AsyncGenerator<AgentStepRecord, StageRecord, void> {
  const swap = await swapIfDue(exp);
  const gen = runStage({ env: exp.env, cfg: exp.cfg, team: exp.team, rng: exp.rng, betas: exp.betas, stage: exp.stagesDone + 1, aMax: exp.aMax, startEval: exp.lastEval, profiler: exp.profiler, certCredit: exp.certCredit });
  for (;;) {
    const r = await gen.next();
    if (r.done) {
      const rec = swap ? { ...r.value, swap } : r.value;
      exp.stagesDone += 1;
      exp.lastEval = rec.evaluation;
      exp.certCredit = certCreditAfter(rec);
      return rec;
    }
    yield r.value;
  }
}

/**
 * The configured plug-and-play swap (swapAgent ≥ 0), made just before stage `swapAt` starts: a
 * pure function of the team and the seed, so a replayed run swaps identically. Tabular games seat
 * the best response to the team (Stage-0-projected unless swapStage0 is off); language teams seat
 * a shipped model through `exp.swapModel` (lmSwap.ts `configuredLmSwap` over the experiment's
 * model loader, in-process or in the seat's worker) — without one, it fails with a message.
 */
/** Whether the configured swap happens before the next stage (the page says so while it runs). */
export function swapDue(exp: Experiment): boolean {
  return exp.cfg.swapAgent >= 0 && exp.stagesDone + 1 === exp.cfg.swapAt;
}

async function swapIfDue(exp: Experiment): Promise<SwapSummary | undefined> {
  const c = exp.cfg;
  if (!swapDue(exp)) return undefined;
  if (isLlmTask(c.task)) {
    if (!exp.swapModel) throw new SatError('swap', `Swapping a language agent (swapAgent = ${c.swapAgent}) needs a model loader: this experiment was built without one (createLlmExperiment and createRemoteExperiment set it).`);
    return exp.swapModel(exp, c.swapAgent, `${c.task}-${c.swapTo}`);
  }
  const tab = exp as TableExperiment;
  const pre = await bestResponseLogits(tab, c.swapAgent);
  const r = await swapAgent(tab, c.swapAgent, pre, { stage0: c.swapStage0, delta0: c.stage0Delta });
  const share = (kls: readonly number[]) => (kls.length ? kls.filter((k) => k > c.stage0Delta * (1 + 1e-9)).length / kls.length : 0);
  // Every state of the table, visited or not: the exact largest KL, the radius the floor needs.
  const certRadius = Math.max(0, ...(r.stage0 ? r.kls : r.klsPre));
  const [rMin, rMax] = exp.env.rewardRange;
  return {
    certRadius,
    certFloor: swapFloor(certRadius, exp.env.agentTurns(r.agent), rMax - rMin),
    agent: r.agent,
    incoming: 'best response',
    stage0: r.stage0,
    delta0: c.stage0Delta,
    klQuantiles: r.klQuantiles,
    outsideBefore: share(r.klsPre),
    outsideAfter: share(r.stage0 ? r.kls : r.klsPre),
    lambdaHist: lambdaHistogram(r.stage0 ? r.lambdas : r.lambdas.map(() => 0)),
    jBefore: r.jBefore,
    jAfter: r.jAfter,
  };
}

/** Runs `count` whole stages; `onStage` sees each as it finishes. */
export async function runStages(exp: Experiment, count: number, onStage?: (s: StageRecord) => void): Promise<StageRecord[]> {
  const out: StageRecord[] = [];
  for (let k = 0; k < count; k++) {
    const gen = stepThrough(exp);
    let r = await gen.next();
    while (!r.done) r = await gen.next();
    out.push(r.value);
    onStage?.(r.value);
  }
  return out;
}

/** The team as it stands: every agent's parameters and optimizer state, and β per agent. */
export async function teamState(exp: Experiment): Promise<{ snapshots: AgentSnapshot[]; betas: number[] }> {
  return { snapshots: await Promise.all(exp.team.map((a) => a.snapshot())), betas: exp.betas.slice() };
}

/**
 * Puts the experiment back at the boundary after `stages`: every agent restored, β per agent, the
 * count of stages done (it numbers the next stage and times a swap) with the last evaluation, and
 * the certification episodes the run has left unspent (read from the last stage's `cert/credit`).
 */
export async function restoreTeamState(exp: Experiment, state: { readonly snapshots: readonly AgentSnapshot[]; readonly betas: readonly number[] }, stages: readonly StageRecord[]): Promise<void> {
  await Promise.all(exp.team.map((a, i) => a.restore(state.snapshots[i]!)));
  exp.betas.splice(0, exp.betas.length, ...state.betas);
  exp.stagesDone = stages.length;
  const last = stages[stages.length - 1];
  exp.lastEval = last?.evaluation;
  exp.certCredit = certCreditAfter(last);
}

/** What a finished stage left the run to certify with (docs/certificate.md §5.3); 0 before the first stage or in records without it. */
export function certCreditAfter(rec: StageRecord | undefined): number {
  const c = rec?.metrics['cert/credit'];
  return typeof c === 'number' && Number.isFinite(c) ? c : 0;
}

/** The current team's J (exact for tabular games). */
export async function currentJ(exp: Experiment): Promise<number> {
  return (await exp.env.evaluate(exp.team)).J;
}

// What the page (src/app) asks of an experiment, so that it never reads env, team or rng.

/** How many agents the team has. */
export function teamSize(exp: Experiment): number {
  return exp.team.length;
}

/** What each agent is (name, kind, parameter count, backend), in seat order. */
export function agentInfos(exp: Experiment): Promise<AgentInfo[]> {
  return Promise.all(exp.team.map((a) => a.info()));
}

/** The agents themselves, as the experiment's kind types them (a worker team's handles: their probes). */
export function teamAgents<E extends Experiment>(exp: E): E['team'] {
  return exp.team;
}

/** Turns in one episode (the game view's time axis). */
export function episodeHorizon(exp: Experiment): number {
  return exp.env.horizon;
}

/** Table games: the exact game the team plays; null for language tasks. */
export function tableGame(exp: Experiment): TabularGame | null {
  return exp.env instanceof TabularEnv ? exp.env.game : null;
}

/** Agent j's parameters as they stand (a table's logits); reading them changes nothing in the run. */
export async function agentParams(exp: Experiment, j: number): Promise<Float64Array> {
  return (await exp.team[j]!.snapshot()).params;
}

/** Check bound (stage.ts checkFinishedStage): finished stage `rec`'s bound against ΔJ from `start` to the team as it stands; null when `watch` cancelled it. */
export function checkStageBound(exp: Experiment, start: readonly AgentSnapshot[], rec: StageRecord, pairs: number, watch?: CheckWatch): Promise<StageRecord | null> {
  return checkFinishedStage(exp.env, exp.team, start, rec, pairs, exp.rng, watch);
}

/** Language tasks: the episodes of the batch the latest agent step trained on (none for tables). */
export function latestEpisodes(exp: Experiment): readonly LmEpisodeRecord[] {
  const env = exp.env as Partial<LmEnv>;
  return Array.isArray(env.lastEpisodes) ? env.lastEpisodes : [];
}

export interface SwapReport {
  readonly agent: number;
  readonly stage0: boolean;
  /** λ(s) per state of the agent's table. */
  readonly lambdas: number[];
  /** KL(π_new(·|s) ‖ π_cur(·|s)) per state, and the same for the unprojected π_pre. */
  readonly kls: number[];
  readonly klsPre: number[];
  /** Occupancy-weighted quantiles of the per-state KL to π_cur (50/90/99 %). */
  readonly klQuantiles: { q50: number; q90: number; q99: number };
  readonly jBefore: number;
  readonly jAfter: number;
}

/**
 * Plug-and-play (docs/method.md §8.2), tabular: agent j's table is replaced by `preLogits`
 * ([nObs × nActions]), projected per state into KL ≤ δ_0 of the current table when `stage0` is true
 * (for a table the projected policy is represented exactly, so "distillation" is exact). Resets its
 * optimizer.
 */
export async function swapAgent(exp: TableExperiment, j: number, preLogits: Float64Array, opts: { stage0: boolean; delta0?: number }): Promise<SwapReport> {
  const agent = exp.team[j];
  if (!agent) throw new RangeError(`swap: no agent ${j} in a team of ${exp.team.length}`);
  const A = agent.nActions;
  if (preLogits.length !== agent.nObs * A) throw new RangeError(`swap: ${preLogits.length} logits for agent ${j}'s ${agent.nObs}×${A} table`);
  const jBefore = await currentJ(exp);
  const cur = await agent.getLogits();
  const rows = (z: Float64Array) => Array.from({ length: agent.nObs }, (_, s) => z.slice(s * A, (s + 1) * A));
  const proj = projectTable(rows(preLogits), rows(cur), opts.delta0 ?? exp.cfg.stage0Delta);
  const next = new Float64Array(preLogits.length);
  if (opts.stage0) proj.states.forEach((st, s) => next.set(st.logits, s * A));
  else next.set(preLogits);
  await agent.setLogits(next);
  exp.lastEval = undefined;
  const kls = opts.stage0 ? proj.kls : proj.klsPre;
  // Weight states by how often agent j visits them under the (new) team.
  const visits = stateVisitProbs(exp.game, tablePolicy(exp.game, await teamTables(exp.game, exp.team)), j);
  const w = visits.some((v) => v > 0) ? visits : kls.map(() => 1);
  const q = (p: number) => weightedQuantile(kls, w, p);
  return {
    agent: j,
    stage0: opts.stage0,
    lambdas: proj.lambdas,
    kls: proj.kls,
    klsPre: proj.klsPre,
    klQuantiles: { q50: q(0.5), q90: q(0.9), q99: q(0.99) },
    jBefore,
    jAfter: await currentJ(exp),
  };
}

/**
 * A "stronger" tabular agent to swap in: per state s, how good each action is for the team when
 * agent j plays it at s (and its current policy elsewhere), as logits scaled so the best action
 * leads by `sharpness` — a stand-in for a larger pretrained model that knows the best responses.
 */
export async function bestResponseLogits(exp: TableExperiment, j: number, sharpness = 4): Promise<Float64Array> {
  const agent = exp.team[j]!;
  const A = agent.nActions;
  const tables = await teamTables(exp.game, exp.team);
  const out = new Float64Array(agent.nObs * A);
  for (let s = 0; s < agent.nObs; s++) {
    for (let a = 0; a < A; a++) {
      const forced = tables[j]!.slice();
      forced.fill(0, s * A, (s + 1) * A);
      forced[s * A + a] = 1;
      const t = tables.slice();
      t[j] = forced;
      out[s * A + a] = exactJ(exp.game, tablePolicy(exp.game, t));
    }
    const row = out.subarray(s * A, (s + 1) * A);
    const lo = Math.min(...row);
    const hi = Math.max(...row);
    for (let a = 0; a < A; a++) row[a] = hi > lo ? (sharpness * (row[a]! - lo)) / (hi - lo) : 0;
  }
  return out;
}
