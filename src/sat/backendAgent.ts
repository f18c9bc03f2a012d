/**
 * A language-model agent over `BackendModel` (src/model/backendModel.ts), so the SAT loop can
 * train it on the CPU backend or on WebGPU: the `LmAgentPolicy` of src/sat/lm.ts, mirroring
 * `LmAgent` method for method (same packing of step sets, same reference semantics, same
 * objective, same Fisher-vector product by a central difference of the KL gradient, same
 * snapshot layout).
 *
 * What runs where:
 *   - on the backend: every forward and backward, the gather of the step rows out of the
 *     [B·T × V] logits (embeddingForward used as a row gather) and the scatter of their gradient
 *     back (embeddingBackward into zeros), the clipped-loss gradient, the KL, AdamW; the frozen
 *     reference π_cur is a device copy of the parameters, and its logits at a step set are cached
 *     on the device;
 *   - downloaded: per call, what the caller needs — [K × V] logit rows for `distributions` /
 *     `logProbs` (the log-softmax then runs in f64 on the host exactly as LmAgent's, so log-probs
 *     are bit-equal on the CPU backend), K KL values, the 4 loss statistics and the flat gradient
 *     (its norm is a reported metric and the finiteness guard), S token ids per decoding step.
 *
 * Parity with LmAgent on the CPU backend: everything is bit-equal except that the objective's
 * per-episode inputs (advantages and IS weights, f64 in the batch) travel as f32 tensors, as they
 * must on a GPU; that perturbs the gradient by f32 rounding (~1e-7 relative), so a stage's
 * metrics agree to a stated tolerance rather than exactly (tests/backendModel.test.ts).
 *
 * Not here: the model's maths (BackendModel), the environment (LmEnv in lm.ts), choosing a
 * backend or a device (the worker does), the Stage-0 projection (projectedAgent.ts, CPU only).
 */
import type { Backend, ClippedLossSpec, HostTensors, TensorKinds } from '../backend/types';
import { gatherForward, logSoftmaxForward } from '../backend/cpu/softmax';
import { NumericError } from '../core/errors';
import type { BackendModel } from '../model/backendModel';
import { EOS } from '../model/tokenizer';
import { pack, type GenerateOptions, type LmAgentPolicy, type Pack } from './lm';
import type { AgentBatch, AgentInfo, AgentSnapshot, ObjectiveSpec, StepSet, TrainReport } from './types';

/** A step set's padded batch, with its row index uploaded once. */
interface DevicePack<X extends TensorKinds> {
  readonly p: Pack;
  readonly K: number;
  readonly row: X['i32'];
}

export class BackendLmAgent<X extends TensorKinds = HostTensors> implements LmAgentPolicy {
  readonly index: number;
  readonly name: string;
  readonly model: BackendModel<X>;
  /** Sampling temperature τ; every log-prob, ratio and KL uses the same τ. */
  readonly temperature: number;
  readonly topK: number;
  /** π_cur's parameters (a device copy), when the reference is this model's own frozen weights. */
  private ref: X['f32'][];
  /** π_cur's logits at a step set ([K × V], on the device), until the reference changes. */
  private refCache = new Map<Int32Array, X['f32']>();
  private packCache = new Map<Int32Array, DevicePack<X>>();
  /** A reference given by its logits at τ (a Stage-0 projection), else null (see LmAgent). */
  private refFn: ((steps: StepSet) => Float32Array) | null = null;

  constructor(index: number, model: BackendModel<X>, opts: { name?: string; temperature?: number; topK?: number } = {}) {
    this.index = index;
    this.model = model;
    this.name = opts.name ?? `lm-${index}`;
    this.temperature = opts.temperature ?? 1;
    this.topK = opts.topK ?? 0;
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
  private refLogitsAt(steps: StepSet, d: DevicePack<X>): X['f32'] {
    const hit = this.refCache.get(steps.obs);
    if (hit) return hit;
    const z = this.refFn ? this.be.upload('f32', this.refFn(steps)) : this.logitsAt(d, { params: this.ref });
    this.refCache.set(steps.obs, z);
    return z;
  }

  async info(): Promise<AgentInfo> {
    return { name: this.name, kind: 'lm', parameters: this.model.paramCount(), backend: this.be.name };
  }

  /** log π_θ(·|s) at τ at every step ([K × V]), in f64 on the host from the downloaded logit rows. */
  private async logPolicyAt(steps: StepSet): Promise<Float64Array> {
    const d = this.packOf(steps);
    const K = d.K;
    const lp = new Float64Array(K * this.V);
    if (K === 0) return lp;
    const zt = this.logitsAt(d);
    const z = await this.be.download('f32', zt);
    this.be.dispose(zt);
    logSoftmaxForward(lp, z, K, this.V, this.temperature);
    return lp;
  }

  async distributions(steps: StepSet): Promise<Float64Array> {
    return (await this.logPolicyAt(steps)).map(Math.exp);
  }

  async logProbs(steps: StepSet): Promise<Float64Array> {
    const actions = steps.actions;
    if (!actions || actions.length !== steps.obs.length) throw new RangeError(`agent ${this.index}: logProbs needs one action per step`);
    const out = new Float64Array(steps.obs.length);
    if (out.length === 0) return out;
    gatherForward(out, await this.logPolicyAt(steps), actions, steps.obs.length, this.V);
    return out;
  }

  async setReference(): Promise<void> {
    this.model.copyParamsInto(this.ref);
    this.refFn = null;
    this.clearCaches();
  }

  /** π_cur = a policy given by its logits at τ per step set (as LmAgent.setReferencePolicy). */
  setReferencePolicy(logitsAt: (steps: StepSet) => Float32Array): void {
    this.refFn = logitsAt;
    this.clearCaches();
  }

  /** π_cur's logits at τ at every step's state ([K × V]; one download). */
  async referenceLogits(steps: StepSet): Promise<Float32Array> {
    const d = this.packOf(steps);
    if (d.K === 0) return new Float32Array(0);
    return this.be.download('f32', this.refLogitsAt(steps, d));
  }

  async klToReference(steps: StepSet): Promise<Float64Array> {
    const d = this.packOf(steps);
    const K = d.K;
    if (K === 0) return new Float64Array(0);
    const zRef = this.refLogitsAt(steps, d);
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
  private objectiveBackward(batch: AgentBatch, spec: ClippedLossSpec, scale: number): X['f32'] {
    const be = this.be;
    const d = this.packOf(batch);
    const K = d.K;
    const zRef = this.refLogitsAt(batch, d);
    this.model.zeroGrad();
    const z = this.logitsAt(d, { keep: true });
    const dRows = be.zeros('f32', Math.max(1, K * this.V));
    const stats = be.zeros('f32', 4);
    const up = [
      be.upload('i32', batch.actions),
      be.upload('i32', batch.episodeOf),
      be.upload('f32', Float32Array.from(batch.adv)),
      be.upload('f32', Float32Array.from(batch.weight)),
    ] as const;
    be.clippedLossBackward(dRows, stats, z, zRef, up[0], up[1], up[2], up[3], K, this.V, batch.nEpisodes, batch.horizon, this.temperature, spec, scale);
    this.backwardFrom(d, dRows);
    for (const t of [z, dRows, ...up]) be.dispose(t);
    return stats;
  }

  async trainStep(batch: AgentBatch, spec: ObjectiveSpec): Promise<TrainReport> {
    // scale −1: the gradient of the loss −L, which AdamW descends.
    const statsT = this.objectiveBackward(batch, spec, -1);
    const st = await this.be.download('f32', statsT);
    this.be.dispose(statsT);
    const [objective, surrogate, klMean, clipfrac] = [st[0]!, st[1]!, st[2]!, st[3]!];
    if (!Number.isFinite(objective)) {
      throw new NumericError(`agent ${this.index}: the objective is ${objective} (surrogate ${surrogate}, KL ${klMean}); parameters left unchanged`);
    }
    const grads = await this.model.getGrads();
    let norm2 = 0;
    for (const g of grads) norm2 += g * g;
    if (!Number.isFinite(norm2)) throw new NumericError(`agent ${this.index}: the gradient has a non-finite entry; parameters left unchanged`);
    this.model.adamStep({ lr: spec.lr, weightDecay: spec.weightDecay });
    return { objective, surrogate, clipfrac, gradNorm: Math.sqrt(norm2) };
  }

  async surrogateGradient(batch: AgentBatch): Promise<Float64Array> {
    // The unclipped, unpenalised surrogate (1/N) Σ w A (r − 1): a clip band too wide to bind, β = 0.
    const spec = { level: 'sequence', tokenAgg: 'grpo', epsLow: 1 - 1e-12, epsHigh: 1e12, beta: 0 } as const;
    this.be.dispose(this.objectiveBackward(batch, spec, 1));
    return Float64Array.from(await this.model.getGrads());
  }

  /** F v by a central difference of the KL gradient (as LmAgent.fisherVectorProduct). */
  async fisherVectorProduct(steps: StepSet, v: Float64Array): Promise<Float64Array> {
    const be = this.be;
    const d = this.packOf(steps);
    const K = d.K;
    const V = this.V;
    let vn = 0;
    for (const x of v) vn += x * x;
    vn = Math.sqrt(vn);
    const out = new Float64Array(v.length);
    if (vn === 0 || K === 0) return out;
    const zP = this.logitsAt(d);
    const eps = 1e-3 / vn;
    const theta = await this.model.getParams();
    const dout = be.upload('f32', new Float32Array(K).fill(1 / K));
    const moved = new Float32Array(theta.length);
    for (const sgn of [1, -1]) {
      for (let i = 0; i < theta.length; i++) moved[i] = theta[i]! + sgn * eps * v[i]!;
      this.model.setParams(moved);
      this.model.zeroGrad();
      const zQ = this.logitsAt(d, { keep: true });
      const dQ = be.zeros('f32', K * V);
      be.klBackward(null, dQ, dout, zP, zQ, K, V, this.temperature);
      this.backwardFrom(d, dQ);
      be.dispose(zQ);
      be.dispose(dQ);
      const g = await this.model.getGrads();
      for (let i = 0; i < out.length; i++) out[i]! += (sgn * g[i]!) / (2 * eps);
    }
    this.model.setParams(theta);
    be.dispose(zP);
    be.dispose(dout);
    return out;
  }

  async snapshot(): Promise<AgentSnapshot> {
    const s = await this.model.getState();
    return { params: Float64Array.from(s.params), optim: Float64Array.from(s.optim) };
  }

  async restore(s: AgentSnapshot): Promise<void> {
    this.model.setState({ params: Float32Array.from(s.params), optim: Float32Array.from(s.optim) });
  }

  async interpolate(from: AgentSnapshot, f: number): Promise<void> {
    const cur = await this.model.getParams();
    await this.restore(from);
    const p = new Float32Array(cur.length);
    for (let i = 0; i < cur.length; i++) p[i] = from.params[i]! + f * (cur[i]! - from.params[i]!);
    this.model.setParams(p);
  }

  async generate(contexts: readonly Int32Array[], opts: GenerateOptions): Promise<{ tokens: Int32Array[]; stopped: boolean[] }> {
    const r = await this.model.generate(contexts, { maxNew: opts.maxNew, temperature: this.temperature, topK: this.topK, seed: opts.seed, stream: opts.stream, stop: EOS });
    return { tokens: r.tokens, stopped: r.stopped };
  }
}
