/**
 * SwiGLU MLP (Shazeer 2020, as in Llama), CPU reference:
 *   a = x W1ᵀ,  b = x W3ᵀ,  h = silu(a) ⊙ b,  out = h W2ᵀ,   silu(a) = a·σ(a)
 * Elementwise backward: silu'(a) = σ(a)·(1 + a·(1 − σ(a))),
 *   da += dh · b · silu'(a),   db += dh · silu(a)
 * The composite mlpForward/mlpBackward chain matmul.ts and the elementwise pair.
 *
 * Shapes: B batch, T time, N = B·T, C channels, H hidden width.
 *   inp / out / dinp / dout [N × C],  a, b, h (saved) and dh, da, db (scratch) [N × H]
 *   w1, w3 / dw1, dw3 [H × C],  w2 / dw2 [C × H]
 *
 * Not here: LoRA adapters on the projections (src/model composes them with matmul and residual).
 */
import type { FloatArray } from '../types';
import { checkSwigluBackward, checkSwigluForward, need, sizes } from '../check';
import { matmulBackward, matmulForward } from './matmul';

/** out[i] = silu(a[i]) · b[i] over N elements. Overwrites `out`. */
export function swigluForward(out: FloatArray, a: FloatArray, b: FloatArray, N: number): void {
  checkSwigluForward(out, a, b, N);
  for (let i = 0; i < N; i++) {
    const x = a[i]!;
    out[i] = (x / (1 + Math.exp(-x))) * b[i]!;
  }
}

/** da += dout·b·silu'(a), db += dout·silu(a) (header). Accumulates. */
export function swigluBackward(da: FloatArray, db: FloatArray, dout: FloatArray, a: FloatArray, b: FloatArray, N: number): void {
  checkSwigluBackward(da, db, dout, a, b, N);
  for (let i = 0; i < N; i++) {
    const x = a[i]!;
    const sg = 1 / (1 + Math.exp(-x));
    const g = dout[i]!;
    da[i]! += g * b[i]! * sg * (1 + x * (1 - sg));
    db[i]! += g * x * sg;
  }
}

/** out = (silu(x W1ᵀ) ⊙ x W3ᵀ) W2ᵀ; saves a, b, h. Overwrites out, a, b, h. */
export function mlpForward(
  out: FloatArray,
  a: FloatArray,
  b: FloatArray,
  h: FloatArray,
  inp: FloatArray,
  w1: FloatArray,
  w3: FloatArray,
  w2: FloatArray,
  B: number,
  T: number,
  C: number,
  H: number,
): void {
  sizes('mlpForward', { B, T, C, H });
  matmulForward(a, inp, w1, B, T, C, H);
  matmulForward(b, inp, w3, B, T, C, H);
  swigluForward(h, a, b, B * T * H);
  matmulForward(out, h, w2, B, T, H, C);
}

/**
 * Backward of mlpForward. Accumulates into dinp and the weight gradients (pass null for frozen
 * weights); dh, da, db [N × H] are scratch and are overwritten.
 */
export function mlpBackward(
  dinp: FloatArray,
  dw1: FloatArray | null,
  dw3: FloatArray | null,
  dw2: FloatArray | null,
  dh: FloatArray,
  da: FloatArray,
  db: FloatArray,
  dout: FloatArray,
  inp: FloatArray,
  a: FloatArray,
  b: FloatArray,
  h: FloatArray,
  w1: FloatArray,
  w3: FloatArray,
  w2: FloatArray,
  B: number,
  T: number,
  C: number,
  H: number,
): void {
  sizes('mlpBackward', { B, T, C, H });
  const NH = B * T * H;
  need('mlpBackward', 'dh', dh, NH);
  need('mlpBackward', 'da', da, NH);
  need('mlpBackward', 'db', db, NH);
  dh.fill(0, 0, NH);
  da.fill(0, 0, NH);
  db.fill(0, 0, NH);
  matmulBackward(dh, dw2, dout, h, w2, B, T, H, C);
  swigluBackward(da, db, dh, a, b, NH);
  matmulBackward(dinp, dw1, da, inp, w1, B, T, C, H);
  matmulBackward(dinp, dw3, db, inp, w3, B, T, C, H);
}
