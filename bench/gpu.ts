/**
 * `npm run bench -- --gpu`: the WebGPU backend on whatever adapter this machine has (Node, the
 * `webgpu` package: Dawn on Vulkan / Metal / D3D12; on a machine with no GPU, Chromium's
 * SwiftShader, a CPU emulation whose figures check that everything runs, not speed), beside
 * onnxruntime-web's webgpu execution provider on the same adapter in the same process and run
 * (bench/ortWebgpu.ts; ORT on its own device, with the features it asks for). A printed report,
 * not a test: nothing is asserted.
 *
 * Sections:
 *   1. adapter: vendor / architecture / description, limits; SwiftShader said plainly;
 *   2. matmul GFLOP/s, out [N × OC] = inp [N × C] · Wᵀ (2·N·C·OC flop), for our variants v1 v2 v3
 *      (src/backend/webgpu/matmul.ts) and ORT's MatMul, on the model zoo's shapes (N = B·T =
 *      64·32 rows; C × OC of BENCH_100K / BENCH_400K's projections) plus one large square
 *      (1024³ on a real GPU, 256³ on SwiftShader — said in the table's title);
 *   3. attention GFLOP/s (causal: 4·B·NH·HS·T(T+1)/2 flop, QKᵀ and PV over the kept pairs), our
 *      attentionForward (which also stores P) in each variant (v1 v2, src/backend/webgpu/
 *      attention.ts) against ORT running the attention block of our ONNX export (which computes
 *      the full masked T × T);
 *   4. models: tokens/s of one training step (forward with activations, next-token
 *      cross-entropy gradient on the device, backward, AdamW) and of sampling (64 one-token
 *      prompts × 31 new tokens, KV cache), `Model` over `webgpuBackend` vs the same class
 *      over `cpuBackend` (the CPU twin; bench/cpu.ts times it against onnxruntime-web); and what
 *      each asks of the GPU (GpuContext.counts): dispatches and command submissions per training
 *      step (plain and with clipping active) and per decoded token, and the dispatches by kernel;
 *   5. GPU memory per model (= per agent: one model and one device per agent worker): bytes of
 *      GPU buffers created, counted by wrapping device.createBuffer / GPUBuffer.destroy around a
 *      fresh GpuContext per model (pooled buffers are never destroyed, so this is the pool's
 *      high-water mark: what the device holds), split into after construction (parameters +
 *      gradients + AdamW m, v + small constants), after a training step (+ activations, gradient
 *      scratch, logits) and after sampling (+ KV caches, sampling activations); beside it the
 *      exact 16·n bytes of n trainable parameters × {value, grad, m, v}. "After a training step"
 *      also holds this bench's loss buffers (3·N·V + 3·N floats, N = B·T) and "after sampling"
 *      the sampling path's own activations; memory scales with the batch, given in the title.
 *
 * Timing (sections 2–3): data stays on the GPU; one "call" = one op submitted on its own (ours:
 * the wrapper then ctx.flush(); ORT: one `session.run` with GPU-resident input and a pre-bound
 * GPU output). A repetition issues R calls back to back, then awaits
 * device.queue.onSubmittedWorkDone() — proper GPU synchronisation, no readback in the timed
 * region — and counts (elapsed / R) per call; R is sized from one synchronised call so a
 * repetition lasts ≈ 25 ms (capped at 64). The first call (pipeline compile) and one whole
 * repetition are untimed warm-up; the MEDIAN of the repetitions (7; 3 on SwiftShader) is
 * reported. Sections 4: a step is synchronised by its own download (a loss value / the sampled
 * ids), 1 warm-up + 5 timed (3 on SwiftShader), median.
 *
 * On SwiftShader (figures for correctness, not speed: it ran at ≈ 0.1–0.5 GFLOP/s on a 2-core
 * machine) the shapes are scaled down, and every table title says so: matmul N = 256 rows (not
 * 64·32) and a 256³ square; attention B = 4 (T 32) and B = 1 (T 128); models batch 8 × 32. The
 * whole run then takes 2–4 minutes (a real GPU's run time is not known yet: none was available).
 *
 * Options (after `npm run bench --`): --gpu (this bench), --peak-gflops=X (the card's f32 peak,
 * to print % of peak), --quick (fewer shapes and models, for a smoke run), --counts (only the
 * model section's dispatch / submission counts, per kernel too: no timing), --batch=B (sequences
 * per batch in the model section, e.g. --batch=64 on SwiftShader for the memory at full shape);
 * `--peak-gflops X` and `--batch B` work too (node:util's parseArgs, via src/cli/flags.ts). An
 * unknown option, or a value that is not a number, is named and the bench exits with status 2.
 *
 * Not here: correctness (tests/webgpu/* are the tests; the ORT/ours max relative difference is
 * printed only as a sanity check), the CPU bench (bench/cpu.ts), a browser run (see
 * docs/performance.md: the same ORT-web build in headless Chromium is the fallback if the
 * Node path ever breaks).
 */
import os from 'node:os';
import { cpuBackend } from '../src/backend/cpu';
import type { Backend, TensorKinds } from '../src/backend/types';
import type { webgpuBackend as WebgpuBackendFn } from '../src/backend/webgpu/backend';
import type { GpuDeviceHandle } from '../src/backend/webgpu/device';
import { GpuContext, type GpuCounts } from '../src/backend/webgpu/kernel';
import { MATMUL_DEFAULT, MATMUL_VARIANTS, matmulForward, type MatmulVariant } from '../src/backend/webgpu/matmul';
import { acquireAnyDevice } from '../src/backend/webgpu/node';
import { Rng } from '../src/core/rng';
import { BENCH_100K, BENCH_400K, MODEL_PRESETS, describeConfig, paramCount, type ModelConfig } from '../src/model/config';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import { BOS } from '../src/model/tokenizer';
import { initWeights } from '../src/model/weights';
import { median, relDiff } from './measure';
import { attentionModel, createSession, gpuTensor, loadOrtWebgpu, matmulModel, ortEmpty, ortRead, ortUpload, type OrtWebgpu } from './ortWebgpu';
import { markdownTable } from './report';
import { type FlagSpec, readFlags } from '../src/cli/flags';

const B = 64;
const T = 32;
const NEW = T - 1;
const SEED = 2024;
const MiB = 2 ** 20;

interface Options {
  readonly peakGflops: number | null;
  readonly quick: boolean;
  /** Batch (sequences of 32 tokens) of the model section; default 64, 8 on SwiftShader. */
  readonly batch: number | null;
  /** --counts: only the dispatch / submission counts of the model section (no timing). */
  readonly counts: boolean;
}

/** The bench's flags, for node:util's parseArgs (src/cli/flags.ts); `--gpu` is how bench/cpu.ts sends us here. */
const GPU_FLAGS = {
  gpu: { type: 'boolean' }, quick: { type: 'boolean' }, browser: { type: 'boolean' }, counts: { type: 'boolean' },
  'peak-gflops': { type: 'string' }, batch: { type: 'string' },
} as const satisfies FlagSpec;
const KNOWN = 'known: --gpu --quick --counts --peak-gflops=<GFLOP/s> --batch=<sequences>';

/** The options, or a message naming the one that is not understood. */
function parseOptions(argv: readonly string[]): Options | string {
  let peak: number | null = null;
  let batch: number | null = null;
  let quick = false;
  let counts = false;
  try {
    for (const { name, flag, value } of readFlags(argv, GPU_FLAGS, (m) => new Error(`${m.replace(/^Unknown flag/, 'unknown option')}; ${KNOWN}`))) {
      switch (name as keyof typeof GPU_FLAGS) {
        case 'peak-gflops':
          if (!/^\d+(?:\.\d+)?$/.test(value!)) return `${flag} expects the card's f32 peak in GFLOP/s (a number, e.g. --peak-gflops=67000), got ${value}`;
          peak = Number(value);
          break;
        case 'batch':
          if (!/^[1-9]\d*$/.test(value!)) return `${flag} expects a positive integer (sequences of ${T} tokens per batch), got ${value}`;
          batch = Number(value);
          break;
        case 'browser':
          return '--browser: not implemented — onnxruntime-web\'s webgpu EP runs in Node here (bench/ortWebgpu.ts); a headless-Chromium variant is the documented fallback (docs/performance.md)';
        case 'quick': quick = true; break;
        case 'counts': counts = true; break;
        case 'gpu': break;
      }
    }
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  return { peakGflops: peak, quick, batch, counts };
}

// ------------------------------------------------------------------ GPU memory accounting

/** Live bytes of buffers created on a device (createBuffer − destroy), by wrapping both. */
class BufferMeter {
  live = 0;
  private readonly sizes = new WeakMap<GPUBuffer, number>();

  constructor(device: GPUDevice) {
    const create = device.createBuffer.bind(device);
    device.createBuffer = (desc: GPUBufferDescriptor): GPUBuffer => {
      const b = create(desc);
      this.live += desc.size;
      this.sizes.set(b, desc.size);
      const destroy = b.destroy.bind(b);
      b.destroy = (): undefined => {
        const s = this.sizes.get(b);
        if (s !== undefined) {
          this.live -= s;
          this.sizes.delete(b);
        }
        return destroy();
      };
      return b;
    };
  }
}

// ------------------------------------------------------------------ timing

interface Timing {
  /** ms per call, one entry per repetition. */
  readonly ms: number[];
  /** Calls per repetition. */
  readonly R: number;
}

/** Timing of `call` (one op submitted on its own) with `sync` = wait for the GPU (header). */
async function timeGpu(call: () => unknown, sync: () => Promise<void>, reps: number, targetMs: number): Promise<Timing> {
  await call(); // pipeline compile, first allocation
  await sync();
  let t0 = performance.now();
  await call();
  await sync();
  const one = performance.now() - t0;
  const R = Math.max(1, Math.min(64, Math.floor(targetMs / Math.max(one, 1e-3))));
  const rep = async (): Promise<number> => {
    t0 = performance.now();
    for (let r = 0; r < R; r++) await call();
    await sync();
    return (performance.now() - t0) / R;
  };
  await rep(); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < reps; i++) ms.push(await rep());
  return { ms, R };
}

function gflops(flop: number, t: Timing): number {
  return flop / (median(t.ms) * 1e6);
}

function fmtG(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 0.1 ? x.toFixed(2) : x.toPrecision(2);
}

/** A ratio: 2 decimals, or 2 significant digits below 0.1. */
function fmtRatio(x: number): string {
  return x >= 0.1 ? x.toFixed(2) : x.toPrecision(2);
}

function rand(rng: Rng, n: number): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = 2 * rng.uniform() - 1;
  return a;
}


// ------------------------------------------------------------------ matmul

interface MatmulShape {
  readonly label: string;
  readonly N: number;
  readonly C: number;
  readonly OC: number;
}

async function benchMatmul(ctx: GpuContext, ort: OrtWebgpu | string, shapes: readonly MatmulShape[], reps: number, targetMs: number, peak: number | null): Promise<string> {
  const rng = new Rng(SEED, [1]);
  const sync = (): Promise<void> => ctx.finish();
  const rows: string[][] = [];
  const ratios: number[] = [];
  for (const s of shapes) {
    const { N, C, OC } = s;
    const flop = 2 * N * C * OC;
    const inpHost = rand(rng, N * C);
    const wHost = rand(rng, OC * C);
    const inp = ctx.upload('f32', inpHost);
    const w = ctx.upload('f32', wHost);
    const out = ctx.zeros('f32', N * OC);
    const ours = new Map<MatmulVariant, number>();
    for (const v of MATMUL_VARIANTS) {
      const t = await timeGpu(
        () => {
          matmulForward(ctx, out, inp, w, 1, N, C, OC, v);
          ctx.flush();
        },
        sync,
        reps,
        targetMs,
      );
      ours.set(v, gflops(flop, t));
    }
    matmulForward(ctx, out, inp, w, 1, N, C, OC, MATMUL_DEFAULT);
    const ref = await ctx.download('f32', out);
    let peer = '—';
    let ratio = '—';
    let diff = '—';
    if (typeof ort !== 'string') {
      await ctx.finish();
      const a = ortUpload(ort, inpHost);
      const y = ortEmpty(ort, N * OC);
      const sess = await createSession(ort.ort, matmulModel(N, C, OC, wHost));
      const feeds = { A: gpuTensor(ort, a, [N, C]) };
      const fetches = { Y: gpuTensor(ort, y, [N, OC]) };
      const t = await timeGpu(() => sess.run(feeds, fetches), () => ort.device.queue.onSubmittedWorkDone(), reps, targetMs);
      const g = gflops(flop, t);
      peer = fmtG(g);
      ratios.push(ours.get(MATMUL_DEFAULT)! / g);
      ratio = fmtRatio(ratios[ratios.length - 1]!);
      diff = relDiff(await ortRead(ort, y, N * OC), ref).toExponential(1);
      await sess.release();
      a.destroy();
      y.destroy();
    }
    const best = Math.max(...ours.values());
    rows.push([
      s.label,
      `${N}×${C}×${OC}`,
      (flop / 1e6).toFixed(1),
      ...MATMUL_VARIANTS.map((v) => fmtG(ours.get(v)!)),
      peer,
      ratio,
      peak !== null ? `${((100 * best) / peak).toFixed(1)} %` : '—',
      diff,
    ]);
    for (const t of [inp, w, out]) ctx.dispose(t);
  }
  const table = markdownTable(
    ['shape', 'N×C×OC', 'MFLOP', 'v1 naive', 'v2 tiled', 'v3 reg-4×4', 'ORT webgpu', `${MATMUL_DEFAULT} / ORT`, 'best % peak', 'ORT vs ours rel diff'],
    rows,
    [false, false, true, true, true, true, true, true, true, true],
  );
  return `${table}\n${target(`matmul ${MATMUL_DEFAULT}`, ratios)}`;
}

/** The issue's target line: ours ≥ 1.0× ORT on every shape? */
function target(what: string, ratios: readonly number[]): string {
  if (ratios.length === 0) return `${what} ≥ 1.0× ORT webgpu: not measured (no peer)`;
  const ok = ratios.filter((r) => r >= 1).length;
  return `${what} ≥ 1.0× ORT webgpu on ${ok} of ${ratios.length} shapes (min ${Math.min(...ratios).toFixed(2)}×)`;
}

// ------------------------------------------------------------------ attention

interface AttShape {
  readonly label: string;
  readonly B: number;
  readonly T: number;
  readonly NH: number;
  readonly HS: number;
}

async function benchAttention(ctx: GpuContext, ort: OrtWebgpu | string, shapes: readonly AttShape[], reps: number, targetMs: number, peak: number | null): Promise<string> {
  let mod: typeof import('../src/backend/webgpu/attention');
  try {
    mod = await import('../src/backend/webgpu/attention');
  } catch (e) {
    return `attention: pending — src/backend/webgpu/attention.ts could not be loaded (${e instanceof Error ? e.message : String(e)})`;
  }
  const rng = new Rng(SEED, [2]);
  const variants = mod.ATTENTION_VARIANTS;
  const dflt = mod.ATTENTION_DEFAULT;
  const rows: string[][] = [];
  const ratios = new Map<string, number[]>(variants.map((v) => [v, []]));
  for (const s of shapes) {
    const { B: b, T: t, NH, HS } = s;
    const C = NH * HS;
    const n = b * t * C;
    const flop = 4 * b * NH * HS * ((t * (t + 1)) / 2);
    const qh = rand(rng, n);
    const kh = rand(rng, n);
    const vh = rand(rng, n);
    const q = ctx.upload('f32', qh);
    const k = ctx.upload('f32', kh);
    const v = ctx.upload('f32', vh);
    const out = ctx.zeros('f32', n);
    const att = ctx.zeros('f32', b * NH * t * t);
    const ours = new Map<string, number>();
    for (const variant of variants) {
      const tm = await timeGpu(
        () => {
          mod.attentionForward(ctx, out, att, q, k, v, b, t, NH, HS, variant);
          ctx.flush();
        },
        () => ctx.finish(),
        reps,
        targetMs,
      );
      ours.set(variant, gflops(flop, tm));
    }
    mod.attentionForward(ctx, out, att, q, k, v, b, t, NH, HS, dflt);
    const ref = await ctx.download('f32', out);
    let peer = '—';
    let diff = '—';
    let g = NaN;
    if (typeof ort !== 'string') {
      await ctx.finish();
      const bufs = [ortUpload(ort, qh), ortUpload(ort, kh), ortUpload(ort, vh)] as const;
      const y = ortEmpty(ort, n);
      const sess = await createSession(ort.ort, attentionModel(b, t, NH, HS));
      const dims = [b, t, C];
      const feeds = { q: gpuTensor(ort, bufs[0], dims), k: gpuTensor(ort, bufs[1], dims), v: gpuTensor(ort, bufs[2], dims) };
      const fetches = { out: gpuTensor(ort, y, dims) };
      const tp = await timeGpu(() => sess.run(feeds, fetches), () => ort.device.queue.onSubmittedWorkDone(), reps, targetMs);
      g = gflops(flop, tp);
      peer = fmtG(g);
      for (const variant of variants) ratios.get(variant)!.push(ours.get(variant)! / g);
      diff = relDiff(await ortRead(ort, y, n), ref).toExponential(1);
      await sess.release();
      for (const x of [...bufs, y]) x.destroy();
    }
    const best = Math.max(...ours.values());
    rows.push([
      s.label,
      `${b}×${t}×${NH}×${HS}`,
      (flop / 1e6).toFixed(1),
      ...variants.map((x) => fmtG(ours.get(x)!)),
      peer,
      ...variants.map((x) => (Number.isNaN(g) ? '—' : fmtRatio(ours.get(x)! / g))),
      peak !== null ? `${((100 * best) / peak).toFixed(1)} %` : '—',
      diff,
    ]);
    for (const x of [q, k, v, out, att]) ctx.dispose(x);
  }
  const table = markdownTable(
    ['shape', 'B×T×NH×HS', 'MFLOP', ...variants.map((x) => `${x}${x === dflt ? ' (default)' : ''}`), 'ORT webgpu', ...variants.map((x) => `${x} / ORT`), 'best % peak', `ORT vs ${dflt} rel diff`],
    rows,
    [false, false, true, ...variants.map(() => true), true, ...variants.map(() => true), true, true],
  );
  return `${table}\n${variants.map((x) => target(`attention ${x}${x === dflt ? ' (default)' : ''}`, ratios.get(x)!)).join('\n')}`;
}

// ------------------------------------------------------------------ models

interface ModelRun {
  readonly trainTps: number;
  readonly sampleTps: number;
  readonly params: number;
}

/** What one training step and one decoded token ask of the GPU (GpuContext.countsSince). */
interface StepCounts {
  readonly step: GpuCounts;
  /** A step with gradient clipping active (maxGradNorm below ‖g‖: the scale ops run). */
  readonly clipped: GpuCounts;
  /** One generate call of NEW tokens; divide by NEW for a token. */
  readonly generate: GpuCounts;
}

/**
 * Counts (no timing) on a fresh model over `ctx`: one warm-up of each, then one training step,
 * one clipped step and one generate call (B one-token prompts × NEW tokens), counted.
 */
async function countModel(ctx: GpuContext, be: Backend<TensorKinds>, cfg: ModelConfig, B: number): Promise<StepCounts> {
  const rng = new Rng(SEED, [paramCount(cfg)]);
  const model = new Model(be, cfg, initWeights(cfg, rng.fork(0)), { trainable: 'full' });
  const data = rng.fork(1);
  const tokens = Int32Array.from({ length: B * T }, () => 1 + data.int(cfg.vocab - 1));
  const prompts = Array.from({ length: B }, () => Int32Array.of(BOS));
  const gen = { maxNew: NEW, temperature: 1, topK: 0, seed: SEED, stream: 0, stop: -1 } as const;
  await trainOnSequences(model, tokens, B, T, { lr: 1e-3 });
  await model.generate(prompts, gen);
  const c0 = ctx.countsNow();
  await trainOnSequences(model, tokens, B, T, { lr: 1e-3 });
  const step = ctx.countsSince(c0);
  const c1 = ctx.countsNow();
  await trainOnSequences(model, tokens, B, T, { lr: 1e-3, maxGradNorm: 1e-6 });
  const clipped = ctx.countsSince(c1);
  const c2 = ctx.countsNow();
  await model.generate(prompts, gen);
  const generate = ctx.countsSince(c2);
  model.dispose();
  return { step, clipped, generate };
}

/** The counts table (per step, per token) and, per model, the dispatches by kernel. */
function countsReport(rows: readonly { name: string; c: StepCounts }[]): string {
  const per = (x: number): string => (x / NEW).toFixed(2);
  const table = markdownTable(
    ['model', 'step dispatches', 'step submissions', 'clipped step dispatches', 'clipped step submissions', 'token dispatches', 'token submissions'],
    rows.map(({ name, c }) => [name, String(c.step.dispatches), String(c.step.submissions), String(c.clipped.dispatches), String(c.clipped.submissions), per(c.generate.dispatches), per(c.generate.submissions)]),
    [false, true, true, true, true, true, true],
  );
  const kinds = rows.map(({ name, c }) => {
    const list = (k: Readonly<Record<string, number>>, div: number): string => Object.entries(k).map(([n, v]) => `${n} ${div === 1 ? v : (v / div).toFixed(2)}`).join(', ');
    return `  ${name} — step: ${list(c.step.byKernel, 1)}\n  ${name} — token: ${list(c.generate.byKernel, NEW)}`;
  });
  return `${table}\n\nDispatches by kernel (shader names; most first):\n${kinds.join('\n')}`;
}

async function timeSteps(fn: () => Promise<unknown>, reps: number): Promise<number> {
  await fn();
  const ms: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

async function runModel<X extends TensorKinds>(be: Backend<X>, cfg: ModelConfig, B: number, reps: number, afterBuild: () => void, afterTrain: () => void): Promise<ModelRun> {
  const rng = new Rng(SEED, [paramCount(cfg)]);
  const model = new Model(be, cfg, initWeights(cfg, rng.fork(0)), { trainable: 'full' });
  afterBuild();
  const data = rng.fork(1);
  const tokens = Int32Array.from({ length: B * T }, () => 1 + data.int(cfg.vocab - 1));
  const trainMs = await timeSteps(() => trainOnSequences(model, tokens, B, T, { lr: 1e-3 }), reps);
  afterTrain();
  const prompts = Array.from({ length: B }, () => Int32Array.of(BOS));
  let generated = 0;
  const sampleMs = await timeSteps(async () => {
    const r = await model.generate(prompts, { maxNew: NEW, temperature: 1, topK: 0, seed: SEED, stream: 0, stop: -1 });
    generated = r.tokens.reduce((s, x) => s + x.length, 0);
  }, reps);
  return { trainTps: (B * T) / (trainMs / 1000), sampleTps: generated / (sampleMs / 1000), params: model.paramCount() };
}

/** The webgpu backend factory (loaded at run time: a missing export becomes a message, not a bench that does not start). */
async function loadWebgpuBackend(): Promise<typeof WebgpuBackendFn | string> {
  try {
    const idx = (await import('../src/backend/webgpu/index')) as Record<string, unknown>;
    const f = idx.webgpuBackend as typeof WebgpuBackendFn | undefined;
    return typeof f === 'function' ? f : 'src/backend/webgpu/index.ts does not export webgpuBackend yet';
  } catch (e) {
    return `src/backend/webgpu/index.ts failed to load (${e instanceof Error ? e.message : String(e)})`;
  }
}

/** `--counts`: the dispatch / submission table and the by-kernel lists only (no timing; about a minute on SwiftShader). */
async function benchCounts(handle: GpuDeviceHandle, models: readonly { name: string; cfg: ModelConfig }[], B: number): Promise<string> {
  const webgpuBackend = await loadWebgpuBackend();
  if (typeof webgpuBackend === 'string') return `counts: pending — ${webgpuBackend}`;
  const rows: { name: string; c: StepCounts }[] = [];
  for (const { name, cfg } of models) {
    const ctx = new GpuContext(handle.device);
    rows.push({ name, c: await countModel(ctx, webgpuBackend(ctx, handle.description) as unknown as Backend<TensorKinds>, cfg, B) });
  }
  return countsReport(rows);
}

async function benchModels(handle: GpuDeviceHandle, meter: BufferMeter, models: readonly { name: string; cfg: ModelConfig }[], B: number, reps: number): Promise<string> {
  const webgpuBackend = await loadWebgpuBackend();
  if (typeof webgpuBackend === 'string') return `models: pending — ${webgpuBackend}`;
  const thr: string[][] = [];
  const mem: string[][] = [];
  const counted: { name: string; c: StepCounts }[] = [];
  for (const { name, cfg } of models) {
    process.stdout.write(`  ${name}: ${describeConfig(cfg)} … `);
    const ctx = new GpuContext(handle.device);
    const be = webgpuBackend(ctx, handle.description);
    const base = meter.live;
    let built = 0;
    let trained = 0;
    let gpu: ModelRun;
    try {
      gpu = await runModel(be, cfg, B, reps, () => (built = meter.live - base), () => (trained = meter.live - base));
    } catch (e) {
      const msg = e instanceof Error ? e.message.split('\n')[0]! : String(e);
      console.log(`failed: ${msg}`);
      thr.push([name, paramCount(cfg).toLocaleString('en-US'), `failed: ${msg}`, '—', '—', '—', '—', '—', '—', '—']);
      continue;
    }
    const sampled = meter.live - base;
    const counts = await countModel(ctx, be as unknown as Backend<TensorKinds>, cfg, B);
    counted.push({ name, c: counts });
    const cpu = await runModel(cpuBackend, cfg, B, reps, () => undefined, () => undefined);
    console.log('done');
    thr.push([
      name,
      gpu.params.toLocaleString('en-US'),
      Math.round(gpu.trainTps).toLocaleString('en-US'),
      Math.round(cpu.trainTps).toLocaleString('en-US'),
      fmtRatio(gpu.trainTps / cpu.trainTps),
      Math.round(gpu.sampleTps).toLocaleString('en-US'),
      Math.round(cpu.sampleTps).toLocaleString('en-US'),
      fmtRatio(gpu.sampleTps / cpu.sampleTps),
      `${counts.step.dispatches} / ${counts.step.submissions}`,
      `${(counts.generate.dispatches / NEW).toFixed(1)} / ${(counts.generate.submissions / NEW).toFixed(1)}`,
    ]);
    mem.push([name, gpu.params.toLocaleString('en-US'), ((16 * gpu.params) / MiB).toFixed(2), (built / MiB).toFixed(2), (trained / MiB).toFixed(2), (sampled / MiB).toFixed(2)]);
  }
  const t1 = markdownTable(
    ['model', 'params', 'train WebGPU', 'train CPU', 'GPU / CPU', 'sample WebGPU', 'sample CPU', 'GPU / CPU', 'dispatches / submits per step', 'per token'],
    thr,
    [false, true, true, true, true, true, true, true, true, true],
  );
  const t2 = markdownTable(
    ['model', 'params n', '16·n (p, g, m, v)', 'GPU after build', 'GPU after train step', 'GPU after sampling'],
    mem,
    [false, true, true, true, true, true],
  );
  return `Tokens/s (median; train = ${B}·${T} tokens per step, sample = ${B} prompts × ${NEW} new tokens; Model over webgpuBackend vs over cpuBackend):\n\n${t1}\n\nGPU memory per model (= per agent), MiB of GPU buffers created (pooled; the high-water mark), cumulative:\n\n${t2}\n\nWhat a step asks of the GPU (GpuContext.counts: adapter-independent; a token = one of ${NEW} decoded in a generate call):\n\n${countsReport(counted)}`;
}

// ------------------------------------------------------------------ main

export async function runGpuBench(argv: readonly string[]): Promise<void> {
  const opts = parseOptions(argv);
  if (typeof opts === 'string') {
    console.log(`npm run bench -- --gpu: ${opts}`);
    process.exitCode = 2;
    return;
  }
  const t0 = performance.now();
  const handle = await acquireAnyDevice();
  if (!handle.ok) {
    console.log(`SAT Playground WebGPU bench — no WebGPU adapter: ${handle.reason}`);
    process.exitCode = 1;
    return;
  }
  const info = handle.adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
  const swiftshader = /swiftshader/i.test(`${info.vendor} ${info.architecture} ${info.description}`) || info.isFallbackAdapter === true;
  const meter = new BufferMeter(handle.device);
  const ctx = new GpuContext(handle.device);
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`SAT Playground WebGPU bench — Node ${process.version}, ${os.cpus().length} × ${cpu}`);
  console.log(`adapter: ${handle.description} (${handle.source}; maxStorageBufferBindingSize ${(handle.device.limits.maxStorageBufferBindingSize / MiB).toFixed(0)} MiB, maxComputeInvocationsPerWorkgroup ${handle.device.limits.maxComputeInvocationsPerWorkgroup})`);
  if (swiftshader) {
    console.log('NOTE: this adapter is SwiftShader, a CPU emulation of a GPU (no GPU on this machine). The figures below show that');
    console.log('      every kernel and the ORT peer run; they say NOTHING about speed on a GPU. Shapes and repetitions are scaled down.');
  }
  if (opts.peakGflops !== null) console.log(`peak given: ${opts.peakGflops} GFLOP/s f32 (--peak-gflops)`);

  const ort = await loadOrtWebgpu();
  if (typeof ort === 'string') console.log(`peer: onnxruntime-web webgpu EP UNAVAILABLE — ${ort}`);
  else {
    console.log(`peer: onnxruntime-web ${ort.version}, webgpu execution provider, in Node, on its own device of adapter: ${ort.adapter}`);
    if (ort.adapter !== handle.description) console.log(`WARNING: ORT's adapter differs from ours (${handle.description}): the ratios compare different adapters`);
  }
  console.log('');

  // SwiftShader runs every invocation on the CPU (≈ 0.1 GFLOP/s here): shapes scaled down so the
  // whole run takes a few minutes instead of hours. A real GPU gets the model zoo's shapes.
  const reps = swiftshader ? 3 : 7;
  const targetMs = 25;
  const rowsN = swiftshader ? 256 : B * T;
  const big = swiftshader ? 256 : 1024;
  const attB = swiftshader ? 4 : B;
  const modelB = opts.batch ?? (swiftshader ? 8 : B);
  const matShapes: MatmulShape[] = [
    { label: 'BENCH_100K q/k/v/o', N: rowsN, C: 64, OC: 64 },
    { label: 'BENCH_100K w1/w3', N: rowsN, C: 64, OC: 172 },
    { label: 'BENCH_100K w2', N: rowsN, C: 172, OC: 64 },
    { label: 'BENCH_400K q/k/v/o', N: rowsN, C: 128, OC: 128 },
    { label: 'C 128 → 256', N: rowsN, C: 128, OC: 256 },
    { label: 'BENCH_400K w1/w3', N: rowsN, C: 128, OC: 344 },
    { label: 'C 128 → 512', N: rowsN, C: 128, OC: 512 },
    { label: `square ${big}³`, N: big, C: big, OC: big },
  ];
  const attShapes: AttShape[] = [
    { label: 'BENCH_100K', B: attB, T, NH: 4, HS: 16 },
    { label: 'BENCH_400K', B: attB, T, NH: 4, HS: 32 },
    { label: 'L, T 128', B: swiftshader ? 1 : 16, T: 128, NH: 8, HS: 16 },
  ];
  const models = opts.quick
    ? [{ name: 'BENCH_100K', cfg: BENCH_100K }]
    : [
        { name: 'S', cfg: MODEL_PRESETS.S },
        { name: 'BENCH_100K', cfg: BENCH_100K },
        { name: 'BENCH_400K', cfg: BENCH_400K },
      ];
  const mats = opts.quick ? matShapes.slice(0, 2) : matShapes;
  const atts = opts.quick ? attShapes.slice(0, 1) : attShapes;
  const lap = (t: number): string => `(${((performance.now() - t) / 1000).toFixed(0)} s)`;
  if (opts.counts) {
    const ts0 = performance.now();
    console.log(`Dispatches and submissions (batch ${modelB} × ${T}; a token = one of ${NEW} decoded; adapter-independent):\n`);
    console.log(await benchCounts(handle, models, modelB));
    console.log(lap(ts0));
    return;
  }

  let ts = performance.now();
  const scaled = swiftshader ? `; SCALED DOWN for SwiftShader: N = ${rowsN} rows instead of ${B}·${T}, the square ${big}³ instead of 1024³` : '';
  console.log(`Matmul, GFLOP/s (out = inp · Wᵀ, 2·N·C·OC flop; N = ${rowsN} rows for the model shapes${scaled}; median of ${reps}):\n`);
  const ssNote = swiftshader ? ' — on SwiftShader this ratio compares two CPU emulations and says nothing about a GPU' : '';
  console.log(`${await benchMatmul(ctx, ort, mats, reps, targetMs, opts.peakGflops)}${ssNote}`);
  console.log(lap(ts));
  ts = performance.now();
  const attScaled = swiftshader ? `; SCALED DOWN for SwiftShader: B = ${attB} instead of ${B}, and 1 instead of 16 at T 128` : '';
  console.log(`\nAttention forward, GFLOP/s (causal: 4·B·NH·HS·T(T+1)/2 flop${attScaled}; median of ${reps}):\n`);
  console.log(`${await benchAttention(ctx, ort, atts, reps, targetMs, opts.peakGflops)}${ssNote}`);
  console.log(lap(ts));
  ts = performance.now();
  console.log(`\nModels (batch ${modelB} × ${T} tokens${modelB !== B ? `, SCALED DOWN${swiftshader ? ' for SwiftShader' : ''} from ${B} × ${T}` : ''}):`);
  console.log(`\n${await benchModels(handle, meter, models, modelB, swiftshader ? 3 : 5)}`);
  console.log(lap(ts));
  console.log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}
