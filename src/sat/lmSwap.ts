/**
 * Plug-and-play for language-model agents (SAT.md §8): agent j is replaced by a different
 * pretrained model π_pre (e.g. a larger one) without retraining the others.
 *
 * With Stage-0, at every token state s agent j visits under the current team (a fresh rollout, so
 * states come from d^{π_cur}), π_pre is projected into the KL ball around the agent it replaces:
 *
 *   π_new(·|s) ∝ π_pre(·|s)^{1/(1+λ(s))} · π_cur(·|s)^{λ(s)/(1+λ(s))},   KL(π_new‖π_cur) ≤ δ_0
 *
 * (stage0.ts: λ(s) = 0 when π_pre is already inside, else bisection), and the new model's own
 * weights, starting at θ_pre, are distilled towards π_new by minimising E_s KL(π_new‖π_θ) with
 * AdamW. The distilled model then samples from the first stage on. (SAT.md asks for the projected
 * policy itself at sampling time; we sample from its distilled student and report how close the
 * two are — KL(π_new‖π_θ) — rather than run two models per token.)
 *
 * Without Stage-0 the new model simply takes agent j's seat as it is.
 *
 * Not here: the projection maths (stage0.ts) or the tabular swap (experiment.ts).
 */
import { Rng } from '../core/rng';
import { quantile } from '../core/stats';
import { klBackward, klForward } from '../backend/cpu/softmax';
import type { LoadedModel } from '../model/weights';
import { dequantizeWeights } from '../model/weights';
import { Transformer } from '../model/transformer';
import type { LlmExperiment } from './experiment';
import { gatherRows, LmAgent, pack, scatterRows } from './lm';
import { agentSteps } from './rollout';
import { projectState } from './stage0';

export interface LmSwapOptions {
  readonly stage0: boolean;
  readonly delta0: number;
  /** AdamW steps of distillation towards π_new (Stage-0 only). */
  readonly distillSteps: number;
  readonly distillLr: number;
  /** Rollout size (B groups × G) whose states are projected and distilled on. */
  readonly B: number;
  readonly G: number;
  readonly seed: number;
}

export interface LmSwapReport {
  readonly agent: number;
  readonly model: string;
  readonly stage0: boolean;
  /** Token states the projection and distillation used. */
  readonly states: number;
  /** λ(s) per state (all 0 without Stage-0). */
  readonly lambdas: number[];
  /** Quantiles (50/90/99 %) of the per-state KL to π_cur: of π_pre, of π_new, and of the model that takes the seat. */
  readonly klPre: Quantiles;
  readonly klProjected: Quantiles;
  readonly klSeated: Quantiles;
  /** Mean KL(π_new‖π_θ) after distillation (how faithful the student is). */
  readonly distillKl: number;
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
  const model = new Transformer(loaded.cfg, dequantizeWeights(loaded.weights), { trainable: 'full' });
  const zPre = gatherRows(model.forward(p.tokens, p.B, p.T), p.row, V);

  // π_new per state, as logits τ·log π_new so that softmax(·/τ) = π_new.
  const zNew = new Float32Array(K * V);
  const lambdas: number[] = [];
  for (let k = 0; k < K; k++) {
    const pre = Array.from(zPre.subarray(k * V, (k + 1) * V), (x) => x / tau);
    const cur = Array.from(zCur.subarray(k * V, (k + 1) * V), (x) => x / tau);
    if (o.stage0) {
      const r = projectState(pre, cur, o.delta0);
      lambdas.push(r.lambda);
      for (let v = 0; v < V; v++) zNew[k * V + v] = tau * r.logits[v]!;
    } else {
      lambdas.push(0);
      zNew.set(zPre.subarray(k * V, (k + 1) * V), k * V);
    }
  }

  // Distil π_new into the new model's own weights: minimise (1/K) Σ_s KL(π_new‖π_θ).
  let distillKl = 0;
  if (o.stage0 && K > 0) {
    const dout = new Float32Array(K).fill(1 / K);
    for (let step = 0; step < o.distillSteps; step++) {
      model.zeroGrad();
      const zTheta = gatherRows(model.forward(p.tokens, p.B, p.T, { keep: true }), p.row, V);
      const dRows = new Float32Array(K * V);
      klBackward(null, dRows, dout, zNew, zTheta, K, V, tau);
      const dFull = new Float32Array(p.B * p.T * V);
      scatterRows(dFull, dRows, p.row, V);
      model.backward(dFull);
      model.adamStep(o.distillLr, 0);
    }
    const zTheta = gatherRows(model.forward(p.tokens, p.B, p.T), p.row, V);
    distillKl = kls(zNew, zTheta, K, V, tau).reduce((a, b) => a + b, 0) / K;
  }
  const zSeat = gatherRows(model.forward(p.tokens, p.B, p.T), p.row, V);

  const report = {
    agent: j,
    model: modelName,
    stage0: o.stage0,
    states: K,
    lambdas,
    klPre: quantiles(kls(zPre, zCur, K, V, tau), delta),
    klProjected: quantiles(kls(zNew, zCur, K, V, tau), delta),
    klSeated: quantiles(kls(zSeat, zCur, K, V, tau), delta),
    distillKl,
  };
  // The new model takes the seat with a fresh optimizer; the others are untouched.
  model.setState({ params: model.params.slice(), optim: new Float32Array(1 + 2 * model.params.length) });
  exp.team[j] = new LmAgent(j, model, { name: `${modelName}#${j}`, temperature: tau, topK: old.topK });
  const after = await exp.env.evaluate(exp.team);
  exp.lastEval = after;
  const jAfter = after.J;
  return { ...report, jBefore, jAfter };
}
