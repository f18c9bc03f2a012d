/**
 * WebGPU exact per-state KL over the full vocabulary (forward and backward) — thin wrappers over
 * shaders/kl.wgsl and shaders/kl_backward.wgsl; twins: klForward / klBackward in
 * src/backend/cpu/softmax.ts (forward overwrites, backward accumulates; null skips a gradient).
 * One workgroup per row.
 *
 * Not here: the maths (the shaders); the clipped objective's own KL term (clipped_loss.ts).
 */
import { checkKlBackward, checkKlForward } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, f32, u32 } from './kernel';
import { ROW_WG } from './logsoftmax';

const fwd = defineKernel({ shaders: ['reduce', 'kl_row', 'kl'], bindings: ['read', 'read', 'rw'], overrides: { WG: ROW_WG } });
const bwd = (hasP: boolean, hasQ: boolean) =>
  defineKernel({ shaders: ['reduce', 'kl_row', 'kl_backward'], bindings: ['rw', 'rw', 'read', 'read', 'read'], overrides: { WG: ROW_WG, HAS_P: hasP ? 1 : 0, HAS_Q: hasQ ? 1 : 0 } });

/** out[n] = KL(softmax(zp_n/τ) ‖ softmax(zq_n/τ)). Overwrites `out`. */
export function klForward(ctx: GpuContext, out: GpuTensor<'f32'>, logitsP: GpuTensor<'f32'>, logitsQ: GpuTensor<'f32'>, N: number, V: number, temperature = 1): void {
  checkKlForward(out, logitsP, logitsQ, N, V, temperature);
  ctx.run(fwd, [u32(N), u32(V), f32(1 / temperature)], [logitsP, logitsQ, out], N);
}

/** dlogitsP += dout ∂KL/∂zp, dlogitsQ += dout ∂KL/∂zq; null skips one. Accumulates. */
export function klBackward(
  ctx: GpuContext,
  dlogitsP: GpuTensor<'f32'> | null,
  dlogitsQ: GpuTensor<'f32'> | null,
  dout: GpuTensor<'f32'>,
  logitsP: GpuTensor<'f32'>,
  logitsQ: GpuTensor<'f32'>,
  N: number,
  V: number,
  temperature = 1,
): void {
  checkKlBackward(dlogitsP, dlogitsQ, dout, logitsP, logitsQ, N, V, temperature);
  if (dlogitsP === null && dlogitsQ === null) return;
  ctx.run(bwd(dlogitsP !== null, dlogitsQ !== null), [u32(N), u32(V), f32(1 / temperature)], [dlogitsP ?? ctx.dummy, dlogitsQ ?? ctx.dummy, dout, logitsP, logitsQ], N);
}
