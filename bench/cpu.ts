/**
 * `npm run bench`: the CPU backend's speed and memory on four models, beside two peers measured in
 * the same run on the same shapes, weights and tokens: TF.js 4.22 (wasm backend) running the same
 * tiny Llama (bench/tfjs.ts), and onnxruntime-web (wasm) running the exported model. A printed
 * table, not a test (nothing is asserted). See docs/performance.md for the results.
 *
 * Shapes are identical for every model: batch B = 64 sequences × T = 32 tokens.
 *   train    trainOnSequences (src/model/loss.ts: full fine-tuning, forward + next-token loss +
 *            backward + AdamW) on random tokens [B × T] → B·T / step time
 *   sample   generate(64 one-token prompts, 31 new tokens each, τ = 1, no stop) with the KV cache
 *            → generated tokens (64·31) / call time
 *   forward  Model.forward(tokens, B, T), no activations kept → B·T / call time
 *   ORT      exportOnnx(cfg, model.exportWeights(), T) run by onnxruntime-web, wasm provider,
 *            graphOptimizationLevel 'all' → B·T / run, at 1 thread; and, when ours runs threaded,
 *            also at our thread count (its numThreads works in Node: its own child, `--ort NAME`,
 *            the initial weights — the speed does not depend on their values); the forward ratio
 *            is against the better of the two
 *   TF.js    the same three phases in TF.js (bench/tfjs.ts: what is built, one thread — its wasm
 *            backend has no threads in Node —, and why two training configurations — "stock"
 *            autodiff and "fixed" transpose-then-matMul)
 * Threads, ours: the CPU backend's default (src/backend/cpu/threads.ts: min(cores, 4); SAT_THREADS
 * overrides, SAT_THREADS=1 is the single-thread bench); the child waits for its helper threads
 * before measuring. The header line prints the thread count of ours, ORT and TF.js.
 * Ours and ORT: each phase is warmed up (2 calls; 5 for ORT, whose first runs are slow), then
 * timed over 5…25 repetitions (about 4 s of work, at least 5). TF.js, to keep the run short (its
 * stock training step is over a second at 400k): 2 warm-up calls, then 3…10 repetitions (about
 * 2 s of work, at least 3). The MEDIAN is reported.
 *
 * Memory: every model runs in two child processes, one after the other (forks of this file):
 * `--child NAME` (ours, then ORT) and `--tfjs NAME` (TF.js only), so neither side's peak includes
 * the other's runtime or garbage — in particular TF.js's wasm heap, which only grows. Ours: phases
 * train, sample, forward, ORT; bench/measure.ts samples the process RSS every ~2 ms from a worker
 * thread (a high-water mark during each phase) and heapUsed / arrayBuffers after every repetition.
 * "peak RSS (ours)" is process.resourceUsage().maxRSS just before ORT is loaded — the
 * whole-process peak of our three phases. TF.js: phases train stock, train fixed, sample,
 * forward, same probe; "peak RSS (TF.js)" is maxRSS after them (before the sanity checks, which
 * build our Model in that process to compare logits). Both children load the same modules before
 * measuring ("RSS start"); the TF.js child then imports @tensorflow/tfjs + the wasm backend.
 *
 * The whole run takes about a minute and a half on a 2-core machine (Node 20); each child's
 * result comes back over the fork IPC channel as JSON.
 *
 * Last row: the frozen ONNX teammate's sampling in onnxruntime-web against our sampler on the same
 * weights (bench/onnx/frozen.ts, in a child of its own: `--frozen`).
 *
 * Not here: the WebGPU backend's numbers (`npm run bench -- --gpu` runs bench/gpu.ts instead of
 * this file's bench), a ~100M-class Hugging Face checkpoint's sampling and LoRA training
 * (`npm run bench -- --hf [--gpu]` runs bench/hf.ts, the same as `npm run bench:hf`), correctness (tests/onnx.test.ts checks ORT against Model.forward; here only
 * the relative differences of ORT's and TF.js's logits are printed as sanity checks).
 */
import { fork } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-web';
import { Rng } from '../src/core/rng';
import { BENCH_100K, BENCH_400K, MODEL_PRESETS, describeConfig, paramCount, type ModelConfig } from '../src/model/config';
import { exportOnnx } from './onnx/export';
import type { FrozenBenchResult } from './onnx/frozen';
import { BOS } from '../src/model/tokenizer';
import { cpuBackend } from '../src/backend/cpu';
import { simdAvailable } from '../src/backend/cpu/simd';
import { cpuThreadsReady } from '../src/backend/cpu/threads';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import { initWeights, type ModelWeights } from '../src/model/weights';
import { MemoryProbe, median, relDiff, timeReps } from './measure';
import { renderTables, type ModelResult, type OrtThreadedResult, type TfjsResult } from './report';
import { type FlagSpec, readFlags } from '../src/cli/flags';

const B = 64;
const T = 32;
const NEW = T - 1;
const SEED = 2024;

const MODELS: readonly { name: string; cfg: ModelConfig }[] = [
  { name: 'S', cfg: MODEL_PRESETS.S },
  { name: 'M', cfg: MODEL_PRESETS.M },
  { name: 'BENCH_100K', cfg: BENCH_100K },
  { name: 'BENCH_400K', cfg: BENCH_400K },
];

/** Repetitions for ~4 s of timed work given one call's time, clamped to [5, 25]. */
function repsFor(ms: number): number {
  return Math.min(25, Math.max(5, Math.round(4000 / Math.max(ms, 1))));
}

/** TF.js repetitions: ~2 s of timed work, clamped to [3, 10] (header). */
function tfjsRepsFor(ms: number): number {
  return Math.min(10, Math.max(3, Math.round(2000 / Math.max(ms, 1))));
}

/** One untimed-for-the-table call (the first warm-up); returns its ms to size the repetitions. */
async function once(fn: () => unknown): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** The initial weights and the token batch, the same in both children (same seed). */
function benchInputs(cfg: ModelConfig): { weights: ModelWeights; tokens: Int32Array } {
  const rng = new Rng(SEED, [paramCount(cfg)]);
  const weights = initWeights(cfg, rng.fork(0));
  const data = rng.fork(1);
  const tokens = Int32Array.from({ length: B * T }, () => 1 + data.int(cfg.vocab - 1)); // no PAD: every position is a target
  return { weights, tokens };
}


/** Runs every phase for one model (in a child process) and returns what it measured. */
async function measureModel(name: string, cfg: ModelConfig): Promise<ModelResult> {
  const probe = new MemoryProbe(4);
  const baselineRss = process.memoryUsage().rss;
  const { weights, tokens } = benchInputs(cfg);
  simdAvailable(); // loads the kernels and starts the helper threads (header)
  const threads = await cpuThreadsReady();
  const model = new Model(cpuBackend, cfg, weights, { trainable: 'full' });

  // train
  probe.phase(0);
  const train = (): Promise<number> => trainOnSequences(model, tokens, B, T, { lr: 1e-3 });
  const trainMs = await timeReps(train, 1, repsFor(await once(train)), probe);

  // sample
  probe.phase(1);
  const prompts = Array.from({ length: B }, () => Int32Array.of(BOS));
  let sampleTokens = 0;
  const sample = async (): Promise<void> => {
    const r = await model.generate(prompts, { maxNew: NEW, temperature: 1, topK: 0, seed: SEED, stream: 0, stop: -1 });
    sampleTokens = r.tokens.reduce((s, t) => s + t.length, 0);
  };
  const sampleMs = await timeReps(sample, 1, repsFor(await once(sample)), probe);

  // forward
  probe.phase(2);
  let ours: Float32Array = new Float32Array(0);
  const forward = (): void => {
    ours = model.forward(tokens, B, T);
  };
  const forwardMs = await timeReps(forward, 1, repsFor(await once(forward)), probe);
  const peakRssOurs = process.resourceUsage().maxRSS * 1024;

  // ORT on the same weights and tokens
  probe.phase(3);
  ort.env.wasm.numThreads = 1;
  const bytes = exportOnnx(cfg, await model.exportWeights(), T);
  const t0 = performance.now();
  const sess = await ort.InferenceSession.create(bytes, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const ortCreateMs = performance.now() - t0;
  const input = new ort.Tensor('int64', BigInt64Array.from(tokens, (x) => BigInt(x)), [B, T]);
  let theirs: Float32Array = new Float32Array(0);
  const run = async (): Promise<void> => {
    theirs = (await sess.run({ tokens: input })).logits!.data as Float32Array;
  };
  const ortMs = await timeReps(run, 4, repsFor(await once(run)), probe);
  const ortRelDiff = relDiff(theirs, ours);
  await sess.release();
  const peakRssAll = process.resourceUsage().maxRSS * 1024;
  await probe.stop();
  return {
    name,
    params: paramCount(cfg),
    describe: describeConfig(cfg),
    batch: B,
    seq: T,
    trainMs,
    sampleMs,
    sampleTokens,
    forwardMs,
    ortMs,
    ortCreateMs,
    ortRelDiff,
    baselineRss,
    mem: { train: probe.peaks(0), sample: probe.peaks(1), forward: probe.peaks(2), ort: probe.peaks(3) },
    peakRssOurs,
    peakRssAll,
    threads,
  };
}

/** ORT alone at `threads` threads (header), in its own child: `--ort NAME` with ORT_THREADS set. */
async function measureOrtThreaded(cfg: ModelConfig, threads: number): Promise<OrtThreadedResult> {
  const { weights, tokens } = benchInputs(cfg);
  ort.env.wasm.numThreads = threads;
  const sess = await ort.InferenceSession.create(exportOnnx(cfg, weights, T), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const input = new ort.Tensor('int64', BigInt64Array.from(tokens, (x) => BigInt(x)), [B, T]);
  const run = async (): Promise<void> => {
    await sess.run({ tokens: input });
  };
  const probe = new MemoryProbe(1);
  const ortMs = await timeReps(run, 4, repsFor(await once(run)), probe);
  await probe.stop();
  await sess.release();
  return { threads: ort.env.wasm.numThreads, ortMs };
}

/** The TF.js phases for one model (in its own child process, header) and the sanity checks. */
async function measureTfjs(name: string, cfg: ModelConfig): Promise<TfjsResult> {
  const probe = new MemoryProbe(4);
  const baselineRss = process.memoryUsage().rss;
  const { weights, tokens } = benchInputs(cfg);
  const { loadTfjs, TfjsLlama, matmulProbe } = await import('./tfjs');
  const { tf, version, threads, simd, multithread } = await loadTfjs();
  const importRss = process.memoryUsage().rss;
  const model = new TfjsLlama(tf, cfg, weights);
  const tok = tf.tensor1d(tokens, 'int32');
  // onehot(next token) per row, zero rows at t = T−1 (no target): the loss's mask.
  const V = cfg.vocab;
  const tgt = new Float32Array(B * T * V);
  for (let b = 0; b < B; b++) for (let t = 0; t + 1 < T; t++) tgt[(b * T + t) * V + tokens[b * T + t + 1]!] = 1;
  const target = tf.tensor2d(tgt, [B * T, V]);
  const count = B * (T - 1);
  const theirs = model.forward(tok, B, T); // initial weights, for the logits check below

  const train = async (mode: 'stock' | 'fixed', phase: number): Promise<number[]> => {
    probe.phase(phase);
    const opt = tf.train.adam(1e-3, 0.9, 0.999, 1e-8);
    const step = (): number => model.trainStep(opt, tok, target, count, B, T, mode);
    const ms = await timeReps(step, 1, tfjsRepsFor(await once(step)), probe);
    opt.dispose();
    return ms;
  };
  const trainStockMs = await train('stock', 0);
  const trainFixedMs = await train('fixed', 1);

  probe.phase(2);
  const first = new Int32Array(B).fill(BOS);
  let sampleTokens = 0;
  const sample = (): void => {
    sampleTokens = model.generate(first, NEW, SEED).length;
  };
  const sampleMs = await timeReps(sample, 1, tfjsRepsFor(await once(sample)), probe);

  probe.phase(3);
  const forward = (): void => {
    model.forward(tok, B, T);
  };
  const forwardMs = await timeReps(forward, 1, tfjsRepsFor(await once(forward)), probe);
  const peakRss = process.resourceUsage().maxRSS * 1024;
  await probe.stop();

  // Sanity checks, after the peak was read: fixed vs stock gradients, our logits vs TF.js's.
  const gradRelDiff = tf.tidy(() => {
    const a = model.grads(tok, target, count, B, T, 'stock').grads;
    const b = model.grads(tok, target, count, B, T, 'fixed').grads;
    const flat = (g: typeof a): Float32Array => Float32Array.from(Object.keys(g).flatMap((k) => Array.from(g[k]!.dataSync())));
    return relDiff(flat(b), flat(a));
  });
  const matmul = matmulProbe(tf, B * T, cfg.d, cfg.hidden);
  const ours = new Model(cpuBackend, cfg, weights, { trainable: 'none' }).forward(tokens, B, T);
  return {
    name,
    version,
    threads,
    simd,
    multithread,
    trainStockMs,
    trainFixedMs,
    sampleMs,
    sampleTokens,
    forwardMs,
    relDiff: relDiff(theirs, ours),
    gradRelDiff,
    matmul,
    baselineRss,
    importRss,
    mem: { stock: probe.peaks(0), fixed: probe.peaks(1), sample: probe.peaks(2), forward: probe.peaks(3) },
    peakRss,
  };
}

/** Forks this file for one model (`--child` ours + ORT, `--tfjs` TF.js, `--ort` threaded ORT) and waits for its result. */
function runChild<R>(flag: '--child' | '--tfjs' | '--ort' | '--frozen', name: string, env: NodeJS.ProcessEnv = process.env): Promise<R> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), [flag, name], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env });
    let result: R | null = null;
    child.on('message', (m) => {
      result = m as R;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (result !== null) resolve(result);
      else reject(new Error(`bench child for ${name} exited with code ${code} without a result`));
    });
  });
}

/**
 * This file's flags (node:util's parseArgs, via src/cli/flags.ts): `--gpu` hands the whole command
 * line to bench/gpu.ts, which reads its own; `--child NAME`, `--tfjs NAME` and `--ort NAME` are how
 * runChild starts a model's runs.
 */
const CPU_FLAGS = { gpu: { type: 'boolean' }, hf: { type: 'boolean' }, child: { type: 'string' }, tfjs: { type: 'string' }, ort: { type: 'string' }, frozen: { type: 'boolean' } } as const satisfies FlagSpec;

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const lead = parseArgs({ args: argv, options: CPU_FLAGS, strict: false }).values;
  if (lead.hf === true) {
    // `npm run bench -- --hf [its options]`: the ~100M-class checkpoint bench (bench/hf.ts, the same
    // as `npm run bench:hf`), in a child process of its own — it reads its own flags.
    const hf = fork(fileURLToPath(new URL('./hf.ts', import.meta.url)), argv.filter((a) => a !== '--hf'), { stdio: 'inherit' });
    process.exitCode = await new Promise<number>((resolve) => hf.on('exit', (code) => resolve(code ?? 1)));
    return;
  }
  if (lead.gpu === true) {
    // `npm run bench -- --gpu`: the WebGPU bench (bench/gpu.ts) instead of this one.
    const { runGpuBench } = await import('./gpu');
    await runGpuBench(argv);
    return;
  }
  if (lead.frozen === true) {
    // The frozen ONNX teammate's child (bench/onnx/frozen.ts).
    const { benchFrozenSampling } = await import('./onnx/frozen');
    const r = await benchFrozenSampling();
    process.send!(r, () => process.exit(0));
    return;
  }
  let child: string | undefined;
  let tfjsChild: string | undefined;
  let ortChild: string | undefined;
  try {
    for (const f of readFlags(argv, CPU_FLAGS, (m) => new Error(m))) {
      if (f.name === 'child') child = f.value;
      if (f.name === 'tfjs') tfjsChild = f.value;
      if (f.name === 'ort') ortChild = f.value;
    }
  } catch (e) {
    const m = (e as Error).message;
    console.log(`npm run bench: ${m.startsWith('Unknown flag') ? `${m.replace(/^Unknown flag/, 'unknown option')}; known: --gpu (the WebGPU bench, with its own options: bench/gpu.ts), --hf (the checkpoint bench: bench/hf.ts)` : m}`);
    process.exitCode = 2;
    return;
  }
  if (child !== undefined || tfjsChild !== undefined || ortChild !== undefined) {
    const m = MODELS.find((x) => x.name === (child ?? tfjsChild ?? ortChild));
    if (!m) throw new Error(`unknown bench model ${child ?? tfjsChild ?? ortChild}`);
    const r =
      child !== undefined ? await measureModel(m.name, m.cfg) : tfjsChild !== undefined ? await measureTfjs(m.name, m.cfg) : await measureOrtThreaded(m.cfg, Number(process.env.ORT_THREADS));
    process.send!(r, () => process.exit(0));
    return;
  }
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`SAT Playground CPU bench — ${os.cpus().length} × ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, onnxruntime-web ${ort.env.versions.web ?? '?'}, TF.js (see each model's line)`);
  console.log(`shapes: batch ${B} × ${T} tokens (sampling: ${B} one-token prompts × ${NEW} new tokens)\n`);
  const t0 = performance.now();
  const rows: { ours: ModelResult; tfjs: TfjsResult; ortT: OrtThreadedResult | null }[] = [];
  for (const m of MODELS) {
    const r = await runChild<ModelResult>('--child', m.name);
    const t = await runChild<TfjsResult>('--tfjs', m.name);
    const o = r.threads > 1 ? await runChild<OrtThreadedResult>('--ort', m.name, { ...process.env, ORT_THREADS: String(r.threads) }) : null;
    rows.push({ ours: r, tfjs: t, ortT: o });
    if (m === MODELS[0]) {
      console.log(`threads: ours ${r.threads} (${cpuThreadsNote()}), ORT 1${o ? ` and ${o.threads}` : ''}, TF.js ${t.threads} (its wasm backend has no threads in Node)\n`);
    }
    const reps = [r.trainMs, r.sampleMs, r.forwardMs, r.ortMs].map((x) => x.length).join('/');
    const treps = [t.trainStockMs, t.trainFixedMs, t.sampleMs, t.forwardMs].map((x) => x.length).join('/');
    const mm = t.matmul;
    console.log(
      `${m.name.padEnd(10)} ${r.describe}\n` +
        `           ours: reps train/sample/forward/ORT ${reps}; ORT session ${r.ortCreateMs.toFixed(0)} ms; ORT vs ours max rel diff ${r.ortRelDiff.toExponential(1)}; process peak RSS with ORT ${(r.peakRssAll / 2 ** 20).toFixed(0)} MiB\n` +
        `           TF.js ${t.version} wasm (threads ${t.threads}, SIMD ${t.simd}, multithread support ${t.multithread}): reps stock/fixed/sample/forward ${treps}; TF.js vs ours logits max rel diff ${t.relDiff.toExponential(1)}; fixed vs stock gradients ${t.gradRelDiff.toExponential(1)}\n` +
        `           TF.js matMul ${B * T}×${m.cfg.d}→${m.cfg.hidden}, ms: NN ${mm.nn.toFixed(1)}, NT (dy·Wᵀ, stock dx) ${mm.nt.toFixed(1)}, TN (xᵀ·dy, stock dW) ${mm.tn.toFixed(1)}, transpose then NN (fixed dW) ${mm.transposeNn.toFixed(1)}`,
    );
  }
  console.log(`\n${renderTables(rows, median)}\n`);
  const fz = await runChild<FrozenBenchResult>('--frozen', '');
  console.log(
    `frozen ONNX teammate, sampling (${fz.describe}; the same weights, same run):\n` +
      `  onnxruntime-web wasm, 1 thread, KV cache, one prompt at a time: ${fz.ort.toFixed(0)} tokens/s\n` +
      `  ours (CPU backend), one prompt at a time: ${fz.oursSerial.toFixed(0)} tokens/s (ORT / ours ${(fz.ort / fz.oursSerial).toFixed(2)}×)\n` +
      `  ours, the 8 prompts batched: ${fz.oursBatched.toFixed(0)} tokens/s (ORT / ours ${(fz.ort / fz.oursBatched).toFixed(2)}×)\n`,
  );
  console.log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

/** Where our thread count comes from (src/backend/cpu/threads.ts). */
function cpuThreadsNote(): string {
  if (process.env.SAT_THREADS !== undefined) return `SAT_THREADS=${process.env.SAT_THREADS}`;
  return 'the default, min(cores, 4)';
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
