/**
 * `npm run bench:interleaved`: our forward against onnxruntime-web's, and our training step
 * against TF.js's (its "fixed" configuration, the faster one in every `npm run bench` run),
 * INTERLEAVED — for a
 * machine shared with other work, where `npm run bench` (which times each phase in its own block of
 * seconds) sees the load change between ours and the peer. Here each round runs one forward of
 * ours (Model over cpuBackend, or over cpuBackendReference: the all-TypeScript kernels) and one ORT
 * run (wasm provider, 1 thread, graphOptimizationLevel 'all'), back to back, on the same weights
 * (initWeights, bench seed) and tokens, batch 64 × 32, so both see the same load. Two clocks per
 * call: wall time (performance.now) and this process's CPU time (process.cpuUsage, user + system;
 * everything here runs on the main thread, so CPU time is what the call itself cost and does not
 * count the time another process held the core — it still includes cache and frequency effects of
 * the neighbours). Forward: medians over 15 rounds after 3 warm-up rounds. Training: one round is
 * trainOnSequences on ours (forward, loss, backward, AdamW) and TfjsLlama.trainStep(…, 'fixed') on
 * TF.js 4.22's wasm backend (one thread; bench/tfjs.ts), same weights and tokens; medians over 7
 * rounds after 2. Ratios in the same run. Printed tables; nothing asserted.
 * Threads: ours runs at the CPU backend's thread count (src/backend/cpu/threads.ts; SAT_THREADS
 * overrides) and, in the training rounds, also at 1 thread (a second model, same weights, between
 * setCpuThreads calls), so the threads' speed-up is measured under the same load; with threads,
 * CPU time counts every thread of the process, so compare wall times there. ORT and TF.js: 1 thread.
 *
 * Not here: sampling, memory, TF.js's stock configuration (all in `npm run bench`, bench/cpu.ts).
 */
import * as ort from 'onnxruntime-web';
import { cpuBackend, cpuBackendReference } from '../src/backend/cpu';
import { simdAvailable } from '../src/backend/cpu/simd';
import { cpuThreadsReady, setCpuThreads } from '../src/backend/cpu/threads';
import { Rng } from '../src/core/rng';
import { BENCH_100K, BENCH_400K, MODEL_PRESETS, paramCount, type ModelConfig } from '../src/model/config';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import { initWeights } from '../src/model/weights';
import { exportOnnx } from './onnx/export';
import { median } from './measure';
import { TfjsLlama, loadTfjs } from './tfjs';

const B = 64;
const T = 32;
const SEED = 2024;
const WARM = 3;
const ROUNDS = 15;

/** Wall and CPU ms of one call. */
async function clock(f: () => unknown): Promise<[number, number]> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await f();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return [wall, (c.user + c.system) / 1000];
}

const MODELS: [string, ModelConfig][] = [
  ['S', MODEL_PRESETS.S],
  ['M', MODEL_PRESETS.M],
  ['BENCH_100K', BENCH_100K],
  ['BENCH_400K', BENCH_400K],
];

/** The bench's weights and tokens for a model (as bench/cpu.ts makes them). */
function inputs(cfg: ModelConfig): { weights: ReturnType<typeof initWeights>; tokens: Int32Array } {
  const rng = new Rng(SEED, [paramCount(cfg)]);
  const weights = initWeights(cfg, rng.fork(0));
  const data = rng.fork(1);
  return { weights, tokens: Int32Array.from({ length: B * T }, () => 1 + data.int(cfg.vocab - 1)) };
}

ort.env.wasm.numThreads = 1;
simdAvailable(); // loads the kernels, starting the helper threads
const THREADS = await cpuThreadsReady();
console.log(`ours: ${THREADS} thread(s) (src/backend/cpu/threads.ts); ORT and TF.js: 1`);
const f = (x: number): string => x.toFixed(1).padStart(7);
console.log(`interleaved forward, B ${B} × T ${T}, ${ROUNDS} rounds after ${WARM} warm-up (ms per call, medians; ratio = ORT ms / ours ms, > 1: ours faster)`);
console.log('model       | ours wall   cpu | reference wall   cpu | ORT wall   cpu | ours/ORT wall  cpu | reference/ORT cpu');
for (const [name, cfg] of MODELS) {
  const { weights, tokens } = inputs(cfg);
  const ours = new Model(cpuBackend, cfg, weights, { trainable: 'none' });
  const ref = new Model(cpuBackendReference, cfg, weights, { trainable: 'none' });
  const sess = await ort.InferenceSession.create(exportOnnx(cfg, await ours.exportWeights(), T), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const input = new ort.Tensor('int64', BigInt64Array.from(tokens, (x) => BigInt(x)), [B, T]);
  const t: [number, number][][] = [[], [], []];
  for (let r = 0; r < WARM + ROUNDS; r++) {
    const round = [await clock(() => ours.forward(tokens, B, T)), await clock(() => ref.forward(tokens, B, T)), await clock(() => sess.run({ tokens: input }))];
    if (r >= WARM) round.forEach((x, i) => t[i]!.push(x));
  }
  await sess.release();
  const [ow, oc, rw, rc, xw, xc] = t.flatMap((s) => [median(s.map((x) => x[0])), median(s.map((x) => x[1]))]) as [number, number, number, number, number, number];
  console.log(`${name.padEnd(11)} | ${f(ow)} ${f(oc)} | ${f(rw)} ${f(rc)} | ${f(xw)} ${f(xc)} | ${(xw / ow).toFixed(2).padStart(9)} ${(xc / oc).toFixed(2).padStart(5)} | ${(xc / rc).toFixed(2).padStart(8)}`);
}

const { tf, version } = await loadTfjs();
console.log('');
console.log(`interleaved training step, B ${B} × T ${T}, 7 rounds after 2 warm-up; TF.js ${version} wasm, 'fixed' gradients (ratio = TF.js ms / ours ms, > 1: ours faster)`);
console.log(`model       | ours wall   cpu | TF.js wall   cpu | ours/TF.js wall  cpu | ours 1 thread wall | ours 1 thread/TF.js wall | ${THREADS} threads ÷ 1, wall`);
for (const [name, cfg] of MODELS) {
  const { weights, tokens } = inputs(cfg);
  const ours = new Model(cpuBackend, cfg, weights, { trainable: 'full' });
  const ours1 = new Model(cpuBackend, cfg, weights, { trainable: 'full' });
  const theirs = new TfjsLlama(tf, cfg, weights);
  const tok = tf.tensor1d(tokens, 'int32');
  const V = cfg.vocab;
  const tgt = new Float32Array(B * T * V);
  for (let b = 0; b < B; b++) for (let t = 0; t + 1 < T; t++) tgt[(b * T + t) * V + tokens[b * T + t + 1]!] = 1;
  const target = tf.tensor2d(tgt, [B * T, V]);
  const opt = tf.train.adam(1e-3, 0.9, 0.999, 1e-8);
  const t: [number, number][][] = [[], [], []];
  for (let r = 0; r < 9; r++) {
    setCpuThreads(THREADS);
    const a = await clock(() => trainOnSequences(ours, tokens, B, T, { lr: 1e-3 }));
    setCpuThreads(1);
    const one = await clock(() => trainOnSequences(ours1, tokens, B, T, { lr: 1e-3 }));
    setCpuThreads(THREADS);
    const round = [a, await clock(() => theirs.trainStep(opt, tok, target, B * (T - 1), B, T, 'fixed')), one];
    if (r >= 2) round.forEach((x, i) => t[i]!.push(x));
  }
  opt.dispose();
  tf.dispose([tok, target]);
  tf.disposeVariables(); // TfjsLlama registers named variables: the next model reuses the names
  const [ow, oc, xw, xc, w1] = t.flatMap((s) => [median(s.map((x) => x[0])), median(s.map((x) => x[1]))]) as [number, number, number, number, number];
  console.log(
    `${name.padEnd(11)} | ${f(ow)} ${f(oc)} | ${f(xw)} ${f(xc)} | ${(xw / ow).toFixed(2).padStart(11)} ${(xc / oc).toFixed(2).padStart(5)} | ${f(w1).padStart(18)} | ${(xw / w1).toFixed(2).padStart(24)} | ${(w1 / ow).toFixed(2).padStart(10)}`,
  );
}
