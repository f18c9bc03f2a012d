/**
 * `npm run bench:simd`: the TypeScript kernels of the CPU backend against their WebAssembly SIMD
 * twins (src/backend/cpu/simd.ts, copies in and out included), at the bench's shapes, in two tables:
 *   1. GFLOP/s of the f32 matmul family (src/backend/cpu/matmul.ts, f64 accumulators): N = 64·32 =
 *      2048 rows and every (C → OC) a model of bench/cpu.ts multiplies by — d→d (attention
 *      projections), d→hidden (w1, w3), hidden→d (w2), d→vocab (the tied head). Forward counts
 *      2·N·C·OC flops, backward (dinp and dW) 4·N·C·OC.
 *   2. ms per call of attention (B 64, T 32, the model's heads) and the row kernels (rmsnorm and
 *      RoPE on [2048 × d], swiglu on [2048 × hidden], log-softmax on [2048 × vocab]), forward and backward,
 *      per model shape, with the ratio TS / SIMD.
 *   3. where a whole step's time goes, per backend op (bench/opTimes.ts): one Model.forward and one
 *      trainOnSequences step (forward, loss, backward, AdamW) at B 64 × T 32 on BENCH_100K and
 *      BENCH_400K, on cpuBackend (SIMD) and cpuBackendReference (all TS), ms per call (median of 5
 *      after 2 warm-ups; each op's share is that call's op sums) — the ops above 1% of a column.
 * Each cell: 2 warm-up calls, then the median of repetitions filling ~0.3 s of wall time (at least
 * 3), each timed in PROCESS CPU time (process.cpuUsage; the kernels are single-threaded), so time
 * that other processes hold the core is not counted — this bench is run on a shared machine. Table 3
 * uses CPU time too (bench/opTimes.ts), per op and for the whole step.
 * Printed tables, nothing asserted; single-threaded, like the CPU backend.
 *
 * Not here: whole-model numbers (`npm run bench`), correctness (tests/simd.test.ts).
 */
import { Rng } from '../src/core/rng';
import { attentionBackward, attentionForward } from '../src/backend/cpu/attention';
import { matmulBackward, matmulForward } from '../src/backend/cpu/matmul';
import { swigluBackward, swigluForward } from '../src/backend/cpu/mlp';
import { rmsnormBackward, rmsnormForward } from '../src/backend/cpu/rmsnorm';
import { ropeBackward, ropeForward, ropeTable } from '../src/backend/cpu/rope';
import {
  simdAttentionBackward,
  simdAttentionForward,
  simdAvailable,
  simdLogSoftmaxBackward,
  simdLogSoftmaxForward,
  simdMatmulBackward,
  simdMatmulForward,
  simdRmsnormBackward,
  simdRmsnormForward,
  simdRopeBackward,
  simdRopeForward,
  simdSwigluBackward,
  simdSwigluForward,
} from '../src/backend/cpu/simd';
import { logSoftmaxBackward, logSoftmaxForward } from '../src/backend/cpu/softmax';
import { cpuBackend, cpuBackendReference } from '../src/backend/cpu';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import { initWeights } from '../src/model/weights';
import { timeOps } from './opTimes';
import { BENCH_100K, BENCH_400K, MODEL_PRESETS, type ModelConfig } from '../src/model/config';

const N = 64 * 32;
const MODELS: readonly [string, ModelConfig][] = [
  ['S', MODEL_PRESETS.S],
  ['M', MODEL_PRESETS.M],
  ['BENCH_100K', BENCH_100K],
  ['BENCH_400K', BENCH_400K],
];

/** CPU ms of one call (process.cpuUsage, user + system: everything here is single-threaded). */
function cpuMs(f: () => void): number {
  const c0 = process.cpuUsage();
  f();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

function msPerCall(f: () => void): number {
  f();
  f();
  const times: number[] = [];
  const t0 = performance.now();
  while (times.length < 3 || performance.now() - t0 < 300) times.push(cpuMs(f));
  times.sort((a, b) => a - b);
  return times[times.length >> 1]!;
}

const rng = new Rng(11, [3]);
const rand = (n: number): Float32Array => Float32Array.from({ length: n }, () => rng.uniform() * 2 - 1);

console.log(`WebAssembly SIMD available: ${simdAvailable()}; N = ${N} rows`);
console.log('model       C → OC     | forward GFLOP/s  TS   SIMD  ×    | backward GFLOP/s TS   SIMD  ×');
const seen = new Set<string>();
for (const [name, cfg] of MODELS) {
  for (const [C, OC] of [
    [cfg.d, cfg.d],
    [cfg.d, cfg.hidden],
    [cfg.hidden, cfg.d],
    [cfg.d, cfg.vocab],
  ] as const) {
    const key = `${C}x${OC}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const inp = rand(N * C), w = rand(OC * C), dout = rand(N * OC);
    const out = new Float32Array(N * OC), dinp = new Float32Array(N * C), dw = new Float32Array(OC * C);
    const gf = (flops: number, ms: number): number => flops / ms / 1e6;
    const fTs = gf(2 * N * C * OC, msPerCall(() => matmulForward(out, inp, w, 1, N, C, OC)));
    const fSimd = gf(2 * N * C * OC, msPerCall(() => simdMatmulForward(out, inp, w, 1, N, C, OC)));
    const bTs = gf(4 * N * C * OC, msPerCall(() => matmulBackward(dinp, dw, dout, inp, w, 1, N, C, OC)));
    const bSimd = gf(4 * N * C * OC, msPerCall(() => simdMatmulBackward(dinp, dw, dout, inp, w, 1, N, C, OC)));
    const f = (x: number): string => x.toFixed(2).padStart(6);
    console.log(`${name.padEnd(11)} ${String(C).padStart(3)} → ${String(OC).padEnd(5)} |                ${f(fTs)} ${f(fSimd)} ${(fSimd / fTs).toFixed(1).padStart(4)} |                 ${f(bTs)} ${f(bSimd)} ${(bSimd / bTs).toFixed(1).padStart(4)}`);
  }
}

console.log('');
console.log('model       kernel (shape)                    | forward ms  TS      SIMD    ×    | backward ms TS      SIMD    ×');
const Bq = 64, Tq = 32;
const f = (x: number): string => x.toFixed(3).padStart(7);
const row = (name: string, what: string, fw: [() => void, () => void], bw: [() => void, () => void]): void => {
  const [ft, fs, bt, bs] = [fw[0], fw[1], bw[0], bw[1]].map(msPerCall) as [number, number, number, number];
  console.log(`${name.padEnd(11)} ${what.padEnd(33)} |             ${f(ft)} ${f(fs)} ${(ft / fs).toFixed(1).padStart(4)} |             ${f(bt)} ${f(bs)} ${(bt / bs).toFixed(1).padStart(4)}`);
};
for (const [name, cfg] of MODELS) {
  const NH = cfg.heads, HS = cfg.d / cfg.heads, C = cfg.d, H = cfg.hidden, V = cfg.vocab;
  const n = Bq * Tq * C, na = Bq * NH * Tq * Tq;
  const q = rand(n), k = rand(n), v = rand(n), dout = rand(n), out = new Float32Array(n), att = new Float32Array(na);
  const dq = new Float32Array(n), dk = new Float32Array(n), dv = new Float32Array(n);
  attentionForward(out, att, q, k, v, Bq, Tq, NH, HS);
  row(name, `attention (B64 T32 NH${NH} HS${HS})`, [() => attentionForward(out, att, q, k, v, Bq, Tq, NH, HS), () => simdAttentionForward(out, att, q, k, v, Bq, Tq, NH, HS)], [
    () => attentionBackward(dq, dk, dv, dout, q, k, v, att, Bq, Tq, NH, HS),
    () => simdAttentionBackward(dq, dk, dv, dout, q, k, v, att, Bq, Tq, NH, HS),
  ]);
  const w = rand(C), rstd = new Float32Array(N), dw = new Float32Array(C);
  row(name, `rmsnorm (${N} × ${C})`, [() => rmsnormForward(out, rstd, q, w, 1, N, C), () => simdRmsnormForward(out, rstd, q, w, 1, N, C)], [
    () => rmsnormBackward(dq, dw, dout, q, w, rstd, 1, N, C),
    () => simdRmsnormBackward(dq, dw, dout, q, w, rstd, 1, N, C),
  ]);
  const table = ropeTable(Tq, HS) as Float32Array;
  row(name, `rope (B64 T32 NH${NH} HS${HS})`, [() => ropeForward(out, q, table, Bq, Tq, NH, HS), () => simdRopeForward(out, q, table, Bq, Tq, NH, HS)], [
    () => ropeBackward(dq, dout, table, Bq, Tq, NH, HS),
    () => simdRopeBackward(dq, dout, table, Bq, Tq, NH, HS),
  ]);
  const a = rand(N * H), b = rand(N * H), g = rand(N * H), h = new Float32Array(N * H), da = new Float32Array(N * H), db = new Float32Array(N * H);
  row(name, `swiglu (${N} × ${H})`, [() => swigluForward(h, a, b, N * H), () => simdSwigluForward(h, a, b, N * H)], [
    () => swigluBackward(da, db, g, a, b, N * H),
    () => simdSwigluBackward(da, db, g, a, b, N * H),
  ]);
  const z = rand(N * V), lp = new Float32Array(N * V), dlp = rand(N * V), dz = new Float32Array(N * V);
  logSoftmaxForward(lp, z, N, V, 1);
  row(name, `log-softmax (${N} × ${V})`, [() => logSoftmaxForward(lp, z, N, V, 1), () => simdLogSoftmaxForward(lp, z, N, V, 1)], [
    () => logSoftmaxBackward(dz, dlp, lp, N, V, 1),
    () => simdLogSoftmaxBackward(dz, dlp, lp, N, V, 1),
  ]);
}

/** ms per op of the median (by total) of 5 calls of `step` after 2 warm-ups, on a timed backend. */
async function opsOf(step: (m: Model) => unknown, be: typeof cpuBackend, cfg: ModelConfig): Promise<{ total: number; ops: Map<string, number> }> {
  const t = timeOps(be);
  const model = new Model(t.backend, cfg, initWeights(cfg, new Rng(5, [1])), { trainable: 'full' });
  const runs: { total: number; ops: Map<string, number> }[] = [];
  for (let i = 0; i < 7; i++) {
    t.reset();
    const c0 = process.cpuUsage();
    await step(model);
    const c = process.cpuUsage(c0);
    const total = (c.user + c.system) / 1000;
    if (i >= 2) runs.push({ total, ops: new Map([...t.totals].map(([k, v]) => [k, v.ms])) });
  }
  runs.sort((a, b) => a.total - b.total);
  return runs[runs.length >> 1]!;
}

for (const [name, cfg] of MODELS.filter(([n]) => n.startsWith('BENCH'))) {
  const tokens = Int32Array.from({ length: Bq * Tq }, () => Math.floor(rng.uniform() * cfg.vocab));
  for (const [phase, step] of [
    ['forward', (m: Model) => m.forward(tokens, Bq, Tq)],
    ['train step', (m: Model) => trainOnSequences(m, tokens, Bq, Tq, { lr: 1e-3 })],
  ] as const) {
    const fast = await opsOf(step, cpuBackend, cfg);
    const ref = await opsOf(step, cpuBackendReference, cfg);
    console.log('');
    console.log(`${name} ${phase} (B ${Bq} × T ${Tq}), CPU ms per call: cpuBackend ${fast.total.toFixed(1)}, cpuBackendReference ${ref.total.toFixed(1)} (ratio ${(ref.total / fast.total).toFixed(2)})`);
    console.log('  op                       cpuBackend   share | reference   share');
    const names = [...new Set([...fast.ops.keys(), ...ref.ops.keys()])].sort((a, b) => (fast.ops.get(b) ?? 0) - (fast.ops.get(a) ?? 0));
    let restF = 0, restR = 0;
    for (const op of names) {
      const a = fast.ops.get(op) ?? 0, b = ref.ops.get(op) ?? 0;
      if (a < 0.01 * fast.total && b < 0.01 * ref.total) {
        restF += a;
        restR += b;
        continue;
      }
      console.log(`  ${op.padEnd(24)} ${a.toFixed(2).padStart(9)} ${((100 * a) / fast.total).toFixed(0).padStart(6)}% | ${b.toFixed(2).padStart(9)} ${((100 * b) / ref.total).toFixed(0).padStart(6)}%`);
    }
    const opsF = [...fast.ops.values()].reduce((x, y) => x + y, 0), opsR = [...ref.ops.values()].reduce((x, y) => x + y, 0);
    console.log(`  ${'other ops (< 1% each)'.padEnd(24)} ${restF.toFixed(2).padStart(9)} ${((100 * restF) / fast.total).toFixed(0).padStart(6)}% | ${restR.toFixed(2).padStart(9)} ${((100 * restR) / ref.total).toFixed(0).padStart(6)}%`);
    console.log(`  ${'outside the ops'.padEnd(24)} ${(fast.total - opsF).toFixed(2).padStart(9)} ${((100 * (fast.total - opsF)) / fast.total).toFixed(0).padStart(6)}% | ${(ref.total - opsR).toFixed(2).padStart(9)} ${((100 * (ref.total - opsR)) / ref.total).toFixed(0).padStart(6)}%`);
  }
}
