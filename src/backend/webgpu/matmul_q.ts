/**
 * WebGPU matmul from quantized weights — thin wrappers over shaders/matmul_q.wgsl (QBITS 8 or
 * 4). Twins: matmulForwardQ8/Q4 and matmulBackwardInputQ8/Q4 in src/backend/cpu/quant.ts, same
 * arguments after the context; the layouts are those documented there (int8 or int4 blocks of
 * 32 along C, one f16 scale per block); C must be a multiple of 32. On the GPU the i8 / u8 / u16
 * tensors are packed little-endian in u32 words (kernel.ts).
 *
 * The forward of up to MATVEC_MAX_ROWS rows (a decoding step) runs the matrix–vector kernel
 * (matvec.ts).
 *
 * Not here: gradients for the quantized weights (a frozen base), quantizing (src/model).
 */
import { checkQuantWeight, needAll, sizes } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, u32 } from './kernel';
import { MATVEC_MAX_ROWS, matvecForward } from './matvec';

const TILE = 16;
const kernel = (bits: 8 | 4) => defineKernel({ shaders: ['qweight', 'matmul_q'], bindings: ['read', 'read', 'read', 'rw'], overrides: { TILE, QBITS: bits } });

function qgemm(
  ctx: GpuContext,
  op: string,
  bits: 8 | 4,
  out: GpuTensor<'f32'>,
  a: GpuTensor<'f32'>,
  q: GpuTensor<'i8'> | GpuTensor<'u8'>,
  scales: GpuTensor<'u16'>,
  B: number,
  T: number,
  C: number,
  OC: number,
  backward: boolean,
): void {
  sizes(op, { B, T, C, OC });
  checkQuantWeight(op, bits, q, scales, C, OC);
  const N = B * T;
  // forward: M = N, Pn = OC, K = C, A = inp [N × C];  input gradient: M = N, Pn = C, K = OC, A = dout [N × OC].
  const [Pn, K] = backward ? [C, OC] : [OC, C];
  needAll(op, { a }, N * K);
  needAll(op, { out }, N * Pn);
  if (N === 0 || Pn === 0) return;
  if (!backward && N <= MATVEC_MAX_ROWS) return matvecForward(ctx, bits, out, a, q, scales, N, C, OC, false);
  const tilesN = Math.ceil(Pn / TILE);
  const tiles = Math.ceil(N / TILE) * tilesN;
  ctx.run(
    kernel(bits),
    [u32(N), u32(Pn), u32(K), u32(K), u32(1), u32(backward ? 1 : 0), u32(C), u32(backward ? 1 : 0), u32(tilesN), u32(tiles)],
    [a, q, scales, out],
    tiles,
  );
}

/** out = inp · Wᵀ for a Q8 weight. Overwrites `out`. */
export function matmulForwardQ8(ctx: GpuContext, out: GpuTensor<'f32'>, inp: GpuTensor<'f32'>, q: GpuTensor<'i8'>, scales: GpuTensor<'u16'>, B: number, T: number, C: number, OC: number): void {
  qgemm(ctx, 'matmulForwardQ8', 8, out, inp, q, scales, B, T, C, OC, false);
}

/** out = inp · Wᵀ for a Q4 weight. Overwrites `out`. */
export function matmulForwardQ4(ctx: GpuContext, out: GpuTensor<'f32'>, inp: GpuTensor<'f32'>, q: GpuTensor<'u8'>, scales: GpuTensor<'u16'>, B: number, T: number, C: number, OC: number): void {
  qgemm(ctx, 'matmulForwardQ4', 4, out, inp, q, scales, B, T, C, OC, false);
}

/** dinp += dout · W for a Q8 weight. Accumulates. */
export function matmulBackwardInputQ8(ctx: GpuContext, dinp: GpuTensor<'f32'>, dout: GpuTensor<'f32'>, q: GpuTensor<'i8'>, scales: GpuTensor<'u16'>, B: number, T: number, C: number, OC: number): void {
  qgemm(ctx, 'matmulBackwardInputQ8', 8, dinp, dout, q, scales, B, T, C, OC, true);
}

/** dinp += dout · W for a Q4 weight. Accumulates. */
export function matmulBackwardInputQ4(ctx: GpuContext, dinp: GpuTensor<'f32'>, dout: GpuTensor<'f32'>, q: GpuTensor<'u8'>, scales: GpuTensor<'u16'>, B: number, T: number, C: number, OC: number): void {
  qgemm(ctx, 'matmulBackwardInputQ4', 4, dinp, dout, q, scales, B, T, C, OC, true);
}
