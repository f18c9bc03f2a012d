/**
 * WebGPU forward product for a few rows of inp (decoding: one row per prompt) — a thin wrapper over
 * shaders/matvec.wgsl, which the dense and quantized forwards (matmul.ts, matmul_q.ts) take for
 * up to MATVEC_MAX_ROWS rows. Twins: matmulForward (src/backend/cpu/matmul.ts) and
 * matmulForwardQ8 / Q4 (src/backend/cpu/quant.ts); sizes checked by the callers.
 *
 * Not here: many rows (the tiled GEMMs), gradients.
 */
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, u32 } from './kernel';

/** Most rows of inp the matrix–vector kernel takes (its register block). */
export const MATVEC_MAX_ROWS = 4;
/** Output columns per workgroup (matvec.wgsl ROWS). */
const ROWS = 4;
const WG = 64;
const kernel = (bits: 32 | 8 | 4) => defineKernel({ shaders: ['qweight', 'matvec'], bindings: ['read', 'read', 'read', 'rw'], overrides: { WG, QBITS: bits } });

/**
 * out (+)= inp · Wᵀ for N ≤ MATVEC_MAX_ROWS rows: `w` the f32 weight (bits 32, `scales` unused) or
 * a Q8 / Q4 weight with its scales. acc adds into out, else overwrites.
 */
export function matvecForward(ctx: GpuContext, bits: 32 | 8 | 4, out: GpuTensor<'f32'>, inp: GpuTensor<'f32'>, w: GpuTensor<'f32'> | GpuTensor<'i8'> | GpuTensor<'u8'>, scales: GpuTensor<'u16'> | null, N: number, C: number, OC: number, acc: boolean): void {
  if (N > MATVEC_MAX_ROWS) throw new RangeError(`matvecForward: ${N} rows, at most ${MATVEC_MAX_ROWS}`);
  if (N === 0 || OC === 0) return;
  const groups = Math.ceil(OC / ROWS);
  ctx.run(kernel(bits), [u32(N), u32(C), u32(OC), u32(acc ? 1 : 0), u32(groups), u32(0), u32(0), u32(0)], [inp, w, scales ?? ctx.dummy, out], groups);
}
