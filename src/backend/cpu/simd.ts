/**
 * The WebAssembly SIMD matmul family of the CPU backend: loads the kernels (wasm/kernels.ts, bytes
 * committed in ./wasm/kernels.wasm.ts) and exposes drop-in twins of the TypeScript matmuls:
 *   simdMatmulForward           = matmulForward           (matmul.ts)
 *   simdMatmulBackward          = matmulBackward          (matmul.ts; null outputs skipped, accumulates)
 *   simdMatmulForwardQ8 / Q4    = matmulForwardQ8 / Q4    (quant.ts)
 *   simdMatmulBackwardInputQ8/Q4 = matmulBackwardInputQ8/Q4 (quant.ts)
 * Same arguments, same checks, same semantics; `cpuBackend` (index.ts) uses them, `cpuBackend64`
 * and `cpuBackendReference` keep the TypeScript kernels.
 *
 * Loading: synchronous (new WebAssembly.Module / Instance on ~1.3 KB of bytes — allowed in workers
 * and Node, and under every browser's main-thread limit), on first use. Before that, SIMD support is
 * feature-detected with WebAssembly.validate on a 31-byte module using one SIMD instruction; if it
 * is missing (or instantiation throws), every function here runs its TypeScript twin instead and
 * says so once (console.warn). Float64Array arguments (the f64 backend) always take the TS path.
 *
 * Memory: one linear memory, owned here; each call lays its operands out from the module's heap
 * base (16-byte aligned) and grows the memory when a call needs more (it never shrinks; the largest
 * bench call, BENCH_400K's w2 backward — 2048 rows, C 344, OC 128, both gradients — needs ~7 MB).
 * Growing detaches old views, so views are re-made after every grow.
 *
 * Copies, and why this is still faster: each call copies its inputs in (TypedArray.set, or a
 * transposing/padding loop for W in the forward and for rows whose width is not a multiple of 4)
 * and its result out (gradients are copied in too: the kernel adds its sums to them, f32(init + sum),
 * and they are copied back), i.e. O(N·C + N·OC + OC·C) element moves for O(N·C·OC) multiply-adds —
 * at the bench shapes (C, OC ≥ 32) at least ~32 flops per moved element. Measured at N = 2048 (bench
 * shapes): the copies are 9–13% of a forward call and 11–21% of a backward call (bench/simd.ts
 * includes them).
 * Keeping tensors resident in wasm memory would remove the copies but not the detach-on-grow problem
 * (every handle would be a view that a grow invalidates); not done.
 *
 * Numerics: the kernel sums each element in ONE f32 lane in ascending order of the contracted index
 * (the TS twins use an f64 accumulator), so results differ from the TS twins by at most
 * K·2⁻²⁴·Σ|a·b| (K the sum length) plus one rounding of the result; observed, ≤ ~5·2⁻²⁴·Σ|a·b|
 * even at K = 2048 (tests/simd.test.ts prints the worst case of each run).
 * Deterministic, and independent of the tile an element falls in. The quantized variants
 * dequantize the weight with the TS code (dequantizeQ8/Q4) and run the same dense kernel, so on this
 * path, too, a quantized matmul equals the dense one on dequantized weights bit for bit.
 *
 * Not here: the kernel (wasm/kernels.ts), fused int8/int4 kernels (the weights are dequantized to
 * f32 first), attention and the row kernels (still TypeScript).
 */
import type { FloatArray } from '../types';
import { need, sizes } from './check';
import { checkMatmulBackward, checkMatmulForward, matmulBackward, matmulForward } from './matmul';
import {
  QBLOCK,
  dequantizeQ4,
  dequantizeQ8,
  matmulBackwardInputQ4,
  matmulBackwardInputQ8,
  matmulForwardQ4,
  matmulForwardQ8,
} from './quant';
import { KERNELS_WASM_BASE64 } from './wasm/kernels.wasm';

interface Kernels {
  readonly memory: WebAssembly.Memory;
  heapBase(): number;
  gemm(a: number, ars: number, aks: number, b: number, J: number, out: number, R: number, K: number, acc: number): void;
}

/** (i32.const 0; i8x16.splat; i8x16.popcnt) in a function returning v128: validates iff SIMD is there. */
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);

let kernels: Kernels | null | undefined; // undefined: not tried yet; null: unavailable
let unavailableReason = '';
let f32: Float32Array = new Float32Array(0);
let calls = 0;

function decode(b64: string): Uint8Array<ArrayBuffer> {
  const s = atob(b64);
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return bytes;
}

function load(): Kernels | null {
  if (kernels !== undefined) return kernels;
  try {
    if (typeof WebAssembly !== 'object') throw new Error('no WebAssembly');
    if (!WebAssembly.validate(SIMD_PROBE)) throw new Error('WebAssembly SIMD (v128) is not supported here');
    const inst = new WebAssembly.Instance(new WebAssembly.Module(decode(KERNELS_WASM_BASE64)), {});
    kernels = inst.exports as unknown as Kernels;
    f32 = new Float32Array(kernels.memory.buffer);
  } catch (e) {
    kernels = null;
    unavailableReason = e instanceof Error ? e.message : String(e);
    console.warn(`[cpu backend] WebAssembly SIMD kernels unavailable (${unavailableReason}); using the TypeScript matmuls`);
  }
  return kernels;
}

/** Whether the SIMD kernels are in use (loads them on first call); false → TypeScript fallback. */
export function simdAvailable(): boolean {
  return load() !== null;
}

/** Why the SIMD kernels are not in use ('' when they are, or when not tried yet). */
export function simdUnavailableReason(): string {
  return unavailableReason;
}

/** How many matmul calls the SIMD kernel has served so far (tests check the backend really uses it). */
export function simdKernelCalls(): number {
  return calls;
}

const ceil4 = (n: number): number => (n + 3) & ~3;

/**
 * Reserves `floats` f32 slots per region, each 16-byte aligned, from the heap base; grows the memory
 * if needed. Returns the regions' element offsets into `f32`.
 */
function layout(k: Kernels, ...floats: number[]): number[] {
  const base = k.heapBase() >> 2;
  const offs: number[] = [];
  let at = base;
  for (const n of floats) {
    offs.push(at);
    at += ceil4(n);
  }
  const bytes = at * 4;
  if (bytes > k.memory.buffer.byteLength) {
    k.memory.grow(Math.ceil((bytes - k.memory.buffer.byteLength) / 65536));
    f32 = new Float32Array(k.memory.buffer);
  } else if (f32.buffer !== k.memory.buffer) {
    f32 = new Float32Array(k.memory.buffer);
  }
  return offs;
}

/** Copies src [rows × cols] into f32 at `at` with row stride `stride` (≥ cols), zeroing the padding. */
function copyIn(at: number, src: Float32Array, rows: number, cols: number, stride: number): void {
  if (stride === cols) {
    f32.set(src.subarray(0, rows * cols), at);
    return;
  }
  for (let r = 0; r < rows; r++) {
    f32.set(src.subarray(r * cols, (r + 1) * cols), at + r * stride);
    f32.fill(0, at + r * stride + cols, at + (r + 1) * stride);
  }
}

/** dst[r·cols + c] = f32[at + r·stride + c]. */
function copyOut(dst: Float32Array, at: number, rows: number, cols: number, stride: number): void {
  if (stride === cols) {
    dst.set(f32.subarray(at, at + rows * cols));
    return;
  }
  for (let r = 0; r < rows; r++) dst.set(f32.subarray(at + r * stride, at + r * stride + cols), r * cols);
}

/** out = inp · Wᵀ on the kernel; all f32, sizes already checked. */
function forwardF32(k: Kernels, out: Float32Array, inp: Float32Array, weight: Float32Array, N: number, C: number, OC: number): void {
  const OCp = ceil4(OC);
  const [pw, pi, po] = layout(k, C * OCp, N * C, N * OCp) as [number, number, number];
  // Wᵀ [C × OCp], padding columns zero.
  for (let c = 0; c < C; c++) {
    const row = pw + c * OCp;
    for (let o = 0; o < OC; o++) f32[row + o] = weight[o * C + c]!;
    for (let o = OC; o < OCp; o++) f32[row + o] = 0;
  }
  f32.set(inp.subarray(0, N * C), pi);
  calls++;
  k.gemm(pi * 4, C, 1, pw * 4, OCp, po * 4, N, C, 0);
  copyOut(out, po, N, OC, OCp);
}

/** dinp += dout · W and/or dW += doutᵀ · inp on the kernel; all f32, sizes already checked. */
function backwardF32(
  k: Kernels,
  dinp: Float32Array | null,
  dweight: Float32Array | null,
  dout: Float32Array,
  inp: Float32Array,
  weight: Float32Array,
  N: number,
  C: number,
  OC: number,
): void {
  const Cp = ceil4(C);
  const wantIn = dinp !== null;
  const wantW = dweight !== null;
  const [pd, pw, pi, pgi, pgw] = layout(k, N * OC, wantIn ? OC * Cp : 0, wantW ? N * Cp : 0, wantIn ? N * Cp : 0, wantW ? OC * Cp : 0) as [
    number,
    number,
    number,
    number,
    number,
  ];
  f32.set(dout.subarray(0, N * OC), pd);
  if (dinp !== null) {
    copyIn(pw, weight, OC, C, Cp);
    copyIn(pgi, dinp, N, C, Cp);
    calls++;
    k.gemm(pd * 4, OC, 1, pw * 4, Cp, pgi * 4, N, OC, 1);
    copyOut(dinp, pgi, N, C, Cp);
  }
  if (dweight !== null) {
    copyIn(pi, inp, N, C, Cp);
    copyIn(pgw, dweight, OC, C, Cp);
    calls++;
    k.gemm(pd * 4, 1, OC, pi * 4, Cp, pgw * 4, OC, N, 1);
    copyOut(dweight, pgw, OC, C, Cp);
  }
}

const isF32 = (a: FloatArray): a is Float32Array => a instanceof Float32Array;

/** out = inp · Wᵀ (matmul.ts header), on the SIMD kernel when it is available. Overwrites `out`. */
export function simdMatmulForward(out: FloatArray, inp: FloatArray, weight: FloatArray, B: number, T: number, C: number, OC: number): void {
  const k = load();
  if (k === null || !isF32(out) || !isF32(inp) || !isF32(weight)) return matmulForward(out, inp, weight, B, T, C, OC);
  const N = checkMatmulForward(out, inp, weight, B, T, C, OC);
  if (N * OC > 0) forwardF32(k, out, inp, weight, N, C, OC);
}

/** dinp += dout · W, dW += doutᵀ · inp (matmul.ts header), on the SIMD kernel when available. */
export function simdMatmulBackward(
  dinp: FloatArray | null,
  dweight: FloatArray | null,
  dout: FloatArray,
  inp: FloatArray,
  weight: FloatArray,
  B: number,
  T: number,
  C: number,
  OC: number,
): void {
  const k = load();
  const ok = k !== null && isF32(dout) && isF32(inp) && isF32(weight) && (dinp === null || isF32(dinp)) && (dweight === null || isF32(dweight));
  if (!ok) return matmulBackward(dinp, dweight, dout, inp, weight, B, T, C, OC);
  const N = checkMatmulBackward(dinp, dweight, dout, inp, weight, B, T, C, OC);
  if (N * C * OC === 0 || (dinp === null && dweight === null)) return;
  backwardF32(k, dinp as Float32Array | null, dweight as Float32Array | null, dout, inp, weight, N, C, OC);
}

let wScratch = new Float32Array(0);

/**
 * The dense f32 weight [OC × C] of a Q8 (Int8Array) or Q4 (Uint8Array) matrix, in a reused scratch,
 * after the quantized op's own checks (quant.ts), so errors name that op; `x` is [N × C], `y` [N × OC].
 */
function dequantized(op: string, q: Int8Array | Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number, x: [string, FloatArray], y: [string, FloatArray]): Float32Array {
  sizes(op, { B, T, C, OC });
  if (C % QBLOCK !== 0) throw new RangeError(`${op}: C must be a multiple of ${QBLOCK} for quantized weights, got ${C}`);
  need(op, x[0], x[1], B * T * C);
  need(op, y[0], y[1], B * T * OC);
  if (wScratch.length < OC * C) wScratch = new Float32Array(OC * C);
  const w = wScratch.subarray(0, OC * C);
  return q instanceof Int8Array ? dequantizeQ8(q, scales, OC, C, w) : dequantizeQ4(q, scales, OC, C, w);
}

/** Whether the SIMD path serves these float arguments (kernels loaded, all Float32Array). */
const fast = (...a: FloatArray[]): boolean => load() !== null && a.every(isF32);

/** out = inp · Wᵀ for a Q8 weight (quant.ts header): dequantized (TS), then the SIMD dense kernel. */
export function simdMatmulForwardQ8(out: FloatArray, inp: FloatArray, q: Int8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  if (!fast(out, inp)) return matmulForwardQ8(out, inp, q, scales, B, T, C, OC);
  simdMatmulForward(out, inp, dequantized('matmulForwardQ8', q, scales, B, T, C, OC, ['inp', inp], ['out', out]), B, T, C, OC);
}

/** out = inp · Wᵀ for a Q4 weight (quant.ts header): dequantized (TS), then the SIMD dense kernel. */
export function simdMatmulForwardQ4(out: FloatArray, inp: FloatArray, q: Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  if (!fast(out, inp)) return matmulForwardQ4(out, inp, q, scales, B, T, C, OC);
  simdMatmulForward(out, inp, dequantized('matmulForwardQ4', q, scales, B, T, C, OC, ['inp', inp], ['out', out]), B, T, C, OC);
}

/** dinp += dout · W for a Q8 weight: dequantized (TS), then the SIMD dense kernel. Accumulates. */
export function simdMatmulBackwardInputQ8(dinp: FloatArray, dout: FloatArray, q: Int8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  if (!fast(dinp, dout)) return matmulBackwardInputQ8(dinp, dout, q, scales, B, T, C, OC);
  const w = dequantized('matmulBackwardInputQ8', q, scales, B, T, C, OC, ['dinp', dinp], ['dout', dout]);
  simdMatmulBackward(dinp, null, dout, w, w, B, T, C, OC);
}

/** dinp += dout · W for a Q4 weight: dequantized (TS), then the SIMD dense kernel. Accumulates. */
export function simdMatmulBackwardInputQ4(dinp: FloatArray, dout: FloatArray, q: Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number): void {
  if (!fast(dinp, dout)) return matmulBackwardInputQ4(dinp, dout, q, scales, B, T, C, OC);
  const w = dequantized('matmulBackwardInputQ4', q, scales, B, T, C, OC, ['dinp', dinp], ['dout', dout]);
  simdMatmulBackward(dinp, null, dout, w, w, B, T, C, OC);
}
