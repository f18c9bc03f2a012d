/**
 * The bench's GGUF writer (bench/gguf.ts) read back by a minimal GGUF reader written here from
 * ggml's docs/gguf.md (header, metadata, tensor infos, aligned data): names, dims and types;
 * Q8_0 / Q4_0 blocks that decode to exactly the values our q8 / q4 weights hold (quantizeQ8 /
 * quantizeQ4 then dequantize); Q/K rows in llama.cpp's order (row 2i + j of a head = HF row
 * j·HS/2 + i) and every other matrix untouched. Fresh random checkpoints (seeds 11, 12); llama.cpp
 * itself reads these files in `npm run bench:hf` (its logits are compared there).
 */
import { describe, expect, it } from 'vitest';
import { f16ToF32 } from '../src/core/f16';
import { dequantizeQ4, dequantizeQ8, quantizeQ4, quantizeQ8 } from '../src/model/quant';
import { GGML_F32, GGML_Q4_0, GGML_Q8_0, GGUF_ALIGNMENT, writeGguf, type GgufStorage } from '../bench/gguf';
import { hfCheckpoint } from './helpers/hfCheckpoint';

interface Read {
  meta: Map<string, unknown>;
  tensors: Map<string, { dims: number[]; type: number; data: Uint8Array }>;
}

/** Parses a GGUF v3 file (the subset of value types the writer uses, plus any scalar). */
function readGguf(bytes: Uint8Array): Read {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let p = 0;
  const u32 = (): number => ((p += 4), dv.getUint32(p - 4, true));
  const u64 = (): number => ((p += 8), Number(dv.getBigUint64(p - 8, true)));
  const str = (): string => {
    const n = u64();
    p += n;
    return new TextDecoder().decode(bytes.subarray(p - n, p));
  };
  const value = (t: number): unknown => {
    switch (t) {
      case 4:
        return u32();
      case 5:
        return ((p += 4), dv.getInt32(p - 4, true));
      case 6:
        return ((p += 4), dv.getFloat32(p - 4, true));
      case 7:
        return bytes[p++] === 1;
      case 8:
        return str();
      case 9: {
        const it = u32();
        const n = u64();
        return Array.from({ length: n }, () => value(it));
      }
    }
    throw new Error(`value type ${t} not expected`);
  };
  expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('GGUF');
  p = 4;
  expect(u32()).toBe(3);
  const nt = u64();
  const nk = u64();
  const meta = new Map<string, unknown>();
  for (let i = 0; i < nk; i++) {
    const k = str();
    meta.set(k, value(u32()));
  }
  const infos: { name: string; dims: number[]; type: number; offset: number }[] = [];
  for (let i = 0; i < nt; i++) {
    const name = str();
    const nd = u32();
    const dims = Array.from({ length: nd }, () => u64());
    infos.push({ name, dims, type: u32(), offset: u64() });
  }
  const start = Math.ceil(p / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;
  const tensors = new Map<string, { dims: number[]; type: number; data: Uint8Array }>();
  for (const x of infos) {
    expect(x.offset % GGUF_ALIGNMENT).toBe(0);
    const n = x.dims.reduce((a, b) => a * b, 1);
    const size = x.type === GGML_F32 ? 4 * n : x.type === GGML_Q8_0 ? (n / 32) * 34 : (n / 32) * 18;
    tensors.set(x.name, { dims: x.dims, type: x.type, data: bytes.subarray(start + x.offset, start + x.offset + size) });
  }
  return { meta, tensors };
}

/** A tensor's values, decoding F32 / Q8_0 / Q4_0 blocks as ggml does. */
function values(t: { type: number; data: Uint8Array }): Float32Array {
  const dv = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  if (t.type === GGML_F32) return new Float32Array(t.data.slice().buffer);
  const bs = t.type === GGML_Q8_0 ? 34 : 18;
  const nb = t.data.length / bs;
  const out = new Float32Array(nb * 32);
  for (let b = 0; b < nb; b++) {
    const d = f16ToF32(dv.getUint16(b * bs, true));
    for (let j = 0; j < 32; j++) {
      if (t.type === GGML_Q8_0) out[b * 32 + j] = dv.getInt8(b * bs + 2 + j) * d;
      else {
        const byte = t.data[b * bs + 2 + (j % 16)]!;
        out[b * 32 + j] = ((j < 16 ? byte & 15 : byte >> 4) - 8) * d;
      }
    }
  }
  return out;
}

const spec = { vocab: 300, d: 64, layers: 2, heads: 4, kvHeads: 2, hidden: 96, ropeTheta: 10000, eps: 1e-5, maxPositions: 64 };
const HS = spec.d / spec.heads;

/** HF rows in llama.cpp's order (the test's own statement of the permutation). */
function llamaRows(w: Float32Array, heads: number, cols: number): Float32Array {
  const out = new Float32Array(w.length);
  for (let h = 0; h < heads; h++) for (let i = 0; i < HS / 2; i++) for (let j = 0; j < 2; j++) out.set(w.subarray((h * HS + j * (HS / 2) + i) * cols, (h * HS + j * (HS / 2) + i + 1) * cols), (h * HS + 2 * i + j) * cols);
  return out;
}

describe('bench/gguf.ts', () => {
  for (const [storage, type, seed] of [['f32', GGML_F32, 11], ['q8_0', GGML_Q8_0, 12], ['q4_0', GGML_Q4_0, 13]] as const) {
    it(`${storage}: metadata, names, dims, and values equal to ours after the same quantization`, () => {
      const ck = hfCheckpoint({ ...spec, tied: false, seed });
      const bytes = new Uint8Array(Buffer.concat(writeGguf(spec, ck.tensors, storage as GgufStorage)));
      const g = readGguf(bytes);
      expect(g.meta.get('general.architecture')).toBe('llama');
      expect(g.meta.get('llama.attention.head_count_kv')).toBe(2);
      expect(g.meta.get('llama.rope.dimension_count')).toBe(HS);
      expect((g.meta.get('tokenizer.ggml.tokens') as string[]).length).toBe(spec.vocab);
      expect(g.tensors.size).toBe(ck.tensors.size);
      const q = g.tensors.get('blk.1.attn_q.weight')!;
      expect(q.dims).toEqual([spec.d, spec.d]);
      expect(q.type).toBe(type);
      expect(g.tensors.get('blk.1.attn_k.weight')!.dims).toEqual([spec.d, spec.kvHeads * HS]);
      expect(g.tensors.get('blk.0.ffn_down.weight')!.dims).toEqual([spec.hidden, spec.d]);
      expect(g.tensors.get('output_norm.weight')!.type).toBe(GGML_F32);
      const ours = (w: Float32Array, rows: number, cols: number): Float32Array =>
        storage === 'f32' ? w : storage === 'q8_0' ? dequantizeQ8(quantizeQ8(w, rows, cols), rows, cols) : dequantizeQ4(quantizeQ4(w, rows, cols), rows, cols);
      const hf = (n: string): Float32Array => ck.tensors.get(n)!.data;
      expect(values(q)).toEqual(ours(llamaRows(hf('model.layers.1.self_attn.q_proj.weight'), spec.heads, spec.d), spec.d, spec.d));
      expect(values(g.tensors.get('blk.1.attn_k.weight')!)).toEqual(ours(llamaRows(hf('model.layers.1.self_attn.k_proj.weight'), spec.kvHeads, spec.d), spec.kvHeads * HS, spec.d));
      expect(values(g.tensors.get('blk.0.ffn_down.weight')!)).toEqual(ours(hf('model.layers.0.mlp.down_proj.weight'), spec.d, spec.hidden));
      expect(values(g.tensors.get('output.weight')!)).toEqual(ours(hf('lm_head.weight'), spec.vocab, spec.d));
      expect(values(g.tensors.get('blk.0.attn_norm.weight')!)).toEqual(hf('model.layers.0.input_layernorm.weight'));
    });
  }

  it('a tied checkpoint writes no output.weight (llama.cpp then reads token_embd)', () => {
    const g = readGguf(new Uint8Array(Buffer.concat(writeGguf(spec, hfCheckpoint({ ...spec, tied: true, seed: 14 }).tensors, 'q8_0'))));
    expect(g.tensors.has('output.weight')).toBe(false);
    expect(g.tensors.has('token_embd.weight')).toBe(true);
  });
});
