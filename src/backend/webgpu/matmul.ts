/**
 * WebGPU dense matmul (weights [OC × C], out = inp · Wᵀ): thin wrappers over one strided GEMM in
 * three numbered variants (matmul_v1.wgsl naive, v2 tiled in workgroup memory, v3 tiled with 4×4
 * register blocks and vec4; all pass tests/webgpu/matmul.test.ts, `MATMUL_DEFAULT` is the
 * backend's). Twins: matmulForward / matmulBackward in src/backend/cpu/matmul.ts, same arguments
 * after the context. The three products as one GEMM C[M × Pn] (+)= A[M × K] · B[K × Pn]:
 *   out  = inp · Wᵀ:     M = N,  Pn = OC, K = C,  A = inp  (sai C,  sak 1),  B(c,o) = W[o,c] (sbk 1, sbj C)
 *   dinp += dout · W:    M = N,  Pn = C,  K = OC, A = dout (sai OC, sak 1),  B(o,c) = W[o,c] (sbk C, sbj 1)
 *   dW  += doutᵀ · inp:  M = OC, Pn = C,  K = N,  A(o,n) = dout[n,o] (sai 1, sak OC), B(n,c) = inp (sbk C, sbj 1)
 *
 * The forward of up to MATVEC_MAX_ROWS rows (a decoding step) on the default variant runs the
 * matrix–vector kernel instead (matvec.ts).
 *
 * Not here: quantized weights (matmul_q.ts), bias, batched matmul.
 */
import { checkMatmulBackward, checkMatmulForward, needAll, sizes } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, u32 } from './kernel';
import { MATVEC_MAX_ROWS, matvecForward } from './matvec';

export type MatmulVariant = 'v1' | 'v2' | 'v3';
export const MATMUL_VARIANTS: readonly MatmulVariant[] = ['v1', 'v2', 'v3'];
export const MATMUL_DEFAULT: MatmulVariant = 'v3';

const WG = 64;
const TILE = 16;
const kernels = {
  v1: defineKernel({ shaders: 'matmul_v1', bindings: ['read', 'read', 'rw'], overrides: { WG } }),
  v2: defineKernel({ shaders: 'matmul_v2', bindings: ['read', 'read', 'rw'], overrides: { TILE } }),
  v3: defineKernel({ shaders: 'matmul_v3', bindings: ['read', 'read', 'rw', 'read', 'rw'], overrides: { TILE } }),
} as const;

/** Output rows/columns covered by one workgroup of a tiled variant. */
function block(v: MatmulVariant): number {
  return v === 'v3' ? 4 * TILE : TILE;
}

/** A GEMM's strides (header). */
type Strides = { sai: number; sak: number; sbk: number; sbj: number };

/** v3's uniform block of one GEMM (12 words), and its tile count. */
function v3Params(M: number, Pn: number, K: number, s: Strides, accumulate: boolean): { ps: ReturnType<typeof u32>[]; tiles: number } {
  const bs = block('v3');
  const tilesN = Math.ceil(Pn / bs);
  const tiles = M === 0 || Pn === 0 ? 0 : Math.ceil(M / bs) * tilesN;
  return { ps: [u32(M), u32(Pn), u32(K), u32(s.sai), u32(s.sak), u32(s.sbk), u32(s.sbj), u32(accumulate ? 1 : 0), u32(tilesN), u32(tiles), u32(0), u32(0)], tiles };
}

/**
 * Two accumulating GEMMs sharing A in ONE v3 dispatch: out0 += A·B0 and out1 += A·B1 (each with
 * its own sizes and strides; shaders/matmul_v3.wgsl gives g1 the workgroups past g0's tiles).
 */
function gemmPairV3(ctx: GpuContext, a: GpuTensor<'f32'>, out0: GpuTensor<'f32'>, b0: GpuTensor<'f32'>, d0: [number, number, number, Strides], out1: GpuTensor<'f32'>, b1: GpuTensor<'f32'>, d1: [number, number, number, Strides]): void {
  const g0 = v3Params(...d0, true);
  const g1 = v3Params(...d1, true);
  ctx.run(kernels.v3, [...g0.ps, ...g1.ps], [a, b0, out0, b1, out1], g0.tiles + g1.tiles);
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
  s: Strides,
  accumulate: boolean,
): void {
  if (M === 0 || Pn === 0) return;
  if (variant === 'v3') {
    // One GEMM: g1 has no tiles (b1 = b read again, out1 the context's dummy: never touched).
    const g0 = v3Params(M, Pn, K, s, accumulate);
    const none = v3Params(0, 0, 0, s, false);
    ctx.run(kernels.v3, [...g0.ps, ...none.ps], [a, b, out, b, ctx.dummy], g0.tiles);
    return;
  }
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
  const N = checkMatmulForward(out, inp, weight, B, T, C, OC);
  if (N <= MATVEC_MAX_ROWS && variant === MATMUL_DEFAULT) return matvecForward(ctx, 32, out, inp, weight, null, N, C, OC, false);
  gemm(ctx, variant, out, inp, weight, N, OC, C, { sai: C, sak: 1, sbk: 1, sbj: C }, false);
}

/** dinp += dout · W and dW += doutᵀ · inp; null skips one. Accumulates. On v3 both are ONE dispatch (they share A = dout). */
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
  const N = checkMatmulBackward(dinp, dweight, dout, inp, weight, B, T, C, OC);
  const sIn: Strides = { sai: OC, sak: 1, sbk: C, sbj: 1 };
  const sW: Strides = { sai: 1, sak: OC, sbk: C, sbj: 1 };
  if (variant === 'v3' && dinp !== null && dweight !== null && dinp.buffer !== dweight.buffer && N > 0 && C > 0 && OC > 0) {
    // Both gradients in one dispatch (they share A = dout).
    gemmPairV3(ctx, dout, dinp, weight, [N, C, OC, sIn], dweight, inp, [OC, C, N, sW]);
    return;
  }
  if (dinp !== null) {
    gemm(ctx, variant, dinp, dout, weight, N, C, OC, sIn, true);
  }
  if (dweight !== null) {
    gemm(ctx, variant, dweight, dout, inp, OC, C, N, sW, true);
  }
}

/**
 * out = res + inp · Wᵀ: res is copied into out (a buffer copy, not a dispatch) and the GEMM's
 * accumulating epilogue adds the dots — one dispatch, with the bits of matmulForward then
 * residualForward (both round res + dot once). Overwrites `out`, which must not be `res`.
 */
export function matmulResidualForward(ctx: GpuContext, out: GpuTensor<'f32'>, inp: GpuTensor<'f32'>, weight: GpuTensor<'f32'>, res: GpuTensor<'f32'>, B: number, T: number, C: number, OC: number, variant: MatmulVariant = MATMUL_DEFAULT): void {
  sizes('matmulResidualForward', { B, T, C, OC });
  const N = B * T;
  needAll('matmulResidualForward', { out, res }, N * OC);
  needAll('matmulResidualForward', { inp }, N * C);
  needAll('matmulResidualForward', { weight }, OC * C);
  if (out.buffer === res.buffer) throw new RangeError('matmulResidualForward: out and res share a buffer (the copy of res into out would overlap)');
  ctx.copy(res, out, N * OC);
  if (N <= MATVEC_MAX_ROWS && variant === MATMUL_DEFAULT) return matvecForward(ctx, 32, out, inp, weight, null, N, C, OC, true);
  gemm(ctx, variant, out, inp, weight, N, OC, C, { sai: C, sak: 1, sbk: 1, sbj: C }, true);
}
