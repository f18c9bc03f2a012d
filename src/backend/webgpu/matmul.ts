/**
 * WebGPU dense matmul (weights [OC × C], out = inp · Wᵀ) — thin wrappers over one strided GEMM
 * in three numbered variants (shaders/matmul_v1.wgsl naive, matmul_v2.wgsl tiled in workgroup
 * memory, matmul_v3.wgsl tiled + 4×4 register blocks with vec4). Twins: matmulForward /
 * matmulBackward in src/backend/cpu/matmul.ts — same arguments (after the context), forward
 * overwrites, backward accumulates, null skips a gradient:
 *   out  = inp · Wᵀ:     M = N,  Pn = OC, K = C,  A = inp  (sai C,  sak 1),  B(c,o) = W[o,c] (sbk 1, sbj C)
 *   dinp += dout · W:    M = N,  Pn = C,  K = OC, A = dout (sai OC, sak 1),  B(o,c) = W[o,c] (sbk C, sbj 1)
 *   dW  += doutᵀ · inp:  M = OC, Pn = C,  K = N,  A(o,n) = dout[n,o] (sai 1, sak OC), B(n,c) = inp (sbk C, sbj 1)
 * Every variant passes the same test (tests/webgpu/matmul.test.ts); `MATMUL_DEFAULT` is the one
 * the backend uses. `matmulResidualForward` (out = res + inp · Wᵀ) folds the residual add that
 * follows a block's output projection into the GEMM: res is copied into out (a buffer copy, not a
 * dispatch) and the GEMM's accumulate epilogue adds the dot products — one dispatch instead of
 * two, and the bits of matmulForward then residualForward (both round res + dot once).
 *
 * Not here: quantized weights (matmul_q.ts), bias, batched matmul.
 */
import { needLen, sizes } from './check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, u32 } from './kernel';

export type MatmulVariant = 'v1' | 'v2' | 'v3';
export const MATMUL_VARIANTS: readonly MatmulVariant[] = ['v1', 'v2', 'v3'];
export const MATMUL_DEFAULT: MatmulVariant = 'v3';

const WG = 64;
const TILE = 16;
const kernels = {
  v1: defineKernel({ shaders: 'matmul_v1', bindings: ['read', 'read', 'rw'], overrides: { WG } }),
  v2: defineKernel({ shaders: 'matmul_v2', bindings: ['read', 'read', 'rw'], overrides: { TILE } }),
  v3: defineKernel({ shaders: 'matmul_v3', bindings: ['read', 'read', 'rw'], overrides: { TILE } }),
} as const;

/** Output rows/columns covered by one workgroup of a tiled variant. */
function block(v: MatmulVariant): number {
  return v === 'v3' ? 4 * TILE : TILE;
}

/** The strided GEMM of the header: out[i, j] (+)= Σ_k A(i, k) B(k, j). */
export function gemm(
  ctx: GpuContext,
  variant: MatmulVariant,
  out: GpuTensor<'f32'>,
  a: GpuTensor<'f32'>,
  b: GpuTensor<'f32'>,
  M: number,
  Pn: number,
  K: number,
  s: { sai: number; sak: number; sbk: number; sbj: number },
  accumulate: boolean,
): void {
  if (M === 0 || Pn === 0) return;
  const base = [u32(M), u32(Pn), u32(K), u32(s.sai), u32(s.sak), u32(s.sbk), u32(s.sbj), u32(accumulate ? 1 : 0)];
  if (variant === 'v1') {
    ctx.run(kernels.v1, base, [a, b, out], Math.ceil((M * Pn) / WG));
    return;
  }
  const bs = block(variant);
  const tilesN = Math.ceil(Pn / bs);
  const tiles = Math.ceil(M / bs) * tilesN;
  ctx.run(kernels[variant], [...base, u32(tilesN), u32(tiles)], [a, b, out], tiles);
}

/** out = inp · Wᵀ. Overwrites `out`. */
export function matmulForward(ctx: GpuContext, out: GpuTensor<'f32'>, inp: GpuTensor<'f32'>, weight: GpuTensor<'f32'>, B: number, T: number, C: number, OC: number, variant: MatmulVariant = MATMUL_DEFAULT): void {
  sizes('matmulForward', { B, T, C, OC });
  const N = B * T;
  needLen('matmulForward', { out }, N * OC);
  needLen('matmulForward', { inp }, N * C);
  needLen('matmulForward', { weight }, OC * C);
  gemm(ctx, variant, out, inp, weight, N, OC, C, { sai: C, sak: 1, sbk: 1, sbj: C }, false);
}

/** dinp += dout · W and dW += doutᵀ · inp; null skips one. Accumulates. */
export function matmulBackward(
  ctx: GpuContext,
  dinp: GpuTensor<'f32'> | null,
  dweight: GpuTensor<'f32'> | null,
  dout: GpuTensor<'f32'>,
  inp: GpuTensor<'f32'>,
  weight: GpuTensor<'f32'>,
  B: number,
  T: number,
  C: number,
  OC: number,
  variant: MatmulVariant = MATMUL_DEFAULT,
): void {
  sizes('matmulBackward', { B, T, C, OC });
  const N = B * T;
  needLen('matmulBackward', { dout }, N * OC);
  if (dinp !== null) {
    needLen('matmulBackward', { dinp }, N * C);
    needLen('matmulBackward', { weight }, OC * C);
    gemm(ctx, variant, dinp, dout, weight, N, C, OC, { sai: OC, sak: 1, sbk: C, sbj: 1 }, true);
  }
  if (dweight !== null) {
    needLen('matmulBackward', { dweight }, OC * C);
    needLen('matmulBackward', { inp }, N * C);
    gemm(ctx, variant, dweight, dout, inp, OC, C, N, { sai: 1, sak: OC, sbk: C, sbj: 1 }, true);
  }
}

/** out = res + inp · Wᵀ (header: res copied into out, then the accumulating GEMM). Overwrites `out`, which must not be `res`. */
export function matmulResidualForward(ctx: GpuContext, out: GpuTensor<'f32'>, inp: GpuTensor<'f32'>, weight: GpuTensor<'f32'>, res: GpuTensor<'f32'>, B: number, T: number, C: number, OC: number, variant: MatmulVariant = MATMUL_DEFAULT): void {
  sizes('matmulResidualForward', { B, T, C, OC });
  const N = B * T;
  needLen('matmulResidualForward', { out, res }, N * OC);
  needLen('matmulResidualForward', { inp }, N * C);
  needLen('matmulResidualForward', { weight }, OC * C);
  if (out.buffer === res.buffer) throw new RangeError('matmulResidualForward: out and res share a buffer (the copy of res into out would overlap)');
  ctx.copy(res, out, N * OC);
  gemm(ctx, variant, out, inp, weight, N, OC, C, { sai: C, sak: 1, sbk: 1, sbj: C }, true);
}
