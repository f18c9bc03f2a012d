/**
 * WebGPU vs CPU twin: the WGSL Philox4x32-10 against the Random123 known answers and
 * src/core/rng.ts, and sampleForward (temperature, top-k, greedy) against the CPU sampler —
 * the same seed must give the same tokens. Logits are f32 on both sides but p is f32 on the GPU
 * and f64 on the CPU, so a token may legitimately differ only when u·Σp falls within f32
 * rounding of a CDF boundary: such rows are counted (and must be rare: none expected), every
 * other row must match exactly. Tolerance for tokens: exact.
 *
 * Not here: the quality of the distribution (tests/backend-cpu.test.ts checks the CPU sampler).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { SampleParams } from '../../src/backend/types';
import { sampleForward, samplerUniform } from '../../src/backend/cpu/sampling';
import * as G from '../../src/backend/webgpu/index';
import { philox4x32, Rng } from '../../src/core/rng';
import { gpu, printTable, rand, runSeed, table } from './gpu';

const ctx = typeof gpu === 'string' ? null : gpu;
const seed = runSeed('sample.test.ts');

describe.skipIf(ctx === null)(`WebGPU Philox and sampling (seed ${seed})`, () => {
  const c = ctx!;
  const rng = new Rng(seed, [3]);
  afterAll(() => printTable('sample.test.ts'));

  it('Philox4x32-10 in WGSL: Random123 known answers and src/core/rng.ts on random counters', async () => {
    const F = 0xffffffff;
    const cases: number[][] = [
      [0, 0, 0, 0, 0, 0],
      [F, F, F, F, F, F],
      [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0],
    ];
    for (let i = 0; i < 61; i++) cases.push(Array.from({ length: 6 }, () => rng.nextU32()));
    const inp = new Int32Array(cases.flat().map((x) => x | 0));
    const out = c.upload('i32', new Int32Array(cases.length * 4).fill(-1));
    G.philoxBlocks(c, out, c.upload('i32', inp), cases.length);
    const got = new Uint32Array((await c.download('i32', out)).buffer);
    const hex = (k: number) => Array.from(got.subarray(4 * k, 4 * k + 4), (x) => x.toString(16).padStart(8, '0'));
    expect(hex(0)).toEqual(['6627e8d5', 'e169c58d', 'bc57ac4c', '9b00dbd8']);
    expect(hex(1)).toEqual(['408f276d', '41c83b0e', 'a20bc7c6', '6d5451fd']);
    expect(hex(2)).toEqual(['d16cfe09', '94fdcceb', '5001e420', '24126ea1']);
    let bad = 0;
    cases.forEach((cs, k) => {
      const want = philox4x32(cs[0]!, cs[1]!, cs[2]!, cs[3]!, cs[4]!, cs[5]!);
      for (let j = 0; j < 4; j++) if (got[4 * k + j] !== want[j]) bad++;
    });
    table.push({ kernel: 'philox4x32_10', shape: `${cases.length} blocks`, maxRelErr: bad, maxAbsErr: bad, floor: 'bit-exact', tol: 0, ms: 0 });
    expect(bad).toBe(0);
  });

  /** Rows whose CPU draw lies within `rel` of a CDF boundary (where f32 vs f64 may disagree). */
  function nearBoundary(logits: Float32Array, b: number, V: number, sp: SampleParams): boolean {
    const off = b * V;
    const k = sp.topK <= 0 || sp.topK >= V ? V : sp.topK;
    const idx = Array.from({ length: V }, (_, v) => v).sort((x, y) => logits[off + y]! - logits[off + x]! || x - y);
    const kept = new Set(idx.slice(0, k));
    let m = -Infinity;
    for (const v of kept) m = Math.max(m, logits[off + v]!);
    const p = Array.from({ length: V }, (_, v) => (kept.has(v) ? Math.exp((logits[off + v]! - m) / sp.temperature) : 0));
    const total = p.reduce((s, x) => s + x, 0);
    const target = samplerUniform(sp.seed, sp.stream, sp.step, (sp.seq0 ?? 0) + b) * total;
    let acc = 0;
    for (const x of p) {
      acc += x;
      if (Math.abs(target - acc) <= 1e-5 * total) return true;
    }
    return false;
  }

  const B = 37;
  for (const V of [53, 300]) {
    for (const [temperature, topK, ties] of [[1, 0, false], [0.7, 5, false], [1.5, V, false], [0, 0, false], [1, 1, false], [0.9, 7, true], [0, 0, true]] as const) {
      it(`sampleForward B=${B} V=${V} τ=${temperature} topK=${topK}${ties ? ' (tied logits)' : ''}`, async () => {
        let logits = rand(rng, B * V, -3, 3);
        if (ties) logits = logits.map((x) => Math.round(x * 2) / 2); // many exact ties
        const sp = { seed: rng.nextU32(), stream: rng.nextU32(), step: rng.int(1000), temperature, topK, seq0: rng.int(100) };
        const want = new Int32Array(B);
        sampleForward(want, logits, B, V, sp);
        const out = c.upload('i32', new Int32Array(B + 3).fill(-7));
        const lt = c.upload('f32', logits);
        const t0 = performance.now();
        G.sampleForward(c, out, lt, B, V, sp);
        const all = await c.download('i32', out);
        const ms = performance.now() - t0;
        expect(Array.from(all.subarray(B))).toEqual([-7, -7, -7]);
        const got = all.subarray(0, B);
        let mismatches = 0;
        for (let b = 0; b < B; b++) {
          if (got[b] !== want[b]) {
            mismatches++;
            expect(temperature > 0 && nearBoundary(logits, b, V, sp), `row ${b}: gpu ${got[b]} cpu ${want[b]} and not at a CDF boundary`).toBe(true);
          }
        }
        table.push({ kernel: 'sampleForward (token mismatches)', shape: `B${B} V${V} τ${temperature} k${topK}${ties ? ' ties' : ''}`, maxRelErr: mismatches, maxAbsErr: mismatches, floor: 'exact', tol: 0, ms: Math.round(ms) });

        // Same seed, the batch split in two (seq0 carries the sequence id): same tokens.
        const h = 20;
        const out2 = c.upload('i32', new Int32Array(B - h).fill(-7));
        G.sampleForward(c, out2, c.upload('f32', logits.slice(h * V)), B - h, V, { ...sp, seq0: sp.seq0 + h });
        expect(Array.from(await c.download('i32', out2))).toEqual(Array.from(got.subarray(h)));
      });
    }
  }

  it('sampleForward rejects bad settings like the CPU twin', () => {
    const t = c.zeros('f32', 10);
    const o = c.zeros('i32', 2);
    expect(() => G.sampleForward(c, o, t, 2, 5, { seed: -1, stream: 0, step: 0, temperature: 1, topK: 0 })).toThrow(/seed/);
    expect(() => G.sampleForward(c, o, t, 2, 5, { seed: 0, stream: 0, step: 0, temperature: -1, topK: 0 })).toThrow(/temperature/);
  });
});
