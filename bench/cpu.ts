/**
 * `npm run bench`: the CPU backend's speed and memory on four models, beside onnxruntime-web
 * (wasm) running the same exported model, and the issue's TF.js 4.22 wasm reference figures.
 * A printed table, not a test (nothing is asserted). See docs/performance.md for the results.
 *
 * Shapes are identical for every model: batch B = 64 sequences × T = 32 tokens.
 *   train    trainOnSequences (src/model/loss.ts: full fine-tuning, forward + next-token loss +
 *            backward + AdamW) on random tokens [B × T] → B·T / step time
 *   sample   generate(64 one-token prompts, 31 new tokens each, τ = 1, no stop) with the KV cache
 *            → generated tokens (64·31) / call time
 *   forward  Model.forward(tokens, B, T), no activations kept → B·T / call time
 *   ORT      exportOnnx(cfg, model.exportWeights(), T) run by onnxruntime-web, wasm provider,
 *            1 thread (like ours: single-threaded JS), graphOptimizationLevel 'all' → B·T / run
 * Each phase is warmed up (2 calls; 5 for ORT, whose first runs are slow), then timed over
 * 5…25 repetitions (about 4 s of work, at least 5) and the MEDIAN is reported.
 *
 * Memory: every model runs in its own child process (fork of this file with `--child NAME`), so a
 * model's peaks do not include the previous model's garbage. Phases run in the order train,
 * sample, forward, ORT; bench/measure.ts samples the process RSS every ~2 ms from a worker thread
 * (a high-water mark during each phase) and heapUsed / arrayBuffers after every repetition. The
 * "peak RSS (ours)" column is process.resourceUsage().maxRSS just before ORT is loaded — the
 * whole-process peak of our three phases, the number comparable to TF.js's peak. RSS includes
 * Node + tsx (the "RSS start" column) and, in the last phase, the ORT wasm runtime.
 *
 * The whole run takes about a minute on a 2-core machine (Node 20); each child's result comes back
 * over the fork IPC channel as JSON.
 *
 * Not here: the WebGPU backend's numbers (`npm run bench -- --gpu` runs bench/gpu.ts instead of
 * this file's bench), correctness (tests/onnx.test.ts checks ORT against Model.forward;
 * here only the relative difference is printed as a sanity check).
 */
import { fork } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-web';
import { Rng } from '../src/core/rng';
import { BENCH_100K, BENCH_400K, MODEL_PRESETS, describeConfig, paramCount, type ModelConfig } from '../src/model/config';
import { exportOnnx } from './onnx/export';
import { BOS } from '../src/model/tokenizer';
import { cpuBackend } from '../src/backend/cpu';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import { initWeights } from '../src/model/weights';
import { MemoryProbe, median, timeReps } from './measure';
import { renderTables, type ModelResult, type Reference } from './report';
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

/** The issue's TF.js 4.22 wasm figures (tokens/s, peak MB) at the same shapes. */
const REFERENCE = new Map<string, Reference>([
  ['BENCH_100K', { train: 2000, sample: 8450, peakMb: 270 }],
  ['BENCH_400K', { train: 560, sample: 3660, peakMb: 410 }],
]);

/** Repetitions for ~4 s of timed work given one call's time, clamped to [5, 25]. */
function repsFor(ms: number): number {
  return Math.min(25, Math.max(5, Math.round(4000 / Math.max(ms, 1))));
}

/** One untimed-for-the-table call (the first warm-up); returns its ms to size the repetitions. */
async function once(fn: () => unknown): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** Runs every phase for one model (in a child process) and returns what it measured. */
async function measureModel(name: string, cfg: ModelConfig): Promise<ModelResult> {
  const probe = new MemoryProbe(4);
  const baselineRss = process.memoryUsage().rss;
  const rng = new Rng(SEED, [paramCount(cfg)]);
  const model = new Model(cpuBackend, cfg, initWeights(cfg, rng.fork(0)), { trainable: 'full' });
  const data = rng.fork(1);
  const tokens = Int32Array.from({ length: B * T }, () => 1 + data.int(cfg.vocab - 1)); // no PAD: every position is a target

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
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < ours.length; i++) {
    diff = Math.max(diff, Math.abs(ours[i]! - theirs[i]!));
    scale = Math.max(scale, Math.abs(ours[i]!));
  }
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
    ortRelDiff: diff / scale,
    baselineRss,
    mem: { train: probe.peaks(0), sample: probe.peaks(1), forward: probe.peaks(2), ort: probe.peaks(3) },
    peakRssOurs,
    peakRssAll,
  };
}

/** Forks this file for one model and waits for its result. */
function runChild(name: string): Promise<ModelResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--child', name], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let result: ModelResult | null = null;
    child.on('message', (m) => {
      result = m as ModelResult;
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
 * line to bench/gpu.ts, which reads its own; `--child NAME` is how runChild starts a model's run.
 */
const CPU_FLAGS = { gpu: { type: 'boolean' }, child: { type: 'string' } } as const satisfies FlagSpec;

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (parseArgs({ args: argv, options: CPU_FLAGS, strict: false }).values.gpu === true) {
    // `npm run bench -- --gpu`: the WebGPU bench (bench/gpu.ts) instead of this one.
    const { runGpuBench } = await import('./gpu');
    await runGpuBench(argv);
    return;
  }
  let child: string | undefined;
  try {
    for (const f of readFlags(argv, CPU_FLAGS, (m) => new Error(m))) if (f.name === 'child') child = f.value;
  } catch (e) {
    const m = (e as Error).message;
    console.log(`npm run bench: ${m.startsWith('Unknown flag') ? `${m.replace(/^Unknown flag/, 'unknown option')}; known: --gpu (the WebGPU bench, with its own options: bench/gpu.ts)` : m}`);
    process.exitCode = 2;
    return;
  }
  if (child !== undefined) {
    const m = MODELS.find((x) => x.name === child);
    if (!m) throw new Error(`unknown bench model ${child}`);
    const r = await measureModel(m.name, m.cfg);
    process.send!(r, () => process.exit(0));
    return;
  }
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`SAT Playground CPU bench — ${os.cpus().length} × ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, onnxruntime-web ${ort.env.versions.web ?? '?'}`);
  console.log(`shapes: batch ${B} × ${T} tokens (sampling: ${B} one-token prompts × ${NEW} new tokens)\n`);
  const t0 = performance.now();
  const results: ModelResult[] = [];
  for (const m of MODELS) {
    const r = await runChild(m.name);
    results.push(r);
    const reps = [r.trainMs, r.sampleMs, r.forwardMs, r.ortMs].map((x) => x.length).join('/');
    console.log(
      `${m.name.padEnd(10)} ${r.describe}\n           reps train/sample/forward/ORT ${reps}; ORT session ${r.ortCreateMs.toFixed(0)} ms; ORT vs ours max rel diff ${r.ortRelDiff.toExponential(1)}; process peak RSS with ORT ${(r.peakRssAll / 2 ** 20).toFixed(0)} MiB`,
    );
  }
  console.log(`\n${renderTables(results, REFERENCE, median)}\n`);
  console.log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
