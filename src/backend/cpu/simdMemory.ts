/**
 * The memory side of the CPU backend's WebAssembly SIMD kernels: loading the module (synchronously,
 * on first use; without WebAssembly SIMD every caller falls back to the TypeScript kernels, and the
 * console says why once), its one linear memory, the f32 tensors that live in that memory when it is
 * shared (resident: a kernel call reads and writes them where they are), and `place` / `finish`,
 * which put each operand of a call where the kernel reads it and copy the written ones back.
 *
 * Memory: unshared (no SharedArrayBuffer) — operands are laid out from the heap base on every call,
 * growing the memory when needed (growing detaches old views, so nothing can stay there); shared —
 * it never detaches, so an allocator (arena.ts) hands out blocks for resident tensors and for one
 * per-call scratch block. A resident operand is passed where it is unless its rows need padding to
 * a multiple of 4 or, being written, it overlaps another operand; every other operand is copied.
 *
 * Not here: the ops (simd.ts), the kernels (wasm/kernels.ts), the helper threads (threads.ts).
 */
import type { FloatArray } from '../types';
import { ALIGN, Arena } from './arena';
import type { Kernels } from './kernelExports';

export type { Kernels } from './kernelExports';
import { noPool, startPool, threadPlan } from './threads';
import { KERNELS_WASM_BASE64, KERNELS_WASM_RELAXED_BASE64, KERNELS_WASM_SHARED_BASE64 } from './wasm/kernels.wasm';

/** The shared-memory build's maximum, in 64 KiB pages (scripts/build-wasm.mjs ASC_SHARED_FLAGS). */
const SHARED_MAX_PAGES = 65536;


/** The typed arrays a kernel call can take: f32 tensors, and the int8 / packed int4 / f16-bits arrays of a quantized weight. */
export type KernelArray = Float32Array | Int8Array | Uint8Array | Uint16Array;

/** (i32.const 0; i8x16.splat; i8x16.popcnt) in a function returning v128: validates iff SIMD is there. */
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);

/**
 * probe(c): lane 1 of i32x4.relaxed_dot_i8x16_i7x16_add_s(a, b, splat(c)) for a = (…, −127, 127,
 * −100, 5, …) and b = (…, 127, 127, 127, 127, …): exactly −12065 + c where the engine computes the
 * 8-bit dot product as the relaxed-SIMD proposal defines it for b in [0, 127]. Some engines validate
 * the instruction and compute something else (Node 20's V8 behind its flag doubles it), so the
 * relaxed build runs only where this gives the exact sum.
 */
const RELAXED_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 6, 1, 96, 1, 127, 1, 127, 3, 2, 1, 0, 4, 5, 1, 112, 1, 1, 1, 5, 3, 1, 0, 0, 7, 9, 1, 5, 112, 114, 111, 98, 101, 0, 0, 9, 6, 1, 0, 65, 1, 11, 0, 10, 61, 1, 59, 1, 2, 123, 253, 12, 255, 254, 3, 4, 129, 127, 156, 5, 0, 0, 0, 0, 1, 1, 1, 1, 33, 1, 253, 12, 1, 1, 1, 1, 127, 127, 127, 127, 1, 2, 3, 4, 100, 100, 100, 100, 33, 2, 32, 1, 32, 2, 32, 0, 253, 17, 253, 147, 2, 253, 27, 1, 15, 11]);

/** Whether this engine runs the relaxed 8-bit dot product exactly (RELAXED_PROBE). */
function relaxedDotExact(): boolean {
  try {
    if (!WebAssembly.validate(RELAXED_PROBE)) return false;
    const probe = (new WebAssembly.Instance(new WebAssembly.Module(RELAXED_PROBE), {}).exports as { probe(c: number): number }).probe;
    return probe(0) === -12065 && probe(7) === -12058;
  } catch {
    return false;
  }
}

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

/** The kernels, loaded on first call; null when unavailable (the callers then run the TypeScript twins). */
export function load(): Kernels | null {
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

/** Which build runs: 'relaxed' (shared memory and relaxed SIMD), 'shared' or 'plain'; '' before the kernels load or without them. */
let build: 'relaxed' | 'shared' | 'plain' | '' = '';

/** The build the kernels run ('' before they load or when they are unavailable): benches print it. */
export function simdBuild(): typeof build {
  return kernels ? build : '';
}

/** Set by preferRelaxedSimd(false): the shared build even where the relaxed one would run (tests and benches compare the two). */
let relaxedOff = false;

/** Whether the next load may take the relaxed-SIMD build (default true); call before the kernels load. */
export function preferRelaxedSimd(on: boolean): void {
  relaxedOff = !on;
}

/**
 * The shared-memory build's bytes: the relaxed-SIMD one where this engine validates it and computes
 * its dot product exactly (RELAXED_PROBE) — the same outputs, bit for bit (scripts/build-wasm.mjs) —
 * unless preferRelaxedSimd(false) asked for the other.
 */
function sharedBytes(): Uint8Array<ArrayBuffer> {
  if (!relaxedOff && relaxedDotExact()) {
    const relaxed = decode(KERNELS_WASM_RELAXED_BASE64);
    if (WebAssembly.validate(relaxed)) {
      build = 'relaxed';
      return relaxed;
    }
  }
  build = 'shared';
  return decode(KERNELS_WASM_SHARED_BASE64);
}

/**
 * The kernels: the shared-memory build (sharedBytes) when the platform has SharedArrayBuffer — with
 * helper threads (threads.ts) when more than one thread is configured and this thread may block,
 * else on this thread alone (tensors resident all the same; setCpuThreads can start helpers later)
 * — or the unshared build on this thread alone, saying why once in the console when it is the
 * platform's doing.
 */
function instantiate(): Kernels {
  const plan = threadPlan();
  let why = plan.why;
  if (plan.threads > 1 || typeof SharedArrayBuffer === 'function') {
    try {
      const module = new WebAssembly.Module(sharedBytes());
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
  build = 'plain';
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

export const ceil4 = (n: number): number => (n + 3) & ~3;

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
// exactly the operands that are not resident (or not laid out as the kernel needs).

/** The allocator of the shared memory (null: unshared memory, nothing resident). */
let arena: Arena | null = null;
/** The per-call scratch block in the arena (layout). */
let scratch = { at: 0, bytes: 0 };
/** Every SharedArrayBuffer object the memory has handed out (one per size it has had). */
const memBuffers = new WeakSet<ArrayBufferLike>();
/** Resident tensors (the roots simdTensor and simdBytes made, not views) → their block. */
const roots = new WeakMap<KernelArray, number>();
/** Views of resident tensors (simdView) → their root, so a root lives as long as its views. */
const viewRoot = new WeakMap<Float32Array, Float32Array>();
/** Frees the block of a resident tensor that was dropped without simdRelease. */
const finalizer = typeof FinalizationRegistry === 'function' ? new FinalizationRegistry<number>((at) => releaseBlock(at)) : null;
/** Whether simdTensor makes resident tensors (setCpuResidency: tests and A/B timing). */
let residency = true;
/**
 * Most bytes of resident tensors: past it simdTensor returns null and the backend makes ordinary
 * arrays (also what happens when the memory cannot grow). Half of MEMORY_MAX_BYTES, so resident
 * tensors never take the room a call's scratch needs.
 */
const RESIDENT_MAX_BYTES = 1 << 30;
/**
 * Most bytes the shared memory grows to: every address stays below 2³¹, which the thread pool's
 * Int32 control words carry.
 */
const MEMORY_MAX_BYTES = 2 ** 31 - 65536;
/** The cap in force (setCpuResidency lowers it for tests of the fallback). */
let residentCap = RESIDENT_MAX_BYTES;

function startArena(k: Kernels): void {
  memBuffers.add(k.memory.buffer);
  arena = new Arena(k.heapBase(), k.memory.buffer.byteLength, (bytes) => {
    const now = k.memory.buffer.byteLength;
    if (now + bytes > MEMORY_MAX_BYTES) return null;
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
  return resident(Float32Array, n, from);
}

/**
 * The same for the arrays of a quantized weight (int8 values, packed int4 bytes, f16 scale bits), so
 * a quantized matmul reads them where they are: a resident Int8Array, Uint8Array or Uint16Array of
 * `n` elements, zeroed or a copy of `from`, or null (as simdTensor).
 */
export function simdBytes<A extends Int8Array | Uint8Array | Uint16Array>(ctor: ArrayCtor<A>, n: number, from?: A): A | null {
  return resident(ctor, n, from);
}

/** A typed-array constructor (Float32Array, Int8Array, …) as `resident` uses it. */
type ArrayCtor<A> = { new (b: ArrayBufferLike, at: number, n: number): A; readonly BYTES_PER_ELEMENT: number };

function resident<A extends KernelArray>(ctor: ArrayCtor<A>, n: number, from?: A): A | null {
  const k = load();
  if (k === null || arena === null || !residency || n <= 0) return null;
  const bytes = n * ctor.BYTES_PER_ELEMENT;
  if (tensorBytes() + bytes > residentCap) return null;
  const at = arena.alloc(bytes);
  if (at === null) return null;
  if (f32.buffer !== k.memory.buffer) f32 = new Float32Array(k.memory.buffer);
  const t = new ctor(k.memory.buffer, at, n);
  if (from !== undefined) t.set(from.subarray(0, n) as never);
  else new Uint8Array(k.memory.buffer, at, Math.ceil(bytes / ALIGN) * ALIGN).fill(0);
  roots.set(t, at);
  finalizer?.register(t, at, t);
  return t;
}

/** Releases a tensor simdTensor or simdBytes made (true), or does nothing to any other array (false). */
export function simdRelease(t: KernelArray): boolean {
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
export function simdResident(t: FloatArray | KernelArray): boolean {
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
export const IN = 0;
export const OUT = 1;
export const ACC = 2;
/**
 * An operand: the array, its element count, its use, and — when the kernel wants its rows padded —
 * [rows, cols, stride] (stride ≥ cols, the padding zero).
 */
export type Arg = readonly [a: KernelArray, n: number, use: 0 | 1 | 2, rows?: number, cols?: number, stride?: number];

/** Operands to copy back after the call (place → finish): [array, element offset, arg]. */
let pending: [Float32Array, number, Arg][] = [];

/** f32 slots that n elements of `a` take (a quantized weight's bytes, rounded up to whole slots). */
const slots = (a: KernelArray, n: number): number => Math.ceil((n * a.BYTES_PER_ELEMENT) / 4);

/**
 * Where the kernel finds each operand, then `extra` scratch regions: element offsets into `f32`.
 * A resident operand is used where it is, unless its rows need padding, or — written (OUT, ACC) —
 * it overlaps another operand (an output allowed to alias an input, e.g. an in-place RoPE: the
 * kernel then writes a copy). Every other operand gets a scratch region, is
 * copied in when read (IN, ACC; padded rows zeroed) and copied back by `finish` when written.
 */
export function place(k: Kernels, args: readonly Arg[], extra: readonly number[] = []): number[] {
  calls++;
  const at = args.map(([a, n, use, rows, cols, stride], i): number => {
    if (!memBuffers.has(a.buffer) || a.byteOffset % 4 !== 0 || (stride !== undefined && stride !== cols && rows! > 0)) return -1;
    const lo = a.byteOffset;
    const hi = lo + a.BYTES_PER_ELEMENT * n;
    if (use !== IN) {
      // Any OTHER operand (the same array passed twice included) that shares a byte with this one.
      for (let j = 0; j < args.length; j++) {
        const [b, m] = args[j]!;
        if (j === i || !memBuffers.has(b.buffer)) continue;
        if (b.byteOffset < hi && lo < b.byteOffset + b.BYTES_PER_ELEMENT * m) return -1;
      }
    }
    return lo >> 2;
  });
  const sizes: number[] = [];
  args.forEach(([a, n, , rows, , stride], i) => {
    if (at[i]! < 0) sizes.push(stride !== undefined ? rows! * stride : slots(a, n));
  });
  const regions = layout(k, ...sizes, ...extra);
  let r = 0;
  pending = [];
  args.forEach((arg, i) => {
    if (at[i]! >= 0) return;
    const [a, n, use, rows, cols, stride] = arg;
    at[i] = regions[r++]!;
    if (!(a instanceof Float32Array)) {
      // A quantized weight's array: read only, copied in as bytes.
      new Uint8Array(f32.buffer, at[i]! * 4, n * a.BYTES_PER_ELEMENT).set(new Uint8Array(a.buffer, a.byteOffset, n * a.BYTES_PER_ELEMENT));
      return;
    }
    if (use !== OUT) {
      if (stride !== undefined) copyIn(at[i]!, a, rows!, cols!, stride);
      else f32.set(a.subarray(0, n), at[i]!);
    }
    if (use !== IN) pending.push([a, at[i]!, arg]);
  });
  return [...at, ...regions.slice(r)];
}

/** Copies the written operands that were not resident back out of the kernel's memory (after place). */
export function finish(): void {
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

/** The kernels' memory as f32, current after the last grow (read it after `place`, which may grow it). */
export function heapF32(): Float32Array {
  return f32;
}

const isF32 = (a: FloatArray): a is Float32Array => a instanceof Float32Array;

/** Whether the SIMD path serves these float arrays: the kernels are loaded and every one is a Float32Array. */
export const fast = (...a: FloatArray[]): boolean => load() !== null && a.every(isF32);
