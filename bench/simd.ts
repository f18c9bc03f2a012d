/**
 * `npm run bench:simd`: GFLOP/s of the f32 matmul family, TypeScript kernels (src/backend/cpu/matmul.ts,
 * f64 accumulators) vs the WebAssembly SIMD kernels (src/backend/cpu/simd.ts, copies in and out
 * included), at the bench's shapes: N = 64·32 = 2048 rows, and every (C → OC) a model of
 * bench/cpu.ts multiplies by — d→d (attention projections), d→hidden (w1, w3), hidden→d (w2),
 * d→vocab (the tied head). Forward counts 2·N·C·OC flops, backward (dinp and dW) 4·N·C·OC.
 * Each cell: 2 warm-up calls, then the median of repetitions filling ~0.3 s (at least 3).
 * A printed table, nothing asserted; single-threaded, like the CPU backend.
 *
 * Not here: whole-model numbers (`npm run bench`), correctness (tests/simd.test.ts).
 */
import { Rng } from '../src/core/rng';
import { matmulBackward, matmulForward } from '../src/backend/cpu/matmul';
import { simdAvailable, simdMatmulBackward, simdMatmulForward } from '../src/backend/cpu/simd';
import { BENCH_100K, BENCH_400K, MODEL_PRESETS, type ModelConfig } from '../src/model/config';

const N = 64 * 32;
const MODELS: readonly [string, ModelConfig][] = [
  ['S', MODEL_PRESETS.S],
  ['M', MODEL_PRESETS.M],
  ['BENCH_100K', BENCH_100K],
  ['BENCH_400K', BENCH_400K],
];

function msPerCall(f: () => void): number {
  f();
  f();
  const times: number[] = [];
  const t0 = performance.now();
  while (times.length < 3 || performance.now() - t0 < 300) {
    const t = performance.now();
    f();
    times.push(performance.now() - t);
  }
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
