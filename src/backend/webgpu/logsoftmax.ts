/**
 * WebGPU log-softmax (forward and backward) — thin wrappers over shaders/logsoftmax.wgsl and
 * shaders/logsoftmax_backward.wgsl. Same names, arguments and semantics as the CPU twins in
 * src/backend/cpu/softmax.ts (forward overwrites, backward accumulates); one workgroup per row.
 *
 * Not here: the maths (the shaders), value checks (a GPU cannot throw; sizes are checked
 * against the tensors on the host).
 */
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, f32, u32 } from './kernel';
import { checkLogSoftmaxBackward, checkLogSoftmaxForward } from '../check';

/** Threads per row: a power of two. */
export const ROW_WG = 64;

const fwd = defineKernel({ shaders: ['reduce', 'logsoftmax'], bindings: ['read', 'rw'], overrides: { WG: ROW_WG } });
const bwd = defineKernel({ shaders: ['reduce', 'logsoftmax_backward'], bindings: ['rw', 'read', 'read'], overrides: { WG: ROW_WG } });

/** out = log_softmax(logits / τ) per row (N rows of V). Overwrites `out`, which may be `logits`. */
export function logSoftmaxForward(ctx: GpuContext, out: GpuTensor<'f32'>, logits: GpuTensor<'f32'>, N: number, V: number, temperature = 1): void {
  checkLogSoftmaxForward(out, logits, N, V, temperature);
  // In place: WebGPU cannot bind one buffer as both read and read_write, so read from a copy.
  const src = out.buffer === logits.buffer ? ctx.clone(logits) : logits;
  ctx.run(fwd, [u32(N), u32(V), f32(1 / temperature)], [src, out], N);
  if (src !== logits) ctx.dispose(src);
}

/** dlogits += (dlogp − p Σ dlogp)/τ per row. Accumulates. */
export function logSoftmaxBackward(ctx: GpuContext, dlogits: GpuTensor<'f32'>, dlogp: GpuTensor<'f32'>, logp: GpuTensor<'f32'>, N: number, V: number, temperature = 1): void {
  checkLogSoftmaxBackward(dlogits, dlogp, logp, N, V, temperature);
  ctx.run(bwd, [u32(N), u32(V), f32(1 / temperature)], [dlogits, dlogp, logp], N);
}
