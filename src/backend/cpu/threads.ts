/**
 * Helper threads for the CPU backend's WebAssembly SIMD kernels: a fork-join pool whose helpers run
 * the SAME kernels module on the SAME shared WebAssembly.Memory as the calling thread, and take
 * chunks of a gemm's output rows, an attention call's batch entries, or SwiGLU's elements and the
 * RMSNorm forward's rows. Node: worker_threads (unref'd); a page's agent worker: Web Workers from
 * a Blob URL of HELPER_JS below. Results are bit-identical for any thread count and chunking: only
 * outputs are split, and each element is the same f32 sum in the same order on whichever thread.
 *
 * Threads (the caller included): min(cores, 4) by default (each agent of the page has a worker of
 * its own); SAT_THREADS (Node) or setCpuThreads(n) override it; 1 means no helpers. Where threads are impossible (no SharedArrayBuffer, as on a page
 * that is not cross-origin isolated; Atomics.wait not allowed, as on a page's main thread; no
 * workers) `threadPlan` says why and the kernels run on the calling thread.
 *
 * Not here: the kernels (wasm/kernels.ts), loading them and the copies (simdMemory.ts), the row
 * kernels that stay on one thread (memory-bound: RMSNorm backward, RoPE, log-softmax, residual).
 */

/**
 * The protocol, one job at a time. The caller publishes the job in `control` (an Int32Array on a
 * SharedArrayBuffer): its kind and arguments, its units cut into chunks (a few per thread, multiples
 * of 4 rows for a gemm, the kernel's row tile), and for each helper invited (only those that said
 * ready: the first calls never wait for a worker to start) a slot holding the job's generation;
 * then it bumps the generation (Atomics.store + notify). Every thread takes chunks from a shared
 * counter (Atomics.add) until none is left — the caller at once, a helper once it has joined by
 * compare-exchange on its slot (generation → TAKEN; FINISHED when it finds no chunk left). So the
 * work goes to whoever is free, and the caller never waits longer than one chunk a helper is
 * running. Out of chunks, the caller closes every slot not joined yet (→ FINISHED) and waits
 * (Atomics.wait) for the helpers still running one. A helper spins briefly after each job, then
 * sleeps in Atomics.wait. The caller runs the helpers' own share code (SHARE_JS, compiled here
 * with `new Function`), so a chunk's pointer arithmetic is the same text on every thread.
 */
import type { Kernels } from './kernelExports';

/** Control words (Int32Array indices). */
const GEN = 0; // job generation, bumped per job
const JOB = 4; // the job: its kind (GEMM, ATTN_FWD, …), then its arguments (up to JOB_WORDS words)
const JOB_WORDS = 27;
const READY = JOB + 1 + JOB_WORDS; // READY + i: helper i instantiated and waiting
const NEXT = READY + 16; // the next chunk to take (Atomics.add)
const ROWS = NEXT + 1; // the job's units (rows, batch entries, elements)
const CHUNK_ROWS = NEXT + 2; // units per chunk
const CHUNK_COUNT = NEXT + 3; // chunks in the job
const HELPED = NEXT + 4; // chunks run by helpers, all jobs (Atomics.add)
const SLOT = NEXT + 5; // SLOT + i: helper i's state for the current job
/** A slot's state: the job's generation (≥ 1) while the helper is invited, TAKEN once it joined, FINISHED when it is done — or straight away when the caller closed the slot before it joined. */
const TAKEN = -1;
const FINISHED = -2;
/** Job kinds. */
const GEMM = 0;
const ATTN_FWD = 1;
const ATTN_BWD = 2;
const SWIGLU_FWD = 3;
const SWIGLU_BWD = 4;
const RMSNORM_FWD = 5;
const LIN_F32 = 6;
const LIN_Q8 = 7;
const LIN_Q4 = 8;
const DEQUANT = 9;
const PANEL_F32 = 10;
const PANEL_Q8 = 11;
const PANEL_Q4 = 12;
const LIN_Q8A = 13;
const LIN_Q4A = 14;
const MANY = 15;
/** Most threads (the caller included; READY has a word for each). */
const MAX_THREADS = 16;
/** Most weights in one MANY job (5 words each after 8: JOB_WORDS). */
export const MANY_MAX = 3;
const CONTROL_WORDS = SLOT + MAX_THREADS - 1;
/**
 * Chunks per thread taking part: ⌈CHUNK_WORK / (work per thread)⌉, between 1 and
 * MAX_CHUNKS_PER_THREAD. A small job (a SAT stage's, 2¹⁷–2²¹ multiply-adds) gets many, so a helper
 * that joins late costs the caller at most a small chunk's wait; a large one one per thread, since
 * each extra chunk streams the shared operand again (docs/performance.md "Threads").
 */
const MAX_CHUNKS_PER_THREAD = 8;
const CHUNK_WORK = 1 << 23;
/**
 * Spin iterations (each one Atomics.load, ~10 µs in all) before sleeping, for helpers and for the
 * caller: short, because on a busy machine a spinning helper takes CPU from the caller
 * (docs/performance.md "Threads").
 */
const SPIN = 2000;
/**
 * Fewest multiply-adds worth splitting (a gemm's R·K·J; attention's B·NH·T·Tkv·HS): below it the
 * wake-up and the wait cost more than the second core saves (docs/performance.md "Threads").
 */
export const MIN_WORK = 1 << 17;

/**
 * The helper thread's program: plain JS, the same text for worker_threads (eval) and a Blob Worker.
 * `run(kind, r0, r1, t)` is the share [r0, r1) — output rows of a gemm, batch entries of attention —
 * on thread t's scratch (attention only; t = 0 is the caller's); JOB words as `forkJoin` writes them.
 */
const SHARE_JS = `(ex, c, f) => (kind, r0, r1, t) => {
  const j = ${JOB + 1};
  if (kind === ${GEMM}) {
    const a = c[j], ars = c[j + 1], aks = c[j + 2], b = c[j + 3], J = c[j + 4], out = c[j + 5], K = c[j + 6], acc = c[j + 7], KB = c[j + 8];
    for (let k0 = 0; k0 < K; k0 += KB) ex.gemm(a + 4 * (r0 * ars + k0 * aks), ars, aks, b + 4 * k0 * J, J, out + 4 * r0 * J, r1 - r0, Math.min(KB, K - k0), acc);
  } else if (kind === ${ATTN_FWD}) {
    const T = c[j + 5], NH = c[j + 6], HS = c[j + 7], Tkv = c[j + 8], pos0 = c[j + 9], ss = c[j + 13], C = NH * HS, att = c[j + 4];
    ex.attnForward(c[j] + 4 * r0 * T * C, c[j + 1] + 4 * r0 * Tkv * C, c[j + 2] + 4 * r0 * Tkv * C, c[j + 3] + 4 * r0 * T * C, att === 0 ? 0 : att + 4 * r0 * NH * T * T,
      r1 - r0, T, NH, HS, Tkv, pos0, f[j + 10], c[j + 11] + t * ss, c[j + 12] + t * ss);
  } else if (kind === ${SWIGLU_FWD}) {
    const o = 4 * r0;
    ex.swigluFwd(c[j] + o, c[j + 1] + o, c[j + 2] + o, r1 - r0);
  } else if (kind === ${SWIGLU_BWD}) {
    const o = 4 * r0;
    ex.swigluBwd(c[j] + o, c[j + 1] + o, c[j + 2] + o, c[j + 3] + o, c[j + 4] + o, r1 - r0);
  } else if (kind === ${LIN_F32} || kind === ${PANEL_F32}) {
    (kind === ${LIN_F32} ? ex.linF32 : ex.panelF32)(c[j], c[j + 1], c[j + 2], c[j + 3], c[j + 4], c[j + 5], r0, r1, c[j + 6] + t * c[j + 7]);
  } else if (kind >= ${LIN_Q8} && kind <= ${PANEL_Q4} && kind !== ${DEQUANT}) {
    const fn = kind === ${LIN_Q8} ? ex.linQ8 : kind === ${LIN_Q4} ? ex.linQ4 : kind === ${PANEL_Q8} ? ex.panelQ8 : ex.panelQ4;
    fn(c[j], c[j + 1], c[j + 2], c[j + 3], c[j + 4], c[j + 5], c[j + 6], r0, r1, c[j + 7] + t * c[j + 8]);
  } else if (kind === ${LIN_Q8A} || kind === ${LIN_Q4A}) {
    (kind === ${LIN_Q8A} ? ex.linQ8a : ex.linQ4a)(c[j], c[j + 1], c[j + 2], c[j + 3], c[j + 4], c[j + 5], c[j + 6], c[j + 7], r0, r1, c[j + 8] + t * c[j + 9]);
  } else if (kind === ${MANY}) {
    const sub = c[j], x = c[j + 1], dx = c[j + 2], N = c[j + 3], C = c[j + 4], sp = c[j + 5] + t * c[j + 6], ns = c[j + 7];
    for (let s = 0; s < ns; s++) {
      const b = j + 8 + 5 * s, OC = c[b + 3], st = c[b + 4];
      const o0 = Math.max(r0, st) - st, o1 = Math.min(r1, st + OC) - st;
      if (o0 >= o1) continue;
      if (sub === ${LIN_F32} || sub === ${PANEL_F32}) (sub === ${LIN_F32} ? ex.linF32 : ex.panelF32)(x, N, c[b], C, c[b + 2], OC, o0, o1, sp);
      else if (sub === ${LIN_Q8A} || sub === ${LIN_Q4A}) (sub === ${LIN_Q8A} ? ex.linQ8a : ex.linQ4a)(x, dx, N, c[b], c[b + 1], C, c[b + 2], OC, o0, o1, sp);
      else (sub === ${LIN_Q8} ? ex.linQ8 : sub === ${LIN_Q4} ? ex.linQ4 : sub === ${PANEL_Q8} ? ex.panelQ8 : ex.panelQ4)(x, N, c[b], c[b + 1], C, c[b + 2], OC, o0, o1, sp);
    }
  } else if (kind === ${DEQUANT}) {
    const C = c[j + 3], o0 = c[j + 5];
    ex.dequantRows(c[j] + 4 * r0 * C, c[j + 1], c[j + 2], C, o0 + r0, o0 + r1, c[j + 4]);
  } else if (kind === ${RMSNORM_FWD}) {
    const C = c[j + 4], o = 4 * r0 * C;
    ex.rmsnormFwd(c[j] + o, c[j + 1] + 4 * r0, c[j + 2] + o, c[j + 3], r1 - r0, C, f[j + 5]);
  } else {
    const T = c[j + 8], NH = c[j + 9], HS = c[j + 10], ss = c[j + 14], o = 4 * r0 * T * NH * HS;
    ex.attnBackward(c[j] + o, c[j + 1] + o, c[j + 2] + o, c[j + 3] + o, c[j + 4] + o, c[j + 5] + o, c[j + 6] + o, c[j + 7] + 4 * r0 * NH * T * T,
      r1 - r0, T, NH, HS, f[j + 11], c[j + 12] + t * ss, c[j + 13] + t * ss);
  }
}`;
const HELPER_JS = `'use strict';
const share = ${SHARE_JS};
const start = (d) => {
  const ex = new WebAssembly.Instance(d.module, { env: { memory: d.memory } }).exports;
  const c = new Int32Array(d.control), s = ${SLOT} + d.id;
  const run = share(ex, c, new Float32Array(d.control));
  let g = Atomics.load(c, ${GEN});
  Atomics.store(c, ${READY} + d.id, 1);
  for (;;) {
    for (let i = 0; i < ${SPIN} && Atomics.load(c, ${GEN}) === g; i++);
    Atomics.wait(c, ${GEN}, g);
    g = Atomics.load(c, ${GEN});
    if (Atomics.load(c, s) !== g) continue;
    if (Atomics.compareExchange(c, s, g, ${TAKEN}) !== g) continue;
    const kind = c[${JOB}], R = c[${ROWS}], cr = c[${CHUNK_ROWS}], n = c[${CHUNK_COUNT}];
    for (let k = Atomics.add(c, ${NEXT}, 1); k < n; k = Atomics.add(c, ${NEXT}, 1)) {
      run(kind, k * cr, Math.min(R, (k + 1) * cr), d.id + 1);
      Atomics.add(c, ${HELPED}, 1);
    }
    Atomics.store(c, s, ${FINISHED});
    Atomics.notify(c, s);
  }
};
if (typeof require === 'function') require('node:worker_threads').parentPort.once('message', start);
else self.onmessage = (e) => start(e.data);
`;

type Gemm = (a: number, ars: number, aks: number, b: number, J: number, out: number, R: number, K: number, acc: number) => void;

interface NodeWorker {
  unref(): void;
  on(ev: 'error', cb: (e: unknown) => void): void;
  postMessage(m: unknown): void;
}
interface NodeProcess {
  versions?: { node?: string };
  env?: Record<string, string | undefined>;
  getBuiltinModule?: (id: string) => unknown;
}
const nodeProcess = (): NodeProcess | null => {
  const p = (globalThis as { process?: NodeProcess }).process;
  return p?.versions?.node !== undefined && typeof p.getBuiltinModule === 'function' ? p : null;
};

/** Cores here (navigator.hardwareConcurrency, or os.availableParallelism() in Node; 1 if unknown). */
function cores(): number {
  const p = nodeProcess();
  if (p !== null) return (p.getBuiltinModule!('node:os') as { availableParallelism(): number }).availableParallelism();
  return (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1;
}

const clampThreads = (n: number): number => Math.max(1, Math.min(MAX_THREADS, Math.floor(n)));

/** The configured thread count (header): SAT_THREADS in Node, else min(cores, 4). */
function configuredThreads(): number {
  const env = nodeProcess()?.env?.SAT_THREADS;
  if (env !== undefined && env !== '' && Number.isFinite(Number(env))) return clampThreads(Number(env));
  return clampThreads(Math.min(cores(), 4));
}

let wanted = configuredThreads();
/** Who set `wanted` (for threadPlan's reason when it is 1). */
let wantedBy = nodeProcess()?.env?.SAT_THREADS !== undefined ? 'SAT_THREADS' : 'the default, min(cores, 4)';
/** The work threshold in use (MIN_WORK; tests lower it to split small calls too). */
let threshold = MIN_WORK;

/** Why this thread cannot use helper threads ('' when it can). */
function impossible(): string {
  if (typeof SharedArrayBuffer !== 'function') {
    return 'no SharedArrayBuffer (the page is not cross-origin isolated: its server must send Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp)';
  }
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 1, 0);
  } catch {
    return 'Atomics.wait is not allowed on this thread (a page’s main thread)';
  }
  if (nodeProcess() === null && (typeof Worker !== 'function' || typeof Blob !== 'function')) return 'no Worker here';
  return '';
}

/**
 * Whether simdMemory.ts should load the shared-memory build and start helpers: `threads` > 1 when it
 * should, else 1 and `why` (the configured count, or what the platform lacks).
 */
export function threadPlan(): { threads: number; why: string } {
  if (wanted <= 1) return { threads: 1, why: `one thread configured (${wantedBy})` };
  const why = impossible();
  return why ? { threads: 1, why } : { threads: wanted, why: '' };
}

interface Pool {
  readonly module: WebAssembly.Module;
  readonly memory: WebAssembly.Memory;
  readonly control: Int32Array;
  /** The same words as f32 (the jobs' float arguments). */
  readonly floats: Float32Array;
  started: number;
}

let pool: Pool | null = null;
let notThreadedWhy = '';
let jobs = 0;
let shares = 0;
let closed = 0;

/** Starts helpers up to `wanted` − 1 (not waiting for them: they say ready in `control`). */
function grow(p: Pool): void {
  const node = nodeProcess();
  let url = '';
  for (; p.started < Math.min(wanted, MAX_THREADS) - 1; p.started++) {
    const msg = { module: p.module, memory: p.memory, control: p.control.buffer, id: p.started };
    try {
      if (node !== null) {
        const { Worker: W } = node.getBuiltinModule!('node:worker_threads') as { Worker: new (code: string, o: { eval: true; name: string }) => NodeWorker };
        const w = new W(HELPER_JS, { eval: true, name: `sat-cpu-${p.started + 1}` });
        w.unref();
        w.on('error', (e) => console.warn(`[cpu backend] helper thread ${msg.id + 1} failed: ${String(e)}`));
        w.postMessage(msg);
      } else {
        url ||= URL.createObjectURL(new Blob([HELPER_JS], { type: 'text/javascript' }));
        const w = new Worker(url, { name: `sat-cpu-${p.started + 1}` });
        w.onerror = (e) => console.warn(`[cpu backend] helper thread ${msg.id + 1} failed: ${e.message}`);
        w.postMessage(msg);
      }
    } catch (e) {
      console.warn(`[cpu backend] could not start a helper thread (${e instanceof Error ? e.message : String(e)}); using ${p.started + 1}`);
      return;
    }
  }
}

/** Called by simdMemory.ts once it runs the shared-memory build on `memory`: starts the helpers. */
export function startPool(module: WebAssembly.Module, memory: WebAssembly.Memory): void {
  const buf = new SharedArrayBuffer(CONTROL_WORDS * 4);
  pool = { module, memory, control: new Int32Array(buf), floats: new Float32Array(buf), started: 0 };
  callerRun = null;
  grow(pool);
}

/**
 * The shared-memory build running without helpers (one thread configured, SharedArrayBuffer
 * there): what a later setCpuThreads(n > 1) starts a pool on.
 */
let latent: { module: WebAssembly.Module; memory: WebAssembly.Memory } | null = null;

/**
 * Called by simdMemory.ts when it runs single-threaded: why (shown by cpuThreads), and the shared-memory
 * build's module and memory when it runs that one (so threads can be started later).
 */
export function noPool(why: string, shared?: { module: WebAssembly.Module; memory: WebAssembly.Memory }): void {
  notThreadedWhy = why;
  latent = shared ?? null;
}

/**
 * Sets the thread count (the caller included; 1 = single-threaded) for the calls that follow, and the
 * work threshold (multiply-adds below which a call is not split; tests set 0); starts more helpers
 * if needed — or starts the pool, when the kernels loaded the shared-memory build on one thread
 * (SharedArrayBuffer there) and this thread may block. Without SharedArrayBuffer the kernels run
 * the unshared build, and no later call can give them threads.
 */
export function setCpuThreads(n: number, minWork = MIN_WORK): void {
  wanted = clampThreads(n);
  wantedBy = 'setCpuThreads';
  threshold = minWork;
  if (pool !== null) grow(pool);
  else if (latent !== null && threadPlan().threads > 1) {
    startPool(latent.module, latent.memory);
    latent = null;
  }
}

/**
 * Runs `fn` with the kernels on the calling thread alone, then puts the thread count back: for
 * background work (an agent's warm-up, src/workers/agentApi.ts) that should leave the other cores
 * to the page and to the JavaScript engine's background compilers. Calls made meanwhile are split
 * over no helper; results are the same bits either way.
 */
export async function onOneThread<T>(fn: () => Promise<T>): Promise<T> {
  const saved = wanted;
  wanted = 1;
  try {
    return await fn();
  } finally {
    wanted = saved;
  }
}

/** How many helpers say ready (not counting the caller). */
function readyHelpers(p: Pool): number {
  let n = 0;
  for (let i = 0; i < p.started; i++) if (Atomics.load(p.control, READY + i) === 1) n++;
  return n;
}

/** The CPU backend's threads now: configured count, threads ready (the caller included), jobs split, why one. */
export interface CpuThreads {
  readonly threads: number;
  readonly ready: number;
  readonly jobs: number;
  /** Chunks of the split jobs, run by any thread. */
  readonly shares: number;
  /** Of those, chunks the helpers ran. */
  readonly helped: number;
  /** Invitations the caller closed because the helper had not joined by the time the chunks ran out. */
  readonly closed: number;
  readonly why: string;
}

/** The pool's state (cpuThreads().ready > 1 once helpers are up); `why` says why there is none. */
export function cpuThreads(): CpuThreads {
  const ready = pool === null ? 1 : 1 + Math.min(readyHelpers(pool), wanted - 1);
  const helped = pool === null ? 0 : Atomics.load(pool.control, HELPED);
  return { threads: pool === null ? 1 : wanted, ready, jobs, shares, helped, closed, why: pool === null ? notThreadedWhy : '' };
}

/** Resolves when `n` threads (the caller included) are ready, or after `timeoutMs` (tests, the bench). */
export async function cpuThreadsReady(n = wanted, timeoutMs = 10_000): Promise<number> {
  const t0 = Date.now();
  while (cpuThreads().ready < n && Date.now() - t0 < timeoutMs) await new Promise((r) => setTimeout(r, 5));
  return cpuThreads().ready;
}

type Share = (kind: number, r0: number, r1: number, t: number) => void;
/** SHARE_JS compiled on this thread: (kernels, control words, the same words as f32) → run. */
const shareCode = (): ((e: Kernels, c: Int32Array, f: Float32Array) => Share) => new Function(`return ${SHARE_JS}`)() as (e: Kernels, c: Int32Array, f: Float32Array) => Share;
/** The caller's `run` (SHARE_JS on this thread's instance), made once per pool. */
let callerRun: Share | null = null;
/** SHARE_JS over a private control array, for a MANY job without a pool. */
let solo: { ex: Kernels; c: Int32Array; run: Share } | null = null;

/**
 * Runs job `kind` (arguments `words`, written at JOB + 1; `floats` marks the f32 ones) over
 * R units — gemm output rows (chunks multiples of 4) or attention batch entries — split between
 * the caller and the ready helpers when `work` ≥ the threshold and there are at least two units'
 * worth: chunks taken from a shared counter by whoever is free (header). The same numbers for any
 * split (header).
 */
function forkJoin(ex: Kernels, kind: number, words: readonly number[], floats: readonly number[], R: number, unit: number, work: number): void {
  const p = pool!;
  const c = p.control;
  // The helpers' own share code (SHARE_JS), so the caller's pointer arithmetic is theirs to the letter.
  callerRun ??= shareCode()(ex, c, p.floats);
  const f = p.floats;
  c[JOB] = kind;
  for (let i = 0; i < words.length; i++) c[JOB + 1 + i] = words[i]!;
  for (const i of floats) f[JOB + 1 + i] = words[i]!;
  const helpers = wanted <= 1 || work < threshold || R < 2 * unit ? 0 : Math.min(readyHelpers(p), wanted - 1);
  if (helpers === 0) return callerRun(kind, 0, R, 0);
  const units = Math.ceil(R / unit);
  const perThread = Math.min(MAX_CHUNKS_PER_THREAD, Math.max(1, Math.ceil(CHUNK_WORK / (work / (helpers + 1)))));
  const cr = Math.ceil(units / Math.min(units, perThread * (helpers + 1))) * unit; // units per chunk
  const n = Math.ceil(R / cr);
  c[ROWS] = R;
  c[CHUNK_ROWS] = cr;
  c[CHUNK_COUNT] = n;
  Atomics.store(c, NEXT, 0);
  let g = (Atomics.load(c, GEN) + 1) | 0;
  if (g <= 0) g = 1; // states ≤ 0 are TAKEN / FINISHED / unused
  const invited: number[] = [];
  for (let i = 0; i < p.started && invited.length < helpers; i++) {
    if (Atomics.load(c, READY + i) !== 1) continue;
    Atomics.store(c, SLOT + i, g);
    invited.push(i);
  }
  Atomics.store(c, GEN, g);
  Atomics.notify(c, GEN);
  jobs++;
  shares += n;
  for (let k = Atomics.add(c, NEXT, 1); k < n; k = Atomics.add(c, NEXT, 1)) callerRun(kind, k * cr, Math.min(R, (k + 1) * cr), 0);
  for (const i of invited) {
    const s = SLOT + i;
    if (Atomics.compareExchange(c, s, g, FINISHED) === g) {
      closed++;
      continue;
    }
    for (let m = 0; m < SPIN && Atomics.load(c, s) === TAKEN; m++);
    while (Atomics.load(c, s) === TAKEN) Atomics.wait(c, s, TAKEN);
  }
}


/**
 * The K-blocked gemm: for k0 = 0, KB, 2KB, … < K, gemm(a + 4·k0·aks, ars, aks, b + 4·k0·J, J, out, R,
 * min(KB, K − k0), acc) — each block's sums added to out (acc) in turn; KB = K is one plain call.
 * Split over R (header).
 */
export function blockedGemm(ex: Kernels, a: number, ars: number, aks: number, b: number, J: number, out: number, R: number, K: number, acc: number, KB: number): void {
  if (pool === null) {
    for (let k0 = 0; k0 < K; k0 += KB) ex.gemm(a + 4 * k0 * aks, ars, aks, b + 4 * k0 * J, J, out, R, Math.min(KB, K - k0), acc);
    return;
  }
  forkJoin(ex, GEMM, [a, ars, aks, b, J, out, K, acc, KB], [], R, 4, R * K * J);
}

/**
 * How many copies of per-thread scratch an attention call must lay out (`ss` bytes apart): thread t
 * (0 the caller, helper i → i + 1) uses copy t.
 */
export function scratchCopies(): number {
  return pool === null ? 1 : pool.started + 1;
}

/** The attention forward kernel (wasm/kernels.ts attnForward, same arguments) split over B; `ss` the scratch copies' stride in bytes. */
export function attnForwardSplit(
  ex: Kernels, q: number, k: number, v: number, out: number, att: number,
  B: number, T: number, NH: number, HS: number, Tkv: number, pos0: number, scale: number, kt: number, pp: number, ss: number,
): void {
  if (pool === null) return ex.attnForward(q, k, v, out, att, B, T, NH, HS, Tkv, pos0, scale, kt, pp);
  forkJoin(ex, ATTN_FWD, [q, k, v, out, att, T, NH, HS, Tkv, pos0, scale, kt, pp, ss], [10], B, 1, B * NH * T * Tkv * HS);
}

/** The attention backward kernel (wasm/kernels.ts attnBackward, same arguments) split over B; `ss` the scratch copies' stride in bytes. */
export function attnBackwardSplit(
  ex: Kernels, dq: number, dk: number, dv: number, dout: number, q: number, k: number, v: number, att: number,
  B: number, T: number, NH: number, HS: number, scale: number, vt: number, ds: number, ss: number,
): void {
  if (pool === null) return ex.attnBackward(dq, dk, dv, dout, q, k, v, att, B, T, NH, HS, scale, vt, ds);
  forkJoin(ex, ATTN_BWD, [dq, dk, dv, dout, q, k, v, att, T, NH, HS, scale, vt, ds, ss], [11], B, 1, 2 * B * NH * T * T * HS);
}

/**
 * The row kernels that pay for a split: elementwise SwiGLU over elements (chunks of multiples of 4,
 * so the SIMD lanes fall as on one thread — each element's arithmetic is the same in any lane or in
 * the scalar tail anyway) and the RMSNorm forward over rows. Same bits for any split. `work` counts
 * elements ×8 for SwiGLU (an e^x, a division and three products per element) and N·C for RMSNorm,
 * against the same threshold as the multiply-adds.
 */
export function swigluForwardSplit(ex: Kernels, out: number, a: number, b: number, N: number): void {
  if (pool === null) return ex.swigluFwd(out, a, b, N);
  forkJoin(ex, SWIGLU_FWD, [out, a, b], [], N, 4, 8 * N);
}

/** The SwiGLU backward (wasm/kernels.ts swigluBwd, accumulating into da, db) split over elements. */
export function swigluBackwardSplit(ex: Kernels, da: number, db: number, dout: number, a: number, b: number, N: number): void {
  if (pool === null) return ex.swigluBwd(da, db, dout, a, b, N);
  forkJoin(ex, SWIGLU_BWD, [da, db, dout, a, b], [], N, 4, 8 * N);
}

/** The RMSNorm forward (wasm/kernels.ts rmsnormFwd) split over its N rows of C. */
export function rmsnormForwardSplit(ex: Kernels, out: number, rstd: number, inp: number, w: number, N: number, C: number, eps: number): void {
  if (pool === null) return ex.rmsnormFwd(out, rstd, inp, w, N, C, eps);
  forkJoin(ex, RMSNORM_FWD, [out, rstd, inp, w, C, eps], [5], N, 1, N * C);
}

/**
 * The forward product on weights as stored: out [N × OC] = x [N × C] · Wᵀ by the linear kernels
 * (wasm/kernels.ts linF32, linQ8, linQ4: a few rows) or the panel kernels (panelF32, panelQ8,
 * panelQ4: many), split over the OC output columns in multiples of 8 (the kernels' tile), thread t
 * using the scratch at scratch + t·stride bytes. `weight` is `[w]` for f32, `[q, scales]` for Q8 /
 * Q4. Same bits for any split and either kernel (the kernels' header).
 */
export function linearSplit(ex: Kernels, bits: 32 | 8 | 4, panel: boolean, x: number, N: number, weight: readonly number[], C: number, out: number, OC: number, scratch: number, stride: number): void {
  const kind = bits === 32 ? (panel ? PANEL_F32 : LIN_F32) : bits === 8 ? (panel ? PANEL_Q8 : LIN_Q8) : panel ? PANEL_Q4 : LIN_Q4;
  if (pool === null) {
    if (bits === 32) return (panel ? ex.panelF32 : ex.linF32)(x, N, weight[0]!, C, out, OC, 0, OC, scratch);
    const fn = kind === LIN_Q8 ? ex.linQ8 : kind === LIN_Q4 ? ex.linQ4 : kind === PANEL_Q8 ? ex.panelQ8 : ex.panelQ4;
    return fn(x, N, weight[0]!, weight[1]!, C, out, OC, 0, OC, scratch);
  }
  forkJoin(ex, kind, [x, N, ...weight, C, out, OC, scratch, stride], [], OC, 8, N * C * OC);
}

/**
 * The activation-quantized product (wasm/kernels.ts linQ8a / linQ4a): out [N × OC] from x quantized
 * by quantActs (xq, dx) and a Q8 / Q4 weight, split over the OC output columns in multiples of 8,
 * thread t's scale strip at strip + t·stride bytes. Same bits for any split.
 */
export function linearActSplit(ex: Kernels, bits: 8 | 4, xq: number, dx: number, N: number, q: number, sc: number, C: number, out: number, OC: number, strip: number, stride: number): void {
  if (pool === null) return (bits === 8 ? ex.linQ8a : ex.linQ4a)(xq, dx, N, q, sc, C, out, OC, 0, OC, strip);
  forkJoin(ex, bits === 8 ? LIN_Q8A : LIN_Q4A, [xq, dx, N, q, sc, C, out, OC, strip, stride], [], OC, 8, N * C * OC);
}

/** One weight of a linearManySplit: its arrays (`[w]` f32, `[q, scales]` Q8 / Q4), output and column count. */
export interface ManyPart {
  readonly weight: readonly number[];
  readonly out: number;
  readonly OC: number;
}

/**
 * Several products of one input as one job (Backend.matmulForwardMany): the parts' output columns
 * laid end to end, each part starting at a multiple of 8 so a chunk (multiples of 8) meets every
 * part on the kernels' tile, and split over threads like one product. `act` runs the int8-activation
 * kernels on the quantized input (xq, dx: quantActs); else the linear or panel kernels on x. Same
 * bits as one linearSplit / linearActSplit per part, for any split.
 */
export function linearManySplit(ex: Kernels, bits: 32 | 8 | 4, panel: boolean, act: boolean, x: number, dx: number, N: number, C: number, parts: readonly ManyPart[], scratch: number, stride: number): void {
  if (parts.length > MANY_MAX) throw new RangeError(`linearManySplit: at most ${MANY_MAX} weights in one job, got ${parts.length}`);
  const sub = act ? (bits === 8 ? LIN_Q8A : LIN_Q4A) : bits === 32 ? (panel ? PANEL_F32 : LIN_F32) : bits === 8 ? (panel ? PANEL_Q8 : LIN_Q8) : panel ? PANEL_Q4 : LIN_Q4;
  const words = [sub, x, dx, N, C, scratch, stride, parts.length];
  let R = 0;
  let work = 0;
  for (const p of parts) {
    words.push(p.weight[0]!, p.weight[1] ?? 0, p.out, p.OC, R);
    R += Math.ceil(p.OC / 8) * 8;
    work += N * C * p.OC;
  }
  if (pool === null) {
    // No helpers: the same share code over a private control array, all columns on this thread.
    if (solo === null || solo.ex !== ex) {
      const c = new Int32Array(CONTROL_WORDS);
      solo = { ex, c, run: shareCode()(ex, c, new Float32Array(c.buffer)) };
    }
    words.forEach((w, i) => (solo!.c[JOB + 1 + i] = w));
    return solo.run(MANY, 0, R, 0);
  }
  forkJoin(ex, MANY, words, [], R, 8, work);
}

/** Rows [o0, o1) of a Q8 / Q4 weight as dense f32 at `out` (row o at out + 4·(o − o0)·C; wasm/kernels.ts dequantRows), split over the rows; exact, so any split gives the same bits. */
export function dequantSplit(ex: Kernels, out: number, q: number, sc: number, C: number, o0: number, o1: number, bits: 8 | 4): void {
  if (pool === null) return ex.dequantRows(out, q, sc, C, o0, o1, bits);
  forkJoin(ex, DEQUANT, [out, q, sc, C, bits, o0], [], o1 - o0, 1, (o1 - o0) * C);
}
