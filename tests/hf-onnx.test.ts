/**
 * (c) of the checkpoint tests: a Hugging Face Llama checkpoint loaded by src/model/hfLoad.ts,
 * exported to ONNX (bench/onnx/export.ts) and run by onnxruntime-web's wasm provider in Node,
 * reproduces Model.forward's logits (cpuBackend) — for a GQA checkpoint with an untied head and
 * for a tied BF16 one loaded Q8 (ONNX gets its dequantized weights, as tests/onnx.test.ts does).
 * Tolerance 1e-4 of max |logit|, for the reasons tests/onnx.test.ts gives (ORT sums in f32, we in
 * f64; a real bug moves logits by 1e-2 … 1). A tiny random checkpoint from
 * tests/helpers/hfCheckpoint.ts; nothing is downloaded.
 */
import * as ort from 'onnxruntime-web';
import { beforeAll, describe, expect, it } from 'vitest';
import { exportOnnx } from '../bench/onnx/export';
import { cpuBackend } from '../src/backend/cpu';
import { Rng } from '../src/core/rng';
import { loadHfCheckpoint } from '../src/model/hfLoad';
import { Model } from '../src/model/model';
import { dequantizeWeights } from '../src/model/weights';
import { hfCheckpoint, type HfSpec } from './helpers/hfCheckpoint';

const B = 2;
const T = 12;
const TOL = 1e-4;

beforeAll(() => {
  ort.env.wasm.numThreads = 1;
});

describe('ONNX export of a loaded checkpoint (c)', () => {
  const cases: [string, HfSpec, 'f32' | 'q8'][] = [
    ['GQA 4/2, untied, F32', { kvHeads: 2, tied: false }, 'f32'],
    ['MHA 4/4, tied, BF16, loaded Q8', { kvHeads: 4, tied: true, dtype: 'BF16' }, 'q8'],
  ];
  it.each(cases)('%s: onnxruntime-web logits = Model.forward within 1e-4', async (label, spec, quant) => {
    const m = await loadHfCheckpoint(hfCheckpoint(spec).files, { quant });
    const model = new Model(cpuBackend, m.cfg, m.weights, { trainable: 'none' });
    const r = new Rng(11, [B, T]);
    const tokens = Int32Array.from({ length: B * T }, () => r.int(m.cfg.vocab));
    const want = model.forward(tokens, B, T).slice(0, B * T * m.cfg.vocab);
    const sess = await ort.InferenceSession.create(exportOnnx(m.cfg, dequantizeWeights(m.weights), T), { executionProviders: ['wasm'] });
    const out = await sess.run({ tokens: new ort.Tensor('int64', BigInt64Array.from(tokens, (x) => BigInt(x)), [B, T]) });
    const got = out.logits!.data as Float32Array;
    expect(got.length).toBe(want.length);
    let d = 0;
    let s = 0;
    for (let i = 0; i < want.length; i++) {
      d = Math.max(d, Math.abs(got[i]! - want[i]!));
      s = Math.max(s, Math.abs(want[i]!));
    }
    console.log(`HF checkpoint ${label}: ORT vs Model.forward max |Δ| ${d.toExponential(2)}, max |z| ${s.toFixed(2)}, rel ${(d / s).toExponential(2)}`);
    expect(d / s).toBeLessThanOrEqual(TOL);
    await sess.release();
    model.dispose();
  });
});
