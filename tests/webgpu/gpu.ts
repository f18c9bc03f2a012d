/**
 * Shared pieces of the WebGPU kernel tests:
 *   - `gpu`: one GpuContext for the test file, on whatever adapter the machine has, else on
 *     Chromium's SwiftShader (software Vulkan, so CI without a GPU runs the WGSL; the global
 *     setup, tests/setup/global.ts, installs Chromium before any file runs). When there is no
 *     adapter at all, importing this file FAILS the test file with the reason — a green run never
 *     hides GPU tests that did not run — unless SAT_ALLOW_NO_GPU=1: then `gpu` is the reason
 *     string, printed, and the file's suites skip (`describe.skipIf(typeof gpu === 'string')`);
 *   - a fresh seed per run derived from Date.now() (printed; rerun a failure with
 *     SAT_GPU_SEED=<seed>), random inputs that are never all zero, NaN-poisoned outputs with a
 *     guard band past the end that must stay NaN (catches out-of-bounds writes);
 *   - `compare`: the largest relative difference GPU vs CPU, |g − c| / max(|c|, floor), with the
 *     floor stated by each test (the scale below which an absolute error is what matters), and
 *     a row in the table printed after the file.
 *
 * Not here: the kernels' expected values (the CPU twins in src/backend/cpu compute those).
 */
import { GpuContext, type GpuTensor } from '../../src/backend/webgpu/kernel';
import { acquireAnyDevice } from '../../src/backend/webgpu/node';
import { Rng } from '../../src/core/rng';

/** Elements past the end of every output, poisoned with NaN, that a kernel must not touch. */
export const GUARD = 5;

async function open(): Promise<GpuContext | string> {
  const res = await acquireAnyDevice();
  if (!res.ok) return res.reason;
  console.log(`[webgpu tests] adapter: ${res.description} (${res.source})`);
  return new GpuContext(res.device);
}

/** SAT_ALLOW_NO_GPU=1: without an adapter the GPU test files skip (printing why) instead of failing. */
export const ALLOW_NO_GPU = globalThis.process?.env.SAT_ALLOW_NO_GPU === '1';

/** The file's context, or (only with SAT_ALLOW_NO_GPU=1) why there is none. */
export const gpu: GpuContext | string = await open();
if (typeof gpu === 'string') {
  if (!ALLOW_NO_GPU) {
    throw new Error(
      `[webgpu tests] this GPU test file cannot run — ${gpu}. ` +
        'On a machine without a GPU the adapter is Chromium\'s SwiftShader (/usr/lib/chromium/vk_swiftshader_icd.json): ' +
        'install it with `sudo apt-get install -y chromium` (Debian/Ubuntu), and check that VK_ICD_FILENAMES, if set, names a driver that exists. ' +
        'To skip the GPU tests instead, run with SAT_ALLOW_NO_GPU=1.',
    );
  }
  console.log(`[webgpu tests] SKIPPED: this file's GPU tests do not run (SAT_ALLOW_NO_GPU=1) — ${gpu}`);
}

/** This run's seed (printed): SAT_GPU_SEED overrides. */
export function runSeed(file: string): number {
  const env = globalThis.process?.env.SAT_GPU_SEED;
  const seed = env !== undefined && env !== '' ? Number(env) >>> 0 : (Date.now() ^ 0x5a7c0de) >>> 0;
  console.log(`[webgpu tests] ${file}: seed ${seed} (rerun with SAT_GPU_SEED=${seed})`);
  return seed;
}

/** Uniform floats in [lo, hi), never exactly zero. */
export function rand(rng: Rng, n: number, lo = -1, hi = 1): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let x = lo + (hi - lo) * rng.uniform();
    if (x === 0) x = (hi - lo) * 1e-3;
    a[i] = x;
  }
  return a;
}

/** Integers in [0, k). */
export function randInt(rng: Rng, n: number, k: number): Int32Array {
  const a = new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = rng.int(k);
  return a;
}

/** An f32 output tensor of n elements (+ GUARD) filled with NaN, or with `init` then NaN guard. */
export function poisoned(ctx: GpuContext, n: number, init?: Float32Array): GpuTensor<'f32'> {
  const a = new Float32Array(n + GUARD).fill(NaN);
  if (init !== undefined) a.set(init.subarray(0, n));
  return ctx.upload('f32', a);
}

/** Download n elements of an output, checking that its guard band is still NaN. */
export async function readOut(ctx: GpuContext, t: GpuTensor<'f32'>, n: number): Promise<Float32Array> {
  const all = await ctx.download('f32', t);
  for (let i = n; i < all.length; i++) {
    if (!Number.isNaN(all[i]!)) throw new Error(`kernel wrote past the end of its output: element ${i} (length ${n}) = ${all[i]}`);
  }
  return all.subarray(0, n);
}

export interface Row {
  kernel: string;
  shape: string;
  maxRelErr: number;
  maxAbsErr: number;
  floor: string;
  tol: number;
  ms: number;
}
export const table: Row[] = [];

/**
 * max_i |g_i − c_i| / max(|c_i|, floor_i) (floor a number or per element), and max |g − c|.
 * NaN anywhere in g (an element never written) or a NaN/Inf mismatch counts as Infinity.
 */
export function relErr(g: ArrayLike<number>, c: ArrayLike<number>, floor: number | ArrayLike<number>): { rel: number; abs: number; at: number } {
  if (g.length !== c.length) throw new Error(`length mismatch: gpu ${g.length}, cpu ${c.length}`);
  let rel = 0;
  let abs = 0;
  let at = -1;
  for (let i = 0; i < g.length; i++) {
    const gi = g[i]!;
    const ci = c[i]!;
    let d: number;
    if (Number.isNaN(gi) || Number.isNaN(ci)) d = Number.isNaN(gi) && Number.isNaN(ci) ? 0 : Infinity;
    else if (!Number.isFinite(ci) || !Number.isFinite(gi)) d = gi === ci ? 0 : Infinity;
    else d = Math.abs(gi - ci);
    const f = typeof floor === 'number' ? floor : floor[i]!;
    const r = d === 0 ? 0 : d / Math.max(Math.abs(ci), f);
    if (r > rel || (r === Infinity && at < 0)) {
      rel = r;
      at = i;
    }
    if (d > abs) abs = d;
  }
  return { rel, abs, at };
}

/** Record a comparison in the table and return its relative error. */
export function record(kernel: string, shape: string, g: ArrayLike<number>, c: ArrayLike<number>, floor: number | ArrayLike<number>, tol: number, ms = 0): number {
  const { rel, abs, at } = relErr(g, c, floor);
  table.push({ kernel, shape, maxRelErr: rel, maxAbsErr: abs, floor: typeof floor === 'number' ? String(floor) : 'per element', tol, ms: Math.round(ms) });
  if (!(rel <= tol)) console.log(`[webgpu tests] ${kernel} ${shape}: worst element ${at}: gpu ${g[at]} cpu ${c[at]}`);
  return rel;
}

/** Print the table (call in afterAll). */
export function printTable(title: string): void {
  if (table.length === 0) return;
  console.log(`\n[webgpu tests] ${title}: max relative error GPU vs CPU twin`);
  console.table(table.map((r) => ({ ...r, maxRelErr: r.maxRelErr.toExponential(2), maxAbsErr: r.maxAbsErr.toExponential(2), pass: r.maxRelErr <= r.tol })));
}

/** Σ_k |a_ik| |b_kj| style scales: elementwise |x|. */
export function absOf(a: Float32Array): Float32Array {
  return a.map(Math.abs);
}
