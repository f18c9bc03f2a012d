/**
 * WebGPU next-token sampling (temperature, top-k) with the CPU sampler's Philox counters — thin
 * wrapper over shaders/philox.wgsl + shaders/sample.wgsl; twin: sampleForward in
 * src/backend/cpu/sampling.ts (same SampleParams, same checks, same counter layout: key = (seed,
 * stream), counter = (step, seq0 + b, 0, 0)), so the same seed gives the same tokens wherever
 * the logits agree. Also `philoxBlocks`, the WGSL generator exposed for its known-answer test.
 *
 * Not here: the sampling maths (the shader), top-p, stop tokens.
 */
import type { SampleParams } from '../types';
import { checkSample, needAll } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, f32, u32 } from './kernel';

const WG = 64;
const sampler = defineKernel({ shaders: ['philox', 'sample'], bindings: ['read', 'rw'], overrides: { WG } });
const kat = defineKernel({ shaders: ['philox', 'philox_kat'], bindings: ['read', 'rw'], overrides: { WG } });

/** out[b] = a token drawn from softmax(top-k(z_b)/τ) with the Philox uniform of (step, seq0 + b). */
export function sampleForward(ctx: GpuContext, out: GpuTensor<'i32'>, logits: GpuTensor<'f32'>, B: number, V: number, sp: SampleParams): void {
  const k = checkSample(out, logits, B, V, sp);
  const seq0 = sp.seq0 ?? 0;
  const tau = sp.temperature;
  const greedy = tau === 0 || k === 1;
  ctx.run(
    sampler,
    [u32(B), u32(V), u32(sp.seed), u32(sp.stream), u32(sp.step), u32(seq0), u32(k), u32(greedy ? 1 : 0), f32(greedy ? 0 : 1 / tau)],
    [logits, out],
    B,
  );
}

/**
 * Philox4x32-10 on the GPU: for each case (c0, c1, c2, c3, k0, k1) — 6 words of `inp` — the four
 * output words, in `out` (4 per case). For tests of the WGSL generator.
 */
export function philoxBlocks(ctx: GpuContext, out: GpuTensor<'i32'>, inp: GpuTensor<'i32'>, n: number): void {
  needAll('philoxBlocks', { inp }, 6 * n);
  needAll('philoxBlocks', { out }, 4 * n);
  ctx.run(kat, [u32(n)], [inp, out], Math.ceil(n / WG));
}
