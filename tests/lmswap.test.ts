/**
 * Plug-and-play for language agents (src/sat/lmSwap.ts) on tiny random models built in the test:
 * with Stage-0 every projected token state is within δ0 of π_cur and distillation brings the
 * seated model close to the projection; without Stage-0 the new model takes the seat unchanged.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { makeCard } from '../src/model/card';
import { modelConfig } from '../src/model/config';
import { vocabSize } from '../src/model/tokenizer';
import { Transformer } from '../src/model/transformer';
import { initWeights, loadModel, saveModel } from '../src/model/weights';
import { parseConfig } from '../src/sat/config';
import { createLlmExperiment } from '../src/sat/experiment';
import { swapLmAgent } from '../src/sat/lmSwap';

function modelBytes(d: number, seed: number, name: string) {
  const cfg = modelConfig({ vocab: vocabSize, d, layers: 1, heads: 2, hidden: 2 * d, maxSeq: 64 });
  // Larger embeddings (std 0.1) so the two random models disagree clearly.
  const w = initWeights(cfg, new Rng(seed));
  const emb = w.get('tok_emb');
  if (emb && emb.dtype === 'f32') for (let i = 0; i < emb.data.length; i++) emb.data[i]! *= 5;
  return saveModel(cfg, w, makeCard(cfg, { name, task: 'arithmetic level 1', dataSeed: seed, heldOutAccuracy: 0, pretrainSeconds: 0, quant: 'f32' }));
}

const small = modelBytes(32, 1, 'arithmetic-S');
const big = loadModel(modelBytes(64, 2, 'arithmetic-M'));

async function team() {
  return createLlmExperiment(parseConfig({ task: 'arithmetic', level: 1, agents: 2, protocol: 'chain', batch: 2, group: 4, evalEpisodes: 8, maxNew: 4 }), async () => small);
}
const opts = { delta0: 0.01, distillSteps: 60, distillLr: 3e-3, B: 2, G: 4, seed: 3 };

describe('language plug-and-play', () => {
  it('Stage-0 projects every state into KL ≤ δ0 of π_cur, and distillation moves the new model towards the projection', async () => {
    const exp = await team();
    const r = await swapLmAgent(exp, 1, 'arithmetic-M', big, { ...opts, stage0: true });
    expect(r.states).toBeGreaterThan(0);
    expect(r.klPre.q99).toBeGreaterThan(0.01); // the raw new model is outside the ball…
    expect(r.klProjected.q99).toBeLessThanOrEqual(0.01 + 1e-6); // …its projection is inside
    expect(r.lambdas.some((l) => l > 0)).toBe(true);
    expect(r.klSeated.q50).toBeLessThan(r.klPre.q50); // the distilled seat is closer to π_cur than π_pre
    expect(exp.team[1]!.model.cfg.d).toBe(64); // the larger model holds the seat
    console.log(`[swap] KL to π_cur q50/q99: pre ${r.klPre.q50.toExponential(2)}/${r.klPre.q99.toExponential(2)}, projected ${r.klProjected.q50.toExponential(2)}/${r.klProjected.q99.toExponential(2)}, seated ${r.klSeated.q50.toExponential(2)}/${r.klSeated.q99.toExponential(2)}; KL(π_new‖π_θ) ${r.distillKl.toExponential(2)}`);
  });

  it('without Stage-0 the new model takes the seat unchanged', async () => {
    const exp = await team();
    const r = await swapLmAgent(exp, 1, 'arithmetic-M', big, { ...opts, stage0: false });
    expect(r.lambdas.every((l) => l === 0)).toBe(true);
    expect(r.klSeated).toEqual(r.klPre);
    const direct = new Transformer(big.cfg, big.weights, { trainable: 'none' });
    const toks = Int32Array.from([1, 20, 30, 4]);
    expect(Array.from(exp.team[1]!.model.forward(toks, 1, 4))).toEqual(Array.from(direct.forward(toks, 1, 4)));
  });
});
