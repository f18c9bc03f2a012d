/**
 * The language-model agent: the `AgentPolicy` the tabular tables implement, for one small
 * transformer (src/model/model.ts) on any backend — CPU kernels or WebGPU — so the same class
 * trains in the CLI, in the page's workers and on a GPU. States are token prefixes and actions
 * tokens (end-of-message included), so the SAT core's per-step machinery applies unchanged.
 *
 * Not here: the model's maths (src/model/model.ts), the environment (src/sat/env/lm.ts), choosing
 * a backend or a device (the worker does), the Stage-0 projection (projected.ts wraps this class).
 */
import type { Backend, ClippedLossSpec, HostTensors, TensorKinds } from '../../backend/types';
import { samplerLogProbs } from '../../backend/cpu/sampling';
import { gatherForward, logSoftmaxForward } from '../../backend/cpu/softmax';
import { ConfigError, NumericError } from '../../core/errors';
import { addScaled, lerp, sumOfSquares } from '../../core/vec';
import type { Model } from '../../model/model';
import { tokenizer as charTokenizer, type TextTokenizer } from '../../model/tokenizer';
import type { AgentBatch, AgentInfo, AgentPolicy, AgentSnapshot, ObjectiveSpec, StepSet, TrainReport } from '../types';

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
  /** The agent's own tokenizer (a loaded checkpoint's); absent: the char tokenizer. It does not cross a worker boundary. */
  readonly tokenizer?: TextTokenizer;
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

/**
 * Logits of a model at the rows `row` of tokens [B × T] ([K × V], downloaded): one forward, one
 * row gather on the backend, one download. For frozen models (a Stage-0 projection's two halves).
 */
export async function logitRows<X extends TensorKinds>(model: Model<X>, tokens: Int32Array, B: number, T: number, row: Int32Array): Promise<Float32Array> {
  const be = model.be;
  const K = row.length;
  const V = model.cfg.vocab;
  if (K === 0) return new Float32Array(0);
  const full = model.forward(tokens, B, T);
  const idx = be.upload('i32', row);
  const out = be.zeros('f32', K * V);
  be.embeddingForward(out, idx, full, 1, K, V);
  const z = await be.download('f32', out);
  be.dispose(idx);
  be.dispose(out);
  return z;
}

/** A step set's padded batch, with its row index uploaded once. */
interface DevicePack<X extends TensorKinds> {
  readonly p: Pack;
  readonly K: number;
  readonly row: X['i32'];
}

/**
 * One language agent. A message is a sequence of token steps: at step k the agent saw the prefix
 * seq[0..pos) and emitted seq[pos], so an episode holds one `AgentTurn` per token (obs = the step's
 * index in the batch's `LmSteps` table, action = the token). Every log-prob in a ratio comes from
 * the same full forward pass at the sampling temperature (never the KV-cached sampler), so r = 1
 * exactly before the first step, and is the log-prob of what the sampler draws from (top-k
 * truncated and renormalised when topK > 0); the trust region's KL stays the full-softmax KL.
 *
 * On the backend: every forward and backward, the gather of step rows out of the [B·T × V] logits
 * and the scatter of their gradient, the clipped-loss gradient, the KL, AdamW; the frozen reference
 * π_cur is a device copy of the parameters, its logits cached per step set (by the identity of its
 * `obs` array) until the reference moves. Read back per call (in place where the backend's
 * tensors are host memory: `readLogits`, ParamStore's flat reads): what the caller needs — [K × V]
 * logit rows (log-softmax in f64 on the host), K KL values, the 4 loss statistics and the flat
 * gradient (its norm is a metric and the finiteness guard), S token ids per decoding step.
 * Per-episode inputs (advantages, IS weights) travel as f32 tensors, as they must on a GPU.
 */
export class LmAgent<X extends TensorKinds = HostTensors> implements LmAgentPolicy {
  readonly index: number;
  readonly name: string;
  readonly model: Model<X>;
  /** Sampling temperature τ; every log-prob, ratio and KL uses the same τ. */
  readonly temperature: number;
  readonly topK: number;
  /** Score the full softmax even when top-k truncates the sampler (the validity test's negative control). */
  readonly fullSoftmaxScores: boolean;
  /** Encodes this agent's contexts and decodes its messages; its `eos` ends a message. */
  readonly tokenizer: TextTokenizer;
  /** π_cur's parameters (a device copy), when the reference is this model's own frozen weights. */
  private ref: X['f32'][];
  /** π_cur's logits at a step set ([K × V], on the device), until the reference changes. */
  private refCache = new Map<Int32Array, X['f32']>();
  private packCache = new Map<Int32Array, DevicePack<X>>();
  /**
   * A reference policy that is not a parameter vector of this model (a Stage-0 projection,
   * projected.ts): [K × V] logits at τ per step set. Null: π_cur = the frozen `ref`.
   */
  private refFn: ((steps: StepSet) => Promise<Float32Array>) | null = null;
  /** Fisher-vector products: the step set, p at θ and θ itself, valid while the model keeps that forward (Model.keptFor). */
  private fvpAt: { obs: Int32Array; p: Float64Array; theta: Float32Array } | null = null;
  /** Two parameter sets for θ ± εv (allocated at the first product). */
  private fvpSets: X['f32'][][] | null = null;
  /**
   * Host arrays that never leave a call (θ ± εv, H(Jv), log π for a gather), kept and reused: a
   * fresh array costs its pages' first touch, dear in a browser's worker (docs/performance.md
   * "Fresh host arrays in the agent's calls").
   */
  private readonly scratch = new Scratch();

  constructor(index: number, model: Model<X>, opts: { name?: string; temperature?: number; topK?: number; tokenizer?: TextTokenizer; fullSoftmaxScores?: boolean } = {}) {
    this.index = index;
    this.model = model;
    this.name = opts.name ?? `lm-${index}`;
    this.temperature = opts.temperature ?? 1;
    this.topK = opts.topK ?? 0;
    this.fullSoftmaxScores = opts.fullSoftmaxScores ?? false;
    this.tokenizer = opts.tokenizer ?? charTokenizer;
    // A tokenizer the caller brings must fit the model (tests run the char tokenizer's default over smaller toy vocabularies).
    if (opts.tokenizer !== undefined && this.tokenizer.vocabSize > model.cfg.vocab) {
      throw new ConfigError('tokenizer', this.tokenizer.vocabSize, `agent ${index}: its tokenizer has ${this.tokenizer.vocabSize} ids but its model's vocabulary is ${model.cfg.vocab}.`);
    }
    this.ref = model.copyParams();
  }

  private get be(): Backend<X> {
    return this.model.be;
  }

  private get V(): number {
    return this.model.cfg.vocab;
  }

  private packOf(steps: StepSet): DevicePack<X> {
    let d = this.packCache.get(steps.obs);
    if (!d) {
      const p = pack(steps);
      d = { p, K: steps.obs.length, row: this.be.upload('i32', p.row) };
      this.packCache.set(steps.obs, d);
    }
    return d;
  }

  /** Releases the model and every tensor this agent holds (it must not be used afterwards). */
  dispose(): void {
    this.clearCaches();
    for (const t of [...this.ref, ...(this.fvpSets ?? []).flat()]) this.be.dispose(t);
    this.ref = [];
    this.fvpSets = null;
    this.fvpAt = null;
    this.model.dispose();
  }

  /** Drops the per-step-set caches (device tensors released). */
  private clearCaches(): void {
    for (const t of this.refCache.values()) this.be.dispose(t);
    for (const d of this.packCache.values()) this.be.dispose(d.row);
    this.refCache = new Map();
    this.packCache = new Map();
  }

  /** Logits at every step ([K × V], a fresh device tensor) under the current parameters, or `params`. */
  private logitsAt(d: DevicePack<X>, opts: { keep?: boolean; params?: readonly X['f32'][] } = {}): X['f32'] {
    const full = this.model.forward(d.p.tokens, d.p.B, d.p.T, opts);
    const out = this.be.zeros('f32', Math.max(1, d.K * this.V));
    if (d.K > 0) this.be.embeddingForward(out, d.row, full, 1, d.K, this.V);
    return out;
  }

  /** π_cur's logits at every step (device, cached; do not dispose). */
  private async refLogitsAt(steps: StepSet, d: DevicePack<X>): Promise<X['f32']> {
    const hit = this.refCache.get(steps.obs);
    if (hit) return hit;
    const z = this.refFn ? this.be.upload('f32', await this.refFn(steps)) : this.logitsAt(d, { params: this.ref });
    this.refCache.set(steps.obs, z);
    return z;
  }

  async info(): Promise<AgentInfo> {
    return { name: this.name, kind: 'lm', parameters: this.model.paramCount(), backend: this.be.name };
  }

  /**
   * log π_θ(·|s) at every step ([K × V]), in f64 on the host from the downloaded logit rows: the
   * distribution the sampler draws from — softmax at τ, and with top-k the k largest renormalised
   * (−Infinity off them; `samplerLogProbs`), so that E_old[r] = 1 holds for the ratios built from
   * it (docs/certificate.md §3.1). `fullSoftmaxScores` scores the untruncated softmax instead: the
   * negative control of the validity test, not a policy anyone samples.
   */
  private async logPolicyAt(steps: StepSet): Promise<Float64Array> {
    const d = this.packOf(steps);
    if (d.K === 0) return new Float64Array(0);
    return this.readLogits([this.logitsAt(d)], ([z]) => this.logPolicyOf(new Float64Array(z!.length), z!));
  }

  /**
   * Runs `fn` on the host contents of logit tensors, then frees them: read in place where the
   * backend's tensors are host memory (`Backend.hostView`), else downloaded together. `fn` runs
   * with no await after the read, so no other call can reuse their memory (or a scratch array
   * `fn` fills) before it is done.
   */
  private async readLogits<T>(zts: readonly X['f32'][], fn: (zs: Float32Array[]) => T): Promise<T> {
    const view = this.be.hostView;
    const zs = view ? zts.map((t) => view(t)) : await Promise.all(zts.map((t) => this.be.download('f32', t)));
    try {
      return fn(zs);
    } finally {
      for (const t of zts) this.be.dispose(t);
    }
  }

  /** `logPolicyAt`'s maths: log π into `lp` from the [K × V] logit rows `z`; returns `lp`. */
  private logPolicyOf(lp: Float64Array, z: Float32Array): Float64Array {
    const K = z.length / this.V;
    if (K === 0) return lp;
    if (this.truncates) samplerLogProbs(lp, z, K, this.V, this.temperature, this.topK);
    else logSoftmaxForward(lp, z, K, this.V, this.temperature);
    return lp;
  }

  /** True when the sampler keeps fewer than all tokens and the scores follow it. */
  private get truncates(): boolean {
    return this.topK > 0 && this.topK < this.V && !this.fullSoftmaxScores;
  }

  async distributions(steps: StepSet): Promise<Float64Array> {
    return (await this.logPolicyAt(steps)).map(Math.exp);
  }

  async logProbs(steps: StepSet): Promise<Float64Array> {
    const actions = steps.actions;
    if (!actions || actions.length !== steps.obs.length) throw new RangeError(`agent ${this.index}: logProbs needs one action per step`);
    const out = new Float64Array(steps.obs.length);
    if (out.length === 0) return out;
    // log π in a reused array, filled and gathered inside readLogits (no await between).
    return this.readLogits([this.logitsAt(this.packOf(steps))], ([z]) => {
      gatherForward(out, this.logPolicyOf(this.scratch.f64('logPolicy', z!.length), z!), actions, steps.obs.length, this.V);
      return out;
    });
  }

  async setReference(): Promise<void> {
    this.model.copyParamsInto(this.ref);
    this.refFn = null;
    this.clearCaches();
  }

  /**
   * Makes π_cur (the reference of ratios, KL and the trust region) a policy given by its logits
   * at τ — [K × V] per step set — instead of this model's frozen parameters, until the next
   * `setReference()`. Used when another policy sampled the batch this model is trained on (the
   * Stage-0 projection of a plug-and-play swap, projected.ts).
   */
  setReferencePolicy(logitsAt: (steps: StepSet) => Promise<Float32Array>): void {
    this.refFn = logitsAt;
    this.clearCaches();
  }

  /** π_cur's logits at τ at every step's state ([K × V]; one download). */
  async referenceLogits(steps: StepSet): Promise<Float32Array> {
    const d = this.packOf(steps);
    if (d.K === 0) return new Float32Array(0);
    return this.be.download('f32', await this.refLogitsAt(steps, d));
  }

  async klToReference(steps: StepSet): Promise<Float64Array> {
    const d = this.packOf(steps);
    const K = d.K;
    if (K === 0) return new Float64Array(0);
    const zRef = await this.refLogitsAt(steps, d);
    const z = this.logitsAt(d);
    const out = this.be.zeros('f32', K);
    this.be.klForward(out, z, zRef, K, this.V, this.temperature);
    const kl = await this.be.download('f32', out);
    this.be.dispose(z);
    this.be.dispose(out);
    return Float64Array.from(kl, (x) => Math.max(0, x));
  }

  /** ∂(objective)/∂θ from per-step logit gradients [K × V]: scatter into [B·T × V], one backward. */
  private backwardFrom(d: DevicePack<X>, dRows: X['f32']): void {
    const dFull = this.be.zeros('f32', d.p.B * d.p.T * this.V);
    if (d.K > 0) this.be.embeddingBackward(dFull, dRows, d.row, 1, d.K, this.V);
    this.model.backward(dFull);
    this.be.dispose(dFull);
  }

  /** The clipped-loss gradient (scale as clippedLossBackward) of the current parameters, accumulated into grads; returns the stats tensor. */
  private async objectiveBackward(batch: AgentBatch, spec: ClippedLossSpec, scale: number): Promise<X['f32']> {
    const be = this.be;
    const d = this.packOf(batch);
    const K = d.K;
    const zRef = await this.refLogitsAt(batch, d);
    // Uploads before the forward: on a GPU each upload first submits the work pending before it.
    const up = [
      be.upload('i32', batch.actions),
      be.upload('i32', batch.episodeOf),
      be.upload('f32', Float32Array.from(batch.adv)),
      be.upload('f32', Float32Array.from(batch.weight)),
    ] as const;
    this.model.zeroGrad();
    const z = this.logitsAt(d, { keep: true });
    const dRows = be.zeros('f32', Math.max(1, K * this.V));
    const stats = be.zeros('f32', 4);
    be.clippedLossBackward(dRows, stats, z, zRef, up[0], up[1], up[2], up[3], K, this.V, batch.nEpisodes, batch.horizon, this.temperature, spec, scale);
    this.backwardFrom(d, dRows);
    for (const t of [z, dRows, ...up]) be.dispose(t);
    return stats;
  }

  async trainStep(batch: AgentBatch, spec: ObjectiveSpec): Promise<TrainReport> {
    // scale −1: the gradient of the loss −L, which AdamW descends.
    const statsT = await this.objectiveBackward(batch, spec, -1);
    const st = await this.be.download('f32', statsT);
    this.be.dispose(statsT);
    const [objective, surrogate, klMean, clipfrac] = [st[0]!, st[1]!, st[2]!, st[3]!];
    if (!Number.isFinite(objective)) {
      throw new NumericError(`agent ${this.index}: the objective is ${objective} (surrogate ${surrogate}, KL ${klMean}); parameters left unchanged`);
    }
    const grads = await this.model.getGrads();
    const norm2 = sumOfSquares(grads);
    if (!Number.isFinite(norm2)) throw new NumericError(`agent ${this.index}: the gradient has a non-finite entry; parameters left unchanged`);
    this.model.adamStep({ lr: spec.lr, weightDecay: spec.weightDecay });
    return { objective, surrogate, clipfrac, gradNorm: Math.sqrt(norm2) };
  }

  async surrogateGradient(batch: AgentBatch): Promise<Float64Array> {
    // The unclipped, unpenalised surrogate (1/N) Σ w A (r − 1): a clip band too wide to bind, β = 0.
    const spec = { level: 'sequence', tokenAgg: 'grpo', epsLow: 1 - 1e-12, epsHigh: 1e12, beta: 0 } as const;
    this.be.dispose(await this.objectiveBackward(batch, spec, 1));
    return this.model.getGrads(Float64Array);
  }

  /**
   * F v, the Fisher of π_θ on the steps times v (docs/method.md §7.3), in its Gauss–Newton form
   *
   *   F v = (1/K) Σ_k J_kᵀ H_k (J_k v),   H_k = (diag(p_k) − p_k p_kᵀ)/τ²,   p_k = softmax(z_k/τ),
   *
   * J_k = ∂z_k/∂θ the logits' Jacobian — the Hessian of θ' ↦ (1/K) Σ_k KL(π_θ(·|s_k) ‖ π_θ'(·|s_k))
   * at θ' = θ. J v comes from a central difference of the logits (two forwards over θ ± εv, on
   * parameter sets of their own), H (J v) is exact on the host, and Jᵀ(·) is ONE backward through
   * the activations kept at θ — which stay kept across the products of one conjugate-gradient
   * solve (`Model.keptFor`), so a product costs two forwards and a backward.
   */
  async fisherVectorProduct(steps: StepSet, v: Float64Array): Promise<Float64Array> {
    const be = this.be;
    const d = this.packOf(steps);
    const K = d.K;
    const V = this.V;
    const tau = this.temperature;
    if (v.length !== this.model.paramCount()) throw new RangeError(`agent ${this.index}: fisherVectorProduct needs a vector of ${this.model.paramCount()} values, got ${v.length}`);
    const vn = Math.sqrt(sumOfSquares(v));
    if (vn === 0 || K === 0) return new Float64Array(v.length);
    // θ, and p at θ with the activations kept for the backward (once per step set and θ).
    let at = this.fvpAt;
    if (at === null || at.obs !== steps.obs || !this.model.keptFor(d.p.tokens)) {
      const p = await this.readLogits([this.logitsAt(d, { keep: true })], ([z]) => {
        const q = new Float64Array(K * V);
        logSoftmaxForward(q, z!, K, V, tau);
        for (let i = 0; i < q.length; i++) q[i] = Math.exp(q[i]!);
        return q;
      });
      at = this.fvpAt = { obs: steps.obs, p, theta: await this.model.getParams() };
    }
    const sets = (this.fvpSets ??= [this.model.copyParams(), this.model.copyParams()]);
    const eps = 1e-3 / vn;
    const theta = at.theta;
    const moved = this.scratch.f32('moved', theta.length);
    for (const [k, sgn] of [[0, 1], [1, -1]] as const) {
      addScaled(moved, theta, sgn * eps, v);
      this.model.writeParams(sets[k]!, moved); // both uploads before any forward (see objectiveBackward)
    }
    // h_k = H_k (J_k v) / K, with J_k v = (z(θ+εv) − z(θ−εv)) / 2ε.
    const p = at.p;
    const hT = await this.readLogits(sets.map((set) => this.logitsAt(d, { params: set })), ([zp, zm]) => be.upload('f32', this.fisherRows(zp!, zm!, p, K, eps))); // the scratch rows are copied before any other call can take them
    this.model.zeroGrad();
    this.backwardFrom(d, hT);
    be.dispose(hT);
    return this.model.getGrads(Float64Array);
  }

  /**
   * The Fisher-vector product's output rows h_k = H_k (J_k v) / K from the logits at θ ± εv and p
   * at θ (a method rather than a closure made anew on every call).
   */
  private fisherRows(zp: Float32Array, zm: Float32Array, p: Float64Array, K: number, eps: number): Float32Array {
    const V = this.V;
    const tau = this.temperature;
    const h = this.scratch.f32('h', K * V);
    const jv = this.scratch.f64('jv', V);
    const scale = 1 / (K * tau * tau);
    for (let k = 0; k < K; k++) {
      let pj = 0;
      for (let a = 0; a < V; a++) {
        jv[a] = (zp[k * V + a]! - zm[k * V + a]!) / (2 * eps);
        pj += p[k * V + a]! * jv[a]!;
      }
      for (let a = 0; a < V; a++) h[k * V + a] = scale * p[k * V + a]! * (jv[a]! - pj);
    }
    return h;
  }

  /** Logits at τ under the current parameters at every step's state ([K × V]; one download). */
  async currentLogits(steps: StepSet): Promise<Float32Array> {
    const d = this.packOf(steps);
    if (d.K === 0) return new Float32Array(0);
    const zt = this.logitsAt(d);
    const z = await this.be.download('f32', zt);
    this.be.dispose(zt);
    return z;
  }

  /**
   * Distils a target policy into this model's own weights: `nSteps` AdamW steps (rate `lr`, no
   * weight decay) on (1/K) Σ_s KL(π_target(·|s) ‖ π_θ(·|s)) over the K states of `steps`
   * (`zTarget` = [K × V] logits at τ of the target, e.g. τ·log π_new of a Stage-0 projection).
   * Uses the model's optimizer state. Returns the mean KL(π_target‖π_θ) after the last step.
   */
  async distil(steps: StepSet, zTarget: Float32Array, nSteps: number, lr: number): Promise<number> {
    const be = this.be;
    const d = this.packOf(steps);
    const K = d.K;
    const V = this.V;
    if (K === 0) return 0;
    const zT = be.upload('f32', zTarget);
    const dout = be.upload('f32', new Float32Array(K).fill(1 / K));
    for (let step = 0; step < nSteps; step++) {
      this.model.zeroGrad();
      const z = this.logitsAt(d, { keep: true });
      const dz = be.zeros('f32', K * V);
      be.klBackward(null, dz, dout, zT, z, K, V, this.temperature);
      this.backwardFrom(d, dz);
      be.dispose(z);
      be.dispose(dz);
      this.model.adamStep({ lr, weightDecay: 0 });
    }
    const z = this.logitsAt(d);
    const klT = be.zeros('f32', K);
    be.klForward(klT, zT, z, K, V, this.temperature);
    const kl = await be.download('f32', klT);
    for (const t of [zT, dout, z, klT]) be.dispose(t);
    return kl.reduce((a, b) => a + b, 0) / K;
  }

  async snapshot(): Promise<AgentSnapshot> {
    return this.model.getState(Float64Array);
  }

  async restore(s: AgentSnapshot): Promise<void> {
    this.model.setState(s); // rounds each value to f32 as it copies
  }

  async interpolate(from: AgentSnapshot, f: number): Promise<void> {
    const cur = await this.model.getParams();
    await this.restore(from);
    const p = new Float32Array(cur.length);
    lerp(p, from.params, f, cur);
    this.model.setParams(p);
  }

  async generate(contexts: readonly Int32Array[], opts: GenerateOptions): Promise<{ tokens: Int32Array[]; stopped: boolean[] }> {
    const r = await this.model.generate(contexts, { maxNew: opts.maxNew, temperature: this.temperature, topK: this.topK, seed: opts.seed, stream: opts.stream, stop: this.tokenizer.eos });
    return { tokens: r.tokens, stopped: r.stopped };
  }
}

/** Named host arrays reused across calls, each grown when a call needs more (its contents are the last caller's). */
class Scratch {
  private readonly arrays = new Map<string, Float32Array | Float64Array>();

  f32(name: string, length: number): Float32Array {
    return this.get(name, length, Float32Array);
  }

  f64(name: string, length: number): Float64Array {
    return this.get(name, length, Float64Array);
  }

  private get<A extends Float32Array | Float64Array>(name: string, length: number, ctor: new (n: number) => A): A {
    let a = this.arrays.get(name) as A | undefined;
    if (a === undefined || a.length < length) {
      a = new ctor(length);
      this.arrays.set(name, a);
    }
    return a.subarray(0, length) as A;
  }
}
