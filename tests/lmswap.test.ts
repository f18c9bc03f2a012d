/**
 * Plug-and-play for language agents (src/sat/lmSwap.ts, src/sat/agents/projected.ts) on tiny random
 * models built in the test: with Stage-0 the seat samples from the projection π_new itself — every
 * state it visits is within δ0 of π_cur, its token frequencies match its distributions, λ = 0
 * reproduces π_pre exactly, the same seed gives the same tokens — and the student takes over
 * through its SAT update, distilled on its batch and measured against π_new. Without Stage-0 the new model takes
 * the seat unchanged.
 */
import { describe, expect, it } from 'vitest';
import { klForward } from '../src/backend/cpu/softmax';
import { Rng } from '../src/core/rng';
import { makeCard } from '../src/model/card';
import { modelConfig } from '../src/model/config';
import { EOS, tokenizer, vocabSize } from '../src/model/tokenizer';
import { cpuBackend } from '../src/backend/cpu';
import { Model } from '../src/model/model';
import { dequantizeWeights, initWeights, loadModel, saveModel } from '../src/model/weights';
import { parseConfig } from '../src/sat/config';
import { runStages, type LlmExperiment, type LmSeat } from '../src/sat/experiment';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { LmAgent, type LmSteps } from '../src/sat/agents/lm';
import { swapLmAgent } from '../src/sat/lmSwap';
import { ProjectedLmAgent } from '../src/sat/agents/projected';
import { agentSteps } from '../src/sat/rollout';
import type { AgentBatch, StepSet } from '../src/sat/types';
import { createRemoteExperiment, type RemoteAgent } from '../src/workers/remoteTeam';
import { nodeAgentWorker } from './helpers/nodeAgentWorker';

function modelBytes(d: number, seed: number, name: string) {
  const cfg = modelConfig({ vocab: vocabSize, d, layers: 1, heads: 2, hidden: 2 * d, maxSeq: 64 });
  // Larger embeddings (std 0.1) so the two random models disagree clearly.
  const w = initWeights(cfg, new Rng(seed));
  const emb = w.get('tok_emb');
  if (emb && emb.dtype === 'f32') for (let i = 0; i < emb.data.length; i++) emb.data[i]! *= 5;
  return saveModel(cfg, w, makeCard(cfg, { name, task: 'arithmetic level 1', dataSeed: seed, heldOutAccuracy: 0, pretrainSeconds: 0, quant: 'f32' }));
}

const small = modelBytes(32, 1, 'arithmetic-S');
const bigBytes = modelBytes(64, 2, 'arithmetic-M');
const big = loadModel(bigBytes);
const DELTA0 = 0.01;

async function team() {
  return createLlmExperiment(parseConfig({ task: 'arithmetic', level: 1, agents: 2, protocol: 'chain', batch: 2, group: 4, evalEpisodes: 8, maxNew: 4 }), async () => small);
}
const opts = { delta0: DELTA0, distillSteps: 60, distillLr: 3e-3, B: 2, G: 4, seed: 3 };

/** A team whose agent 1 was just swapped for the M model with Stage-0; also the outgoing agent. */
async function swapped(o: Partial<typeof opts> = {}): Promise<{ exp: LlmExperiment; seat: ProjectedLmAgent; old: LmSeat }> {
  const exp = await team();
  const old = exp.team[1]!;
  await swapLmAgent(exp, 1, 'arithmetic-M', bigBytes, { ...opts, ...o, stage0: true });
  const seat = exp.team[1]!;
  if (!(seat instanceof ProjectedLmAgent)) throw new Error('the Stage-0 seat is not a ProjectedLmAgent');
  return { exp, seat: seat as ProjectedLmAgent, old }; // in-process: the CPU backend's tensors
}

/** One state: the next token after `context` (a one-step StepSet over a one-sequence table). */
function stateAfter(context: Int32Array): StepSet {
  const seq = Int32Array.from([...context, EOS]);
  const ctx: LmSteps = { seqs: [seq], stepSeq: Int32Array.of(0), stepPos: Int32Array.of(context.length) };
  return { obs: Int32Array.of(0), actions: Int32Array.of(EOS), context: ctx };
}

/** Per-state KL(p‖q) of [K × V] probability rows. */
function rowKl(p: Float64Array, q: Float64Array, K: number, V: number): number[] {
  return Array.from({ length: K }, (_, k) => {
    let s = 0;
    for (let v = 0; v < V; v++) {
      const a = p[k * V + v]!;
      if (a > 0) s += a * Math.log(a / q[k * V + v]!);
    }
    return s;
  });
}

/**
 * Pearson χ² of observed counts against probabilities p, categories with expected count < 5 pooled
 * into one; returns the statistic and the Wilson–Hilferty 99.9 % critical value for its df.
 */
function chiSquare(counts: number[], p: Float64Array, n: number): { stat: number; crit: number } {
  let stat = 0;
  let df = -1;
  let poolO = 0;
  let poolE = 0;
  p.forEach((pv, v) => {
    const e = n * pv;
    if (e < 5) {
      poolO += counts[v]!;
      poolE += e;
    } else {
      stat += (counts[v]! - e) ** 2 / e;
      df++;
    }
  });
  if (poolE > 0) {
    stat += (poolO - poolE) ** 2 / poolE;
    df++;
  }
  const z = 3.09; // one-sided 99.9 %
  const crit = df * (1 - 2 / (9 * df) + z * Math.sqrt(2 / (9 * df))) ** 3;
  return { stat, crit };
}

describe('language plug-and-play', () => {
  it('Stage-0 seats the projection itself: inside δ0 of π_cur at every swap state, and the distilled student moves towards it', async () => {
    const exp = await team();
    const r = await swapLmAgent(exp, 1, 'arithmetic-M', bigBytes, { ...opts, stage0: true });
    expect(r.seat).toBe('projection');
    expect(r.states).toBeGreaterThan(0);
    expect(r.klPre.q99).toBeGreaterThan(DELTA0); // the raw new model is outside the ball…
    expect(r.klProjected.q99).toBeLessThanOrEqual(DELTA0 + 1e-6); // …its projection is inside
    expect(r.klSeated.q99).toBeLessThanOrEqual(DELTA0 + 1e-6); // and the projection is what samples
    expect(r.lambdas.some((l) => l > 0)).toBe(true);
    expect(r.klStudent.q50).toBeLessThan(r.klPre.q50); // the distilled student is closer to π_cur than π_pre
    const seat = exp.team[1]!;
    expect(seat).toBeInstanceOf(ProjectedLmAgent);
    expect((seat as ProjectedLmAgent).sampler).toBe('projection');
    expect((seat as ProjectedLmAgent).model.cfg.d).toBe(64); // the larger model's student holds the trainable seat
    console.log(`[swap] KL to π_cur q50/q99: pre ${r.klPre.q50.toExponential(2)}/${r.klPre.q99.toExponential(2)}, projected ${r.klProjected.q50.toExponential(2)}/${r.klProjected.q99.toExponential(2)}, student ${r.klStudent.q50.toExponential(2)}/${r.klStudent.q99.toExponential(2)}; KL(π_new‖π_θ) ${r.distillKl.toExponential(2)}; hand-over KL(π_θ‖π_new) q50/q99 ${r.handover.q50.toExponential(2)}/${r.handover.q99.toExponential(2)}`);
  });

  it('the projected seat is within δ0 of π_cur at every state it visits in its own rollouts', async () => {
    const { exp, seat, old } = await swapped();
    const batch = await exp.env.rollout(exp.team, 3, 4, new Rng(11));
    const steps = agentSteps(batch, 1);
    const K = steps.obs.length;
    expect(K).toBeGreaterThan(0);
    const V = seat.model.cfg.vocab;
    const pNew = await seat.distributions(steps);
    const pCur = await old.distributions(steps);
    const kl = rowKl(pNew, pCur, K, V);
    const proj = await seat.projectionAt(steps);
    for (let k = 0; k < K; k++) expect(kl[k]!).toBeLessThanOrEqual(DELTA0 * (1 + 1e-3) + 1e-7);
    expect(Array.from(proj.lambdas).some((l) => l > 0)).toBe(true);
    // The rollout recorded the projection's log-probs (the policy that sampled), so ratios start at 1.
    const lp = await seat.logProbs(steps);
    steps.logp.forEach((x, k) => expect(x).toBe(lp[k]!));
  });

  it('its token frequencies match its distribution (χ² passes for π_new and fails for π_pre)', async () => {
    const { seat } = await swapped();
    const context = Int32Array.from(tokenizer.encode('3+4=', { bos: true }));
    const state = stateAfter(context);
    const pNew = await seat.distributions(state);
    const lam = (await seat.projectionAt(state)).lambdas[0]!;
    expect(lam).toBeGreaterThan(0); // a state where the projection binds
    const V = seat.model.cfg.vocab;
    const copies = 400;
    const rounds = 10;
    const counts = new Array<number>(V).fill(0);
    for (let r = 0; r < rounds; r++) {
      const g = await seat.generate(Array.from({ length: copies }, () => context), { maxNew: 1, seed: 1000 + r, stream: 1 });
      g.tokens.forEach((t, i) => counts[t.length > 0 ? t[0]! : g.stopped[i] ? EOS : -1]!++);
    }
    const n = copies * rounds;
    expect(counts.reduce((a, b) => a + b, 0)).toBe(n);
    const ok = chiSquare(counts, pNew, n);
    expect(ok.stat).toBeLessThan(ok.crit);
    // The same counts against the unprojected π_pre: the test can fail, and does.
    const pre = new LmAgent(1, new Model(cpuBackend, big.cfg, dequantizeWeights(big.weights), { trainable: 'none' }), { temperature: seat.temperature });
    const bad = chiSquare(counts, await pre.distributions(state), n);
    expect(bad.stat).toBeGreaterThan(bad.crit);
    console.log(`[swap] sampling at one state (λ = ${lam.toFixed(3)}): χ² ${ok.stat.toFixed(1)} vs π_new (critical ${ok.crit.toFixed(1)}), ${bad.stat.toFixed(1)} vs π_pre (critical ${bad.crit.toFixed(1)})`);
  });

  it('λ = 0 reproduces π_pre exactly when π_pre is inside the ball: same distributions, same tokens', async () => {
    const { exp, seat } = await swapped({ delta0: 1e3 });
    const preModel = new Model(cpuBackend, big.cfg, dequantizeWeights(big.weights), { trainable: 'none' });
    const pre = new LmAgent(1, preModel, { temperature: seat.temperature, topK: seat.topK });
    const batch = await exp.env.rollout(exp.team, 2, 4, new Rng(5));
    const steps = agentSteps(batch, 1);
    expect(Array.from((await seat.projectionAt(steps)).lambdas).every((l) => l === 0)).toBe(true);
    const a = await seat.distributions(steps);
    const b = await pre.distributions(steps);
    for (let i = 0; i < a.length; i++) expect(Math.abs(a[i]! - b[i]!)).toBeLessThan(1e-12);
    const contexts = ['1+2=', '7+8=', '4+4=', '9+0='].map((t) => Int32Array.from(tokenizer.encode(t, { bos: true })));
    const g1 = await seat.generate(contexts, { maxNew: 4, seed: 77, stream: 1 });
    const g2 = await pre.generate(contexts, { maxNew: 4, seed: 77, stream: 1 });
    expect(g1.tokens.map((t) => Array.from(t))).toEqual(g2.tokens.map((t) => Array.from(t)));
    expect(g1.stopped).toEqual(g2.stopped);
  });

  it('same seed ⇒ identical generations (a different seed differs)', async () => {
    const { seat } = await swapped();
    const { seat: twin } = await swapped();
    const contexts = ['1+2=', '7+8=', '4+4=', '9+0=', '5+6=', '2+2='].map((t) => Int32Array.from(tokenizer.encode(t, { bos: true })));
    const run = async (s: ProjectedLmAgent, seed: number) => (await s.generate(contexts, { maxNew: 4, seed, stream: 1 })).tokens.map((t) => Array.from(t));
    const a = await run(seat, 9);
    expect(await run(seat, 9)).toEqual(a);
    expect(await run(twin, 9)).toEqual(a);
    expect(await run(seat, 10)).not.toEqual(a);
  });

  it('hand-over: the student is distilled on its batch, its update is measured against π_new, and a rejected update puts the projection back', async () => {
    const { exp, seat } = await swapped();
    const batch = await exp.env.rollout(exp.team, 2, 4, new Rng(21));
    await seat.setReference(); // π_cur of the stage = π_new, the policy that sampled `batch`
    const s = agentSteps(batch, 1);
    const K = s.obs.length;
    const V = seat.model.cfg.vocab;
    const tau = seat.temperature;
    const ab: AgentBatch = { nEpisodes: batch.episodes.length, obs: s.obs, actions: s.actions, episodeOf: s.episodeOf, context: s.context, adv: new Float64Array(batch.episodes.length), weight: new Float64Array(batch.episodes.length).fill(1), horizon: exp.env.horizon };
    const studentKl = async () => {
      const z = await seat.student.currentLogits(ab);
      const out = new Float32Array(K);
      klForward(out, z, Float32Array.from((await seat.projectionAt(ab)).logp, (x) => tau * x), K, V, tau);
      return out;
    };
    const mean = (xs: ArrayLike<number>) => Array.from(xs).reduce((a, b) => a + b, 0) / xs.length;
    const before = mean(await studentKl());
    expect(Array.from(await seat.klToReference(ab))).toEqual(new Array<number>(K).fill(0)); // the projection is π_cur
    const start = await seat.snapshot();
    const zeroStep = { level: 'sequence', tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.2, beta: 0, lr: 0, weightDecay: 0 } as const;
    await seat.trainStep(ab, zeroStep);
    expect(seat.sampler).toBe('student');
    expect(seat.lastDistil.states).toBe(K); // distilled on the batch's own states…
    // …with lr = 0 the RL step leaves the distilled student as it is: the monitor sees KL(π_θ‖π_new) exactly.
    const got = await seat.klToReference(ab);
    const want = await studentKl();
    for (let k = 0; k < K; k++) expect(got[k]!).toBeCloseTo(Math.max(0, want[k]!), 6);
    expect(mean(got)).toBeLessThan(before);
    expect(got.some((x) => x > 0)).toBe(true);
    const distilledOnce = seat.lastDistil;
    const after = await seat.model.getParams();
    await seat.restore(start); // a backtrack or a rejection: the projection samples again
    expect(seat.sampler).toBe('projection');
    expect(Array.from(await seat.klToReference(ab))).toEqual(new Array<number>(K).fill(0));
    await seat.trainStep(ab, zeroStep); // the retry reuses the distillation: same student, not recomputed
    expect(seat.lastDistil).toBe(distilledOnce);
    expect(Array.from(await seat.model.getParams())).toEqual(Array.from(after));
  });

  it('the SAT stage loop runs with the projected seat and ends with the student or the projection holding it', async () => {
    const { exp, seat } = await swapped();
    const [st] = await runStages(exp, 1);
    const step = st!.steps.find((x) => x.agent === 1)!;
    expect(seat.sampler).toBe(step.accepted ? 'student' : 'projection');
    expect(Number.isFinite(st!.metrics['team/dJ'] as number)).toBe(true);
  });

  it('seat "student" keeps the earlier behaviour: the distilled student samples at once', async () => {
    const exp = await team();
    const r = await swapLmAgent(exp, 1, 'arithmetic-M', bigBytes, { ...opts, stage0: true, seat: 'student' });
    expect(r.seat).toBe('student');
    expect(exp.team[1]).not.toBeInstanceOf(ProjectedLmAgent);
    expect(r.klSeated).toEqual(r.klStudent);
  });

  it('without Stage-0 the new model takes the seat unchanged', async () => {
    const exp = await team();
    const r = await swapLmAgent(exp, 1, 'arithmetic-M', bigBytes, { ...opts, stage0: false });
    expect(r.seat).toBe('raw');
    expect(r.lambdas.every((l) => l === 0)).toBe(true);
    expect(r.klSeated).toEqual(r.klPre);
    const direct = new Model(cpuBackend, big.cfg, big.weights, { trainable: 'none' });
    const toks = Int32Array.from([1, 20, 30, 4]);
    const V = big.cfg.vocab; // a model's logits tensor may be longer than B·T·V (grow-only): compare the call's rows
    expect(Array.from((exp.team[1] as LmAgent).model.forward(toks, 1, 4).subarray(0, 4 * V))).toEqual(Array.from(direct.forward(toks, 1, 4).subarray(0, 4 * V)));
  });

  it('in workers (the page\'s path): the same swap report and the same next stage as in-process, with one swapIn call', async () => {
    const cfg = parseConfig({ task: 'arithmetic', level: 1, agents: 2, protocol: 'chain', batch: 2, group: 4, evalEpisodes: 8, maxNew: 4, stages: 2, swapAgent: 1, swapAt: 2, swapTo: 'M', stage0Delta: DELTA0 });
    const load = async (n: string) => (n === 'arithmetic-M' ? bigBytes : small);
    const local = await createLlmExperiment(cfg, load);
    const remote = await createRemoteExperiment(cfg, { makeWorker: () => nodeAgentWorker(), load });
    try {
      const a = await runStages(local, 2);
      const b = await runStages(remote, 2);
      expect(b[1]!.swap).toBeDefined();
      expect(b[1]!.swap).toEqual(a[1]!.swap);
      expect(b[1]!.swap!.certFloor).toBeGreaterThan(-1);
      const strip = (m: Record<string, unknown>) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('perf/ms_') && k !== 'perf/tokens_per_s'));
      expect(b.map((s) => strip(s.metrics))).toEqual(a.map((s) => strip(s.metrics)));
      expect((remote.team[1] as RemoteAgent).calls.get('swapIn')).toBe(1);
      expect((local.team[1] as ProjectedLmAgent).sampler).toBeDefined();
    } finally {
      remote.terminate();
    }
  }, 120_000);
});
