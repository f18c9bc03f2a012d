/**
 * The seat of a plug-and-play swap with Stage-0 (docs/method.md §9b), for language-model agents:
 * a policy that samples from the Stage-0 projection itself, token by token,
 *
 *   π_new(·|s) ∝ π_pre(·|s)^{1/(1+λ(s))} · π_cur(·|s)^{λ(s)/(1+λ(s))},   KL(π_new‖π_cur) ≤ δ0,
 *
 * where π_pre is the incoming pretrained model (frozen), π_cur the outgoing agent (frozen at the
 * parameters it had at the swap) and λ(s) is solved at every token state when it is needed
 * (src/sat/stage0.ts `projectState`: λ = 0 when π_pre is already inside the ball, else bisection),
 * from both models' logits at the sampling temperature τ.
 *
 * It is a policy wrapper over three models on one backend — the CPU kernels or WebGPU alike: the
 * two frozen halves of the projection (π_pre, π_cur) and the trainable student (an ordinary
 * `LmAgent`, below). π_pre may instead be computed off that backend (`ExternalLogits`: an ONNX
 * target run by onnxruntime-web, src/model/onnx/ortLogits.ts); the seat speaks the student's
 * tokenizer and stops at its end token. `generate` runs both frozen models on every live prefix at every decoding
 * step, projects the two next-token distributions on the host and draws the token with the same
 * counter-based sampler as `Model.generate` (sampleForward's Philox counter (seed, stream, step,
 * sequence)), so the same seed gives the same tokens, and a projection equal to π_pre (λ = 0
 * everywhere) gives exactly π_pre's tokens. The two forwards are full (uncached) passes over each
 * prefix — with messages of a few tokens the recomputation is cheap — which makes the sampled
 * distribution the very one `distributions`/`logProbs` report (both come from the same full
 * forward pass, as LmAgent's do).
 *
 * The hand-over to the new model's own weights. The trainable part is the *student* — θ_pre
 * distilled towards π_new by src/sat/lmSwap.ts. The seat has two modes:
 *
 *   'projection'  (from the swap on) generate / distributions / logProbs are π_new's. A
 *                 `setReference()` in this mode makes π_new the reference π_cur of the stage: the
 *                 student's ratios, its exact per-state KL and the trust-region check are taken
 *                 against the policy that actually sampled the stage's batches.
 *   'student'     entered by the seat's first `trainStep` (its SAT update in that stage): with
 *                 `distil` set, the student is first distilled further towards π_new on the token
 *                 states of the batch it is being trained on — "the projection samples while the
 *                 student is distilled" — and then takes the ordinary step on the clipped objective
 *                 with ratios π_θ/π_new and penalty β·KL(π_θ‖π_new). The result *is* π_tar, so
 *                 everything — sampling included — is the student's. If the trust-region monitor
 *                 accepts the update, SAT's π_cur⁽ʲ⁾ ← π_tar⁽ʲ⁾ hands the seat to the student: later
 *                 agents of the same stage (resampled batches, probes) and the stage-end evaluation
 *                 see the student, and the next `setReference()` freezes the student's parameters
 *                 as an ordinary LmAgent would. If the monitor rejects it, `restore(start)` puts the
 *                 seat back in 'projection' mode (the mode travels in the snapshot) and π_new keeps
 *                 sampling — the next stage tries the hand-over again.
 *
 * Why distil again inside the hand-over step: a student distilled only on the swap's states
 * generalises poorly to new prefixes (arith-pnp, seed 1: KL(π_θ‖π_new) q90 0.03 on its own 357
 * states, q95 2.8 on a fresh rollout), and the seat's SAT update is checked on the states of its
 * own training batch (a fresh one under `resample`), so a hand-over that starts from the swap's
 * student was rejected after every backtrack (arith-pnp seeds 1–2: violation rate 0.33–0.39 at the
 * first attempt, even after an extra distillation on the stage batch). The distillation on a batch
 * is computed once and reused by backtracking retries (same batch, same starting parameters ⇒ same
 * result). Caveat: like the RL step itself, it is fitted on the very states the monitor checks, so
 * the measured KL(π_θ‖π_new) is an in-sample number; on fresh prefixes the student is further out.
 *
 * So the SAT core (src/sat/stage.ts) runs unchanged: "agent j was at π_cur when its batch was
 * sampled" holds (π_cur = π_new), and the distance the hand-over travels — distillation error plus
 * the RL step — is exactly the KL the monitor measures and the certificate charges.
 *
 * `surrogateGradient` and `fisherVectorProduct` are always the student's, at its current
 * parameters: in 'projection' mode that is the student before the hand-over distillation, so the
 * information-geometric gain recorded for the hand-over step (docs/method.md §7.3) is only
 * indicative.
 *
 * Snapshots carry one extra trailing parameter: 1 in 'projection' mode, 0 in 'student' mode
 * (geometry.ts reads only the first P entries). `interpolate(from, f)` (the 'shrink' policy) from a
 * 'projection' snapshot moves the student's parameters back towards their distilled start, not
 * towards π_new (which has no parameters), so 'shrink' may end outside the radius there; 'reject'
 * (the default) is exact.
 *
 * Not here: the projection maths (stage0.ts), the swap itself and its first distillation on states
 * from d^{π_cur} (lmSwap.ts; the loss is `LmAgent.distil`, used by both), or a KV-cached
 * two-model decoder (a one-step decode API on Model would make long messages cheaper).
 * top-k truncation is applied to π_new when sampling, but log-probs use the full π_new (as LmAgent).
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
   * policy (π_tar), and takes one ordinary step.
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

  surrogateGradient(batch: AgentBatch): Promise<Float64Array> {
    return this.student.surrogateGradient(batch);
  }

  fisherVectorProduct(steps: StepSet, v: Float64Array): Promise<Float64Array> {
    return this.student.fisherVectorProduct(steps, v);
  }

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

  async interpolate(from: AgentSnapshot, f: number): Promise<void> {
    const wasStudent = this.mode === 'student';
    const now = await this.student.model.getParams();
    await this.restore(from);
    const p = new Float32Array(now.length);
    for (let i = 0; i < p.length; i++) p[i] = from.params[i]! + f * (now[i]! - from.params[i]!);
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
