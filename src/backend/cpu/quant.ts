/**
 * Matmul from quantized weights (out = inp · Wᵀ, W [OC × C] in blocks of 32 along C; C a multiple
 * of 32), CPU reference. Layouts, with s = f16(scales[o·(C/32) + ⌊c/32⌋]):
 *   Q8 (GGUF Q8_0 numbers): q Int8Array [OC·C] row-major; W[o,c] = q[o·C + c] · s
 *   Q4 (ONNX MatMulNBits packing): q Uint8Array [OC·C/2], byte ⌊(o·C + c)/2⌋, low nibble for even
 *      c; W[o,c] = (nibble − 8) · s
 * Rows are dequantized into f32 (exact) and run through the dense loops of matmul.ts, so the
 * result equals `matmulForward` on the dequantized weights bit for bit; the input gradients (LoRA
 * over a frozen base) equal `matmulBackward`'s dinp likewise. Shapes as in matmul.ts.
 *
 * Not here: quantizing (src/model), gradients for the quantized weights themselves (frozen).
 */
import { f16ToF32 } from '../../core/f16';
import { QBLOCK, type Backend, type FloatArray, type HostTensors, type StoredMat } from '../types';
import type { HostTensors64 } from './index';
import { checkMany, checkQuantWeight, need, sizes } from '../check';
import { matmulBackwardInputRows, matmulForwardRange } from './matmul';

/** Rows of W dequantized at a time in the forward: ~32 KiB of f32 (stays in L1), at least 4. */
function ocBlock(C: number): number {
  return Math.max(4, Math.floor(8192 / Math.max(1, C)) & ~3);
}

/**
 * A quantized matmul's checks of its sizes and weight (Q8: an Int8Array, Q4: a Uint8Array), shared
 * with the SIMD twins (simd.ts); returns N = B·T. The caller then checks its [N × C] and [N × OC]
 * operands.
 */
export function checkQuantized(op: string, q: Int8Array | Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): number {
  sizes(op, { B, T, C, OC });
  checkQuantWeight(op, q instanceof Int8Array ? 8 : 4, q, scales, C, OC);
  return B * T;
}

/** Rows [o0, o1) of a Q8 matrix, dequantized into dst[(o − o0)·C + c] (also the model's dequantizeQ8). */
export function dequantRowsQ8(dst: Float32Array, q: Int8Array, scales: Uint16Array, C: number, o0: number, o1: number): void {
  const nb = C / QBLOCK;
  for (let o = o0; o < o1; o++) {
    const d = (o - o0) * C;
    for (let j = 0; j < nb; j++) {
      const s = f16ToF32(scales[o * nb + j]!);
      const src = o * C + j * QBLOCK;
      const dd = d + j * QBLOCK;
      for (let i = 0; i < QBLOCK; i++) dst[dd + i] = q[src + i]! * s;
    }
  }
}

/** Rows [o0, o1) of a Q4 matrix, dequantized into dst[(o − o0)·C + c] (also the model's dequantizeQ4). */
export function dequantRowsQ4(dst: Float32Array, q: Uint8Array, scales: Uint16Array, C: number, o0: number, o1: number): void {
  const nb = C / QBLOCK;
  for (let o = o0; o < o1; o++) {
    const d = (o - o0) * C;
    for (let j = 0; j < nb; j++) {
      const s = f16ToF32(scales[o * nb + j]!);
      const byte0 = (o * C + j * QBLOCK) >> 1; // o·C is even (C is a multiple of 32)
      const dd = d + j * QBLOCK;
      for (let i = 0; i < QBLOCK / 2; i++) {
        const by = q[byte0 + i]!;
        dst[dd + 2 * i] = ((by & 15) - 8) * s;
        dst[dd + 2 * i + 1] = ((by >> 4) - 8) * s;
      }
    }
  }
}

/** The dense f32 matrix [OC × C] of a Q8 weight (for tests and for the input gradient). */
export function dequantizeQ8(q: Int8Array, scales: Uint16Array, OC: number, C: number, out: Float32Array = new Float32Array(OC * C)): Float32Array {
  sizes('dequantizeQ8', { OC, C });
  checkQuantWeight('dequantizeQ8', 8, q, scales, C, OC);
  need('dequantizeQ8', 'out', out, OC * C);
  dequantRowsQ8(out, q, scales, C, 0, OC);
  return out;
}

/** The dense f32 matrix [OC × C] of a Q4 weight (for tests and for the input gradient). */
export function dequantizeQ4(q: Uint8Array, scales: Uint16Array, OC: number, C: number, out: Float32Array = new Float32Array(OC * C)): Float32Array {
  sizes('dequantizeQ4', { OC, C });
  checkQuantWeight('dequantizeQ4', 4, q, scales, C, OC);
  need('dequantizeQ4', 'out', out, OC * C);
  dequantRowsQ4(out, q, scales, C, 0, OC);
  return out;
}

let scratch = new Float32Array(0);
function scratchOf(n: number): Float32Array {
  if (scratch.length < n) scratch = new Float32Array(n);
  return scratch;
}

type DequantRows<Q> = (dst: Float32Array, q: Q, scales: Uint16Array, C: number, o0: number, o1: number) => void;

/** out = inp · Wᵀ, dequantizing a block of rows of W at a time. */
function forwardQ<Q extends Int8Array | Uint8Array>(op: string, rows: DequantRows<Q>, out: FloatArray, inp: FloatArray, q: Q, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  const N = checkQuantized(op, q, scales, B, T, C, OC);
  need(op, 'out', out, N * OC);
  need(op, 'inp', inp, N * C);
  const OB = ocBlock(C);
  const w = scratchOf(OB * C);
  for (let o0 = 0; o0 < OC; o0 += OB) {
    const o1 = Math.min(OC, o0 + OB);
    rows(w, q, scales, C, o0, o1);
    matmulForwardRange(out, inp, w, 0, N, C, OC, o0, o1);
  }
}

/** dinp += dout · W, on the whole of W dequantized. */
function backwardInputQ<Q extends Int8Array | Uint8Array>(op: string, rows: DequantRows<Q>, dinp: FloatArray, dout: FloatArray, q: Q, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  const N = checkQuantized(op, q, scales, B, T, C, OC);
  need(op, 'dinp', dinp, N * C);
  need(op, 'dout', dout, N * OC);
  const w = scratchOf(OC * C);
  rows(w, q, scales, C, 0, OC);
  matmulBackwardInputRows(dinp, dout, w, N, C, OC);
}

/** out = inp · Wᵀ for a Q8 weight (header). Overwrites `out`. */
export function matmulForwardQ8(out: FloatArray, inp: FloatArray, q: Int8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  forwardQ('matmulForwardQ8', dequantRowsQ8, out, inp, q, scales, B, T, C, OC);
}

/** out = inp · Wᵀ for a Q4 weight (header). Overwrites `out`. */
export function matmulForwardQ4(out: FloatArray, inp: FloatArray, q: Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  forwardQ('matmulForwardQ4', dequantRowsQ4, out, inp, q, scales, B, T, C, OC);
}

/** dinp += dout · W for a Q8 weight. Accumulates. */
export function matmulBackwardInputQ8(dinp: FloatArray, dout: FloatArray, q: Int8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  backwardInputQ('matmulBackwardInputQ8', dequantRowsQ8, dinp, dout, q, scales, B, T, C, OC);
}

/** dinp += dout · W for a Q4 weight. Accumulates. */
export function matmulBackwardInputQ4(dinp: FloatArray, dout: FloatArray, q: Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  backwardInputQ('matmulBackwardInputQ4', dequantRowsQ4, dinp, dout, q, scales, B, T, C, OC);
}

/**
 * Rows of x [N × C] quantized per block of 32 steps for the activation-quantized product (the twin
 * of wasm/kernels.ts quantActs, bit for bit): d = f32(max|x| / 127), q = nearest-even(f32(x · f32(1/d)))
 * clamped to [−127, 127] (q = 0 where d = 0 or x · (1/d) is NaN; the clamp acts only where 1/d
 * overflows, in a block of subnormals). q is returned in k order; d per block in dx[n·C/32 + j].
 */
export function quantizeActs(x: ArrayLike<number>, N: number, C: number): { xq: Int16Array; dx: Float32Array } {
  const nb = C / QBLOCK;
  const xq = new Int16Array(N * C);
  const dx = new Float32Array(N * nb);
  for (let b = 0; b < N * nb; b++) {
    const p = b * QBLOCK;
    let amax = 0;
    for (let i = 0; i < QBLOCK; i++) amax = Math.max(amax, Math.abs(x[p + i]!));
    const d = Math.fround(amax / 127);
    const id = d === 0 ? 0 : Math.fround(1 / d);
    dx[b] = d;
    for (let i = 0; i < QBLOCK; i++) {
      const v = Math.fround(x[p + i]! * id);
      const r = Math.round(v);
      const e = r - v === 0.5 && r % 2 !== 0 ? r - 1 : r; // ties to even
      xq[p + i] = Number.isNaN(e) ? 0 : Math.max(-127, Math.min(127, e));
    }
  }
  return { xq, dx };
}

/** Weight [o, c] of a Q8 (Int8Array) or Q4 (Uint8Array) matrix as its integer (nibble − 8 for Q4). */
function weightInt(q: Int8Array | Uint8Array, C: number, o: number, c: number): number {
  if (q instanceof Int8Array) return q[o * C + c]!;
  const by = q[(o * C + c) >> 1]!;
  return (c & 1) === 0 ? (by & 15) - 8 : (by >> 4) - 8;
}

/**
 * out = inp · Wᵀ with inp quantized to int8 per block (quantizeActs): per output, the exact integer
 * sums S_j = Σ q_w·q_x of its blocks, then out[n, o] = Σ_j f32(S_j) · f32(s_w · d_x) summed in f32
 * in ascending j — the reference for wasm/kernels.ts linQ8a / linQ4a, bit for bit. Not equal to
 * matmulForwardQ8 / Q4: the activations' rounding is bounded in docs/kernels.md "int8 activations".
 * Overwrites `out`.
 */
export function matmulForwardQAct(op: string, out: FloatArray, inp: FloatArray, q: Int8Array | Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  const N = checkQuantized(op, q, scales, B, T, C, OC);
  need(op, 'out', out, N * OC);
  need(op, 'inp', inp, N * C);
  const nb = C / QBLOCK;
  const { xq, dx } = quantizeActs(inp, N, C);
  for (let n = 0; n < N; n++) {
    for (let o = 0; o < OC; o++) {
      let acc = 0;
      for (let j = 0; j < nb; j++) {
        let s = 0;
        for (let i = 0; i < QBLOCK; i++) s += weightInt(q, C, o, j * QBLOCK + i) * xq[n * C + j * QBLOCK + i]!;
        acc = Math.fround(acc + Math.fround(s * Math.fround(f16ToF32(scales[o * nb + j]!) * dx[n * nb + j]!)));
      }
      out[n * OC + o] = acc;
    }
  }
}

/** The single-weight products matmulForwardMany is made of. */
type Singles<X extends HostTensors | HostTensors64> = Pick<Backend<X>, 'matmulForward' | 'matmulForwardQ8' | 'matmulForwardQ4' | 'matmulForwardQ8Act' | 'matmulForwardQ4Act'>;

/**
 * matmulForwardMany (types.ts) as one single-weight product per weight, in order: the op of the
 * reference backends and the twin of the CPU backend's one-job version (simd.ts), which must give
 * the same bits.
 */
export function manyBySingles<X extends HostTensors | HostTensors64>(be: Singles<X>): NonNullable<Backend<X>['matmulForwardMany']> {
  return (outs, inp, weights, B, T, C, OCs, activations) => {
    checkMany(outs, inp, weights, B, T, C, OCs, activations);
    weights.forEach((w: StoredMat<X>, i) => {
      const out = outs[i]!;
      const OC = OCs[i]!;
      if (w.kind === 'f32') be.matmulForward(out, inp, w.w, B, T, C, OC);
      else if (w.kind === 'q8') (activations === 'int8' ? be.matmulForwardQ8Act! : be.matmulForwardQ8)(out, inp, w.q, w.scales, B, T, C, OC);
      else (activations === 'int8' ? be.matmulForwardQ4Act! : be.matmulForwardQ4)(out, inp, w.q, w.scales, B, T, C, OC);
    });
  };
}
