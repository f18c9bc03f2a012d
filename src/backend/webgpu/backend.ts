/**
 * The WebGPU backend: every op of the `Backend` interface (src/backend/types.ts) bound to its
 * WGSL kernel wrapper in this folder, over one `GpuContext`. Handles are `GpuTensor`s (a storage
 * buffer, its kind and length); ops are recorded into the context's command encoder and run
 * when `download` (the one async call) submits and maps — same names, argument order and
 * semantics as `cpuBackend` (forward ops overwrite, backward ops accumulate, null skips a
 * gradient). Checked op for op against the CPU through this very interface by
 * tests/webgpu/backend.test.ts.
 *
 * Not here: the kernels (one wrapper + shader per op), acquiring the device (device.ts),
 * recovering from device loss, choosing between CPU and WebGPU (the app's job), model assembly
 * (src/model).
 */
import type { Backend, HostTensors, TensorKind } from '../types';
import { adamwStep } from './adamw';
import { attentionBackward, attentionCachedForward, attentionForward, kvCacheWrite } from './attention';
import { clippedLossBackward } from './clipped_loss';
import { crossEntropy } from './cross_entropy';
import { embeddingBackward, embeddingForward } from './embedding';
import { gatherBackward, gatherForward } from './gather';
import type { GpuContext, GpuTensor } from './kernel';
import { klBackward, klForward } from './kl';
import { logSoftmaxBackward, logSoftmaxForward } from './logsoftmax';
import { matmulBackward, matmulForward, matmulResidualForward } from './matmul';
import { matmulBackwardInputQ4, matmulBackwardInputQ8, matmulForwardQ4, matmulForwardQ8 } from './matmul_q';
import { mlpBackward, mlpForward, swigluBackward, swigluForward } from './mlp';
import { residualBackward, residualForward } from './residual';
import { rmsnormBackward, rmsnormForward } from './rmsnorm';
import { ropeBackward, ropeForward } from './rope';
import { sampleForward } from './sample';

/** The backend's handle type for each tensor kind: a GpuTensor of that kind. */
export type GpuTensors = { [K in TensorKind]: GpuTensor<K> };

/** The adapter's one-line description, when the device exposes it (GPUDevice.adapterInfo). */
function adapterLine(ctx: GpuContext): string {
  try {
    const info = (ctx.device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo;
    if (info === undefined) return 'unknown adapter';
    return [info.vendor, info.architecture, info.description].filter((s) => s !== undefined && s !== '').join(' / ') || 'unknown adapter';
  } catch {
    return 'unknown adapter';
  }
}

/**
 * The WebGPU backend over `ctx`. `description` names the adapter in `name` (e.g. the
 * `description` of acquireDevice's result); by default it is read from the device.
 */
export function webgpuBackend(ctx: GpuContext, description: string = adapterLine(ctx)): Backend<GpuTensors> {
  return {
    name: `webgpu (${description})`,

    // GpuTensor<K> is GpuTensors[K] for every K, but TypeScript cannot index a mapped type by a
    // generic key: hence the casts.
    upload: <K extends TensorKind>(kind: K, data: HostTensors[K]) => ctx.upload(kind, data) as unknown as GpuTensors[K],
    zeros: <K extends TensorKind>(kind: K, length: number) => ctx.zeros(kind, length) as unknown as GpuTensors[K],
    fill: (t, value) => ctx.fill(t, value),
    download: (kind, t) => ctx.download(kind, t),
    dispose: (t) => ctx.dispose(t),
    view: (t, offset, length) => ctx.view(t, offset, length),

    embeddingForward: (out, tokens, wte, B, T, C) => embeddingForward(ctx, out, tokens, wte, B, T, C),
    embeddingBackward: (dwte, dout, tokens, B, T, C) => embeddingBackward(ctx, dwte, dout, tokens, B, T, C),

    rmsnormForward: (out, rstd, inp, weight, B, T, C, eps) => rmsnormForward(ctx, out, rstd, inp, weight, B, T, C, eps),
    rmsnormBackward: (dinp, dweight, dout, inp, weight, rstd, B, T, C) => rmsnormBackward(ctx, dinp, dweight, dout, inp, weight, rstd, B, T, C),

    ropeForward: (out, inp, table, B, T, NH, HS, pos0) => ropeForward(ctx, out, inp, table, B, T, NH, HS, pos0),
    ropeBackward: (dinp, dout, table, B, T, NH, HS, pos0) => ropeBackward(ctx, dinp, dout, table, B, T, NH, HS, pos0),

    attentionForward: (out, att, q, k, v, B, T, NH, HS) => attentionForward(ctx, out, att, q, k, v, B, T, NH, HS),
    attentionBackward: (dq, dk, dv, dout, q, k, v, att, B, T, NH, HS) => attentionBackward(ctx, dq, dk, dv, dout, q, k, v, att, B, T, NH, HS),
    kvCacheWrite: (kCache, vCache, k, v, B, T, C, pos0, Tmax) => kvCacheWrite(ctx, kCache, vCache, k, v, B, T, C, pos0, Tmax),
    attentionCachedForward: (out, q, kCache, vCache, B, T, NH, HS, pos0, Tmax) => attentionCachedForward(ctx, out, q, kCache, vCache, B, T, NH, HS, pos0, Tmax),

    matmulForward: (out, inp, weight, B, T, C, OC) => matmulForward(ctx, out, inp, weight, B, T, C, OC),
    matmulBackward: (dinp, dweight, dout, inp, weight, B, T, C, OC) => matmulBackward(ctx, dinp, dweight, dout, inp, weight, B, T, C, OC),
    matmulResidualForward: (out, inp, weight, res, B, T, C, OC) => matmulResidualForward(ctx, out, inp, weight, res, B, T, C, OC),
    matmulForwardQ8: (out, inp, q, scales, B, T, C, OC) => matmulForwardQ8(ctx, out, inp, q, scales, B, T, C, OC),
    matmulForwardQ4: (out, inp, q, scales, B, T, C, OC) => matmulForwardQ4(ctx, out, inp, q, scales, B, T, C, OC),
    matmulBackwardInputQ8: (dinp, dout, q, scales, B, T, C, OC) => matmulBackwardInputQ8(ctx, dinp, dout, q, scales, B, T, C, OC),
    matmulBackwardInputQ4: (dinp, dout, q, scales, B, T, C, OC) => matmulBackwardInputQ4(ctx, dinp, dout, q, scales, B, T, C, OC),

    residualForward: (out, a, b, N, scale) => residualForward(ctx, out, a, b, N, scale),
    residualBackward: (da, db, dout, N, scale) => residualBackward(ctx, da, db, dout, N, scale),

    swigluForward: (out, a, b, N) => swigluForward(ctx, out, a, b, N),
    swigluBackward: (da, db, dout, a, b, N) => swigluBackward(ctx, da, db, dout, a, b, N),
    mlpForward: (out, a, b, h, inp, w1, w3, w2, B, T, C, H) => mlpForward(ctx, out, a, b, h, inp, w1, w3, w2, B, T, C, H),
    mlpBackward: (dinp, dw1, dw3, dw2, dh, da, db, dout, inp, a, b, h, w1, w3, w2, B, T, C, H) =>
      mlpBackward(ctx, dinp, dw1, dw3, dw2, dh, da, db, dout, inp, a, b, h, w1, w3, w2, B, T, C, H),

    logSoftmaxForward: (out, logits, N, V, temperature) => logSoftmaxForward(ctx, out, logits, N, V, temperature),
    logSoftmaxBackward: (dlogits, dlogp, logp, N, V, temperature) => logSoftmaxBackward(ctx, dlogits, dlogp, logp, N, V, temperature),
    gatherForward: (out, logp, targets, N, V) => gatherForward(ctx, out, logp, targets, N, V),
    gatherBackward: (dlogp, dout, targets, N, V) => gatherBackward(ctx, dlogp, dout, targets, N, V),
    crossEntropy: (lrow, dlogits, logits, targets, dout, N, V) => crossEntropy(ctx, lrow, dlogits, logits, targets, dout, N, V),
    klForward: (out, logitsP, logitsQ, N, V, temperature) => klForward(ctx, out, logitsP, logitsQ, N, V, temperature),
    klBackward: (dlogitsP, dlogitsQ, dout, logitsP, logitsQ, N, V, temperature) => klBackward(ctx, dlogitsP, dlogitsQ, dout, logitsP, logitsQ, N, V, temperature),

    clippedLossBackward: (dlogits, stats, logitsTheta, logitsRef, actions, episodeOf, adv, weight, K, V, N, horizon, temperature, spec, scale) =>
      clippedLossBackward(ctx, dlogits, stats, logitsTheta, logitsRef, actions, episodeOf, adv, weight, K, V, N, horizon, temperature, spec, scale),

    adamwStep: (params, grads, m, v, n, t, hp) => adamwStep(ctx, params, grads, m, v, n, t, hp),

    sampleForward: (out, logits, B, V, sp) => sampleForward(ctx, out, logits, B, V, sp),
  } satisfies Backend<GpuTensors>;
}
