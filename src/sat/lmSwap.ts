/**
 * Plug-and-play for language-model agents (docs/method.md §9b, §8.1): agent j is replaced by a
 * different pretrained model π_pre (e.g. a larger one) without retraining the others.
 *
 * With Stage-0 (the default seat, `seat: 'projection'`), the seat samples from the projection
 * itself at once: a ProjectedLmAgent (src/sat/projectedAgent.ts) solves, at every token state it
 * meets, λ(s) of
 *
 *   π_new(·|s) ∝ π_pre(·|s)^{1/(1+λ(s))} · π_cur(·|s)^{λ(s)/(1+λ(s))},   KL(π_new‖π_cur) ≤ δ_0
 *
 * (stage0.ts: λ(s) = 0 when π_pre is already inside, else bisection) from the incoming model's and
 * the frozen outgoing agent's logits, and draws the token from π_new. Meanwhile the new model's own
 * weights, starting at θ_pre, are distilled towards π_new on the token states of a fresh rollout
 * of the current team (states from d^{π_cur}) by minimising (1/K) Σ_s KL(π_new‖π_θ) with AdamW.
 *
 * Hand-over (projectedAgent.ts has the details): the distilled student is the seat's trainable
 * policy. At the next stage's setReference() π_new becomes the seat's π_cur, so the student's
 * first SAT update — distilled once more on that update's own batch (`stageDistillSteps`), then one
 * ordinary step — is trained and checked against the policy that sampled the batch (ratios
 * π_θ/π_new, KL(π_θ‖π_new) ≤ δ_j); if the monitor accepts it the student holds the seat from then on
 * (SAT's π_cur⁽ʲ⁾ ← π_tar⁽ʲ⁾), if it rejects it the projection keeps sampling and the next stage
 * tries again. The report's `handover` quantiles are KL(π_θ‖π_new) of the swap's distilled student
 * at the swap's own (training) states — in-sample; on fresh prefixes it is further out, which is why
 * the hand-over step distils again on its own batch.
 *
 * `seat: 'student'` keeps the earlier behaviour: the distilled student samples from the first stage
 * on (a plain LmAgent), an approximation of π_new by KL(π_new‖π_θ).
 *
 * Without Stage-0 the new model simply takes agent j's seat as it is.
 *
 * Not here: the projection maths (stage0.ts), the two-model sampler (projectedAgent.ts) or the
 * tabular swap (experiment.ts).
 */
import { Rng } from '../core/rng';
import { quantile } from '../core/stats';
import { klForward } from '../backend/cpu/softmax';
import type { LoadedModel } from '../model/weights';
import { dequantizeWeights } from '../model/weights';
import { Transformer } from '../model/transformer';
import type { LlmExperiment } from './experiment';
import { gatherRows, LmAgent, pack } from './lm';
import { distil, ProjectedLmAgent, projectRows } from './projectedAgent';
import { agentSteps } from './rollout';

export interface LmSwapOptions {
  readonly stage0: boolean;
  readonly delta0: number;
  /** AdamW steps of distillation towards π_new at the swap (Stage-0 only). */
  readonly distillSteps: number;
  /**
   * With the projection seated: AdamW steps of further distillation inside the hand-over step, on
   * the states of the batch the seat is trained on (ProjectedLmAgent `distil`). Default
   * distillSteps; 0 turns it off.
   */
  readonly stageDistillSteps?: number;
  readonly distillLr: number;
  /** Rollout size (B groups × G) whose states are projected and distilled on. */
  readonly B: number;
  readonly G: number;
  readonly seed: number;
  /**
   * Who samples for agent j after a Stage-0 swap: 'projection' (default) = π_new itself, until the
   * distilled student's first accepted SAT update; 'student' = the distilled student at once.
   */
  readonly seat?: 'projection' | 'student';
}

export interface LmSwapReport {
  readonly agent: number;
  readonly model: string;
  readonly stage0: boolean;
  /** What samples for the seat right after the swap: the projection, the distilled student, or the raw new model. */
  readonly seat: 'projection' | 'student' | 'raw';
  /** Token states the projection and distillation used. */
  readonly states: number;
  /** λ(s) per state (all 0 without Stage-0). */
  readonly lambdas: number[];
  /**
   * Quantiles (50/90/99 %, fraction above δ_j) of the per-state KL to π_cur: of π_pre, of π_new, of
   * the distilled student, and of the policy that samples for the seat now.
   */
  readonly klPre: Quantiles;
  readonly klProjected: Quantiles;
  readonly klStudent: Quantiles;
  readonly klSeated: Quantiles;
  /** Mean KL(π_new‖π_θ) after distillation (how faithful the student is; 0 without Stage-0). */
  readonly distillKl: number;
  /**
   * KL(π_θ‖π_new) per state of the distilled student against the projection, the direction the
   * trust region measures when the student takes over from the projection (fraction above δ_j).
   */
  readonly handover: Quantiles;
  readonly jBefore: number;
  readonly jAfter: number;
}

export interface Quantiles {
  readonly q50: number;
  readonly q90: number;
  readonly q99: number;
  /** Fraction of states above δ (the agent's trust radius). */
  readonly aboveDelta: number;
}

function quantiles(xs: ArrayLike<number>, delta: number): Quantiles {
  // A state projected onto the boundary has KL = δ0 up to the bisection tolerance and f32 rounding;
  // count it as inside (relative slack 1e-3).
  let above = 0;
  for (let i = 0; i < xs.length; i++) if (xs[i]! > delta * (1 + 1e-3)) above++;
  return { q50: quantile(xs, 0.5, 'inverted-cdf'), q90: quantile(xs, 0.9, 'inverted-cdf'), q99: quantile(xs, 0.99, 'inverted-cdf'), aboveDelta: above / Math.max(1, xs.length) };
}

/** Per-state KL(softmax(P/τ) ‖ softmax(Q/τ)) for [K × V] logit rows. */
function kls(P: Float32Array, Q: Float32Array, K: number, V: number, tau: number): Float32Array {
  const out = new Float32Array(K);
  klForward(out, P, Q, K, V, tau);
  return out;
}

export async function swapLmAgent(exp: LlmExperiment, j: number, modelName: string, loaded: LoadedModel, o: LmSwapOptions): Promise<LmSwapReport> {
  const old = exp.team[j];
  if (!old) throw new RangeError(`swap: no agent ${j} in a team of ${exp.team.length}`);
  if (loaded.cfg.vocab !== old.model.cfg.vocab) throw new RangeError(`swap: ${modelName} has vocabulary ${loaded.cfg.vocab}, the team uses ${old.model.cfg.vocab}`);
  const tau = old.temperature;
  const V = old.model.cfg.vocab;
  const delta = exp.cfg.deltas.length > 0 ? exp.cfg.deltas[j]! : exp.cfg.delta;
  const jBefore = (await exp.env.evaluate(exp.team)).J;

  // States from d^{π_cur}: a fresh rollout of the current team.
  const batch = await exp.env.rollout(exp.team, o.B, o.G, new Rng(o.seed, [0x73776170]));
  const steps = agentSteps(batch, j);
  const p = pack(steps);
  const K = steps.obs.length;
  const zCur = gatherRows(old.model.forward(p.tokens, p.B, p.T), p.row, V);
  const weights = dequantizeWeights(loaded.weights);
  // π_pre stays frozen (it is half of the projection); the student is a trainable copy.
  const pre = new Transformer(loaded.cfg, weights, { trainable: 'none' });
  const model = new Transformer(loaded.cfg, weights, { trainable: 'full' });
  const zPre = gatherRows(pre.forward(p.tokens, p.B, p.T), p.row, V);

  // π_new per state, as logits τ·log π_new so that softmax(·/τ) = π_new.
  const zNew = new Float32Array(K * V);
  let lambdas: number[] = new Array<number>(K).fill(0);
  if (o.stage0 && K > 0) {
    const proj = projectRows(zPre, zCur, K, V, tau, o.delta0);
    lambdas = Array.from(proj.lambdas);
    for (let i = 0; i < K * V; i++) zNew[i] = tau * proj.logp[i]!;
  } else zNew.set(zPre);

  // Distil π_new into the new model's own weights: minimise (1/K) Σ_s KL(π_new‖π_θ).
  const distillKl = o.stage0 ? distil(model, p, zNew, K, tau, o.distillSteps, o.distillLr) : 0;
  const zStudent = gatherRows(model.forward(p.tokens, p.B, p.T), p.row, V);
  const seat: LmSwapReport['seat'] = !o.stage0 ? 'raw' : (o.seat ?? 'projection');
  const zSeat = seat === 'projection' ? zNew : seat === 'raw' ? zPre : zStudent;

  const report = {
    agent: j,
    model: modelName,
    stage0: o.stage0,
    seat,
    states: K,
    lambdas,
    klPre: quantiles(kls(zPre, zCur, K, V, tau), delta),
    klProjected: quantiles(kls(zNew, zCur, K, V, tau), delta),
    klStudent: quantiles(kls(zStudent, zCur, K, V, tau), delta),
    klSeated: quantiles(kls(zSeat, zCur, K, V, tau), delta),
    distillKl,
    handover: quantiles(o.stage0 ? kls(zStudent, zNew, K, V, tau) : new Float32Array(K), delta),
  };
  // The new model takes the seat with a fresh optimizer; the others are untouched.
  model.setState({ params: model.params.slice(), optim: new Float32Array(1 + 2 * model.params.length) });
  const name = `${modelName}#${j}`;
  if (seat === 'projection') {
    // The outgoing agent's model is no longer in the team: nothing trains it, so it stays π_cur.
    const projected = new ProjectedLmAgent(j, model, {
      pre, cur: old.model, delta0: o.delta0, name, temperature: tau, topK: old.topK,
      distil: { steps: o.stageDistillSteps ?? o.distillSteps, lr: o.distillLr },
    });
    await projected.setReference(); // π_new is the seat's π_cur until a stage hands it to the student
    exp.team[j] = projected;
  } else {
    exp.team[j] = new LmAgent(j, model, { name, temperature: tau, topK: old.topK });
  }
  const after = await exp.env.evaluate(exp.team);
  exp.lastEval = after;
  const jAfter = after.J;
  return { ...report, jBefore, jAfter };
}
