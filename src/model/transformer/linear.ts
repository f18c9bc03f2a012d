/**
 * One projection of the transformer, y = x·Wᵀ (+ LoRA), over a base matrix that is f32 (trainable
 * or frozen) or frozen Q8 / Q4 — the building block the Transformer class chains.
 *
 *   base:  y = x·Wᵀ                                   (matmulForward / matmulForwardQ8 / Q4)
 *   LoRA:  u = x·Aᵀ,  z = u·Bᵀ,  y += s·z,  s = alpha/r   (Hu et al. 2021; never merged, so a
 *          quantized base stays quantized)
 * Backward, with dz = s·dy:
 *   dx += dy·W          (matmulBackward, or matmulBackwardInputQ8/Q4 for a quantized base)
 *   dW += dyᵀ·x         (only when the base is trainable, i.e. 'full' mode)
 *   dB += dzᵀ·u,   du = dz·B,   dA += duᵀ·x,   dx += du·A
 *
 * Shapes: N rows (B·T), C = in, OC = out, r LoRA rank.
 *   x / dx [N × C],  y / dy [N × OC],  W [OC × C],  A [r × C],  B [OC × r],  u / du [N × r]
 *
 * Not here: which projections exist (transformer.ts), buffers (they are passed in), optimizers.
 */
import {
  matmulBackward,
  matmulBackwardInputQ4,
  matmulBackwardInputQ8,
  matmulForward,
  matmulForwardQ4,
  matmulForwardQ8,
  residualForward,
} from '../../backend/cpu';
import type { FloatArray } from '../../backend/types';

/** A base matrix [OC × C] as the kernels take it. */
export type Mat =
  | { readonly kind: 'f32'; readonly w: FloatArray }
  | { readonly kind: 'q8'; readonly q: Int8Array; readonly scales: Uint16Array }
  | { readonly kind: 'q4'; readonly q: Uint8Array; readonly scales: Uint16Array };

/** A LoRA adapter on one projection: views into the flat parameter / gradient arrays. */
export interface LoraSlot {
  /** A [r × C]. */
  readonly a: FloatArray;
  /** B [OC × r]. */
  readonly b: FloatArray;
  readonly da: FloatArray;
  readonly db: FloatArray;
  readonly rank: number;
  /** alpha / rank. */
  readonly scale: number;
}

/** One projection: its base, the base's gradient view ('full' mode) and its adapter ('lora'). */
export interface Linear {
  /** Weight name, e.g. "layers.0.wq". */
  readonly name: string;
  /** C: input width. */
  readonly in: number;
  /** OC: output width. */
  readonly out: number;
  readonly base: Mat;
  /** ∂L/∂W view when the base trains, else null. */
  readonly dw: FloatArray | null;
  readonly lora: LoraSlot | null;
}

/** out = inp · Wᵀ for any base kind (B·T folded into N rows). Overwrites `out`. */
export function matForward(out: FloatArray, inp: FloatArray, m: Mat, N: number, C: number, OC: number): void {
  switch (m.kind) {
    case 'f32':
      return matmulForward(out, inp, m.w, 1, N, C, OC);
    case 'q8':
      return matmulForwardQ8(out, inp, m.q, m.scales, 1, N, C, OC);
    case 'q4':
      return matmulForwardQ4(out, inp, m.q, m.scales, 1, N, C, OC);
  }
}

/** dinp += dout · W for any base kind. Accumulates. */
export function matBackwardInput(dinp: FloatArray, dout: FloatArray, m: Mat, N: number, C: number, OC: number): void {
  switch (m.kind) {
    case 'f32':
      // inp is not read when dweight is null; dinp stands in for it.
      return matmulBackward(dinp, null, dout, dinp, m.w, 1, N, C, OC);
    case 'q8':
      return matmulBackwardInputQ8(dinp, dout, m.q, m.scales, 1, N, C, OC);
    case 'q4':
      return matmulBackwardInputQ4(dinp, dout, m.q, m.scales, 1, N, C, OC);
  }
}

/**
 * y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ (header). Overwrites `y`; with an adapter also `u` [N × r] (saved for
 * backward) and `tmp` [N × OC] (scratch).
 */
export function linearForward(lin: Linear, y: FloatArray, x: FloatArray, u: FloatArray | null, tmp: FloatArray, N: number): void {
  matForward(y, x, lin.base, N, lin.in, lin.out);
  const a = lin.lora;
  if (a === null || u === null) return;
  matmulForward(u, x, a.a, 1, N, lin.in, a.rank);
  matmulForward(tmp, u, a.b, 1, N, a.rank, lin.out);
  residualForward(y, y, tmp, N * lin.out, a.scale);
}

/**
 * Backward of linearForward (header): dx += ∂L/∂x, and accumulates dW (full) or dA, dB (LoRA).
 * `x` and `u` are the forward's input and saved u; `dsc` [N × OC] and `du` [N × r] are scratch.
 */
export function linearBackward(
  lin: Linear,
  dx: FloatArray,
  dy: FloatArray,
  x: FloatArray,
  u: FloatArray | null,
  dsc: FloatArray,
  du: FloatArray,
  N: number,
): void {
  const { in: C, out: OC } = lin;
  if (lin.dw !== null && lin.base.kind === 'f32') matmulBackward(dx, lin.dw, dy, x, lin.base.w, 1, N, C, OC);
  else matBackwardInput(dx, dy, lin.base, N, C, OC);
  const a = lin.lora;
  if (a === null || u === null) return;
  const n = N * OC;
  for (let i = 0; i < n; i++) dsc[i] = a.scale * dy[i]!;
  du.fill(0, 0, N * a.rank);
  matmulBackward(du, a.db, dsc, u, a.b, 1, N, a.rank, OC);
  matmulBackward(dx, a.da, du, x, a.a, 1, N, C, a.rank);
}
