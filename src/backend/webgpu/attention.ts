/**
 * WebGPU causal multi-head attention — thin wrappers over shaders/attention.wgsl (forward, full
 * or from a KV cache), shaders/attention_backward_dq.wgsl + attention_backward_dkv.wgsl
 * (backward) and shaders/kv_cache_write.wgsl. Twins: attentionForward, attentionBackward,
 * kvCacheWrite, attentionCachedForward in src/backend/cpu/attention.ts, same arguments after the
 * context: forwards overwrite (the full forward stores P in att [B × NH × T × T] with zeros above
 * the diagonal), the backward accumulates into dq, dk, dv.
 *
 * Backward in two dispatches, deterministic without atomics: a workgroup per query row computes
 * ds = P ⊙ (dP − Σ P dP)/√HS into a scratch [B·NH·T·T] and accumulates dq; then a thread per key
 * element sums its column for dk and dv.
 *
 * Not here: the q/k/v/o projections, RoPE, GQA, a flash-style tiled variant (variant 1 only;
 * a faster one would be attention_v2 and pass tests/webgpu/layers.test.ts first).
 */
import { needLen, sizes } from './check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, f32, u32 } from './kernel';

const WG = 64;
const fwd = (zero: boolean) => defineKernel({ shaders: ['reduce', 'attention_row', 'attention'], bindings: ['rw', 'rw', 'read', 'read', 'read'], overrides: { WG, ZERO: zero ? 1 : 0 } });
const bwdQ = defineKernel({ shaders: ['reduce', 'attention_row', 'attention_backward_dq'], bindings: ['rw', 'rw', 'read', 'read', 'read', 'read'], overrides: { WG } });
const bwdKV = defineKernel({ shaders: ['attention_row', 'attention_backward_dkv'], bindings: ['rw', 'rw', 'read', 'read', 'read', 'read'], overrides: { WG } });
const kvw = defineKernel({ shaders: 'kv_cache_write', bindings: ['rw', 'rw', 'read', 'read'], overrides: { WG } });

/** out = causal softmax(QKᵀ/√HS)·V per head; saves P in `att`. Overwrites `out` and `att`. */
export function attentionForward(
  ctx: GpuContext,
  out: GpuTensor<'f32'>,
  att: GpuTensor<'f32'>,
  q: GpuTensor<'f32'>,
  k: GpuTensor<'f32'>,
  v: GpuTensor<'f32'>,
  B: number,
  T: number,
  NH: number,
  HS: number,
): void {
  const op = 'attentionForward';
  sizes(op, { B, T, NH, HS });
  needLen(op, { out, q, k, v }, B * T * NH * HS);
  needLen(op, { att }, B * NH * T * T);
  const rows = B * NH * T;
  ctx.run(fwd(true), [u32(rows), u32(T), u32(NH), u32(HS), u32(T), u32(T), u32(0), f32(1 / Math.sqrt(HS))], [out, att, q, k, v], rows);
}

/** ∂/∂q, ∂/∂k, ∂/∂v of attentionForward. Accumulates into dq, dk, dv. */
export function attentionBackward(
  ctx: GpuContext,
  dq: GpuTensor<'f32'>,
  dk: GpuTensor<'f32'>,
  dv: GpuTensor<'f32'>,
  dout: GpuTensor<'f32'>,
  q: GpuTensor<'f32'>,
  k: GpuTensor<'f32'>,
  v: GpuTensor<'f32'>,
  att: GpuTensor<'f32'>,
  B: number,
  T: number,
  NH: number,
  HS: number,
): void {
  const op = 'attentionBackward';
  sizes(op, { B, T, NH, HS });
  const n = B * T * NH * HS;
  needLen(op, { dq, dk, dv, dout, q, k, v }, n);
  needLen(op, { att }, B * NH * T * T);
  const rows = B * NH * T;
  if (n === 0) return;
  const ds = ctx.zeros('f32', B * NH * T * T);
  ctx.run(bwdQ, [u32(rows), u32(T), u32(NH), u32(HS), f32(1 / Math.sqrt(HS))], [dq, ds, dout, k, v, att], rows);
  ctx.run(bwdKV, [u32(n), u32(T), u32(NH), u32(HS)], [dk, dv, ds, att, q, dout], Math.ceil(n / WG));
  ctx.dispose(ds); // later ops are recorded after these, so reusing the buffer is safe
}

/** kCache[b, pos0+t, :] = k[b, t, :] and the same for v. Overwrites those cache rows. */
export function kvCacheWrite(
  ctx: GpuContext,
  kCache: GpuTensor<'f32'>,
  vCache: GpuTensor<'f32'>,
  k: GpuTensor<'f32'>,
  v: GpuTensor<'f32'>,
  B: number,
  T: number,
  C: number,
  pos0: number,
  Tmax: number,
): void {
  const op = 'kvCacheWrite';
  sizes(op, { B, T, C, pos0, Tmax });
  if (pos0 + T > Tmax) throw new RangeError(`${op}: positions ${pos0}..${pos0 + T - 1} do not fit a cache of ${Tmax}`);
  needLen(op, { kCache, vCache }, B * Tmax * C);
  needLen(op, { k, v }, B * T * C);
  const n = B * T * C;
  ctx.run(kvw, [u32(n), u32(T * C), u32(C), u32(Tmax), u32(pos0)], [kCache, vCache, k, v], Math.ceil(n / WG));
}

/**
 * Query rows at positions pos0..pos0+T−1 attend to cache positions 0..pos (the new rows must
 * already be in the cache, see kvCacheWrite). Overwrites `out`; P goes to a scratch buffer.
 */
export function attentionCachedForward(
  ctx: GpuContext,
  out: GpuTensor<'f32'>,
  q: GpuTensor<'f32'>,
  kCache: GpuTensor<'f32'>,
  vCache: GpuTensor<'f32'>,
  B: number,
  T: number,
  NH: number,
  HS: number,
  pos0: number,
  Tmax: number,
): void {
  const op = 'attentionCachedForward';
  sizes(op, { B, T, NH, HS, pos0, Tmax });
  if (pos0 + T > Tmax) throw new RangeError(`${op}: positions ${pos0}..${pos0 + T - 1} do not fit a cache of ${Tmax}`);
  const C = NH * HS;
  needLen(op, { out, q }, B * T * C);
  needLen(op, { kCache, vCache }, B * Tmax * C);
  const rows = B * NH * T;
  if (rows === 0) return;
  const L = pos0 + T;
  const scratch = ctx.zeros('f32', rows * L);
  ctx.run(fwd(false), [u32(rows), u32(T), u32(NH), u32(HS), u32(Tmax), u32(L), u32(pos0), f32(1 / Math.sqrt(HS))], [out, scratch, q, kCache, vCache], rows);
  ctx.dispose(scratch);
}
