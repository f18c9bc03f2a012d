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
 * Numerics: every output element is ONE f64 accumulator summed in ascending order of the
 * contracted index (c forward, o for dinp, n for dW) and rounded once when stored; f32×f32
 * products are exact in f64. The loops below are the plain ones, one output row at a time (the
 * gradients keep a row of f64 accumulators so that both operands stream along C); any tiling that
 * keeps one accumulator per element in that order gives the same bits. The quantized matmuls
 * (quant.ts) run these loops on dequantized rows, so they equal this matmul on dequantized
 * weights exactly. The SIMD twin (simd.ts) sums in f32 lanes, the WebGPU twin in f32: both agree
 * to f32 rounding, not bit for bit.
 *
 * `matmulResidualForward` (out = res + inp · Wᵀ, the residual add folded into the matmul — one
 * dispatch on WebGPU) is here as the composition of matmulForward and residualForward.
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
