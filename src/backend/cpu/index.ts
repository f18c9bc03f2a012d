/**
 * The CPU backend: re-exports every reference kernel and wraps them as a `Backend<HostTensors>`
 * (src/backend/types.ts), one method per function, same name, same argument order. Tensors are
 * plain typed arrays, ops run at once, and `download` resolves immediately with a copy.
 *
 * Not here: any kernel maths (each op lives in its own file in this folder).
 */
import type { Backend, HostTensors, TensorKind } from '../types';
import { adamwStep } from './adamw';
import { attentionBackward, attentionCachedForward, attentionForward, kvCacheWrite } from './attention';
import { embeddingBackward, embeddingForward } from './embedding';
import { matmulBackward, matmulForward } from './matmul';
import { mlpBackward, mlpForward, swigluBackward, swigluForward } from './mlp';
import { clippedLossBackward } from './objective';
import { matmulBackwardInputQ4, matmulBackwardInputQ8, matmulForwardQ4, matmulForwardQ8 } from './quant';
import { residualBackward, residualForward } from './residual';
import { rmsnormBackward, rmsnormForward } from './rmsnorm';
import { ropeBackward, ropeForward } from './rope';
import { sampleForward } from './sampling';
import { gatherBackward, gatherForward, klBackward, klForward, logSoftmaxBackward, logSoftmaxForward } from './softmax';

export * from './adamw';
export * from './attention';
export * from './embedding';
export * from './matmul';
export * from './mlp';
export * from './objective';
export * from './quant';
export * from './residual';
export * from './rmsnorm';
export * from './rope';
export * from './sampling';
export * from './softmax';

const ctors: { [K in TensorKind]: new (n: number) => HostTensors[K] } = {
  f32: Float32Array,
  i32: Int32Array,
  i8: Int8Array,
  u8: Uint8Array,
  u16: Uint16Array,
};

/** The CPU reference as a Backend: handles are the typed arrays themselves. */
export const cpuBackend: Backend<HostTensors> = {
  name: 'cpu',
  upload: (_kind, data) => data.slice() as typeof data,
  zeros: (kind, length) => new ctors[kind](length),
  fill: (t, value) => void t.fill(value),
  download: (_kind, t) => Promise.resolve(t.slice() as typeof t),
  dispose: () => undefined,
  embeddingForward,
  embeddingBackward,
  rmsnormForward,
  rmsnormBackward,
  ropeForward,
  ropeBackward,
  attentionForward,
  attentionBackward,
  kvCacheWrite,
  attentionCachedForward,
  matmulForward,
  matmulBackward,
  matmulForwardQ8,
  matmulForwardQ4,
  matmulBackwardInputQ8,
  matmulBackwardInputQ4,
  residualForward,
  residualBackward,
  swigluForward,
  swigluBackward,
  mlpForward,
  mlpBackward,
  logSoftmaxForward,
  logSoftmaxBackward,
  gatherForward,
  gatherBackward,
  klForward,
  klBackward,
  clippedLossBackward: (dlogits, stats, lt, lr, actions, episodeOf, adv, weight, K, V, N, horizon, temperature, spec, scale) =>
    void clippedLossBackward(dlogits, stats, lt, lr, actions, episodeOf, adv, weight, K, V, N, horizon, temperature, spec, scale),
  adamwStep,
  sampleForward,
};
