/**
 * The CPU backend: re-exports every reference kernel and wraps them as `Backend`s (one method per
 * function, same name, same argument order; tensors are typed arrays, ops run at once):
 *   cpuBackend           f32 — what the product runs: the matmuls, attention and the row kernels on
 *                        the WebAssembly SIMD kernels (simd.ts; within stated f32 bounds of the TS
 *                        twins) when the platform has them, its f32 tensors resident in their shared
 *                        memory when there is one (simdMemory.ts); the rest on the TS kernels;
 *   cpuBackendReference  f32, every op on the TS kernels (f64 sums): the twin the SIMD path is
 *                        tested against;
 *   cpuBackend64         f64 tensors, TS kernels — the finite-difference gradient checks; `download`
 *                        returns f32 as the interface says (read the handles for f64 values).
 *
 * Not here: any kernel maths (one file per op in this folder).
 */
import { VIEW_ALIGN, type Backend, type HostTensors, type TensorKind, type TensorKinds } from '../types';
import { adamwStep } from './adamw';
import { attentionBackward, attentionCachedForward, attentionForward, kvCacheWrite } from './attention';
import { embeddingBackward, embeddingForward } from './embedding';
import { matmulBackward, matmulForward, matmulResidualForward, matmulResidualWith } from './matmul';
import { mlpBackward, mlpForward, swigluBackward, swigluForward } from './mlp';
import { clippedLossBackward } from './objective';
import { manyBySingles, matmulBackwardInputQ4, matmulBackwardInputQ8, matmulForwardQ4, matmulForwardQ8, matmulForwardQAct } from './quant';
import { residualBackward, residualForward } from './residual';
import { rmsnormBackward, rmsnormForward } from './rmsnorm';
import { ropeBackward, ropeForward } from './rope';
import { sampleForward } from './sampling';
import {
  simdAttentionBackward,
  simdAttentionCachedForward,
  simdAttentionForward,
  simdLogSoftmaxBackward,
  simdLogSoftmaxForward,
  simdMatmulBackward,
  simdMatmulBackwardInputQ4,
  simdMatmulBackwardInputQ8,
  simdMatmulForward,
  simdMatmulForwardQ4,
  simdMatmulForwardQ8,
  simdMatmulForwardQ8Act,
  simdMatmulForwardMany,
  simdMatmulForwardQ4Act,
  simdResidualBackward,
  simdResidualForward,
  simdRmsnormBackward,
  simdRmsnormForward,
  simdRopeBackward,
  simdRopeForward,
  simdSwigluBackward,
  simdSwigluForward,
  simdBytes,
  simdRelease,
  simdTensor,
  simdView,
} from './simd';
import { crossEntropy, crossEntropyWith, gatherBackward, gatherForward, klBackward, klForward, logSoftmaxBackward, logSoftmaxForward } from './softmax';

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
export { setCpuResidency, simdAvailable, simdBuild, simdKernelCalls, simdResident, simdResidentStats, simdUnavailableReason } from './simd';
export * from './softmax';

const ctors: { [K in TensorKind]: new (n: number) => HostTensors[K] } = {
  f32: Float32Array,
  i32: Int32Array,
  i8: Int8Array,
  u8: Uint8Array,
  u16: Uint16Array,
};

/** The tensor kinds of the f64 CPU backend: float tensors are Float64Array, the rest as HostTensors. */
export interface HostTensors64 extends Omit<HostTensors, 'f32'> {
  f32: Float64Array;
}

/** Every op of the Backend interface over plain typed arrays (both precisions share them). */
type Ops<X extends TensorKinds> = Omit<Backend<X>, 'name' | 'upload' | 'zeros' | 'fill' | 'download' | 'dispose' | 'view'>;

/** Backend.view's checks, as the WebGPU backend makes them. */
function checkView(t: Float32Array | Float64Array, offset: number, length: number): void {
  if (!Number.isInteger(offset) || offset < 0 || offset % VIEW_ALIGN !== 0) throw new RangeError(`view: offset ${offset} must be a multiple of ${VIEW_ALIGN} elements`);
  if (!Number.isInteger(length) || length < 0 || offset + length > t.length) throw new RangeError(`view: [${offset}, ${offset} + ${length}) is outside the tensor's ${t.length} elements`);
}

/** Backend.view on typed arrays: a subarray (checked). */
function view<A extends Float32Array | Float64Array>(t: A, offset: number, length: number): A {
  checkView(t, offset, length);
  return t.subarray(offset, offset + length) as A;
}

function ops<X extends HostTensors | HostTensors64>(): Ops<X> {
  const o = {
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
    matmulResidualForward,
    matmulForwardQ8,
    matmulForwardQ4,
    matmulForwardQ8Act: (out, inp, q, scales, B, T, C, OC) => matmulForwardQAct('matmulForwardQ8Act', out, inp, q, scales, B, T, C, OC),
    matmulForwardQ4Act: (out, inp, q, scales, B, T, C, OC) => matmulForwardQAct('matmulForwardQ4Act', out, inp, q, scales, B, T, C, OC),
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
    crossEntropy,
    klForward,
    klBackward,
    clippedLossBackward: (dlogits, stats, lt, lr, actions, episodeOf, adv, weight, K, V, N, horizon, temperature, spec, scale) =>
      void clippedLossBackward(dlogits, stats, lt, lr, actions, episodeOf, adv, weight, K, V, N, horizon, temperature, spec, scale),
    adamwStep,
    sampleForward,
  } as Ops<X>;
  return { ...o, matmulForwardMany: manyBySingles(o) };
}

/** Memory calls of the f32 backends: handles are the typed arrays themselves. */
const memory32: Pick<Backend<HostTensors>, 'upload' | 'zeros' | 'fill' | 'download' | 'hostView' | 'dispose' | 'view'> = {
  upload: (_kind, data) => data.slice() as typeof data,
  zeros: (kind, length) => new ctors[kind](length),
  fill: (t, value) => void t.fill(value),
  download: (_kind, t) => Promise.resolve(t.slice() as typeof t),
  hostView: (t) => t,
  dispose: () => undefined,
  view,
};

/** A resident tensor of `kind` (f32, or a quantized weight's i8 / u8 / u16 arrays), or null (simdMemory.ts simdTensor). */
function residentOf(kind: TensorKind, n: number, from?: HostTensors[TensorKind]): HostTensors[TensorKind] | null {
  switch (kind) {
    case 'f32':
      return simdTensor(n, from as Float32Array | undefined);
    case 'i8':
      return simdBytes(Int8Array, n, from as Int8Array | undefined);
    case 'u8':
      return simdBytes(Uint8Array, n, from as Uint8Array | undefined);
    case 'u16':
      return simdBytes(Uint16Array, n, from as Uint16Array | undefined);
    default:
      return null;
  }
}

/**
 * Memory calls of cpuBackend: f32 tensors (and a quantized weight's arrays) resident in the SIMD kernels' shared memory when there is
 * one (simdMemory.ts simdTensor: no copies in or out of a kernel call), else as memory32. `dispose`
 * releases a resident tensor's block (poisoned with NaN: a use after dispose shows); a view keeps
 * its tensor's block alive.
 */
const residentMemory: Pick<Backend<HostTensors>, 'upload' | 'zeros' | 'dispose' | 'view'> = {
  upload: (kind, data) => (residentOf(kind, data.length, data) ?? data.slice()) as typeof data,
  zeros: (kind, length) => (residentOf(kind, length) ?? new ctors[kind](length)) as HostTensors[typeof kind],
  dispose: (t) => void (t instanceof Int32Array || simdRelease(t)),
  view: (t, offset, length) => {
    checkView(t, offset, length);
    return simdView(t, offset, length);
  },
};

/** The CPU backend (header): TS kernels, with the matmuls, attention and the row kernels on WebAssembly SIMD when available. */
export const cpuBackend: Backend<HostTensors> = {
  name: 'cpu',
  ...memory32,
  ...residentMemory,
  ...ops<HostTensors>(),
  matmulForward: simdMatmulForward,
  matmulBackward: simdMatmulBackward,
  matmulResidualForward: matmulResidualWith(simdMatmulForward, simdResidualForward),
  matmulForwardQ8: simdMatmulForwardQ8,
  matmulForwardQ4: simdMatmulForwardQ4,
  matmulForwardQ8Act: simdMatmulForwardQ8Act,
  matmulForwardQ4Act: simdMatmulForwardQ4Act,
  matmulForwardMany: simdMatmulForwardMany,
  matmulBackwardInputQ8: simdMatmulBackwardInputQ8,
  matmulBackwardInputQ4: simdMatmulBackwardInputQ4,
  attentionForward: simdAttentionForward,
  attentionBackward: simdAttentionBackward,
  attentionCachedForward: simdAttentionCachedForward,
  rmsnormForward: simdRmsnormForward,
  rmsnormBackward: simdRmsnormBackward,
  swigluForward: simdSwigluForward,
  swigluBackward: simdSwigluBackward,
  logSoftmaxForward: simdLogSoftmaxForward,
  logSoftmaxBackward: simdLogSoftmaxBackward,
  crossEntropy: crossEntropyWith(simdLogSoftmaxForward, simdLogSoftmaxBackward),
  ropeForward: simdRopeForward,
  ropeBackward: simdRopeBackward,
  residualForward: simdResidualForward,
  residualBackward: simdResidualBackward,
};

/** The CPU reference in f32 (header): every op on the TypeScript kernels. */
export const cpuBackendReference: Backend<HostTensors> = {
  name: 'cpu-reference',
  ...memory32,
  ...ops<HostTensors>(),
};

/** The same kernels in f64 (header): float handles are Float64Array. */
export const cpuBackend64: Backend<HostTensors64> = {
  name: 'cpu-f64',
  upload: (kind, data) => (kind === 'f32' ? Float64Array.from(data) : data.slice()) as HostTensors64[typeof kind],
  zeros: (kind, length) => (kind === 'f32' ? new Float64Array(length) : new ctors[kind](length)) as HostTensors64[typeof kind],
  fill: (t, value) => void t.fill(value),
  download: (kind, t) => Promise.resolve((kind === 'f32' ? Float32Array.from(t as Float64Array) : (t as Int32Array).slice()) as HostTensors[typeof kind]),
  dispose: () => undefined,
  view,
  ...ops<HostTensors64>(),
};
