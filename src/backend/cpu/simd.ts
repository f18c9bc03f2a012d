/**
 * The WebAssembly SIMD kernels of the CPU backend: loads them (wasm/kernels.ts, bytes committed in
 * ./wasm/kernels.wasm.ts) and exposes drop-in twins of the TypeScript kernels:
 *   simdMatmulForward           = matmulForward           (matmul.ts)
 *   simdMatmulBackward          = matmulBackward          (matmul.ts; null outputs skipped, accumulates)
 *   simdMatmulForwardQ8 / Q4    = matmulForwardQ8 / Q4    (quant.ts)
 *   simdMatmulBackwardInputQ8/Q4 = matmulBackwardInputQ8/Q4 (quant.ts)
 *   simdAttentionForward / Backward / CachedForward = attentionForward / … (attention.ts)
 *   simdRmsnormForward / Backward  = rmsnormForward / Backward  (rmsnorm.ts)
 *   simdSwigluForward / Backward   = swigluForward / Backward   (mlp.ts)
 *   simdLogSoftmaxForward / Backward = logSoftmaxForward / Backward (softmax.ts)
 *   simdRopeForward / Backward     = ropeForward / Backward     (rope.ts)
 *   simdResidualForward / Backward = residualForward / Backward (residual.ts)
 * Same arguments, same checks (the twins' own check functions), same semantics; `cpuBackend`
 * (index.ts) uses them, `cpuBackend64` and `cpuBackendReference` keep the TypeScript kernels.
 * Not kernels (plainly memory-bound, or measured small: each is a few % of a step at most — and
 * without resident tensors the copies in and out would cost as much as the TS loop; the sampler's
 * f64 maths also fixes the tokens a seed draws): embedding (a row gather), gather, the composite
 * mlpForward/mlpBackward (the model calls the pieces), KL, the clipped loss, AdamW, sampling.
 *
 * Loading: synchronous (new WebAssembly.Module / Instance on ~15 KB of bytes — allowed in workers
 * and Node; on a page's main thread too: headless Chromium 156 accepts these bytes there; a browser
 * that limits synchronous main-thread compiles makes the constructor throw, and the fallback below
 * takes over), on first use. Before that, SIMD support is
 * feature-detected with WebAssembly.validate on a 31-byte module using one SIMD instruction; if it
 * is missing (or instantiation throws), every function here runs its TypeScript twin instead and
 * says so once (console.warn). The module also uses bulk-memory instructions (memory.copy/fill),
 * which every engine with SIMD has had longer. Float64Array arguments (the f64 backend) always take
 * the TS path.
 *
 * Memory: one linear memory, owned here (it never shrinks).
 *   Unshared (no SharedArrayBuffer: a page that is not cross-origin isolated; always one thread):
 *   each call lays its operands out from the module's heap base (16-byte
 *   aligned) and grows the memory when a call needs more (the largest bench call, BENCH_400K's SwiGLU
 *   backward — five arrays of 2048 × 344 — needs ~14 MB). Growing detaches old views, so views are
 *   re-made after every grow, and no tensor can live there.
 *   Shared (wherever SharedArrayBuffer is, threads or not): a shared memory never detaches — after a grow the old SharedArrayBuffer objects
 *   still view its first bytes — so tensors CAN live there: an allocator (./arena.ts) hands out
 *   blocks for cpuBackend's f32 tensors (`simdTensor`, index.ts's zeros / upload; released by
 *   dispose, poisoned with NaN; a finalizer frees what is dropped undisposed) and for one per-call
 *   scratch block, which replaces `layout`'s heap-base regions.
 *
 * Copies: `place` decides per operand. A resident operand (a tensor in the shared memory, or a view
 * of one) is passed where it is — nothing is copied — unless its rows need padding to a multiple of
 * 4 (the gemm's row stride) or, being written, it overlaps another operand (an in-place call: the
 * kernel writes a copy, as before). Any other operand is copied in (TypedArray.set, or the padding
 * loop), and written ones copied back out (gradients copied in too: the kernel adds its sums to them,
 * f32(init + sum)). The forward's weight is always transposed into the scratch (the gemm reads
 * Wᵀ rows), by the kernels' `transposePad` (4 × 4 blocks in registers; it was a JS loop, 8.7 % of a
 * decode step of preset S, where N is the batch of prompts): O(C·OC) moves for O(N·C·OC)
 * multiply-adds. Same bits either way (tests/resident.test.ts).
 * What residency saved, measured (docs/performance.md): with copies, at N = 2048 on one thread, the
 * copies were 9–13% of a forward call and 11–21% of a backward call; on two threads a quarter of
 * the forward's calling-thread time (the helpers idle meanwhile) — the BENCH_400K forward went from
 * 39 to 28 ms, M's from 13.8 to 10.0 ms.
 *
 * Numerics: the kernel sums each element in ONE f32 lane in ascending order of the contracted index
 * (the TS twins use an f64 accumulator), so results differ from the TS twins by at most
 * K·2⁻²⁴·Σ|a·b| (K the sum length) plus one rounding of the result; observed, ≤ ~5·2⁻²⁴·Σ|a·b|
 * even at K = 2048 (tests/simd.test.ts prints the worst case of each run).
 * The weight gradient's sum over the N rows is K-blocked: chunks of 128 rows (DW_ROWS), each
 * chunk's f32 sum added to the gradient once — the error bound stays within (N + 2)·2⁻²⁴·(Σ|a·b| +
 * |init|) (128 + N/128 roundings instead of N + 1). Without it every 8-column strip of the result
 * re-read all of doutᵀ and inp at cache-unfriendly strides. A one-off A/B of this loop (three
 * alternating runs, CPU time per call, copies included, N = 2048, both gradients): 25–30 GFLOP/s
 * unblocked against 28–35 blocked (128 → 344: 25 vs 32–34; 64 → 172: 29–30 vs 33–35).
 * Deterministic, and independent of the tile an element falls in. The quantized variants
 * dequantize the weight with the TS code (dequantizeQ8/Q4) and run the same dense kernel, so on this
 * path, too, a quantized matmul equals the dense one on dequantized weights bit for bit.
 *
 * Attention and the row kernels copy every operand whole (one TypedArray.set each; the cached
 * forward only the cache rows in use) — O(size) moves for O(size) work in the row kernels, which
 * still pays because the TS loops run at a fraction of memcpy speed (bench/simd.ts prints both).
 * Their numerics: f32 sums and a polynomial e^x (a few ulps, the tests allow 4; its argument is
 * clamped to [−87, 88], so it never returns 0), not the f64 of the twins; tests/simd.test.ts derives a per-element bound for each
 * and prints the worst |Δ|/bound. The cached attention forward runs the same kernel as the full
 * one, so the two agree bit for bit (tested), as the TS twins do.
 *
 * Threads (./threads.ts): when the platform allows (Node; a cross-origin isolated page's workers)
 * and more than one thread is configured, the kernels are the shared-memory build of the same source,
 * on a shared WebAssembly.Memory created here, and every gemm (forward, input gradient, each weight
 * gradient's K-blocked sum) and attention call is split — gemm over output rows, attention over the
 * batch — between this thread and helper threads running the same module on the same memory. Every
 * output element is computed by one thread in the same order, so results are bit-identical for any
 * thread count (tests/threads.test.ts). The copies that remain stay on this thread. With one
 * thread configured, or on a page's main thread, the shared build runs here alone (no helpers; its
 * tensors still resident); without SharedArrayBuffer the unshared build does, as before threads. Of the row kernels SwiGLU (forward and backward, over elements) and the RMSNorm
 * forward (over rows) are split too; the others are not (memory-bound: the copies would dominate).
 *
 * Not here: the kernels (wasm/kernels.ts), the pool (./threads.ts), fused int8/int4 kernels (the
 * weights are dequantized to f32 first).
 */
import type { FloatArray } from '../types';
import { ALIGN, Arena } from './arena';
import { need, sizes } from './check';
import {
  attentionBackward,
  attentionCachedForward,
  attentionForward,
  checkAttentionBackward,
  checkAttentionCachedForward,
  checkAttentionForward,
} from './attention';
import { checkMatmulBackward, checkMatmulForward, matmulBackward, matmulForward } from './matmul';
import { checkSwigluBackward, checkSwigluForward, swigluBackward, swigluForward } from './mlp';
import {
  QBLOCK,
  dequantizeQ4,
  dequantizeQ8,
  matmulBackwardInputQ4,
  matmulBackwardInputQ8,
  matmulForwardQ4,
  matmulForwardQ8,
} from './quant';
import { checkResidualBackward, checkResidualForward, residualBackward, residualForward } from './residual';
import { checkRmsnormBackward, checkRmsnormForward, rmsnormBackward, rmsnormForward } from './rmsnorm';
import { checkRope, ropeBackward, ropeForward } from './rope';
import { checkLogSoftmaxBackward, checkLogSoftmaxForward, logSoftmaxBackward, logSoftmaxForward } from './softmax';
import { attnBackwardSplit, attnForwardSplit, blockedGemm, noPool, rmsnormForwardSplit, scratchCopies, startPool, swigluBackwardSplit, swigluForwardSplit, threadPlan } from './threads';
import { KERNELS_WASM_BASE64, KERNELS_WASM_SHARED_BASE64 } from './wasm/kernels.wasm';

/** The shared-memory build's maximum, in 64 KiB pages (scripts/build-wasm.mjs ASC_SHARED_FLAGS). */
const SHARED_MAX_PAGES = 65536;

interface Kernels {
  readonly memory: WebAssembly.Memory;
  heapBase(): number;
  gemm(a: number, ars: number, aks: number, b: number, J: number, out: number, R: number, K: number, acc: number): void;
  attnForward(q: number, k: number, v: number, out: number, att: number, B: number, T: number, NH: number, HS: number, Tkv: number, pos0: number, scale: number, kt: number, p: number): void;
  attnBackward(dq: number, dk: number, dv: number, dout: number, q: number, k: number, v: number, att: number, B: number, T: number, NH: number, HS: number, scale: number, vt: number, ds: number): void;
  rmsnormFwd(out: number, rstd: number, inp: number, w: number, N: number, C: number, eps: number): void;
  rmsnormBwd(dinp: number, dw: number, dout: number, inp: number, w: number, rstd: number, N: number, C: number, g: number): void;
  swigluFwd(out: number, a: number, b: number, N: number): void;
  swigluBwd(da: number, db: number, dout: number, a: number, b: number, N: number): void;
  logSoftmaxFwd(out: number, z: number, N: number, V: number, invT: number, e: number): void;
  logSoftmaxBwd(dz: number, dlp: number, lp: number, N: number, V: number, invT: number): void;
  ropeApply(out: number, inp: number, table: number, B: number, T: number, NH: number, HS: number, pos0: number, sgn: number, acc: number): void;
  axpy(out: number, a: number, b: number, N: number, s: number): void;
  transposePad(out: number, w: number, OC: number, C: number, OCp: number): void;
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
    kernels = instantiate();
    f32 = new Float32Array(kernels.memory.buffer);
    if (typeof SharedArrayBuffer === 'function' && kernels.memory.buffer instanceof SharedArrayBuffer) startArena(kernels);
  } catch (e) {
    kernels = null;
    unavailableReason = e instanceof Error ? e.message : String(e);
    console.warn(`[cpu backend] WebAssembly SIMD kernels unavailable (${unavailableReason}); using the TypeScript kernels`);
  }
  return kernels;
}

/**
 * The kernels: the shared-memory build when the platform has SharedArrayBuffer — with helper
 * threads (threads.ts) when more than one thread is configured and this thread may block, else on
 * this thread alone (tensors resident all the same; setCpuThreads can start helpers later) — or the
 * unshared build on this thread alone, saying why once in the console when it is the platform's doing.
 */
function instantiate(): Kernels {
  const plan = threadPlan();
  let why = plan.why;
  if (plan.threads > 1 || typeof SharedArrayBuffer === 'function') {
    try {
      const module = new WebAssembly.Module(decode(KERNELS_WASM_SHARED_BASE64));
      const memory = new WebAssembly.Memory({ initial: 1, maximum: SHARED_MAX_PAGES, shared: true });
      const k = new WebAssembly.Instance(module, { env: { memory } }).exports as unknown as Kernels;
      if (plan.threads > 1) startPool(module, memory);
      else noPool(why, { module, memory });
      return k;
    } catch (e) {
      why = plan.threads > 1 ? `no shared WebAssembly memory (${e instanceof Error ? e.message : String(e)})` : why;
    }
  }
  noPool(why);
  if (why.startsWith('no ')) console.info(`[cpu backend] WebAssembly SIMD kernels on one thread: ${why}`);
  return new WebAssembly.Instance(new WebAssembly.Module(decode(KERNELS_WASM_BASE64)), {}).exports as unknown as Kernels;
}

/** Whether the SIMD kernels are in use (loads them on first call); false → TypeScript fallback. */
export function simdAvailable(): boolean {
  return load() !== null;
}

/** Why the SIMD kernels are not in use ('' when they are, or when not tried yet). */
export function simdUnavailableReason(): string {
  return unavailableReason;
}

/** How many SIMD kernel calls have been served so far (tests check the backend really uses them). */
export function simdKernelCalls(): number {
  return calls;
}

const ceil4 = (n: number): number => (n + 3) & ~3;

/**
 * Reserves `floats` f32 slots per region, each 16-byte aligned, and returns the regions' element
 * offsets into `f32`: from the heap base, growing the memory when needed (unshared memory), or in
 * the per-call scratch block of the arena (shared memory; the block is replaced by a larger one
 * when a call needs more).
 */
function layout(k: Kernels, ...floats: number[]): number[] {
  let total = 0;
  for (const n of floats) total += ceil4(n);
  let at: number;
  if (arena !== null) {
    if (total * 4 > scratch.bytes) {
      if (scratch.bytes > 0) arena.free(scratch.at);
      const bytes = Math.max(total * 4, 2 * scratch.bytes, 1 << 16);
      const got = arena.alloc(bytes);
      if (got === null) throw new RangeError(`CPU backend: the kernels' memory cannot grow by ${bytes} bytes for a call's scratch`);
      scratch = { at: got, bytes };
    }
    at = scratch.at >> 2;
  } else {
    at = k.heapBase() >> 2;
    const bytes = (at + total) * 4;
    if (bytes > k.memory.buffer.byteLength) k.memory.grow(Math.ceil((bytes - k.memory.buffer.byteLength) / 65536));
  }
  if (f32.buffer !== k.memory.buffer) f32 = new Float32Array(k.memory.buffer);
  const offs: number[] = [];
  for (const n of floats) {
    offs.push(at);
    at += ceil4(n);
  }
  return offs;
}

// ───────────────────────── resident tensors ─────────────────────────
// With shared memory (threads), the CPU backend's f32 tensors can live IN the kernels' memory
// (`simdTensor`, used by cpuBackend's zeros / upload), so a kernel call works on them where they
// are: no copy in, no copy out. A shared memory never detaches when it grows (the old
// SharedArrayBuffer objects stay valid views of its first bytes), so such a tensor stays a valid
// Float32Array for its whole life. Every call still accepts any Float32Array: `place` copies
// exactly the operands that are not resident (or not laid out as the kernel needs), as before.

/** The allocator of the shared memory (null: unshared memory, nothing resident). */
let arena: Arena | null = null;
/** The per-call scratch block in the arena (layout). */
let scratch = { at: 0, bytes: 0 };
/** Every SharedArrayBuffer object the memory has handed out (one per size it has had). */
const memBuffers = new WeakSet<ArrayBufferLike>();
/** Resident tensors (the roots simdTensor made, not views) → their block. */
const roots = new WeakMap<Float32Array, number>();
/** Views of resident tensors (simdView) → their root, so a root lives as long as its views. */
const viewRoot = new WeakMap<Float32Array, Float32Array>();
/** Frees the block of a resident tensor that was dropped without simdRelease. */
const finalizer = typeof FinalizationRegistry === 'function' ? new FinalizationRegistry<number>((at) => releaseBlock(at)) : null;
/** Whether simdTensor makes resident tensors (setCpuResidency: tests and A/B timing). */
let residency = true;
/**
 * Most bytes of resident tensors: past it simdTensor returns null and the backend makes ordinary
 * arrays (also what happens when the memory cannot grow). 1 GiB keeps every address below 2³¹,
 * which the thread pool's Int32 control words carry.
 */
export const RESIDENT_MAX_BYTES = 1 << 30;
/** The cap in force (setCpuResidency lowers it for tests of the fallback). */
let residentCap = RESIDENT_MAX_BYTES;

function startArena(k: Kernels): void {
  memBuffers.add(k.memory.buffer);
  arena = new Arena(k.heapBase(), k.memory.buffer.byteLength, (bytes) => {
    const now = k.memory.buffer.byteLength;
    if (now + bytes > RESIDENT_MAX_BYTES + (1 << 26)) return null;
    try {
      k.memory.grow(Math.ceil(bytes / 65536));
    } catch {
      return null;
    }
    memBuffers.add(k.memory.buffer);
    f32 = new Float32Array(k.memory.buffer);
    return k.memory.buffer.byteLength;
  });
}

function releaseBlock(at: number): void {
  const size = arena!.free(at);
  // Poisoned: a read after release (a use after dispose) sees NaN, which the NaN guards catch.
  f32.fill(NaN, at >> 2, (at + size) >> 2);
}

/**
 * An f32 tensor of `n` elements resident in the kernels' memory — zeroed, or a copy of `from`
 * (an upload: written once, not zeroed first) — or null when there is none (unshared memory; no
 * SIMD; residency off; past RESIDENT_MAX_BYTES in resident tensors, or the memory cannot grow — the
 * caller then makes an ordinary array). Released by simdRelease, or when dropped (a finalizer).
 */
export function simdTensor(n: number, from?: Float32Array): Float32Array | null {
  const k = load();
  if (k === null || arena === null || !residency || n <= 0) return null;
  if (tensorBytes() + n * 4 > residentCap) return null;
  const at = arena.alloc(n * 4);
  if (at === null) return null;
  if (f32.buffer !== k.memory.buffer) f32 = new Float32Array(k.memory.buffer);
  if (from !== undefined) f32.set(from.subarray(0, n), at >> 2);
  else f32.fill(0, at >> 2, (at >> 2) + Math.ceil(n / (ALIGN / 4)) * (ALIGN / 4));
  const t = new Float32Array(k.memory.buffer, at, n);
  roots.set(t, at);
  finalizer?.register(t, at, t);
  return t;
}

/** Releases a tensor simdTensor made (true), or does nothing to any other array (false). */
export function simdRelease(t: Float32Array): boolean {
  const at = roots.get(t);
  if (at === undefined) return false;
  roots.delete(t);
  finalizer?.unregister(t);
  releaseBlock(at);
  return true;
}

/** t[offset, offset + length) as a view that keeps a resident root alive (Backend.view on the CPU). */
export function simdView(t: Float32Array, offset: number, length: number): Float32Array {
  const v = t.subarray(offset, offset + length);
  const root = roots.has(t) ? t : viewRoot.get(t);
  if (root !== undefined) viewRoot.set(v, root);
  return v;
}

/** Whether `t` lies in the kernels' memory (a resident tensor or a view of one). */
export function simdResident(t: FloatArray): boolean {
  return memBuffers.has(t.buffer);
}

/**
 * Turns resident tensors on or off for the simdTensor calls that follow (tests, A/B timing), and
 * sets how many bytes of them there may be (at most RESIDENT_MAX_BYTES; tests lower it to reach the
 * fallback to ordinary arrays).
 */
export function setCpuResidency(on: boolean, maxBytes = RESIDENT_MAX_BYTES): void {
  residency = on;
  residentCap = Math.min(maxBytes, RESIDENT_MAX_BYTES);
}

/** Bytes and blocks of resident tensors now (not the per-call scratch block), the memory's size; null without them. */
export function simdResidentStats(): { bytes: number; blocks: number; memoryBytes: number } | null {
  if (arena === null) return null;
  const s = arena.stats();
  return { bytes: tensorBytes(), blocks: s.blocks - (scratch.bytes > 0 ? 1 : 0), memoryBytes: s.end };
}

/** Bytes of the arena's live blocks that are tensors (all but the per-call scratch block). */
function tensorBytes(): number {
  return arena!.bytes - (scratch.bytes > 0 ? arena!.sizeOf(scratch.at)! : 0);
}

/** How a kernel call uses an operand: reads it; overwrites it; adds to it (reads, then writes). */
const IN = 0;
const OUT = 1;
const ACC = 2;
/**
 * An operand: the array, its element count, its use, and — when the kernel wants its rows padded —
 * [rows, cols, stride] (stride ≥ cols, the padding zero).
 */
type Arg = readonly [a: Float32Array, n: number, use: 0 | 1 | 2, rows?: number, cols?: number, stride?: number];

/** Operands to copy back after the call (place → finish): [array, element offset, arg]. */
let pending: [Float32Array, number, Arg][] = [];

/**
 * Where the kernel finds each operand, then `extra` scratch regions: element offsets into `f32`.
 * A resident operand is used where it is, unless its rows need padding, or — written (OUT, ACC) —
 * it overlaps another operand (an output allowed to alias an input, e.g. an in-place RoPE: the
 * kernel then writes a copy, as it always did). Every other operand gets a scratch region, is
 * copied in when read (IN, ACC; padded rows zeroed) and copied back by `finish` when written.
 */
function place(k: Kernels, args: readonly Arg[], extra: readonly number[] = []): number[] {
  calls++;
  const at = args.map(([a, n, use, rows, cols, stride], i): number => {
    if (!memBuffers.has(a.buffer) || (stride !== undefined && stride !== cols && rows! > 0)) return -1;
    const lo = a.byteOffset;
    const hi = lo + 4 * n;
    if (use !== IN) {
      // Any OTHER operand (the same array passed twice included) that shares a byte with this one.
      for (let j = 0; j < args.length; j++) {
        const [b, m] = args[j]!;
        if (j === i || !memBuffers.has(b.buffer)) continue;
        if (b.byteOffset < hi && lo < b.byteOffset + 4 * m) return -1;
      }
    }
    return lo >> 2;
  });
  const sizes: number[] = [];
  args.forEach(([, n, , rows, , stride], i) => {
    if (at[i]! < 0) sizes.push(stride !== undefined ? rows! * stride : n);
  });
  const regions = layout(k, ...sizes, ...extra);
  let r = 0;
  pending = [];
  args.forEach((arg, i) => {
    if (at[i]! >= 0) return;
    const [a, n, use, rows, cols, stride] = arg;
    at[i] = regions[r++]!;
    if (use !== OUT) {
      if (stride !== undefined) copyIn(at[i]!, a, rows!, cols!, stride);
      else f32.set(a.subarray(0, n), at[i]!);
    }
    if (use !== IN) pending.push([a, at[i]!, arg]);
  });
  return [...at, ...regions.slice(r)];
}

/** Copies the written operands that were not resident back out of the kernel's memory (after place). */
function finish(): void {
  for (const [a, off, [, n, , rows, cols, stride]] of pending) {
    if (stride !== undefined) copyOut(a, off, rows!, cols!, stride);
    else a.set(f32.subarray(off, off + n));
  }
  pending = [];
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
  const [pi, po, pwSrc, pw] = place(k, [
    [inp, N * C, IN],
    [out, N * OC, OUT, N, OC, OCp],
    [weight, OC * C, IN],
  ], [C * OCp]) as [number, number, number, number];
  k.transposePad(pw * 4, pwSrc * 4, OC, C, OCp); // Wᵀ [C × OCp], padding columns zero
  blockedGemm(k, pi * 4, C, 1, pw * 4, OCp, po * 4, N, C, 0, C);
  finish();
}

/**
 * Rows per chunk of the weight gradient's sum over N (header): 128 rows of a 4-column strip of doutᵀ
 * and of an 8-column strip of inp are 2 × 8 KB of cache lines, so both stay in L1 across a chunk.
 */
const DW_ROWS = 128;

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
  const args: Arg[] = [[dout, N * OC, IN]];
  if (dinp !== null) args.push([weight, OC * C, IN, OC, C, Cp], [dinp, N * C, ACC, N, C, Cp]);
  if (dweight !== null) args.push([inp, N * C, IN, N, C, Cp], [dweight, OC * C, ACC, OC, C, Cp]);
  const o = place(k, args);
  const pd = o[0]!;
  if (dinp !== null) blockedGemm(k, pd * 4, OC, 1, o[1]! * 4, Cp, o[2]! * 4, N, OC, 1, OC);
  // K-blocked (header): chunks of DW_ROWS rows of dout / inp, each chunk's sums added once.
  if (dweight !== null) blockedGemm(k, pd * 4, 1, OC, o[args.length - 2]! * 4, Cp, o[args.length - 1]! * 4, OC, N, 1, DW_ROWS);
  finish();
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

let wScratch: Float32Array = new Float32Array(0);

/**
 * The dense f32 weight [OC × C] of a Q8 (Int8Array) or Q4 (Uint8Array) matrix, in a reused scratch,
 * after the quantized op's own checks (quant.ts), so errors name that op; `x` is [N × C], `y` [N × OC].
 */
function dequantized(op: string, q: Int8Array | Uint8Array, scales: Uint16Array, B: number, T: number, C: number, OC: number, x: [string, FloatArray], y: [string, FloatArray]): Float32Array {
  sizes(op, { B, T, C, OC });
  if (C % QBLOCK !== 0) throw new RangeError(`${op}: C must be a multiple of ${QBLOCK} for quantized weights, got ${C}`);
  need(op, x[0], x[1], B * T * C);
  need(op, y[0], y[1], B * T * OC);
  if (wScratch.length < OC * C) {
    simdRelease(wScratch);
    wScratch = simdTensor(OC * C) ?? new Float32Array(OC * C);
  }
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

// ───────────────────────── attention and the row kernels ─────────────────────────
// Same pattern as the matmuls: the TS twin's checks, then `place` (every tensor here is used whole:
// a resident one where it is, any other copied in with one TypedArray.set), the kernel, `finish`
// (the written operands that were not resident copied out). Accumulated gradients that are copied
// are copied in and back out, so the kernel adds to them.

/**
 * An attention kernel's two scratch buffers (`first`, `second` floats), once per thread that may run
 * a share (threads.ts `scratchCopies`): `floats` in all, copy t at t·stride, `second` after `first`.
 */
function attnScratch(first: number, second: number): { floats: number; stride: number; second: number } {
  const stride = ceil4(first) + ceil4(second);
  return { floats: stride * scratchCopies(), stride, second: ceil4(first) };
}

/** out = causal softmax(QKᵀ/√HS)·V per head, P saved in att (attention.ts header), on the SIMD kernel when available. */
export function simdAttentionForward(out: FloatArray, att: FloatArray, q: FloatArray, k: FloatArray, v: FloatArray, B: number, T: number, NH: number, HS: number): void {
  const n = B * T * NH * HS;
  if (!fast(out, att, q, k, v) || n === 0) return attentionForward(out, att, q, k, v, B, T, NH, HS);
  checkAttentionForward(out, att, q, k, v, B, T, NH, HS);
  const kn = load()!;
  const na = B * NH * T * T;
  const sc = attnScratch(HS * ceil4(T), ceil4(T) + 4);
  const [pq, pk, pv, po, pa, ps] = place(kn, [
    [q as Float32Array, n, IN],
    [k as Float32Array, n, IN],
    [v as Float32Array, n, IN],
    [out as Float32Array, n, OUT],
    [att as Float32Array, na, OUT],
  ], [sc.floats]) as [number, number, number, number, number, number];
  attnForwardSplit(kn, pq * 4, pk * 4, pv * 4, po * 4, pa * 4, B, T, NH, HS, T, 0, 1 / Math.sqrt(HS), ps * 4, (ps + sc.second) * 4, sc.stride * 4);
  finish();
}

/**
 * Query rows at positions pos0..pos0+T−1 against cache rows 0..pos (attention.ts header), on the same
 * SIMD kernel as simdAttentionForward (so a cached forward equals the full one bit for bit). Resident
 * caches are read where they are (the kernel's key/value batch stride is then Tmax rows; it reads
 * only the pos0 + T rows in use of each); others have only those rows copied in.
 */
export function simdAttentionCachedForward(
  out: FloatArray, q: FloatArray, kCache: FloatArray, vCache: FloatArray,
  B: number, T: number, NH: number, HS: number, pos0: number, Tmax: number,
): void {
  const C = NH * HS;
  const n = B * T * C;
  if (!fast(out, q, kCache, vCache) || n === 0) return attentionCachedForward(out, q, kCache, vCache, B, T, NH, HS, pos0, Tmax);
  checkAttentionCachedForward(out, q, kCache, vCache, B, T, NH, HS, pos0, Tmax);
  const kn = load()!;
  const L = pos0 + T;
  const sc = attnScratch(HS * ceil4(L), ceil4(L) + 4);
  const kc = kCache as Float32Array, vc = vCache as Float32Array;
  const inPlace = simdResident(kc) && simdResident(vc);
  const cache = inPlace ? 0 : B * L * C; // floats per copied cache
  const [pq, po, pk0, pv0, ps] = place(kn, [
    [q as Float32Array, n, IN],
    [out as Float32Array, n, OUT],
  ], [cache, cache, sc.floats]) as [number, number, number, number, number];
  let pk = pk0, pv = pv0;
  if (inPlace) {
    pk = kc.byteOffset >> 2;
    pv = vc.byteOffset >> 2;
  } else {
    for (let b = 0; b < B; b++) {
      f32.set(kc.subarray(b * Tmax * C, (b * Tmax + L) * C), pk + b * L * C);
      f32.set(vc.subarray(b * Tmax * C, (b * Tmax + L) * C), pv + b * L * C);
    }
  }
  attnForwardSplit(kn, pq * 4, pk * 4, pv * 4, po * 4, 0, B, T, NH, HS, inPlace ? Tmax : L, pos0, 1 / Math.sqrt(HS), ps * 4, (ps + sc.second) * 4, sc.stride * 4);
  finish();
}

/** ∂/∂q, ∂/∂k, ∂/∂v of causal attention (attention.ts header), on the SIMD kernel when available. Accumulates. */
export function simdAttentionBackward(
  dq: FloatArray, dk: FloatArray, dv: FloatArray, dout: FloatArray, q: FloatArray, k: FloatArray, v: FloatArray, att: FloatArray,
  B: number, T: number, NH: number, HS: number,
): void {
  const n = B * T * NH * HS;
  if (!fast(dq, dk, dv, dout, q, k, v, att) || n === 0) return attentionBackward(dq, dk, dv, dout, q, k, v, att, B, T, NH, HS);
  checkAttentionBackward(dq, dk, dv, dout, q, k, v, att, B, T, NH, HS);
  const kn = load()!;
  const na = B * NH * T * T;
  const sc = attnScratch(HS * ceil4(T), T * T + 4);
  const grads = [dq, dk, dv].map((a): Arg => [a as Float32Array, n, ACC]);
  const ins = [dout, q, k, v].map((a): Arg => [a as Float32Array, n, IN]);
  const o = place(kn, [...grads, ...ins, [att as Float32Array, na, IN]], [sc.floats]);
  attnBackwardSplit(kn, o[0]! * 4, o[1]! * 4, o[2]! * 4, o[3]! * 4, o[4]! * 4, o[5]! * 4, o[6]! * 4, o[7]! * 4, B, T, NH, HS, 1 / Math.sqrt(HS), o[8]! * 4, (o[8]! + sc.second) * 4, sc.stride * 4);
  finish();
}

/** RMSNorm forward (rmsnorm.ts header), on the SIMD kernel when available. Overwrites out and rstd. */
export function simdRmsnormForward(out: FloatArray, rstd: FloatArray, inp: FloatArray, weight: FloatArray, B: number, T: number, C: number, eps = 1e-5): void {
  const N = B * T;
  if (!fast(out, rstd, inp, weight) || N * C === 0) return rmsnormForward(out, rstd, inp, weight, B, T, C, eps);
  checkRmsnormForward(out, rstd, inp, weight, B, T, C);
  const kn = load()!;
  const [po, pr, pi, pw] = place(kn, [
    [out as Float32Array, N * C, OUT],
    [rstd as Float32Array, N, OUT],
    [inp as Float32Array, N * C, IN],
    [weight as Float32Array, C, IN],
  ]) as [number, number, number, number];
  rmsnormForwardSplit(kn, po * 4, pr * 4, pi * 4, pw * 4, N, C, eps);
  finish();
}

/** RMSNorm backward (rmsnorm.ts header), on the SIMD kernel when available. Accumulates into dinp and dweight. */
export function simdRmsnormBackward(
  dinp: FloatArray, dweight: FloatArray, dout: FloatArray, inp: FloatArray, weight: FloatArray, rstd: FloatArray,
  B: number, T: number, C: number,
): void {
  const N = B * T;
  if (!fast(dinp, dweight, dout, inp, weight, rstd) || N * C === 0) return rmsnormBackward(dinp, dweight, dout, inp, weight, rstd, B, T, C);
  checkRmsnormBackward(dinp, dweight, dout, inp, weight, rstd, B, T, C);
  const kn = load()!;
  const o = place(kn, [
    [dinp as Float32Array, N * C, ACC],
    [dweight as Float32Array, C, ACC],
    [dout as Float32Array, N * C, IN],
    [inp as Float32Array, N * C, IN],
    [weight as Float32Array, C, IN],
    [rstd as Float32Array, N, IN],
  ], [C]);
  kn.rmsnormBwd(o[0]! * 4, o[1]! * 4, o[2]! * 4, o[3]! * 4, o[4]! * 4, o[5]! * 4, N, C, o[6]! * 4);
  finish();
}

/** out = silu(a) ⊙ b (mlp.ts header), on the SIMD kernel when available. Overwrites out. */
export function simdSwigluForward(out: FloatArray, a: FloatArray, b: FloatArray, N: number): void {
  if (!fast(out, a, b) || N === 0) return swigluForward(out, a, b, N);
  checkSwigluForward(out, a, b, N);
  const kn = load()!;
  const [po, pa, pb] = place(kn, [
    [out as Float32Array, N, OUT],
    [a as Float32Array, N, IN],
    [b as Float32Array, N, IN],
  ]) as [number, number, number];
  swigluForwardSplit(kn, po * 4, pa * 4, pb * 4, N);
  finish();
}

/** SwiGLU backward (mlp.ts header), on the SIMD kernel when available. Accumulates into da, db. */
export function simdSwigluBackward(da: FloatArray, db: FloatArray, dout: FloatArray, a: FloatArray, b: FloatArray, N: number): void {
  if (!fast(da, db, dout, a, b) || N === 0) return swigluBackward(da, db, dout, a, b, N);
  checkSwigluBackward(da, db, dout, a, b, N);
  const kn = load()!;
  const o = place(kn, [da, db, dout, a, b].map((x, i): Arg => [x as Float32Array, N, i < 2 ? ACC : IN]));
  swigluBackwardSplit(kn, o[0]! * 4, o[1]! * 4, o[2]! * 4, o[3]! * 4, o[4]! * 4, N);
  finish();
}

/** log_softmax(logits/τ) per row (softmax.ts header), on the SIMD kernel when available. `out` may be `logits`. */
export function simdLogSoftmaxForward(out: FloatArray, logits: FloatArray, N: number, V: number, temperature = 1): void {
  if (!fast(out, logits) || N * V === 0) return logSoftmaxForward(out, logits, N, V, temperature);
  checkLogSoftmaxForward(out, logits, N, V, temperature);
  const kn = load()!;
  const [po, pz, pe] = place(kn, [
    [out as Float32Array, N * V, OUT],
    [logits as Float32Array, N * V, IN],
  ], [ceil4(V)]) as [number, number, number];
  kn.logSoftmaxFwd(po * 4, pz * 4, N, V, 1 / temperature, pe * 4);
  finish();
}

/** dlogits += (dlogp − p Σ dlogp)/τ per row (softmax.ts header), on the SIMD kernel when available. Accumulates. */
export function simdLogSoftmaxBackward(dlogits: FloatArray, dlogp: FloatArray, logp: FloatArray, N: number, V: number, temperature = 1): void {
  if (!fast(dlogits, dlogp, logp) || N * V === 0) return logSoftmaxBackward(dlogits, dlogp, logp, N, V, temperature);
  checkLogSoftmaxBackward(dlogits, dlogp, logp, N, V, temperature);
  const kn = load()!;
  const o = place(kn, [dlogits, dlogp, logp].map((x, i): Arg => [x as Float32Array, N * V, i === 0 ? ACC : IN]));
  kn.logSoftmaxBwd(o[0]! * 4, o[1]! * 4, o[2]! * 4, N, V, 1 / temperature);
  finish();
}

/** RoPE on the SIMD kernel: forward (sgn 1, overwrites; out may be inp) or backward (sgn −1, accumulates). */
function rope(op: 'ropeForward' | 'ropeBackward', out: Float32Array, inp: Float32Array, table: Float32Array, B: number, T: number, NH: number, HS: number, pos0: number): void {
  checkRope(op, out, inp, table, B, T, NH, HS, pos0);
  const kn = load()!;
  const n = B * T * NH * HS, nt = (pos0 + T) * HS;
  const bwd = op === 'ropeBackward';
  const [po, pi, pt] = place(kn, [
    [out, n, bwd ? ACC : OUT],
    [inp, n, IN],
    [table, nt, IN],
  ]) as [number, number, number];
  kn.ropeApply(po * 4, pi * 4, pt * 4, B, T, NH, HS, pos0, bwd ? -1 : 1, bwd ? 1 : 0);
  finish();
}

/** y = R(φ) x per pair (rope.ts header), on the SIMD kernel when available. Overwrites out (which may be inp). */
export function simdRopeForward(out: FloatArray, inp: FloatArray, table: FloatArray, B: number, T: number, NH: number, HS: number, pos0 = 0): void {
  if (!fast(out, inp, table) || B * T * NH * HS === 0) return ropeForward(out, inp, table, B, T, NH, HS, pos0);
  rope('ropeForward', out as Float32Array, inp as Float32Array, table as Float32Array, B, T, NH, HS, pos0);
}

/** dx += R(φ)ᵀ dy (rope.ts header), on the SIMD kernel when available. Accumulates into dinp. */
export function simdRopeBackward(dinp: FloatArray, dout: FloatArray, table: FloatArray, B: number, T: number, NH: number, HS: number, pos0 = 0): void {
  if (!fast(dinp, dout, table) || B * T * NH * HS === 0) return ropeBackward(dinp, dout, table, B, T, NH, HS, pos0);
  rope('ropeBackward', dinp as Float32Array, dout as Float32Array, table as Float32Array, B, T, NH, HS, pos0);
}

/** out = a + scale·b (residual.ts header), on the SIMD kernel when available. `out` may alias a or b. */
export function simdResidualForward(out: FloatArray, a: FloatArray, b: FloatArray, N: number, scale = 1): void {
  if (!fast(out, a, b) || N === 0) return residualForward(out, a, b, N, scale);
  checkResidualForward(out, a, b, N);
  const kn = load()!;
  const [po, pa, pb] = place(kn, [
    [out as Float32Array, N, OUT],
    [a as Float32Array, N, IN],
    [b as Float32Array, N, IN],
  ]) as [number, number, number];
  kn.axpy(po * 4, pa * 4, pb * 4, N, scale);
  finish();
}

/** da += dout, db += scale·dout (residual.ts header; null skips one), on the SIMD kernel when available. */
export function simdResidualBackward(da: FloatArray | null, db: FloatArray | null, dout: FloatArray, N: number, scale = 1): void {
  const outs = [da, db].filter((x): x is FloatArray => x !== null);
  if (!fast(dout, ...outs) || N === 0) return residualBackward(da, db, dout, N, scale);
  checkResidualBackward(da, db, dout, N);
  const kn = load()!;
  for (const [g, s] of [
    [da, 1],
    [db, scale],
  ] as const) {
    if (g === null) continue;
    const [pg, pd] = place(kn, [
      [g as Float32Array, N, ACC],
      [dout as Float32Array, N, IN],
    ]) as [number, number];
    kn.axpy(pg * 4, pg * 4, pd * 4, N, s);
    finish();
  }
}
