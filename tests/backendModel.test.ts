/**
 * BackendModel (src/model/backendModel.ts) on `cpuBackend` against the Transformer
 * (src/model/transformer.ts): the same model assembled from Backend ops must give the same
 * numbers. On the CPU backend the very same kernels run on the same values in the same order, so
 * the expected difference is exactly 0 (measured: 0 everywhere, except the loss statistics,
 * ~3e-8, which the backend writes to an f32 tensor while the CPU function returns f64); the
 * tolerances below (1e-6 relative) only leave room for a harmless reordering, and every measured
 * difference is printed in a table at the end.
 *
 * Checked, in full mode (random f32 weights, and the shipped public/models/arithmetic-S
 * dequantized) and LoRA over Q8 and Q4 bases (random weights quantized, and arithmetic-S's own Q8
 * base): layout and LoRA init from the same seed; forward logits; three whole training
 * steps (forward with keep, the SAT clipped-loss gradient w.r.t. the logits — computed by the
 * backend op on one side and the CPU function on the other — backward, AdamW) on parameters,
 * gradients, moments and the loss statistics; getState/setState and copyParams round trips; and
 * KV-cache generation (prompts of several lengths, several groups, top-k, seq0) giving identical
 * tokens, stops and log-probs for the same seed.
 *
 * Metric: max_i |a_i − b_i| / max(|b_i|, 1e-3·max_j |b_j|) (relative, floored at a thousandth of
 * the reference's scale). Seeds are fixed (Rng(23, [...])).
 *
 * The last suite checks BackendLmAgent (src/sat/backendAgent.ts) against LmAgent: log-probs
 * bit-equal (r = 1 exactly before the first step), and one whole SAT stage on the shipped
 * arithmetic-S model (full and LoRA r4 over its Q8 base) with a team of BackendLmAgents on
 * cpuBackend against a team of LmAgents: every metric within 1e-4 relative (|a − b| ≤
 * 1e-4·max(|b|, 1e-3)), and the parameters after the stage within 1e-3 of how far the stage
 * moved them. Not exact, and only by f32 rounding: the advantages and IS weights are f64 in the
 * batch but travel to the backend as f32 tensors.
 *
 * Not here: WebGPU (tests/webgpu/model.test.ts).
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { clippedLossBackward, cpuBackend } from '../src/backend/cpu';
import type { ClippedLossSpec } from '../src/backend/types';
import { Rng } from '../src/core/rng';
import { modelConfig, type ModelConfig } from '../src/model/config';
import { BackendModel } from '../src/model/backendModel';
import type { LoraConfig } from '../src/model/lora';
import { Transformer } from '../src/model/transformer';
import { dequantizeWeights, loadModel, quantizeWeights, type ModelWeights } from '../src/model/weights';
import { BackendLmAgent } from '../src/sat/backendAgent';
import { parseConfig } from '../src/sat/config';
import { createLlmExperiment, planLlm, runStages, type LlmExperiment } from '../src/sat/experiment';
import { agentSteps } from '../src/sat/rollout';
import { randomWeights } from './helpers/randomWeights';

const SEED = 23;
const rng = (...path: number[]): Rng => new Rng(SEED, path);

const measured: [string, number, number][] = [];
function within(label: string, value: number, tol: number): void {
  measured.push([label, value, tol]);
  expect(value, label).toBeLessThanOrEqual(tol);
}
afterAll(() => {
  const rows = measured.map(([l, v, t]) => `${l.padEnd(62)} ${v.toExponential(2).padStart(9)}  ≤ ${t.toExponential(0)}`);
  console.log(`BackendModel(cpu) vs Transformer (max rel diff ≤ tolerance):\n${rows.join('\n')}`);
});

/** max_i |a_i − b_i| / max(|b_i|, 1e-3·max_j |b_j|) (header). */
function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let scale = 0;
  for (let i = 0; i < b.length; i++) scale = Math.max(scale, Math.abs(b[i]!));
  const floor = 1e-3 * scale || 1e-30;
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!) / Math.max(Math.abs(b[i]!), floor);
    worst = Math.max(worst, Number.isNaN(d) ? Infinity : d);
  }
  return worst;
}

const TOL = 1e-6;

/** d 32 so the projections with input dim d quantize (w2's input 48 stays f32). */
const TINY = modelConfig({ vocab: 16, d: 32, layers: 2, heads: 2, hidden: 48, maxSeq: 24 }, { quantized: true });


const tokensOf = (n: number, V: number, r: Rng): Int32Array => Int32Array.from({ length: n }, () => r.int(V));

interface Pair {
  name: string;
  cfg: ModelConfig;
  ref: Transformer;
  bm: BackendModel;
}

function pair(name: string, cfg: ModelConfig, w: ModelWeights, lora: LoraConfig | null, r: Rng): Pair {
  const opts = lora ? ({ trainable: 'lora', lora, seed: 7 } as const) : ({ trainable: 'full' } as const);
  const ref = new Transformer(cfg, w, opts);
  const bm = new BackendModel(cpuBackend, cfg, w, opts);
  if (lora) {
    // LoRA B starts at 0 (so ∂/∂A = 0): give both the same non-zero adapter.
    const p = Float32Array.from(ref.params, (x) => x + 0.05 * r.normal());
    ref.setState({ params: p });
    bm.setParams(p);
  }
  return { name, cfg, ref, bm };
}

function models(): Pair[] {
  const w = randomWeights(TINY, rng(1));
  const file = loadModel(new Uint8Array(readFileSync('public/models/arithmetic-S.safetensors')));
  return [
    pair('tiny full', TINY, w, null, rng(2)),
    pair('tiny LoRA r4 over Q8', TINY, quantizeWeights(TINY, w, 'q8'), { rank: 4, alpha: 8 }, rng(3)),
    pair('tiny LoRA r2 (wq, w2) over Q4', TINY, quantizeWeights(TINY, w, 'q4'), { rank: 2, alpha: 2, targets: ['wq', 'w2'] }, rng(4)),
    pair('arithmetic-S LoRA r4 over Q8 (file)', file.cfg, file.weights, { rank: 4, alpha: 8 }, rng(5)),
    pair('arithmetic-S full (dequantized file)', file.cfg, dequantizeWeights(file.weights), null, rng(6)),
  ];
}

const SPEC: ClippedLossSpec = { level: 'token', tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.28, beta: 0.05 };

describe('BackendModel on cpuBackend equals the Transformer', () => {
  const all = models();

  it('has the same layout and initial parameters (LoRA init from the same seed)', async () => {
    for (const { name, ref, bm } of all) {
      expect(bm.layout, name).toEqual(ref.layout);
      within(`${name}: initial params`, relErr(await bm.getParams(), ref.params), 0);
    }
    // a fresh LoRA model (B = 0, A from Rng(seed)) equals the Transformer's init exactly
    const w = quantizeWeights(TINY, randomWeights(TINY, rng(9)), 'q8');
    const a = new Transformer(TINY, w, { trainable: 'lora', lora: { rank: 3, alpha: 3 }, seed: 99 });
    const b = new BackendModel(cpuBackend, TINY, w, { trainable: 'lora', lora: { rank: 3, alpha: 3 }, seed: 99 });
    expect(Array.from(await b.getParams())).toEqual(Array.from(a.params));
  });

  it('forward logits', async () => {
    for (const { name, cfg, ref, bm } of all) {
      const B = 3;
      const T = Math.min(cfg.maxSeq, 17);
      const tok = tokensOf(B * T, cfg.vocab, rng(10));
      const want = ref.forward(tok, B, T);
      const got = await cpuBackend.download('f32', bm.forward(tok, B, T));
      within(`${name}: logits [${B}×${T}×${cfg.vocab}]`, relErr(got, want), TOL);
    }
  });

  it('three whole training steps (forward, clipped-loss backward, AdamW) give the same parameters, gradients, moments and statistics', async () => {
    for (const { name, cfg, ref, bm } of all) {
      const V = cfg.vocab;
      const B = 2;
      const T = Math.min(cfg.maxSeq, 12);
      const N = B * T;
      const r = rng(20);
      const tok = tokensOf(N, V, r);
      const actions = tokensOf(N, V, r);
      const episodeOf = Int32Array.from({ length: N }, (_, i) => Math.floor(i / T));
      const adv = Float32Array.from({ length: B }, () => r.normal());
      const weight = Float32Array.from({ length: B }, () => 0.5 + r.uniform());
      const zRef = Float32Array.from(ref.forward(tok, B, T), (x) => x + 0.1 * r.normal());
      const hp = { lr: 3e-3, weightDecay: 0.01 };
      for (let step = 1; step <= 3; step++) {
        // reference
        ref.zeroGrad();
        const z = ref.forward(tok, B, T, { keep: true });
        const dz = new Float32Array(N * V);
        const st = clippedLossBackward(dz, null, z, zRef, actions, episodeOf, adv, weight, N, V, B, T, 1, SPEC, -1);
        ref.backward(dz);
        const refGrads = ref.grads.slice();
        ref.adamStep(hp.lr, hp.weightDecay);
        // backend
        const be = cpuBackend;
        bm.zeroGrad();
        const zt = bm.forward(tok, B, T, { keep: true });
        const dzt = be.zeros('f32', N * V);
        const stats = be.zeros('f32', 4);
        be.clippedLossBackward(dzt, stats, zt, be.upload('f32', zRef), be.upload('i32', actions), be.upload('i32', episodeOf), be.upload('f32', adv), be.upload('f32', weight), N, V, B, T, 1, SPEC, -1);
        bm.backward(dzt);
        const grads = await bm.getGrads();
        bm.adamStep(hp);
        const s = await be.download('f32', stats);
        within(`${name}: step ${step} loss stats`, relErr(s, [st.objective, st.surrogate, st.klMean, st.clipfrac]), TOL);
        within(`${name}: step ${step} gradients`, relErr(grads, refGrads), TOL);
        within(`${name}: step ${step} params after AdamW`, relErr(await bm.getParams(), ref.params), TOL);
      }
      const a = await bm.getState();
      const b = ref.getState();
      within(`${name}: optimizer state [t, m, v] after 3 steps`, relErr(a.optim, b.optim), TOL);
      expect(bm.t).toBe(3);
    }
  });

  it('getState / setState and copyParams round-trip, and forward({ params }) reads the copy', async () => {
    const { cfg, bm } = all[1]!;
    const tok = tokensOf(2 * 8, cfg.vocab, rng(30));
    const s0 = await bm.getState();
    const ref = bm.copyParams();
    const z0 = await cpuBackend.download('f32', bm.forward(tok, 2, 8));
    // move the parameters, then read the copy
    const moved = Float32Array.from(s0.params, (x, i) => x + 0.01 * Math.sin(i));
    bm.setParams(moved);
    expect(Array.from(await bm.getParams())).toEqual(Array.from(moved));
    const z1 = await cpuBackend.download('f32', bm.forward(tok, 2, 8));
    expect(relErr(z1, z0)).toBeGreaterThan(0);
    const zr = await cpuBackend.download('f32', bm.forward(tok, 2, 8, { params: ref }));
    expect(Array.from(zr)).toEqual(Array.from(z0));
    bm.setState(s0);
    const s1 = await bm.getState();
    expect(Array.from(s1.params)).toEqual(Array.from(s0.params));
    expect(Array.from(s1.optim)).toEqual(Array.from(s0.optim));
    expect(() => bm.setState({ params: new Float32Array(3) })).toThrow(/trainable parameters/);
    bm.disposeParams(ref);
  });

  it('generate: the same tokens, stops and log-probs as Transformer.generate for the same seed', async () => {
    let stops = 0;
    let lengths = 0;
    for (const { name, cfg, ref, bm } of all) {
      const r = rng(40);
      const V = cfg.vocab;
      // lengths 1, 3, 3, 6, 1, 9: several groups, members not contiguous
      const prompts = [1, 3, 3, 6, 1, 9].map((n) => tokensOf(n, V, r));
      // only the prompt that already fills maxSeq: nothing to generate
      const full = await bm.generate([prompts[5]!], { maxNew: 4, temperature: 1, topK: 0, seed: 1, stream: 1, stop: 2, maxSeq: 9 });
      expect(full.tokens.map((t) => t.length)).toEqual([0]);
      for (const o of [
        { maxNew: 8, temperature: 1, topK: 0, seed: 5, stream: 2, stop: 3 },
        { maxNew: 12, temperature: 0.7, topK: 5, seed: 77, stream: 9, stop: 1, seq0: 40 },
        { maxNew: 6, temperature: 0, topK: 0, seed: 1, stream: 1, stop: 2, maxSeq: 9 }, // the 9-token prompt fills maxSeq: it generates nothing
      ]) {
        const want = ref.generate(prompts, { ...o, returnLogits: true });
        const got = await bm.generate(prompts, { ...o, returnLogits: true });
        const plain = await bm.generate(prompts, o);
        expect(got.tokens.map((t) => Array.from(t)), name).toEqual(want.tokens.map((t) => Array.from(t)));
        expect(plain.tokens.map((t) => Array.from(t)), name).toEqual(want.tokens.map((t) => Array.from(t)));
        expect(got.stopped).toEqual(want.stopped);
        stops += want.stopped.filter((x) => x).length;
        lengths += want.tokens.filter((t) => t.length === o.maxNew).length;
        expect(plain.stopped).toEqual(want.stopped);
        within(`${name}: generate τ=${o.temperature} k=${o.topK} log-probs`, relErr(got.logp!.flatMap((x) => Array.from(x)), want.logp.flatMap((x) => Array.from(x))), TOL);
        within(`${name}: generate τ=${o.temperature} k=${o.topK} logit rows`, relErr(got.logits!.flatMap((x) => Array.from(x)), want.logits!.flatMap((x) => Array.from(x))), TOL);
        expect(Array.from(got.stopLogp!).map((x) => (Number.isNaN(x) ? null : x))).toEqual(Array.from(want.stopLogp).map((x) => (Number.isNaN(x) ? null : x)));
      }
    }
    // both ways of ending were exercised: the stop token, and the maxNew cap
    expect(stops).toBeGreaterThan(0);
    expect(lengths).toBeGreaterThan(0);
  });

  it('rejects what the Transformer rejects, with the same kind of message', () => {
    const w = randomWeights(TINY, rng(50));
    expect(() => new BackendModel(cpuBackend, TINY, quantizeWeights(TINY, w, 'q8'), { trainable: 'full' })).toThrow(/Full fine-tuning needs f32 weights/);
    expect(() => new BackendModel(cpuBackend, TINY, w, { trainable: 'lora' })).toThrow(/needs a LoRA config/);
    const bm = new BackendModel(cpuBackend, TINY, w, { trainable: 'full' });
    expect(() => bm.backward(cpuBackend.zeros('f32', 1))).toThrow(/keep: true/);
    expect(() => bm.forward(Int32Array.of(0, 99), 1, 2)).toThrow(/outside \[0, 16\)/);
  });
});

describe('BackendLmAgent on cpuBackend and LmAgent', () => {
  const loader = async (name: string): Promise<Uint8Array> => new Uint8Array(readFileSync(`public/models/${name}.safetensors`));
  const settings = (extra: Record<string, unknown>) =>
    parseConfig({ task: 'arithmetic', level: 3, agents: 2, protocol: 'chain', batch: 4, group: 4, evalEpisodes: 8, maxNew: 6, lr: 3e-4, delta: 1, geoIters: 10, epochs: 2, stages: 1, seed: 4, ...extra });

  /** The experiment with its team replaced by BackendLmAgents built exactly as experiment.ts lmAgent builds LmAgents. */
  async function backendExperiment(extra: Record<string, unknown>): Promise<LlmExperiment> {
    const exp = await createLlmExperiment(settings(extra), loader);
    const loaded = loadModel(await loader(exp.modelName));
    const plan = planLlm(exp.cfg);
    const team = plan.agents.map((init) => {
      const model =
        init.lora === 0
          ? new BackendModel(cpuBackend, loaded.cfg, dequantizeWeights(loaded.weights), { trainable: 'full' })
          : new BackendModel(cpuBackend, loaded.cfg, loaded.weights, { trainable: 'lora', lora: { rank: init.lora, alpha: init.loraAlpha }, seed: init.seed });
      return new BackendLmAgent(init.index, model, { name: init.name, temperature: init.temperature, topK: init.topK });
    });
    return { ...exp, team } as unknown as LlmExperiment;
  }

  it('rollouts, log-probs and KL equal LmAgent\'s exactly before any step', async () => {
    const extra = { lora: 4 };
    const a = await createLlmExperiment(settings(extra), loader);
    const b = await backendExperiment(extra);
    const ba = await a.env.rollout(a.team, 2, 4, new Rng(9));
    const bb = await b.env.rollout(b.team, 2, 4, new Rng(9));
    expect(JSON.stringify(bb.episodes)).toBe(JSON.stringify(ba.episodes));
    for (const agent of b.team) {
      await agent.setReference();
      const s = agentSteps(bb, agent.index);
      expect(Array.from(await agent.logProbs(s))).toEqual(Array.from(s.logp));
      expect(Array.from(await agent.klToReference(s)).every((k) => k === 0)).toBe(true);
      expect((await agent.info()).backend).toBe('cpu');
    }
  });

  for (const lora of [0, 4]) {
    it(`one SAT stage (arithmetic-S, ${lora === 0 ? 'full' : `LoRA r${lora} over Q8`}): the same metrics as a team of LmAgents within 1e-4`, async () => {
      // full fine-tuning needs a smaller step to stay inside δ (both agents' updates must be accepted)
      const extra = { lora, lr: lora === 0 ? 3e-5 : 3e-4 };
      const a = await createLlmExperiment(settings(extra), loader);
      const b = await backendExperiment(extra);
      const theta0 = a.team.map((ag) => ag.model.params.slice());
      const [ra] = await runStages(a, 1);
      const [rb] = await runStages(b, 1);
      const ma = ra!.metrics as Record<string, unknown>;
      const mb = rb!.metrics as Record<string, unknown>;
      for (const j of [0, 1]) {
        expect(ma[`agent/${j}/accepted`], `agent ${j} accepted`).toBe(1);
        expect(ma[`agent/${j}/kl_mean`] as number, `agent ${j} moved`).toBeGreaterThan(0);
      }
      const keys = Object.keys(ma).filter((k) => !k.startsWith('perf/'));
      expect(Object.keys(mb).filter((k) => !k.startsWith('perf/')).sort()).toEqual([...keys].sort());
      const flat = (x: unknown): number[] => (typeof x === 'number' ? [x] : Array.isArray(x) ? x.flatMap(flat) : x && typeof x === 'object' ? Object.values(x).flatMap(flat) : []);
      let worst = 0;
      let worstKey = '';
      for (const k of keys) {
        const va = flat(ma[k]);
        const vb = flat(mb[k]);
        expect(vb.length, k).toBe(va.length);
        va.forEach((x, i) => {
          const y = vb[i]!;
          if (Number.isNaN(x) && Number.isNaN(y)) return;
          const d = Math.abs(x - y) / Math.max(Math.abs(x), 1e-3);
          if (!(d <= worst)) [worst, worstKey] = [d, k];
        });
      }
      within(`SAT stage metrics (${keys.length} keys), ${lora === 0 ? 'full' : 'LoRA'}; worst ${worstKey}`, worst, 1e-4);
      // The agents' parameters after the stage, as max |θ_backend − θ_LmAgent| / max |θ_LmAgent − θ_0|:
      // relative to how far the stage moved them (Adam's g/√v turns f32 noise in a near-zero
      // gradient into a step of up to ~lr, so a per-entry relative error would overstate it).
      for (let j = 0; j < a.team.length; j++) {
        const pa = a.team[j]!.model.params;
        const pb = await (b.team[j] as unknown as BackendLmAgent).model.getParams();
        let diff = 0;
        let moved = 0;
        for (let i = 0; i < pa.length; i++) {
          diff = Math.max(diff, Math.abs(pb[i]! - pa[i]!));
          moved = Math.max(moved, Math.abs(pa[i]! - theta0[j]![i]!));
        }
        expect(moved).toBeGreaterThan(0);
        within(`agent ${j} params after the stage / stage's move, ${lora === 0 ? 'full' : 'LoRA'}`, diff / moved, 1e-3);
      }
    });
  }
});
