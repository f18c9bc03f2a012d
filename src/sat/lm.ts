/**
 * Language-model agents and their environment: the same `AgentPolicy` the tabular tables
 * implement, for a small transformer (src/model/transformer.ts), and a `TeamEnv` that runs the
 * LLM protocols (src/tasks/llm/protocols.ts) on a verifiable text task.
 *
 * States are token prefixes. A message is a sequence of token steps: at step k the agent saw the
 * prefix seq[0..pos) and emitted the token seq[pos]. Episodes therefore hold one `AgentTurn` per
 * token (obs = the step's index in the batch's `LmSteps` table, action = the token), so the SAT
 * core's per-step machinery — sequence ratios, exact per-state KL over the full vocabulary,
 * trust-region quantiles — applies unchanged. The end-of-message token is an action too: an agent
 * learns when to stop.
 *
 * Every log-prob used in a ratio comes from the same full forward pass at the sampling
 * temperature (never from the KV-cached sampler), so r = 1 exactly before the first step.
 *
 * Not here: the transformer's maths (src/model, src/backend) or the protocols' text (src/tasks/llm).
 */
import { NumericError } from '../core/errors';
import { Rng } from '../core/rng';
import { meanCI } from '../core/stats';
import { clippedLossBackward } from '../backend/cpu/objective';
import { gatherForward, klBackward, klForward, logSoftmaxForward } from '../backend/cpu/softmax';
import { tokenizer, EOS } from '../model/tokenizer';
import type { Transformer } from '../model/transformer';
import { nextTurn, protocolHorizon, teamVerdict, type Message, type TeamSpec } from '../tasks/llm/protocols';
import type { LlmTask, Problem } from '../tasks/llm/types';
import type { TeamEnv, TeamEvaluation } from './env';
import type { AgentBatch, AgentInfo, AgentPolicy, AgentSnapshot, AgentTurn, Batch, Episode, ObjectiveSpec, StepSet, TrainReport } from './types';

/** The token-prefix states behind a batch's step handles: step i predicts seqs[stepSeq[i]][stepPos[i]]. */
export interface LmSteps {
  readonly seqs: readonly Int32Array[];
  readonly stepSeq: Int32Array;
  readonly stepPos: Int32Array;
}

export interface GenerateOptions {
  readonly maxNew: number;
  readonly seed: number;
  readonly stream: number;
}

/** An agent that can also write messages (what an LM environment needs to roll out). */
export interface LmAgentPolicy extends AgentPolicy {
  /** Samples one message per context; each message ends before the stop token. */
  generate(contexts: readonly Int32Array[], opts: GenerateOptions): Promise<{ tokens: Int32Array[]; stopped: boolean[] }>;
}

function asLmSteps(steps: StepSet): LmSteps {
  const c = steps.context as LmSteps | undefined;
  if (!c || !Array.isArray(c.seqs) || !(c.stepSeq instanceof Int32Array)) {
    throw new TypeError('a language-model agent needs the batch context (token sequences) with its steps');
  }
  return c;
}

/** The distinct sequences behind some steps, right-padded into one [B × T] batch. */
export interface Pack {
  readonly B: number;
  readonly T: number;
  readonly tokens: Int32Array;
  /** Per step: the flat row (b·T + pos − 1) whose logits predict the step's token. */
  readonly row: Int32Array;
}

export function pack(steps: StepSet): Pack {
  const c = asLmSteps(steps);
  const slot = new Map<number, number>();
  const seqIds: number[] = [];
  for (const o of steps.obs) {
    const s = c.stepSeq[o]!;
    if (!slot.has(s)) {
      slot.set(s, seqIds.length);
      seqIds.push(s);
    }
  }
  const T = Math.max(1, ...seqIds.map((s) => c.seqs[s]!.length));
  const B = Math.max(1, seqIds.length);
  const tokens = new Int32Array(B * T); // PAD = 0 after each sequence (harmless under causal attention)
  seqIds.forEach((s, b) => tokens.set(c.seqs[s]!, b * T));
  const row = new Int32Array(steps.obs.length);
  steps.obs.forEach((o, k) => {
    row[k] = slot.get(c.stepSeq[o]!)! * T + c.stepPos[o]! - 1;
  });
  return { B, T, tokens, row };
}

/** Rows `row` of a [B·T × V] logits array, as a [K × V] array. */
export function gatherRows(full: Float32Array, row: Int32Array, V: number): Float32Array {
  const out = new Float32Array(row.length * V);
  row.forEach((r, k) => out.set(full.subarray(r * V, (r + 1) * V), k * V));
  return out;
}

/** Adds [K × V] rows back into a [B·T × V] array at `row`. */
export function scatterRows(full: Float32Array, rows: Float32Array, row: Int32Array, V: number): void {
  row.forEach((r, k) => {
    for (let v = 0; v < V; v++) full[r * V + v]! += rows[k * V + v]!;
  });
}

export class LmAgent implements LmAgentPolicy {
  readonly index: number;
  readonly name: string;
  readonly model: Transformer;
  /** Sampling temperature τ; every log-prob, ratio and KL uses the same τ. */
  readonly temperature: number;
  readonly topK: number;
  private ref: Float32Array;
  /** π_cur's logits at a step set, cached per StepSet object until the reference changes. */
  private refCache = new WeakMap<Int32Array, Float32Array>();
  /** The padded token batch behind a step set, cached per StepSet object (it never changes). */
  private packCache = new WeakMap<Int32Array, Pack>();
  /**
   * A reference policy that is not a parameter vector of this model (a Stage-0 projection,
   * src/sat/projectedAgent.ts): [K × V] logits at τ per step set. Null: π_cur = the frozen `ref`.
   */
  private refFn: ((steps: StepSet) => Float32Array) | null = null;

  constructor(index: number, model: Transformer, opts: { name?: string; temperature?: number; topK?: number } = {}) {
    this.index = index;
    this.model = model;
    this.name = opts.name ?? `lm-${index}`;
    this.temperature = opts.temperature ?? 1;
    this.topK = opts.topK ?? 0;
    this.ref = model.params.slice();
  }

  private packOf(steps: StepSet): Pack {
    let p = this.packCache.get(steps.obs);
    if (!p) {
      p = pack(steps);
      this.packCache.set(steps.obs, p);
    }
    return p;
  }

  private get V(): number {
    return this.model.cfg.vocab;
  }

  /** Logits at every step under the current parameters ([K × V]); `keep` retains activations for backward. */
  private logitsAt(steps: StepSet, p: Pack, keep = false): Float32Array {
    return gatherRows(this.model.forward(p.tokens, p.B, p.T, { keep }), p.row, this.V);
  }

  /** Logits at every step under π_cur (the reference parameters). */
  private refLogitsAt(steps: StepSet, p: Pack): Float32Array {
    const hit = this.refCache.get(steps.obs);
    if (hit) return hit;
    if (this.refFn) {
      const z = this.refFn(steps);
      this.refCache.set(steps.obs, z);
      return z;
    }
    const cur = this.model.params.slice();
    this.model.params.set(this.ref);
    const out = this.logitsAt(steps, p);
    this.model.params.set(cur);
    this.refCache.set(steps.obs, out);
    return out;
  }

  async info(): Promise<AgentInfo> {
    return { name: this.name, kind: 'lm', parameters: this.model.params.length, backend: 'cpu' };
  }

  /** log π_θ(·|s) at the sampling temperature, at every step's state ([K × V]). */
  private logPolicyAt(steps: StepSet): Float64Array {
    const K = steps.obs.length;
    const lp = new Float64Array(K * this.V);
    logSoftmaxForward(lp, this.logitsAt(steps, this.packOf(steps)), K, this.V, this.temperature);
    return lp;
  }

  async distributions(steps: StepSet): Promise<Float64Array> {
    return this.logPolicyAt(steps).map(Math.exp);
  }

  async logProbs(steps: StepSet): Promise<Float64Array> {
    const actions = steps.actions;
    if (!actions || actions.length !== steps.obs.length) throw new RangeError(`agent ${this.index}: logProbs needs one action per step`);
    const out = new Float64Array(steps.obs.length);
    gatherForward(out, this.logPolicyAt(steps), actions, steps.obs.length, this.V);
    return out;
  }

  async setReference(): Promise<void> {
    this.ref = this.model.params.slice();
    this.refFn = null;
    this.refCache = new WeakMap();
  }

  /**
   * Makes π_cur (the reference of ratios, KL and the trust region) a policy given by its logits
   * at τ — [K × V] per step set — instead of this model's frozen parameters, until the next
   * `setReference()`. Used when another policy sampled the batch this model is trained on (the
   * Stage-0 projection of a plug-and-play swap, src/sat/projectedAgent.ts).
   */
  setReferencePolicy(logitsAt: (steps: StepSet) => Float32Array): void {
    this.refFn = logitsAt;
    this.refCache = new WeakMap();
  }

  /** π_cur's logits at τ at every step's state ([K × V]). */
  referenceLogits(steps: StepSet): Float32Array {
    return this.refLogitsAt(steps, this.packOf(steps));
  }

  async klToReference(steps: StepSet): Promise<Float64Array> {
    const p = this.packOf(steps);
    const zRef = this.refLogitsAt(steps, p);
    const z = this.logitsAt(steps, p);
    const out = new Float32Array(steps.obs.length);
    klForward(out, z, zRef, steps.obs.length, this.V, this.temperature);
    return Float64Array.from(out, (x) => Math.max(0, x));
  }

  /** ∂(objective)/∂θ from per-step logit gradients: one backward pass into model.grads. */
  private backwardFrom(p: Pack, dRows: Float32Array): void {
    const dFull = new Float32Array(p.B * p.T * this.V);
    scatterRows(dFull, dRows, p.row, this.V);
    this.model.backward(dFull);
  }

  async trainStep(batch: AgentBatch, spec: ObjectiveSpec): Promise<TrainReport> {
    const p = this.packOf(batch);
    const K = batch.obs.length;
    const zRef = this.refLogitsAt(batch, p);
    this.model.zeroGrad();
    const z = this.logitsAt(batch, p, true);
    const dRows = new Float32Array(K * this.V);
    // scale −1: the gradient of the loss −L, which AdamW descends.
    const st = clippedLossBackward(dRows, null, z, zRef, batch.actions, batch.episodeOf, batch.adv, batch.weight, K, this.V, batch.nEpisodes, batch.horizon, this.temperature, spec, -1);
    if (!Number.isFinite(st.objective)) {
      throw new NumericError(`agent ${this.index}: the objective is ${st.objective} (surrogate ${st.surrogate}, KL ${st.klMean}); parameters left unchanged`);
    }
    this.backwardFrom(p, dRows);
    let norm2 = 0;
    for (const g of this.model.grads) norm2 += g * g;
    if (!Number.isFinite(norm2)) throw new NumericError(`agent ${this.index}: the gradient has a non-finite entry; parameters left unchanged`);
    this.model.adamStep(spec.lr, spec.weightDecay);
    return { objective: st.objective, surrogate: st.surrogate, clipfrac: st.clipfrac, gradNorm: Math.sqrt(norm2) };
  }

  async surrogateGradient(batch: AgentBatch): Promise<Float64Array> {
    const p = this.packOf(batch);
    const K = batch.obs.length;
    const zRef = this.refLogitsAt(batch, p);
    this.model.zeroGrad();
    const z = this.logitsAt(batch, p, true);
    const dRows = new Float32Array(K * this.V);
    // The unclipped, unpenalised surrogate (1/N) Σ w A (r − 1): a clip band too wide to bind, β = 0.
    const spec = { level: 'sequence', tokenAgg: 'grpo', epsLow: 1 - 1e-12, epsHigh: 1e12, beta: 0 } as const;
    clippedLossBackward(dRows, null, z, zRef, batch.actions, batch.episodeOf, batch.adv, batch.weight, K, this.V, batch.nEpisodes, batch.horizon, this.temperature, spec, 1);
    this.backwardFrom(p, dRows);
    return Float64Array.from(this.model.grads);
  }

  /**
   * F v by a central difference of the gradient of θ' ↦ (1/K) Σ_k KL(π_θ(·|s_k) ‖ π_θ'(·|s_k)) at
   * θ' = θ ± εv: that function's Hessian at θ' = θ is the Fisher of π_θ on the steps.
   */
  async fisherVectorProduct(steps: StepSet, v: Float64Array): Promise<Float64Array> {
    const p = this.packOf(steps);
    const K = steps.obs.length;
    const V = this.V;
    const zP = this.logitsAt(steps, p);
    let vn = 0;
    for (const x of v) vn += x * x;
    vn = Math.sqrt(vn);
    const out = new Float64Array(v.length);
    if (vn === 0 || K === 0) return out;
    const eps = 1e-3 / vn;
    const theta = this.model.params.slice();
    const dout = new Float32Array(K).fill(1 / K);
    for (const sgn of [1, -1]) {
      for (let i = 0; i < theta.length; i++) this.model.params[i] = theta[i]! + sgn * eps * v[i]!;
      this.model.zeroGrad();
      const zQ = this.logitsAt(steps, p, true);
      const dQ = new Float32Array(K * V);
      klBackward(null, dQ, dout, zP, zQ, K, V, this.temperature);
      this.backwardFrom(p, dQ);
      for (let i = 0; i < out.length; i++) out[i]! += (sgn * this.model.grads[i]!) / (2 * eps);
    }
    this.model.params.set(theta);
    return out;
  }

  async snapshot(): Promise<AgentSnapshot> {
    const s = this.model.getState();
    return { params: Float64Array.from(s.params), optim: Float64Array.from(s.optim) };
  }

  async restore(s: AgentSnapshot): Promise<void> {
    this.model.setState({ params: Float32Array.from(s.params), optim: Float32Array.from(s.optim) });
  }

  async interpolate(from: AgentSnapshot, f: number): Promise<void> {
    const cur = this.model.params.slice();
    await this.restore(from);
    for (let i = 0; i < cur.length; i++) this.model.params[i] = from.params[i]! + f * (cur[i]! - from.params[i]!);
  }

  async generate(contexts: readonly Int32Array[], opts: GenerateOptions): Promise<{ tokens: Int32Array[]; stopped: boolean[] }> {
    const r = this.model.generate([...contexts], { maxNew: opts.maxNew, temperature: this.temperature, topK: this.topK, seed: opts.seed, stream: opts.stream, stop: EOS });
    return { tokens: r.tokens, stopped: r.stopped };
  }
}

export interface LmEnvOptions {
  /** Most tokens per message (the end-of-message token included). */
  readonly maxNew: number;
  /** Held-out problems behind each evaluation of J. */
  readonly evalEpisodes: number;
  /** Seed of the evaluation's sampling (fixed, so successive evaluations share random numbers). */
  readonly evalSeed: number;
}

/** A message being written: who, at which turn, its context and its tokens. */
interface Written {
  readonly agent: number;
  readonly turn: number;
  readonly context: Int32Array;
  readonly tokens: Int32Array;
  readonly stopped: boolean;
}

/** One finished episode with its messages and grade, for transcripts. */
export interface LmEpisodeRecord {
  readonly problem: Problem;
  readonly sample: number;
  readonly messages: readonly Message[];
  readonly reward: number;
  readonly correct: boolean;
}

export class LmEnv implements TeamEnv {
  readonly task: LlmTask;
  /** Held-out evaluation costs episodes: the stage loop evaluates only at stage ends. */
  readonly evaluatePerAgent = false;
  readonly nAgents: number;
  readonly protocol: TeamSpec['protocol'];
  readonly opts: LmEnvOptions;
  /** The episodes of the last rollout, for transcripts. */
  lastEpisodes: LmEpisodeRecord[] = [];

  constructor(task: LlmTask, protocol: TeamSpec['protocol'], nAgents: number, opts: LmEnvOptions) {
    this.task = task;
    this.protocol = protocol;
    this.nAgents = nAgents;
    this.opts = opts;
  }

  /** Horizon in token steps: turns × tokens per message (the per-state KL lives on tokens). */
  get horizon(): number {
    return protocolHorizon({ protocol: this.protocol, nAgents: this.nAgents }) * this.opts.maxNew;
  }

  get rewardRange(): readonly [number, number] {
    return this.task.rewardRange;
  }

  /** `independent`: sample k of a group is answered by agent k mod n, so a unit holds one per agent. */
  get slots(): number {
    return this.protocol === 'independent' ? this.nAgents : 1;
  }

  /** Every protocol lets an agent speak at most once per episode (a turn is one whole message). */
  agentTurns(_agent: number): number {
    return 1;
  }

  /** A message has at most maxNew token steps (its end-of-message token included). */
  get stepsPerTurn(): number {
    return this.opts.maxNew;
  }

  /** Plays `problems[i]` once each (sample index `samples[i]`), all episodes advancing turn by turn. */
  private async play(team: readonly AgentPolicy[], problems: readonly Problem[], samples: readonly number[], rng: Rng): Promise<{ written: Written[][]; messages: Message[][] }> {
    const E = problems.length;
    const messages: Message[][] = problems.map(() => []);
    const written: Written[][] = problems.map(() => []);
    for (let round = 0; ; round++) {
      const due: { e: number; agent: number; turn: number; context: Int32Array }[] = [];
      for (let e = 0; e < E; e++) {
        const spec: TeamSpec = { protocol: this.protocol, nAgents: this.nAgents, sample: samples[e]! };
        for (const slot of nextTurn(spec, problems[e]!, messages[e]!)) {
          due.push({ e, agent: slot.agent, turn: slot.turn, context: Int32Array.from(tokenizer.encode(slot.context, { bos: true })) });
        }
      }
      if (due.length === 0) break;
      for (let a = 0; a < team.length; a++) {
        const mine = due.filter((d) => d.agent === a);
        if (mine.length === 0) continue;
        const agent = team[a] as LmAgentPolicy;
        const gen = await agent.generate(mine.map((d) => d.context), { maxNew: this.opts.maxNew, seed: rng.fork(round, a).nextU32(), stream: a });
        mine.forEach((d, i) => {
          const tokens = gen.tokens[i]!;
          written[d.e]!.push({ agent: a, turn: d.turn, context: d.context, tokens, stopped: gen.stopped[i]! });
          messages[d.e]!.push({ turn: d.turn, agent: a, text: tokenizer.decode(tokens) });
        });
      }
    }
    return { written, messages };
  }

  async rollout(team: readonly AgentPolicy[], B: number, G: number, rng: Rng, opts: { record?: boolean } = {}): Promise<Batch> {
    const problems: Problem[] = [];
    const samples: number[] = [];
    for (let g = 0; g < B; g++) {
      const problem = this.task.generate('train', rng.fork(g).int(1 << 24));
      for (let k = 0; k < G; k++) {
        problems.push(problem);
        samples.push(k);
      }
    }
    const { written, messages } = await this.play(team, problems, samples, rng.fork(0x6c6d));

    // The batch's token-state table: one sequence per message, one step per message token (+ EOS).
    const seqs: Int32Array[] = [];
    const stepSeq: number[] = [];
    const stepPos: number[] = [];
    const perEpisode: { agent: number; t: number; step: number; action: number }[][] = written.map(() => []);
    written.forEach((ws, e) => {
      for (const w of ws) {
        const seq = new Int32Array(w.context.length + w.tokens.length + (w.stopped ? 1 : 0));
        seq.set(w.context);
        seq.set(w.tokens, w.context.length);
        if (w.stopped) seq[seq.length - 1] = EOS;
        const id = seqs.push(seq) - 1;
        for (let pos = w.context.length; pos < seq.length; pos++) {
          perEpisode[e]!.push({ agent: w.agent, t: w.turn, step: stepSeq.length, action: seq[pos]! });
          stepSeq.push(id);
          stepPos.push(pos);
        }
      }
    });
    const context: LmSteps = { seqs, stepSeq: Int32Array.from(stepSeq), stepPos: Int32Array.from(stepPos) };

    // log π_cur of every step, from each agent's full forward pass (so ratios start at exactly 1).
    const logp = new Float64Array(stepSeq.length);
    for (let a = 0; a < team.length; a++) {
      const mine = perEpisode.flat().filter((s) => s.agent === a);
      if (mine.length === 0) continue;
      const lp = await team[a]!.logProbs({ obs: Int32Array.from(mine, (s) => s.step), actions: Int32Array.from(mine, (s) => s.action), context });
      mine.forEach((s, i) => (logp[s.step] = lp[i]!));
    }

    const episodes: Episode[] = [];
    const records: LmEpisodeRecord[] = [];
    problems.forEach((problem, e) => {
      const spec: TeamSpec = { protocol: this.protocol, nAgents: this.nAgents, sample: samples[e]! };
      const verdict = teamVerdict(spec, this.task, problem, messages[e]!);
      const turns: AgentTurn[] = perEpisode[e]!.map((s) => ({ agent: s.agent, t: s.t, obs: s.step, action: s.action, logp: logp[s.step]! }));
      episodes.push({ prompt: problem.index, slot: samples[e]! % this.nAgents, group: Math.floor(e / G), turns, reward: verdict.reward });
      records.push({ problem, sample: samples[e]!, messages: messages[e]!, reward: verdict.reward, correct: verdict.correct });
    });
    if (opts.record !== false) this.lastEpisodes = records;
    return { episodes, groups: B, groupSize: G, context };
  }

  /** J on the first `evalEpisodes` held-out problems, one sampled episode each, with a fixed seed. */
  async evaluate(team: readonly AgentPolicy[]): Promise<TeamEvaluation & { accuracy: number }> {
    const E = this.opts.evalEpisodes;
    const problems = Array.from({ length: E }, (_, i) => this.task.generate('heldout', i));
    const samples = problems.map((_, i) => i);
    const { messages } = await this.play(team, problems, samples, new Rng(this.opts.evalSeed, [0x6576]));
    const rewards: number[] = [];
    let correct = 0;
    problems.forEach((problem, e) => {
      const v = teamVerdict({ protocol: this.protocol, nAgents: this.nAgents, sample: samples[e]! }, this.task, problem, messages[e]!);
      rewards.push(v.reward);
      if (v.correct) correct++;
    });
    const ci = meanCI(rewards);
    return { J: ci.mean, ci: Number.isFinite(ci.halfWidth) ? ci.halfWidth : 0, exact: false, accuracy: correct / E };
  }
}
