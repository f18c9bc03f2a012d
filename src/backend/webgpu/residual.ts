/**
 * WebGPU residual (scaled) add — thin wrappers over shaders/residual.wgsl and
 * shaders/residual_backward.wgsl; twins: residualForward / residualBackward in
 * src/backend/cpu/residual.ts, same arguments after the context (forward overwrites, backward
 * accumulates, null skips a gradient). `out` may alias `a` or `b` (the model adds in place): the
 * aliased input is then copied first, since WebGPU cannot bind one buffer as both read and
 * read_write.
 *
 * Not here: broadcasting.
 */
import { checkResidualBackward, checkResidualForward } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, f32, u32 } from './kernel';

const WG = 64;
const fwd = defineKernel({ shaders: 'residual', bindings: ['rw', 'read', 'read'], overrides: { WG } });
const bwd = (hasA: boolean, hasB: boolean) =>
  defineKernel({ shaders: 'residual_backward', bindings: ['rw', 'rw', 'read'], overrides: { WG, HAS_A: hasA ? 1 : 0, HAS_B: hasB ? 1 : 0 } });

/** out = a + scale·b. Overwrites `out` (which may alias `a` or `b`). */
export function residualForward(ctx: GpuContext, out: GpuTensor<'f32'>, a: GpuTensor<'f32'>, b: GpuTensor<'f32'>, N: number, scale = 1): void {
  checkResidualForward(out, a, b, N);
  if (N === 0) return;
  const sa = a.buffer === out.buffer ? ctx.clone(a) : a;
  const sb = b.buffer === out.buffer ? (b.buffer === a.buffer ? sa : ctx.clone(b)) : b;
  ctx.run(fwd, [u32(N), f32(scale)], [out, sa, sb], Math.ceil(N / WG));
  if (sa !== a) ctx.dispose(sa);
  if (sb !== b && sb !== sa) ctx.dispose(sb);
}

/** da += dout, db += scale·dout (null skips one). Accumulates. */
export function residualBackward(ctx: GpuContext, da: GpuTensor<'f32'> | null, db: GpuTensor<'f32'> | null, dout: GpuTensor<'f32'>, N: number, scale = 1): void {
  checkResidualBackward(da, db, dout, N);
  if (N === 0 || (da === null && db === null)) return;
  ctx.run(bwd(da !== null, db !== null), [u32(N), f32(scale)], [da ?? ctx.dummy, db ?? ctx.dummy, dout], Math.ceil(N / WG));
}
