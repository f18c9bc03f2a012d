/**
 * Test weights for the model tests (model, webgpu/model): `initWeights`, then
 * made less tame — tok_emb scaled ×25 (so logits are O(1), not O(0.01)) and norm gains
 * 1 + 0.2·N(0,1) (so their gradients are not a special case). Values stay f32-exact.
 *
 * Not here: the initialisation itself (src/model/weights.ts initWeights).
 */
import type { Rng } from '../../src/core/rng';
import type { ModelConfig } from '../../src/model/config';
import { initWeights, type ModelWeights } from '../../src/model/weights';

export function randomWeights(cfg: ModelConfig, r: Rng): ModelWeights {
  const w = initWeights(cfg, r.fork(0));
  const g = r.fork(1);
  for (const [name, t] of w) {
    if (t.dtype !== 'f32') continue;
    if (name === 'tok_emb') for (let i = 0; i < t.data.length; i++) t.data[i] = t.data[i]! * 25;
    if (t.shape.length === 1) for (let i = 0; i < t.data.length; i++) t.data[i] = 1 + 0.2 * g.normal();
  }
  return w;
}
