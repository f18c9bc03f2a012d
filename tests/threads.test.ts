/**
 * Tests for the CPU backend's threads (src/backend/cpu/threads.ts, used by simd.ts's matmuls):
 * threaded results equal the single-thread SIMD results BIT FOR BIT, on FRESH random inputs each
 * run (the seed is printed; THREADS_SEED=<n> replays a run):
 *   matmul forward, backward (both gradients, accumulating, and each alone), and the Q8 / Q4
 *   forward and input gradient, and causal attention forward / backward / cached forward (split over
 *   the batch), at shapes with odd sizes, R below the thread count, R not a multiple
 *   of 4 or of the share size, a weight gradient over several K-blocks, bench-sized rows — with the
 *   work threshold at 0 (every call with R ≥ 8 split) and at its default;
 *   a model training step (preset S, full fine-tuning: forward, loss, backward, AdamW) with 4
 *   threads equals one with 1, bit for bit (parameters and loss);
 *   the pool really split jobs over more than one thread (its counters), and none inside onOneThread;
 *   one thread configured (SharedArrayBuffer there): a fresh simd.ts runs the shared build without
 *   helpers, its tensors resident, the same bits, and a later setCpuThreads(2) starts helpers on it;
 *   without SharedArrayBuffer (a page that is not cross-origin isolated), a fresh simd.ts runs on
 *   one thread, says why once (console.info), and gives the same bits.
 * Four threads are asked for whatever the machine's cores (on 2 cores they share them: slower, same bits).
 *
 * Not here: the kernels' accuracy against the TypeScript twins (tests/simd.test.ts), the page's
 * threads (tests/e2e/threads.test.ts).
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import * as simd from '../src/backend/cpu/simd';
import { MIN_WORK, cpuThreads, cpuThreadsReady, onOneThread, setCpuThreads } from '../src/backend/cpu/threads';
import { cpuBackend } from '../src/backend/cpu';
import { Rng } from '../src/core/rng';
import { MODEL_PRESETS } from '../src/model/config';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import { initWeights } from '../src/model/weights';
import { quantizeQ4, quantizeQ8 } from '../src/model/quant';
import { freshSeed, randF32 } from './helpers/freshSeed';

const SEED = freshSeed('tests/threads.test.ts', 'THREADS_SEED');
let path = 0;
const rng = (): Rng => new Rng(SEED, [path++]);
const rand = randF32;
const bits = (a: Float32Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length);

/** Runs fn with 1 thread and with `n`, returning both results (fn must return fresh arrays). */
function both<T>(fn: () => T, n = 4, minWork = 0): [T, T] {
  setCpuThreads(1);
  const one = fn();
  setCpuThreads(n, minWork);
  const many = fn();
  setCpuThreads(n);
  return [one, many];
}

const expectSameBits = (got: Float32Array[], want: Float32Array[], what: string): void => {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < got.length; i++) expect(bits(got[i]!), `${what} [${i}]`).toEqual(bits(want[i]!));
};

beforeAll(async () => {
  setCpuThreads(4); // before the kernels load: the shared-memory build, whatever the cores
  expect(simd.simdAvailable()).toBe(true);
  expect(await cpuThreadsReady(4, 30_000), 'helpers ready').toBe(4);
});

// [N, C, OC]: odd sizes, R (N, or OC for dW) below the thread count, R = 8 (two shares of 4), not
// a multiple of 4, K-blocked dW (N > 128, not a multiple of 128), bench-sized.
const SHAPES: [number, number, number][] = [
  [1, 5, 3],
  [3, 7, 2],
  [8, 16, 8],
  [9, 33, 11],
  [13, 17, 50],
  [4, 36, 203],
  [37, 64, 96],
  [130, 31, 9],
  [301, 48, 72],
  [2048, 64, 172],
];

describe('threaded matmuls equal single-thread ones bit for bit', () => {
  for (const minWork of [0, MIN_WORK]) {
    it(`f32 forward and backward (both gradients, accumulating; each alone), work threshold ${minWork}`, () => {
      const r = rng();
      for (const [N, C, OC] of SHAPES) {
        const inp = rand(N * C, r), w = rand(OC * C, r), dout = rand(N * OC, r), gi0 = rand(N * C, r), gw0 = rand(OC * C, r);
        const run = (): Float32Array[] => {
          const out = new Float32Array(N * OC);
          simd.simdMatmulForward(out, inp, w, 1, N, C, OC);
          const gi = gi0.slice(), gw = gw0.slice(), gi1 = gi0.slice(), gw1 = gw0.slice();
          simd.simdMatmulBackward(gi, gw, dout, inp, w, 1, N, C, OC);
          simd.simdMatmulBackward(gi1, null, dout, inp, w, 1, N, C, OC);
          simd.simdMatmulBackward(null, gw1, dout, inp, w, 1, N, C, OC);
          return [out, gi, gw, gi1, gw1];
        };
        const [one, many] = both(run, 4, minWork);
        expectSameBits(many, one, `N ${N} C ${C} OC ${OC}`);
      }
    });
  }

  it('Q8 and Q4 forward (exact and int8 activations) and input gradient', () => {
    const r = rng();
    for (const [N, C, OC] of [
      [1, 32, 3],
      [9, 64, 11],
      [2, 96, 203],
      [16, 64, 64],
      [37, 32, 96],
      [300, 96, 40],
    ] as const) {
      const inp = rand(N * C, r), w = rand(OC * C, r), dout = rand(N * OC, r), gi0 = rand(N * C, r);
      const q8 = quantizeQ8(w, OC, C), q4 = quantizeQ4(w, OC, C);
      const run = (): Float32Array[] => {
        const o8 = new Float32Array(N * OC), o4 = new Float32Array(N * OC), g8 = gi0.slice(), g4 = gi0.slice();
        simd.simdMatmulForwardQ8(o8, inp, q8.q, q8.scales, 1, N, C, OC);
        simd.simdMatmulForwardQ4(o4, inp, q4.q, q4.scales, 1, N, C, OC);
        simd.simdMatmulBackwardInputQ8(g8, dout, q8.q, q8.scales, 1, N, C, OC);
        simd.simdMatmulBackwardInputQ4(g4, dout, q4.q, q4.scales, 1, N, C, OC);
        const a8 = new Float32Array(N * OC), a4 = new Float32Array(N * OC);
        simd.simdMatmulForwardQ8Act(a8, inp, q8.q, q8.scales, 1, N, C, OC);
        simd.simdMatmulForwardQ4Act(a4, inp, q4.q, q4.scales, 1, N, C, OC);
        return [o8, o4, g8, g4, a8, a4];
      };
      const [one, many] = both(run, 4, 0);
      expectSameBits(many, one, `N ${N} C ${C} OC ${OC}`);
    }
  });

  it('several products of one input (matmulForwardMany) equal one product per weight, on 1 and 4 threads', () => {
    const r = rng();
    // [N, C, OCs]: one row and a few (the linear kernels), many (the panels); OCs not multiples of 8.
    for (const [N, C, OCs] of [
      [1, 64, [64, 21, 64]],
      [3, 96, [40, 8]],
      [2, 32, [203, 5, 17]],
      [9, 64, [64, 64, 64]],
      [37, 32, [11, 96]],
      [1, 128, [256]],
    ] as const) {
      const inp = rand(N * C, r);
      const ws = OCs.map((OC) => rand(OC * C, r));
      const q8 = ws.map((w, i) => quantizeQ8(w, OCs[i]!, C)), q4 = ws.map((w, i) => quantizeQ4(w, OCs[i]!, C));
      const kinds = [
        ['f32', ws.map((w) => ({ kind: 'f32' as const, w }))],
        ['q8', q8.map((q) => ({ kind: 'q8' as const, ...q }))],
        ['q4', q4.map((q) => ({ kind: 'q4' as const, ...q }))],
      ] as const;
      for (const [name, weights] of kinds) {
        for (const activations of name === 'f32' ? (['exact'] as const) : (['exact', 'int8'] as const)) {
          const single = (): Float32Array[] => weights.map((w, i) => {
            const out = new Float32Array(N * OCs[i]!);
            if (w.kind === 'f32') simd.simdMatmulForward(out, inp, w.w, 1, N, C, OCs[i]!);
            else if (w.kind === 'q8') (activations === 'int8' ? simd.simdMatmulForwardQ8Act : simd.simdMatmulForwardQ8)(out, inp, w.q, w.scales, 1, N, C, OCs[i]!);
            else (activations === 'int8' ? simd.simdMatmulForwardQ4Act : simd.simdMatmulForwardQ4)(out, inp, w.q, w.scales, 1, N, C, OCs[i]!);
            return out;
          });
          // Outputs as the model lays them: views of one resident tensor (q and k), and plain arrays.
          const many = (): Float32Array[] => {
            const pair = cpuBackend.zeros('f32', 2 * 64 * Math.ceil((N * Math.max(...OCs)) / 64));
            const outs = OCs.map((OC, i) => (i < 2 ? cpuBackend.view(pair, i * 64 * Math.ceil((N * Math.max(...OCs)) / 64), N * OC) : new Float32Array(N * OC)));
            simd.simdMatmulForwardMany(outs, inp, weights, 1, N, C, OCs, activations);
            return outs.map((o) => o.slice());
          };
          const want = single();
          const [one, four] = both(many, 4, 0);
          expectSameBits(one, want, `${name} ${activations} N ${N} C ${C} OCs ${OCs.join(',')}, 1 thread`);
          expectSameBits(four, want, `${name} ${activations} N ${N} C ${C} OCs ${OCs.join(',')}, 4 threads`);
        }
      }
    }
    // Its checks: one kind, int8 only on quantized weights, matching lists.
    const w = { kind: 'f32' as const, w: rand(64, r) };
    const q = { kind: 'q8' as const, ...quantizeQ8(rand(64, r), 2, 32) };
    const out = new Float32Array(2);
    expect(() => simd.simdMatmulForwardMany([out, out], rand(32, r), [w, q], 1, 1, 32, [2, 2], 'exact')).toThrow(/of one kind, got f32, q8/);
    expect(() => simd.simdMatmulForwardMany([out], rand(32, r), [w], 1, 1, 32, [2], 'int8')).toThrow(/int8 activations need quantized weights/);
    expect(() => simd.simdMatmulForwardMany([out], rand(32, r), [w, w], 1, 1, 32, [2], 'exact')).toThrow(/1 outputs, 2 weights and 1 sizes/);
  });

  it('attention forward, backward and cached forward (split over the batch)', () => {
    const r = rng();
    for (const [B, T, NH, HS] of [
      [1, 5, 2, 4],
      [3, 7, 3, 5],
      [5, 17, 2, 8],
      [64, 32, 4, 16],
    ] as const) {
      const C = NH * HS, n = B * T * C;
      const q = rand(n, r), k = rand(n, r), v = rand(n, r), dout = rand(n, r), g0 = rand(n, r);
      const pos0 = 3, Tmax = pos0 + T + 2;
      const kc = rand(B * Tmax * C, r), vc = rand(B * Tmax * C, r);
      const run = (): Float32Array[] => {
        const out = new Float32Array(n), att = new Float32Array(B * NH * T * T);
        simd.simdAttentionForward(out, att, q, k, v, B, T, NH, HS);
        const dq = g0.slice(), dk = g0.slice(), dv = g0.slice();
        simd.simdAttentionBackward(dq, dk, dv, dout, q, k, v, att, B, T, NH, HS);
        const cached = new Float32Array(n);
        simd.simdAttentionCachedForward(cached, q, kc, vc, B, T, NH, HS, pos0, Tmax);
        return [out, att, dq, dk, dv, cached];
      };
      const [one, many] = both(run, 4, 0);
      expectSameBits(many, one, `B ${B} T ${T} NH ${NH} HS ${HS}`);
    }
  });

  it('SwiGLU forward and backward (split over elements) and the RMSNorm forward (over rows)', () => {
    const r = rng();
    // Element counts around multiples of 4 (the shares' unit) and below the thread count; bench-sized.
    for (const [N, C] of [
      [1, 3],
      [3, 5],
      [7, 9],
      [13, 32],
      [64, 33],
      [2048, 172],
    ] as const) {
      const n = N * C;
      const a = rand(n, r), b = rand(n, r), dout = rand(n, r), da0 = rand(n, r), db0 = rand(n, r), w = rand(C, r);
      const run = (): Float32Array[] => {
        const out = new Float32Array(n);
        simd.simdSwigluForward(out, a, b, n);
        const da = da0.slice(), db = db0.slice();
        simd.simdSwigluBackward(da, db, dout, a, b, n);
        const norm = new Float32Array(n), rstd = new Float32Array(N);
        simd.simdRmsnormForward(norm, rstd, a, w, 1, N, C);
        return [out, da, db, norm, rstd];
      };
      const [one, many] = both(run, 4, 0);
      expectSameBits(many, one, `N ${N} C ${C}`);
    }
  });

  it('the pool split jobs over more than one thread', () => {
    const before = cpuThreads();
    const r = rng();
    const [N, C, OC] = [512, 64, 128];
    const out = new Float32Array(N * OC);
    simd.simdMatmulForward(out, rand(N * C, r), rand(OC * C, r), 1, N, C, OC);
    const after = cpuThreads();
    console.log(`threads: ${JSON.stringify(after)}`);
    expect(after.threads).toBe(4);
    expect(after.jobs).toBe(before.jobs + 1);
    expect(after.shares - before.shares, 'chunks of that job').toBeGreaterThan(1);
    expect(after.helped, 'chunks the helpers ran, over all jobs').toBeGreaterThan(0);
    expect(after.helped).toBeLessThanOrEqual(after.shares);
  });

  it('onOneThread runs its calls unsplit, with the same bits, and splits again after', async () => {
    const r = rng();
    const [N, C, OC] = [512, 64, 128];
    const a = rand(N * C, r);
    const w = rand(OC * C, r);
    const split = new Float32Array(N * OC);
    simd.simdMatmulForward(split, a, w, 1, N, C, OC);
    const before = cpuThreads();
    const alone = new Float32Array(N * OC);
    const seen = await onOneThread(async () => {
      simd.simdMatmulForward(alone, a, w, 1, N, C, OC);
      return cpuThreads();
    });
    expect(seen.threads).toBe(1);
    expect(seen.jobs, 'no job split inside').toBe(before.jobs);
    expectSameBits([alone], [split], 'one thread against four');
    simd.simdMatmulForward(alone, a, w, 1, N, C, OC);
    expect(cpuThreads().threads).toBe(4);
    expect(cpuThreads().jobs, 'split again after').toBe(before.jobs + 1);
  });
});

describe('a training step', () => {
  it('with 4 threads equals one with 1 thread, bit for bit (preset S, full fine-tuning)', async () => {
    const cfg = MODEL_PRESETS.S;
    const r = rng();
    const weights = initWeights(cfg, r.fork(0));
    const [B, T] = [16, 32];
    const tokens = Int32Array.from({ length: B * T }, () => r.int(cfg.vocab));
    const step = async (threads: number): Promise<{ loss: number; params: Float32Array[] }> => {
      setCpuThreads(threads);
      const model = new Model(cpuBackend, cfg, weights, { trainable: 'full' });
      const jobs = cpuThreads().jobs;
      let loss = 0;
      for (let i = 0; i < 2; i++) loss = await trainOnSequences(model, tokens, B, T, { lr: 1e-3 });
      if (threads > 1) expect(cpuThreads().jobs, 'the step split matmuls').toBeGreaterThan(jobs);
      const w = await model.exportWeights();
      const params = [...w.values()].map((t) => (t.dtype === 'f32' ? t.data : new Float32Array(0)));
      return { loss, params };
    };
    const one = await step(1);
    const many = await step(4);
    expect(many.loss).toBe(one.loss);
    expect(one.params.length).toBeGreaterThan(0);
    expectSameBits(many.params, one.params, 'parameters');
  });
});

/**
 * One matmul case on fresh random inputs, for the tests that load a fresh simd.ts: run(m) gives the
 * forward and both gradients (N 301, C 48, OC 72) on module m, and two products of one row in one
 * matmulForwardMany (Q8 with int8 activations, and f32).
 */
function freshMatmul(): (m: typeof import('../src/backend/cpu/simd')) => Float32Array[] {
  const r = rng();
  const [N, C, OC] = [301, 48, 72];
  const inp = rand(N * C, r), w = rand(OC * C, r), dout = rand(N * OC, r);
  const x = rand(64, r), wa = rand(64 * 40, r), wb = rand(64 * 24, r);
  const qa = { kind: 'q8' as const, ...quantizeQ8(wa, 40, 64) }, qb = { kind: 'q8' as const, ...quantizeQ8(wb, 24, 64) };
  return (m) => {
    const out = new Float32Array(N * OC), gi = new Float32Array(N * C), gw = new Float32Array(OC * C);
    m.simdMatmulForward(out, inp, w, 1, N, C, OC);
    m.simdMatmulBackward(gi, gw, dout, inp, w, 1, N, C, OC);
    const many = [new Float32Array(40), new Float32Array(24), new Float32Array(40), new Float32Array(24)];
    m.simdMatmulForwardMany(many.slice(0, 2), x, [qa, qb], 1, 1, 64, [40, 24], 'int8');
    m.simdMatmulForwardMany(many.slice(2), x, [{ kind: 'f32', w: wa }, { kind: 'f32', w: wb }], 1, 1, 64, [40, 24], 'exact');
    return [out, gi, gw, ...many];
  };
}

describe('one thread configured, SharedArrayBuffer there', () => {
  it('a fresh simd.ts runs the shared build without helpers (tensors resident), gives the same bits, and setCpuThreads(2) starts helpers on it later', async () => {
    const run = freshMatmul();
    setCpuThreads(4, 0);
    const threaded = run(await import('../src/backend/cpu/simd'));
    setCpuThreads(4);
    vi.resetModules();
    try {
      const freshThreads = await import('../src/backend/cpu/threads');
      freshThreads.setCpuThreads(1, 0);
      const fresh = await import('../src/backend/cpu/simd');
      expectSameBits(run(fresh), threaded, 'one thread (shared build) vs threaded');
      expect(freshThreads.cpuThreads()).toMatchObject({ threads: 1, ready: 1, jobs: 0 });
      expect(fresh.simdResidentStats(), 'the shared build, so an arena').not.toBeNull();
      freshThreads.setCpuThreads(2, 0);
      expect(await freshThreads.cpuThreadsReady(2, 30_000), 'a pool started on the loaded kernels').toBe(2);
      expectSameBits(run(fresh), threaded, 'after the late start');
      expect(freshThreads.cpuThreads().jobs, 'the late pool split jobs').toBeGreaterThan(0);
    } finally {
      vi.resetModules();
    }
  });
});

describe('without SharedArrayBuffer', () => {
  it('a fresh simd.ts runs on one thread, says why once, and gives the same bits', async () => {
    const run = freshMatmul();
    setCpuThreads(4, 0);
    const threaded = run(await import('../src/backend/cpu/simd'));
    setCpuThreads(4);
    vi.resetModules();
    vi.stubGlobal('SharedArrayBuffer', undefined);
    const info = vi.spyOn(console, 'info').mockImplementation(() => undefined);
    try {
      const fresh = await import('../src/backend/cpu/simd');
      const freshThreads = await import('../src/backend/cpu/threads');
      const single = run(fresh);
      expect(fresh.simdAvailable()).toBe(true);
      const st = freshThreads.cpuThreads();
      expect(st.threads).toBe(1);
      expect(st.ready).toBe(1);
      expect(st.jobs).toBe(0);
      expect(st.why).toMatch(/SharedArrayBuffer/);
      expect(info).toHaveBeenCalledTimes(1);
      expect(String(info.mock.calls[0]![0])).toMatch(/one thread: no SharedArrayBuffer/);
      expectSameBits(single, threaded, 'unshared vs threaded');
    } finally {
      info.mockRestore();
      vi.unstubAllGlobals();
      vi.resetModules();
    }
  });
});
