/**
 * Rotary position embedding (RoPE, Su et al. 2021), Llama convention with interleaved pairs
 * (2i, 2i+1) inside each head, CPU reference:
 *   θ_i = theta^(−2i/HS) (theta = 10000),  φ = pos · θ_i,  pos = pos0 + t
 *   (y_2i, y_2i+1) = (x_2i cos φ − x_2i+1 sin φ,  x_2i sin φ + x_2i+1 cos φ)
 * The map is a rotation R(φ), so the backward is the inverse rotation R(−φ) = R(φ)ᵀ:
 *   (dx_2i, dx_2i+1) += (dy_2i cos φ + dy_2i+1 sin φ,  −dy_2i sin φ + dy_2i+1 cos φ)
 *
 * cos/sin come from a table built once by `ropeTable` (in f64, then stored), so the WebGPU twin
 * uploads the very same numbers instead of recomputing angles in f32.
 *
 * Shapes: B batch, T time, NH heads, HS head size (even), C = NH·HS, Tmax table length.
 *   inp / out / dout / dinp [B × T × C] (q or k),  table [Tmax × HS/2 × 2] as (cos, sin)
 *
 * Not here: partial rotary or NTK/YaRN scaling; which tensors get rotated (q and k, by the model).
 */
import type { FloatArray } from '../types';
import { checkRope, need, sizes } from '../check';

/** The (cos φ, sin φ) table [Tmax × HS/2 × 2] for positions 0..Tmax−1, φ = pos · theta^(−2i/HS). */
export function ropeTable(Tmax: number, HS: number, theta = 10000, out: FloatArray = new Float32Array(Tmax * HS)): FloatArray {
  sizes('ropeTable', { Tmax, HS });
  if (HS % 2 !== 0) throw new RangeError(`ropeTable: head size HS must be even, got ${HS}`);
  need('ropeTable', 'out', out, Tmax * HS);
  const half = HS / 2;
  for (let p = 0; p < Tmax; p++) {
    for (let i = 0; i < half; i++) {
      const phi = p * Math.pow(theta, (-2 * i) / HS);
      out[(p * half + i) * 2] = Math.cos(phi);
      out[(p * half + i) * 2 + 1] = Math.sin(phi);
    }
  }
  return out;
}

/** y = R(φ) x per pair (header). Overwrites `out`; `out` may be `inp` (in place). */
export function ropeForward(out: FloatArray, inp: FloatArray, table: FloatArray, B: number, T: number, NH: number, HS: number, pos0 = 0): void {
  checkRope('ropeForward', out, inp, table, B, T, NH, HS, pos0);
  const C = NH * HS;
  const half = HS / 2;
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const tab = (pos0 + t) * HS;
      const row = (b * T + t) * C;
      for (let h = 0; h < NH; h++) {
        const base = row + h * HS;
        for (let i = 0; i < half; i++) {
          const cs = table[tab + 2 * i]!;
          const sn = table[tab + 2 * i + 1]!;
          const x0 = inp[base + 2 * i]!;
          const x1 = inp[base + 2 * i + 1]!;
          out[base + 2 * i] = x0 * cs - x1 * sn;
          out[base + 2 * i + 1] = x0 * sn + x1 * cs;
        }
      }
    }
  }
}

/** dx += R(φ)ᵀ dy (the inverse rotation). Accumulates into `dinp`. */
export function ropeBackward(dinp: FloatArray, dout: FloatArray, table: FloatArray, B: number, T: number, NH: number, HS: number, pos0 = 0): void {
  checkRope('ropeBackward', dinp, dout, table, B, T, NH, HS, pos0);
  const C = NH * HS;
  const half = HS / 2;
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const tab = (pos0 + t) * HS;
      const row = (b * T + t) * C;
      for (let h = 0; h < NH; h++) {
        const base = row + h * HS;
        for (let i = 0; i < half; i++) {
          const cs = table[tab + 2 * i]!;
          const sn = table[tab + 2 * i + 1]!;
          const d0 = dout[base + 2 * i]!;
          const d1 = dout[base + 2 * i + 1]!;
          dinp[base + 2 * i]! += d0 * cs + d1 * sn;
          dinp[base + 2 * i + 1]! += d1 * cs - d0 * sn;
        }
      }
    }
  }
}
