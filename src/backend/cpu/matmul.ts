/**
 * Dense matmul with weights stored [OC × C] row-major (PyTorch nn.Linear, llm.c `matmul_forward`),
 * no bias (Llama has none), CPU reference:
 *   out[n,o] = Σ_c inp[n,c] · W[o,c]                 (out = inp · Wᵀ)
 *   dinp[n,c] += Σ_o dout[n,o] · W[o,c]               (dinp = dout · W)
 *   dW[o,c]   += Σ_n dout[n,o] · inp[n,c]             (dW = doutᵀ · inp)
 *
 * Shapes: B batch, T time, N = B·T rows, C input channels, OC output channels.
 *   inp / dinp [N × C],  weight / dweight [OC × C],  out / dout [N × OC]
 *
 * Loop order (cache-friendly, transpose-free): the forward walks a block of OC rows of W small
 * enough to stay in L1, and computes a 4×4 register tile (4 input rows × 4 weight rows) per pass
 * over the contiguous C axis — each load feeds 4 multiply-adds. The backward passes keep f64
 * accumulator rows (4 × C) for a tile of 4 rows and stream the other operand along C, 4 at a time.
 *
 * Numerics: every output element is ONE f64 accumulator summed in ascending order of the
 * contracted index (c forward, o for dinp, n for dW), whatever the tiling; f32×f32 products are
 * exact in f64, and the result is rounded once when stored. So the result does not depend on tile
 * or block sizes — a naive triple loop gives the same bits — and the quantized matmuls
 * (quant.ts), which reuse these loops on dequantized rows, equal this matmul on dequantized
 * weights exactly. The WebGPU twin accumulates in f32 and agrees to ~1e-6 relative.
 *
 * `matmulResidualForward` (out = res + inp · Wᵀ, the residual add folded into the matmul — one
 * dispatch on WebGPU) is here as the composition of matmulForward and residualForward.
 *
 * Not here: bias, batched/strided matmul, quantized weights (quant.ts).
 */
import type { FloatArray } from '../types';
import { residualForward } from './residual';
import { need, sizes } from './check';

/** Rows of W per L1-resident block: ~32 KiB of f32, a multiple of 4, at least 4. */
export function ocBlock(C: number): number {
  return Math.max(4, Math.floor(8192 / Math.max(1, C)) & ~3);
}

/**
 * out[n, o] for o in [o0, o1), all n, where weight row o sits at w[(o − o0 + wRow0) · C].
 * Shared by matmulForward (w = weight, wRow0 = o0) and the quantized matmuls (w = dequantized block).
 */
export function matmulForwardRange(
  out: FloatArray,
  inp: FloatArray,
  w: FloatArray,
  wRow0: number,
  N: number,
  C: number,
  OC: number,
  o0: number,
  o1: number,
): void {
  const wShift = (wRow0 - o0) * C; // weight row o starts at o·C + wShift
  let n = 0;
  for (; n + 4 <= N; n += 4) {
    const i0 = n * C;
    const i1 = i0 + C;
    const i2 = i1 + C;
    const i3 = i2 + C;
    const r0 = n * OC;
    const r1 = r0 + OC;
    const r2 = r1 + OC;
    const r3 = r2 + OC;
    let o = o0;
    for (; o + 4 <= o1; o += 4) {
      const w0 = o * C + wShift;
      const w1 = w0 + C;
      const w2 = w1 + C;
      const w3 = w2 + C;
      let s00 = 0, s01 = 0, s02 = 0, s03 = 0;
      let s10 = 0, s11 = 0, s12 = 0, s13 = 0;
      let s20 = 0, s21 = 0, s22 = 0, s23 = 0;
      let s30 = 0, s31 = 0, s32 = 0, s33 = 0;
      for (let c = 0; c < C; c++) {
        const x0 = inp[i0 + c]!;
        const x1 = inp[i1 + c]!;
        const x2 = inp[i2 + c]!;
        const x3 = inp[i3 + c]!;
        const a0 = w[w0 + c]!;
        const a1 = w[w1 + c]!;
        const a2 = w[w2 + c]!;
        const a3 = w[w3 + c]!;
        s00 += x0 * a0; s01 += x0 * a1; s02 += x0 * a2; s03 += x0 * a3;
        s10 += x1 * a0; s11 += x1 * a1; s12 += x1 * a2; s13 += x1 * a3;
        s20 += x2 * a0; s21 += x2 * a1; s22 += x2 * a2; s23 += x2 * a3;
        s30 += x3 * a0; s31 += x3 * a1; s32 += x3 * a2; s33 += x3 * a3;
      }
      out[r0 + o] = s00; out[r0 + o + 1] = s01; out[r0 + o + 2] = s02; out[r0 + o + 3] = s03;
      out[r1 + o] = s10; out[r1 + o + 1] = s11; out[r1 + o + 2] = s12; out[r1 + o + 3] = s13;
      out[r2 + o] = s20; out[r2 + o + 1] = s21; out[r2 + o + 2] = s22; out[r2 + o + 3] = s23;
      out[r3 + o] = s30; out[r3 + o + 1] = s31; out[r3 + o + 2] = s32; out[r3 + o + 3] = s33;
    }
    for (; o < o1; o++) {
      const w0 = o * C + wShift;
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (let c = 0; c < C; c++) {
        const a = w[w0 + c]!;
        s0 += inp[i0 + c]! * a;
        s1 += inp[i1 + c]! * a;
        s2 += inp[i2 + c]! * a;
        s3 += inp[i3 + c]! * a;
      }
      out[r0 + o] = s0;
      out[r1 + o] = s1;
      out[r2 + o] = s2;
      out[r3 + o] = s3;
    }
  }
  for (; n < N; n++) {
    const i0 = n * C;
    let o = o0;
    for (; o + 4 <= o1; o += 4) {
      const w0 = o * C + wShift;
      const w1 = w0 + C;
      const w2 = w1 + C;
      const w3 = w2 + C;
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (let c = 0; c < C; c++) {
        const x = inp[i0 + c]!;
        s0 += x * w[w0 + c]!;
        s1 += x * w[w1 + c]!;
        s2 += x * w[w2 + c]!;
        s3 += x * w[w3 + c]!;
      }
      out[n * OC + o] = s0;
      out[n * OC + o + 1] = s1;
      out[n * OC + o + 2] = s2;
      out[n * OC + o + 3] = s3;
    }
    for (; o < o1; o++) {
      const w0 = o * C + wShift;
      let s = 0;
      for (let c = 0; c < C; c++) s += inp[i0 + c]! * w[w0 + c]!;
      out[n * OC + o] = s;
    }
  }
}

/** matmulForward's argument checks (shared with its SIMD twin, simd.ts); returns N = B·T. */
export function checkMatmulForward(out: FloatArray, inp: FloatArray, weight: FloatArray, B: number, T: number, C: number, OC: number): number {
  sizes('matmulForward', { B, T, C, OC });
  const N = B * T;
  need('matmulForward', 'out', out, N * OC);
  need('matmulForward', 'inp', inp, N * C);
  need('matmulForward', 'weight', weight, OC * C);
  return N;
}

/** out = inp · Wᵀ (header). Overwrites `out`. */
export function matmulForward(out: FloatArray, inp: FloatArray, weight: FloatArray, B: number, T: number, C: number, OC: number): void {
  const N = checkMatmulForward(out, inp, weight, B, T, C, OC);
  const OB = ocBlock(C);
  for (let o0 = 0; o0 < OC; o0 += OB) matmulForwardRange(out, inp, weight, o0, N, C, OC, o0, Math.min(OC, o0 + OB));
}

type MatmulForwardFn = (out: FloatArray, inp: FloatArray, weight: FloatArray, B: number, T: number, C: number, OC: number) => void;
type ResidualForwardFn = (out: FloatArray, a: FloatArray, b: FloatArray, N: number, scale?: number) => void;

/**
 * `matmulResidualForward` over a given matmul and residual (the TS ones, or their SIMD twins in
 * cpuBackend): out = inp · Wᵀ, then out = res + 1·out — the unfused pair composed, so the fused
 * op gives the bits of the two ops it replaces on every CPU backend.
 */
export function matmulResidualWith(mm: MatmulForwardFn, add: ResidualForwardFn) {
  return (out: FloatArray, inp: FloatArray, weight: FloatArray, res: FloatArray, B: number, T: number, C: number, OC: number): void => {
    if (out === res) throw new RangeError('matmulResidualForward: out must not be res (the matmul overwrites out before the add reads res)');
    need('matmulResidualForward', 'res', res, B * T * OC);
    mm(out, inp, weight, B, T, C, OC);
    add(out, res, out, B * T * OC, 1);
  };
}

/** dinp += dout · W over all N rows (4 rows × 4 weight rows at a time, f64 accumulators). */
export function matmulBackwardInputRows(dinp: FloatArray, dout: FloatArray, weight: FloatArray, N: number, C: number, OC: number): void {
  const acc = new Float64Array(4 * C);
  for (let n = 0; n < N; n += 4) {
    const R = Math.min(4, N - n);
    acc.fill(0);
    if (R === 4) {
      const g0 = n * OC;
      const g1 = g0 + OC;
      const g2 = g1 + OC;
      const g3 = g2 + OC;
      let o = 0;
      for (; o + 4 <= OC; o += 4) {
        const d00 = dout[g0 + o]!, d01 = dout[g0 + o + 1]!, d02 = dout[g0 + o + 2]!, d03 = dout[g0 + o + 3]!;
        const d10 = dout[g1 + o]!, d11 = dout[g1 + o + 1]!, d12 = dout[g1 + o + 2]!, d13 = dout[g1 + o + 3]!;
        const d20 = dout[g2 + o]!, d21 = dout[g2 + o + 1]!, d22 = dout[g2 + o + 2]!, d23 = dout[g2 + o + 3]!;
        const d30 = dout[g3 + o]!, d31 = dout[g3 + o + 1]!, d32 = dout[g3 + o + 2]!, d33 = dout[g3 + o + 3]!;
        const w0 = o * C;
        const w1 = w0 + C;
        const w2 = w1 + C;
        const w3 = w2 + C;
        for (let c = 0; c < C; c++) {
          const a0 = weight[w0 + c]!;
          const a1 = weight[w1 + c]!;
          const a2 = weight[w2 + c]!;
          const a3 = weight[w3 + c]!;
          let s = acc[c]!;
          s += d00 * a0; s += d01 * a1; s += d02 * a2; s += d03 * a3;
          acc[c] = s;
          s = acc[C + c]!;
          s += d10 * a0; s += d11 * a1; s += d12 * a2; s += d13 * a3;
          acc[C + c] = s;
          s = acc[2 * C + c]!;
          s += d20 * a0; s += d21 * a1; s += d22 * a2; s += d23 * a3;
          acc[2 * C + c] = s;
          s = acc[3 * C + c]!;
          s += d30 * a0; s += d31 * a1; s += d32 * a2; s += d33 * a3;
          acc[3 * C + c] = s;
        }
      }
      for (; o < OC; o++) {
        const d0 = dout[g0 + o]!, d1 = dout[g1 + o]!, d2 = dout[g2 + o]!, d3 = dout[g3 + o]!;
        const w0 = o * C;
        for (let c = 0; c < C; c++) {
          const a = weight[w0 + c]!;
          acc[c]! += d0 * a;
          acc[C + c]! += d1 * a;
          acc[2 * C + c]! += d2 * a;
          acc[3 * C + c]! += d3 * a;
        }
      }
    } else {
      for (let r = 0; r < R; r++) {
        const g = (n + r) * OC;
        const ar = r * C;
        for (let o = 0; o < OC; o++) {
          const d = dout[g + o]!;
          const w0 = o * C;
          for (let c = 0; c < C; c++) acc[ar + c]! += d * weight[w0 + c]!;
        }
      }
    }
    const base = n * C;
    for (let i = 0; i < R * C; i++) dinp[base + i]! += acc[i]!;
  }
}

/** dW += doutᵀ · inp over all OC rows (4 weight rows × 4 input rows at a time, f64 accumulators). */
export function matmulBackwardWeightRows(dweight: FloatArray, dout: FloatArray, inp: FloatArray, N: number, C: number, OC: number): void {
  const acc = new Float64Array(4 * C);
  for (let o = 0; o < OC; o += 4) {
    const J = Math.min(4, OC - o);
    acc.fill(0);
    if (J === 4) {
      let n = 0;
      for (; n + 4 <= N; n += 4) {
        const g0 = n * OC + o;
        const g1 = g0 + OC;
        const g2 = g1 + OC;
        const g3 = g2 + OC;
        // d{j}{r} = dout[n + r, o + j]
        const d00 = dout[g0]!, d01 = dout[g1]!, d02 = dout[g2]!, d03 = dout[g3]!;
        const d10 = dout[g0 + 1]!, d11 = dout[g1 + 1]!, d12 = dout[g2 + 1]!, d13 = dout[g3 + 1]!;
        const d20 = dout[g0 + 2]!, d21 = dout[g1 + 2]!, d22 = dout[g2 + 2]!, d23 = dout[g3 + 2]!;
        const d30 = dout[g0 + 3]!, d31 = dout[g1 + 3]!, d32 = dout[g2 + 3]!, d33 = dout[g3 + 3]!;
        const i0 = n * C;
        const i1 = i0 + C;
        const i2 = i1 + C;
        const i3 = i2 + C;
        for (let c = 0; c < C; c++) {
          const x0 = inp[i0 + c]!;
          const x1 = inp[i1 + c]!;
          const x2 = inp[i2 + c]!;
          const x3 = inp[i3 + c]!;
          let s = acc[c]!;
          s += d00 * x0; s += d01 * x1; s += d02 * x2; s += d03 * x3;
          acc[c] = s;
          s = acc[C + c]!;
          s += d10 * x0; s += d11 * x1; s += d12 * x2; s += d13 * x3;
          acc[C + c] = s;
          s = acc[2 * C + c]!;
          s += d20 * x0; s += d21 * x1; s += d22 * x2; s += d23 * x3;
          acc[2 * C + c] = s;
          s = acc[3 * C + c]!;
          s += d30 * x0; s += d31 * x1; s += d32 * x2; s += d33 * x3;
          acc[3 * C + c] = s;
        }
      }
      for (; n < N; n++) {
        const g = n * OC + o;
        const d0 = dout[g]!, d1 = dout[g + 1]!, d2 = dout[g + 2]!, d3 = dout[g + 3]!;
        const i0 = n * C;
        for (let c = 0; c < C; c++) {
          const x = inp[i0 + c]!;
          acc[c]! += d0 * x;
          acc[C + c]! += d1 * x;
          acc[2 * C + c]! += d2 * x;
          acc[3 * C + c]! += d3 * x;
        }
      }
    } else {
      for (let j = 0; j < J; j++) {
        const aj = j * C;
        for (let n = 0; n < N; n++) {
          const d = dout[n * OC + o + j]!;
          const i0 = n * C;
          for (let c = 0; c < C; c++) acc[aj + c]! += d * inp[i0 + c]!;
        }
      }
    }
    const base = o * C;
    for (let i = 0; i < J * C; i++) dweight[base + i]! += acc[i]!;
  }
}

/**
 * dinp += dout · W and dW += doutᵀ · inp (header); pass null for a gradient you do not need
 * (e.g. dweight for a frozen base under LoRA). Accumulates.
 */
export function matmulBackward(
  dinp: FloatArray | null,
  dweight: FloatArray | null,
  dout: FloatArray,
  inp: FloatArray,
  weight: FloatArray,
  B: number,
  T: number,
  C: number,
  OC: number,
): void {
  const N = checkMatmulBackward(dinp, dweight, dout, inp, weight, B, T, C, OC);
  if (dinp !== null) matmulBackwardInputRows(dinp, dout, weight, N, C, OC);
  if (dweight !== null) matmulBackwardWeightRows(dweight, dout, inp, N, C, OC);
}

/** matmulBackward's argument checks (shared with its SIMD twin, simd.ts); returns N = B·T. */
export function checkMatmulBackward(
  dinp: FloatArray | null,
  dweight: FloatArray | null,
  dout: FloatArray,
  inp: FloatArray,
  weight: FloatArray,
  B: number,
  T: number,
  C: number,
  OC: number,
): number {
  sizes('matmulBackward', { B, T, C, OC });
  const N = B * T;
  need('matmulBackward', 'dout', dout, N * OC);
  if (dinp !== null) {
    need('matmulBackward', 'dinp', dinp, N * C);
    need('matmulBackward', 'weight', weight, OC * C);
  }
  if (dweight !== null) {
    need('matmulBackward', 'dweight', dweight, OC * C);
    need('matmulBackward', 'inp', inp, N * C);
  }
  return N;
}

/** out = res + inp · Wᵀ (header: matmulForward then residualForward(out, res, out, N·OC, 1), same bits). Overwrites `out` (not `res`). */
export const matmulResidualForward = matmulResidualWith(matmulForward, residualForward);
