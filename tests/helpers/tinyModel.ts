/**
 * A tiny random language model as a model file (safetensors bytes), for tests that need a whole
 * language agent or team without a shipped model: 1 layer, d = 32, the 64-token vocabulary,
 * labelled "arithmetic-S" so a language experiment's loader can serve it under that name.
 * (tests/lm.test.ts, workers.test.ts and pretrain.test.ts build the same model inline.)
 *
 * Not here: the shipped models (public/models) or weights tuned for a kernel test (randomWeights.ts).
 */
import { Rng } from '../../src/core/rng';
import { makeCard } from '../../src/model/card';
import { modelConfig } from '../../src/model/config';
import { vocabSize } from '../../src/model/tokenizer';
import { initWeights, saveModel } from '../../src/model/weights';

export const tinyCfg = modelConfig({ vocab: vocabSize, d: 32, layers: 1, heads: 2, hidden: 64, maxSeq: 64 });

/** The model file of a tiny model with weights from `seed`. */
export function tinyModelBytes(seed: number): Uint8Array {
  return saveModel(
    tinyCfg,
    initWeights(tinyCfg, new Rng(seed)),
    makeCard(tinyCfg, { name: 'arithmetic-S', task: 'arithmetic level 1', dataSeed: seed, heldOutAccuracy: 0, pretrainSeconds: 0, quant: 'f32' }),
  );
}
