/**
 * WebGPU AdamW step — thin wrapper over shaders/adamw.wgsl; twin: adamwStep in
 * src/backend/cpu/adamw.ts (same arguments, same defaults, same maths; the bias corrections
 * 1 − βᵗ are computed here in f64 and passed as f32). One thread per parameter.
 *
 * Not here: gradient clipping, learning-rate schedules, zeroing the gradients (the caller's).
 */
import type { AdamWParams } from '../types';
import { checkAdamw } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, f32, u32 } from './kernel';

const WG = 64;
const kernel = defineKernel({ shaders: 'adamw', bindings: ['rw', 'read', 'rw', 'rw'], overrides: { WG } });

/** One AdamW step over n parameters in place. `t` counts steps from 1. */
export function adamwStep(ctx: GpuContext, params: GpuTensor<'f32'>, grads: GpuTensor<'f32'>, m: GpuTensor<'f32'>, v: GpuTensor<'f32'>, n: number, t: number, hp: AdamWParams): void {
  checkAdamw(params, grads, m, v, n, t);
  const b1 = hp.beta1 ?? 0.9;
  const b2 = hp.beta2 ?? 0.999;
  ctx.run(
    kernel,
    [u32(n), f32(hp.lr), f32(b1), f32(b2), f32(hp.eps ?? 1e-8), f32(hp.weightDecay ?? 0), f32(1 - Math.pow(b1, t)), f32(1 - Math.pow(b2, t))],
    [params, grads, m, v],
    Math.ceil(n / WG),
  );
}
