/**
 * Tests for the CPU reference kernels (src/backend/cpu/) — the twins every WebGPU kernel must
 * match: a plain CPU twin for every kernel, each compared with the GPU on fresh random inputs, and
 * every backward checked against finite differences.
 *
 * Every differentiable op runs through one harness on random inputs (never zeros, f32-exact
 * values, small odd sizes), with the loss L = Σ_j ⟨out_j, R_j⟩ for random R_j:
 *   1. f64 run: each backward is compared with central finite differences of the f64 forward
 *      (step 1e-5) at every input coordinate; tolerance 1e-6;
 *   2. f32 run on the same inputs: outputs and gradients agree with the f64 run; tolerance 1e-5;
 *   3. gradient buffers start at a non-zero value, so the "backward accumulates (+=)" contract is
 *      checked for every op; forward outputs start as NaN ("poisoned"), so every output element
 *      must be written.
 * Error metric, everywhere: max_i |a_i − b_i| / max(|a_i|, |b_i|, 1e-3·max_j |b_j|) — relative,
 * with a floor at a thousandth of the array's scale so entries that are ~0 do not dominate. The
 * errors measured are printed in a table at the end.
 *
 * Also: hand-computed cases (RMSNorm, attention, RoPE, AdamW, Q4 nibble order); KV-cache
 * attention equal to full attention bit for bit, row by row and in chunks; quantized matmuls
 * equal to the dense matmul on dequantized weights bit for bit; the matmul equal to a naive
 * triple loop bit for bit; the clipped-loss gradient against an independent f64 statement of the
 * formula (tests/helpers/objectiveRef.ts); the sampler (greedy limits, top-k, chi-square
 * frequencies, determinism, the Philox counter layout); one whole tiny Llama step assembled from
 * the ops, checked by finite differences; and the `cpuBackend` adapter.
 *
 * Seeds are fixed (Rng(7, [...]) with a distinct path per test), so everything is deterministic.
 */

import { afterAll, describe, expect, it } from 'vitest';
import { f32ToF16 } from '../src/core/f16';
import { Rng, philox4x32, u32ToUniform } from '../src/core/rng';
import {
  adamwStep,
  attentionBackward,
  attentionCachedForward,
  attentionForward,
  clippedLossBackward,
  cpuBackendReference,
  dequantizeQ4,
  dequantizeQ8,
  embeddingBackward,
  embeddingForward,
  gatherBackward,
  gatherForward,
  klBackward,
  klForward,
  kvCacheWrite,
  logSoftmaxBackward,
  logSoftmaxForward,
  matmulBackward,
  matmulBackwardInputQ4,
  matmulBackwardInputQ8,
  matmulForward,
  matmulForwardQ4,
  matmulForwardQ8,
  mlpBackward,
  mlpForward,
  residualBackward,
  residualForward,
  rmsnormBackward,
  rmsnormForward,
  ropeBackward,
  ropeForward,
  ropeTable,
  sampleForward,
  samplerUniform,
  swigluBackward,
  swigluForward,
} from '../src/backend/cpu';
import type { ClippedLossSpec, FloatArray } from '../src/backend/types';
import { gradRef, logSoftmaxRows, objectiveRefParts } from './helpers/objectiveRef';

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

type Ctor = Float32ArrayConstructor | Float64ArrayConstructor;
type Arrays = Record<string, FloatArray>;

const FD_STEP = 1e-5;
const FD_TOL = 1e-6;
const F32_TOL = 1e-5;
const G0 = 0.25; // initial value of every gradient buffer (tests accumulation)

const report: { op: string; fd: number; f32: number }[] = [];

/** max_i |a_i − b_i| / max(|a_i|, |b_i|, 1e-3·‖b‖∞) — see the header. */
function maxRelErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let scale = 0;
  for (let i = 0; i < b.length; i++) scale = Math.max(scale, Math.abs(b[i]!));
  const floor = Math.max(1e-3 * scale, 1e-30);
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!) / Math.max(Math.abs(a[i]!), Math.abs(b[i]!), floor);
    if (!(d <= worst)) worst = d; // NaN propagates as a failure
  }
  return worst;
}

/** Random f32-exact values in ±[0.1, 1)·scale (never zero). */
function randArr(rng: Rng, n: number, scale = 1): Float64Array {
  const a = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const m = 0.1 + 0.9 * rng.uniform();
    a[i] = Math.fround((rng.uniform() < 0.5 ? -m : m) * scale);
  }
  return a;
}

function randInts(rng: Rng, n: number, hi: number): Int32Array {
  const a = new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = rng.int(hi);
  return a;
}

const poison = <A extends FloatArray>(a: A): A => {
  a.fill(NaN);
  return a;
};
const convert = (ctor: Ctor, a: ArrayLike<number>): FloatArray => ctor.from(a);

/**
 * A differentiable op for the harness: `forward` allocates (poisoned) outputs and returns the
 * ones entering L plus anything saved; `backward` accumulates into `grads` (pre-filled with G0).
 */
interface OpCase {
  name: string;
  inputs: Record<string, Float64Array>;
  wrt: readonly string[];
  forward(ctor: Ctor, x: Arrays): { outs: FloatArray[]; saved: Arrays };
  backward(ctor: Ctor, x: Arrays, saved: Arrays, douts: FloatArray[], grads: Arrays): void;
}

function runCase(c: OpCase, rng: Rng): { fd: number; f32: number } {
  const x64: Arrays = {};
  for (const [k, v] of Object.entries(c.inputs)) x64[k] = Float64Array.from(v);
  const loss = (): { L: number; outs: FloatArray[]; saved: Arrays } => {
    const { outs, saved } = c.forward(Float64Array, x64);
    let L = 0;
    outs.forEach((o, j) => {
      for (let i = 0; i < o.length; i++) L += o[i]! * R[j]![i]!;
    });
    return { L, outs, saved };
  };
  // Random cotangents, one per output (sizes from a first forward pass).
  const first = c.forward(Float64Array, x64);
  for (const o of first.outs) for (let i = 0; i < o.length; i++) expect(Number.isNaN(o[i]!)).toBe(false);
  const R = first.outs.map((o) => randArr(rng, o.length));

  // Analytic gradients in f64.
  const grads64: Arrays = {};
  for (const k of c.wrt) grads64[k] = new Float64Array(x64[k]!.length).fill(G0);
  c.backward(Float64Array, x64, first.saved, R, grads64);
  for (const k of c.wrt) for (let i = 0; i < grads64[k]!.length; i++) grads64[k]![i]! -= G0;

  // Central finite differences of the f64 forward.
  let fd = 0;
  for (const k of c.wrt) {
    const x = x64[k]!;
    const num = new Float64Array(x.length);
    for (let i = 0; i < x.length; i++) {
      const x0 = x[i]!;
      x[i] = x0 + FD_STEP;
      const Lp = loss().L;
      x[i] = x0 - FD_STEP;
      const Lm = loss().L;
      x[i] = x0;
      num[i] = (Lp - Lm) / (2 * FD_STEP);
    }
    fd = Math.max(fd, maxRelErr(grads64[k]!, num));
  }

  // The same op in f32 on the same (f32-exact) inputs.
  const x32: Arrays = {};
  for (const [k, v] of Object.entries(c.inputs)) x32[k] = convert(Float32Array, v);
  const run32 = c.forward(Float32Array, x32);
  let f32 = 0;
  run32.outs.forEach((o, j) => (f32 = Math.max(f32, maxRelErr(o, first.outs[j]!))));
  // (f32 gradients start at 0: subtracting an f32 offset afterwards would cost more precision
  // than the kernel does; accumulation was checked by the f64 run.)
  const grads32: Arrays = {};
  for (const k of c.wrt) grads32[k] = new Float32Array(x32[k]!.length);
  c.backward(Float32Array, x32, run32.saved, R.map((r) => convert(Float32Array, r)), grads32);
  for (const k of c.wrt) f32 = Math.max(f32, maxRelErr(grads32[k]!, grads64[k]!));
  report.push({ op: c.name, fd, f32 });
  return { fd, f32 };
}

function expectCase(c: OpCase, rng: Rng): void {
  const { fd, f32 } = runCase(c, rng);
  expect(fd).toBeLessThan(FD_TOL);
  expect(f32).toBeLessThan(F32_TOL);
}

afterAll(() => {
  const rows = report.map((r) => `  ${r.op.padEnd(34)} FD ${r.fd.toExponential(2)}   f32 vs f64 ${Number.isNaN(r.f32) ? '—' : r.f32.toExponential(2)}`);
  console.log(`max relative error per op (FD tol ${FD_TOL}, f32 tol ${F32_TOL}):\n${rows.join('\n')}`);
});

// ---------------------------------------------------------------------------------------------
// Gradient checks, op by op
// ---------------------------------------------------------------------------------------------

describe('backward vs finite differences (f64) and f32 vs f64', () => {
  it('embedding', () => {
    const rng = new Rng(7, [1]);
    const [B, T, C, V] = [2, 3, 5, 7];
    const tokens = randInts(rng, B * T, V);
    expectCase(
      {
        name: 'embedding',
        inputs: { wte: randArr(rng, V * C) },
        wrt: ['wte'],
        forward: (ctor, x) => {
          const out = poison(new ctor(B * T * C));
          embeddingForward(out, tokens, x.wte!, B, T, C);
          return { outs: [out], saved: {} };
        },
        backward: (_c, _x, _s, [d], g) => embeddingBackward(g.wte!, d!, tokens, B, T, C),
      },
      rng,
    );
  });

  it('rmsnorm', () => {
    const rng = new Rng(7, [2]);
    const [B, T, C] = [3, 5, 7];
    expectCase(
      {
        name: 'rmsnorm',
        inputs: { inp: randArr(rng, B * T * C, 2), weight: randArr(rng, C) },
        wrt: ['inp', 'weight'],
        forward: (ctor, x) => {
          const out = poison(new ctor(B * T * C));
          const rstd = poison(new ctor(B * T));
          rmsnormForward(out, rstd, x.inp!, x.weight!, B, T, C);
          return { outs: [out], saved: { rstd } };
        },
        backward: (_c, x, s, [d], g) => rmsnormBackward(g.inp!, g.weight!, d!, x.inp!, x.weight!, s.rstd!, B, T, C),
      },
      rng,
    );
  });

  it('rope (pos0 = 3)', () => {
    const rng = new Rng(7, [3]);
    const [B, T, NH, HS, pos0] = [2, 5, 3, 6, 3];
    expectCase(
      {
        name: 'rope',
        inputs: { inp: randArr(rng, B * T * NH * HS) },
        wrt: ['inp'],
        forward: (ctor, x) => {
          const out = poison(new ctor(B * T * NH * HS));
          ropeForward(out, x.inp!, ropeTable(pos0 + T, HS, 10000, new ctor((pos0 + T) * HS)), B, T, NH, HS, pos0);
          return { outs: [out], saved: {} };
        },
        backward: (ctor, _x, _s, [d], g) => ropeBackward(g.inp!, d!, ropeTable(pos0 + T, HS, 10000, new ctor((pos0 + T) * HS)), B, T, NH, HS, pos0),
      },
      rng,
    );
  });

  it('causal attention', () => {
    const rng = new Rng(7, [4]);
    const [B, T, NH, HS] = [2, 5, 3, 3];
    const n = B * T * NH * HS;
    expectCase(
      {
        name: 'attention',
        inputs: { q: randArr(rng, n, 2), k: randArr(rng, n, 2), v: randArr(rng, n) },
        wrt: ['q', 'k', 'v'],
        forward: (ctor, x) => {
          const out = poison(new ctor(n));
          const att = poison(new ctor(B * NH * T * T));
          attentionForward(out, att, x.q!, x.k!, x.v!, B, T, NH, HS);
          return { outs: [out], saved: { att } };
        },
        backward: (_c, x, s, [d], g) => attentionBackward(g.q!, g.k!, g.v!, d!, x.q!, x.k!, x.v!, s.att!, B, T, NH, HS),
      },
      rng,
    );
  });

  for (const [B, T, C, OC] of [
    [3, 5, 7, 9],
    [1, 9, 13, 10],
    [2, 2, 5, 3],
  ] as const) {
    it(`matmul B=${B} T=${T} C=${C} OC=${OC}`, () => {
      const rng = new Rng(7, [5, C]);
      expectCase(
        {
          name: `matmul ${B}x${T}x${C}->${OC}`,
          inputs: { inp: randArr(rng, B * T * C), weight: randArr(rng, OC * C) },
          wrt: ['inp', 'weight'],
          forward: (ctor, x) => {
            const out = poison(new ctor(B * T * OC));
            matmulForward(out, x.inp!, x.weight!, B, T, C, OC);
            return { outs: [out], saved: {} };
          },
          backward: (_c, x, _s, [d], g) => matmulBackward(g.inp!, g.weight!, d!, x.inp!, x.weight!, B, T, C, OC),
        },
        rng,
      );
    });
  }

  it('swiglu (elementwise)', () => {
    const rng = new Rng(7, [6]);
    const N = 23;
    expectCase(
      {
        name: 'swiglu',
        inputs: { a: randArr(rng, N, 3), b: randArr(rng, N) },
        wrt: ['a', 'b'],
        forward: (ctor, x) => {
          const out = poison(new ctor(N));
          swigluForward(out, x.a!, x.b!, N);
          return { outs: [out], saved: {} };
        },
        backward: (_c, x, _s, [d], g) => swigluBackward(g.a!, g.b!, d!, x.a!, x.b!, N),
      },
      rng,
    );
  });

  it('SwiGLU MLP (composite)', () => {
    const rng = new Rng(7, [7]);
    const [B, T, C, H] = [1, 5, 7, 11];
    const N = B * T;
    expectCase(
      {
        name: 'mlp',
        inputs: { inp: randArr(rng, N * C), w1: randArr(rng, H * C), w3: randArr(rng, H * C), w2: randArr(rng, C * H) },
        wrt: ['inp', 'w1', 'w3', 'w2'],
        forward: (ctor, x) => {
          const out = poison(new ctor(N * C));
          const [a, b, h] = [poison(new ctor(N * H)), poison(new ctor(N * H)), poison(new ctor(N * H))];
          mlpForward(out, a, b, h, x.inp!, x.w1!, x.w3!, x.w2!, B, T, C, H);
          return { outs: [out], saved: { a, b, h } };
        },
        backward: (ctor, x, s, [d], g) => {
          const scratch = () => poison(new ctor(N * H)); // overwritten by mlpBackward
          mlpBackward(g.inp!, g.w1!, g.w3!, g.w2!, scratch(), scratch(), scratch(), d!, x.inp!, s.a!, s.b!, s.h!, x.w1!, x.w3!, x.w2!, B, T, C, H);
        },
      },
      rng,
    );
  });

  it('residual (scale 0.7)', () => {
    const rng = new Rng(7, [8]);
    const N = 17;
    expectCase(
      {
        name: 'residual',
        inputs: { a: randArr(rng, N), b: randArr(rng, N) },
        wrt: ['a', 'b'],
        forward: (ctor, x) => {
          const out = poison(new ctor(N));
          residualForward(out, x.a!, x.b!, N, 0.7);
          return { outs: [out], saved: {} };
        },
        backward: (_c, _x, _s, [d], g) => residualBackward(g.a!, g.b!, d!, N, 0.7),
      },
      rng,
    );
  });

  it('log-softmax (τ = 0.7) and gather', () => {
    const rng = new Rng(7, [9]);
    const [N, V] = [5, 11];
    const targets = randInts(rng, N, V);
    expectCase(
      {
        name: 'logSoftmax (tau 0.7)',
        inputs: { logits: randArr(rng, N * V, 3) },
        wrt: ['logits'],
        forward: (ctor, x) => {
          const out = poison(new ctor(N * V));
          logSoftmaxForward(out, x.logits!, N, V, 0.7);
          return { outs: [out], saved: { logp: out } };
        },
        backward: (_c, _x, s, [d], g) => logSoftmaxBackward(g.logits!, d!, s.logp!, N, V, 0.7),
      },
      rng,
    );
    expectCase(
      {
        name: 'logSoftmax + gather',
        inputs: { logits: randArr(rng, N * V, 3) },
        wrt: ['logits'],
        forward: (ctor, x) => {
          const logp = poison(new ctor(N * V));
          logSoftmaxForward(logp, x.logits!, N, V);
          const out = poison(new ctor(N));
          gatherForward(out, logp, targets, N, V);
          return { outs: [out], saved: { logp } };
        },
        backward: (ctor, _x, s, [d], g) => {
          const dlogp = new ctor(N * V);
          gatherBackward(dlogp, d!, targets, N, V);
          logSoftmaxBackward(g.logits!, dlogp, s.logp!, N, V);
        },
      },
      rng,
    );
  });

  it('exact KL(p‖q) over the vocabulary (τ = 1.3), both arguments', () => {
    const rng = new Rng(7, [10]);
    const [N, V] = [5, 9];
    expectCase(
      {
        name: 'kl (tau 1.3)',
        inputs: { p: randArr(rng, N * V, 3), q: randArr(rng, N * V, 3) },
        wrt: ['p', 'q'],
        forward: (ctor, x) => {
          const out = poison(new ctor(N));
          klForward(out, x.p!, x.q!, N, V, 1.3);
          return { outs: [out], saved: {} };
        },
        backward: (_c, x, _s, [d], g) => klBackward(g.p!, g.q!, d!, x.p!, x.q!, N, V, 1.3),
      },
      rng,
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Hand-computed cases
// ---------------------------------------------------------------------------------------------

describe('known small cases by hand', () => {
  it('RMSNorm of [3, 4] with weight [1, 2]', () => {
    const out = new Float64Array(2);
    const rstd = new Float64Array(1);
    rmsnormForward(out, rstd, new Float64Array([3, 4]), new Float64Array([1, 2]), 1, 1, 2);
    const r = 1 / Math.sqrt((9 + 16) / 2 + 1e-5);
    expect(rstd[0]).toBeCloseTo(r, 14);
    expect(out[0]).toBeCloseTo(3 * r, 14);
    expect(out[1]).toBeCloseTo(8 * r, 14);
    expect(r).toBeCloseTo(0.282842599, 8);
  });

  it('attention, T = 2, one head of size 1', () => {
    // q = [1, 2], k = [0.5, 1], v = [10, 20]: row 0 sees only itself; row 1 has scores [1, 2].
    const out = new Float64Array(2);
    const att = new Float64Array(4).fill(NaN);
    attentionForward(out, att, new Float64Array([1, 2]), new Float64Array([0.5, 1]), new Float64Array([10, 20]), 1, 2, 1, 1);
    const p0 = 1 / (1 + Math.E);
    expect(Array.from(att.slice(0, 2))).toEqual([1, 0]);
    expect(att[2]).toBeCloseTo(p0, 14);
    expect(att[3]).toBeCloseTo(1 - p0, 14);
    expect(out[0]).toBeCloseTo(10, 14);
    expect(out[1]).toBeCloseTo(10 * p0 + 20 * (1 - p0), 13); // 17.3105857863…
    expect(out[1]).toBeCloseTo(17.3105857863, 9);
  });

  it('attention scales scores by 1/√HS (HS = 4, T = 2)', () => {
    const q = new Float64Array([0, 0, 0, 0, 1, 1, 1, 1]);
    const k = new Float64Array([1, 1, 1, 1, 0, 0, 0, 0]); // row 1: scores [4/2, 0] = [2, 0]
    const v = new Float64Array([1, 0, 0, 0, 0, 1, 0, 0]);
    const out = new Float64Array(8);
    const att = new Float64Array(4);
    attentionForward(out, att, q, k, v, 1, 2, 1, 4);
    const p = Math.exp(2) / (Math.exp(2) + 1);
    expect(att[2]).toBeCloseTo(p, 14);
    expect(Array.from(out.slice(4))).toEqual([att[2], att[3], 0, 0]);
  });

  it('RoPE at position 1, HS = 4: angles 1 and 10000^(−1/2) = 0.01', () => {
    const table = ropeTable(2, 4, 10000, new Float64Array(8));
    const out = new Float64Array(4);
    ropeForward(out, new Float64Array([1, 0, 0, 1]), table, 1, 1, 1, 4, 1);
    expect(out[0]).toBeCloseTo(Math.cos(1), 15);
    expect(out[1]).toBeCloseTo(Math.sin(1), 15);
    expect(out[2]).toBeCloseTo(-Math.sin(0.01), 15);
    expect(out[3]).toBeCloseTo(Math.cos(0.01), 15);
    // position 0 is the identity; rotations preserve each pair's norm; backward inverts forward.
    const x = new Float64Array([0.3, -0.7, 1.1, 0.2]);
    const y0 = new Float64Array(4);
    ropeForward(y0, x, table, 1, 1, 1, 4, 0);
    expect(Array.from(y0)).toEqual(Array.from(x));
    const y = new Float64Array(4);
    ropeForward(y, x, table, 1, 1, 1, 4, 1);
    expect(Math.hypot(y[0]!, y[1]!)).toBeCloseTo(Math.hypot(0.3, -0.7), 15);
    const back = new Float64Array(4);
    ropeBackward(back, y, table, 1, 1, 1, 4, 1);
    for (let i = 0; i < 4; i++) expect(back[i]).toBeCloseTo(x[i]!, 15);
  });

  it('AdamW, one step by hand (t = 1, then t = 2)', () => {
    const p = new Float64Array([1.0, -2.0]);
    const g = new Float64Array([0.5, -0.25]);
    const m = new Float64Array(2);
    const v = new Float64Array(2);
    const hp = { lr: 0.1, weightDecay: 0.01 };
    adamwStep(p, g, m, v, 2, 1, hp);
    // t = 1: m = 0.1 g, v = 0.001 g², m̂ = g, v̂ = g², step = g/(|g| + 1e-8) + λθ
    expect(m[0]).toBeCloseTo(0.05, 15);
    expect(v[1]).toBeCloseTo(0.001 * 0.0625, 15);
    expect(p[0]).toBeCloseTo(1.0 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01 * 1.0), 14);
    expect(p[1]).toBeCloseTo(-2.0 - 0.1 * (-0.25 / (0.25 + 1e-8) + 0.01 * -2.0), 14);
    // t = 2 with the same gradient: m̂ = g and v̂ = g² again (bias correction exact).
    const p1 = p[0]!;
    adamwStep(p, g, m, v, 2, 2, hp);
    expect(m[0]).toBeCloseTo(0.9 * 0.05 + 0.1 * 0.5, 15);
    expect(p[0]).toBeCloseTo(p1 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01 * p1), 14);
    expect(() => adamwStep(p, g, m, v, 2, 0, hp)).toThrow(RangeError);
  });

  it('Q4 nibble order: low nibble is the even column', () => {
    const q = new Uint8Array(16).fill(0x88); // all zeros after −8
    q[0] = 0x9a; // c = 0 → 0xa − 8 = 2, c = 1 → 0x9 − 8 = 1
    q[15] = 0x0f; // c = 30 → 0xf − 8 = 7, c = 31 → 0 − 8 = −8
    const scales = new Uint16Array([f32ToF16(0.5)]);
    const w = dequantizeQ4(q, scales, 1, 32);
    expect(w[0]).toBe(1);
    expect(w[1]).toBe(0.5);
    expect(w[2]).toBe(0);
    expect(w[30]).toBe(3.5);
    expect(w[31]).toBe(-4);
  });
});

// ---------------------------------------------------------------------------------------------
// KV cache, quantized and tiled matmul: exact equalities
// ---------------------------------------------------------------------------------------------

describe('KV-cache attention equals full attention exactly', () => {
  it('token by token and in chunks, with RoPE at the right positions (f32)', () => {
    const rng = new Rng(7, [20]);
    const [B, T, NH, HS, Tmax] = [2, 7, 3, 4, 9];
    const C = NH * HS;
    const table = ropeTable(Tmax, HS);
    const q = Float32Array.from(randArr(rng, B * T * C, 2));
    const k = Float32Array.from(randArr(rng, B * T * C, 2));
    const v = Float32Array.from(randArr(rng, B * T * C));
    // Full: rotate q, k over positions 0..T−1, attend.
    const qr = new Float32Array(B * T * C);
    const kr = new Float32Array(B * T * C);
    ropeForward(qr, q, table, B, T, NH, HS, 0);
    ropeForward(kr, k, table, B, T, NH, HS, 0);
    const full = poison(new Float32Array(B * T * C));
    attentionForward(full, new Float32Array(B * NH * T * T), qr, kr, v, B, T, NH, HS);

    const slice = (a: Float32Array, t0: number, n: number) => {
      const s = new Float32Array(B * n * C);
      for (let b = 0; b < B; b++) s.set(a.subarray((b * T + t0) * C, (b * T + t0 + n) * C), b * n * C);
      return s;
    };
    for (const chunks of [[1, 1, 1, 1, 1, 1, 1], [3, 1, 3], [7]]) {
      const kCache = poison(new Float32Array(B * Tmax * C));
      const vCache = poison(new Float32Array(B * Tmax * C));
      let pos = 0;
      for (const n of chunks) {
        const qn = slice(q, pos, n);
        const kn = slice(k, pos, n);
        ropeForward(qn, qn, table, B, n, NH, HS, pos); // in place
        ropeForward(kn, kn, table, B, n, NH, HS, pos);
        kvCacheWrite(kCache, vCache, kn, slice(v, pos, n), B, n, C, pos, Tmax);
        const out = poison(new Float32Array(B * n * C));
        attentionCachedForward(out, qn, kCache, vCache, B, n, NH, HS, pos, Tmax);
        expect(Array.from(out)).toEqual(Array.from(slice(full, pos, n)));
        pos += n;
      }
    }
  });
});

describe('matmul exactness', () => {
  it('the f32 matmul equals a naive triple loop bit for bit (forward and both gradients)', () => {
    const rng = new Rng(7, [21]);
    const [B, T, C, OC] = [3, 7, 37, 11]; // N = 21: neither N nor OC a multiple of 4
    const N = B * T;
    const inp = Float32Array.from(randArr(rng, N * C));
    const w = Float32Array.from(randArr(rng, OC * C));
    const dout = Float32Array.from(randArr(rng, N * OC));
    const out = poison(new Float32Array(N * OC));
    matmulForward(out, inp, w, B, T, C, OC);
    const ref = new Float32Array(N * OC);
    for (let n = 0; n < N; n++)
      for (let o = 0; o < OC; o++) {
        let s = 0;
        for (let c = 0; c < C; c++) s += inp[n * C + c]! * w[o * C + c]!;
        ref[n * OC + o] = s;
      }
    expect(Array.from(out)).toEqual(Array.from(ref));
    const dinp = new Float32Array(N * C);
    const dw = new Float32Array(OC * C);
    matmulBackward(dinp, dw, dout, inp, w, B, T, C, OC);
    const dinpRef = new Float32Array(N * C);
    const dwRef = new Float32Array(OC * C);
    for (let n = 0; n < N; n++)
      for (let c = 0; c < C; c++) {
        let s = 0;
        for (let o = 0; o < OC; o++) s += dout[n * OC + o]! * w[o * C + c]!;
        dinpRef[n * C + c] = s;
      }
    for (let o = 0; o < OC; o++)
      for (let c = 0; c < C; c++) {
        let s = 0;
        for (let n = 0; n < N; n++) s += dout[n * OC + o]! * inp[n * C + c]!;
        dwRef[o * C + c] = s;
      }
    expect(Array.from(dinp)).toEqual(Array.from(dinpRef));
    expect(Array.from(dw)).toEqual(Array.from(dwRef));
    // null skips a gradient
    const dinp2 = new Float32Array(N * C);
    matmulBackward(dinp2, null, dout, inp, w, B, T, C, OC);
    expect(Array.from(dinp2)).toEqual(Array.from(dinpRef));
  });

  function randomQ(rng: Rng, OC: number, C: number) {
    const q8 = new Int8Array(OC * C);
    for (let i = 0; i < q8.length; i++) q8[i] = rng.int(255) - 127;
    const q4 = new Uint8Array((OC * C) / 2);
    for (let i = 0; i < q4.length; i++) q4[i] = rng.int(256);
    const scales = new Uint16Array((OC * C) / 32);
    for (let i = 0; i < scales.length; i++) scales[i] = f32ToF16(0.002 + 0.05 * rng.uniform());
    return { q8, q4, scales };
  }

  it('Q8 and Q4 forward and input gradient equal the dense matmul on dequantized weights', () => {
    const rng = new Rng(7, [22]);
    for (const [B, T, C, OC] of [
      [3, 5, 64, 9],
      [1, 1, 32, 3],
      [2, 9, 96, 300], // OC spans more than one dequantized block (ocBlock(96) = 84)
    ] as const) {
      const N = B * T;
      const { q8, q4, scales } = randomQ(rng, OC, C);
      const inp = Float32Array.from(randArr(rng, N * C));
      const dout = Float32Array.from(randArr(rng, N * OC));
      for (const [kind, wDense] of [
        ['q8', dequantizeQ8(q8, scales, OC, C)],
        ['q4', dequantizeQ4(q4, scales, OC, C)],
      ] as const) {
        const ref = new Float32Array(N * OC);
        matmulForward(ref, inp, wDense, B, T, C, OC);
        const out = poison(new Float32Array(N * OC));
        if (kind === 'q8') matmulForwardQ8(out, inp, q8, scales, B, T, C, OC);
        else matmulForwardQ4(out, inp, q4, scales, B, T, C, OC);
        expect(Array.from(out)).toEqual(Array.from(ref));
        const dref = new Float32Array(N * C).fill(G0);
        matmulBackward(dref, null, dout, inp, wDense, B, T, C, OC);
        const d = new Float32Array(N * C).fill(G0);
        if (kind === 'q8') matmulBackwardInputQ8(d, dout, q8, scales, B, T, C, OC);
        else matmulBackwardInputQ4(d, dout, q4, scales, B, T, C, OC);
        expect(Array.from(d)).toEqual(Array.from(dref));
        // and against an f64 dot product on q·scale computed independently here
        const nb = C / 32;
        let worst = 0;
        const ind = new Float64Array(N * OC);
        for (let n = 0; n < N; n++)
          for (let o = 0; o < OC; o++) {
            let s = 0;
            for (let c = 0; c < C; c++) {
              const byte = q4[(o * C + c) >> 1]!;
              const qq = kind === 'q8' ? q8[o * C + c]! : (c % 2 === 0 ? byte & 15 : byte >> 4) - 8;
              s += inp[n * C + c]! * qq * f16(scales[o * nb + Math.floor(c / 32)]!);
            }
            ind[n * OC + o] = s;
          }
        worst = maxRelErr(out, ind);
        expect(worst).toBeLessThan(1e-6);
      }
    }
  });

  it('quantized matmul needs C to be a multiple of 32', () => {
    const out = new Float32Array(48);
    expect(() => matmulForwardQ8(out, new Float32Array(48), new Int8Array(48), new Uint16Array(2), 1, 1, 48, 1)).toThrow(RangeError);
    expect(() => matmulForwardQ4(out, new Float32Array(48), new Uint8Array(24), new Uint16Array(2), 1, 1, 48, 1)).toThrow(/multiple of 32/);
  });
});

/** f16 bits → value, written independently of src/core/f16 (normal numbers only). */
function f16(h: number): number {
  const e = (h >> 10) & 31;
  const m = h & 1023;
  const v = e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15);
  return h & 0x8000 ? -v : v;
}

// ---------------------------------------------------------------------------------------------
// The clipped objective's gradient vs an independent f64 statement (tests/helpers/objectiveRef.ts)
// ---------------------------------------------------------------------------------------------

describe('clippedLossBackward (vs an independent f64 reference)', () => {
  const specs: ClippedLossSpec[] = [
    { level: 'sequence', tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.28, beta: 0.3 },
    { level: 'token', tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.2, beta: 0.1 },
    { level: 'token', tokenAgg: 'bnpo', epsLow: 0.2, epsHigh: 0.2, beta: 0.05 },
    { level: 'token', tokenAgg: 'dr_grpo', epsLow: 0.1, epsHigh: 0.3, beta: 0.2 },
  ];

  function problem(rng: Rng) {
    const [K, V, N, horizon] = [13, 7, 5, 4];
    const zRef = randArr(rng, K * V, 2);
    const zTheta = Float64Array.from(zRef, (z) => Math.fround(z + 0.25 * (rng.uniform() * 2 - 1)));
    const actions = randInts(rng, K, V);
    const episodeOf = new Int32Array(K);
    for (let k = 0; k < K; k++) episodeOf[k] = k % (N - 1); // episode N−1 has no steps
    const adv = randArr(rng, N, 2);
    const weight = Float64Array.from({ length: N }, () => Math.fround(0.5 + rng.uniform()));
    return { K, V, N, horizon, zRef, zTheta, actions, episodeOf, adv, weight };
  }

  const clipfracs: number[] = [];
  for (const spec of specs) {
    for (const tau of [1, 0.8]) {
      it(`${spec.level}/${spec.tokenAgg}, τ = ${tau}: matches the f64 reference, FD, and f32`, () => {
        const rng = new Rng(7, [30, specs.indexOf(spec), tau * 10]);
        const p = problem(rng);
        const { K, V, N, horizon } = p;
        // Independent f64 reference: the value and the closed-form gradient (1/τ included).
        const refProblem = { K, V, N, lpRef: logSoftmaxRows(p.zRef, V, tau), actions: p.actions, episodeOf: p.episodeOf, adv: p.adv, weight: p.weight, horizon };
        const refVal = objectiveRefParts(refProblem, p.zTheta, spec, tau);
        const dRef = gradRef(refProblem, p.zTheta, spec, tau);

        const run = (ctor: Ctor, zTheta: ArrayLike<number>, scale = 1) => {
          const g0 = ctor === Float64Array ? G0 : 0; // accumulation checked in f64 (see runCase)
          const d = new ctor(K * V).fill(g0);
          const stats = poison(new ctor(4));
          const val = clippedLossBackward(d, stats, convert(ctor, zTheta), convert(ctor, p.zRef), p.actions, p.episodeOf, convert(ctor, p.adv), convert(ctor, p.weight), K, V, N, horizon, tau, spec, scale);
          for (let i = 0; i < d.length; i++) d[i]! -= g0;
          return { d, stats, val };
        };
        const r64 = run(Float64Array, p.zTheta);
        expect(maxRelErr(r64.d, dRef)).toBeLessThan(1e-12);
        expect(r64.val.objective).toBeCloseTo(refVal.objective, 13);
        expect(r64.val.surrogate).toBeCloseTo(refVal.surrogate, 13);
        expect(r64.val.klMean).toBeCloseTo(refVal.klMean, 13);
        expect(r64.val.clipfrac).toBe(refVal.clipfrac);
        expect(Array.from(r64.stats)).toEqual([r64.val.objective, r64.val.surrogate, r64.val.klMean, r64.val.clipfrac]);

        // Finite differences of the objective (the random point is away from the clip kinks:
        // checked by asserting FD in both directions agree).
        const z = Float64Array.from(p.zTheta);
        const num = new Float64Array(K * V);
        let kinkFree = true;
        for (let i = 0; i < z.length; i++) {
          const z0 = z[i]!;
          const f = (x: number) => {
            z[i] = x;
            return run(Float64Array, z).val.objective;
          };
          const L0 = f(z0);
          const Lp = f(z0 + FD_STEP);
          const Lm = f(z0 - FD_STEP);
          z[i] = z0;
          num[i] = (Lp - Lm) / (2 * FD_STEP);
          const fwd = (Lp - L0) / FD_STEP;
          const bwd = (L0 - Lm) / FD_STEP;
          if (Math.abs(fwd - bwd) > 1e-3 * (Math.abs(fwd) + 1e-3)) kinkFree = false;
        }
        expect(kinkFree).toBe(true);
        const fd = maxRelErr(r64.d, num);
        expect(fd).toBeLessThan(FD_TOL);

        // f32 run, and scale = −1 (loss gradient) accumulating.
        const r32 = run(Float32Array, p.zTheta);
        const f32 = maxRelErr(r32.d, r64.d);
        expect(f32).toBeLessThan(F32_TOL);
        const neg = run(Float64Array, p.zTheta, -1);
        for (let i = 0; i < neg.d.length; i++) expect(neg.d[i]).toBeCloseTo(-r64.d[i]!, 14);
        report.push({ op: `clippedLoss ${spec.level}/${spec.tokenAgg} tau ${tau}`, fd, f32 });
        clipfracs.push(r64.val.clipfrac);
      });
    }
  }

  it('the random problems above exercise both branches of the clip', () => {
    console.log(`clipfrac per case: ${clipfracs.map((c) => c.toFixed(2)).join(' ')}`);
    expect(clipfracs.length).toBe(8);
    expect(clipfracs.some((c) => c > 0)).toBe(true);
    expect(clipfracs.every((c) => c < 1)).toBe(true);
  });

  it('at θ = ref the ratio is exactly 1 and the KL exactly 0', () => {
    const rng = new Rng(7, [31]);
    const p = problem(rng);
    const z = Float32Array.from(p.zRef);
    const d = new Float32Array(p.K * p.V);
    const val = clippedLossBackward(d, null, z, z, p.actions, p.episodeOf, Float32Array.from(p.adv), Float32Array.from(p.weight), p.K, p.V, p.N, p.horizon, 0.9, specs[0]!);
    let mean = 0;
    for (let e = 0; e < p.N; e++) mean += (p.weight[e]! * p.adv[e]!) / p.N;
    expect(val.klMean).toBe(0);
    expect(val.surrogate).toBeCloseTo(mean, 6);
    expect(val.clipfrac).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------

describe('sampleForward', () => {
  const base = { seed: 1234, stream: 5, step: 0, temperature: 1, topK: 0 };

  function argmax(z: ArrayLike<number>, off: number, V: number): number {
    let best = 0;
    for (let v = 1; v < V; v++) if (z[off + v]! > z[off + best]!) best = v;
    return best;
  }

  it('τ → 0 and top-k = 1 pick the argmax; τ = 0 breaks ties by lower index', () => {
    const rng = new Rng(7, [40]);
    const [B, V] = [16, 13];
    const z = Float32Array.from(randArr(rng, B * V, 3));
    const out = new Int32Array(B);
    for (const sp of [
      { ...base, temperature: 0 },
      { ...base, temperature: 1e-4 },
      { ...base, topK: 1, temperature: 2 },
    ]) {
      for (let step = 0; step < 5; step++) {
        sampleForward(out, z, B, V, { ...sp, step });
        for (let b = 0; b < B; b++) expect(out[b]).toBe(argmax(z, b * V, V));
      }
    }
    const tie = new Float32Array([0.5, 2, 1, 2]);
    sampleForward(out, tie, 1, 4, { ...base, temperature: 0 });
    expect(out[0]).toBe(1);
    sampleForward(out, tie, 1, 4, { ...base, topK: 1 });
    expect(out[0]).toBe(1);
  });

  it('uses the documented Philox counter layout: key (seed, stream), counter (step, seq0 + b, 0, 0), word 0', () => {
    expect(samplerUniform(1234, 5, 9, 3)).toBe(u32ToUniform(philox4x32(9, 3, 0, 0, 1234, 5)[0]!));
    // With two equal logits and τ = 1 the token is 1 exactly when u ≥ 1/2.
    const B = 64;
    const z = new Float32Array(B * 2);
    const out = new Int32Array(B);
    sampleForward(out, z, B, 2, { ...base, step: 9, seq0: 100 });
    for (let b = 0; b < B; b++) expect(out[b]).toBe(samplerUniform(1234, 5, 9, 100 + b) >= 0.5 ? 1 : 0);
  });

  it('is deterministic given the seed, independent of batch split, and changes with seed/step', () => {
    const rng = new Rng(7, [41]);
    const [B, V] = [40, 9];
    const z = Float32Array.from(randArr(rng, B * V, 2));
    const sp = { ...base, step: 3, temperature: 1.3, topK: 5 };
    const a = new Int32Array(B);
    const b = new Int32Array(B);
    sampleForward(a, z, B, V, sp);
    sampleForward(b, z, B, V, sp);
    expect(Array.from(a)).toEqual(Array.from(b));
    // rows 20..39 sampled alone with seq0 = 20 give the same tokens
    const half = new Int32Array(20);
    sampleForward(half, z.subarray(20 * V), 20, V, { ...sp, seq0: 20 });
    expect(Array.from(half)).toEqual(Array.from(a.subarray(20)));
    const c = new Int32Array(B);
    sampleForward(c, z, B, V, { ...sp, seed: 1235 });
    expect(Array.from(c)).not.toEqual(Array.from(a));
    sampleForward(c, z, B, V, { ...sp, step: 4 });
    expect(Array.from(c)).not.toEqual(Array.from(a));
  });

  it('frequencies match the tempered top-k softmax (chi-square), masked tokens never drawn', () => {
    const V = 8;
    const logits = [0.3, -1.2, 1.5, 0.9, 1.5, -0.4, 0.1, 2.0]; // tie at 1.5 (indices 2, 4)
    const tau = 0.7;
    for (const topK of [0, 4, 3]) {
      // top-3: 7 (2.0), 2 (1.5), 4 (1.5): the tie is kept whole; top-4 adds 3 (0.9)
      const kept = topK === 0 ? [0, 1, 2, 3, 4, 5, 6, 7] : topK === 4 ? [2, 3, 4, 7] : [2, 4, 7];
      let Z = 0;
      for (const v of kept) Z += Math.exp(logits[v]! / tau);
      const draws = 40_000;
      const counts = new Float64Array(V);
      const z = new Float32Array(draws * V);
      for (let b = 0; b < draws; b++) z.set(logits, b * V);
      const out = new Int32Array(draws);
      sampleForward(out, z, draws, V, { seed: 99, stream: topK, step: 0, temperature: tau, topK });
      for (const t of out) counts[t]! += 1;
      let chi2 = 0;
      for (let v = 0; v < V; v++) {
        if (!kept.includes(v)) {
          expect(counts[v]).toBe(0);
          continue;
        }
        const e = (draws * Math.exp(logits[v]! / tau)) / Z;
        chi2 += (counts[v]! - e) ** 2 / e;
      }
      // 99.9% quantiles of χ² with kept−1 degrees of freedom: df 7 → 24.32, 3 → 16.27, 2 → 13.82
      const crit = kept.length === 8 ? 24.32 : kept.length === 4 ? 16.27 : 13.82;
      expect(chi2).toBeLessThan(crit);
    }
  });

  it('top-k ties are broken by lower index', () => {
    // logits [1, 3, 3, 3, 0]: top-2 keeps indices 1 and 2, never 3.
    const B = 2000;
    const z = new Float32Array(B * 5);
    for (let b = 0; b < B; b++) z.set([1, 3, 3, 3, 0], b * 5);
    const out = new Int32Array(B);
    sampleForward(out, z, B, 5, { ...base, topK: 2 });
    const seen = new Set(out);
    expect([...seen].sort()).toEqual([1, 2]);
  });
});

// ---------------------------------------------------------------------------------------------
// One whole tiny Llama step from the ops (convention 4), checked by finite differences
// ---------------------------------------------------------------------------------------------

describe('a whole tiny Llama block from the ops', () => {
  it('loss = mean NLL of next tokens; gradients of every weight match finite differences (f64)', () => {
    const rng = new Rng(7, [50]);
    const [B, T, NH, HS, H, V] = [2, 5, 2, 4, 11, 7];
    const C = NH * HS;
    const N = B * T;
    const tokens = randInts(rng, N, V);
    const targets = randInts(rng, N, V);
    const W: Record<string, Float64Array> = {
      wte: randArr(rng, V * C),
      n1: randArr(rng, C),
      wq: randArr(rng, C * C, 0.5),
      wk: randArr(rng, C * C, 0.5),
      wv: randArr(rng, C * C, 0.5),
      wo: randArr(rng, C * C, 0.5),
      n2: randArr(rng, C),
      w1: randArr(rng, H * C, 0.5),
      w3: randArr(rng, H * C, 0.5),
      w2: randArr(rng, C * H, 0.5),
      nf: randArr(rng, C),
    };
    const table = ropeTable(T, HS, 10000, new Float64Array(T * HS));
    const f = () => new Float64Array(N * C);

    function forward() {
      const a: Record<string, Float64Array> = {};
      for (const k of ['x0', 'xn1', 'q0', 'k0', 'q', 'k', 'v', 'y', 'o', 'x1', 'xn2', 'm', 'x2', 'xf']) a[k] = f();
      for (const k of ['r1', 'r2', 'rf', 'nll']) a[k] = new Float64Array(N);
      for (const k of ['ma', 'mb', 'mh']) a[k] = new Float64Array(N * H);
      a.att = new Float64Array(B * NH * T * T);
      a.logits = new Float64Array(N * V);
      a.logp = new Float64Array(N * V);
      embeddingForward(a.x0!, tokens, W.wte!, B, T, C);
      rmsnormForward(a.xn1!, a.r1!, a.x0!, W.n1!, B, T, C);
      matmulForward(a.q0!, a.xn1!, W.wq!, B, T, C, C);
      matmulForward(a.k0!, a.xn1!, W.wk!, B, T, C, C);
      matmulForward(a.v!, a.xn1!, W.wv!, B, T, C, C);
      ropeForward(a.q!, a.q0!, table, B, T, NH, HS);
      ropeForward(a.k!, a.k0!, table, B, T, NH, HS);
      attentionForward(a.y!, a.att, a.q!, a.k!, a.v!, B, T, NH, HS);
      matmulForward(a.o!, a.y!, W.wo!, B, T, C, C);
      residualForward(a.x1!, a.x0!, a.o!, N * C);
      rmsnormForward(a.xn2!, a.r2!, a.x1!, W.n2!, B, T, C);
      mlpForward(a.m!, a.ma!, a.mb!, a.mh!, a.xn2!, W.w1!, W.w3!, W.w2!, B, T, C, H);
      residualForward(a.x2!, a.x1!, a.m!, N * C);
      rmsnormForward(a.xf!, a.rf!, a.x2!, W.nf!, B, T, C);
      matmulForward(a.logits, a.xf!, W.wte!, B, T, C, V); // tied head
      logSoftmaxForward(a.logp, a.logits, N, V);
      gatherForward(a.nll!, a.logp, targets, N, V);
      let loss = 0;
      for (let i = 0; i < N; i++) loss -= a.nll![i]! / N;
      return { a, loss };
    }

    const { a } = forward();
    const G: Record<string, Float64Array> = {};
    for (const [k, v] of Object.entries(W)) G[k] = new Float64Array(v.length);
    const d = (n: number) => new Float64Array(n);
    const dnll = d(N).fill(-1 / N);
    const dlogp = d(N * V);
    gatherBackward(dlogp, dnll, targets, N, V);
    const dlogits = d(N * V);
    logSoftmaxBackward(dlogits, dlogp, a.logp!, N, V);
    const dxf = d(N * C);
    matmulBackward(dxf, G.wte!, dlogits, a.xf!, W.wte!, B, T, C, V);
    const dx2 = d(N * C);
    rmsnormBackward(dx2, G.nf!, dxf, a.x2!, W.nf!, a.rf!, B, T, C);
    const dx1 = d(N * C);
    const dm = d(N * C);
    residualBackward(dx1, dm, dx2, N * C);
    const dxn2 = d(N * C);
    mlpBackward(dxn2, G.w1!, G.w3!, G.w2!, d(N * H), d(N * H), d(N * H), dm, a.xn2!, a.ma!, a.mb!, a.mh!, W.w1!, W.w3!, W.w2!, B, T, C, H);
    rmsnormBackward(dx1, G.n2!, dxn2, a.x1!, W.n2!, a.r2!, B, T, C); // accumulates onto the residual path
    const dx0 = d(N * C);
    const dO = d(N * C);
    residualBackward(dx0, dO, dx1, N * C);
    const dy = d(N * C);
    matmulBackward(dy, G.wo!, dO, a.y!, W.wo!, B, T, C, C);
    const [dq, dk, dv] = [d(N * C), d(N * C), d(N * C)];
    attentionBackward(dq, dk, dv, dy, a.q!, a.k!, a.v!, a.att!, B, T, NH, HS);
    const [dq0, dk0] = [d(N * C), d(N * C)];
    ropeBackward(dq0, dq, table, B, T, NH, HS);
    ropeBackward(dk0, dk, table, B, T, NH, HS);
    const dxn1 = d(N * C);
    matmulBackward(dxn1, G.wq!, dq0, a.xn1!, W.wq!, B, T, C, C);
    matmulBackward(dxn1, G.wk!, dk0, a.xn1!, W.wk!, B, T, C, C);
    matmulBackward(dxn1, G.wv!, dv, a.xn1!, W.wv!, B, T, C, C);
    rmsnormBackward(dx0, G.n1!, dxn1, a.x0!, W.n1!, a.r1!, B, T, C);
    embeddingBackward(G.wte!, dx0, tokens, B, T, C);

    let worst = 0;
    for (const [k, w] of Object.entries(W)) {
      const num = new Float64Array(w.length);
      for (let i = 0; i < w.length; i++) {
        const w0 = w[i]!;
        w[i] = w0 + FD_STEP;
        const Lp = forward().loss;
        w[i] = w0 - FD_STEP;
        const Lm = forward().loss;
        w[i] = w0;
        num[i] = (Lp - Lm) / (2 * FD_STEP);
      }
      worst = Math.max(worst, maxRelErr(G[k]!, num));
    }
    report.push({ op: 'whole Llama block (all weights)', fd: worst, f32: NaN });
    expect(worst).toBeLessThan(FD_TOL);
  });
});

// ---------------------------------------------------------------------------------------------
// The Backend adapter, argument errors
// ---------------------------------------------------------------------------------------------

describe('cpuBackend', () => {
  it('upload/zeros/download round-trip and ops match the plain functions', async () => {
    // The reference adapter is the plain functions bit for bit; cpuBackend's matmuls run on the
    // WebAssembly SIMD kernels (f32 lanes), as do attention and the row kernels; all are checked
    // against these in tests/simd.test.ts.
    const be = cpuBackendReference;
    const rng = new Rng(7, [60]);
    const [B, T, C, OC] = [1, 3, 5, 4];
    const inp = be.upload('f32', Float32Array.from(randArr(rng, B * T * C)));
    const w = be.upload('f32', Float32Array.from(randArr(rng, OC * C)));
    const out = be.zeros('f32', B * T * OC);
    be.matmulForward(out, inp, w, B, T, C, OC);
    const ref = new Float32Array(B * T * OC);
    matmulForward(ref, inp, w, B, T, C, OC);
    expect(Array.from(await be.download('f32', out))).toEqual(Array.from(ref));
    expect(be.zeros('i32', 3)).toBeInstanceOf(Int32Array);
    const stats = be.zeros('f32', 4);
    const z = be.upload('f32', new Float32Array([0.1, 0.2, 0.3, 0.4]));
    be.clippedLossBackward(be.zeros('f32', 4), stats, z, z, new Int32Array([1, 0]), new Int32Array([0, 0]), new Float32Array([1]), new Float32Array([1]), 2, 2, 1, 2, 1, { level: 'sequence', tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.2, beta: 0.1 }, 1);
    expect(Array.from(await be.download('f32', stats))).toEqual([1, 1, 0, 0]);
  });

  it('argument errors are RangeErrors that name the op and the buffer', () => {
    expect(() => matmulForward(new Float32Array(3), new Float32Array(6), new Float32Array(6), 1, 2, 3, 2)).toThrow(/matmulForward: out has 3 elements, the shape needs 4/);
    expect(() => embeddingForward(new Float32Array(4), new Int32Array([5]), new Float32Array(8), 1, 1, 4)).toThrow(/token 5 at row 0 is outside \[0, 2\)/);
    expect(() => ropeTable(4, 3)).toThrow(RangeError);
    expect(() => kvCacheWrite(new Float32Array(8), new Float32Array(8), new Float32Array(4), new Float32Array(4), 1, 1, 4, 2, 2)).toThrow(/do not fit/);
    expect(() => logSoftmaxForward(new Float32Array(2), new Float32Array(2), 1, 2, 0)).toThrow(/temperature/);
  });
});
