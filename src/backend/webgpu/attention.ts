/**
 * WebGPU causal multi-head attention: thin wrappers over attention.wgsl (forward, full or from a KV
 * cache), attention_v2.wgsl (the full forward's faster variant for HS ≤ 64; `ATTENTION_DEFAULT`),
 * attention_backward_dq.wgsl + attention_backward_dkv.wgsl (backward: ds and dq per query row,
 * then dk, dv per key element — deterministic without atomics) and kv_cache_write.wgsl. Twins:
 * src/backend/cpu/attention.ts, same arguments after the context; both variants pass
 * tests/webgpu/layers.test.ts.
 *
 * Not here: the q/k/v/o projections, RoPE, GQA.
 */
import { checkAttentionBackward, checkAttentionCachedForward, checkAttentionForward, checkKvCacheWrite } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, f32, u32 } from './kernel';

export type AttentionVariant = 'v1' | 'v2';
export const ATTENTION_VARIANTS: readonly AttentionVariant[] = ['v1', 'v2'];
export const ATTENTION_DEFAULT: AttentionVariant = 'v2';

const WG = 64;
/** Largest head size variant 2 handles (its MAXHS4 · 4). */
const V2_MAX_HS = 64;
/** Workgroup memory variant 2's tile may take (bytes; the WebGPU minimum is 16384). */
const V2_TILE_BYTES = 8192;
const v2Kernels = new Map<string, ReturnType<typeof defineKernel>>();
/**
 * Variant 2's kernel for T and HS: rows per block WG (16 for T ≤ 16, else 32: larger blocks split
 * the causal work less evenly, docs/performance.md), BK keys per tile, HS4 = ⌈HS/4⌉.
 */
function fwdV2(T: number, HS: number): { k: ReturnType<typeof defineKernel>; wg: number } {
  const wg = T <= 16 ? 16 : 32;
  const HS4 = Math.ceil(HS / 4);
  let bk = wg;
  while (bk > 4 && bk * HS4 * 16 > V2_TILE_BYTES) bk >>= 1;
  const key = `${wg}:${bk}:${HS4}`;
  let k = v2Kernels.get(key);
  if (k === undefined) {
    k = defineKernel({ shaders: ['attention_row', 'attention_v2'], bindings: ['rw', 'rw', 'read', 'read', 'read'], overrides: { WG: wg, BK: bk, HS4 } });
    v2Kernels.set(key, k);
  }
  return { k, wg };
}
const fwd = (zero: boolean) => defineKernel({ shaders: ['reduce', 'attention_row', 'attention'], bindings: ['rw', 'rw', 'read', 'read', 'read'], overrides: { WG, ZERO: zero ? 1 : 0 } });
const bwdQ = defineKernel({ shaders: ['reduce', 'attention_row', 'attention_backward_dq'], bindings: ['rw', 'rw', 'read', 'read', 'read', 'read'], overrides: { WG } });
const bwdKV = defineKernel({ shaders: ['attention_row', 'attention_backward_dkv'], bindings: ['rw', 'rw', 'read', 'read', 'read', 'read'], overrides: { WG } });
const kvw = defineKernel({ shaders: 'kv_cache_write', bindings: ['rw', 'rw', 'read', 'read'], overrides: { WG } });

/**
 * out = causal softmax(QKᵀ/√HS)·V per head; saves P in `att`. Overwrites `out` and `att`.
 * `variant` picks the shader (header); v2 with HS > 64 runs v1.
 */
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
  variant: AttentionVariant = ATTENTION_DEFAULT,
): void {
  checkAttentionForward(out, att, q, k, v, B, T, NH, HS);
  const rows = B * NH * T;
  if (variant === 'v2' && HS >= 1 && HS <= V2_MAX_HS) {
    if (rows === 0) return;
    const { k: kern, wg } = fwdV2(T, HS);
    const nblk = Math.ceil(T / wg);
    const groups = B * NH * nblk;
    ctx.run(kern, [u32(T), u32(NH), u32(HS), u32(nblk), u32(groups), f32(1 / Math.sqrt(HS))], [out, att, q, k, v], groups);
    return;
  }
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
  checkAttentionBackward(dq, dk, dv, dout, q, k, v, att, B, T, NH, HS);
  const n = B * T * NH * HS;
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
  checkKvCacheWrite(kCache, vCache, k, v, B, T, C, pos0, Tmax);
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
  checkAttentionCachedForward(out, q, kCache, vCache, B, T, NH, HS, pos0, Tmax);
  const C = NH * HS;
  const rows = B * NH * T;
  if (rows === 0) return;
  const L = pos0 + T;
  const scratch = ctx.zeros('f32', rows * L);
  ctx.run(fwd(false), [u32(rows), u32(T), u32(NH), u32(HS), u32(Tmax), u32(L), u32(pos0), f32(1 / Math.sqrt(HS))], [out, scratch, q, kCache, vCache], rows);
  ctx.dispose(scratch);
}
