/**
 * WebGPU SwiGLU MLP — thin wrappers over shaders/swiglu.wgsl and shaders/swiglu_backward.wgsl
 * (the elementwise gate), and mlpForward / mlpBackward composed from them and the dense matmul
 * (matmul.ts), in the CPU's order. Twins: swigluForward, swigluBackward, mlpForward, mlpBackward
 * in src/backend/cpu/mlp.ts, same arguments after the context (forwards overwrite, backwards
 * accumulate; mlpBackward zeroes its scratch dh, da, db first — all of each tensor, where the
 * CPU zeroes the first N·H elements).
 *
 * Not here: LoRA on the projections (src/model composes it), a fused MLP kernel.
 */
import { checkSwigluBackward, checkSwigluForward, needAll, sizes } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, u32 } from './kernel';
import { matmulBackward, matmulForward } from './matmul';

const WG = 64;
const fwd = defineKernel({ shaders: 'swiglu', bindings: ['rw', 'read', 'read'], overrides: { WG } });
const bwd = defineKernel({ shaders: 'swiglu_backward', bindings: ['rw', 'rw', 'read', 'read', 'read'], overrides: { WG } });

/** out[i] = silu(a[i]) · b[i] over N elements. Overwrites `out` (which may alias `a` or `b`). */
export function swigluForward(ctx: GpuContext, out: GpuTensor<'f32'>, a: GpuTensor<'f32'>, b: GpuTensor<'f32'>, N: number): void {
  checkSwigluForward(out, a, b, N);
  if (N === 0) return;
  const sa = a.buffer === out.buffer ? ctx.clone(a) : a;
  const sb = b.buffer === out.buffer ? (b.buffer === a.buffer ? sa : ctx.clone(b)) : b;
  ctx.run(fwd, [u32(N)], [out, sa, sb], Math.ceil(N / WG));
  if (sa !== a) ctx.dispose(sa);
  if (sb !== b && sb !== sa) ctx.dispose(sb);
}

/** da += dout·b·silu'(a), db += dout·silu(a). Accumulates. */
export function swigluBackward(ctx: GpuContext, da: GpuTensor<'f32'>, db: GpuTensor<'f32'>, dout: GpuTensor<'f32'>, a: GpuTensor<'f32'>, b: GpuTensor<'f32'>, N: number): void {
  checkSwigluBackward(da, db, dout, a, b, N);
  if (N === 0) return;
  ctx.run(bwd, [u32(N)], [da, db, dout, a, b], Math.ceil(N / WG));
}

/** out = (silu(x W1ᵀ) ⊙ x W3ᵀ) W2ᵀ; saves a, b, h. Overwrites out, a, b, h. */
export function mlpForward(
  ctx: GpuContext,
  out: GpuTensor<'f32'>,
  a: GpuTensor<'f32'>,
  b: GpuTensor<'f32'>,
  h: GpuTensor<'f32'>,
  inp: GpuTensor<'f32'>,
  w1: GpuTensor<'f32'>,
  w3: GpuTensor<'f32'>,
  w2: GpuTensor<'f32'>,
  B: number,
  T: number,
  C: number,
  H: number,
): void {
  sizes('mlpForward', { B, T, C, H });
  matmulForward(ctx, a, inp, w1, B, T, C, H);
  matmulForward(ctx, b, inp, w3, B, T, C, H);
  swigluForward(ctx, h, a, b, B * T * H);
  matmulForward(ctx, out, h, w2, B, T, H, C);
}

/**
 * Backward of mlpForward. Accumulates into dinp and the weight gradients (null for frozen
 * weights); dh, da, db [N × H] are scratch, zeroed then overwritten.
 */
export function mlpBackward(
  ctx: GpuContext,
  dinp: GpuTensor<'f32'>,
  dw1: GpuTensor<'f32'> | null,
  dw3: GpuTensor<'f32'> | null,
  dw2: GpuTensor<'f32'> | null,
  dh: GpuTensor<'f32'>,
  da: GpuTensor<'f32'>,
  db: GpuTensor<'f32'>,
  dout: GpuTensor<'f32'>,
  inp: GpuTensor<'f32'>,
  a: GpuTensor<'f32'>,
  b: GpuTensor<'f32'>,
  h: GpuTensor<'f32'>,
  w1: GpuTensor<'f32'>,
  w3: GpuTensor<'f32'>,
  w2: GpuTensor<'f32'>,
  B: number,
  T: number,
  C: number,
  H: number,
): void {
  const op = 'mlpBackward';
  sizes(op, { B, T, C, H });
  needAll(op, { dh, da, db }, B * T * H);
  ctx.fill(dh, 0);
  ctx.fill(da, 0);
  ctx.fill(db, 0);
  matmulBackward(ctx, dh, dw2, dout, h, w2, B, T, H, C);
  swigluBackward(ctx, da, db, dh, a, b, B * T * H);
  matmulBackward(ctx, dinp, dw1, da, inp, w1, B, T, C, H);
  matmulBackward(ctx, dinp, dw3, db, inp, w3, B, T, C, H);
}
