/**
 * A Hugging Face Llama checkpoint loaded by src/model/hfLoad.ts (a tiny random one from
 * tests/helpers/hfCheckpoint.ts: grouped-query attention, untied head, BF16, quantized Q8 on load)
 * runs and trains LoRA adapters on WebGPU as on the CPU backend: forward logits, the next-token
 * loss and every LoRA gradient of one backward, and greedy generation, against the same Model on
 * cpuBackend. Tolerance 1e-3 of the largest value, as tests/webgpu/model.test.ts argues (GPU
 * kernels accumulate in f32, the CPU in f64, ~20 chained ops). On SwiftShader when the machine has
 * no GPU; without any adapter the file fails with the reason (or skips with SAT_ALLOW_NO_GPU=1).
 *
 * Not here: the loader's own checks (tests/hf.test.ts), the kernels (the other files here).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cpuBackend } from '../../src/backend/cpu/index';
import type { Backend, TensorKinds } from '../../src/backend/types';
import { webgpuBackend } from '../../src/backend/webgpu/index';
import { Rng } from '../../src/core/rng';
import { loadHfCheckpoint, type HfModel } from '../../src/model/hfLoad';
import { nextTokenLoss } from '../../src/model/loss';
import { Model } from '../../src/model/model';
import { hfCheckpoint } from '../helpers/hfCheckpoint';
import { gpu, printTable, record, runSeed } from './gpu';

const ctx = typeof gpu === 'string' ? null : gpu;
const seed = runSeed('hf.test.ts');
afterAll(() => printTable('A loaded HF checkpoint on WebGPU vs on the CPU backend'));
const TOL = 1e-3;

const maxAbs = (a: ArrayLike<number>): number => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]!));
  return m;
};

async function pass<X extends TensorKinds>(be: Backend<X>, m: HfModel, tokens: Int32Array, B: number, T: number) {
  const model = new Model(be, m.cfg, m.weights, { trainable: 'lora', lora: { rank: 4, alpha: 8 }, seed: 3 });
  // B = 0 at init would make every A gradient 0: move the adapters off it first (the same values on both).
  const r = new Rng(seed, [7]);
  model.setParams(Float32Array.from(await model.getParams(), (x) => x + 0.05 * r.normal()));
  const logits = await be.download('f32', model.forward(tokens, B, T));
  model.zeroGrad();
  const { lossSum } = await nextTokenLoss(model, { tokens, B, T }, { backward: true });
  const grads = await model.getGrads();
  const gen = await model.generate([tokens.subarray(0, 5), tokens.subarray(T, T + 3)], { maxNew: 6, temperature: 0, topK: 0, seed: 1, stream: 0, stop: m.tokenizer.eos });
  model.dispose();
  return { logits: logits.slice(0, B * T * m.cfg.vocab), lossSum, grads, gen };
}

describe.skipIf(ctx === null)('a loaded HF checkpoint on WebGPU', () => {
  it('GQA 4/2, untied, BF16 → Q8: logits, loss and LoRA gradients within 1e-3 of the CPU; greedy generation identical', async () => {
    const m = await loadHfCheckpoint(hfCheckpoint({ kvHeads: 2, tied: false, dtype: 'BF16' }).files, { quant: 'q8' });
    const B = 2;
    const T = 12;
    const r = new Rng(seed, [1]);
    const tokens = Int32Array.from({ length: B * T }, () => 1 + r.int(m.cfg.vocab - 1));
    const c = await pass(cpuBackend, m, tokens, B, T);
    const g = await pass(webgpuBackend(ctx!), m, tokens, B, T);
    const shape = `B${B} T${T} V${m.cfg.vocab}`;
    expect(record('HF Q8: logits', shape, g.logits, c.logits, 1e-2 * maxAbs(c.logits), TOL)).toBeLessThanOrEqual(TOL);
    expect(record('HF Q8: next-token loss sum', shape, [g.lossSum], [c.lossSum], 1e-2 * Math.abs(c.lossSum), TOL)).toBeLessThanOrEqual(TOL);
    expect(maxAbs(c.grads)).toBeGreaterThan(0);
    expect(record('HF Q8: LoRA gradients', `n${c.grads.length}`, g.grads, c.grads, 1e-2 * maxAbs(c.grads), TOL)).toBeLessThanOrEqual(TOL);
    expect(g.gen.tokens.map((t) => [...t])).toEqual(c.gen.tokens.map((t) => [...t]));
  });
});
