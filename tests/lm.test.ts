/**
 * Language-model agents in the SAT loop, on a tiny random model built in the test (no shipped
 * file needed): r = 1 exactly before the first step, exact KL = 0 at the reference, per-token
 * steps with the end-of-message token as an action, a whole stage emitting the §9 metrics,
 * determinism given the seed, and the gradient/Fisher methods the certificate uses (the Fisher-vector
 * product against an f64 central difference of the KL gradient computed here, its independent twin).
 * Seeds are fixed; the model is random, so the task reward is mostly 0 — these tests check the
 * plumbing and the maths, not learning (the learning curve is measured by the CLI; see README).
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { makeCard } from '../src/model/card';
import { modelConfig } from '../src/model/config';
import { EOS, vocabSize } from '../src/model/tokenizer';
import { initWeights, quantizeWeights, saveModel } from '../src/model/weights';
import { parseConfig } from '../src/sat/config';
import { runStages } from '../src/sat/experiment';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { cpuBackend, cpuBackend64 } from '../src/backend/cpu';
import type { Backend } from '../src/backend/types';
import type { GpuTensors } from '../src/backend/webgpu/backend';
import { klBackward } from '../src/backend/cpu/softmax';
import { Model } from '../src/model/model';
import { pack, type LmAgent, type LmSteps } from '../src/sat/agents/lm';
import { agentSteps } from '../src/sat/rollout';

const tinyCfg = modelConfig({ vocab: vocabSize, d: 32, layers: 1, heads: 2, hidden: 64, maxSeq: 64 });
const bytes = saveModel(
  tinyCfg,
  initWeights(tinyCfg, new Rng(5)),
  makeCard(tinyCfg, { name: 'arithmetic-S', task: 'arithmetic level 1', dataSeed: 5, heldOutAccuracy: 0, pretrainSeconds: 0, quant: 'f32' }),
);
const loader = async () => bytes;

function settings(extra: Record<string, unknown> = {}) {
  return parseConfig({ task: 'arithmetic', level: 1, agents: 2, protocol: 'chain', batch: 2, group: 4, evalEpisodes: 8, maxNew: 4, lr: 1e-4, epochs: 1, stages: 1, ...extra });
}

describe('language-model agents', () => {
  it('log-probs asked for at once on two step sets equal those asked one by one (the reused log π array is not shared)', async () => {
    const exp = await createLlmExperiment(settings(), loader);
    const [a, b] = [9, 10].map((seed) => exp.env.rollout(exp.team, 2, 4, new Rng(seed)));
    const agent = exp.team[0]!;
    const [sa, sb] = [agentSteps(await a!, 0), agentSteps(await b!, 0)];
    const alone = [await agent.logProbs(sa), await agent.logProbs(sb)];
    const together = await Promise.all([agent.logProbs(sa), agent.logProbs(sb), agent.logProbs(sa)]);
    expect(Array.from(alone[0]!)).not.toEqual(Array.from(alone[1]!));
    expect(together.map((x) => Array.from(x))).toEqual([alone[0], alone[1], alone[0]].map((x) => Array.from(x!)));
    expect(Array.from(alone[0]!)).toEqual(Array.from(sa.logp));
  });

  it('read in place (hostView) or downloaded, an agent gives the same log-probs, distributions and Fisher-vector products', async () => {
    // The same team twice: on cpuBackend, and on it without hostView (every read downloads, as on a GPU).
    const { hostView: _, ...downloadOnly } = cpuBackend;
    const [exp, twin] = await Promise.all([
      createLlmExperiment(settings(), loader),
      createLlmExperiment(settings(), loader, { backendOf: async () => downloadOnly as unknown as Backend<GpuTensors> }),
    ]);
    const batch = await exp.env.rollout(exp.team, 2, 4, new Rng(13));
    const rng = new Rng(14);
    const v = Float64Array.from({ length: (exp.team[0] as LmAgent).model.paramCount() }, () => rng.normal() * 1e-2);
    const reads = async (agent: LmAgent) => {
      const s = agentSteps(batch, 0);
      return [await agent.logProbs(s), await agent.distributions(s), await agent.fisherVectorProduct(s, v), await agent.fisherVectorProduct(s, v.map((x) => -x))].map((x) => Array.from(x));
    };
    const [a, b] = [await reads(exp.team[0] as LmAgent), await reads(twin.team[0] as LmAgent)];
    expect(a[2]!.some((x) => x !== 0)).toBe(true);
    expect(a).toEqual(b);
  });

  it('r = 1 exactly before the first step: recomputed log-probs equal the rollout\'s, and the KL is exactly 0', async () => {
    const exp = await createLlmExperiment(settings(), loader);
    const batch = await exp.env.rollout(exp.team, 2, 4, new Rng(9));
    for (const agent of exp.team) {
      await agent.setReference();
      const s = agentSteps(batch, agent.index);
      expect(s.obs.length).toBeGreaterThan(0);
      const lp = await agent.logProbs(s);
      expect(Array.from(lp)).toEqual(Array.from(s.logp));
      expect(Array.from(await agent.klToReference(s)).every((k) => k === 0)).toBe(true);
    }
  });

  // The activations setting reaches every LoRA agent's model, and a policy with int8 activations is
  // still one function: the log-probs recomputed for the update equal the rollout's exactly.
  it('activations int8 (lora ≥ 1, a Q8 base): every agent takes it, r = 1 exactly before the first step, a stage runs', async () => {
    const q8 = saveModel(
      tinyCfg,
      quantizeWeights(tinyCfg, initWeights(tinyCfg, new Rng(5)), 'q8'),
      makeCard(tinyCfg, { name: 'arithmetic-S', task: 'arithmetic level 1', dataSeed: 5, heldOutAccuracy: 0, pretrainSeconds: 0, quant: 'q8' }),
    );
    const exp = await createLlmExperiment(settings({ lora: 2, activations: 'int8' }), async () => q8);
    expect(exp.team.map((a) => (a as LmAgent).model.activations)).toEqual(['int8', 'int8']);
    const batch = await exp.env.rollout(exp.team, 2, 4, new Rng(9));
    for (const agent of exp.team) {
      await agent.setReference();
      const s = agentSteps(batch, agent.index);
      expect(Array.from(await agent.logProbs(s))).toEqual(Array.from(s.logp));
    }
    const exact = await createLlmExperiment(settings({ lora: 2 }), async () => q8);
    expect(exact.team.map((a) => (a as LmAgent).model.activations)).toEqual(['exact', 'exact']);
    expect((await runStages(exp, 1))[0]!.metrics).toHaveProperty(['team/J']);
  });

  it('every message token is a step, and a message that stopped ends with the end-of-message action', async () => {
    const exp = await createLlmExperiment(settings(), loader);
    const batch = await exp.env.rollout(exp.team, 2, 4, new Rng(3));
    const ctx = batch.context as LmSteps;
    let stops = 0;
    for (const ep of batch.episodes) {
      expect(ep.turns.length).toBeGreaterThan(0);
      for (const t of ep.turns) {
        const seq = ctx.seqs[ctx.stepSeq[t.obs]!]!;
        expect(seq[ctx.stepPos[t.obs]!]).toBe(t.action);
        if (t.action === EOS) {
          stops++;
          expect(ctx.stepPos[t.obs]).toBe(seq.length - 1);
        }
      }
      // chain of 2: both agents speak, in order
      expect([...new Set(ep.turns.map((t) => t.agent))]).toEqual([0, 1]);
    }
    expect(stops).toBeGreaterThanOrEqual(0);
  });

  it('a stage runs end to end, emits the docs/method.md §9 keys, and is deterministic given the seed', async () => {
    const run = async () => {
      const exp = await createLlmExperiment(settings({ seed: 4 }), loader);
      return (await runStages(exp, 1))[0]!.metrics;
    };
    const a = await run();
    for (const k of ['team/J', 'team/dJ', 'team/J_ci', 'cert/lower', 'cert/held', 'order/sigma', 'agent/0/kl_q', 'agent/1/viol_rate', 'agent/0/adv_hist', 'agent/1/grad_norm']) expect(a).toHaveProperty([k]);
    const strip = (m: Record<string, unknown>) => JSON.stringify(Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('perf/'))));
    expect(strip(await run())).toBe(strip(a));
  });

  it('the Fisher-vector product is positive semi-definite and linear in v; the surrogate gradient matches a finite difference', async () => {
    const exp = await createLlmExperiment(settings(), loader);
    const agent = exp.team[0] as LmAgent;
    const batch = await exp.env.rollout(exp.team, 2, 4, new Rng(11));
    await agent.setReference();
    const s = agentSteps(batch, 0);
    const rng = new Rng(12);
    const v = Float64Array.from({ length: agent.model.paramCount() }, () => rng.normal() * 1e-2);
    const fv = await agent.fisherVectorProduct(s, v);
    const f2v = await agent.fisherVectorProduct(s, v.map((x) => 2 * x));
    let vfv = 0;
    let rel = 0;
    let norm = 0;
    for (let i = 0; i < v.length; i++) {
      vfv += v[i]! * fv[i]!;
      rel = Math.max(rel, Math.abs(f2v[i]! - 2 * fv[i]!));
      norm = Math.max(norm, Math.abs(fv[i]!));
    }
    expect(vfv).toBeGreaterThanOrEqual(0);
    expect(rel / norm).toBeLessThan(1e-2);

    // d/dε of (1/N) Σ A (r − 1) along a direction, against gᵀ·dir (rewards replaced by ±1 so A ≠ 0).
    const N = batch.episodes.length;
    const adv = Float64Array.from({ length: N }, (_, e) => (e % 2 ? 1 : -1));
    const ab = { nEpisodes: N, obs: s.obs, actions: s.actions, episodeOf: s.episodeOf, context: s.context, adv, weight: new Float64Array(N).fill(1), horizon: 8 };
    const g = await agent.surrogateGradient(ab);
    const dir = Float64Array.from({ length: g.length }, () => rng.normal());
    const surrogate = async (eps: number) => {
      const base = await agent.model.getParams();
      agent.model.setParams(base.map((x, i) => x + eps * dir[i]!));
      const lp = await agent.logProbs(s);
      agent.model.setParams(base);
      const u = new Float64Array(N);
      lp.forEach((x, k) => (u[s.episodeOf[k]!]! += x - s.logp[k]!));
      return u.reduce((acc, ue, e) => acc + adv[e]! * Math.expm1(ue), 0) / N;
    };
    const h = 1e-3;
    const fd = ((await surrogate(h)) - (await surrogate(-h))) / (2 * h);
    const gd = g.reduce((acc, x, i) => acc + x * dir[i]!, 0);
    console.log(`[lm] surrogate gradient along a random direction: analytic ${gd.toExponential(4)}, finite difference ${fd.toExponential(4)}`);
    expect(Math.abs(gd - fd)).toBeLessThan(2e-2 * Math.max(1e-6, Math.abs(fd)) + 1e-5);
  });

  it('the Fisher-vector product equals the Hessian of the KL, an f64 central difference of its gradient computed here', async () => {
    const exp = await createLlmExperiment(settings(), loader);
    const agent = exp.team[0] as LmAgent;
    const batch = await exp.env.rollout(exp.team, 2, 4, new Rng(21));
    await agent.setReference();
    const s = agentSteps(batch, 0);
    const P = agent.model.paramCount();
    const rng = new Rng(13);
    const v = Float64Array.from({ length: P }, () => rng.normal());
    const fv = await agent.fisherVectorProduct(s, v);
    // The twin: Hessian of θ' ↦ (1/K) Σ_k KL(π_θ(·|s_k) ‖ π_θ'(·|s_k)) at θ' = θ, along v, by a
    // central difference of its gradient, in f64 (cpuBackend64) on the same weights.
    const ref = new Model(cpuBackend64, agent.model.cfg, await agent.model.exportWeights(), { trainable: 'full' });
    const pk = pack(s);
    const K = s.obs.length;
    const V = agent.model.cfg.vocab;
    const tau = agent.temperature;
    const rowsOf = (full: Float64Array) => {
      const out = new Float64Array(K * V);
      pk.row.forEach((r, k) => out.set(full.subarray(r * V, (r + 1) * V), k * V));
      return out;
    };
    const theta = new Float64Array(P);
    ref.layout.forEach((sl, i) => theta.set(ref.params[i]!, sl.offset));
    const setTheta = (x: Float64Array) => ref.layout.forEach((sl, i) => ref.params[i]!.set(x.subarray(sl.offset, sl.offset + sl.size)));
    const zP = rowsOf(ref.forward(pk.tokens, pk.B, pk.T));
    const h = 1e-5;
    const grad = (sgn: number): Float64Array => {
      setTheta(theta.map((x, i) => x + sgn * h * v[i]!));
      ref.zeroGrad();
      const zQ = rowsOf(ref.forward(pk.tokens, pk.B, pk.T, { keep: true }));
      const dQ = new Float64Array(K * V);
      klBackward(null, dQ, new Float64Array(K).fill(1 / K), zP, zQ, K, V, tau);
      const full = new Float64Array(pk.B * pk.T * V);
      pk.row.forEach((r, k) => full.set(dQ.subarray(k * V, (k + 1) * V), r * V));
      ref.backward(full);
      const g = new Float64Array(P);
      ref.layout.forEach((sl, i) => g.set(ref.grads[i]!, sl.offset));
      return g;
    };
    const gp = grad(1);
    const gm = grad(-1);
    let err = 0;
    let scale = 0;
    for (let i = 0; i < P; i++) {
      const r = (gp[i]! - gm[i]!) / (2 * h);
      err = Math.max(err, Math.abs(fv[i]! - r));
      scale = Math.max(scale, Math.abs(r));
    }
    console.log(`[lm] Fisher-vector product vs the f64 Hessian of the KL: max |Δ| / max |ref| = ${(err / scale).toExponential(2)} over ${P} parameters, ${K} states`);
    expect(scale).toBeGreaterThan(0);
    expect(err / scale).toBeLessThan(1e-2);
  });

  it('a rollout scoring one agent samples the same episodes and records that agent\'s log-probs only', async () => {
    const exp = await createLlmExperiment(settings(), loader);
    const all = await exp.env.rollout(exp.team, 2, 4, new Rng(31));
    const one = await exp.env.rollout(exp.team, 2, 4, new Rng(31), { scored: [1] });
    expect(one.episodes.map((e) => [e.reward, e.turns.map((t) => [t.agent, t.action])])).toEqual(all.episodes.map((e) => [e.reward, e.turns.map((t) => [t.agent, t.action])]));
    let scored = 0;
    one.episodes.forEach((e, i) =>
      e.turns.forEach((t, k) => {
        if (t.agent === 1) (expect(t.logp).toBe(all.episodes[i]!.turns[k]!.logp), scored++);
        else expect(t.logp).toBeNaN();
      }),
    );
    expect(scored).toBeGreaterThan(0);
  });
});
