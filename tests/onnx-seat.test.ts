/**
 * The trainable ONNX seat (src/sat/onnxSeat.ts): the initializers mapped into our model and the
 * same file run by onnxruntime-web (wasm, in Node) agree on next-token log-probabilities over the
 * preset's own prompts — for every storage and naming the exporter writes (f32, f16, 8-bit
 * DequantizeLinear, 4-bit MatMulNBits; optimum and onnxruntime-genai names; external data; GQA and
 * multi-head; tied and untied) — within ONNX_PARITY_TOLERANCE, printed; a subtly wrong mapping
 * (the RoPE rows of one layer's queries permuted once more) is refused with the numbers; the
 * graph's KV cache gives the same logits as the full forward; the memory estimate refuses before
 * any weight is decoded.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../src/core/errors';
import { permuteRopeRows } from '../src/model/hfLoad';
import { loadOnnxLlama } from '../src/model/onnx/llama';
import { OrtDecoder } from '../src/model/onnx/ort';
import { checkParity, ONNX_PARITY_TOLERANCE, onnxParity } from '../src/model/onnx/parity';
import { readOnnx } from '../src/model/onnx/read';
import { onnxSeatPrompts, seatOnnxTrainable } from '../src/sat/onnxSeat';
import { presetConfig } from '../src/sat/presets';
import { onnxFolder } from './helpers/onnxFolder';

const settings = presetConfig('arith-team', { agents: 2, batch: 2, group: 2, evalEpisodes: 8, maxNew: 6 });

describe('trainable ONNX seat: onnxruntime-web against the mapped model', () => {
  const cases: [string, Parameters<typeof onnxFolder>[0], Parameters<typeof onnxFolder>[1]][] = [
    ['f32, GQA 4/2, untied, optimum', { kvHeads: 2 }, { weights: 'f32' }],
    ['f16, MHA, tied, genai', { kvHeads: 4, tied: true }, { weights: 'f16', naming: 'genai' }],
    ['8-bit, GQA, external data', { kvHeads: 2 }, { weights: 'q8', external: true }],
    ['4-bit MatMulNBits, GQA 4/1, tied, genai, external data', { kvHeads: 1, tied: true }, { weights: 'q4', naming: 'genai', external: true }],
  ];
  it.each(cases)('%s: within the tolerance', async (label, spec, o) => {
    const f = onnxFolder(spec, o);
    const seat = await seatOnnxTrainable(f.files, f.file, settings, 1, { quant: 'q8', maxSeq: 64 });
    console.log(`ONNX seat ${label}: largest |Δ log p| ${seat.parity.maxAbs.toExponential(2)} nats over ${seat.parity.prompts} prompts (tolerance ${ONNX_PARITY_TOLERANCE})`);
    expect(seat.parity.prompts).toBe(4);
    expect(seat.parity.maxAbs).toBeLessThan(1e-4);
    expect(seat.model.weights.get('layers.0.wq')!.dtype).toBe('q8');
  });

  it('a subtly wrong mapping (one layer\'s query rows permuted once more) is refused with the numbers', async () => {
    const f = onnxFolder({ kvHeads: 2 }, { weights: 'f32' });
    const m = await loadOnnxLlama(f.files, f.file, { maxSeq: 64 });
    const bad = new Map(m.exact);
    const wq = bad.get('layers.1.wq')!;
    if (wq.dtype !== 'f32') throw new Error('f32 expected');
    bad.set('layers.1.wq', { ...wq, data: permuteRopeRows(wq.data, 4, 16, 64) });
    const dec = await OrtDecoder.create(f.files, readOnnx(f.files, f.file));
    const prompts = onnxSeatPrompts(settings, m.tokenizer, 1, 63);
    const good = await onnxParity(dec, m.cfg, m.exact, prompts);
    const p = await onnxParity(dec, m.cfg, bad, prompts);
    await dec.release();
    console.log(`negative control: right mapping ${good.maxAbs.toExponential(2)}, wrong RoPE rows in one layer ${p.maxAbs.toExponential(2)} nats`);
    expect(p.maxAbs).toBeGreaterThan(10 * ONNX_PARITY_TOLERANCE);
    expect(() => checkParity(p, f.file)).toThrow(ConfigError);
    expect(() => checkParity(p, f.file)).toThrow(/disagree — the largest difference of next-token log-probabilities is \d\.\d+e[-+]\d+ nats \(prompt \d+, token \d+\), past the tolerance of 0\.01 nats/);
    expect(() => checkParity(good, f.file)).not.toThrow();
  });

  it('the graph\'s KV cache gives the full forward\'s logits (so the frozen seat\'s sampler runs the model it says)', async () => {
    const f = onnxFolder({ kvHeads: 2 }, { weights: 'q4' });
    const dec = await OrtDecoder.create(f.files, readOnnx(f.files, f.file));
    // Greedy decoding with the cache, then the whole sequence at once: each sampled token is the argmax of the full forward's row.
    const prompt = Int32Array.of(261, 40, 41, 42);
    const argmax = (z: Float32Array): number => z.reduce((best, v, i) => (v > z[best]! ? i : best), 0);
    const r = await dec.sample(prompt, { maxNew: 6, stop: -1, pick: argmax });
    expect(r.tokens.length).toBe(6);
    const all = Int32Array.from([...prompt, ...r.tokens]);
    const { logits, V } = await dec.logits(all);
    for (let k = 0; k < r.tokens.length; k++) {
      const row = logits.subarray((prompt.length - 1 + k) * V, (prompt.length + k) * V);
      let best = 0;
      for (let i = 1; i < V; i++) if (row[i]! > row[best]!) best = i;
      expect(r.tokens[k]).toBe(best);
    }
    await dec.release();
  });

  it('the memory estimate refuses before any weight is decoded', async () => {
    const f = onnxFolder({ kvHeads: 2 }, { weights: 'f32' });
    const phases: string[] = [];
    let err: unknown;
    try {
      await loadOnnxLlama(f.files, f.file, { onProgress: (p) => phases.push(p.phase), memory: { limitBytes: 1 << 20, loraRank: 8, where: 'the test', sequences: 64, seqLen: 64 } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).key).toBe('memory');
    expect((err as Error).message).toMatch(/needs about .* but the test allows 1\.0 MiB/);
    expect(phases).toEqual(['reading']); // nothing converted
  });
});
