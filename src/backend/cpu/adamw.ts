/**
 * AdamW optimizer step (Kingma & Ba 2015 with the decoupled weight decay of Loshchilov & Hutter
 * 2019; llm.c `gpt2_update`), CPU reference, for step t = 1, 2, …:
 *   m ← β1 m + (1−β1) g,   v ← β2 v + (1−β2) g²,   m̂ = m/(1−β1ᵗ),   v̂ = v/(1−β2ᵗ)
 *   θ ← θ − lr · ( m̂ / (√v̂ + eps) + λ θ )
 * Defaults β1 0.9, β2 0.999, eps 1e-8, λ 0. It DESCENDS `grads` (a loss gradient); to ascend an
 * objective, pass its negated gradient (e.g. clippedLossBackward with scale −1).
 *
 * Shapes: n parameters; params, grads, m, v [n] (m, v start at 0 and persist across steps).
 *
 * Not here: gradient clipping, learning-rate schedules, zeroing the gradients (the caller's).
 */
import type { AdamWParams, FloatArray } from '../types';
import { checkAdamw } from '../check';

/** One AdamW step over n parameters in place (header). `t` counts steps from 1. */
export function adamwStep(params: FloatArray, grads: FloatArray, m: FloatArray, v: FloatArray, n: number, t: number, hp: AdamWParams): void {
  checkAdamw(params, grads, m, v, n, t);
  const { lr } = hp;
  const b1 = hp.beta1 ?? 0.9;
  const b2 = hp.beta2 ?? 0.999;
  const eps = hp.eps ?? 1e-8;
  const wd = hp.weightDecay ?? 0;
  const bc1 = 1 - Math.pow(b1, t);
  const bc2 = 1 - Math.pow(b2, t);
  for (let i = 0; i < n; i++) {
    const g = grads[i]!;
    const mi = b1 * m[i]! + (1 - b1) * g;
    const vi = b2 * v[i]! + (1 - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const mHat = mi / bc1;
    const vHat = vi / bc2;
    const p = params[i]!;
    params[i] = p - lr * (mHat / (Math.sqrt(vHat) + eps) + wd * p);
  }
}
