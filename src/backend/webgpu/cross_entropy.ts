/**
 * WebGPU next-token cross-entropy chain in one dispatch — thin wrapper over
 * shaders/cross_entropy.wgsl; twin: crossEntropy in src/backend/cpu/softmax.ts (the composition
 * of logSoftmaxForward, gatherForward, gatherBackward and logSoftmaxBackward it replaces). lrow is
 * overwritten, dlogits accumulates; dlogits null skips the gradient (dout is then not read).
 *
 * Not here: a temperature (τ = 1: the language-modelling loss), target range checks (an
 * out-of-range target gives NaN in lrow and no gradient; the CPU twin throws).
 */
import { needAll } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, u32 } from './kernel';
import { ROW_WG } from './logsoftmax';

const kernel = (grad: boolean) =>
  defineKernel({ shaders: ['reduce', 'cross_entropy'], bindings: ['read', 'read', 'read', 'rw', 'rw'], overrides: { WG: ROW_WG, GRAD: grad ? 1 : 0 } });

/** lrow[n] = log_softmax(logits)[n, targets[n]]; with dlogits, dlogits += ∂(Σ_n dout[n]·lrow[n])/∂logits. */
export function crossEntropy(ctx: GpuContext, lrow: GpuTensor<'f32'>, dlogits: GpuTensor<'f32'> | null, logits: GpuTensor<'f32'>, targets: GpuTensor<'i32'>, dout: GpuTensor<'f32'> | null, N: number, V: number): void {
  const op = 'crossEntropy';
  needAll(op, { lrow, targets }, N);
  needAll(op, { logits, dlogits }, N * V);
  if (dlogits !== null) {
    if (dout === null) throw new TypeError(`${op}: dlogits needs dout`);
    needAll(op, { dout }, N);
  }
  ctx.run(kernel(dlogits !== null), [u32(N), u32(V)], [logits, targets, dout ?? logits, lrow, dlogits ?? ctx.dummy], N); // no gradient: dout unread (logits bound in its place)
}
