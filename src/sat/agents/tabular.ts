/**
 * A tabular softmax agent: one row of logits per local state, π(a|s) = softmax(z_s)_a, trained by
 * Adam(W). The simplest `AgentPolicy`: every quantity SAT needs — log-probs, the exact per-state
 * KL, the objective gradient, the Fisher — is exact and cheap, so the method can be checked
 * against enumeration before language models arrive.
 *
 * Not here: the objective's maths (src/backend/cpu/objective.ts → `clippedLossBackward`, the one
 * implementation every agent uses).
 */
import { NumericError } from '../../core/errors';
import type { Rng } from '../../core/rng';
import { lerp, sumOfSquares } from '../../core/vec';
import { clippedLossBackward } from '../../backend/cpu/objective';
import { logSoftmax } from '../categorical';
import type { AgentBatch, AgentInfo, AgentPolicy, AgentSnapshot, ObjectiveSpec, StepSet, TrainReport } from '../types';

const ADAM_B1 = 0.9;
const ADAM_B2 = 0.999;
const ADAM_EPS = 1e-8;

export class TabularSoftmaxAgent implements AgentPolicy {
  readonly index: number;
  readonly nObs: number;
  readonly nActions: number;
  readonly name: string;
  /** z: [nObs × nActions]. */
  private z: Float64Array;
  /** Reference log-probs (π_cur), [nObs × nActions]. */
  private refLp: Float64Array;
  private refZ: Float64Array;
  /** Adam state. */
  private m: Float64Array;
  private v: Float64Array;
  private step = 0;

  constructor(index: number, nObs: number, nActions: number, opts: { name?: string; initScale?: number; rng?: Rng; logits?: Float64Array } = {}) {
    this.index = index;
    this.nObs = nObs;
    this.nActions = nActions;
    this.name = opts.name ?? `table-${index}`;
    const size = nObs * nActions;
    this.z = new Float64Array(size);
    if (opts.logits) {
      if (opts.logits.length !== size) throw new RangeError(`agent ${index}: ${opts.logits.length} logits for a ${nObs}×${nActions} table`);
      this.z.set(opts.logits);
    } else if (opts.initScale && opts.initScale > 0) {
      if (!opts.rng) throw new Error('initScale needs an rng');
      for (let i = 0; i < size; i++) this.z[i] = opts.initScale * opts.rng.normal();
    }
    this.m = new Float64Array(size);
    this.v = new Float64Array(size);
    this.refZ = this.z.slice();
    this.refLp = this.logProbTable(this.z);
  }

  /** Log-probs of every row of a logit table. */
  private logProbTable(z: Float64Array): Float64Array {
    const out = new Float64Array(z.length);
    const A = this.nActions;
    for (let s = 0; s < this.nObs; s++) logSoftmax(z.subarray(s * A, (s + 1) * A), out.subarray(s * A, (s + 1) * A));
    return out;
  }

  /** Rows of `table` at the listed states, as one [K × A] array. */
  private gather(table: Float64Array, obs: Int32Array): Float64Array {
    const A = this.nActions;
    const out = new Float64Array(obs.length * A);
    for (let k = 0; k < obs.length; k++) out.set(table.subarray(obs[k]! * A, (obs[k]! + 1) * A), k * A);
    return out;
  }

  /** π(·|s) for every state, [nObs × nActions] (synchronous: tables are local). */
  distributionTable(): Float64Array {
    const lp = this.logProbTable(this.z);
    for (let i = 0; i < lp.length; i++) lp[i] = Math.exp(lp[i]!);
    return lp;
  }

  /** The current logits (a copy), e.g. for a plug-and-play swap or export. */
  getLogits(): Float64Array {
    return this.z.slice();
  }

  /** Replaces the logits (Stage-0 swap); resets the optimizer. */
  setLogits(z: Float64Array): void {
    if (z.length !== this.z.length) throw new RangeError(`agent ${this.index}: ${z.length} logits for ${this.z.length} entries`);
    this.z.set(z);
    this.m.fill(0);
    this.v.fill(0);
    this.step = 0;
  }

  async info(): Promise<AgentInfo> {
    return { name: this.name, kind: 'tabular', parameters: this.z.length, backend: 'cpu' };
  }

  async distributions({ obs }: StepSet): Promise<Float64Array> {
    const lp = this.gather(this.logProbTable(this.z), obs);
    for (let i = 0; i < lp.length; i++) lp[i] = Math.exp(lp[i]!);
    return lp;
  }

  async logProbs({ obs, actions }: StepSet): Promise<Float64Array> {
    if (!actions || actions.length !== obs.length) throw new RangeError(`agent ${this.index}: logProbs needs one action per step`);
    const lp = this.logProbTable(this.z);
    const out = new Float64Array(obs.length);
    for (let k = 0; k < obs.length; k++) out[k] = lp[obs[k]! * this.nActions + actions[k]!]!;
    return out;
  }

  async setReference(): Promise<void> {
    this.refZ = this.z.slice();
    this.refLp = this.logProbTable(this.z);
  }

  async klToReference({ obs }: StepSet): Promise<Float64Array> {
    const lp = this.logProbTable(this.z);
    const A = this.nActions;
    const out = new Float64Array(obs.length);
    for (let k = 0; k < obs.length; k++) {
      const row = obs[k]! * A;
      let kl = 0;
      for (let b = 0; b < A; b++) kl += Math.exp(lp[row + b]!) * (lp[row + b]! - this.refLp[row + b]!);
      out[k] = Math.max(0, kl);
    }
    return out;
  }

  async trainStep(batch: AgentBatch, spec: ObjectiveSpec): Promise<TrainReport> {
    const A = this.nActions;
    const K = batch.obs.length;
    // The kernel on the raw logit rows (τ = 1): its gradient w.r.t. z equals the one w.r.t. the
    // log-probs, since each row's gradient sums to zero. Scale +1: the agent ascends L.
    const zTheta = this.gather(this.z, batch.obs);
    const zRef = this.gather(this.refZ, batch.obs);
    const dlogits = new Float64Array(K * A);
    const val = clippedLossBackward(dlogits, null, zTheta, zRef, batch.actions, batch.episodeOf, batch.adv, batch.weight, K, A, batch.nEpisodes, batch.horizon, 1, spec, 1);
    if (!Number.isFinite(val.objective)) {
      throw new NumericError(`agent ${this.index}: the objective is ${val.objective} (surrogate ${val.surrogate}, KL ${val.klMean}); parameters left unchanged`);
    }
    // Scatter the per-step logit gradients into the table rows.
    const g = new Float64Array(this.z.length);
    for (let k = 0; k < K; k++) {
      const row = batch.obs[k]! * A;
      for (let b = 0; b < A; b++) g[row + b]! += dlogits[k * A + b]!;
    }
    const norm2 = sumOfSquares(g);
    // Rows (states) visited in this batch: only they move (see adamAscent).
    const visited = new Uint8Array(this.nObs);
    for (let k = 0; k < K; k++) visited[batch.obs[k]!] = 1;
    this.adamAscent(g, visited, spec.lr, spec.weightDecay);
    return { objective: val.objective, surrogate: val.surrogate, clipfrac: val.clipfrac, gradNorm: Math.sqrt(norm2) };
  }

  /**
   * AdamW (Loshchilov & Hutter 2019), ascent: θ ← θ + lr·m̂/(√v̂ + ε) − lr·wd·θ — applied only to
   * the rows of states visited in this batch, like PyTorch's SparseAdam. A dense update would keep
   * moving unvisited rows on old momentum, where the trust-region monitor (which sees visited
   * states only) could not see it; sparse updates make "KL = 0 off the batch" exact.
   */
  private adamAscent(g: Float64Array, visited: Uint8Array, lr: number, wd: number): void {
    this.step++;
    const c1 = 1 - ADAM_B1 ** this.step;
    const c2 = 1 - ADAM_B2 ** this.step;
    const A = this.nActions;
    for (let i = 0; i < g.length; i++) {
      if (!visited[Math.floor(i / A)]) continue;
      const gi = g[i]!;
      this.m[i] = ADAM_B1 * this.m[i]! + (1 - ADAM_B1) * gi;
      this.v[i] = ADAM_B2 * this.v[i]! + (1 - ADAM_B2) * gi * gi;
      const mh = this.m[i]! / c1;
      const vh = this.v[i]! / c2;
      this.z[i] = this.z[i]! + lr * (mh / (Math.sqrt(vh) + ADAM_EPS)) - lr * wd * this.z[i]!;
    }
  }

  async surrogateGradient(batch: AgentBatch): Promise<Float64Array> {
    const A = this.nActions;
    const lp = this.logProbTable(this.z);
    const N = batch.nEpisodes;
    const u = new Float64Array(N);
    for (let k = 0; k < batch.obs.length; k++) {
      const row = batch.obs[k]! * A;
      u[batch.episodeOf[k]!]! += lp[row + batch.actions[k]!]! - this.refLp[row + batch.actions[k]!]!;
    }
    const g = new Float64Array(this.z.length);
    for (let k = 0; k < batch.obs.length; k++) {
      const e = batch.episodeOf[k]!;
      const c = (batch.weight[e]! * batch.adv[e]! * Math.exp(u[e]!)) / N;
      const row = batch.obs[k]! * A;
      for (let b = 0; b < A; b++) g[row + b]! += c * ((b === batch.actions[k]! ? 1 : 0) - Math.exp(lp[row + b]!));
    }
    return g;
  }

  async fisherVectorProduct({ obs }: StepSet, v: Float64Array): Promise<Float64Array> {
    const A = this.nActions;
    const lp = this.logProbTable(this.z);
    const out = new Float64Array(this.z.length);
    const K = obs.length;
    for (let k = 0; k < K; k++) {
      const row = obs[k]! * A;
      let pv = 0;
      for (let b = 0; b < A; b++) pv += Math.exp(lp[row + b]!) * v[row + b]!;
      for (let b = 0; b < A; b++) out[row + b]! += (Math.exp(lp[row + b]!) * (v[row + b]! - pv)) / K;
    }
    return out;
  }

  async snapshot(): Promise<AgentSnapshot> {
    const optim = new Float64Array(1 + 2 * this.z.length);
    optim[0] = this.step;
    optim.set(this.m, 1);
    optim.set(this.v, 1 + this.z.length);
    return { params: this.z.slice(), optim };
  }

  async restore(s: AgentSnapshot): Promise<void> {
    if (s.params.length !== this.z.length || s.optim.length !== 1 + 2 * this.z.length) {
      throw new RangeError(`agent ${this.index}: snapshot of the wrong size`);
    }
    this.z.set(s.params);
    this.step = s.optim[0]!;
    this.m.set(s.optim.subarray(1, 1 + this.z.length));
    this.v.set(s.optim.subarray(1 + this.z.length));
  }

  async interpolate(from: AgentSnapshot, f: number): Promise<void> {
    const cur = this.z.slice();
    await this.restore(from);
    lerp(this.z, from.params, f, cur);
  }

  /** The reference logits (π_cur), a copy. */
  referenceLogits(): Float64Array {
    return this.refZ.slice();
  }
}
