/**
 * WebGPU rotary position embedding (forward and backward) — thin wrappers over shaders/rope.wgsl
 * (override BACKWARD selects the direction); twins: ropeForward / ropeBackward in
 * src/backend/cpu/rope.ts, same arguments after the context. The (cos, sin) table is the CPU's
 * `ropeTable`, uploaded once by the caller, so both backends rotate by the very same numbers.
 * `out` may be `inp` (in place, as the model calls it): the input is then copied first, since
 * WebGPU cannot bind one buffer as both read and read_write.
 *
 * Not here: building the table (cpu/rope.ts `ropeTable`), partial rotary, NTK/YaRN scaling.
 */
import { checkRope } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, u32 } from './kernel';

const WG = 64;
const kernel = (backward: boolean) => defineKernel({ shaders: 'rope', bindings: ['rw', 'read', 'read'], overrides: { WG, BACKWARD: backward ? 1 : 0 } });

function rope(
  ctx: GpuContext,
  op: string,
  backward: boolean,
  out: GpuTensor<'f32'>,
  inp: GpuTensor<'f32'>,
  table: GpuTensor<'f32'>,
  B: number,
  T: number,
  NH: number,
  HS: number,
  pos0: number,
): void {
  checkRope(op, out, inp, table, B, T, NH, HS, pos0);
  const n = B * T * NH * HS;
  const pairs = n / 2;
  if (pairs === 0) return;
  const src = out.buffer === inp.buffer ? ctx.clone(inp) : inp;
  ctx.run(kernel(backward), [u32(pairs), u32(T), u32(NH), u32(HS / 2), u32(pos0)], [out, src, table], Math.ceil(pairs / WG));
  if (src !== inp) ctx.dispose(src);
}

/** y = R(φ) x per pair, φ from table row pos0 + t. Overwrites `out`; `out` may be `inp`. */
export function ropeForward(ctx: GpuContext, out: GpuTensor<'f32'>, inp: GpuTensor<'f32'>, table: GpuTensor<'f32'>, B: number, T: number, NH: number, HS: number, pos0 = 0): void {
  rope(ctx, 'ropeForward', false, out, inp, table, B, T, NH, HS, pos0);
}

/** dx += R(φ)ᵀ dy. Accumulates into `dinp`. */
export function ropeBackward(ctx: GpuContext, dinp: GpuTensor<'f32'>, dout: GpuTensor<'f32'>, table: GpuTensor<'f32'>, B: number, T: number, NH: number, HS: number, pos0 = 0): void {
  rope(ctx, 'ropeBackward', true, dinp, dout, table, B, T, NH, HS, pos0);
}
