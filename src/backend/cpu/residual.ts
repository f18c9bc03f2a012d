/**
 * Residual (scaled) add, CPU reference (llm.c `residual_forward/backward`):
 *   out = a + s·b,   da += dout,   db += s·dout        (s = 1 for a plain residual)
 * The scale lets LoRA add its low-rank branch as out = base + (α/r)·lora.
 *
 * Shapes: N elements (usually B·T·C).
 *
 * Not here: broadcasting.
 */
import type { FloatArray } from '../types';
import { checkResidualBackward, checkResidualForward } from '../check';

/** out = a + scale·b. Overwrites `out` (which may alias `a` or `b`). */
export function residualForward(out: FloatArray, a: FloatArray, b: FloatArray, N: number, scale = 1): void {
  checkResidualForward(out, a, b, N);
  for (let i = 0; i < N; i++) out[i] = a[i]! + scale * b[i]!;
}

/** da += dout, db += scale·dout (null skips one). Accumulates. */
export function residualBackward(da: FloatArray | null, db: FloatArray | null, dout: FloatArray, N: number, scale = 1): void {
  checkResidualBackward(da, db, dout, N);
  if (da !== null) {
    for (let i = 0; i < N; i++) da[i]! += dout[i]!;
  }
  if (db !== null) {
    for (let i = 0; i < N; i++) db[i]! += scale * dout[i]!;
  }
}
