/**
 * WebGPU vs CPU twin: the model-layer kernels — embedding, RMSNorm, RoPE, causal attention (full
 * forward in each numbered variant, backward, KV-cache write, cached forward), residual, SwiGLU and the composed MLP
 * (src/backend/cpu/{embedding,rmsnorm,rope,attention,residual,mlp}.ts) — on fresh random inputs,
 * odd sizes, NaN-poisoned outputs with a guard band (tests/webgpu/gpu.ts), backward outputs
 * starting from random values (they accumulate).
 *
 * Tolerances (u = 2⁻²⁴ ≈ 6e-8; the CPU computes in f64 and rounds once, the GPU in f32). Each
 * element's error is measured against the size of the terms it is made of (a per-element floor,
 * its condition scale, computed here in f64), so a cancelling sum is not held to a relative
 * error it cannot have:
 *   - copies (embedding forward, KV-cache write): exact (tolerance 0);
 *   - embeddingBackward: one f32 rounding per add in the CPU's order on both sides: 1e-6;
 *   - elementwise (RoPE, residual, SwiGLU): a few roundings of |terms| (the floor): 1e-6; SwiGLU
 *     goes through exp (WGSL allows 3 + 2|x| ULP): 1e-5;
 *   - reductions over C ≤ 77 (RMSNorm) or HS / T ≤ 24 (attention), f32 vs f64: ≈ K·u of the
 *     floor Σ|terms| — 2e-5 (attention probabilities: relative, floor 1e-4, as exp turns an
 *     absolute error of the score into a relative error of P);
 *   - the MLP (three matmuls and the gate): floor = the same computation on |inputs| (an upper
 *     bound on every intermediate's magnitude), 2e-5.
 *
 * Not here: log-prob / KL / objective / matmul / sampling kernels (their own files), the
 * Backend object (backend.test.ts), finite-difference checks of the CPU twins (tests/).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { attentionBackward, attentionCachedForward, attentionForward, kvCacheWrite } from '../../src/backend/cpu/attention';
import { embeddingBackward, embeddingForward } from '../../src/backend/cpu/embedding';
import { mlpBackward, mlpForward, swigluBackward, swigluForward } from '../../src/backend/cpu/mlp';
import { residualBackward, residualForward } from '../../src/backend/cpu/residual';
import { rmsnormBackward, rmsnormForward } from '../../src/backend/cpu/rmsnorm';
import { ropeBackward, ropeForward, ropeTable } from '../../src/backend/cpu/rope';
import * as G from '../../src/backend/webgpu/index';
import { Rng } from '../../src/core/rng';
import { absOf, gpu, poisoned, printTable, rand, randInt, readOut, record, runSeed } from './gpu';

const ctx = typeof gpu === 'string' ? null : gpu;
const seed = runSeed('layers.test.ts');

describe.skipIf(ctx === null)(`WebGPU model-layer kernels (seed ${seed})`, () => {
  const c = ctx!;
  const rng = new Rng(seed, [5]);
  afterAll(() => printTable('layers.test.ts'));

  for (const [B, T, C, V] of [[3, 37, 13, 11], [2, 5, 70, 130]] as const) {
    it(`embeddingForward / Backward B=${B} T=${T} C=${C} V=${V}`, async () => {
      const N = B * T;
      const shape = `N${N} C${C} V${V}`;
      const wte = rand(rng, V * C);
      const tokens = randInt(rng, N, V); // N > V in the first case: repeated tokens accumulate
      const want = new Float32Array(N * C);
      embeddingForward(want, tokens, wte, B, T, C);
      const tt = c.upload('i32', tokens);
      const out = poisoned(c, N * C);
      const t0 = performance.now();
      G.embeddingForward(c, out, tt, c.upload('f32', wte), B, T, C);
      const got = await readOut(c, out, N * C);
      expect(record('embeddingForward', shape, got, want, 1e-30, 0, performance.now() - t0)).toBe(0);

      const dout = rand(rng, N * C);
      const init = rand(rng, V * C);
      const wantD = init.slice();
      embeddingBackward(wantD, dout, tokens, B, T, C);
      const floor = absOf(init);
      embeddingBackward(floor, absOf(dout), tokens, B, T, C);
      // Both kernels (vocabulary-major and token-major), and the wrapper's own choice. V is read
      // from dwte's length (⌊length / C⌋): with C > GUARD the guard band adds no row.
      const td = c.upload('f32', dout);
      for (const kernel of ['vocab', 'tokens', undefined] as const) {
        const d = poisoned(c, V * C, init);
        G.embeddingBackward(c, d, td, tt, B, T, C, kernel);
        const gotD = await readOut(c, d, V * C);
        expect(record(`embeddingBackward ${kernel ?? 'auto'}`, shape, gotD, wantD, floor, 1e-6)).toBeLessThanOrEqual(1e-6);
      }
    });
  }

  for (const [B, T, C] of [[2, 9, 77], [3, 1, 5], [1, 130, 64]] as const) {
    it(`rmsnormForward / Backward B=${B} T=${T} C=${C}`, async () => {
      const N = B * T;
      const shape = `N${N} C${C}`;
      const inp = rand(rng, N * C, -2, 2);
      const w = rand(rng, C, 0.5, 1.5);
      const want = new Float32Array(N * C);
      const wantR = new Float32Array(N);
      rmsnormForward(want, wantR, inp, w, B, T, C, 1e-5);
      const ti = c.upload('f32', inp);
      const tw = c.upload('f32', w);
      const out = poisoned(c, N * C);
      const rs = poisoned(c, N);
      const t0 = performance.now();
      G.rmsnormForward(c, out, rs, ti, tw, B, T, C, 1e-5);
      const got = await readOut(c, out, N * C);
      const ms = performance.now() - t0;
      const gotR = await readOut(c, rs, N);
      expect(record('rmsnormForward out', shape, got, want, 1e-6, 2e-5, ms)).toBeLessThanOrEqual(2e-5);
      expect(record('rmsnormForward rstd', shape, gotR, wantR, 1e-6, 2e-5)).toBeLessThanOrEqual(2e-5);

      const dout = rand(rng, N * C);
      const init = rand(rng, N * C);
      const initW = rand(rng, C);
      const wantD = init.slice();
      const wantW = initW.slice();
      rmsnormBackward(wantD, wantW, dout, inp, w, wantR, B, T, C);
      const fD = new Float64Array(N * C);
      const fW = new Float64Array(C).map((_, i) => Math.abs(initW[i]!));
      for (let n = 0; n < N; n++) {
        const r = wantR[n]!;
        let gx = 0;
        for (let j = 0; j < C; j++) gx += Math.abs(dout[n * C + j]! * w[j]! * inp[n * C + j]!);
        for (let j = 0; j < C; j++) {
          const i = n * C + j;
          fD[i] = Math.abs(init[i]!) + r * (Math.abs(dout[i]! * w[j]!) + (Math.abs(inp[i]!) * r * r * gx) / C);
          fW[j]! += Math.abs(dout[i]! * inp[i]!) * r;
        }
      }
      const dI = poisoned(c, N * C, init);
      const dW = poisoned(c, C, initW);
      const tD = c.upload('f32', dout);
      const tR = c.upload('f32', wantR);
      const cb = c.countsNow();
      G.rmsnormBackward(c, dI, dW, tD, ti, tw, tR, B, T, C);
      expect(c.countsSince(cb).dispatches).toBe(1); // both gradients in one dispatch
      expect(record('rmsnormBackward dinp', shape, await readOut(c, dI, N * C), wantD, fD, 2e-5)).toBeLessThanOrEqual(2e-5);
      expect(record('rmsnormBackward dweight', shape, await readOut(c, dW, C), wantW, fW, 2e-5)).toBeLessThanOrEqual(2e-5);
      // dinp and dweight as views of one buffer (a flat gradient): two dispatches, the same bits.
      const off = Math.ceil((N * C) / 64) * 64;
      const flat = c.zeros('f32', off + C);
      const vD = c.view(flat, 0, N * C);
      const vW = c.view(flat, off, C);
      G.residualForward(c, vD, c.zeros('f32', N * C), c.upload('f32', init), N * C, 1); // vD ← 0 + 1·init
      G.residualForward(c, vW, c.zeros('f32', C), c.upload('f32', initW), C, 1);
      G.rmsnormBackward(c, vD, vW, tD, ti, tw, tR, B, T, C);
      const dI2 = poisoned(c, N * C, init);
      const dW2 = poisoned(c, C, initW);
      G.rmsnormBackward(c, dI2, dW2, tD, ti, tw, tR, B, T, C);
      expect(Array.from(await c.download('f32', vD))).toEqual(Array.from(await readOut(c, dI2, N * C)));
      expect(Array.from(await c.download('f32', vW))).toEqual(Array.from(await readOut(c, dW2, C)));
    });
  }

  for (const [B, T, NH, HS, pos0] of [[2, 7, 3, 10, 0], [1, 5, 2, 6, 9], [3, 33, 1, 2, 1]] as const) {
    it(`ropeForward / Backward B=${B} T=${T} NH=${NH} HS=${HS} pos0=${pos0}`, async () => {
      const n = B * T * NH * HS;
      const shape = `B${B} T${T} NH${NH} HS${HS} p${pos0}`;
      const table = ropeTable(pos0 + T + 3, HS) as Float32Array;
      const inp = rand(rng, n);
      const want = new Float32Array(n);
      ropeForward(want, inp, table, B, T, NH, HS, pos0);
      // floor: |x0 cos| + |x1 sin| per output (both outputs of a pair use the same pair).
      const floorOf = (x: Float32Array, init?: Float32Array): Float64Array => {
        const f = new Float64Array(n);
        const C = NH * HS;
        for (let e = 0; e < n; e += 2) {
          const t = Math.floor(e / C) % T;
          const i = (e % HS) / 2;
          const ti = ((pos0 + t) * (HS / 2) + i) * 2;
          const s = (Math.abs(x[e]!) + Math.abs(x[e + 1]!)) * Math.max(Math.abs(table[ti]!), Math.abs(table[ti + 1]!));
          f[e] = s + (init !== undefined ? Math.abs(init[e]!) : 0);
          f[e + 1] = s + (init !== undefined ? Math.abs(init[e + 1]!) : 0);
        }
        return f;
      };
      const tt = c.upload('f32', table);
      const ti = c.upload('f32', inp);
      const out = poisoned(c, n);
      const t0 = performance.now();
      G.ropeForward(c, out, ti, tt, B, T, NH, HS, pos0);
      const got = await readOut(c, out, n);
      expect(record('ropeForward', shape, got, want, floorOf(inp), 1e-6, performance.now() - t0)).toBeLessThanOrEqual(1e-6);
      // In place, as the model calls it.
      const inpl = poisoned(c, n, inp);
      G.ropeForward(c, inpl, inpl, tt, B, T, NH, HS, pos0);
      expect(record('ropeForward in place', shape, await readOut(c, inpl, n), want, floorOf(inp), 1e-6)).toBeLessThanOrEqual(1e-6);

      const dout = rand(rng, n);
      const init = rand(rng, n);
      const wantD = init.slice();
      ropeBackward(wantD, dout, table, B, T, NH, HS, pos0);
      const d = poisoned(c, n, init);
      G.ropeBackward(c, d, c.upload('f32', dout), tt, B, T, NH, HS, pos0);
      expect(record('ropeBackward', shape, await readOut(c, d, n), wantD, floorOf(dout, init), 1e-6)).toBeLessThanOrEqual(1e-6);
    });
  }

  for (const [B, T, NH, HS] of [[2, 13, 3, 8], [1, 1, 2, 5], [1, 70, 1, 24]] as const) {
    it(`attentionForward / Backward B=${B} T=${T} NH=${NH} HS=${HS}`, async () => {
      const C = NH * HS;
      const n = B * T * C;
      const na = B * NH * T * T;
      const shape = `B${B} T${T} NH${NH} HS${HS}`;
      const q = rand(rng, n, -1.5, 1.5);
      const k = rand(rng, n, -1.5, 1.5);
      const v = rand(rng, n);
      const want = new Float32Array(n);
      const wantA = new Float32Array(na);
      attentionForward(want, wantA, q, k, v, B, T, NH, HS);
      const fOut = new Float32Array(n);
      attentionForward(fOut, new Float32Array(na), q, k, absOf(v), B, T, NH, HS); // Σ P |v|
      const tq = c.upload('f32', q);
      const tk = c.upload('f32', k);
      const tv = c.upload('f32', v);
      const out = poisoned(c, n);
      const att = poisoned(c, na);
      const t0 = performance.now();
      G.attentionForward(c, out, att, tq, tk, tv, B, T, NH, HS);
      const got = await readOut(c, out, n);
      const ms = performance.now() - t0;
      const gotA = await readOut(c, att, na);
      expect(record('attentionForward out', shape, got, want, fOut, 2e-5, ms)).toBeLessThanOrEqual(2e-5);
      expect(record('attentionForward att', shape, gotA, wantA, 1e-4, 2e-5)).toBeLessThanOrEqual(2e-5);

      const dout = rand(rng, n);
      const i0 = [rand(rng, n), rand(rng, n), rand(rng, n)] as const;
      const wq = i0[0].slice();
      const wk = i0[1].slice();
      const wv = i0[2].slice();
      attentionBackward(wq, wk, wv, dout, q, k, v, wantA, B, T, NH, HS);
      // floors: the same sums over |terms| (header of src/backend/cpu/attention.ts), in f64.
      const fq = Float64Array.from(i0[0], Math.abs);
      const fk = Float64Array.from(i0[1], Math.abs);
      const fv = Float64Array.from(i0[2], Math.abs);
      const scale = 1 / Math.sqrt(HS);
      for (let b = 0; b < B; b++) {
        for (let h = 0; h < NH; h++) {
          for (let t = 0; t < T; t++) {
            const row = (b * T + t) * C + h * HS;
            const a0 = ((b * NH + h) * T + t) * T;
            const dp = new Float64Array(t + 1);
            let dot = 0;
            for (let t2 = 0; t2 <= t; t2++) {
              const col = (b * T + t2) * C + h * HS;
              for (let i = 0; i < HS; i++) dp[t2]! += Math.abs(dout[row + i]! * v[col + i]!);
              dot += wantA[a0 + t2]! * dp[t2]!;
            }
            for (let t2 = 0; t2 <= t; t2++) {
              const col = (b * T + t2) * C + h * HS;
              const P = wantA[a0 + t2]!;
              const ds = P * (dp[t2]! + dot) * scale;
              for (let i = 0; i < HS; i++) {
                fq[row + i]! += ds * Math.abs(k[col + i]!);
                fk[col + i]! += ds * Math.abs(q[row + i]!);
                fv[col + i]! += P * Math.abs(dout[row + i]!);
              }
            }
          }
        }
      }
      const dq = poisoned(c, n, i0[0]);
      const dk = poisoned(c, n, i0[1]);
      const dv = poisoned(c, n, i0[2]);
      G.attentionBackward(c, dq, dk, dv, c.upload('f32', dout), tq, tk, tv, c.upload('f32', wantA), B, T, NH, HS);
      expect(record('attentionBackward dq', shape, await readOut(c, dq, n), wq, fq, 2e-5)).toBeLessThanOrEqual(2e-5);
      expect(record('attentionBackward dk', shape, await readOut(c, dk, n), wk, fk, 2e-5)).toBeLessThanOrEqual(2e-5);
      expect(record('attentionBackward dv', shape, await readOut(c, dv, n), wv, fv, 2e-5)).toBeLessThanOrEqual(2e-5);
    });
  }

  // Every numbered variant of the full forward (src/backend/webgpu/attention.ts) on the same
  // check as the default above: the cases above, plus ones that cross v2's blocks of query rows
  // and key tiles (T 70, 45), its largest head (HS 64), odd head sizes (5, 3) and a head past v2's
  // limit (HS 68: v2 falls back to v1); each run twice, bit for bit (deterministic).
  for (const variant of G.ATTENTION_VARIANTS) {
    for (const [B, T, NH, HS] of [[2, 13, 3, 8], [1, 1, 2, 5], [1, 70, 1, 24], [2, 45, 2, 64], [1, 33, 3, 3], [1, 17, 1, 68]] as const) {
      it(`attentionForward ${variant} B=${B} T=${T} NH=${NH} HS=${HS}`, async () => {
        const C = NH * HS;
        const n = B * T * C;
        const na = B * NH * T * T;
        const shape = `B${B} T${T} NH${NH} HS${HS}`;
        const q = rand(rng, n, -1.5, 1.5);
        const k = rand(rng, n, -1.5, 1.5);
        const v = rand(rng, n);
        const want = new Float32Array(n);
        const wantA = new Float32Array(na);
        attentionForward(want, wantA, q, k, v, B, T, NH, HS);
        const fOut = new Float32Array(n);
        attentionForward(fOut, new Float32Array(na), q, k, absOf(v), B, T, NH, HS); // Σ P |v|
        const [tq, tk, tv] = [q, k, v].map((x) => c.upload('f32', x)) as [G.GpuTensor<'f32'>, G.GpuTensor<'f32'>, G.GpuTensor<'f32'>];
        const runs: Float32Array[][] = [];
        for (let r = 0; r < 2; r++) {
          const out = poisoned(c, n);
          const att = poisoned(c, na);
          const t0 = performance.now();
          G.attentionForward(c, out, att, tq, tk, tv, B, T, NH, HS, variant);
          const got = await readOut(c, out, n);
          const ms = performance.now() - t0;
          const gotA = await readOut(c, att, na);
          runs.push([got, gotA]);
          if (r > 0) continue;
          expect(record(`attentionForward ${variant} out`, shape, got, want, fOut, 2e-5, ms)).toBeLessThanOrEqual(2e-5);
          expect(record(`attentionForward ${variant} att`, shape, gotA, wantA, 1e-4, 2e-5)).toBeLessThanOrEqual(2e-5);
        }
        expect(new Uint32Array(runs[1]![0]!.buffer, runs[1]![0]!.byteOffset, n)).toEqual(new Uint32Array(runs[0]![0]!.buffer, runs[0]![0]!.byteOffset, n));
        expect(new Uint32Array(runs[1]![1]!.buffer, runs[1]![1]!.byteOffset, na)).toEqual(new Uint32Array(runs[0]![1]!.buffer, runs[0]![1]!.byteOffset, na));
      });
    }
  }

  for (const [B, NH, HS, Tmax, split] of [[2, 3, 8, 16, 9], [1, 2, 5, 7, 6]] as const) {
    it(`kvCacheWrite / attentionCachedForward B=${B} NH=${NH} HS=${HS} Tmax=${Tmax}`, async () => {
      // Prefill `split` positions, then one decoding step at pos0 = split; compare each with the CPU
      // and the cached rows with the GPU's own full forward over the same positions (bit for bit:
      // same shader, same order).
      const C = NH * HS;
      const T = split + 1;
      const shape = `B${B} NH${NH} HS${HS} Tmax${Tmax} pos0 ${split}`;
      const q = rand(rng, B * T * C, -1.5, 1.5);
      const k = rand(rng, B * T * C, -1.5, 1.5);
      const v = rand(rng, B * T * C);
      const rows = (src: Float32Array, t0: number, t1: number): Float32Array => {
        const o = new Float32Array(B * (t1 - t0) * C);
        for (let b = 0; b < B; b++) o.set(src.subarray((b * T + t0) * C, (b * T + t1) * C), b * (t1 - t0) * C);
        return o;
      };
      const cacheInit = rand(rng, B * Tmax * C);
      const wantK = cacheInit.slice();
      const wantV = cacheInit.map((x) => -x);
      const kc = poisoned(c, B * Tmax * C, wantK);
      const vc = poisoned(c, B * Tmax * C, wantV);
      const outs: Float32Array[] = [];
      const wants: Float32Array[] = [];
      const floors: Float32Array[] = [];
      const t0 = performance.now();
      for (const [p0, p1] of [[0, split], [split, T]] as const) {
        const Tn = p1 - p0;
        const [qs, ks, vs] = [rows(q, p0, p1), rows(k, p0, p1), rows(v, p0, p1)];
        kvCacheWrite(wantK, wantV, ks, vs, B, Tn, C, p0, Tmax);
        G.kvCacheWrite(c, kc, vc, c.upload('f32', ks), c.upload('f32', vs), B, Tn, C, p0, Tmax);
        const want = new Float32Array(B * Tn * C);
        attentionCachedForward(want, qs, wantK, wantV, B, Tn, NH, HS, p0, Tmax);
        const fl = new Float32Array(B * Tn * C);
        attentionCachedForward(fl, qs, wantK, absOf(wantV), B, Tn, NH, HS, p0, Tmax);
        const out = poisoned(c, B * Tn * C);
        G.attentionCachedForward(c, out, c.upload('f32', qs), kc, vc, B, Tn, NH, HS, p0, Tmax);
        outs.push(await readOut(c, out, B * Tn * C));
        wants.push(want);
        floors.push(fl);
      }
      const ms = performance.now() - t0;
      expect(record('kvCacheWrite k', shape, await readOut(c, kc, B * Tmax * C), wantK, 1e-30, 0)).toBe(0);
      expect(record('kvCacheWrite v', shape, await readOut(c, vc, B * Tmax * C), wantV, 1e-30, 0)).toBe(0);
      for (let i = 0; i < 2; i++) {
        expect(record(`attentionCachedForward ${i === 0 ? 'prefill' : 'step'}`, shape, outs[i]!, wants[i]!, floors[i]!, 2e-5, i === 0 ? ms : 0)).toBeLessThanOrEqual(2e-5);
      }
      const full = poisoned(c, B * T * C);
      // v1: the cached forward runs attention.wgsl, so only v1's full forward matches it bit for bit.
      G.attentionForward(c, full, c.zeros('f32', B * NH * T * T), c.upload('f32', q), c.upload('f32', k), c.upload('f32', v), B, T, NH, HS, 'v1');
      const gotFull = await readOut(c, full, B * T * C);
      const cached = new Float32Array(B * T * C);
      for (let b = 0; b < B; b++) {
        cached.set(outs[0]!.subarray(b * split * C, (b + 1) * split * C), b * T * C);
        cached.set(outs[1]!.subarray(b * C, (b + 1) * C), (b * T + split) * C);
      }
      expect(record('attentionCached = full (GPU)', shape, cached, gotFull, 1e-30, 0)).toBe(0);
    });
  }

  for (const N of [1, 67, 1000]) {
    it(`residual / swiglu N=${N}`, async () => {
      const shape = `N${N}`;
      const a = rand(rng, N, -4, 4);
      const b = rand(rng, N, -2, 2);
      const s = 0.37;
      const ta = c.upload('f32', a);
      const tb = c.upload('f32', b);

      const want = new Float32Array(N);
      residualForward(want, a, b, N, s);
      const fR = Float64Array.from(a, (x, i) => Math.abs(x) + Math.abs(s * b[i]!));
      const out = poisoned(c, N);
      const t0 = performance.now();
      G.residualForward(c, out, ta, tb, N, s);
      expect(record('residualForward', shape, await readOut(c, out, N), want, fR, 1e-6, performance.now() - t0)).toBeLessThanOrEqual(1e-6);
      const inpl = poisoned(c, N, a); // out = out + s·b, as LoRA adds in place
      G.residualForward(c, inpl, inpl, tb, N, s);
      expect(record('residualForward in place', shape, await readOut(c, inpl, N), want, fR, 1e-6)).toBeLessThanOrEqual(1e-6);

      const dout = rand(rng, N);
      const ia = rand(rng, N);
      const ib = rand(rng, N);
      const wa = ia.slice();
      const wb = ib.slice();
      residualBackward(wa, wb, dout, N, s);
      const td = c.upload('f32', dout);
      const da = poisoned(c, N, ia);
      const db = poisoned(c, N, ib);
      G.residualBackward(c, da, db, td, N, s);
      const fa = Float64Array.from(ia, (x, i) => Math.abs(x) + Math.abs(dout[i]!));
      const fb = Float64Array.from(ib, (x, i) => Math.abs(x) + Math.abs(s * dout[i]!));
      expect(record('residualBackward da', shape, await readOut(c, da, N), wa, fa, 1e-6)).toBeLessThanOrEqual(1e-6);
      expect(record('residualBackward db', shape, await readOut(c, db, N), wb, fb, 1e-6)).toBeLessThanOrEqual(1e-6);
      const db2 = poisoned(c, N, ib);
      G.residualBackward(c, null, db2, td, N, s);
      expect(record('residualBackward db only', shape, await readOut(c, db2, N), wb, fb, 1e-6)).toBeLessThanOrEqual(1e-6);

      const wantS = new Float32Array(N);
      swigluForward(wantS, a, b, N);
      const sig = (x: number) => 1 / (1 + Math.exp(-x));
      const fS = Float64Array.from(a, (x, i) => Math.abs(x * sig(x) * b[i]!));
      const outS = poisoned(c, N);
      G.swigluForward(c, outS, ta, tb, N);
      expect(record('swigluForward', shape, await readOut(c, outS, N), wantS, fS, 1e-5)).toBeLessThanOrEqual(1e-5);

      const wsa = ia.slice();
      const wsb = ib.slice();
      swigluBackward(wsa, wsb, dout, a, b, N);
      const fsa = Float64Array.from(ia, (x, i) => {
        const sg = sig(a[i]!);
        return Math.abs(x) + Math.abs(dout[i]! * b[i]!) * sg * (1 + Math.abs(a[i]!) * (1 - sg));
      });
      const fsb = Float64Array.from(ib, (x, i) => Math.abs(x) + Math.abs(dout[i]! * a[i]! * sig(a[i]!)));
      const sa = poisoned(c, N, ia);
      const sb = poisoned(c, N, ib);
      G.swigluBackward(c, sa, sb, td, ta, tb, N);
      expect(record('swigluBackward da', shape, await readOut(c, sa, N), wsa, fsa, 1e-5)).toBeLessThanOrEqual(1e-5);
      expect(record('swigluBackward db', shape, await readOut(c, sb, N), wsb, fsb, 1e-5)).toBeLessThanOrEqual(1e-5);
    });
  }

  it('the reducing backward kernels are deterministic: same inputs, same bits, run after run', async () => {
    // No float atomics anywhere: embeddingBackward, rmsnormBackward (dinp and dweight) and
    // attentionBackward sum in a fixed order, so three runs must agree bit for bit.
    const B = 2, T = 19, NH = 2, HS = 6, V = 5;
    const C = NH * HS;
    const N = B * T;
    const n = N * C;
    const up = (a: Float32Array) => c.upload('f32', a);
    const [x, dout, q, k, v, w, init] = [rand(rng, n), rand(rng, n), rand(rng, n), rand(rng, n), rand(rng, n), rand(rng, C), rand(rng, n)];
    const tokens = c.upload('i32', randInt(rng, N, V));
    const rstd = new Float32Array(N);
    rmsnormForward(new Float32Array(n), rstd, x, w, B, T, C);
    const att = new Float32Array(B * NH * T * T);
    attentionForward(new Float32Array(n), att, q, k, v, B, T, NH, HS);
    const [tx, td, tq, tk, tv, tw, tr, ta] = [x, dout, q, k, v, w, rstd, att].map(up) as [G.GpuTensor<'f32'>, G.GpuTensor<'f32'>, G.GpuTensor<'f32'>, G.GpuTensor<'f32'>, G.GpuTensor<'f32'>, G.GpuTensor<'f32'>, G.GpuTensor<'f32'>, G.GpuTensor<'f32'>];
    const runs: Float32Array[][] = [];
    for (let r = 0; r < 3; r++) {
      const dwte = up(init.subarray(0, V * C));
      const dI = up(init);
      const dW = up(init.subarray(0, C));
      const [dq, dk, dv] = [up(init), up(init), up(init)];
      G.embeddingBackward(c, dwte, td, tokens, B, T, C);
      G.rmsnormBackward(c, dI, dW, td, tx, tw, tr, B, T, C);
      G.attentionBackward(c, dq, dk, dv, td, tq, tk, tv, ta, B, T, NH, HS);
      runs.push(await Promise.all([dwte, dI, dW, dq, dk, dv].map((t) => c.download('f32', t))));
    }
    for (let r = 1; r < 3; r++) {
      for (let j = 0; j < runs[0]!.length; j++) {
        expect(new Uint32Array(runs[r]![j]!.buffer)).toEqual(new Uint32Array(runs[0]![j]!.buffer));
      }
    }
  });

  for (const [B, T, C, H] of [[2, 7, 24, 40], [1, 3, 5, 9]] as const) {
    it(`mlpForward / Backward B=${B} T=${T} C=${C} H=${H}`, async () => {
      const N = B * T;
      const shape = `N${N} C${C} H${H}`;
      const inp = rand(rng, N * C);
      const w1 = rand(rng, H * C, -0.5, 0.5);
      const w3 = rand(rng, H * C, -0.5, 0.5);
      const w2 = rand(rng, C * H, -0.5, 0.5);
      const cpu = (x: Float32Array, a1: Float32Array, a3: Float32Array, a2: Float32Array) => {
        const r = { out: new Float32Array(N * C), a: new Float32Array(N * H), b: new Float32Array(N * H), h: new Float32Array(N * H) };
        mlpForward(r.out, r.a, r.b, r.h, x, a1, a3, a2, B, T, C, H);
        return r;
      };
      const want = cpu(inp, w1, w3, w2);
      const fl = cpu(absOf(inp), absOf(w1), absOf(w3), absOf(w2)); // bounds every magnitude
      const tI = c.upload('f32', inp);
      const t1 = c.upload('f32', w1);
      const t3 = c.upload('f32', w3);
      const t2 = c.upload('f32', w2);
      const out = poisoned(c, N * C);
      const ga = poisoned(c, N * H);
      const gb = poisoned(c, N * H);
      const gh = poisoned(c, N * H);
      const t0 = performance.now();
      G.mlpForward(c, out, ga, gb, gh, tI, t1, t3, t2, B, T, C, H);
      const got = await readOut(c, out, N * C);
      const ms = performance.now() - t0;
      expect(record('mlpForward out', shape, got, want.out, fl.out, 2e-5, ms)).toBeLessThanOrEqual(2e-5);
      expect(record('mlpForward h', shape, await readOut(c, gh, N * H), want.h, fl.h, 2e-5)).toBeLessThanOrEqual(2e-5);

      const dout = rand(rng, N * C);
      const i0 = { dinp: rand(rng, N * C), dw1: rand(rng, H * C), dw3: rand(rng, H * C), dw2: rand(rng, C * H) };
      const run = (x: typeof want, xi: Float32Array, a1: Float32Array, a3: Float32Array, a2: Float32Array, d: Float32Array, absInit: boolean) => {
        const g = {
          dinp: absInit ? absOf(i0.dinp) : i0.dinp.slice(),
          dw1: absInit ? absOf(i0.dw1) : i0.dw1.slice(),
          dw3: absInit ? absOf(i0.dw3) : i0.dw3.slice(),
          dw2: absInit ? absOf(i0.dw2) : i0.dw2.slice(),
        };
        const s = () => new Float32Array(N * H);
        mlpBackward(g.dinp, g.dw1, g.dw3, g.dw2, s(), s(), s(), d, xi, x.a, x.b, x.h, a1, a3, a2, B, T, C, H);
        return g;
      };
      const wantG = run(want, inp, w1, w3, w2, dout, false);
      const flG = run(fl, absOf(inp), absOf(w1), absOf(w3), absOf(w2), absOf(dout), true);
      const g = { dinp: poisoned(c, N * C, i0.dinp), dw1: poisoned(c, H * C, i0.dw1), dw3: poisoned(c, H * C, i0.dw3), dw2: poisoned(c, C * H, i0.dw2) };
      const scratch = () => c.upload('f32', rand(rng, N * H)); // garbage: mlpBackward zeroes it
      G.mlpBackward(c, g.dinp, g.dw1, g.dw3, g.dw2, scratch(), scratch(), scratch(), c.upload('f32', dout), tI, ga, gb, gh, t1, t3, t2, B, T, C, H);
      for (const [name, len] of [['dinp', N * C], ['dw1', H * C], ['dw3', H * C], ['dw2', C * H]] as const) {
        expect(record(`mlpBackward ${name}`, shape, await readOut(c, g[name], len), wantG[name], flG[name], 2e-5)).toBeLessThanOrEqual(2e-5);
      }
      // Frozen weights (LoRA): only dinp.
      const d2 = poisoned(c, N * C, i0.dinp);
      G.mlpBackward(c, d2, null, null, null, scratch(), scratch(), scratch(), c.upload('f32', dout), tI, ga, gb, gh, t1, t3, t2, B, T, C, H);
      expect(record('mlpBackward dinp only', shape, await readOut(c, d2, N * C), wantG.dinp, flG.dinp, 2e-5)).toBeLessThanOrEqual(2e-5);
    });
  }
});
