/**
 * The token inspector on WebGPU, in Node (Dawn on this machine's adapter, SwiftShader here): an
 * agent worker asked for `backend: 'webgpu'` keeps π_cur's logits from the GPU and re-runs π_new
 * on the GPU, and its inspection equals an independent recomputation from the CPU model's forward
 * pass at the GPU agent's own parameters before and after the update (tests/helpers/inspectRef.ts),
 * within f32 tolerances, for both objectives. Model: public/models/arithmetic-S (LoRA r4 over its
 * Q8 base); the batch is two hand-written arithmetic messages with advantages of both signs.
 *
 * Without an adapter the suite skips, printing the reason (tests/webgpu/gpu.ts).
 *
 * Not here: the CPU inspection against the same recomputation, to 1e-9 (tests/inspect.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tokenizer } from '../../src/model/tokenizer';
import { loadModel } from '../../src/model/weights';
import type { LmSteps } from '../../src/sat/agents/lm';
import { lmAgent } from '../../src/sat/llmExperiment';
import type { TokenInspection } from '../../src/sat/inspect';
import type { AgentBatch } from '../../src/sat/types';
import type { UpdateSettings } from '../../src/sat/update';
import { AgentApi, type LmSpec } from '../../src/workers/agentApi';
import { clippedByTheBook, logPolicyRows, referenceNumbers } from '../helpers/inspectRef';
import { gpu } from './gpu';

const bytes = new Uint8Array(readFileSync(join(import.meta.dirname, '../../public/models/arithmetic-S.safetensors')));
const TAU = 1;
const spec: LmSpec = {
  kind: 'lm', index: 0, name: 'arithmetic-S#0', modelFile: 'arithmetic-S', modelName: 'arithmetic-S', model: bytes, backend: 'webgpu',
  lora: 4, loraAlpha: 16, seed: 7, temperature: TAU, topK: 0,
};

/** Two episodes of one message each ("12+7=" answered "19", "3+4=" answered "72"), every message token a step. */
function batch(): AgentBatch {
  const texts = [['<bos>12+7=<a0>', '19<eos>'], ['<bos>3+4=<a0>', '72<eos>']];
  const seqs = texts.map(([c, m]) => Int32Array.from(tokenizer.encode(c! + m!)));
  const starts = texts.map(([c]) => tokenizer.encode(c!).length);
  const stepSeq: number[] = [];
  const stepPos: number[] = [];
  seqs.forEach((q, i) => {
    for (let pos = starts[i]!; pos < q.length; pos++) (stepSeq.push(i), stepPos.push(pos));
  });
  const context: LmSteps = { seqs, stepSeq: Int32Array.from(stepSeq), stepPos: Int32Array.from(stepPos) };
  return {
    nEpisodes: 2, obs: Int32Array.from(stepSeq, (_, k) => k), actions: Int32Array.from(stepSeq, (s, k) => seqs[s]![stepPos[k]!]!),
    episodeOf: Int32Array.from(stepSeq), context, adv: Float64Array.of(1.5, -1), weight: Float64Array.of(1, 0.8), horizon: 4,
  };
}

function settings(objective: 'sequence' | 'token'): UpdateSettings {
  return {
    objective, tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.2, lr: 0.001, weightDecay: 0, epochs: 2, alpha: 0.05,
    maxBacktracks: 0, retryLrFactor: 1, onExhausted: 'keep', betaAdapt: false, geoIters: 0,
  };
}

describe.skipIf(typeof gpu === 'string')('token inspector on WebGPU', () => {
  for (const objective of ['sequence', 'token'] as const) {
    it(`${objective}: the GPU worker's inspection equals the recomputation at its own parameters`, async () => {
      const api = new AgentApi();
      await api.init({ ...spec, model: bytes.slice() });
      expect((await api.info()).backend).toMatch(/^webgpu/);
      const b = batch();
      const before = (await api.snapshot()).params;
      await api.update({ batch: b, rawAdv: b.adv, delta: 10, beta: 0, settings: settings(objective) });
      const after = (await api.snapshot()).params;
      const ans = await api.inspect();
      if (!ans.ok) throw new Error(ans.reason);
      const ins: TokenInspection = ans.inspection;
      const twin = lmAgent(spec, loadModel(bytes)).model;
      const ref = referenceNumbers(b, logPolicyRows(twin, before, b, TAU), logPolicyRows(twin, after, b, TAU));
      let worst = 0;
      let moved = 0;
      for (const ep of ins.episodes) {
        for (const t of ep.messages.flatMap((m) => m.tokens)) {
          const want = ref.tokens[t.k]!;
          worst = Math.max(worst, Math.abs(t.logpNew - want.logpNew), Math.abs(t.logpCur - want.logpCur), Math.abs(t.kl - want.kl));
          moved = Math.max(moved, Math.abs(want.logpNew - want.logpCur));
          const r = objective === 'sequence' ? Math.exp(ref.u[ep.e]!) : want.ratio;
          // The clip decision, wherever the ratio is not within rounding of a band edge.
          if (Math.abs(r - 1.2) > 1e-4 && Math.abs(r - 0.8) > 1e-4) expect(t.clipped).toBe(clippedByTheBook(r, ep.adv, 0.2, 0.2));
        }
      }
      console.log(`inspect on WebGPU (${objective}): ${ins.nTokens} tokens, largest |log p| / KL gap to the CPU recomputation ${worst.toExponential(2)}, largest |log r| ${moved.toExponential(2)}`);
      expect(ins.nTokens).toBe(b.obs.length);
      expect(moved).toBeGreaterThan(1e-3); // the update moved the tokens, so the comparison means something
      expect(worst).toBeLessThan(1e-4);
    }, 180_000);
  }
});
