/**
 * Tests for resident tensors (src/backend/cpu/arena.ts, and simdMemory.ts's simdTensor / place): with
 * shared memory (threads), cpuBackend's f32 tensors live in the kernels' memory and a kernel call
 * works on them where they are. On FRESH random inputs each run (the seed is printed;
 * RESIDENT_SEED=<n> replays a run):
 *   the arena: random alloc/free sequences never hand out overlapping or misaligned blocks, merge
 *   every freed range (all freed → one range), grow the memory only when nothing fits, return null
 *   when it cannot grow, refuse a double free;
 *   every SIMD op with its operands resident equals the same op on ordinary arrays (copied in and
 *   out) BIT FOR BIT — matmul forward / backward (padded and unpadded widths), Q8 / Q4, attention
 *   forward / backward / cached forward (resident caches, L < Tmax, B > 1), RMSNorm, SwiGLU,
 *   log-softmax, RoPE and the residual add, forward and backward — mixed resident and ordinary
 *   operands, and the in-place calls (log-softmax, RoPE, the residual add with out = a);
 *   cpuBackend: zeros / upload are resident and zeroed even in a reused (poisoned) block, dispose
 *   poisons a block with NaN and returns it, a view of a resident tensor is resident, tensors made
 *   before the memory grew keep their values after, residency off gives ordinary arrays, and so
 *   does the cap on resident bytes once reached (kernels then copy those operands, same results);
 *   a model training step (preset S: forward, loss, backward, AdamW) with resident tensors equals
 *   one with ordinary arrays, bit for bit.
 *
 * Not here: the kernels against their TypeScript twins (tests/simd.test.ts), threads' splits
 * (tests/threads.test.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ALIGN, Arena } from '../src/backend/cpu/arena';
import { cpuBackend, ropeTable } from '../src/backend/cpu';
import * as simd from '../src/backend/cpu/simd';
import { cpuThreadsReady, setCpuThreads } from '../src/backend/cpu/threads';
import { Rng } from '../src/core/rng';
import { MODEL_PRESETS } from '../src/model/config';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import { quantizeQ4, quantizeQ8 } from '../src/model/quant';
import { initWeights } from '../src/model/weights';
import { freshSeed, randF32 } from './helpers/freshSeed';

const SEED = freshSeed('tests/resident.test.ts', 'RESIDENT_SEED');
let path = 0;
const rng = (): Rng => new Rng(SEED, [path++]);
const bits = (a: Float32Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length).slice();

beforeAll(async () => {
  setCpuThreads(2); // before the kernels load: the shared-memory build, so tensors can be resident
  expect(simd.simdAvailable()).toBe(true);
  await cpuThreadsReady(2, 30_000);
  expect(simd.simdResidentStats(), 'shared memory, an arena').not.toBeNull();
});

describe('the arena', () => {
  it('random alloc / free sequences: aligned, disjoint, merged when freed, grown only when nothing fits', () => {
    const r = rng();
    let end = 1024;
    let grows = 0;
    const a = new Arena(100, end, (bytes) => {
      grows++;
      end += Math.ceil(bytes / 4096) * 4096;
      return end;
    });
    const live = new Map<number, number>();
    for (let step = 0; step < 3000; step++) {
      if (live.size > 0 && r.uniform() < 0.45) {
        const keys = [...live.keys()];
        const at = keys[Math.floor(r.uniform() * keys.length)]!;
        expect(a.free(at)).toBe(live.get(at));
        live.delete(at);
      } else {
        const want = 1 + Math.floor(r.uniform() ** 3 * 20_000);
        const before = grows;
        const { largest } = a.stats();
        const at = a.alloc(want)!;
        expect(at % ALIGN).toBe(0);
        expect(at).toBeGreaterThanOrEqual(100);
        const size = a.sizeOf(at)!;
        expect(size).toBeGreaterThanOrEqual(want);
        expect(at + size).toBeLessThanOrEqual(end);
        for (const [b, m] of live) expect(at + size <= b || b + m <= at, `block ${at}+${size} overlaps ${b}+${m}`).toBe(true);
        // Grown exactly when no free range could take the block.
        expect(grows > before, `grew for ${size} bytes with a free range of ${largest}`).toBe(largest < size);
        live.set(at, size);
      }
      expect(a.stats().blocks).toBe(live.size);
      expect(a.stats().bytes).toBe([...live.values()].reduce((s, m) => s + m, 0));
    }
    for (const at of [...live.keys()]) a.free(at);
    expect(a.stats()).toEqual({ bytes: 0, blocks: 0, holes: 1, largest: end - 128, end });
    // Everything is free and merged: a block of the whole managed range fits without growing.
    const g = grows;
    expect(a.alloc(end - 128)).toBe(128);
    expect(grows).toBe(g);
  });

  it('extends a free range at the end instead of leaving a hole; null when the memory cannot grow; refuses a double free', () => {
    let end = 64 * 10;
    const a = new Arena(0, end, (bytes) => (end + bytes > 64 * 100 ? null : (end += bytes)));
    const x = a.alloc(64 * 8)!;
    expect(x).toBe(0);
    // 2 blocks free at the end; a 5-block ask grows by 3, and the block starts at the old free range.
    expect(a.alloc(64 * 5)).toBe(64 * 8);
    expect(end).toBe(64 * 13);
    expect(a.alloc(64 * 200)).toBeNull();
    expect(() => a.free(x + 64)).toThrow(/not a live block/);
    a.free(x);
    expect(() => a.free(x)).toThrow(/not a live block/);
    expect(() => a.alloc(0)).toThrow(RangeError);
  });
});

/** A resident copy of `a` (cpuBackend.upload). */
const res = (a: Float32Array): Float32Array => {
  const t = cpuBackend.upload('f32', a);
  expect(simd.simdResident(t)).toBe(true);
  return t;
};

/**
 * Runs `op` on ordinary copies of `inputs` and on resident ones (`pick` chooses, per operand, which
 * are resident in the second run: all, or every other one), and expects the same bits in every array.
 */
function sameBits(what: string, inputs: Float32Array[], op: (a: Float32Array[]) => void, pick: (i: number) => boolean = () => true): void {
  const plain = inputs.map((a) => a.slice());
  op(plain);
  const resident = inputs.map((a, i) => (pick(i) ? res(a) : a.slice()));
  op(resident);
  plain.forEach((a, i) => expect(bits(resident[i]!), `${what}: operand ${i}`).toEqual(bits(a)));
  for (const t of resident) cpuBackend.dispose(t);
}

const everyOther = (i: number): boolean => i % 2 === 0;

describe('resident operands give the same bits as copied ones', () => {
  for (const [N, C, OC] of [
    [7, 12, 8],
    [9, 13, 7],
    [64, 64, 172],
    [300, 128, 40],
  ] as const) {
    it(`matmul forward and backward N${N} C${C} OC${OC}; Q8 / Q4`, () => {
      const r = rng();
      const x = randF32(N * C, r), w = randF32(OC * C, r), dy = randF32(N * OC, r);
      for (const pick of [() => true, everyOther]) {
        sameBits('forward', [new Float32Array(N * OC), x, w], ([y, a, b]) => simd.simdMatmulForward(y!, a!, b!, 1, N, C, OC), pick);
        sameBits('backward', [randF32(N * C, r), randF32(OC * C, r), dy, x, w], ([dx, dw, g, a, b]) => simd.simdMatmulBackward(dx!, dw!, g!, a!, b!, 1, N, C, OC), pick);
        sameBits('backward, dW only', [randF32(OC * C, r), dy, x, w], ([dw, g, a, b]) => simd.simdMatmulBackward(null, dw!, g!, a!, b!, 1, N, C, OC), pick);
      }
      if (C % 32 === 0) {
        const q8 = quantizeQ8(w, OC, C), q4 = quantizeQ4(w, OC, C);
        sameBits('Q8 forward', [new Float32Array(N * OC), x], ([y, a]) => simd.simdMatmulForwardQ8(y!, a!, q8.q, q8.scales, 1, N, C, OC));
        sameBits('Q4 input gradient', [randF32(N * C, r), dy], ([dx, g]) => simd.simdMatmulBackwardInputQ4(dx!, g!, q4.q, q4.scales, 1, N, C, OC));
      }
    });
  }

  for (const [B, T, NH, HS] of [
    [1, 5, 2, 3],
    [3, 9, 4, 8],
    [2, 32, 4, 32],
  ] as const) {
    it(`attention forward, backward, cached forward B${B} T${T} NH${NH} HS${HS}`, () => {
      const r = rng();
      const n = B * T * NH * HS, na = B * NH * T * T;
      const q = randF32(n, r), k = randF32(n, r), v = randF32(n, r);
      const att = new Float32Array(na);
      simd.simdAttentionForward(new Float32Array(n), att, q, k, v, B, T, NH, HS);
      for (const pick of [() => true, everyOther]) {
        sameBits('forward', [new Float32Array(n), new Float32Array(na), q, k, v], ([o, p, a, b, c]) => simd.simdAttentionForward(o!, p!, a!, b!, c!, B, T, NH, HS), pick);
        sameBits('backward', [randF32(n, r), randF32(n, r), randF32(n, r), randF32(n, r), q, k, v, att], ([dq, dk, dv, g, a, b, c, p]) =>
          simd.simdAttentionBackward(dq!, dk!, dv!, g!, a!, b!, c!, p!, B, T, NH, HS), pick);
      }
      // The cached forward over caches of Tmax > L rows per batch entry: read in place when resident.
      const C = NH * HS, Tmax = T + 3, pos0 = Math.floor(T / 2), Tq = T - pos0;
      const kc = randF32(B * Tmax * C, r), vc = randF32(B * Tmax * C, r), qq = randF32(B * Tq * C, r);
      sameBits('cached forward', [new Float32Array(B * Tq * C), qq, kc, vc], ([o, a, kk, vv]) => simd.simdAttentionCachedForward(o!, a!, kk!, vv!, B, Tq, NH, HS, pos0, Tmax));
      sameBits('cached forward, caches only resident', [new Float32Array(B * Tq * C), qq, kc, vc], ([o, a, kk, vv]) => simd.simdAttentionCachedForward(o!, a!, kk!, vv!, B, Tq, NH, HS, pos0, Tmax), (i) => i >= 2);
    });
  }

  it('RMSNorm, SwiGLU, log-softmax, RoPE, the residual add (forward and backward; in place where allowed)', () => {
    const r = rng();
    const N = 37, C = 24, V = 13, B = 2, T = 5, NH = 3, HS = 8;
    const x = randF32(N * C, r), w = randF32(C, r);
    const rstd = new Float32Array(N);
    simd.simdRmsnormForward(new Float32Array(N * C), rstd, x, w, 1, N, C);
    for (const pick of [() => true, everyOther]) {
      sameBits('rmsnorm forward', [new Float32Array(N * C), new Float32Array(N), x, w], ([o, s, a, b]) => simd.simdRmsnormForward(o!, s!, a!, b!, 1, N, C), pick);
      sameBits('rmsnorm backward', [randF32(N * C, r), randF32(C, r), randF32(N * C, r), x, w, rstd], ([dx, dw, g, a, b, s]) => simd.simdRmsnormBackward(dx!, dw!, g!, a!, b!, s!, 1, N, C), pick);
      sameBits('swiglu forward', [new Float32Array(N * C), x, randF32(N * C, r)], ([o, a, b]) => simd.simdSwigluForward(o!, a!, b!, N * C), pick);
      sameBits('swiglu backward', [randF32(N * C, r), randF32(N * C, r), randF32(N * C, r), x, randF32(N * C, r)], ([da, db, g, a, b]) => simd.simdSwigluBackward(da!, db!, g!, a!, b!, N * C), pick);
      const z = randF32(N * V, r);
      sameBits('log-softmax forward', [new Float32Array(N * V), z], ([o, a]) => simd.simdLogSoftmaxForward(o!, a!, N, V, 0.7), pick);
      sameBits('log-softmax backward', [randF32(N * V, r), randF32(N * V, r), z], ([d, g, lp]) => simd.simdLogSoftmaxBackward(d!, g!, lp!, N, V, 0.7), pick);
      const n = B * T * NH * HS, table = ropeTable(T, HS, 10000, new Float32Array(T * HS)) as Float32Array;
      sameBits('rope forward', [new Float32Array(n), randF32(n, r), table], ([o, a, tb]) => simd.simdRopeForward(o!, a!, tb!, B, T, NH, HS), pick);
      sameBits('rope backward', [randF32(n, r), randF32(n, r), table], ([d, g, tb]) => simd.simdRopeBackward(d!, g!, tb!, B, T, NH, HS), pick);
      sameBits('residual forward', [new Float32Array(N), randF32(N, r), randF32(N, r)], ([o, a, b]) => simd.simdResidualForward(o!, a!, b!, N, 0.3), pick);
      sameBits('residual backward', [randF32(N, r), randF32(N, r), randF32(N, r)], ([da, db, g]) => simd.simdResidualBackward(da!, db!, g!, N, 0.3), pick);
    }
    // In place: the output is (or overlaps) an input — written through a copy, as the copying path does.
    sameBits('log-softmax in place', [randF32(N * V, r)], ([z]) => simd.simdLogSoftmaxForward(z!, z!, N, V, 0.7));
    const n = B * T * NH * HS, table = ropeTable(T, HS, 10000, new Float32Array(T * HS)) as Float32Array;
    sameBits('rope in place', [randF32(n, r), table], ([a, tb]) => simd.simdRopeForward(a!, a!, tb!, B, T, NH, HS));
    sameBits('residual, out = a', [randF32(N, r), randF32(N, r)], ([a, b]) => simd.simdResidualForward(a!, a!, b!, N, 0.3));
    // The same array as an accumulated gradient and as an input (a matmul's dinp = dout, C = OC):
    // the gradient gets a copy, as on the copying path — in place, the gemm would overwrite rows of
    // dout it still reads.
    const wc = randF32(C * C, r);
    sameBits('matmul backward, dinp = dout', [randF32(N * C, r), randF32(N * C, r)], ([g, x]) => simd.simdMatmulBackward(g!, null, g!, x!, wc, 1, N, C, C));
    // Two views of one resident tensor, the output overlapping the input by half.
    const big = randF32(2 * N, r);
    const plain = big.slice();
    simd.simdResidualForward(plain.subarray(N / 2 | 0, (N / 2 | 0) + N), plain.subarray(0, N), plain.subarray(N, 2 * N), N, 1);
    const t = res(big);
    simd.simdResidualForward(cpuBackend.view(t, 0, 2 * N).subarray(N / 2 | 0, (N / 2 | 0) + N), t.subarray(0, N), t.subarray(N, 2 * N), N, 1);
    expect(bits(t)).toEqual(bits(plain));
    cpuBackend.dispose(t);
  });
});

describe('cpuBackend memory', () => {
  it('zeros / upload are resident and zeroed; dispose poisons and returns the block; views are resident; growth keeps old tensors', () => {
    const before = simd.simdResidentStats()!;
    const a = cpuBackend.zeros('f32', 1000);
    expect(simd.simdResident(a)).toBe(true);
    a.fill(7);
    cpuBackend.dispose(a);
    expect(Number.isNaN(a[0]!) && Number.isNaN(a[999]!), 'a released tensor reads NaN').toBe(true);
    expect(simd.simdResidentStats()!.bytes).toBe(before.bytes);
    const b = cpuBackend.zeros('f32', 1000); // the same block, reused
    expect(b.byteOffset).toBe(a.byteOffset);
    expect(b.every((x) => x === 0)).toBe(true);
    expect(simd.simdResident(cpuBackend.view(b, 64, 128))).toBe(true);
    cpuBackend.dispose(cpuBackend.view(b, 0, 64)); // a view is not a tensor of its own: nothing happens
    expect(b[0]).toBe(0);
    const data = randF32(5000, rng());
    const up = cpuBackend.upload('f32', data);
    expect(bits(up)).toEqual(bits(data));
    // Grow the memory by more than it has: tensors made before keep their values.
    const grow = cpuBackend.zeros('f32', (simd.simdResidentStats()!.memoryBytes >> 2) + 1);
    expect(simd.simdResidentStats()!.memoryBytes).toBeGreaterThan(before.memoryBytes);
    expect(bits(up)).toEqual(bits(data));
    up[3] = 42;
    expect(up[3]).toBe(42);
    // A tensor made after the grow, released: poisoned to its end (past the memory's old size).
    const late = cpuBackend.zeros('f32', 4096);
    cpuBackend.dispose(late);
    expect(Number.isNaN(late[4095]!), 'poisoned past the old end').toBe(true);
    for (const t of [b, up, grow]) cpuBackend.dispose(t);
    expect(simd.simdResidentStats()!.bytes).toBe(before.bytes);
    // Other kinds are ordinary arrays; residency off → ordinary f32 arrays.
    expect(simd.simdResident(cpuBackend.zeros('i32', 4) as unknown as Float32Array)).toBe(false);
    simd.setCpuResidency(false);
    try {
      expect(simd.simdResident(cpuBackend.zeros('f32', 4))).toBe(false);
    } finally {
      simd.setCpuResidency(true);
    }
  });

  it('past the cap on resident bytes, zeros and upload make ordinary arrays, and kernels take them as before', () => {
    const used = simd.simdResidentStats()!.bytes;
    simd.setCpuResidency(true, used + 8192);
    try {
      const a = cpuBackend.zeros('f32', 1024); // 4 KiB: fits
      const b = cpuBackend.zeros('f32', 2048); // 8 KiB more: past the cap
      const data = randF32(64, rng());
      const c = cpuBackend.upload('f32', data);
      expect([a, b, c].map((t) => simd.simdResident(t))).toEqual([true, false, true]);
      expect(b.buffer).toBeInstanceOf(ArrayBuffer);
      expect(bits(c)).toEqual(bits(data));
      // A kernel over a resident and an ordinary operand: the ordinary one is copied, the result the same.
      const x = randF32(1024, rng());
      a.set(x);
      const want = new Float32Array(1024);
      simd.simdResidualForward(want, x, x.slice(), 1024, 0.5);
      simd.simdResidualForward(b.subarray(0, 1024), a, x, 1024, 0.5);
      expect(bits(b.subarray(0, 1024))).toEqual(bits(want));
      for (const t of [a, b, c]) cpuBackend.dispose(t);
    } finally {
      simd.setCpuResidency(true);
    }
    expect(simd.simdResidentStats()!.bytes).toBe(used);
  });

  it('a training step (preset S, full fine-tuning) with resident tensors equals one with ordinary arrays, bit for bit', async () => {
    const cfg = MODEL_PRESETS.S;
    const step = async (resident: boolean): Promise<[Float32Array, number]> => {
      simd.setCpuResidency(resident);
      try {
        const m = new Model(cpuBackend, cfg, initWeights(cfg, new Rng(SEED, [99])), { trainable: 'full' });
        const B = 4, T = 12;
        const r = new Rng(SEED, [98]);
        const tokens = Int32Array.from({ length: B * T }, () => 1 + Math.floor(r.uniform() * (cfg.vocab - 1)));
        let loss = 0;
        for (let i = 0; i < 2; i++) loss = await trainOnSequences(m, tokens, B, T, { lr: 1e-2 });
        const p = await m.getParams();
        m.dispose();
        return [p, loss];
      } finally {
        simd.setCpuResidency(true);
      }
    };
    const used = simd.simdResidentStats()!.bytes;
    const [p0, l0] = await step(false);
    expect(simd.simdResidentStats()!.bytes, 'nothing resident without residency').toBe(used);
    const [p1, l1] = await step(true);
    expect(simd.simdResidentStats()!.bytes, "the model's dispose released every resident tensor").toBe(used);
    expect(l1).toBe(l0);
    expect(bits(p1)).toEqual(bits(p0));
  });
});
