/**
 * Tests for the model file layer (src/model): configs and parameter counts, safetensors read/write
 * and every error path of the reader, Q8/Q4 quantization bounds and layouts, the model file
 * (save → load, and each way a file can be wrong, including the regressions the fuzzer in
 * tests/fuzz.test.ts found: deeply nested shapes and metadata, messages quoting a file at any
 * length), the char tokenizer, the model card, and LoRA state (zero initial delta, merge/unmerge).
 *
 * Seeds: Rng(1234) for weights and data unless stated at the use. Deterministic throughout.
 * Not here: the forward/backward pass (tests of src/backend).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, FormatError, NumericError } from '../src/core/errors';
import { f16ToF32, f32ToF16 } from '../src/core/f16';
import { Rng } from '../src/core/rng';
import { cardFromJson, cardToJson, makeCard, validateCard, type ModelCard } from '../src/model/card';
import {
  BENCH_100K,
  BENCH_400K,
  MODEL_PRESETS,
  modelConfig,
  paramBreakdown,
  paramCount,
  parseConfig,
  validateConfig,
  type ModelConfig,
} from '../src/model/config';
import { initLora, loraDelta, loraParamCount, loraTargets, mergeLora, unmergeLora, validateLoraConfig } from '../src/model/lora';
import { dequantizeQ4, dequantizeQ8, f16AtLeast, q4Nibble, quantizeQ4, quantizeQ8, QK } from '../src/model/quant';
import { readSafetensors, writeSafetensors, type StTensor } from '../src/model/safetensors';
import { ALPHABET, BOS, EOS, PAD, SEP, SPECIAL_TOKENS, tokenizer, vocabSize } from '../src/model/tokenizer';
import {
  dequantizeWeights,
  expectedShape,
  getF32,
  initWeights,
  loadModel,
  quantizeWeights,
  saveModel,
  weightNames,
  type ModelWeights,
} from '../src/model/weights';

/** Runs f, expecting an error of class `cls` whose message contains every fragment. */
function expectError(f: () => unknown, cls: new (...a: never[]) => Error, ...fragments: (string | RegExp)[]): Error {
  let caught: unknown;
  try {
    f();
  } catch (e) {
    caught = e;
  }
  expect(caught, 'expected an error').toBeInstanceOf(cls);
  const msg = (caught as Error).message;
  for (const f of fragments) {
    if (typeof f === 'string') expect(msg).toContain(f);
    else expect(msg).toMatch(f);
  }
  return caught as Error;
}

const TINY: ModelConfig = modelConfig({ vocab: vocabSize, d: 32, layers: 2, heads: 4, hidden: 64, maxSeq: 32 });

function card(cfg: ModelConfig, quant: 'f32' | 'q8' | 'q4'): ModelCard {
  return makeCard(cfg, {
    name: 'test',
    task: 'arithmetic',
    dataSeed: 7,
    heldOutAccuracy: 0.5,
    pretrainSeconds: 1.5,
    quant,
    created: '2025-01-31T12:00:00.000Z',
  });
}

/** Writes bytes of a u64 header length. */
function setHeaderLen(bytes: Uint8Array, n: number): Uint8Array {
  const b = bytes.slice();
  const dv = new DataView(b.buffer);
  dv.setUint32(0, n % 2 ** 32, true);
  dv.setUint32(4, Math.floor(n / 2 ** 32), true);
  return b;
}

/** A raw safetensors file from a header object and a data section. */
function rawFile(header: unknown, data: Uint8Array = new Uint8Array(0)): Uint8Array {
  const h = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setUint32(0, h.length, true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

describe('model config', () => {
  it('counts parameters by the closed form and hits the size presets', () => {
    const S = paramCount(MODEL_PRESETS.S);
    const M = paramCount(MODEL_PRESETS.M);
    const L = paramCount(MODEL_PRESETS.L);
    expect(S).toBe(28_832); // 64·32 + 2·(4·32² + 3·32·96 + 64) + 32
    expect(M).toBe(110_912);
    expect(L).toBe(434_816);
    expect(S).toBeGreaterThanOrEqual(20_000);
    expect(S).toBeLessThanOrEqual(50_000);
    expect(M / S).toBeGreaterThan(3.5);
    expect(M / S).toBeLessThan(4.5);
    expect(L / S).toBeGreaterThan(14);
    expect(L / S).toBeLessThan(18);
    expect(paramCount(BENCH_100K)).toBe(101_696);
    expect(paramCount(BENCH_400K)).toBe(401_024);
    // The count equals the sum of all weight sizes.
    for (const cfg of [MODEL_PRESETS.S, BENCH_100K]) {
      const total = weightNames(cfg).reduce((n, name) => n + expectedShape(cfg, name).reduce((a, b) => a * b, 1), 0);
      expect(total).toBe(paramCount(cfg));
      expect(paramBreakdown(cfg).total).toBe(total);
    }
  });

  it('rejects bad configs with a ConfigError naming the field', () => {
    const base = { vocab: 64, d: 32, layers: 2, heads: 4, hidden: 96, maxSeq: 64 };
    expect(expectError(() => modelConfig({ ...base, heads: 5 }), ConfigError, 'heads', 'divide').message).toContain('32');
    expect((expectError(() => modelConfig({ ...base, heads: 32 }), ConfigError, 'even') as ConfigError).key).toBe('heads');
    expect((expectError(() => modelConfig({ ...base, d: 48, heads: 4 }, { quantized: true }), ConfigError, 'multiple of 32') as ConfigError).key).toBe('d');
    expect((expectError(() => modelConfig({ ...base, vocab: 1 }), ConfigError, '"vocab"') as ConfigError).key).toBe('vocab');
    expect((expectError(() => modelConfig({ ...base, layers: 1.5 }), ConfigError, '"layers"') as ConfigError).key).toBe('layers');
    expect((expectError(() => modelConfig({ ...base, ropeTheta: 0 }), ConfigError, 'ropeTheta') as ConfigError).key).toBe('ropeTheta');
    expect((expectError(() => modelConfig({ ...base, normEps: NaN }), ConfigError, 'normEps') as ConfigError).key).toBe('normEps');
    expect((expectError(() => validateConfig({ ...MODEL_PRESETS.S, tied: 'yes' as unknown as boolean }), ConfigError, 'tied') as ConfigError).key).toBe('tied');
    // An untied head (a separate lm_head) is a valid config; it counts V·d more parameters.
    expect(paramBreakdown(modelConfig({ ...base, tied: false })).total - paramBreakdown(modelConfig(base)).total).toBe(64 * 32);
    // d = 48 is fine unquantized.
    expect(modelConfig({ ...base, d: 48, heads: 4 }).d).toBe(48);
    expectError(() => parseConfig({ ...MODEL_PRESETS.S, extra: 1 }), ConfigError, 'Unknown model config field "extra"');
    const { hidden: _h, ...noHidden } = MODEL_PRESETS.S;
    expectError(() => parseConfig(noHidden), ConfigError, 'missing field "hidden"');
  });
});

describe('safetensors', () => {
  const rng = new Rng(1234);
  const f32 = Float32Array.from({ length: 12 }, () => rng.normal());
  f32[3] = -0;
  f32[4] = 1e-40; // subnormal: must survive bit-exact
  const f16 = Uint16Array.from([0x0000, 0x8000, 0x3c00, 0x7bff, 0x0001, 0x7c00, 0xfc00, 0x7e00]);
  const i8 = Int8Array.from([-128, -1, 0, 1, 127]);
  const u8 = Uint8Array.from([0, 1, 128, 255, 7, 9]);
  const tensors = new Map<string, StTensor>([
    ['a.f32', { dtype: 'F32', shape: [3, 4], data: f32 }],
    ['b.f16', { dtype: 'F16', shape: [2, 2, 2], data: f16 }],
    ['c.i8', { dtype: 'I8', shape: [5], data: i8 }],
    ['d.u8', { dtype: 'U8', shape: [2, 3], data: u8 }],
    ['e.empty', { dtype: 'F32', shape: [0, 3], data: new Float32Array(0) }],
    ['f.scalar', { dtype: 'F32', shape: [], data: Float32Array.of(2.5) }],
  ]);
  const meta = { hello: 'world', json: '{"a":[1,2]}', unicode: 'ünï ✓' };
  const file = writeSafetensors(tensors, meta);

  it('round-trips f32 / f16 / i8 / u8 bit-exact, with metadata', () => {
    const hlen = new DataView(file.buffer).getUint32(0, true);
    expect(hlen % 8).toBe(0); // header padded: data starts 8-aligned
    const back = readSafetensors(file);
    expect(back.metadata).toEqual(meta);
    expect([...back.tensors.keys()]).toEqual([...tensors.keys()]);
    for (const [name, t] of tensors) {
      const u = back.tensors.get(name)!;
      expect(u.dtype).toBe(t.dtype);
      expect(u.shape).toEqual(t.shape);
      expect(u.data.constructor).toBe(t.data.constructor);
      const bytesA = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      const bytesB = new Uint8Array(u.data.buffer, u.data.byteOffset, u.data.byteLength);
      expect(bytesB).toEqual(bytesA);
    }
    // Writing what was read gives the same bytes.
    expect(writeSafetensors(back.tensors, back.metadata)).toEqual(file);
  });

  it('reads from a Uint8Array that is a view into a larger buffer', () => {
    const big = new Uint8Array(file.length + 13);
    big.set(file, 5);
    const back = readSafetensors(big.subarray(5, 5 + file.length));
    expect(back.tensors.get('c.i8')!.data).toEqual(i8);
  });

  it('reports a file shorter than 8 bytes', () => {
    for (const n of [0, 1, 7]) expectError(() => readSafetensors(file.subarray(0, n)), FormatError, `only ${n} byte`, '8-byte header length');
  });

  it('reports truncation at every kind of point', () => {
    const hlen = new DataView(file.buffer).getUint32(0, true);
    // Inside the header.
    for (const n of [8, 9, 8 + Math.floor(hlen / 2), 8 + hlen - 1]) {
      expectError(() => readSafetensors(file.subarray(0, n)), FormatError, `header length ${hlen} bytes runs past the end of the file (${n} bytes`);
    }
    // Inside the data.
    for (const n of [8 + hlen, 8 + hlen + 5, file.length - 1]) {
      expectError(() => readSafetensors(file.subarray(0, n)), FormatError, 'file is truncated', `only ${n - 8 - hlen} bytes follow the header`);
    }
  });

  it('reports an absurd or corrupt header length', () => {
    expectError(() => readSafetensors(setHeaderLen(file, 2 ** 40)), FormatError, 'header length 1099511627776 bytes is absurd');
    expectError(() => readSafetensors(setHeaderLen(file, 100_000_001)), FormatError, 'absurd');
    expectError(() => readSafetensors(setHeaderLen(file, file.length)), FormatError, 'runs past the end of the file');
  });

  it('reports a header that is not UTF-8, not JSON, or not an object', () => {
    const bad = rawFile('{"a": 1}');
    bad[10] = 0xff;
    expectError(() => readSafetensors(bad), FormatError, 'not valid UTF-8');
    expectError(() => readSafetensors(rawFile('{"a": ')), FormatError, 'header is not valid JSON');
    expectError(() => readSafetensors(rawFile('[1, 2]')), FormatError, 'must be a JSON object', 'an array');
    expectError(() => readSafetensors(rawFile('null')), FormatError, 'must be a JSON object', 'null');
    expectError(() => readSafetensors(rawFile('"x"')), FormatError, 'must be a JSON object', 'string');
    expectError(() => readSafetensors(rawFile({ __metadata__: { a: 1 } })), FormatError, '"__metadata__" value "a" must be a string');
    expectError(() => readSafetensors(rawFile({ x: 3 })), FormatError, 'tensor "x": entry must be an object');
  });

  it('reports unknown and unsupported dtypes by name', () => {
    const four = new Uint8Array(4);
    expectError(() => readSafetensors(rawFile({ x: { dtype: 'Q9', shape: [1], data_offsets: [0, 4] } }, four)), FormatError, 'tensor "x"', 'unknown dtype "Q9"');
    expectError(() => readSafetensors(rawFile({ x: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } }, new Uint8Array(8))), FormatError, 'dtype "I64" is valid safetensors but not supported');
    expectError(() => readSafetensors(rawFile({ x: { dtype: 3, shape: [1], data_offsets: [0, 4] } }, four)), FormatError, '"dtype" must be a string');
  });

  it('reports bad shapes and offsets', () => {
    const four = new Uint8Array(4);
    for (const shape of [[-1], [1.5], ['1'], 4, null]) {
      expectError(() => readSafetensors(rawFile({ x: { dtype: 'F32', shape, data_offsets: [0, 4] } }, four)), FormatError, 'tensor "x"', '"shape" must be an array of non-negative integers');
    }
    expectError(() => readSafetensors(rawFile({ x: { dtype: 'F32', shape: [1], data_offsets: [0] } }, four)), FormatError, '"data_offsets" must be [begin, end]');
    expectError(() => readSafetensors(rawFile({ x: { dtype: 'F32', shape: [1], data_offsets: [4, 0] } }, four)), FormatError, 'end before they begin');
    expectError(() => readSafetensors(rawFile({ x: { dtype: 'F32', shape: [2], data_offsets: [0, 4] } }, four)), FormatError, 'span 4 bytes but shape [2] of F32 needs 8');
    expectError(() => readSafetensors(rawFile({ x: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, four)), FormatError, 'out of bounds', 'tensor "x" needs data bytes [4, 8)');
    const eight = new Uint8Array(8);
    expectError(
      () => readSafetensors(rawFile({ x: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, y: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, eight)),
      FormatError,
      'overlap',
    );
    expectError(() => readSafetensors(rawFile({ x: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, eight)), FormatError, 'bytes [0, 4) before tensor "x" belong to no tensor');
    expectError(() => readSafetensors(rawFile({ x: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, eight)), FormatError, '4 unexpected bytes after the last tensor');
    expectError(() => readSafetensors(rawFile({ x: { dtype: 'F32', shape: [1], data_offsets: [0, 4], extra: 1 } }, four)), FormatError, 'unknown field "extra"');
  });

  it('refuses to write data that does not match dtype or shape', () => {
    expectError(() => writeSafetensors({ x: { dtype: 'F32', shape: [2], data: new Float32Array(3) } }), FormatError, 'has 3 values but shape [2] needs 2');
    expectError(() => writeSafetensors({ x: { dtype: 'I8', shape: [2], data: new Uint8Array(2) } }), FormatError, 'is I8 but its data is a Uint8Array');
  });
});

describe('quantization', () => {
  const rows = 16;
  const cols = 96;
  const rng = new Rng(1234).fork(1);
  const x = Float32Array.from({ length: rows * cols }, () => rng.normal() * 0.3);
  // Edge blocks: all zero; one huge outlier; values exactly at half-steps.
  for (let i = 0; i < QK; i++) x[i] = 0;
  x[cols + 5] = 40;
  for (let i = 0; i < QK; i++) x[2 * cols + i] = (i - 16) * 0.5;

  function blockScale(scales: Uint16Array, o: number, c: number): number {
    return f16ToF32(scales[o * (cols / QK) + Math.floor(c / QK)]!);
  }

  it('Q8: |x − x̂| ≤ scale/2 per element; scale = max|x|/127 rounded up to f16; layout', () => {
    const m = quantizeQ8(x, rows, cols);
    expect(m.q.length).toBe(rows * cols);
    expect(m.scales.length).toBe((rows * cols) / QK);
    const y = dequantizeQ8(m, rows, cols);
    let worst = 0;
    for (let o = 0; o < rows; o++) {
      for (let b = 0; b < cols / QK; b++) {
        let amax = 0;
        for (let i = 0; i < QK; i++) amax = Math.max(amax, Math.abs(x[o * cols + b * QK + i]!));
        const s = blockScale(m.scales, o, b * QK);
        // The stored scale is the smallest f16 ≥ amax/127, so it is within one f16 ulp of it.
        expect(s).toBeGreaterThanOrEqual(amax / 127);
        expect(s).toBeLessThanOrEqual((amax / 127) * (1 + 2 ** -9) + 1e-30);
        for (let i = 0; i < QK; i++) {
          const k = o * cols + b * QK + i;
          expect(Math.abs(m.q[k]!)).toBeLessThanOrEqual(127);
          expect(y[k]).toBe(Math.fround(m.q[k]! * s));
          const err = Math.abs(x[k]! - y[k]!);
          expect(err).toBeLessThanOrEqual(s / 2 + Math.abs(x[k]!) * 2 ** -23);
          if (s > 0) worst = Math.max(worst, err / s);
        }
      }
    }
    expect(worst).toBeGreaterThan(0.4); // the bound is tight, not vacuous
    // All-zero block: scale 0, q 0.
    expect(m.scales[0]).toBe(0);
    expect([...m.q.subarray(0, QK)].every((v) => v === 0)).toBe(true);
    // The outlier gets exactly ±127.
    expect(m.q[cols + 5]).toBe(127);
  });

  it('Q4: |x − x̂| ≤ scale/2 per element; scale = max|x|/7; nibble packing', () => {
    const m = quantizeQ4(x, rows, cols);
    expect(m.q.length).toBe((rows * cols) / 2);
    const y = dequantizeQ4(m, rows, cols);
    for (let o = 0; o < rows; o++) {
      for (let c = 0; c < cols; c++) {
        const k = o * cols + c;
        const s = blockScale(m.scales, o, c);
        const nib = q4Nibble(m.q, k);
        // Element (o, c) lives in byte ⌊k/2⌋, low nibble for even c.
        const byte = m.q[Math.floor(k / 2)]!;
        expect(nib).toBe(c % 2 === 0 ? byte & 15 : byte >> 4);
        expect(nib).toBeGreaterThanOrEqual(1); // symmetric: 8 ± 7
        expect(y[k]).toBe(Math.fround((nib - 8) * s));
        expect(Math.abs(x[k]! - y[k]!)).toBeLessThanOrEqual(s / 2 + Math.abs(x[k]!) * 2 ** -23);
      }
    }
    expect(q4Nibble(m.q, 0)).toBe(8); // zero block → value 0
  });

  it('matches hand-computed codes', () => {
    const v = new Float32Array(32);
    v[0] = 1.27;
    v[1] = -0.635; // exactly half of max → rounds away from zero
    v[2] = 0.004;
    const s8 = f16ToF32(f16AtLeast(1.27 / 127));
    const m8 = quantizeQ8(v, 1, 32);
    expect(f16ToF32(m8.scales[0]!)).toBe(s8);
    expect([m8.q[0], m8.q[1], m8.q[2]]).toEqual([127, Math.sign(-0.635) * Math.round(0.635 / s8), Math.round(0.004 / s8)]);
    const m4 = quantizeQ4(v, 1, 32);
    expect(m4.q[0]).toBe((8 + 7) | ((8 - Math.round(0.635 / f16ToF32(m4.scales[0]!))) << 4));
  });

  it('f16AtLeast gives the smallest f16 ≥ v', () => {
    const rng2 = new Rng(99);
    for (let i = 0; i < 2000; i++) {
      const v = Math.exp(rng2.normal() * 6);
      if (v > 65504) continue;
      const h = f16AtLeast(v);
      expect(f16ToF32(h)).toBeGreaterThanOrEqual(v);
      if (h > 0) expect(f16ToF32(h - 1)).toBeLessThan(v);
    }
    expect(f16AtLeast(1)).toBe(f32ToF16(1));
    expectError(() => f16AtLeast(70000), NumericError, 'does not fit in f16');
  });

  it('rejects non-multiple-of-32 input dims and non-finite values', () => {
    expectError(() => quantizeQ8(new Float32Array(40), 1, 40), ConfigError, 'input dim 40 is not a multiple of 32');
    const bad = new Float32Array(64);
    bad[37] = NaN;
    expectError(() => quantizeQ4(bad, 2, 32), NumericError, 'value at [1, 5] is NaN');
  });
});

describe('model file', () => {
  const weights = initWeights(TINY, new Rng(1234));

  it('initWeights: names, shapes, norms = 1, small random matrices, deterministic', () => {
    expect([...weights.keys()]).toEqual(weightNames(TINY));
    expect(weightNames(TINY).slice(0, 4)).toEqual(['tok_emb', 'layers.0.attn_norm', 'layers.0.wq', 'layers.0.wk']);
    expect(weightNames(TINY).at(-1)).toBe('final_norm');
    for (const [name, t] of weights) expect(t.shape).toEqual(expectedShape(TINY, name));
    expect(getF32(weights, 'final_norm').every((v) => v === 1)).toBe(true);
    const wq = getF32(weights, 'layers.0.wq');
    const std = Math.sqrt(wq.reduce((a, v) => a + v * v, 0) / wq.length);
    expect(std).toBeGreaterThan(0.8 / Math.sqrt(32));
    expect(std).toBeLessThan(1.2 / Math.sqrt(32));
    expect(getF32(initWeights(TINY, new Rng(1234)), 'layers.1.w2')).toEqual(getF32(weights, 'layers.1.w2'));
    expect(expectedShape(TINY, 'layers.1.w2')).toEqual([32, 64]);
    expect(expectedShape(TINY, 'layers.0.w1')).toEqual([64, 32]);
    expectError(() => expectedShape(TINY, 'layers.2.wq'), ConfigError, 'not a weight of this model');
  });

  it('save → load round-trips f32, q8 and q4 exactly', () => {
    for (const quant of ['f32', 'q8', 'q4'] as const) {
      const w = quantizeWeights(TINY, weights, quant);
      const bytes = saveModel(TINY, w, card(TINY, quant));
      const back = loadModel(bytes);
      expect(back.cfg).toEqual(TINY);
      expect(back.card).toEqual(card(TINY, quant));
      expect([...back.weights.keys()]).toEqual([...w.keys()]);
      for (const [name, t] of w) expect(back.weights.get(name)).toEqual(t);
      expect(readSafetensors(bytes).metadata.quant).toBe(quant);
    }
    // Quantized storage actually shrinks the file.
    const f = saveModel(TINY, weights, card(TINY, 'f32')).length;
    const q8 = saveModel(TINY, quantizeWeights(TINY, weights, 'q8'), card(TINY, 'q8')).length;
    const q4 = saveModel(TINY, quantizeWeights(TINY, weights, 'q4'), card(TINY, 'q4')).length;
    expect(q8).toBeLessThan(f / 3);
    expect(q4).toBeLessThan(q8 * 0.65);
  });

  it('keeps w2 in f32 when hidden is not a multiple of 32 (bench config)', () => {
    const w = quantizeWeights(BENCH_100K, initWeights(BENCH_100K, new Rng(5)), 'q8');
    expect(w.get('layers.0.w2')!.dtype).toBe('f32');
    expect(w.get('layers.0.w1')!.dtype).toBe('q8');
    expect(w.get('tok_emb')!.dtype).toBe('q8');
    expect(w.get('layers.0.attn_norm')!.dtype).toBe('f32');
    const back = loadModel(saveModel(BENCH_100K, w, card(BENCH_100K, 'q8')));
    expect(back.weights.get('layers.1.w2')).toEqual(w.get('layers.1.w2'));
    expect(dequantizeWeights(back.weights).get('layers.1.w1')!.dtype).toBe('f32');
  });

  /** Rewrites a model file through `edit` of its tensors and metadata. */
  function edited(bytes: Uint8Array, edit: (t: Map<string, StTensor>, m: Record<string, string>) => void): Uint8Array {
    const { tensors, metadata } = readSafetensors(bytes);
    edit(tensors, metadata);
    return writeSafetensors(tensors, metadata);
  }
  const q8file = saveModel(TINY, quantizeWeights(TINY, weights, 'q8'), card(TINY, 'q8'));
  const f32file = saveModel(TINY, weights, card(TINY, 'f32'));

  it('reports truncation of a real model file at several points', () => {
    const hlen = new DataView(q8file.buffer).getUint32(0, true);
    expectError(() => loadModel(q8file.subarray(0, 5)), FormatError, 'only 5 bytes');
    expectError(() => loadModel(q8file.subarray(0, 100)), FormatError, 'runs past the end of the file');
    for (const n of [8 + hlen, 8 + hlen + 1000, q8file.length - 1]) expectError(() => loadModel(q8file.subarray(0, n)), FormatError, 'file is truncated');
  });

  it('reports a missing tensor, a wrong shape, an extra tensor, a NaN scale', () => {
    expectError(
      () => loadModel(edited(f32file, (t) => t.delete('layers.1.wv'))),
      FormatError,
      'tensor "layers.1.wv" is missing (expected shape [32, 32]',
    );
    expectError(
      () => loadModel(edited(f32file, (t) => t.set('layers.0.wo', { dtype: 'F32', shape: [16, 64], data: new Float32Array(1024) }))),
      FormatError,
      'tensor "layers.0.wo" has shape [16, 64] but the config expects [32, 32]',
    );
    expectError(
      () => loadModel(edited(f32file, (t) => t.set('layers.2.wq', { dtype: 'F32', shape: [32, 32], data: new Float32Array(1024) }))),
      FormatError,
      'unexpected tensor "layers.2.wq"',
    );
    expectError(
      () =>
        loadModel(
          edited(q8file, (t) => {
            const s = (t.get('layers.1.w3.scales')!.data as Uint16Array).slice();
            s[5] = 0x7e00; // NaN
            t.set('layers.1.w3.scales', { dtype: 'F16', shape: [64, 1], data: s });
          }),
        ),
      FormatError,
      'tensor "layers.1.w3" scale of block 5 (row 5, columns 0..31) is NaN',
    );
    expectError(
      () =>
        loadModel(
          edited(q8file, (t) => {
            const s = (t.get('tok_emb.scales')!.data as Uint16Array).slice();
            s[3] = 0x7c00; // +Inf
            t.set('tok_emb.scales', { dtype: 'F16', shape: [64, 1], data: s });
          }),
        ),
      FormatError,
      'tensor "tok_emb" scale of block 3',
      'Infinity',
    );
    expectError(() => loadModel(edited(q8file, (t) => t.delete('layers.0.wq.scales'))), FormatError, 'has "layers.0.wq.q" but no "layers.0.wq.scales"');
    expectError(
      () => loadModel(edited(q8file, (t) => t.set('layers.0.wq.q', { dtype: 'U8', shape: [32, 32], data: new Uint8Array(1024) }))),
      FormatError,
      '"layers.0.wq.q" has dtype U8; a q8 file stores codes as I8',
    );
    expectError(
      () =>
        loadModel(
          edited(f32file, (t) => {
            const d = (t.get('final_norm')!.data as Float32Array).slice();
            d[2] = NaN;
            t.set('final_norm', { dtype: 'F32', shape: [32], data: d });
          }),
        ),
      FormatError,
      'tensor "final_norm" element 2 is NaN',
    );
  });

  it('reports bad metadata', () => {
    expectError(() => loadModel(writeSafetensors({}, {})), FormatError, 'not a SAT Playground model', '"format" is missing');
    expectError(() => loadModel(edited(f32file, (_t, m) => (m.version = '9'))), FormatError, 'version "9" is not supported');
    expectError(() => loadModel(edited(f32file, (_t, m) => (m.quant = 'q3'))), FormatError, '"quant" is "q3"');
    expectError(() => loadModel(edited(f32file, (_t, m) => (m.config = '{oops'))), FormatError, '"config" is not valid JSON');
    expectError(() => loadModel(edited(f32file, (_t, m) => (m.config = JSON.stringify({ ...TINY, heads: 3 })))), FormatError, 'config is invalid', 'heads');
    expectError(() => loadModel(edited(f32file, (_t, m) => (m.card = '{}'))), FormatError, 'model card is missing field "name"');
    expectError(() => loadModel(edited(f32file, (_t, m) => (m.quant = 'q8'))), FormatError, 'card says quant "f32"');
  });

  it('refuses what the fuzzer (tests/fuzz.test.ts) found with a FormatError of bounded length', () => {
    /** The file with its header JSON text replaced (data section kept). */
    const withHeader = (bytes: Uint8Array, edit: (text: string) => string): Uint8Array => {
      const n = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
      const text = new TextEncoder().encode(edit(new TextDecoder().decode(bytes.subarray(8, 8 + n))));
      const out = new Uint8Array(8 + text.length + bytes.length - 8 - n);
      new DataView(out.buffer).setUint32(0, text.length, true);
      out.set(text, 8);
      out.set(bytes.subarray(8 + n), 8 + text.length);
      return out;
    };
    const short = (e: Error) => expect(e.message.length, e.message.slice(0, 200)).toBeLessThanOrEqual(600);
    // A shape nested 100,000 deep used to overflow JSON.stringify's stack (a RangeError escaped).
    const deep = withHeader(f32file, (t) => t.replace('"shape":[32]', `"shape":${'['.repeat(100_000)}${']'.repeat(100_000)}`));
    short(expectError(() => loadModel(deep), FormatError, '"shape" must be an array of non-negative integers, got an array of 1 entry (some of them nested)'));
    // So did a config nested deep inside __metadata__ (config.ts prints values with JSON.stringify).
    short(expectError(() => loadModel(edited(f32file, (_t, m) => (m.config = JSON.stringify({ ...TINY, d: 0 }).replace('"d":0', `"d":${'['.repeat(10_000)}${']'.repeat(10_000)}`)))), FormatError, '__metadata__ "config" nests deeper than 8 levels'));
    // Messages that quoted the file at any length (100,000 characters and more) are cut.
    short(expectError(() => loadModel(edited(f32file, (_t, m) => (m.config = JSON.stringify({ ...TINY, layers: 'x'.repeat(100_000) })))), FormatError, 'config is invalid', 'Model config "layers" = "xxxx', '…'));
    short(expectError(() => loadModel(edited(f32file, (_t, m) => (m.card = JSON.stringify({ ...cardToJsonObj(), ['z'.repeat(100_000)]: 1 })))), FormatError, 'model card has unknown field "zzz'));
    short(expectError(() => loadModel(withHeader(f32file, (t) => t.replace('"shape":[32]', `"${'k'.repeat(50_000)}":1,"shape":[32]`))), FormatError, 'unknown field "kkk', '(50000 characters)'));
    const ones = new Array<number>(20_000).fill(1);
    short(expectError(() => loadModel(withHeader(f32file, (t) => t.replace('"shape":[32]', `"shape":[${ones.join(',')},33]`))), FormatError, '[1, 1, 1, 1, …, 1, 33] (20001 dims)'));
    const long = 'w'.repeat(5000);
    short(expectError(() => loadModel(edited(f32file, (t) => t.set(long, { dtype: 'F32', shape: [1], data: new Float32Array(1) }))), FormatError, 'unexpected tensor "www', '(5000 characters)'));
  });

  /** The TINY f32 card as parsed JSON. */
  function cardToJsonObj(): Record<string, unknown> {
    return JSON.parse(readSafetensors(f32file).metadata.card!) as Record<string, unknown>;
  }

  it('saveModel refuses inconsistent inputs', () => {
    expectError(() => saveModel(TINY, weights, card(TINY, 'q8')), ConfigError, 'card says quant "q8"', '"f32"');
    const missing: ModelWeights = new Map(weights);
    missing.delete('layers.0.w1');
    expectError(() => saveModel(TINY, missing, card(TINY, 'f32')), ConfigError, 'Weight "layers.0.w1" is missing');
    const other = modelConfig({ ...TINY, layers: 1 });
    expectError(() => saveModel(TINY, weights, card(other, 'f32')), ConfigError, "card's config");
    const nan: ModelWeights = new Map(weights);
    nan.set('final_norm', { dtype: 'f32', shape: [32], data: new Float32Array(32).fill(NaN) });
    expectError(() => saveModel(TINY, nan, card(TINY, 'f32')), NumericError, 'final_norm');
  });
});

describe('tokenizer', () => {
  it('has 64 tokens: 8 specials then the alphabet', () => {
    expect(vocabSize).toBe(64);
    expect(SPECIAL_TOKENS.length + ALPHABET.length).toBe(64);
    expect(new Set(ALPHABET).size).toBe(ALPHABET.length);
    expect(ALPHABET).not.toContain('<');
    expect([PAD, BOS, EOS, SEP]).toEqual([0, 1, 2, 3]);
    expect(tokenizer.agentToken(2)).toBe(6);
    expect(MODEL_PRESETS.S.vocab).toBe(vocabSize);
  });

  it('round-trips text and ids, including special tokens', () => {
    const text = '<bos><a0>12+34=46<sep><a1>(a, b): x > 3?\n#_|!%/*-.;<eos><pad>';
    const ids = tokenizer.encode(text);
    expect(ids[0]).toBe(BOS);
    expect(ids[1]).toBe(4);
    expect(ids.at(-2)).toBe(EOS);
    expect(ids.at(-1)).toBe(PAD);
    expect(tokenizer.decode(ids)).toBe(text);
    const all = Array.from({ length: vocabSize }, (_, i) => i);
    expect(tokenizer.encode(tokenizer.decode(all))).toEqual(all);
    expect(tokenizer.encode('7*8', { bos: true, eos: true })).toEqual([BOS, ...tokenizer.encode('7*8'), EOS]);
    expect(tokenizer.decode(tokenizer.encode('<a2>9-1=8<eos>'), { skipSpecial: true })).toBe('9-1=8');
  });

  it('names the unknown character and its position', () => {
    expectError(() => tokenizer.encode('12+x=Y'), FormatError, 'character "Y" (U+0059) at position 5', 'lower-case');
    expectError(() => tokenizer.encode('ab€'), FormatError, '"€" (U+20AC) at position 2');
    expectError(() => tokenizer.encode('a\tb'), FormatError, '"\\t" (U+0009) at position 1');
    expectError(() => tokenizer.encode('1 < 2'), FormatError, 'at position 2', '"<" only starts a special token');
    expectError(() => tokenizer.decode([5, 64]), FormatError, 'token id 64 at position 1', '0 to 63');
    expectError(() => tokenizer.decode([1.5]), FormatError, 'token id 1.5 at position 0');
    expectError(() => tokenizer.agentToken(4), FormatError, 'agents 0..3');
  });
});

describe('model card', () => {
  const good = card(MODEL_PRESETS.S, 'q8');

  it('validates and round-trips through JSON', () => {
    expect(good.parameters).toBe(28_832);
    expect(cardFromJson(cardToJson(good))).toEqual(good);
  });

  it('names missing, mistyped and inconsistent fields', () => {
    const raw = JSON.parse(cardToJson(good)) as Record<string, unknown>;
    const without = (k: string) => Object.fromEntries(Object.entries(raw).filter(([key]) => key !== k));
    expectError(() => validateCard(without('task')), FormatError, 'missing field "task"');
    expectError(() => validateCard({ ...raw, heldOutAccuracy: '0.9' }), FormatError, '"heldOutAccuracy" must be a number in [0, 1]', '(string)');
    expectError(() => validateCard({ ...raw, heldOutAccuracy: 1.5 }), FormatError, '"heldOutAccuracy"');
    expectError(() => validateCard({ ...raw, dataSeed: -1 }), FormatError, '"dataSeed" must be an integer');
    expectError(() => validateCard({ ...raw, pretrainSeconds: null }), FormatError, '"pretrainSeconds"', 'null');
    expectError(() => validateCard({ ...raw, quant: 'q2' }), FormatError, '"quant" must be one of');
    expectError(() => validateCard({ ...raw, created: 'yesterday' }), FormatError, '"created" must be an ISO 8601 date');
    expectError(() => validateCard({ ...raw, name: '' }), FormatError, '"name" must be a non-empty string');
    expectError(() => validateCard({ ...raw, parameters: 5 }), FormatError, '"parameters" = 5 disagrees', '28832');
    expectError(() => validateCard({ ...raw, vocab: 40 }), FormatError, '"vocab" = 40 disagrees');
    expectError(() => validateCard({ ...raw, config: { ...MODEL_PRESETS.S, d: 30 } }), FormatError, '"config" is invalid');
    expectError(() => validateCard({ ...raw, extra: 1 }), FormatError, 'unknown field "extra"');
    expectError(() => validateCard({ ...raw, pretrainWorkers: 0 }), FormatError, '"pretrainWorkers" must be an integer ≥ 1');
    expect(validateCard({ ...raw, pretrainWorkers: 2 }).pretrainWorkers).toBe(2); // optional: older cards lack it
    expect(validateCard(raw).pretrainWorkers).toBeUndefined();
    expectError(() => validateCard([]), FormatError, 'must be a JSON object');
    expectError(() => cardFromJson('{'), FormatError, 'not valid JSON');
  });
});

describe('LoRA', () => {
  const cfg = MODEL_PRESETS.S;
  const base = initWeights(cfg, new Rng(1234));

  it('targets, counts and config checks', () => {
    const sites = loraTargets(cfg);
    expect(sites.length).toBe(7 * cfg.layers);
    expect(sites.find((s) => s.name === 'layers.1.w2')).toEqual({ name: 'layers.1.w2', out: 32, in: 96 });
    // r·(in+out): attention 4·(32+32), MLP 2·(32+96) + (96+32), per layer.
    expect(loraParamCount(cfg, { rank: 4, alpha: 8 })).toBe(2 * 4 * (4 * 64 + 3 * 128));
    expect(loraParamCount(cfg, { rank: 2, alpha: 2, targets: ['wq', 'wv'] })).toBe(2 * 2 * 2 * 64);
    expectError(() => validateLoraConfig(cfg, { rank: 0, alpha: 1 }), ConfigError, '"rank" = 0');
    expectError(() => validateLoraConfig(cfg, { rank: 33, alpha: 1 }), ConfigError, '[1, 32]');
    expectError(() => validateLoraConfig(cfg, { rank: 2, alpha: -1 }), ConfigError, '"alpha"');
    expectError(() => validateLoraConfig(cfg, { rank: 2, alpha: 1, targets: ['wz' as 'wq'] }), ConfigError, 'target "wz"');
  });

  it('initial delta is exactly zero; merge leaves the weights bit-identical', () => {
    const ad = initLora(cfg, { rank: 4, alpha: 8 }, new Rng(1234).fork(9));
    for (const p of ad.pairs.values()) {
      expect(p.a.some((v) => v !== 0)).toBe(true);
      expect(p.b.every((v) => v === 0)).toBe(true);
      expect(loraDelta(p, ad.rank, ad.scale).every((v) => v === 0)).toBe(true);
    }
    const merged = mergeLora(base, ad);
    for (const [name, t] of base) expect(getF32(merged, name)).toEqual(getF32(new Map([[name, t]]), name));
  });

  it('merge adds (alpha/r)·B·A and unmerge undoes it', () => {
    const ad = initLora(cfg, { rank: 3, alpha: 6 }, new Rng(77));
    const g = new Rng(78);
    for (const p of ad.pairs.values()) for (let i = 0; i < p.b.length; i++) p.b[i] = g.normal() * 0.1;
    const merged = mergeLora(base, ad);
    // Check one element by hand: W'[o][c] = W[o][c] + 2·Σ_k B[o][k]·A[k][c].
    const p = ad.pairs.get('layers.0.w2')!;
    const [o, c] = [5, 70];
    let dot = 0;
    for (let k = 0; k < 3; k++) dot += p.b[o * 3 + k]! * p.a[k * p.in + c]!;
    const w0 = getF32(base, 'layers.0.w2')[o * p.in + c]!;
    expect(getF32(merged, 'layers.0.w2')[o * p.in + c]).toBeCloseTo(w0 + 2 * dot, 6);
    expect(merged.get('final_norm')).toBe(base.get('final_norm')); // untouched tensors shared
    const back = unmergeLora(merged, ad);
    for (const name of weightNames(cfg)) {
      const a = getF32(base, name);
      const b = getF32(back, name);
      for (let i = 0; i < a.length; i++) expect(Math.abs(a[i]! - b[i]!)).toBeLessThanOrEqual(1e-6 * (1 + Math.abs(a[i]!)));
    }
  });

  it('merges into a quantized base by dequantizing it', () => {
    const q = quantizeWeights(cfg, base, 'q8');
    const ad = initLora(cfg, { rank: 2, alpha: 2, targets: ['wq'] }, new Rng(3));
    const merged = mergeLora(q, ad);
    expect(merged.get('layers.0.wq')!.dtype).toBe('f32');
    expect(merged.get('layers.0.wk')!.dtype).toBe('q8');
    expect(getF32(merged, 'layers.0.wq')).toEqual(getF32(dequantizeWeights(q), 'layers.0.wq'));
  });
});
