/**
 * Tests for the ONNX export (bench/onnx/export.ts): the exported graph, run by onnxruntime-web's wasm
 * provider in Node (the same package the app ships; no download: ORT finds its .wasm next to its
 * own module in node_modules/onnxruntime-web/dist), must reproduce the logits of `Model.forward`
 * (src/model/model.ts) on the f32 CPU backend (`cpuBackend`).
 *
 * Models (MODEL_PRESETS.S: vocab 64, d 32, 2 layers, 4 heads, hidden 96):
 *   random   initWeights as is (tok_emb std 0.02, so the logits are small, ~0.4);
 *   trained  40 steps of trainOnSequences (src/model/loss.ts, lr 1e-2) on a repeating pattern, so
 *            the weights have moved off their init and the logits are O(1–10);
 *   q8       the trained model quantized to Q8: the Model runs the Q8 base ('none' mode), ONNX
 *            gets dequantizeWeights of it;
 *   bench    BENCH_100K's shape (vocab 40, hidden 172 — not a multiple of 32) from random init.
 * Each runs random tokens B = 3, T = 16, and the check is max |ours − ORT| / max |ours| (the
 * error relative to the logits' scale; a per-element relative error would blow up on logits
 * near 0), tolerance 1e-4. Why 1e-4: ours sums every dot product in f64 and rounds once, ORT
 * sums in f32 (MLAS SGEMM, FMA order unknown), so each of the ~20 chained ops adds a few ulps
 * (2⁻²⁴ ≈ 6e-8) times √(inner dim); the expected difference is ~1e-6 relative, and 1e-4 leaves
 * ~100× headroom. A real export bug — a RoPE sign or pair, a missing mask, an untransposed
 * matrix, a wrong ε — moves the logits by 1e-2 … 1 relative, far outside it. The max abs diff is
 * printed too.
 *
 * A negative control shows the tolerance catches a subtle bug: exporting with θ = 5000 instead of
 * 10000 (only the rotation speeds change) must differ by more than 100 × the tolerance.
 *
 * Also: the batch dimension is dynamic (one session runs B = 1 and B = 3), the graph is causal
 * (changing the last token leaves the earlier positions' ORT logits unchanged), the RoPE constants
 * x ⊙ COS + (x·P) ⊙ SIN equal ropeForward (the interleaved-pair convention) to f32 rounding, the
 * encoder's varints (300, −1), and the export's ConfigErrors (quantized weights, T ∉ [1, maxSeq]).
 *
 * Seeds are fixed (Rng(17, [...]) with a distinct path per model), so everything is deterministic.
 */
import * as ort from 'onnxruntime-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpuBackend, ropeForward, ropeTable } from '../src/backend/cpu';
import { ConfigError } from '../src/core/errors';
import { Rng } from '../src/core/rng';
import { BENCH_100K, MODEL_PRESETS, modelConfig, type ModelConfig } from '../src/model/config';
import { exportOnnx, ropeConstants } from '../bench/onnx/export';
import { varint } from '../bench/onnx/protobuf';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import { dequantizeWeights, initWeights, quantizeWeights, type ModelWeights } from '../src/model/weights';

const SEED = 17;
const B = 3;
const T = 16;
const TOL = 1e-4;
const rng = (...path: number[]): Rng => new Rng(SEED, path);

/** [model, max abs diff, max |logit|, rel = abs / max |logit|, the bound], printed at the end. */
const measured: [string, number, number, number, string][] = [];
afterAll(() => {
  const rows = measured.map(([l, a, m, r, bound]) => `${l.padEnd(24)} ${a.toExponential(2).padStart(9)} ${m.toFixed(3).padStart(9)} ${r.toExponential(2).padStart(9)}  ${bound}`);
  console.log(`ONNX (onnxruntime-web wasm) vs Model.forward (cpuBackend), B = ${B}, T = ${T}:\n${'model'.padEnd(24)} ${'max |Δ|'.padStart(9)} ${'max |z|'.padStart(9)} ${'rel'.padStart(9)}\n${rows.join('\n')}`);
});

beforeAll(() => {
  // One wasm thread: deterministic, and no worker threads inside the test worker.
  ort.env.wasm.numThreads = 1;
});

function randomTokens(n: number, V: number, r: Rng): Int32Array {
  return Int32Array.from({ length: n }, () => r.int(V));
}

function session(bytes: Uint8Array): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(bytes, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
}

async function runOrt(sess: ort.InferenceSession, tokens: Int32Array, b: number, t: number): Promise<Float32Array> {
  const input = new ort.Tensor('int64', BigInt64Array.from(tokens, (x) => BigInt(x)), [b, t]);
  const out = await sess.run({ tokens: input });
  const logits = out.logits;
  if (!logits) throw new Error('ORT returned no "logits" output');
  expect(logits.dims).toEqual([b, t, (logits.data as Float32Array).length / (b * t)]);
  return logits.data as Float32Array;
}

/** The f32 CPU model over `w` (inference only). */
const inference = (cfg: ModelConfig, w: ModelWeights): Model => new Model(cpuBackend, cfg, w, { trainable: 'none' });

function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]!));
  return m;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** Exports `onnxWeights`, runs ORT and `model` on the same tokens, records and checks the error. */
async function parity(label: string, cfg: ModelConfig, model: Model, onnxWeights: ModelWeights, tokens: Int32Array): Promise<void> {
  const sess = await session(exportOnnx(cfg, onnxWeights, T));
  const got = await runOrt(sess, tokens, B, T);
  const want = model.forward(tokens, B, T).subarray(0, B * T * cfg.vocab); // the model's buffer may be longer
  expect(got.length).toBe(B * T * cfg.vocab);
  const abs = maxAbsDiff(got, want);
  const scale = maxAbs(want);
  measured.push([label, abs, scale, abs / scale, `≤ ${TOL.toExponential(0)}`]);
  expect(abs / scale, label).toBeLessThanOrEqual(TOL);
  await sess.release();
}

/** initWeights, then `steps` next-token steps on a repeating pattern; returns the f32 weights. */
async function trainedWeights(cfg: ModelConfig, r: Rng, steps: number): Promise<ModelWeights> {
  const model = new Model(cpuBackend, cfg, initWeights(cfg, r.fork(0)), { trainable: 'full' });
  const Bt = 8;
  const Tt = 32;
  const data = r.fork(1);
  for (let s = 0; s < steps; s++) {
    const tokens = new Int32Array(Bt * Tt);
    for (let b = 0; b < Bt; b++) {
      const off = data.int(5);
      for (let t = 0; t < Tt; t++) tokens[b * Tt + t] = 4 + ((off + 3 * t) % 11); // no PAD targets
    }
    await trainOnSequences(model, tokens, Bt, Tt, { lr: 1e-2 });
  }
  return model.exportWeights();
}

describe('exportOnnx parity with Model.forward (onnxruntime-web, wasm)', () => {
  const cfg = MODEL_PRESETS.S;
  let trained: ModelWeights;
  beforeAll(async () => {
    trained = await trainedWeights(cfg, rng(1), 40);
  });

  it('random init (MODEL_PRESETS.S)', async () => {
    const w = initWeights(cfg, rng(0));
    await parity('S random', cfg, inference(cfg, w), w, randomTokens(B * T, cfg.vocab, rng(0, 1)));
  });

  it('trained (40 AdamW steps)', async () => {
    const model = inference(cfg, trained);
    const tokens = randomTokens(B * T, cfg.vocab, rng(1, 2));
    expect(maxAbs(model.forward(tokens, B, T))).toBeGreaterThan(1); // the weights did move
    await parity('S trained', cfg, model, trained, tokens);
  });

  it('Q8: ONNX of the dequantized weights vs the Model on the Q8 base', async () => {
    const q8 = quantizeWeights(cfg, trained, 'q8');
    expect(q8.get('layers.0.wq')!.dtype).toBe('q8');
    await parity('S trained, Q8', cfg, inference(cfg, q8), dequantizeWeights(q8), randomTokens(B * T, cfg.vocab, rng(2)));
  });

  it('BENCH_100K shape (vocab 40, hidden 172)', async () => {
    const c = BENCH_100K;
    const w = initWeights(c, rng(3));
    await parity('BENCH_100K random', c, inference(c, w), w, randomTokens(B * T, c.vocab, rng(3, 1)));
  });

  it('would catch a RoPE error: θ = 5000 in the export moves the logits far outside the tolerance', async () => {
    const wrong = modelConfig({ ...cfg, ropeTheta: 5000 });
    const sess = await session(exportOnnx(wrong, trained, T));
    const tokens = randomTokens(B * T, cfg.vocab, rng(6));
    const got = await runOrt(sess, tokens, B, T);
    const want = inference(cfg, trained).forward(tokens, B, T);
    const rel = maxAbsDiff(got, want) / maxAbs(want);
    measured.push(['S trained, θ 5000 (bug)', maxAbsDiff(got, want), maxAbs(want), rel, `> ${(100 * TOL).toExponential(0)} (must be caught)`]);
    expect(rel).toBeGreaterThan(100 * TOL);
    await sess.release();
  });

  it('has a dynamic batch and is causal', async () => {
    const sess = await session(exportOnnx(cfg, trained, T));
    const tokens = randomTokens(B * T, cfg.vocab, rng(4));
    const all = await runOrt(sess, tokens, B, T);
    const V = cfg.vocab;
    // B = 1 on the second row gives that row's logits (no cross-row mixing, batch not fixed).
    const one = await runOrt(sess, tokens.slice(T, 2 * T), 1, T);
    expect(maxAbsDiff(one, all.subarray(T * V, 2 * T * V))).toBeLessThanOrEqual(1e-6 * maxAbs(one));
    // Changing the last token of each row leaves positions 0..T−2 unchanged.
    const changed = tokens.slice();
    for (let b = 0; b < B; b++) changed[b * T + T - 1] = (changed[b * T + T - 1]! + 1) % V;
    const after = await runOrt(sess, changed, B, T);
    for (let b = 0; b < B; b++) {
      const lo = b * T * V;
      const hi = lo + (T - 1) * V;
      expect(maxAbsDiff(after.subarray(lo, hi), all.subarray(lo, hi))).toBe(0);
      expect(maxAbsDiff(after.subarray(hi, hi + V), all.subarray(hi, hi + V))).toBeGreaterThan(0);
    }
    await sess.release();
  });
});

describe('exportOnnx inputs and the protobuf encoder', () => {
  it('x ⊙ COS + (x·P) ⊙ SIN equals ropeForward (the interleaved-pair convention)', () => {
    const [Tr, NH, HS] = [9, 3, 8];
    const r = rng(7);
    const x = Float32Array.from({ length: Tr * NH * HS }, () => r.normal());
    const want = new Float32Array(x.length);
    ropeForward(want, x, ropeTable(Tr, HS, 10000), 1, Tr, NH, HS, 0);
    const { cos, sin, perm } = ropeConstants(Tr, HS, 10000);
    let worst = 0;
    for (let t = 0; t < Tr; t++) {
      for (let h = 0; h < NH; h++) {
        const base = (t * NH + h) * HS;
        for (let j = 0; j < HS; j++) {
          let xp = 0;
          for (let i = 0; i < HS; i++) xp += x[base + i]! * perm[i * HS + j]!;
          const y = Math.fround(Math.fround(x[base + j]! * cos[t * HS + j]!) + Math.fround(xp * sin[t * HS + j]!));
          worst = Math.max(worst, Math.abs(y - want[base + j]!));
        }
      }
    }
    expect(worst).toBeLessThanOrEqual(1e-6);
  });

  it('encodes varints as protobuf does (300, −1 as 10-byte two’s complement)', () => {
    expect([...varint(0)]).toEqual([0]);
    expect([...varint(300)]).toEqual([0xac, 0x02]);
    expect([...varint(-1)]).toEqual([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
  });

  it('rejects quantized weights and T outside [1, maxSeq]', () => {
    const cfg = MODEL_PRESETS.S;
    const w = initWeights(cfg, rng(5));
    expect(() => exportOnnx(cfg, quantizeWeights(cfg, w, 'q8'), T)).toThrow(ConfigError);
    expect(() => exportOnnx(cfg, quantizeWeights(cfg, w, 'q8'), T)).toThrow(/dequantizeWeights/);
    expect(() => exportOnnx(cfg, w, cfg.maxSeq + 1)).toThrow(ConfigError);
    expect(() => exportOnnx(cfg, w, 0)).toThrow(ConfigError);
  });
});
