/**
 * Plug-and-play for language-model agents (docs/method.md §8.1, §9b): agent j's seat gets another
 * pretrained model π_pre without retraining the others.
 *
 * With Stage-0 the seat samples at once from π_pre projected into the δ_0 ball around the
 * outgoing π_cur, per token state (a ProjectedLmAgent, agents/projected.ts; λ(s) from stage0.ts),
 * while π_pre's own weights are distilled towards that projection on a fresh rollout; the
 * student takes over at the next stage once the monitor accepts its first update (the hand-over,
 * docs/method.md §9b). `seat: 'student'` seats the distilled student at once; without Stage-0 the
 * new model is seated as it is. The incoming model is a shipped model or an ONNX folder with the
 * seat's own tokenizer (onnxSeat.ts).
 *
 * The team's J and the rollout run on the main thread (`swapLmAgent`); building, projecting and
 * distilling run beside the seat's parameters (`seatSwap`: in process or in its worker).
 *
 * Not here: the projection maths (stage0.ts), the two-model sampler (agents/projected.ts), the tabular swap (experiment.ts).
 */
import { Rng } from '../core/rng';
import { quantile } from '../core/stats';
import { klForward } from '../backend/cpu/softmax';
import type { TensorKinds } from '../backend/types';
import { Model } from '../model/model';
import { ConfigError } from '../core/errors';
import type { HfModel } from '../model/hfLoad';
import { dequantizeWeights, loadModel, type LoadedModel } from '../model/weights';
import type { Experiment, LmSeat } from './experiment';
import { LmAgent, logitRows, pack } from './agents/lm';
import { FrozenOnnxAgent } from './agents/frozen';
import { ProjectedLmAgent, projectRows, type ExternalLogits } from './agents/projected';
import type { LmEnv } from './env/lm';
import { agentSteps } from './rollout';
import { swapFloor } from './stage';
import { lambdaHistogram } from './stage0';
import { hfSeatAgent } from './hfSeat';
import { tokenizerDifference, type OnnxSwapTarget } from './onnxSeat';
import type { AgentPolicy, StepSet } from './types';

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

/** The agent behind a seat: the seat itself, or a projected seat's student. */
function seatAgent(seat: LmSeat): LmAgent<TensorKinds> {
  return (seat instanceof ProjectedLmAgent ? seat.student : seat) as LmAgent<TensorKinds>;
}

/**
 * Releases what the outgoing seat held and nothing keeps using (GPU buffers on WebGPU; a no-op on
 * the CPU): its model unless it is the new projection's π_cur (`kept`), and a projected seat's
 * own frozen halves.
 */
function releaseDropped(oldSeat: LmSeat, kept: unknown): void {
  if (oldSeat instanceof FrozenOnnxAgent) return; // never reached: seatSwap refuses a frozen seat
  const models = oldSeat instanceof ProjectedLmAgent ? [oldSeat.student.model, oldSeat.pre, oldSeat.cur] : [oldSeat.model];
  for (const m of models) if (m !== kept) m.dispose();
}

/** The settings the tokenizer check encodes the preset's prompts with (onnxSeat.ts `tokenizerDifference`). */
type SwapSettings = Parameters<typeof tokenizerDifference>[2];

/** What the seat's side of a swap measured (everything but the team's J before and after). */
export type SeatSwapReport = Omit<LmSwapReport, 'jBefore' | 'jAfter'>;

/** The seat's side of a swap, for `seatSwap` (plain data: it crosses to the seat's worker). */
export interface SeatSwapOptions extends Omit<LmSwapOptions, 'B' | 'G' | 'seed'> {
  /** The seat's trust radius δ_j (the report's "above δ" shares). */
  readonly delta: number;
}

/** An agent that can take a swap where it lives (an agent in a worker: remoteTeam.ts `swapIn`). */
export interface SwapsInPlace {
  swapIn(modelName: string, file: Uint8Array, steps: StepSet, o: SeatSwapOptions): Promise<SeatSwapReport>;
}

function swapsInPlace(a: unknown): a is SwapsInPlace {
  return typeof (a as Partial<SwapsInPlace>).swapIn === 'function';
}

/**
 * The seat's side of a swap (header), run wherever agent j's parameters are — in-process, or in
 * its worker (src/workers/agentApi.ts `swapIn`): builds the incoming model on the outgoing agent's
 * backend, projects and distils it on `steps` (agent j's token states from a rollout of the current
 * team), and returns the new seat with the report. The outgoing seat's model becomes π_cur of the
 * projection; nothing trains it afterwards.
 */
export async function seatSwap(oldSeat: LmSeat, modelName: string, loaded: LoadedModel | OnnxSwapTarget, steps: StepSet, o: SeatSwapOptions, settings?: SwapSettings): Promise<{ seat: LmSeat; report: SeatSwapReport }> {
  const old = seatAgent(oldSeat);
  if (!(old instanceof LmAgent)) throw new ConfigError('swapAgent', (old as { index?: number }).index, `swap: agent ${(old as { name?: string }).name ?? '?'} has no model of ours to project against (a frozen ONNX teammate); swap another agent`);
  const j = old.index;
  const vocab = 'kind' in loaded ? loaded.model.cfg.vocab : loaded.cfg.vocab;
  if (vocab !== old.model.cfg.vocab) throw new RangeError(`swap: ${modelName} has vocabulary ${vocab}, the team uses ${old.model.cfg.vocab}`);
  const tau = old.temperature;
  const V = old.model.cfg.vocab;
  const be = old.model.be;
  const delta = o.delta;
  const p = pack(steps);
  const K = steps.obs.length;
  const zCur = await logitRows(old.model, p.tokens, p.B, p.T, p.row);
  const name = `${modelName}#${j}`;
  let pre: Model<TensorKinds> | ExternalLogits;
  let student: LmAgent<TensorKinds>;
  if ('kind' in loaded) {
    // An ONNX target: π_pre in onnxruntime-web, the student LoRA over the mapped weights.
    if (settings) {
      const why = tokenizerDifference(old.tokenizer, loaded.model.tokenizer, settings, j);
      if (why) throw new ConfigError('swapTo', 'onnx', `swap: ${modelName} and agent ${j} (${old.name}) do not share a tokenizer (${why})`);
    }
    pre = loaded.pre;
    student = hfSeatAgent(j, loaded.model as HfModel, { loraRank: loaded.lora.rank, loraAlpha: loaded.lora.alpha, seed: loaded.lora.seed, temperature: tau, topK: old.topK, name: modelName }, be);
  } else {
    const weights = dequantizeWeights(loaded.weights);
    // π_pre stays frozen (it is half of the projection); the student is a trainable copy.
    pre = new Model(be, loaded.cfg, weights, { trainable: 'none' });
    student = new LmAgent(j, new Model(be, loaded.cfg, weights, { trainable: 'full' }), { name, temperature: tau, topK: old.topK });
  }
  const zPre = 'logitRows' in pre ? await pre.logitRows(p.tokens, p.B, p.T, p.row) : await logitRows(pre, p.tokens, p.B, p.T, p.row);

  // π_new per state, as logits τ·log π_new so that softmax(·/τ) = π_new.
  const zNew = new Float32Array(K * V);
  let lambdas: number[] = new Array<number>(K).fill(0);
  if (o.stage0 && K > 0) {
    const proj = projectRows(zPre, zCur, K, V, tau, o.delta0);
    lambdas = Array.from(proj.lambdas);
    for (let i = 0; i < K * V; i++) zNew[i] = tau * proj.logp[i]!;
  } else zNew.set(zPre);

  // Distil π_new into the new model's own weights: minimise (1/K) Σ_s KL(π_new‖π_θ).
  const distillKl = o.stage0 ? await student.distil(steps, zNew, o.distillSteps, o.distillLr) : 0;
  const zStudent = await student.currentLogits(steps);
  const seatKind: LmSwapReport['seat'] = !o.stage0 ? 'raw' : (o.seat ?? 'projection');
  const zSeat = seatKind === 'projection' ? zNew : seatKind === 'raw' ? zPre : zStudent;

  const report: SeatSwapReport = {
    agent: j,
    model: modelName,
    stage0: o.stage0,
    seat: seatKind,
    states: K,
    lambdas,
    klPre: quantiles(kls(zPre, zCur, K, V, tau), delta),
    klProjected: quantiles(kls(zNew, zCur, K, V, tau), delta),
    klStudent: quantiles(kls(zStudent, zCur, K, V, tau), delta),
    klSeated: quantiles(kls(zSeat, zCur, K, V, tau), delta),
    distillKl,
    handover: quantiles(o.stage0 ? kls(zStudent, zNew, K, V, tau) : new Float32Array(K), delta),
  };
  // The new model takes the seat with a fresh optimizer and a reference at its own weights.
  const n = student.model.paramCount();
  student.model.setState({ params: await student.model.getParams(), optim: new Float32Array(1 + 2 * n) });
  await student.setReference();
  if (seatKind === 'projection') {
    const projected = new ProjectedLmAgent(student, {
      pre, cur: old.model, delta0: o.delta0,
      distil: { steps: o.stageDistillSteps ?? o.distillSteps, lr: o.distillLr },
    });
    await projected.setReference(); // π_new is the seat's π_cur until a stage hands it to the student
    releaseDropped(oldSeat, old.model);
    return { seat: projected as LmSeat, report };
  }
  pre.dispose();
  releaseDropped(oldSeat, null);
  return { seat: student as LmSeat, report };
}

/**
 * Swaps agent j of a language team for the model in `file` (header): J before, the rollout whose
 * states are projected and distilled on, the seat's side (`seatSwap`, in the seat's worker when it
 * has one), J after. Works on in-process and worker teams alike.
 */
export async function swapLmAgent(exp: Experiment & { readonly env: LmEnv }, j: number, modelName: string, file: Uint8Array | OnnxSwapTarget, o: LmSwapOptions): Promise<LmSwapReport> {
  const oldSeat = exp.team[j];
  if (!oldSeat) throw new RangeError(`swap: no agent ${j} in a team of ${exp.team.length}`);
  const delta = exp.cfg.deltas.length > 0 ? exp.cfg.deltas[j]! : exp.cfg.delta;
  const jBefore = (await exp.env.evaluate(exp.team)).J;

  // States from d^{π_cur}: a fresh rollout of the current team.
  const batch = await exp.env.rollout(exp.team, o.B, o.G, new Rng(o.seed, [0x73776170]));
  const steps: StepSet = { ...agentSteps(batch, j), context: batch.context };
  const so: SeatSwapOptions = { stage0: o.stage0, delta0: o.delta0, distillSteps: o.distillSteps, distillLr: o.distillLr, delta, ...(o.stageDistillSteps !== undefined ? { stageDistillSteps: o.stageDistillSteps } : {}), ...(o.seat ? { seat: o.seat } : {}) };
  let report: SeatSwapReport;
  if (swapsInPlace(oldSeat)) {
    if (!(file instanceof Uint8Array)) {
      file.pre.dispose();
      throw new ConfigError('swapTo', 'onnx', `swap: agent ${j} runs in a worker; a swap onto an ONNX folder runs in process only (the command line), for now`);
    }
    report = await oldSeat.swapIn(modelName, file, steps, so);
  } else {
    const r = await seatSwap(oldSeat as LmSeat, modelName, file instanceof Uint8Array ? loadModel(file) : file, steps, so, exp.cfg);
    (exp.team as AgentPolicy[])[j] = r.seat;
    report = r.report;
  }
  const after = await exp.env.evaluate(exp.team);
  exp.lastEval = after;
  return { ...report, jBefore, jAfter: after.J };
}

/** Distillation at a configured swap (the CLI's and the page's): AdamW steps and rate towards π_new. */
export const SWAP_DISTILL = { steps: 150, lr: 1e-3 } as const;

/**
 * The configured swap of a language team (experiment.ts `swapIfDue` calls it before stage swapAt):
 * the shipped model `name` read by `load` (or the ONNX target it prepares: swapTo = onnx), projected by Stage-0 (unless swapStage0 is off) and
 * distilled; the stage record's SwapSummary. `onReport` sees the full report (the CLI prints it).
 * swapTo = onnx is refused by name unless `takesOnnx` (the loader prepares an ONNX target).
 */
export function configuredLmSwap(load: (name: string) => Promise<Uint8Array | OnnxSwapTarget>, seat: 'projection' | 'student' = 'projection', onReport?: (r: LmSwapReport) => void, takesOnnx = false): NonNullable<Experiment['swapModel']> {
  return async (exp, j, name) => {
    const cfg = exp.cfg;
    if (cfg.swapTo === 'onnx' && !takesOnnx) throw new ConfigError('swapTo', 'onnx', `swapTo = onnx swaps agent ${j} onto an ONNX folder, which only the command line takes (--swap ${j}=DIR); here the swap takes a shipped model: set swapTo to S or M${cfg.task === 'arithmetic' ? ' or L' : ''}.`);
    const r = await swapLmAgent(exp as Experiment & { env: LmEnv }, j, name, await load(name), {
      stage0: cfg.swapStage0, delta0: cfg.stage0Delta, distillSteps: SWAP_DISTILL.steps, distillLr: SWAP_DISTILL.lr, B: cfg.batch, G: cfg.group, seed: cfg.seed, seat,
    });
    onReport?.(r);
    // Stage-0 solves λ(s) at every token state the seat samples from, so each token's KL ≤ δ0 and a
    // message's KL (the sum along it) ≤ maxNew·δ0. Without Stage-0 no radius is known.
    const radius = r.stage0 && r.seat === 'projection' ? cfg.maxNew * cfg.stage0Delta : Number.NaN;
    return {
      agent: j, incoming: r.model, stage0: r.stage0, delta0: cfg.stage0Delta,
      // Shares of token states above the agent's radius δ (= δ0 in arith-pnp).
      klQuantiles: { q50: r.klSeated.q50, q90: r.klSeated.q90, q99: r.klSeated.q99 },
      outsideBefore: r.klPre.aboveDelta, outsideAfter: r.klSeated.aboveDelta,
      lambdaHist: lambdaHistogram(r.lambdas), jBefore: r.jBefore, jAfter: r.jAfter,
      certRadius: radius,
      certFloor: swapFloor(radius, exp.env.agentTurns(j), exp.env.rewardRange[1] - exp.env.rewardRange[0]),
    };
  };
}
