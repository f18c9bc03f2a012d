/**
 * RMSNorm (Zhang & Sennrich 2019), CPU reference:
 *   rstd = 1 / √( (1/C) Σ_c x_c² + eps ),   y_c = w_c · x_c · rstd      (eps = 1e-5 by default)
 * Backward, with g_c = dy_c · w_c:
 *   dx_c += rstd · ( g_c − x_c · rstd² · (1/C) Σ_i g_i x_i ),   dw_c += Σ_rows dy_c · x_c · rstd
 *
 * Shapes: B batch, T time, C channels.
 *   inp / out / dout / dinp [B × T × C],  weight / dweight [C],  rstd [B·T] (saved for backward)
 *
 * Not here: LayerNorm's mean subtraction and bias (Llama has neither).
 */
import type { FloatArray } from '../types';
import { checkRmsnormBackward, checkRmsnormForward } from '../check';

/** y = w ⊙ x · rstd per row; saves rstd. Overwrites `out` and `rstd`. */
export function rmsnormForward(
  out: FloatArray,
  rstd: FloatArray,
  inp: FloatArray,
  weight: FloatArray,
  B: number,
  T: number,
  C: number,
  eps = 1e-5,
): void {
  checkRmsnormForward(out, rstd, inp, weight, B, T, C);
  const N = B * T;
  for (let n = 0; n < N; n++) {
    const row = n * C;
    let ss = 0;
    for (let c = 0; c < C; c++) {
      const x = inp[row + c]!;
      ss += x * x;
    }
    const r = 1 / Math.sqrt(ss / C + eps);
    rstd[n] = r;
    const rr = rstd[n]!; // the stored (possibly f32-rounded) value, so backward sees the same number
    for (let c = 0; c < C; c++) out[row + c] = weight[c]! * (inp[row + c]! * rr);
  }
}

/** ∂/∂inp and ∂/∂weight (formulas in the header). Accumulates into `dinp` and `dweight`. */
export function rmsnormBackward(
  dinp: FloatArray,
  dweight: FloatArray,
  dout: FloatArray,
  inp: FloatArray,
  weight: FloatArray,
  rstd: FloatArray,
  B: number,
  T: number,
  C: number,
): void {
  checkRmsnormBackward(dinp, dweight, dout, inp, weight, rstd, B, T, C);
  const N = B * T;
  for (let n = 0; n < N; n++) {
    const row = n * C;
    const r = rstd[n]!;
    let gx = 0; // Σ_i dy_i w_i x_i
    for (let c = 0; c < C; c++) gx += dout[row + c]! * weight[c]! * inp[row + c]!;
    const k = (r * r * gx) / C;
    for (let c = 0; c < C; c++) {
      const x = inp[row + c]!;
      const dy = dout[row + c]!;
      dinp[row + c]! += r * (dy * weight[c]! - x * k);
      dweight[c]! += dy * x * r;
    }
  }
}
