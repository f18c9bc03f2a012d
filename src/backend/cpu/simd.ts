/**
 * The CPU backend's ops on the WebAssembly SIMD kernels: drop-in twins of the TypeScript kernels
 * (simdMatmulForward = matmulForward of matmul.ts, simdAttentionForward = attentionForward of
 * attention.ts, …: same arguments, the twin's own checks, same semantics). Each runs its twin
 * instead when the kernels are unavailable or an argument is a Float64Array (the f64 backend).
 * Results agree with the twins within f32 rounding (the kernels sum in f32 lanes, the twins in f64)
 * and do not depend on the thread count; the bounds are derived and tested in tests/simd.test.ts.
 * The forward matmuls of a few rows read the weight as stored, dequantizing a quantized one in
 * registers (wasm/kernels.ts linF32 / linQ8 / linQ4); larger ones, and the quantized input
 * gradients, run the dense kernel (on the weight dequantized by quant.ts).
 *
 * Not here: loading, memory and operand placement (simdMemory.ts, whose public part is re-exported
 * below), the kernels (wasm/kernels.ts), the thread pool (threads.ts). Embedding, gather, KL, the
 * clipped loss, AdamW and sampling have no SIMD twin: memory-bound or small, and the sampler's f64
 * maths fixes the tokens a seed draws.
 */
import type { FloatArray, HostTensors, StoredMat } from '../types';
import {
  checkAttentionBackward,
  checkAttentionCachedForward,
  checkAttentionForward,
  checkLogSoftmaxBackward,
  checkLogSoftmaxForward,
  checkMatmulBackward,
  checkMany,
  checkMatmulForward,
  checkResidualBackward,
  checkResidualForward,
  checkRmsnormBackward,
  checkRmsnormForward,
  checkRope,
  checkSwigluBackward,
  checkSwigluForward,
  need,
} from '../check';
import { attentionBackward, attentionCachedForward, attentionForward } from './attention';
import { matmulBackward, matmulForward } from './matmul';
import { swigluBackward, swigluForward } from './mlp';
import {
  checkQuantized,
  manyBySingles,
  matmulBackwardInputQ4,
  matmulBackwardInputQ8,
  matmulForwardQ4,
  matmulForwardQ8,
  matmulForwardQAct,
} from './quant';
import { residualBackward, residualForward } from './residual';
import { rmsnormBackward, rmsnormForward } from './rmsnorm';
import { ropeBackward, ropeForward } from './rope';
import { ACC, type Arg, IN, type Kernels, OUT, ceil4, fast, finish, heapF32, load, place, simdResident } from './simdMemory';
import { logSoftmaxBackward, logSoftmaxForward } from './softmax';
import { MANY_MAX, attnBackwardSplit, attnForwardSplit, blockedGemm, dequantSplit, linearActSplit, linearManySplit, linearSplit, rmsnormForwardSplit, scratchCopies, swigluBackwardSplit, swigluForwardSplit } from './threads';

export {
  setCpuResidency,
  simdAvailable,
  simdBuild,
  simdBytes,
  simdKernelCalls,
  simdRelease,
  simdResident,
  simdResidentStats,
  simdTensor,
  simdUnavailableReason,
  simdView,
} from './simdMemory';

/**
 * Most rows of inp for which the forward runs the linear kernels (wasm/kernels.ts linF32, linQ8,
 * linQ4: each block of W made once per chunk and taken in by every row) rather than the panel
 * kernels (panelF32, …: a packed panel of W per tile and gemm's 4 × 8 register tile). Both read W as
 * stored and give the same bits, so the line changes only the speed (docs/performance.md "Decoding
 * at real size").
 */
export const LINEAR_MAX_ROWS = 3;
let linearMaxRows = LINEAR_MAX_ROWS;

/** Sets the row count up to which the forward runs the linear kernels (LINEAR_MAX_ROWS by default): benches time both with it; the results are the same bits. */
export function setLinearMaxRows(n: number): void {
  linearMaxRows = n;
}

/**
 * out = inp · Wᵀ with W as stored — f32 (weight = [w]) or quantized (weight = [q, scales]) — on the
 * linear or the panel kernels, split over threads; sizes already checked. The panels need C a
 * multiple of 4 (always so for the quantized layouts).
 */
function forwardStored(k: Kernels, bits: 32 | 8 | 4, out: Float32Array, inp: Float32Array, weight: Arg[], N: number, C: number, OC: number): void {
  const panel = N > linearMaxRows && C % 4 === 0;
  const stride = ceil4(Math.max(128, panel ? 8 * C : 0)); // floats of scratch per thread: 512 bytes, or a C × 8 panel
  const o = place(k, [[inp, N * C, IN], [out, N * OC, OUT], ...weight], [stride * scratchCopies()]);
  const w = o.slice(2, 2 + weight.length).map((e) => e * 4);
  linearSplit(k, bits, panel, o[0]! * 4, N, w, C, o[1]! * 4, OC, o[o.length - 1]! * 4, stride * 4);
  finish();
}

/**
 * Rows per chunk of the weight gradient's sum over N. The sum is K-blocked: each chunk's f32 sum is
 * added to the gradient once (128 + N/128 roundings instead of N + 1, so the error stays within
 * (N + 2)·2⁻²⁴·(Σ|a·b| + |init|)), and 128 rows of a 4-column strip of doutᵀ and of an 8-column
 * strip of inp are 2 × 8 KB of cache lines, so both stay in L1 across a chunk.
 */
const DW_ROWS = 128;
/** Steps per block of the input gradient's sum over OC (K-blocked like the weight gradient, below). */
const DINP_K = 256;

/** dinp += dout · W and/or dW += doutᵀ · inp on the kernel; all f32, sizes already checked. */
function backwardF32(
  k: Kernels,
  dinp: Float32Array | null,
  dweight: Float32Array | null,
  dout: Float32Array,
  inp: Float32Array,
  weight: Float32Array,
  N: number,
  C: number,
  OC: number,
): void {
  const Cp = ceil4(C);
  const args: Arg[] = [[dout, N * OC, IN]];
  if (dinp !== null) args.push([weight, OC * C, IN, OC, C, Cp], [dinp, N * C, ACC, N, C, Cp]);
  if (dweight !== null) args.push([inp, N * C, IN, N, C, Cp], [dweight, OC * C, ACC, OC, C, Cp]);
  const o = place(k, args);
  const pd = o[0]!;
  // K-blocked too: a block of DINP_K rows of W, 8 columns wide, is 8 KB and stays in L1 while every
  // row tile of dout streams past it.
  if (dinp !== null) blockedGemm(k, pd * 4, OC, 1, o[1]! * 4, Cp, o[2]! * 4, N, OC, 1, DINP_K);
  // K-blocked: chunks of DW_ROWS rows of dout / inp, each chunk's sums added once.
  if (dweight !== null) blockedGemm(k, pd * 4, 1, OC, o[args.length - 2]! * 4, Cp, o[args.length - 1]! * 4, OC, N, 1, DW_ROWS);
  finish();
}

/** out = inp · Wᵀ (matmul.ts header), on the SIMD kernels when they are available. Overwrites `out`. */
export function simdMatmulForward(out: FloatArray, inp: FloatArray, weight: FloatArray, B: number, T: number, C: number, OC: number): void {
  if (!fast(out, inp, weight)) return matmulForward(out, inp, weight, B, T, C, OC);
  const N = checkMatmulForward(out, inp, weight, B, T, C, OC);
  if (N * OC > 0) forwardStored(load()!, 32, out as Float32Array, inp as Float32Array, [[weight as Float32Array, OC * C, IN]], N, C, OC);
}

/** dinp += dout · W, dW += doutᵀ · inp (matmul.ts header), on the SIMD kernel when available. */
export function simdMatmulBackward(
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
  const grads = [dinp, dweight].filter((g): g is FloatArray => g !== null);
  if (!fast(dout, inp, weight, ...grads)) return matmulBackward(dinp, dweight, dout, inp, weight, B, T, C, OC);
  const N = checkMatmulBackward(dinp, dweight, dout, inp, weight, B, T, C, OC);
  if (N * C * OC === 0 || grads.length === 0) return;
  backwardF32(load()!, dinp as Float32Array | null, dweight as Float32Array | null, dout as Float32Array, inp as Float32Array, weight as Float32Array, N, C, OC);
}

/** out = inp · Wᵀ for a quantized weight on the kernels (forwardStored): the same bits as the dense matmul on the dequantized weight. */
function forwardQuantized(op: string, out: FloatArray, inp: FloatArray, q: Int8Array | Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  const N = checkQuantized(op, q, scales, B, T, C, OC);
  need(op, 'inp', inp, N * C);
  need(op, 'out', out, N * OC);
  if (N * OC > 0) forwardStored(load()!, q instanceof Int8Array ? 8 : 4, out as Float32Array, inp as Float32Array, [[q, q instanceof Int8Array ? OC * C : (OC * C) / 2, IN], [scales, (OC * C) / 32, IN]], N, C, OC);
}

/** out = inp · Wᵀ for a Q8 weight (quant.ts header), on the kernels (forwardQuantized). Overwrites `out`. */
export function simdMatmulForwardQ8(out: FloatArray, inp: FloatArray, q: Int8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  if (!fast(out, inp)) return matmulForwardQ8(out, inp, q, scales, B, T, C, OC);
  forwardQuantized('matmulForwardQ8', out, inp, q, scales, B, T, C, OC);
}

/** out = inp · Wᵀ for a Q4 weight (quant.ts header), on the kernels (forwardQuantized). Overwrites `out`. */
export function simdMatmulForwardQ4(out: FloatArray, inp: FloatArray, q: Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  if (!fast(out, inp)) return matmulForwardQ4(out, inp, q, scales, B, T, C, OC);
  forwardQuantized('matmulForwardQ4', out, inp, q, scales, B, T, C, OC);
}

/**
 * out = inp · Wᵀ for a quantized weight with the activations quantized to int8 (quant.ts
 * matmulForwardQAct, the twin: the same bits): inp quantized once on the calling thread
 * (quantActs), then the integer-dot kernels split over the output columns, each thread with its
 * own scale strip.
 */
function forwardQuantizedAct(op: string, out: FloatArray, inp: FloatArray, q: Int8Array | Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  const N = checkQuantized(op, q, scales, B, T, C, OC);
  need(op, 'inp', inp, N * C);
  need(op, 'out', out, N * OC);
  if (N * OC === 0) return;
  const k = load()!;
  const bits = q instanceof Int8Array ? 8 : 4;
  const nb = C / 32;
  const stride = ceil4(Math.max(4, 8 * nb)); // floats of scale strip per thread: 8 rows' scales per block
  const [px, po, pq, ps, pxq, pdx, pst] = place(k, [
    [inp as Float32Array, N * C, IN],
    [out as Float32Array, N * OC, OUT],
    [q, bits === 8 ? OC * C : (OC * C) / 2, IN],
    [scales, (OC * C) / 32, IN],
  ], [ceil4(N * C / 2), ceil4(N * nb), stride * scratchCopies()]) as [number, number, number, number, number, number, number];
  k.quantActs(px * 4, N, C, pxq * 4, pdx * 4, bits === 4 ? 1 : 0);
  linearActSplit(k, bits, pxq * 4, pdx * 4, N, pq * 4, ps * 4, C, po * 4, OC, pst * 4, stride * 4);
  finish();
}

/** out = inp · Wᵀ for a Q8 weight with int8 activations (forwardQuantizedAct). Overwrites `out`. */
export function simdMatmulForwardQ8Act(out: FloatArray, inp: FloatArray, q: Int8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  if (!fast(out, inp)) return matmulForwardQAct('matmulForwardQ8Act', out, inp, q, scales, B, T, C, OC);
  forwardQuantizedAct('matmulForwardQ8Act', out, inp, q, scales, B, T, C, OC);
}

/** out = inp · Wᵀ for a Q4 weight with int8 activations (forwardQuantizedAct). Overwrites `out`. */
export function simdMatmulForwardQ4Act(out: FloatArray, inp: FloatArray, q: Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  if (!fast(out, inp)) return matmulForwardQAct('matmulForwardQ4Act', out, inp, q, scales, B, T, C, OC);
  forwardQuantizedAct('matmulForwardQ4Act', out, inp, q, scales, B, T, C, OC);
}

/**
 * matmulForwardMany (types.ts) as one job on the threads (threads.ts linearManySplit): the input
 * placed once — and with int8 activations quantized once — and every weight's output columns
 * split together, so a layer's q, k and v (or gate and up) cost one fork-join instead of three
 * (or two). The same bits as one simdMatmulForward / …Q8 / …Q4 (…Act) per weight; quant.ts
 * manyBySingles is the twin, and the fallback where the kernels cannot run.
 */
export function simdMatmulForwardMany(outs: readonly FloatArray[], inp: FloatArray, weights: readonly StoredMat<HostTensors>[], B: number, T: number, C: number, OCs: readonly number[], activations: 'exact' | 'int8'): void {
  const dense = weights.flatMap((w) => (w.kind === 'f32' ? [w.w] : []));
  if (!fast(inp, ...outs, ...dense) || weights.length > MANY_MAX) return manyBySingles(singles)(outs as Float32Array[], inp as Float32Array, weights, B, T, C, OCs, activations);
  const N = checkMany(outs, inp, weights, B, T, C, OCs, activations);
  if (N * C === 0) return manyBySingles(singles)(outs as Float32Array[], inp as Float32Array, weights, B, T, C, OCs, activations);
  const k = load()!;
  const kind = weights[0]!.kind;
  const bits = kind === 'f32' ? 32 : kind === 'q8' ? 8 : 4;
  const act = activations === 'int8';
  const panel = !act && N > linearMaxRows && C % 4 === 0;
  const nb = C / 32;
  // floats of scratch per thread: the int8 kernels' scale strip, else 512 bytes or a C × 8 panel
  const stride = act ? ceil4(Math.max(4, 8 * nb)) : ceil4(Math.max(128, panel ? 8 * C : 0));
  const args: Arg[] = [[inp as Float32Array, N * C, IN]];
  weights.forEach((w, i) => {
    args.push([outs[i] as Float32Array, N * OCs[i]!, OUT]);
    if (w.kind === 'f32') args.push([w.w, OCs[i]! * C, IN]);
    else args.push([w.q, w.kind === 'q8' ? OCs[i]! * C : (OCs[i]! * C) / 2, IN], [w.scales, (OCs[i]! * C) / 32, IN]);
  });
  const extra = act ? [ceil4((N * C) / 2), ceil4(N * nb), stride * scratchCopies()] : [stride * scratchCopies()];
  const o = place(k, args, extra);
  const per = kind === 'f32' ? 2 : 3; // places per weight: its output, then its arrays
  const parts = weights.map((_, i) => ({ out: o[1 + per * i]! * 4, weight: o.slice(2 + per * i, 1 + per * (i + 1)).map((e) => e * 4), OC: OCs[i]! }));
  const sp = o[o.length - 1]! * 4;
  if (act) {
    const pxq = o[args.length]! * 4;
    const pdx = o[args.length + 1]! * 4;
    k.quantActs(o[0]! * 4, N, C, pxq, pdx, bits === 4 ? 1 : 0);
    linearManySplit(k, bits, false, true, pxq, pdx, N, C, parts, sp, stride * 4);
  } else {
    linearManySplit(k, bits, panel, false, o[0]! * 4, 0, N, C, parts, sp, stride * 4);
  }
  finish();
}

/** The single-weight products on the kernels, for manyBySingles. */
const singles = {
  matmulForward: simdMatmulForward,
  matmulForwardQ8: simdMatmulForwardQ8,
  matmulForwardQ4: simdMatmulForwardQ4,
  matmulForwardQ8Act: simdMatmulForwardQ8Act,
  matmulForwardQ4Act: simdMatmulForwardQ4Act,
} as const;

/**
 * dinp += dout · W for a quantized weight: block by block of DINP_K rows of W — the block dequantized
 * into scratch by the kernels (wasm/kernels.ts dequantRows, split over threads; exact), then its
 * share of the sum added by the gemm — the blocks and the additions of the dense backward (backwardF32),
 * so the same bits as the dense input gradient on the dequantized weight, with one block in memory
 * instead of the whole f32 matrix.
 */
function backwardInputQuantized(op: string, dinp: FloatArray, dout: FloatArray, q: Int8Array | Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  const N = checkQuantized(op, q, scales, B, T, C, OC);
  need(op, 'dinp', dinp, N * C);
  need(op, 'dout', dout, N * OC);
  if (N * C * OC === 0) return;
  const k = load()!;
  const bits = q instanceof Int8Array ? 8 : 4;
  const rows = Math.min(OC, DINP_K);
  const [pd, pi, pq, ps, pw] = place(k, [
    [dout as Float32Array, N * OC, IN],
    [dinp as Float32Array, N * C, ACC],
    [q, bits === 8 ? OC * C : (OC * C) / 2, IN],
    [scales, (OC * C) / 32, IN],
  ], [rows * C]) as [number, number, number, number, number];
  for (let o0 = 0; o0 < OC; o0 += DINP_K) {
    const o1 = Math.min(OC, o0 + DINP_K);
    dequantSplit(k, pw * 4, pq * 4, ps * 4, C, o0, o1, bits);
    blockedGemm(k, (pd + o0) * 4, OC, 1, pw * 4, C, pi * 4, N, o1 - o0, 1, o1 - o0);
  }
  finish();
}

/** dinp += dout · W for a Q8 weight (backwardInputQuantized). Accumulates. */
export function simdMatmulBackwardInputQ8(dinp: FloatArray, dout: FloatArray, q: Int8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  if (!fast(dinp, dout)) return matmulBackwardInputQ8(dinp, dout, q, scales, B, T, C, OC);
  backwardInputQuantized('matmulBackwardInputQ8', dinp, dout, q, scales, B, T, C, OC);
}

/** dinp += dout · W for a Q4 weight (backwardInputQuantized). Accumulates. */
export function simdMatmulBackwardInputQ4(dinp: FloatArray, dout: FloatArray, q: Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  if (!fast(dinp, dout)) return matmulBackwardInputQ4(dinp, dout, q, scales, B, T, C, OC);
  backwardInputQuantized('matmulBackwardInputQ4', dinp, dout, q, scales, B, T, C, OC);
}

// ───────────────────────── attention and the row kernels ─────────────────────────
// Same pattern as the matmuls: the TS twin's checks, then `place` (every tensor here is used whole:
// a resident one where it is, any other copied in with one TypedArray.set), the kernel, `finish`
// (the written operands that were not resident copied out). Accumulated gradients that are copied
// are copied in and back out, so the kernel adds to them.

/**
 * An attention kernel's two scratch buffers (`first`, `second` floats), once per thread that may run
 * a share (threads.ts `scratchCopies`): `floats` in all, copy t at t·stride, `second` after `first`.
 */
function attnScratch(first: number, second: number): { floats: number; stride: number; second: number } {
  const stride = ceil4(first) + ceil4(second);
  return { floats: stride * scratchCopies(), stride, second: ceil4(first) };
}

/** out = causal softmax(QKᵀ/√HS)·V per head, P saved in att (attention.ts header), on the SIMD kernel when available. */
export function simdAttentionForward(out: FloatArray, att: FloatArray, q: FloatArray, k: FloatArray, v: FloatArray, B: number, T: number, NH: number, HS: number): void {
  const n = B * T * NH * HS;
  if (!fast(out, att, q, k, v) || n === 0) return attentionForward(out, att, q, k, v, B, T, NH, HS);
  checkAttentionForward(out, att, q, k, v, B, T, NH, HS);
  const kn = load()!;
  const na = B * NH * T * T;
  const sc = attnScratch(HS * ceil4(T), ceil4(T) + 4);
  const [pq, pk, pv, po, pa, ps] = place(kn, [
    [q as Float32Array, n, IN],
    [k as Float32Array, n, IN],
    [v as Float32Array, n, IN],
    [out as Float32Array, n, OUT],
    [att as Float32Array, na, OUT],
  ], [sc.floats]) as [number, number, number, number, number, number];
  attnForwardSplit(kn, pq * 4, pk * 4, pv * 4, po * 4, pa * 4, B, T, NH, HS, T, 0, 1 / Math.sqrt(HS), ps * 4, (ps + sc.second) * 4, sc.stride * 4);
  finish();
}

/**
 * Query rows at positions pos0..pos0+T−1 against cache rows 0..pos (attention.ts header), on the same
 * SIMD kernel as simdAttentionForward (so a cached forward equals the full one bit for bit). Resident
 * caches are read where they are (the kernel's key/value batch stride is then Tmax rows; it reads
 * only the pos0 + T rows in use of each); others have only those rows copied in.
 */
export function simdAttentionCachedForward(
  out: FloatArray, q: FloatArray, kCache: FloatArray, vCache: FloatArray,
  B: number, T: number, NH: number, HS: number, pos0: number, Tmax: number,
): void {
  const C = NH * HS;
  const n = B * T * C;
  if (!fast(out, q, kCache, vCache) || n === 0) return attentionCachedForward(out, q, kCache, vCache, B, T, NH, HS, pos0, Tmax);
  checkAttentionCachedForward(out, q, kCache, vCache, B, T, NH, HS, pos0, Tmax);
  const kn = load()!;
  const L = pos0 + T;
  const sc = attnScratch(HS * ceil4(L), ceil4(L) + 4);
  const kc = kCache as Float32Array, vc = vCache as Float32Array;
  const inPlace = simdResident(kc) && simdResident(vc);
  const cache = inPlace ? 0 : B * L * C; // floats per copied cache
  const [pq, po, pk0, pv0, ps] = place(kn, [
    [q as Float32Array, n, IN],
    [out as Float32Array, n, OUT],
  ], [cache, cache, sc.floats]) as [number, number, number, number, number];
  let pk = pk0, pv = pv0;
  if (inPlace) {
    pk = kc.byteOffset >> 2;
    pv = vc.byteOffset >> 2;
  } else {
    const f32 = heapF32();
    for (let b = 0; b < B; b++) {
      f32.set(kc.subarray(b * Tmax * C, (b * Tmax + L) * C), pk + b * L * C);
      f32.set(vc.subarray(b * Tmax * C, (b * Tmax + L) * C), pv + b * L * C);
    }
  }
  attnForwardSplit(kn, pq * 4, pk * 4, pv * 4, po * 4, 0, B, T, NH, HS, inPlace ? Tmax : L, pos0, 1 / Math.sqrt(HS), ps * 4, (ps + sc.second) * 4, sc.stride * 4);
  finish();
}

/** ∂/∂q, ∂/∂k, ∂/∂v of causal attention (attention.ts header), on the SIMD kernel when available. Accumulates. */
export function simdAttentionBackward(
  dq: FloatArray, dk: FloatArray, dv: FloatArray, dout: FloatArray, q: FloatArray, k: FloatArray, v: FloatArray, att: FloatArray,
  B: number, T: number, NH: number, HS: number,
): void {
  const n = B * T * NH * HS;
  if (!fast(dq, dk, dv, dout, q, k, v, att) || n === 0) return attentionBackward(dq, dk, dv, dout, q, k, v, att, B, T, NH, HS);
  checkAttentionBackward(dq, dk, dv, dout, q, k, v, att, B, T, NH, HS);
  const kn = load()!;
  const na = B * NH * T * T;
  const sc = attnScratch(HS * ceil4(T), T * T + 4);
  const grads = [dq, dk, dv].map((a): Arg => [a as Float32Array, n, ACC]);
  const ins = [dout, q, k, v].map((a): Arg => [a as Float32Array, n, IN]);
  const o = place(kn, [...grads, ...ins, [att as Float32Array, na, IN]], [sc.floats]);
  attnBackwardSplit(kn, o[0]! * 4, o[1]! * 4, o[2]! * 4, o[3]! * 4, o[4]! * 4, o[5]! * 4, o[6]! * 4, o[7]! * 4, B, T, NH, HS, 1 / Math.sqrt(HS), o[8]! * 4, (o[8]! + sc.second) * 4, sc.stride * 4);
  finish();
}

/** RMSNorm forward (rmsnorm.ts header), on the SIMD kernel when available. Overwrites out and rstd. */
export function simdRmsnormForward(out: FloatArray, rstd: FloatArray, inp: FloatArray, weight: FloatArray, B: number, T: number, C: number, eps = 1e-5): void {
  const N = B * T;
  if (!fast(out, rstd, inp, weight) || N * C === 0) return rmsnormForward(out, rstd, inp, weight, B, T, C, eps);
  checkRmsnormForward(out, rstd, inp, weight, B, T, C);
  const kn = load()!;
  const [po, pr, pi, pw] = place(kn, [
    [out as Float32Array, N * C, OUT],
    [rstd as Float32Array, N, OUT],
    [inp as Float32Array, N * C, IN],
    [weight as Float32Array, C, IN],
  ]) as [number, number, number, number];
  rmsnormForwardSplit(kn, po * 4, pr * 4, pi * 4, pw * 4, N, C, eps);
  finish();
}

/** RMSNorm backward (rmsnorm.ts header), on the SIMD kernel when available. Accumulates into dinp and dweight. */
export function simdRmsnormBackward(
  dinp: FloatArray, dweight: FloatArray, dout: FloatArray, inp: FloatArray, weight: FloatArray, rstd: FloatArray,
  B: number, T: number, C: number,
): void {
  const N = B * T;
  if (!fast(dinp, dweight, dout, inp, weight, rstd) || N * C === 0) return rmsnormBackward(dinp, dweight, dout, inp, weight, rstd, B, T, C);
  checkRmsnormBackward(dinp, dweight, dout, inp, weight, rstd, B, T, C);
  const kn = load()!;
  const o = place(kn, [
    [dinp as Float32Array, N * C, ACC],
    [dweight as Float32Array, C, ACC],
    [dout as Float32Array, N * C, IN],
    [inp as Float32Array, N * C, IN],
    [weight as Float32Array, C, IN],
    [rstd as Float32Array, N, IN],
  ], [C]);
  kn.rmsnormBwd(o[0]! * 4, o[1]! * 4, o[2]! * 4, o[3]! * 4, o[4]! * 4, o[5]! * 4, N, C, o[6]! * 4);
  finish();
}

/** out = silu(a) ⊙ b (mlp.ts header), on the SIMD kernel when available. Overwrites out. */
export function simdSwigluForward(out: FloatArray, a: FloatArray, b: FloatArray, N: number): void {
  if (!fast(out, a, b) || N === 0) return swigluForward(out, a, b, N);
  checkSwigluForward(out, a, b, N);
  const kn = load()!;
  const [po, pa, pb] = place(kn, [
    [out as Float32Array, N, OUT],
    [a as Float32Array, N, IN],
    [b as Float32Array, N, IN],
  ]) as [number, number, number];
  swigluForwardSplit(kn, po * 4, pa * 4, pb * 4, N);
  finish();
}

/** SwiGLU backward (mlp.ts header), on the SIMD kernel when available. Accumulates into da, db. */
export function simdSwigluBackward(da: FloatArray, db: FloatArray, dout: FloatArray, a: FloatArray, b: FloatArray, N: number): void {
  if (!fast(da, db, dout, a, b) || N === 0) return swigluBackward(da, db, dout, a, b, N);
  checkSwigluBackward(da, db, dout, a, b, N);
  const kn = load()!;
  const o = place(kn, [da, db, dout, a, b].map((x, i): Arg => [x as Float32Array, N, i < 2 ? ACC : IN]));
  swigluBackwardSplit(kn, o[0]! * 4, o[1]! * 4, o[2]! * 4, o[3]! * 4, o[4]! * 4, N);
  finish();
}

/** log_softmax(logits/τ) per row (softmax.ts header), on the SIMD kernel when available. `out` may be `logits`. */
export function simdLogSoftmaxForward(out: FloatArray, logits: FloatArray, N: number, V: number, temperature = 1): void {
  if (!fast(out, logits) || N * V === 0) return logSoftmaxForward(out, logits, N, V, temperature);
  checkLogSoftmaxForward(out, logits, N, V, temperature);
  const kn = load()!;
  const [po, pz, pe] = place(kn, [
    [out as Float32Array, N * V, OUT],
    [logits as Float32Array, N * V, IN],
  ], [ceil4(V)]) as [number, number, number];
  kn.logSoftmaxFwd(po * 4, pz * 4, N, V, 1 / temperature, pe * 4);
  finish();
}

/** dlogits += (dlogp − p Σ dlogp)/τ per row (softmax.ts header), on the SIMD kernel when available. Accumulates. */
export function simdLogSoftmaxBackward(dlogits: FloatArray, dlogp: FloatArray, logp: FloatArray, N: number, V: number, temperature = 1): void {
  if (!fast(dlogits, dlogp, logp) || N * V === 0) return logSoftmaxBackward(dlogits, dlogp, logp, N, V, temperature);
  checkLogSoftmaxBackward(dlogits, dlogp, logp, N, V, temperature);
  const kn = load()!;
  const o = place(kn, [dlogits, dlogp, logp].map((x, i): Arg => [x as Float32Array, N * V, i === 0 ? ACC : IN]));
  kn.logSoftmaxBwd(o[0]! * 4, o[1]! * 4, o[2]! * 4, N, V, 1 / temperature);
  finish();
}

/** RoPE on the SIMD kernel: forward (sgn 1, overwrites; out may be inp) or backward (sgn −1, accumulates). */
function rope(op: 'ropeForward' | 'ropeBackward', out: Float32Array, inp: Float32Array, table: Float32Array, B: number, T: number, NH: number, HS: number, pos0: number): void {
  checkRope(op, out, inp, table, B, T, NH, HS, pos0);
  const kn = load()!;
  const n = B * T * NH * HS, nt = (pos0 + T) * HS;
  const bwd = op === 'ropeBackward';
  const [po, pi, pt] = place(kn, [
    [out, n, bwd ? ACC : OUT],
    [inp, n, IN],
    [table, nt, IN],
  ]) as [number, number, number];
  kn.ropeApply(po * 4, pi * 4, pt * 4, B, T, NH, HS, pos0, bwd ? -1 : 1, bwd ? 1 : 0);
  finish();
}

/** y = R(φ) x per pair (rope.ts header), on the SIMD kernel when available. Overwrites out (which may be inp). */
export function simdRopeForward(out: FloatArray, inp: FloatArray, table: FloatArray, B: number, T: number, NH: number, HS: number, pos0 = 0): void {
  if (!fast(out, inp, table) || B * T * NH * HS === 0) return ropeForward(out, inp, table, B, T, NH, HS, pos0);
  rope('ropeForward', out as Float32Array, inp as Float32Array, table as Float32Array, B, T, NH, HS, pos0);
}

/** dx += R(φ)ᵀ dy (rope.ts header), on the SIMD kernel when available. Accumulates into dinp. */
export function simdRopeBackward(dinp: FloatArray, dout: FloatArray, table: FloatArray, B: number, T: number, NH: number, HS: number, pos0 = 0): void {
  if (!fast(dinp, dout, table) || B * T * NH * HS === 0) return ropeBackward(dinp, dout, table, B, T, NH, HS, pos0);
  rope('ropeBackward', dinp as Float32Array, dout as Float32Array, table as Float32Array, B, T, NH, HS, pos0);
}

/** out = a + scale·b (residual.ts header), on the SIMD kernel when available. `out` may alias a or b. */
export function simdResidualForward(out: FloatArray, a: FloatArray, b: FloatArray, N: number, scale = 1): void {
  if (!fast(out, a, b) || N === 0) return residualForward(out, a, b, N, scale);
  checkResidualForward(out, a, b, N);
  const kn = load()!;
  const [po, pa, pb] = place(kn, [
    [out as Float32Array, N, OUT],
    [a as Float32Array, N, IN],
    [b as Float32Array, N, IN],
  ]) as [number, number, number];
  kn.axpy(po * 4, pa * 4, pb * 4, N, scale);
  finish();
}

/** da += dout, db += scale·dout (residual.ts header; null skips one), on the SIMD kernel when available. */
export function simdResidualBackward(da: FloatArray | null, db: FloatArray | null, dout: FloatArray, N: number, scale = 1): void {
  const outs = [da, db].filter((x): x is FloatArray => x !== null);
  if (!fast(dout, ...outs) || N === 0) return residualBackward(da, db, dout, N, scale);
  checkResidualBackward(da, db, dout, N);
  const kn = load()!;
  for (const [g, s] of [
    [da, 1],
    [db, scale],
  ] as const) {
    if (g === null) continue;
    const [pg, pd] = place(kn, [
      [g as Float32Array, N, ACC],
      [dout as Float32Array, N, IN],
    ]) as [number, number];
    kn.axpy(pg * 4, pg * 4, pd * 4, N, s);
    finish();
  }
}
