/**
 * WebGPU infrastructure: device acquisition and loss, limits, error surfacing, the pipeline
 * cache, views, recorded uploads and batched downloads (what a step costs in submissions), and
 * 2-D workgroup grids (forced small, so that every kernel's linear-workgroup
 * arithmetic and bounds checks run on a grid that overshoots the work) checked against the
 * CPU twins.
 *
 * Not here: each kernel's numerics (softmax / matmul / objective / sample test files).
 */
import { describe, expect, it } from 'vitest';
import { matmulForward } from '../../src/backend/cpu/matmul';
import { sampleForward } from '../../src/backend/cpu/sampling';
import { gatherForward, logSoftmaxForward } from '../../src/backend/cpu/softmax';
import * as G from '../../src/backend/webgpu/index';
import { softwareFallback } from '../../src/backend/webgpu/node';
import { shaderSource } from '../../src/backend/webgpu/shaders';
import { Rng } from '../../src/core/rng';
import { absOf, gpu, poisoned, rand, randInt, readOut, relErr, runSeed } from './gpu';

const ctx = typeof gpu === 'string' ? null : gpu;
const seed = runSeed('device.test.ts');

describe('WebGPU shader sources', () => {
  it('finds shaders/<name>.wgsl and names a missing one', () => {
    expect(shaderSource('logsoftmax')).toMatch(/@compute/);
    expect(() => shaderSource('no_such_kernel')).toThrow(/shaders\/no_such_kernel\.wgsl/);
  });
  it('softwareFallback returns undefined when no SwiftShader is in the given folders', () => {
    expect(softwareFallback(['/nonexistent-dir'])).toBeUndefined();
  });
});

describe.skipIf(ctx === null)(`WebGPU device and kernel infrastructure (seed ${seed})`, () => {
  const c = ctx!;
  const rng = new Rng(seed, [5]);

  it('device loss is surfaced through onLost', async () => {
    const lost: { reason: string; message: string }[] = [];
    const res = await G.acquireDevice({ onLost: (info) => lost.push(info), node: softwareFallback() });
    expect(res.ok).toBe(true);
    if (!res.ok) return;
    res.device.destroy();
    await new Promise((r) => setTimeout(r, 50));
    for (let i = 0; i < 20 && lost.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(lost).toHaveLength(1);
    expect(lost[0]!.reason).toBe('destroyed');
  });

  it('a tensor over the storage-binding limit fails with a message naming the limit', () => {
    const lim = c.device.limits.maxStorageBufferBindingSize;
    expect(() => G.checkBufferSize(c.device, lim + 4, 'weights')).toThrow(/weights: \d+ bytes exceeds this device's maxStorageBufferBindingSize/);
    expect(() => c.zeros('f32', Math.floor(lim / 4) + 1)).toThrow(/maxStorageBufferBindingSize/);
  });

  it('shape errors are caught on the host; WebGPU errors surface at the next download', async () => {
    const t = c.zeros('f32', 10);
    expect(() => G.logSoftmaxForward(c, t, t, 3, 4)).toThrow(/logSoftmaxForward: out has 10 elements, the shape needs 12/);
    const bad = G.defineKernel({ shaders: 'logsoftmax', entry: 'no_such_entry', bindings: ['read', 'rw'] });
    c.run(bad, [G.u32(1)], [c.zeros('f32', 4), c.zeros('f32', 4)], 1);
    await expect(c.download('f32', t)).rejects.toThrow(/WebGPU error/);
    expect(() => c.run(bad, [], [t], 1)).toThrow(/2 storage bindings, got 1/);
  });

  it('in-place log-softmax (out = logits) matches; aliasing a written binding is refused with a message', async () => {
    const [N, V] = [5, 21];
    const z = rand(rng, N * V, -3, 3);
    const want = new Float32Array(N * V);
    logSoftmaxForward(want, z, N, V, 0.9);
    const t = c.upload('f32', z);
    G.logSoftmaxForward(c, t, t, N, V, 0.9);
    expect(relErr(await c.download('f32', t), want, 1).rel).toBeLessThanOrEqual(1e-5);
    expect(() => G.gatherForward(c, t, t, c.zeros('i32', N), N, V)).toThrow(/same tensor and one is written/);
  });

  it('reductions are deterministic: the same inputs give the same bits, run after run', async () => {
    const [K, V, N] = [19, 77, 4];
    const zt = c.upload('f32', rand(rng, K * V, -3, 3));
    const zr = c.upload('f32', rand(rng, K * V, -3, 3));
    const acts = c.upload('i32', randInt(rng, K, V));
    const eps = c.upload('i32', randInt(rng, K, N));
    const adv = c.upload('f32', rand(rng, N));
    const w = c.upload('f32', rand(rng, N, 0.5, 1));
    const spec = { level: 'sequence', tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.2, beta: 0.1 } as const;
    const runs: number[][] = [];
    for (let r = 0; r < 3; r++) {
      const kl = c.zeros('f32', K);
      G.klForward(c, kl, zt, zr, K, V, 1);
      const d = c.zeros('f32', K * V);
      const st = c.zeros('f32', 4);
      G.clippedLossBackward(c, d, st, zt, zr, acts, eps, adv, w, K, V, N, 5, 1, spec, -1);
      const mm = c.zeros('f32', K * K);
      G.matmulForward(c, mm, zt, zr, 1, K, V, K, 'v3');
      runs.push([...(await c.download('f32', kl)), ...(await c.download('f32', d)), ...(await c.download('f32', st)), ...(await c.download('f32', mm))]);
    }
    expect(runs[1]).toEqual(runs[0]);
    expect(runs[2]).toEqual(runs[0]);
  });

  it('compiles a pipeline once per (shaders, entry, overrides) key', () => {
    const k1 = G.defineKernel({ shaders: 'gather', bindings: ['read', 'read', 'rw'], overrides: { WG: 64 } });
    const k2 = G.defineKernel({ shaders: 'gather', bindings: ['read', 'read', 'rw'], overrides: { WG: 64 } });
    const k3 = G.defineKernel({ shaders: 'gather', bindings: ['read', 'read', 'rw'], overrides: { WG: 32 } });
    expect(c.pipeline(k1).pipeline).toBe(c.pipeline(k2).pipeline);
    expect(c.pipeline(k3).pipeline).not.toBe(c.pipeline(k1).pipeline);
  });

  it('tensors of every kind round-trip (bytes and halves packed in u32 words, odd lengths)', async () => {
    const i8 = Int8Array.from({ length: 7 }, (_, i) => i * 37 - 128);
    const u8 = Uint8Array.from({ length: 5 }, (_, i) => 250 - i);
    const u16 = Uint16Array.from({ length: 3 }, (_, i) => 65535 - i * 1000);
    expect(Array.from(await c.download('i8', c.upload('i8', i8)))).toEqual(Array.from(i8));
    expect(Array.from(await c.download('u8', c.upload('u8', u8)))).toEqual(Array.from(u8));
    expect(Array.from(await c.download('u16', c.upload('u16', u16)))).toEqual(Array.from(u16));
    const f = c.zeros('f32', 9);
    c.fill(f, 2.5);
    expect(Array.from(await c.download('f32', f))).toEqual(new Array(9).fill(2.5));
  });

  it('views bind a range of a buffer: ops, fill, download and clone see only that range; another view of a written view’s buffer is refused', async () => {
    const n = 3 * 64 + 10;
    const host = rand(rng, n);
    const flat = c.upload('f32', host);
    const a = c.view(flat, 64, 10);
    const b = c.view(flat, 192, 10);
    const zero = c.zeros('f32', 10);
    G.residualForward(c, a, zero, b, 10, 1); // flat[64..74) ← 0 + 1·flat[192..202)
    c.fill(c.view(flat, 128, 3), 7);
    c.fill(c.view(flat, 0, 2), 0);
    const want = host.slice();
    want.set(host.subarray(192, 202), 64);
    want.fill(7, 128, 131);
    want.fill(0, 0, 2);
    expect(Array.from(await c.download('f32', flat))).toEqual(Array.from(want));
    expect(Array.from(await c.download('f32', b))).toEqual(Array.from(want.subarray(192, 202)));
    expect(Array.from(await c.download('f32', c.clone(c.view(flat, 128, 5))))).toEqual(Array.from(want.subarray(128, 133)));
    expect(() => c.view(flat, 32, 4)).toThrow(/multiple of 64/);
    expect(() => c.view(flat, 192, 11)).toThrow(/outside/);
    expect(() => G.gatherForward(c, c.view(flat, 64, 2), c.view(flat, 0, 70), c.zeros('i32', 2), 2, 35)).toThrow(/same tensor and one is written/);
    // Disjoint views of one buffer are refused too: WebGPU tracks a dispatch's usage per buffer.
    expect(() => G.gatherForward(c, c.view(flat, 128, 2), c.view(flat, 0, 70), c.zeros('i32', 2), 2, 35)).toThrow(/same tensor and one is written/);
    c.dispose(a); // a view owns nothing: the pool does not get flat's buffer
    expect(c.zeros('f32', n).buffer).not.toBe(flat.buffer);
  });

  it('uploads are recorded in order with the ops (no submission), downloads of one JS task share one submission', async () => {
    const N = 37;
    const x = rand(rng, N);
    const y = rand(rng, N);
    const zero = c.zeros('f32', N);
    await c.finish();
    const c0 = c.countsNow();
    const out1 = c.zeros('f32', N);
    const out2 = c.zeros('f32', N);
    const tx = c.upload('f32', x);
    G.residualForward(c, out1, zero, tx, N, 2);
    c.dispose(tx); // its buffer goes back to the pool: the next upload reuses it, after the op above
    const ty = c.upload('f32', y);
    expect(ty.buffer).toBe(tx.buffer);
    G.residualForward(c, out2, zero, ty, N, 3);
    const [r1, r2] = await Promise.all([c.download('f32', out1), c.download('f32', out2)]);
    const d = c.countsSince(c0);
    expect(Array.from(r1)).toEqual(Array.from(x, (v) => Math.fround(2 * v)));
    expect(Array.from(r2)).toEqual(Array.from(y, (v) => Math.fround(3 * v)));
    expect(d).toMatchObject({ dispatches: 2, submissions: 1, uploads: 2, downloads: 2 });
    expect(d.byKernel).toEqual({ residual: 2 });
  });

  it('kernels on a 2-D workgroup grid that overshoots the work (max 8 per dimension)', async () => {
    const small = new G.GpuContext(c.device, { maxWorkgroupsPerDimension: 8 });
    expect(small.grid(9)).toEqual([5, 2]);
    expect(() => small.grid(65)).toThrow(/maxComputeWorkgroupsPerDimension/);
    // log-softmax: 11 rows → grid 6×2 = 12 workgroups.
    const N = 11;
    const V = 19;
    const z = rand(rng, N * V, -3, 3);
    const want = new Float32Array(N * V);
    logSoftmaxForward(want, z, N, V, 1);
    const out = poisoned(small, N * V);
    const zt = small.upload('f32', z);
    G.logSoftmaxForward(small, out, zt, N, V, 1);
    expect(relErr(await readOut(small, out, N * V), want, 1).rel).toBeLessThanOrEqual(1e-5);
    // gather with WG 64: 600 rows → 10 workgroups → grid 5×2.
    const R = 600;
    const lp = rand(rng, R * 3);
    const tg = randInt(rng, R, 3);
    const wantG = new Float32Array(R);
    gatherForward(wantG, lp, tg, R, 3);
    const g = poisoned(small, R);
    G.gatherForward(small, g, small.upload('f32', lp), small.upload('i32', tg), R, 3);
    expect(relErr(await readOut(small, g, R), wantG, 1).rel).toBe(0);
    // matmul v1 (41 workgroups → 7×6) / v2 (15 tiles → 8×2) / v3.
    const [M, C, OC] = [37, 9, 70];
    const x = rand(rng, M * C);
    const w = rand(rng, OC * C);
    const wantM = new Float32Array(M * OC);
    matmulForward(wantM, x, w, 1, M, C, OC);
    const scale = new Float32Array(M * OC);
    matmulForward(scale, absOf(x), absOf(w), 1, M, C, OC);
    for (const v of G.MATMUL_VARIANTS) {
      const o = poisoned(small, M * OC);
      G.matmulForward(small, o, small.upload('f32', x), small.upload('f32', w), 1, M, C, OC, v);
      expect(relErr(await readOut(small, o, M * OC), wantM, scale).rel, v).toBeLessThanOrEqual(1e-5);
    }
    // sampling: 13 rows → 7×2.
    const B = 13;
    const lg = rand(rng, B * 17, -2, 2);
    const sp = { seed: 7, stream: 11, step: 3, temperature: 1, topK: 4, seq0: 5 };
    const wantS = new Int32Array(B);
    sampleForward(wantS, lg, B, 17, sp);
    const s = small.upload('i32', new Int32Array(B).fill(-1));
    G.sampleForward(small, s, small.upload('f32', lg), B, 17, sp);
    expect(Array.from(await small.download('i32', s))).toEqual(Array.from(wantS));
  });
});
