/**
 * The checkpoint loader reads each tensor by range as it converts it (src/model/hfLoad.ts): its
 * weights must be bit for bit those of the whole-file load — every tensor converted to f32 whole,
 * q/k rows permuted, K/V heads repeated, then quantizeQ8/Q4 of the whole matrix — for f32 / q8 / q4
 * seats from BF16 / F16 / F32 files, whatever the row blocks (one row, an odd number of rows that
 * splits heads, the default), from a reader whose bytes are unaligned, and written into the CPU
 * kernels' memory. The reference is built here from the values the checkpoint helper wrote and the
 * whole-matrix functions, not from the loader. Also: no read is larger than a row block or a header
 * (no whole file is held), a file that shrinks while read is refused by name, and a Model that
 * adopts the loaded arrays takes no copy of them and computes the same logits.
 */
import { describe, expect, it } from 'vitest';
import { cpuBackend } from '../src/backend/cpu';
import { simdAvailable, simdResident, simdResidentStats } from '../src/backend/cpu/simdMemory';
import { ConfigError, FormatError } from '../src/core/errors';
import { Rng } from '../src/core/rng';
import { describeEstimate, estimateMemory } from '../src/model/hfConfig';
import { hfName, loadHfCheckpoint, permuteRopeRows, repeatKvRows, type HfFolder } from '../src/model/hfLoad';
import { Model } from '../src/model/model';
import { quantizeQ4, quantizeQ8, type QuantKind } from '../src/model/quant';
import type { ByteRanges } from '../src/model/safetensors';
import { isQuantizable, weightBytes, weightNames, type WeightTensor } from '../src/model/weights';
import { hfCheckpoint, type HfCheckpoint, type HfSpec } from './helpers/hfCheckpoint';

/** The whole-file load's weight `ours`, from the written values: whole tensor → permute / repeat → quantize whole. */
function reference(ck: HfCheckpoint, ours: string, quant: QuantKind, d: number, heads: number, kvHeads: number): WeightTensor {
  const t = ck.tensors.get(hfName(ours))!;
  const HS = d / heads;
  const part = ours.slice(ours.lastIndexOf('.') + 1);
  let data: Float32Array = t.data.slice();
  if (part === 'wq') data = permuteRopeRows(data, heads, HS, d);
  if (part === 'wk') data = permuteRopeRows(data, kvHeads, HS, d);
  if (part === 'wk' || part === 'wv') data = repeatKvRows(data, kvHeads, heads, HS, d);
  const shape = part === 'wk' || part === 'wv' ? [d, d] : t.shape;
  if (quant === 'f32' || !isQuantizable(shape)) return { dtype: 'f32', shape, data };
  const [O, C] = shape as [number, number];
  return quant === 'q8' ? { dtype: 'q8', shape, ...quantizeQ8(data, O, C) } : { dtype: 'q4', shape, ...quantizeQ4(data, O, C) };
}

/** The arrays of a weight, as bytes (so f32 compares bit for bit, −0 and NaN patterns included). */
function bytesOf(t: WeightTensor): Uint8Array[] {
  const b = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength).slice();
  return t.dtype === 'f32' ? [b(t.data)] : [b(t.q), b(t.scales)];
}

/** The folder with each safetensors file behind a reader that hands out unaligned copies and records the size of every read. */
function rangedFolder(ck: HfCheckpoint, reads: number[], shrink?: { file: string; by: number }): HfFolder {
  const out = new Map<string, Uint8Array | ByteRanges>();
  for (const [name, bytes] of ck.files) {
    if (!name.endsWith('.safetensors')) {
      out.set(name, bytes);
      continue;
    }
    const end = shrink?.file === name ? bytes.length - shrink.by : bytes.length;
    out.set(name, {
      byteLength: bytes.length,
      read: async (b, e) => {
        reads.push(e - b);
        const part = bytes.subarray(Math.min(b, end), Math.min(e, end));
        const odd = new Uint8Array(part.length + 1).subarray(1); // byteOffset 1: no typed view of it is aligned
        odd.set(part);
        return odd;
      },
    });
  }
  return out;
}

const SOURCES: [string, HfSpec][] = [
  ['BF16, GQA 4/2, tied, 2 shards', { dtype: 'BF16', heads: 4, kvHeads: 2, tied: true, shards: 2, seed: 11 }],
  ['F16, GQA 4/1, untied', { dtype: 'F16', heads: 4, kvHeads: 1, tied: false, seed: 12 }],
  ['F32, MHA 2/2, untied, 3 shards', { dtype: 'F32', heads: 2, kvHeads: 2, tied: false, shards: 3, seed: 13 }],
];

describe('a checkpoint streamed tensor by tensor', () => {
  it.each(SOURCES)('%s: f32, q8 and q4 seats equal the whole-file load bit for bit, for any row block', async (_label, spec) => {
    const ck = hfCheckpoint(spec);
    const d = 64;
    const heads = spec.heads!;
    const kv = spec.kvHeads!;
    const size = spec.dtype === 'F32' ? 4 : 2;
    // one row at a time; 3 rows (splits heads of 16 or 32 rows, and every group of K/V rows); the default
    for (const chunkBytes of [1, 3 * d * size, undefined]) {
      for (const quant of ['f32', 'q8', 'q4'] as const) {
        const reads: number[] = [];
        const into = simdAvailable() ? cpuBackend : undefined;
        const m = await loadHfCheckpoint(rangedFolder(ck, reads), { quant, chunkBytes, into });
        const names = weightNames(m.cfg);
        expect([...m.weights.keys()]).toEqual(names);
        for (const ours of names) {
          const got = m.weights.get(ours)!;
          const want = reference(ck, ours, quant, d, heads, kv);
          expect(got.dtype, `${ours} ${quant}`).toBe(want.dtype);
          expect(got.shape, ours).toEqual(want.shape);
          expect(bytesOf(got), `${ours} ${quant} chunk ${chunkBytes}`).toEqual(bytesOf(want));
          if (into) for (const a of got.dtype === 'f32' ? [got.data] : [got.q, got.scales]) expect(simdResident(a), ours).toBe(true);
        }
        // The largest read is a row block (or a header, or one row when a row is longer than the block): never a whole file.
        const longestRow = Math.max(m.cfg.hidden, d) * size;
        const largestFile = Math.max(...[...ck.files].filter(([n]) => n.endsWith('.safetensors')).map(([, b]) => b.length));
        const headers = [...ck.files].filter(([n]) => n.endsWith('.safetensors')).map(([, b]) => new DataView(b.buffer, b.byteOffset).getUint32(0, true));
        expect(Math.max(...reads)).toBeLessThanOrEqual(Math.max(...headers, chunkBytes === undefined ? 1 << 20 : Math.max(chunkBytes, longestRow)));
        expect(Math.max(...reads)).toBeLessThan(largestFile / 2);
      }
    }
  });

  it('bytes in memory load as the same weights as the ranged reader', async () => {
    const ck = hfCheckpoint({ dtype: 'BF16', kvHeads: 2, tied: true, seed: 14 });
    const a = await loadHfCheckpoint(ck.files, { quant: 'q8' });
    const b = await loadHfCheckpoint(rangedFolder(ck, []), { quant: 'q8', chunkBytes: 200 });
    for (const [name, t] of a.weights) expect(bytesOf(b.weights.get(name)!), name).toEqual(bytesOf(t));
  });

  it('a file that shrinks after it was sized is refused naming it; a bad chunkBytes is refused', async () => {
    const ck = hfCheckpoint({ dtype: 'F16', seed: 15 });
    const err = await loadHfCheckpoint(rangedFolder(ck, [], { file: 'model.safetensors', by: 10 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FormatError);
    expect((err as Error).message).toMatch(/^model\.safetensors: safetensors: bytes \[\d+, \d+\) of the file read as \d+ bytes, not \d+; the file changed or was truncated while it was read$/);
    for (const bad of [0, 1.5, -4]) await expect(loadHfCheckpoint(ck.files, { chunkBytes: bad })).rejects.toBeInstanceOf(ConfigError);
  });

  it('a non-finite value is refused by its element index in the file, whatever the row block', async () => {
    const ck = hfCheckpoint({ dtype: 'F32', seed: 16, mutate: (st) => { (st.get('model.layers.1.self_attn.k_proj.weight')!.data as Float32Array)[777] = NaN; } });
    for (const chunkBytes of [1, 500, undefined]) {
      await expect(loadHfCheckpoint(ck.files, { quant: 'q8', chunkBytes })).rejects.toThrow('model.safetensors: tensor "model.layers.1.self_attn.k_proj.weight" element 777 is NaN; the weights are corrupt');
    }
  });
});

describe.runIf(simdAvailable())('a model that adopts weights loaded into the kernels\' memory', () => {
  it('takes no copy of them, computes the logits of a model given plain arrays, and frees them on dispose', async () => {
    const ck = hfCheckpoint({ dtype: 'BF16', kvHeads: 2, tied: true, vocab: 272, seed: 17 });
    const plain = await loadHfCheckpoint(ck.files, { quant: 'q8' });
    const into = await loadHfCheckpoint(ck.files, { quant: 'q8', into: cpuBackend });
    const r = new Rng(4);
    const tokens = Int32Array.from({ length: 2 * 7 }, () => r.int(272));
    const at0 = simdResidentStats()!.bytes;
    const copied = new Model(cpuBackend, plain.cfg, plain.weights, { trainable: 'lora', lora: { rank: 2, alpha: 4 }, seed: 3 });
    const copiedGrew = simdResidentStats()!.bytes - at0;
    const want = copied.forward(tokens, 2, 7).slice();
    copied.dispose();
    const before = simdResidentStats()!.bytes;
    const adopted = new Model(cpuBackend, into.cfg, into.weights, { trainable: 'lora', lora: { rank: 2, alpha: 4 }, seed: 3, adopt: true });
    const grew = simdResidentStats()!.bytes - before;
    // The same model, less one copy of the weights: what the constructor adds is the LoRA slots and tables.
    expect(copiedGrew - grew).toBeGreaterThanOrEqual(weightBytes(into.weights));
    expect(adopted.forward(tokens, 2, 7)).toEqual(want);
    const held = simdResidentStats()!.bytes;
    adopted.dispose();
    expect(held - simdResidentStats()!.bytes).toBeGreaterThanOrEqual(weightBytes(into.weights));
  });
});

describe('the memory estimate of a seat with one copy of its weights', () => {
  it('counts no host copy, and says none', async () => {
    const { cfg } = await loadHfCheckpoint(hfCheckpoint({ seed: 18 }).files, { quant: 'q8' });
    const o = { quant: 'q8' as const, loraRank: 4, sequences: 2, seqLen: 16, prompts: 4 };
    const two = estimateMemory(cfg, o);
    const one = estimateMemory(cfg, { ...o, hostCopy: false });
    expect(two.hostWeights).toBe(two.weights);
    expect(one.hostWeights).toBe(0);
    expect(one.total).toBe(two.total - two.weights);
    expect(describeEstimate(two)).toContain('their host copy');
    expect(describeEstimate(one)).not.toContain('host copy');
  });
});
