/**
 * The worker of `npm run bench:browser` (bench/browserDecode.ts): in Chromium, one CPU-backend
 * model of SmolLM-135M's shape with random weights (f32, or Q8 / Q4 with int8 activations), on the
 * kernel build it is told to load (relaxed SIMD or the shared build) and two threads; it answers
 * each { prompts, tokens } with the milliseconds one greedy `generate` took.
 */
import { cpuThreadsReady, setCpuThreads } from '../src/backend/cpu/threads';
import { cpuBackend } from '../src/backend/cpu';
import { preferRelaxedSimd, simdBuild } from '../src/backend/cpu/simdMemory';
import { Rng } from '../src/core/rng';
import { modelConfig } from '../src/model/config';
import { Model } from '../src/model/model';
import { initWeights, quantizeWeights } from '../src/model/weights';

export interface Setup {
  readonly relaxed: boolean;
  readonly storage: 'f32' | 'q8' | 'q4';
  readonly threads: number;
}
export interface Job {
  readonly prompts: number;
  readonly tokens: number;
}

let model: Model | null = null;

self.onmessage = async (e: MessageEvent<Setup | Job>) => {
  try {
    if ('storage' in e.data) {
      const { relaxed, storage, threads } = e.data;
      preferRelaxedSimd(relaxed);
      setCpuThreads(threads);
      const cfg = modelConfig({ vocab: 49152, d: 576, layers: 30, heads: 9, hidden: 1536, maxSeq: 128, tied: true }, { quantized: storage !== 'f32' });
      const w = initWeights(cfg, new Rng(7, [0x135]));
      const weights = storage === 'f32' ? w : quantizeWeights(cfg, w, storage);
      model = new Model(cpuBackend, cfg, weights, { trainable: 'none', ...(storage === 'f32' ? {} : { activations: 'int8' as const }) });
      const ready = await cpuThreadsReady(threads, 30_000);
      self.postMessage({ build: simdBuild(), ready });
      return;
    }
    const { prompts, tokens } = e.data;
    const ids = Array.from({ length: prompts }, (_, s) => Int32Array.from({ length: 16 }, (_, i) => (i * 7919 + s * 104729) % 49152));
    const t0 = performance.now();
    await model!.generate(ids, { maxNew: tokens, temperature: 0, topK: 0, seed: 1, stream: 0, stop: -1 });
    self.postMessage({ ms: performance.now() - t0 });
  } catch (err) {
    self.postMessage({ error: err instanceof Error ? `${err.message}\n${err.stack}` : String(err) });
  }
};
