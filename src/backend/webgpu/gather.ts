/**
 * WebGPU log-prob gather (forward and backward) — thin wrappers over shaders/gather.wgsl and
 * shaders/gather_backward.wgsl; twins: gatherForward / gatherBackward in
 * src/backend/cpu/softmax.ts (forward overwrites, backward accumulates). One thread per row.
 *
 * Not here: target range checks (an out-of-range target gives NaN forward, is skipped backward;
 * the CPU twin throws).
 */
import { checkGatherBackward, checkGatherForward } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, u32 } from './kernel';

const WG = 64;
const fwd = defineKernel({ shaders: 'gather', bindings: ['read', 'read', 'rw'], overrides: { WG } });
const bwd = defineKernel({ shaders: 'gather_backward', bindings: ['rw', 'read', 'read'], overrides: { WG } });

/** out[n] = logp[n, targets[n]]. Overwrites `out`. */
export function gatherForward(ctx: GpuContext, out: GpuTensor<'f32'>, logp: GpuTensor<'f32'>, targets: GpuTensor<'i32'>, N: number, V: number): void {
  checkGatherForward(out, logp, targets, N, V);
  ctx.run(fwd, [u32(N), u32(V)], [logp, targets, out], Math.ceil(N / WG));
}

/** dlogp[n, targets[n]] += dout[n]. Accumulates. */
export function gatherBackward(ctx: GpuContext, dlogp: GpuTensor<'f32'>, dout: GpuTensor<'f32'>, targets: GpuTensor<'i32'>, N: number, V: number): void {
  checkGatherBackward(dlogp, dout, targets, N, V);
  ctx.run(bwd, [u32(N), u32(V)], [dlogp, dout, targets], Math.ceil(N / WG));
}
