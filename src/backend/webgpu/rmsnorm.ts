/**
 * WebGPU RMSNorm (forward and backward) — thin wrappers over shaders/rmsnorm.wgsl and
 * shaders/rmsnorm_backward.wgsl (one dispatch for both gradients: dinp a workgroup per row, then
 * dweight a thread per column summing rows in order);
 * twins: rmsnormForward / rmsnormBackward in src/backend/cpu/rmsnorm.ts, same arguments after the
 * context (forward overwrites out and rstd, backward accumulates into dinp and dweight).
 *
 * Not here: the maths (the shaders), LayerNorm.
 */
import { checkRmsnormBackward, checkRmsnormForward } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, f32, u32 } from './kernel';
import { ROW_WG } from './logsoftmax';

const fwd = defineKernel({ shaders: ['reduce', 'rmsnorm'], bindings: ['rw', 'rw', 'read', 'read'], overrides: { WG: ROW_WG } });
const bwd = defineKernel({ shaders: ['reduce', 'rmsnorm_backward'], bindings: ['rw', 'read', 'read', 'read', 'read', 'rw'], overrides: { WG: ROW_WG } });

/** y = w ⊙ x · rstd per row; saves rstd [B·T]. Overwrites `out` and `rstd`. */
export function rmsnormForward(
  ctx: GpuContext,
  out: GpuTensor<'f32'>,
  rstd: GpuTensor<'f32'>,
  inp: GpuTensor<'f32'>,
  weight: GpuTensor<'f32'>,
  B: number,
  T: number,
  C: number,
  eps = 1e-5,
): void {
  checkRmsnormForward(out, rstd, inp, weight, B, T, C);
  const N = B * T;
  const src = out.buffer === inp.buffer ? ctx.clone(inp) : inp; // in place: read a copy
  ctx.run(fwd, [u32(N), u32(C), f32(eps)], [out, rstd, src, weight], N);
  if (src !== inp) ctx.dispose(src);
}

/** dinp += ∂/∂inp, dweight += ∂/∂weight (formulas in the CPU twin). Accumulates. */
export function rmsnormBackward(
  ctx: GpuContext,
  dinp: GpuTensor<'f32'>,
  dweight: GpuTensor<'f32'>,
  dout: GpuTensor<'f32'>,
  inp: GpuTensor<'f32'>,
  weight: GpuTensor<'f32'>,
  rstd: GpuTensor<'f32'>,
  B: number,
  T: number,
  C: number,
): void {
  checkRmsnormBackward(dinp, dweight, dout, inp, weight, rstd, B, T, C);
  const N = B * T;
  const cols = N > 0 ? Math.ceil(C / ROW_WG) : 0;
  if (dinp.buffer !== dweight.buffer) {
    ctx.run(bwd, [u32(N), u32(C), u32(N), u32(cols)], [dinp, dout, inp, weight, rstd, dweight], N + cols);
    return;
  }
  // Views of one buffer cannot both be bound for writing: the rows, then the columns.
  ctx.run(bwd, [u32(N), u32(C), u32(N), u32(0)], [dinp, dout, inp, weight, rstd, ctx.dummy], N);
  ctx.run(bwd, [u32(N), u32(C), u32(0), u32(cols)], [ctx.dummy, dout, inp, weight, rstd, dweight], cols);
}
