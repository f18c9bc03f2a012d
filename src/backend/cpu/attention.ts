/**
 * Causal multi-head self-attention, CPU reference (llm.c `attention_forward/backward`; q, k, v come
 * already projected and rotated):
 *   s[t,t2] = (q_t · k_t2) / √HS for t2 ≤ t,   P[t,·] = softmax(s[t,·]),   out_t = Σ_t2 P[t,t2] v_t2
 *   dP[t2] = dout_t · v_t2,   ds[t2] = P[t2] (dP[t2] − Σ_j P[j] dP[j]),   dv_t2 += P[t2] dout_t,
 *   dq_t += ds[t2] k_t2 / √HS,   dk_t2 += ds[t2] q_t / √HS          (per batch row b and head h)
 * The KV-cached forward runs the same row routine in the same order, so it equals the full forward
 * bit for bit. Sums in f64; storing rounds to the output's type.
 *
 * Shapes: B batch, T time (query rows), NH heads, HS head size, C = NH·HS, Tmax cache capacity.
 *   q, k, v, out, dq, dk, dv, dout [B × T × C] (head h at channels h·HS..h·HS+HS−1)
 *   att [B × NH × T × T]: P, saved for backward, 0 above the diagonal;  kCache, vCache [B × Tmax × C]
 *
 * Not here: the q/k/v/o projections, RoPE, grouped-query attention, dropout.
 */
import type { FloatArray } from '../types';
import { checkAttentionBackward, checkAttentionCachedForward, checkAttentionForward, checkKvCacheWrite } from '../check';

/**
 * One query row against keys/values 0..len−1 stored with row stride C from kvBase:
 * writes out[outOff..+HS) and, when att is given, att[attOff..+len) (the probabilities).
 * `p` (length ≥ len) and `acc` (length ≥ HS) are f64 scratch.
 */
function attendRow(
  out: FloatArray,
  outOff: number,
  att: FloatArray | null,
  attOff: number,
  q: FloatArray,
  qOff: number,
  kBuf: FloatArray,
  vBuf: FloatArray,
  kvBase: number,
  C: number,
  len: number,
  HS: number,
  scale: number,
  p: Float64Array,
  acc: Float64Array,
): void {
  let max = -Infinity;
  for (let t2 = 0; t2 < len; t2++) {
    const kOff = kvBase + t2 * C;
    let s = 0;
    for (let i = 0; i < HS; i++) s += q[qOff + i]! * kBuf[kOff + i]!;
    s *= scale;
    p[t2] = s;
    if (s > max) max = s;
  }
  let sum = 0;
  for (let t2 = 0; t2 < len; t2++) {
    const e = Math.exp(p[t2]! - max);
    p[t2] = e;
    sum += e;
  }
  const inv = 1 / sum;
  for (let i = 0; i < HS; i++) acc[i] = 0;
  for (let t2 = 0; t2 < len; t2++) {
    const w = p[t2]! * inv;
    p[t2] = w;
    const vOff = kvBase + t2 * C;
    for (let i = 0; i < HS; i++) acc[i]! += w * vBuf[vOff + i]!;
  }
  for (let i = 0; i < HS; i++) out[outOff + i] = acc[i]!;
  if (att !== null) for (let t2 = 0; t2 < len; t2++) att[attOff + t2] = p[t2]!;
}

/** out = causal softmax(QKᵀ/√HS)·V per head; saves P in `att`. Overwrites `out` and `att`. */
export function attentionForward(
  out: FloatArray,
  att: FloatArray,
  q: FloatArray,
  k: FloatArray,
  v: FloatArray,
  B: number,
  T: number,
  NH: number,
  HS: number,
): void {
  checkAttentionForward(out, att, q, k, v, B, T, NH, HS);
  const C = NH * HS;
  const scale = 1 / Math.sqrt(HS);
  const p = new Float64Array(T);
  const acc = new Float64Array(HS);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < NH; h++) {
      const kvBase = b * T * C + h * HS;
      for (let t = 0; t < T; t++) {
        const rowOff = (b * T + t) * C + h * HS;
        const attOff = ((b * NH + h) * T + t) * T;
        attendRow(out, rowOff, att, attOff, q, rowOff, k, v, kvBase, C, t + 1, HS, scale, p, acc);
        for (let t2 = t + 1; t2 < T; t2++) att[attOff + t2] = 0;
      }
    }
  }
}

/** ∂/∂q, ∂/∂k, ∂/∂v (header). Accumulates into dq, dk, dv. */
export function attentionBackward(
  dq: FloatArray,
  dk: FloatArray,
  dv: FloatArray,
  dout: FloatArray,
  q: FloatArray,
  k: FloatArray,
  v: FloatArray,
  att: FloatArray,
  B: number,
  T: number,
  NH: number,
  HS: number,
): void {
  checkAttentionBackward(dq, dk, dv, dout, q, k, v, att, B, T, NH, HS);
  const C = NH * HS;
  const scale = 1 / Math.sqrt(HS);
  const dp = new Float64Array(T);
  const dqAcc = new Float64Array(HS);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < NH; h++) {
      const kvBase = b * T * C + h * HS;
      for (let t = 0; t < T; t++) {
        const rowOff = (b * T + t) * C + h * HS;
        const attOff = ((b * NH + h) * T + t) * T;
        // dP and dv
        let dot = 0;
        for (let t2 = 0; t2 <= t; t2++) {
          const vOff = kvBase + t2 * C;
          const w = att[attOff + t2]!;
          let s = 0;
          for (let i = 0; i < HS; i++) {
            const g = dout[rowOff + i]!;
            s += g * v[vOff + i]!;
            dv[vOff + i]! += w * g;
          }
          dp[t2] = s;
          dot += w * s;
        }
        // ds = P ⊙ (dP − Σ P dP), then dq and dk
        for (let i = 0; i < HS; i++) dqAcc[i] = 0;
        for (let t2 = 0; t2 <= t; t2++) {
          const ds = att[attOff + t2]! * (dp[t2]! - dot) * scale;
          const kOff = kvBase + t2 * C;
          for (let i = 0; i < HS; i++) {
            dqAcc[i]! += ds * k[kOff + i]!;
            dk[kOff + i]! += ds * q[rowOff + i]!;
          }
        }
        for (let i = 0; i < HS; i++) dq[rowOff + i]! += dqAcc[i]!;
      }
    }
  }
}

/** kCache[b, pos0+t, :] = k[b, t, :] and the same for v. Overwrites those cache rows. */
export function kvCacheWrite(
  kCache: FloatArray,
  vCache: FloatArray,
  k: FloatArray,
  v: FloatArray,
  B: number,
  T: number,
  C: number,
  pos0: number,
  Tmax: number,
): void {
  checkKvCacheWrite(kCache, vCache, k, v, B, T, C, pos0, Tmax);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const src = (b * T + t) * C;
      const dst = (b * Tmax + pos0 + t) * C;
      for (let c = 0; c < C; c++) {
        kCache[dst + c] = k[src + c]!;
        vCache[dst + c] = v[src + c]!;
      }
    }
  }
}

/**
 * Query rows at positions pos0..pos0+T−1 attend to cache positions 0..pos (the new rows must
 * already be in the cache, see kvCacheWrite). T = 1 is one decoding step. Overwrites `out`.
 */
export function attentionCachedForward(
  out: FloatArray,
  q: FloatArray,
  kCache: FloatArray,
  vCache: FloatArray,
  B: number,
  T: number,
  NH: number,
  HS: number,
  pos0: number,
  Tmax: number,
): void {
  checkAttentionCachedForward(out, q, kCache, vCache, B, T, NH, HS, pos0, Tmax);
  const C = NH * HS;
  const scale = 1 / Math.sqrt(HS);
  const p = new Float64Array(pos0 + T);
  const acc = new Float64Array(HS);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < NH; h++) {
      const kvBase = b * Tmax * C + h * HS;
      for (let t = 0; t < T; t++) {
        const rowOff = (b * T + t) * C + h * HS;
        attendRow(out, rowOff, null, 0, q, rowOff, kCache, vCache, kvBase, C, pos0 + t + 1, HS, scale, p, acc);
      }
    }
  }
}
