/**
 * The int8-activation products of whichever kernel build loads here against the TypeScript twin:
 * quantActs + linQ8a / linQ4a, alone and as matmulForwardMany, on fresh random inputs of `seed`, at
 * every tile remainder, N 1–17, special activations (a zero block, ties, a huge value, subnormals)
 * and special f16 scales, on one thread and split over two, every output compared with
 * matmulForwardQAct bit for bit. Run in a browser's worker by tests/e2e/relaxed.test.ts (through
 * relaxedWorker.ts), where the relaxed-SIMD build loads; Node 20 runs the shared build only.
 * Returns the build that ran, the outputs compared and the mismatches (the first few named).
 */
import { cpuThreads, cpuThreadsReady, setCpuThreads } from '../../src/backend/cpu/threads';
import * as simd from '../../src/backend/cpu/simd';
import { matmulForwardQAct } from '../../src/backend/cpu/quant';
import { Rng } from '../../src/core/rng';
import { quantizeQ4, quantizeQ8 } from '../../src/model/quant';
import { randF32 } from './freshSeed';

export interface RelaxedCheck {
  readonly build: string;
  /** Threads ready (the caller included) and jobs split over them. */
  readonly ready: number;
  readonly jobs: number;
  readonly compared: number;
  readonly mismatchCount: number;
  readonly mismatches: string[];
}

type ActProduct = (o: Float32Array, x: Float32Array, q: Int8Array | Uint8Array, s: Uint16Array, B: number, T: number, C: number, OC: number) => void;

const bits = (a: Float32Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length);
const SPECIAL_SCALES = [0x0001, 0x03ff, 0x8000, 0x7bff, 0xfbff, 0x3c00, 0x8400];

/** Activations with blocks of different scales; with `special`, the twin test's special blocks too. */
function activations(r: Rng, N: number, C: number, special: boolean): Float32Array {
  const x = randF32(N * C, r);
  for (let i = 0; i < N * C; i++) x[i] = x[i]! * 2 ** ((i % 7) - 3);
  if (special && N >= 2 && C >= 64) {
    x.fill(0, 0, 32); // a zero block (d = 0)
    x[32] = 127;
    [0.5, -0.5, 1.5, -2.5, 2.5, -3.5, 126.5, -126.5].forEach((v, i) => (x[33 + i] = v)); // ties at d = 1
    x[C + 5] = 3e38; // one huge value
    for (let i = 0; i < 32; i++) x[C + 32 + i] = (i - 16) * 1e-41; // subnormals
  }
  return x;
}

export async function relaxedCheck(seed: number): Promise<RelaxedCheck> {
  setCpuThreads(2);
  const r = new Rng(seed, [0x7e1]);
  let compared = 0;
  let mismatchCount = 0;
  const mismatches: string[] = [];
  const check = (what: string, got: Float32Array, want: Float32Array): void => {
    compared += got.length;
    const g = bits(got), w = bits(want);
    const i = g.findIndex((v, k) => v !== w[k]);
    if (i >= 0 && mismatchCount++ < 5) mismatches.push(`${what} [${i}]: ${got[i]} vs ${want[i]}`);
  };
  simd.simdAvailable(); // load the kernels (and start the helpers) before waiting for them
  const ready = await cpuThreadsReady(2, 10_000);
  for (const minWork of [Number.MAX_SAFE_INTEGER, 0]) {
    setCpuThreads(2, minWork);
    for (const [C, OC] of [[32, 1], [32, 7], [64, 12], [96, 203], [160, 40], [576, 9], [576, 67]] as const) {
      const q8 = quantizeQ8(randF32(OC * C, r), OC, C), q4 = quantizeQ4(randF32(OC * C, r), OC, C);
      if (OC === 40) for (const sc of [q8.scales, q4.scales]) for (let i = 0; i < sc.length; i += 3) sc[i] = SPECIAL_SCALES[i % SPECIAL_SCALES.length]!;
      for (const N of [1, 2, 3, 5, 17]) {
        const x = activations(r, N, C, N === 3);
        for (const [name, q, sc, fn] of [['Q8', q8.q, q8.scales, simd.simdMatmulForwardQ8Act], ['Q4', q4.q, q4.scales, simd.simdMatmulForwardQ4Act]] as const) {
          const got = new Float32Array(N * OC).fill(NaN), want = new Float32Array(N * OC).fill(NaN);
          (fn as ActProduct)(got, x, q, sc, 1, N, C, OC);
          matmulForwardQAct('t', want, x, q, sc, 1, N, C, OC);
          check(`${name} N ${N} C ${C} OC ${OC}, work threshold ${minWork}`, got, want);
        }
        // A Q8 and a Q4 product of one input in one job (the model's q, k, v and gate, up are of one kind; these are two jobs' worth).
        for (const [name, w] of [['Q8', { kind: 'q8' as const, ...q8 }], ['Q4', { kind: 'q4' as const, ...q4 }]] as const) {
          const outs = [new Float32Array(N * OC), new Float32Array(N * OC)];
          simd.simdMatmulForwardMany(outs, x, [w, w], 1, N, C, [OC, OC], 'int8');
          const want = new Float32Array(N * OC);
          matmulForwardQAct('t', want, x, w.q, w.scales, 1, N, C, OC);
          outs.forEach((o, i) => check(`many ${name} [${i}] N ${N} C ${C} OC ${OC}`, o, want));
        }
      }
    }
  }
  return { build: simd.simdBuild(), ready, jobs: cpuThreads().jobs, compared, mismatchCount, mismatches };
}
