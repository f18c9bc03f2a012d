/**
 * Dense matmul with weights stored [OC × C] row-major (nn.Linear, llm.c `matmul_forward`), no
 * bias, CPU reference:
 *   out[n,o] = Σ_c inp[n,c] · W[o,c]        dinp[n,c] += Σ_o dout[n,o] · W[o,c]
 *   dW[o,c] += Σ_n dout[n,o] · inp[n,c]
 * Every output element is one f64 accumulator summed in ascending order of the contracted index
 * and rounded once, so any tiling in that order gives the same bits, and the quantized matmuls
 * (quant.ts, on dequantized rows) equal it exactly. The SIMD and WebGPU twins sum in f32.
 *
 * Shapes: N = B·T rows, C input channels, OC output channels.
 *   inp / dinp [N × C],  weight / dweight [OC × C],  out / dout [N × OC]
 *
 * Not here: bias, batched/strided matmul, quantized weights (quant.ts).
 */
import type { FloatArray } from '../types';
import { residualForward } from './residual';
import { checkMatmulBackward, checkMatmulForward, need } from '../check';

/**
 * out[n, o] for o in [o0, o1), all n, where weight row o sits at w[(o − o0 + wRow0) · C]. Shared
 * by matmulForward (w = weight, all rows) and the quantized matmuls (w = a dequantized block).
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
  for (let n = 0; n < N; n++) {
    const x = n * C;
    for (let o = o0; o < o1; o++) {
      const r = (o - o0 + wRow0) * C;
      let s = 0;
      for (let c = 0; c < C; c++) s += inp[x + c]! * w[r + c]!;
      out[n * OC + o] = s;
    }
  }
}

/** out = inp · Wᵀ (header). Overwrites `out`. */
export function matmulForward(out: FloatArray, inp: FloatArray, weight: FloatArray, B: number, T: number, C: number, OC: number): void {
  const N = checkMatmulForward(out, inp, weight, B, T, C, OC);
  matmulForwardRange(out, inp, weight, 0, N, C, OC, 0, OC);
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

/** dinp += dout · W over all N rows (a row of f64 accumulators per input row, o ascending). */
export function matmulBackwardInputRows(dinp: FloatArray, dout: FloatArray, weight: FloatArray, N: number, C: number, OC: number): void {
  const acc = new Float64Array(C);
  for (let n = 0; n < N; n++) {
    acc.fill(0);
    for (let o = 0; o < OC; o++) {
      const d = dout[n * OC + o]!;
      const w = o * C;
      for (let c = 0; c < C; c++) acc[c]! += d * weight[w + c]!;
    }
    const x = n * C;
    for (let c = 0; c < C; c++) dinp[x + c]! += acc[c]!;
  }
}

/** dW += doutᵀ · inp over all OC rows (a row of f64 accumulators per weight row, n ascending). */
function matmulBackwardWeightRows(dweight: FloatArray, dout: FloatArray, inp: FloatArray, N: number, C: number, OC: number): void {
  const acc = new Float64Array(C);
  for (let o = 0; o < OC; o++) {
    acc.fill(0);
    for (let n = 0; n < N; n++) {
      const d = dout[n * OC + o]!;
      const x = n * C;
      for (let c = 0; c < C; c++) acc[c]! += d * inp[x + c]!;
    }
    const w = o * C;
    for (let c = 0; c < C; c++) dweight[w + c]! += acc[c]!;
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

/** out = res + inp · Wᵀ (header: matmulForward then residualForward(out, res, out, N·OC, 1), same bits). Overwrites `out` (not `res`). */
export const matmulResidualForward = matmulResidualWith(matmulForward, residualForward);
