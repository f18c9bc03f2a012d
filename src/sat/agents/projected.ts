/**
 * The seat of a language-model plug-and-play swap with Stage-0 (docs/method.md §9b): a policy that
 * samples from the Stage-0 projection of the incoming model π_pre towards the outgoing π_cur,
 *
 *   π_new(·|s) ∝ π_pre(·|s)^{1/(1+λ(s))} · π_cur(·|s)^{λ(s)/(1+λ(s))},   KL(π_new‖π_cur) ≤ δ0,
 *
 * token by token (λ(s) from stage0.ts `projectState`, at the sampling temperature τ), until its
 * first SAT update hands the seat to the trainable student (θ_pre distilled towards π_new). Both
 * frozen models are re-run on every prefix, so sampling and log-probs come from the same forward
 * pass; the sampler is `Model.generate`'s, so one seed gives one set of tokens. The SAT core runs
 * unchanged: π_new is the π_cur that sampled the batch.
 *
 * π_pre may instead come from outside our model (`ExternalLogits`: an ONNX target run by
 * onnxruntime-web, src/model/onnx/ortLogits.ts); the seat speaks the student's tokenizer and stops
 * at its end token.
 *
 * Not here: the projection maths (stage0.ts), the swap and its first distillation (lmSwap.ts), a
 * two-model KV cache.
 */
import { ConfigError } from '../../core/errors';
import { sampleForward } from '../../backend/cpu/sampling';
import { gatherForward, klForward } from '../../backend/cpu/softmax';
import type { FloatArray, HostTensors, TensorKinds } from '../../backend/types';
import type { Model } from '../../model/model';
import type { TextTokenizer } from '../../model/tokenizer';
import { projectState } from '../stage0';
import type { AgentBatch, AgentInfo, AgentSnapshot, ObjectiveSpec, StepSet, TrainReport } from '../types';
import { logitRows, pack, type GenerateOptions, type LmAgent, type LmAgentPolicy } from './lm';
import { lerp } from '../../core/vec';

/** The Stage-0 projection of K states' next-token distributions. */
export interface ProjectedRows {
  /** log π_new, [K × V], normalised. */
  readonly logp: Float64Array;
  /** λ(s) per state (0 where π_pre is already inside the ball). */
  readonly lambdas: Float64Array;
  /** KL(π_new(·|s) ‖ π_cur(·|s)) per state. */
  readonly kl: Float64Array;
  /** KL(π_pre(·|s) ‖ π_cur(·|s)) per state. */
  readonly klPre: Float64Array;
}

/** Projects each row of [K × V] logits (at temperature τ) of π_pre into KL ≤ δ0 of π_cur. */
export function projectRows(zPre: FloatArray, zCur: FloatArray, K: number, V: number, tau: number, delta0: number): ProjectedRows {
  const logp = new Float64Array(K * V);
  const lambdas = new Float64Array(K);
  const kl = new Float64Array(K);
  const klPre = new Float64Array(K);
  const pre = new Float64Array(V);
  const cur = new Float64Array(V);
  for (let k = 0; k < K; k++) {
    for (let v = 0; v < V; v++) {
      pre[v] = zPre[k * V + v]! / tau;
      cur[v] = zCur[k * V + v]! / tau;
    }
    const r = projectState(pre, cur, delta0);
    logp.set(r.logits, k * V);
    lambdas[k] = r.lambda;
    kl[k] = r.kl;
    klPre[k] = r.klPre;
  }
  return { logp, lambdas, kl, klPre };
}

/**
 * π_pre computed outside the student's backend: raw next-token logits ([K × V]) at the flat rows
 * `row` of a right-padded [B × T] token batch, as `logitRows` returns them for a Model.
 */
export interface ExternalLogits {
  readonly cfg: { readonly vocab: number; readonly maxSeq: number };
  logitRows(tokens: Int32Array, B: number, T: number, row: Int32Array): Promise<Float32Array>;
  dispose(): void;
}

function isExternal<X extends TensorKinds>(m: Model<X> | ExternalLogits): m is ExternalLogits {
  return typeof (m as Partial<ExternalLogits>).logitRows === 'function';
}

export interface ProjectedLmAgentOptions<X extends TensorKinds> {
  /** The incoming pretrained model π_pre (read only), on the student's backend or external. */
  readonly pre: Model<X> | ExternalLogits;
  /** The outgoing agent's model at π_cur (read only: nothing may train it afterwards), same backend. */
  readonly cur: Model<X>;
  /** Stage-0 radius δ0 > 0. */
  readonly delta0: number;
  /**
   * Distillation inside the hand-over step: the seat's first trainStep in 'projection' mode first
   * takes `steps` AdamW steps (rate `lr`) of KL(π_new‖π_θ) on the batch's token states, with a
   * fresh optimizer before and after. Default: none.
   */
  readonly distil?: { readonly steps: number; readonly lr: number };
}

/**
 * Who samples for the seat. 'projection': π_new, from the swap on; `setReference()` here makes π_new
 * the stage's reference, so the student's ratios and KL are taken against the policy that sampled.
 * 'student': from the seat's first `trainStep` on — the student, distilled again on that batch's
 * states, is π_tar; if the monitor rejects it, `restore` goes back to 'projection' and the next
 * stage tries again. Top-k applies to π_new when sampling; log-probs use the full π_new.
 */
export type SeatSampler = 'projection' | 'student';

export class ProjectedLmAgent<X extends TensorKinds = HostTensors> implements LmAgentPolicy {
  /** The trainable model that takes over the seat (θ_pre after distillation), as an ordinary agent. */
  readonly student: LmAgent<X>;
  readonly pre: Model<X> | ExternalLogits;
  readonly cur: Model<X>;
  readonly delta0: number;
  private mode: SeatSampler = 'projection';
  /** Whether the last setReference() froze π_new (true) or the student's parameters (false). */
  private refIsProjection = false;
  private projCache = new WeakMap<Int32Array, ProjectedRows>();
  private readonly distilOpts: { readonly steps: number; readonly lr: number } | null;
  /** The last hand-over distillation: its batch, the parameters it started from and those it reached. */
  private distilled: { obs: Int32Array; from: Float32Array; to: Float32Array } | null = null;
  /** Mean KL(π_new‖π_θ) after the last hand-over distillation, and on how many states (NaN / 0: none yet). */
  lastDistil = { kl: NaN, states: 0 };

  constructor(student: LmAgent<X>, o: ProjectedLmAgentOptions<X>) {
    const V = student.model.cfg.vocab;
    const index = student.index;
    if (o.pre.cfg.vocab !== V || o.cur.cfg.vocab !== V) throw new RangeError(`projected agent ${index}: vocabularies differ (student ${V}, π_pre ${o.pre.cfg.vocab}, π_cur ${o.cur.cfg.vocab})`);
    if ((!isExternal(o.pre) && o.pre.be !== student.model.be) || o.cur.be !== student.model.be) throw new RangeError(`projected agent ${index}: π_pre, π_cur and the student must share one backend`);
    if (!(student.temperature > 0)) throw new ConfigError('temperature', student.temperature, `projected agent ${index}: Stage-0 projects distributions at τ > 0, got τ = ${student.temperature}`);
    if (!(o.delta0 > 0) || !Number.isFinite(o.delta0)) throw new ConfigError('stage0Delta', o.delta0, `projected agent ${index}: δ0 must be a finite number > 0, got ${o.delta0}`);
    this.student = student;
    this.pre = o.pre;
    this.cur = o.cur;
    this.delta0 = o.delta0;
    this.distilOpts = o.distil && o.distil.steps > 0 ? o.distil : null;
  }

  get index(): number {
    return this.student.index;
  }

  /** The seat's trainable model (the student's). */
  get model(): Model<X> {
    return this.student.model;
  }

  get name(): string {
    return this.student.name;
  }

  get temperature(): number {
    return this.student.temperature;
  }

  get topK(): number {
    return this.student.topK;
  }

  /** The student's tokenizer (π_pre, π_cur and the student share it: lmSwap.ts checks). */
  get tokenizer(): TextTokenizer {
    return this.student.tokenizer;
  }

  /** π_pre's raw logits at `row` of a [B × T] batch. */
  private preRows(tokens: Int32Array, B: number, T: number, row: Int32Array): Promise<Float32Array> {
    return isExternal(this.pre) ? this.pre.logitRows(tokens, B, T, row) : logitRows(this.pre, tokens, B, T, row);
  }

  /** Who samples for the seat now: the projection π_new, or the student that took over. */
  get sampler(): SeatSampler {
    return this.mode;
  }

  private get vocab(): number {
    return this.student.model.cfg.vocab;
  }

  info(): Promise<AgentInfo> {
    return this.student.info();
  }

  /** π_new at every step's state (full forward passes of both frozen models), cached per step set. */
  async projectionAt(steps: StepSet): Promise<ProjectedRows> {
    const hit = this.projCache.get(steps.obs);
    if (hit) return hit;
    const V = this.vocab;
    const K = steps.obs.length;
    let out: ProjectedRows;
    if (K === 0) out = { logp: new Float64Array(0), lambdas: new Float64Array(0), kl: new Float64Array(0), klPre: new Float64Array(0) };
    else {
      const p = pack(steps);
      const zPre = await this.preRows(p.tokens, p.B, p.T, p.row);
      const zCur = await logitRows(this.cur, p.tokens, p.B, p.T, p.row);
      out = projectRows(zPre, zCur, K, V, this.temperature, this.delta0);
    }
    this.projCache.set(steps.obs, out);
    return out;
  }

  /** π_new as logits at τ (softmax(z/τ) = π_new), the form LmAgent's reference takes. */
  async projectionLogits(steps: StepSet): Promise<Float32Array> {
    const tau = this.temperature;
    return Float32Array.from((await this.projectionAt(steps)).logp, (x) => tau * x);
  }

  async distributions(steps: StepSet): Promise<Float64Array> {
    if (this.mode === 'student') return this.student.distributions(steps);
    return (await this.projectionAt(steps)).logp.map(Math.exp);
  }

  async logProbs(steps: StepSet): Promise<Float64Array> {
    if (this.mode === 'student') return this.student.logProbs(steps);
    const actions = steps.actions;
    if (!actions || actions.length !== steps.obs.length) throw new RangeError(`agent ${this.index}: logProbs needs one action per step`);
    const out = new Float64Array(steps.obs.length);
    gatherForward(out, (await this.projectionAt(steps)).logp, actions, steps.obs.length, this.vocab);
    return out;
  }

  /** Freezes π_cur: π_new while the projection holds the seat, else the student's parameters. */
  async setReference(): Promise<void> {
    await this.student.setReference();
    this.refIsProjection = this.mode === 'projection';
    if (this.refIsProjection) this.student.setReferencePolicy((s) => this.projectionLogits(s));
  }

  async klToReference(steps: StepSet): Promise<Float64Array> {
    if (this.mode === 'student') return this.student.klToReference(steps);
    const K = steps.obs.length;
    if (this.refIsProjection) return new Float64Array(K); // π_θ = π_new = π_cur
    const out = new Float32Array(K);
    klForward(out, await this.projectionLogits(steps), await this.student.referenceLogits(steps), K, this.vocab, this.temperature);
    return Float64Array.from(out, (x) => Math.max(0, x));
  }

  /**
   * The seat's SAT update. From 'projection' mode (the hand-over): the student is distilled towards
   * π_new on the batch's states (once per batch and starting point; retries reuse it), becomes the
   * policy (π_tar), and takes one ordinary step. Distilled again because a student distilled on the
   * swap's states alone generalises poorly to new prefixes and its update was rejected
   * (docs/performance.md, "Figures moved from code comments"). Like the RL step, this distillation
   * is fitted on the states the monitor checks, so its KL is in-sample.
   */
  async trainStep(batch: AgentBatch, spec: ObjectiveSpec): Promise<TrainReport> {
    const model = this.student.model;
    if (this.mode === 'projection' && this.distilOpts && batch.obs.length > 0) {
      const params = await model.getParams();
      const d = this.distilled;
      const fresh = () => new Float32Array(1 + 2 * params.length);
      if (d && d.obs === batch.obs && d.from.length === params.length && d.from.every((x, i) => x === params[i])) {
        model.setState({ params: d.to, optim: fresh() });
      } else {
        model.setState({ params, optim: fresh() });
        const kl = await this.student.distil(batch, await this.projectionLogits(batch), this.distilOpts.steps, this.distilOpts.lr);
        this.lastDistil = { kl, states: batch.obs.length };
        const to = await model.getParams();
        this.distilled = { obs: batch.obs, from: params, to };
        model.setState({ params: to, optim: fresh() });
      }
    }
    this.mode = 'student';
    return this.student.trainStep(batch, spec);
  }

  /**
   * Always the student's, at its current parameters: in 'projection' mode the student before the
   * hand-over distillation, so the gain recorded for that step (docs/method.md §7.3) is indicative.
   */
  surrogateGradient(batch: AgentBatch): Promise<Float64Array> {
    return this.student.surrogateGradient(batch);
  }

  fisherVectorProduct(steps: StepSet, v: Float64Array): Promise<Float64Array> {
    return this.student.fisherVectorProduct(steps, v);
  }

  /** The student's snapshot plus one trailing value, the mode: 1 'projection', 0 'student' (geometry.ts reads the first P). */
  async snapshot(): Promise<AgentSnapshot> {
    const s = await this.student.snapshot();
    const params = new Float64Array(s.params.length + 1);
    params.set(s.params);
    params[s.params.length] = this.mode === 'projection' ? 1 : 0;
    return { params, optim: s.optim };
  }

  async restore(s: AgentSnapshot): Promise<void> {
    const P = this.student.model.paramCount();
    if (s.params.length !== P + 1) throw new RangeError(`agent ${this.index}: snapshot of ${s.params.length} values, a projected seat's has ${P + 1}`);
    await this.student.restore({ params: s.params.subarray(0, P), optim: s.optim });
    this.mode = s.params[P] === 1 ? 'projection' : 'student';
  }

  /**
   * 'shrink': from a 'projection' snapshot this moves the student back towards its distilled start,
   * not towards π_new (which has no parameters), so it may end outside the radius; 'reject' is exact.
   */
  async interpolate(from: AgentSnapshot, f: number): Promise<void> {
    const wasStudent = this.mode === 'student';
    const now = await this.student.model.getParams();
    await this.restore(from);
    const p = new Float32Array(now.length);
    lerp(p, from.params, f, now);
    this.student.model.setParams(p);
    if (wasStudent && f !== 0) this.mode = 'student';
  }

  async generate(contexts: readonly Int32Array[], opts: GenerateOptions): Promise<{ tokens: Int32Array[]; stopped: boolean[] }> {
    if (this.mode === 'student') return this.student.generate(contexts, opts);
    return this.generateProjected(contexts, opts);
  }

  /**
   * Token-by-token sampling from π_new. Sequence s of the call draws its k-th token with
   * sampleForward's counter (seed, stream, step k, sequence s), as Model.generate does; a
   * sequence ends at the tokenizer's end token, after maxNew tokens, or when it reaches either model's maxSeq.
   */
  private async generateProjected(contexts: readonly Int32Array[], opts: GenerateOptions): Promise<{ tokens: Int32Array[]; stopped: boolean[] }> {
    const V = this.vocab;
    const tau = this.temperature;
    const maxSeq = Math.min(this.pre.cfg.maxSeq, this.cur.cfg.maxSeq);
    const gen: number[][] = contexts.map(() => []);
    const stopped = contexts.map(() => false);
    let live = contexts.map((_, s) => s).filter((s) => contexts[s]!.length >= 1 && contexts[s]!.length < maxSeq);
    const tok = new Int32Array(1);
    const eos = this.tokenizer.eos;
    const z = new Float64Array(V);
    for (let step = 0; step < opts.maxNew && live.length > 0; step++) {
      const lens = live.map((s) => contexts[s]!.length + gen[s]!.length);
      const B = live.length;
      const T = Math.max(...lens);
      const tokens = new Int32Array(B * T); // right-padded with 0 (harmless under causal attention)
      const rows = new Int32Array(B);
      live.forEach((s, b) => {
        tokens.set(contexts[s]!, b * T);
        tokens.set(gen[s]!, b * T + contexts[s]!.length);
        rows[b] = b * T + lens[b]! - 1;
      });
      const zPre = await this.preRows(tokens, B, T, rows);
      const zCur = await logitRows(this.cur, tokens, B, T, rows);
      const proj = projectRows(zPre, zCur, B, V, tau, this.delta0);
      const next: number[] = [];
      live.forEach((s, b) => {
        for (let v = 0; v < V; v++) z[v] = tau * proj.logp[b * V + v]!;
        sampleForward(tok, z, 1, V, { seed: opts.seed, stream: opts.stream, step, temperature: tau, topK: this.topK, seq0: s });
        const a = tok[0]!;
        if (a === eos) {
          stopped[s] = true;
          return;
        }
        gen[s]!.push(a);
        if (gen[s]!.length < opts.maxNew && lens[b]! + 1 < maxSeq) next.push(s);
      });
      live = next;
    }
    return { tokens: gen.map((g) => Int32Array.from(g)), stopped };
  }
}
