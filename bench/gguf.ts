/**
 * A GGUF writer for the bench's llama.cpp peer (bench/hf.ts): a Hugging Face Llama checkpoint's
 * tensors (tests/helpers/hfCheckpoint.ts: HF names, [out × in], q/k rows in rotate-half order)
 * → one GGUF v3 file that llama.cpp loads as architecture "llama", its matrices stored F32, Q8_0
 * or Q4_0. The format is ggml's docs/gguf.md:
 *   header   "GGUF", version u32 = 3, tensor count u64, metadata count u64
 *   metadata key (u64 length + UTF-8), value type u32, value (arrays: item type u32, count u64, items)
 *   tensors  name, n_dims u32, dims u64 (ne[0] = the innermost, i.e. [in, out] for a matrix),
 *            ggml type u32, offset u64 from the data section (a multiple of general.alignment = 32)
 *   data     after padding the header to 32 bytes
 * Blocks of 32 values along the input dim: Q8_0 = f16 scale + 32 int8; Q4_0 = f16 scale + 16
 * bytes, byte j holding element j (low nibble) and element j + 16 (high nibble), value
 * (nibble − 8)·scale. The quantized blocks are src/model/quant.ts's own (quantizeQ8 / quantizeQ4:
 * the same numbers as GGUF's Q8_0 / Q4_0, only Q4's nibble order differs), so llama.cpp computes
 * with exactly the weights our q8 / q4 model holds and their logits are comparable.
 *
 * Q and K rows are permuted as llama.cpp's convert_hf_to_gguf.py does for HF Llama checkpoints
 * (llama.cpp's "llama" RoPE rotates adjacent pairs; HF rotates halves): row 2i + j of a head takes
 * HF row j·HS/2 + i — our loader's own permutation (src/model/hfLoad.ts permuteRopeRows). Norm gains
 * stay F32 (llama.cpp needs them so). A tied head writes no output.weight (llama.cpp then uses
 * token_embd). The vocabulary is a placeholder the bench never tokenizes with — llama.cpp's SPM
 * model: <unk>, <s>, </s>, the 256 byte tokens <0x00>…<0xFF> it looks up at load, then "t<i>".
 *
 * Not here: reading GGUF (llama.cpp does; tests/gguf.test.ts has a minimal reader to check this
 * writer), other architectures, K-quants.
 */
import { permuteRopeRows } from '../src/model/hfLoad';
import { quantizeQ4, quantizeQ8 } from '../src/model/quant';
import type { DecoderSpec } from './onnx/decoder';

export type GgufStorage = 'f32' | 'q8_0' | 'q4_0';

/** The shape and numbers a GGUF's metadata needs: the same as the ONNX decoder export's. */
export type GgufSpec = DecoderSpec;

/** ggml_type numbers. */
export const GGML_F32 = 0;
export const GGML_Q4_0 = 2;
export const GGML_Q8_0 = 8;
/** GGUF metadata value types. */
const U32 = 4;
const I32 = 5;
const F32 = 6;
const BOOL = 7;
const STR = 8;
const ARR = 9;
export const GGUF_ALIGNMENT = 32;

/** HF tensor name → GGUF name. */
function ggufName(hf: string): string {
  if (hf === 'model.embed_tokens.weight') return 'token_embd.weight';
  if (hf === 'model.norm.weight') return 'output_norm.weight';
  if (hf === 'lm_head.weight') return 'output.weight';
  const m = /^model\.layers\.(\d+)\.(.+)\.weight$/.exec(hf);
  const part: Record<string, string> = {
    input_layernorm: 'attn_norm', 'self_attn.q_proj': 'attn_q', 'self_attn.k_proj': 'attn_k', 'self_attn.v_proj': 'attn_v',
    'self_attn.o_proj': 'attn_output', post_attention_layernorm: 'ffn_norm', 'mlp.gate_proj': 'ffn_gate', 'mlp.up_proj': 'ffn_up', 'mlp.down_proj': 'ffn_down',
  };
  if (!m || !part[m[2]!]) throw new RangeError(`gguf: no GGUF name for tensor "${hf}"`);
  return `blk.${m[1]}.${part[m[2]!]}.weight`;
}

/** Byte sink with little-endian writers. */
class Bytes {
  private chunks: Uint8Array[] = [];
  private cur = new Uint8Array(1 << 16);
  private dv = new DataView(this.cur.buffer);
  private pos = 0;
  size = 0;

  private room(n: number): void {
    if (this.pos + n <= this.cur.length) return;
    this.flush();
    if (n > this.cur.length) {
      this.cur = new Uint8Array(n);
      this.dv = new DataView(this.cur.buffer);
    }
  }
  private flush(): void {
    if (this.pos > 0) this.chunks.push(this.cur.slice(0, this.pos));
    this.pos = 0;
  }
  u32(v: number): void {
    this.room(4);
    this.dv.setUint32(this.pos, v, true);
    this.pos += 4;
    this.size += 4;
  }
  i32(v: number): void {
    this.room(4);
    this.dv.setInt32(this.pos, v, true);
    this.pos += 4;
    this.size += 4;
  }
  u64(v: number): void {
    this.room(8);
    this.dv.setBigUint64(this.pos, BigInt(v), true);
    this.pos += 8;
    this.size += 8;
  }
  f32(v: number): void {
    this.room(4);
    this.dv.setFloat32(this.pos, v, true);
    this.pos += 4;
    this.size += 4;
  }
  u8(v: number): void {
    this.room(1);
    this.cur[this.pos++] = v;
    this.size += 1;
  }
  raw(b: Uint8Array): void {
    this.flush();
    this.chunks.push(b);
    this.size += b.length;
  }
  str(s: string): void {
    const b = new TextEncoder().encode(s);
    this.u64(b.length);
    this.raw(b);
  }
  pad(to: number): void {
    while (this.size % to !== 0) this.u8(0);
  }
  parts(): Uint8Array[] {
    this.flush();
    return this.chunks;
  }
}

type Meta = { t: 'u32'; v: number } | { t: 'f32'; v: number } | { t: 'str'; v: string } | { t: 'bool'; v: boolean } | { t: 'strs'; v: string[] } | { t: 'f32s'; v: Float32Array } | { t: 'i32s'; v: Int32Array };

/** An array value: item type, count, items. */
function array<T>(b: Bytes, type: number, items: ArrayLike<T> & Iterable<T>, put: (x: T) => void): void {
  b.u32(ARR);
  b.u32(type);
  b.u64(items.length);
  for (const x of items) put(x);
}

function writeMeta(b: Bytes, key: string, m: Meta): void {
  b.str(key);
  switch (m.t) {
    case 'u32':
      b.u32(U32);
      b.u32(m.v);
      break;
    case 'f32':
      b.u32(F32);
      b.f32(m.v);
      break;
    case 'bool':
      b.u32(BOOL);
      b.u8(m.v ? 1 : 0);
      break;
    case 'str':
      b.u32(STR);
      b.str(m.v);
      break;
    case 'strs':
      array(b, STR, m.v, (x) => b.str(x));
      break;
    case 'f32s':
      array(b, F32, m.v, (x) => b.f32(x));
      break;
    case 'i32s':
      array(b, I32, m.v, (x) => b.i32(x));
      break;
  }
}

/** One matrix [rows × cols] as GGUF blocks of the storage type (header). */
export function ggufMatrix(w: Float32Array, rows: number, cols: number, storage: GgufStorage, what: string): { type: number; bytes: Uint8Array } {
  if (storage === 'f32') return { type: GGML_F32, bytes: new Uint8Array(w.buffer.slice(w.byteOffset, w.byteOffset + w.byteLength)) };
  const nb = cols / 32;
  if (storage === 'q8_0') {
    const q = quantizeQ8(w, rows, cols, what);
    const out = new Uint8Array(rows * nb * 34);
    const dv = new DataView(out.buffer);
    for (let blk = 0; blk < rows * nb; blk++) {
      dv.setUint16(blk * 34, q.scales[blk]!, true);
      out.set(new Uint8Array(q.q.buffer, q.q.byteOffset + blk * 32, 32), blk * 34 + 2);
    }
    return { type: GGML_Q8_0, bytes: out };
  }
  const q = quantizeQ4(w, rows, cols, what);
  const out = new Uint8Array(rows * nb * 18);
  const dv = new DataView(out.buffer);
  const nib = (e: number): number => (q.q[e >> 1]! >> ((e & 1) * 4)) & 15;
  for (let blk = 0; blk < rows * nb; blk++) {
    dv.setUint16(blk * 18, q.scales[blk]!, true);
    for (let j = 0; j < 16; j++) out[blk * 18 + 2 + j] = nib(blk * 32 + j) | (nib(blk * 32 + j + 16) << 4);
  }
  return { type: GGML_Q4_0, bytes: out };
}

/** The GGUF file (header) as byte chunks, in order; write them one after the other. */
export function writeGguf(s: GgufSpec, t: ReadonlyMap<string, { shape: readonly number[]; data: Float32Array }>, storage: GgufStorage): Uint8Array[] {
  const HS = s.d / s.heads;
  const names = [...t.keys()];
  const tensors: { name: string; dims: number[]; type: number; bytes: Uint8Array }[] = [];
  for (const hf of names) {
    const x = t.get(hf)!;
    const name = ggufName(hf);
    if (x.shape.length === 1) {
      tensors.push({ name, dims: [x.shape[0]!], type: GGML_F32, bytes: ggufMatrix(x.data, 1, x.shape[0]!, 'f32', hf).bytes });
      continue;
    }
    const [rows, cols] = x.shape as [number, number];
    let w = x.data;
    if (hf.endsWith('q_proj.weight')) w = permuteRopeRows(w, s.heads, HS, cols);
    if (hf.endsWith('k_proj.weight')) w = permuteRopeRows(w, s.kvHeads, HS, cols);
    const m = ggufMatrix(w, rows, cols, storage, hf);
    tensors.push({ name, dims: [cols, rows], ...m });
  }
  const tokens = ['<unk>', '<s>', '</s>', ...Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)];
  if (s.vocab < tokens.length + 1) throw new RangeError(`gguf: vocab ${s.vocab} is smaller than the ${tokens.length + 1} placeholder tokens llama.cpp's SPM vocabulary needs`);
  for (let i = tokens.length; i < s.vocab; i++) tokens.push(`t${i}`);
  const types = Int32Array.from(tokens, (_, i) => (i === 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1)); // unknown, control, byte, normal
  const meta: [string, Meta][] = [
    ['general.architecture', { t: 'str', v: 'llama' }],
    ['general.name', { t: 'str', v: 'sat-playground bench checkpoint' }],
    ['general.alignment', { t: 'u32', v: GGUF_ALIGNMENT }],
    ['general.file_type', { t: 'u32', v: storage === 'f32' ? 0 : storage === 'q8_0' ? 7 : 2 }],
    ['llama.context_length', { t: 'u32', v: s.maxPositions }],
    ['llama.embedding_length', { t: 'u32', v: s.d }],
    ['llama.block_count', { t: 'u32', v: s.layers }],
    ['llama.feed_forward_length', { t: 'u32', v: s.hidden }],
    ['llama.attention.head_count', { t: 'u32', v: s.heads }],
    ['llama.attention.head_count_kv', { t: 'u32', v: s.kvHeads }],
    ['llama.rope.dimension_count', { t: 'u32', v: HS }],
    ['llama.rope.freq_base', { t: 'f32', v: s.ropeTheta }],
    ['llama.attention.layer_norm_rms_epsilon', { t: 'f32', v: s.eps }],
    ['llama.vocab_size', { t: 'u32', v: s.vocab }],
    ['tokenizer.ggml.model', { t: 'str', v: 'llama' }],
    ['tokenizer.ggml.tokens', { t: 'strs', v: tokens }],
    ['tokenizer.ggml.scores', { t: 'f32s', v: new Float32Array(s.vocab) }],
    ['tokenizer.ggml.token_type', { t: 'i32s', v: types }],
    ['tokenizer.ggml.unknown_token_id', { t: 'u32', v: 0 }],
    ['tokenizer.ggml.bos_token_id', { t: 'u32', v: 1 }],
    ['tokenizer.ggml.eos_token_id', { t: 'u32', v: 2 }],
    ['tokenizer.ggml.add_bos_token', { t: 'bool', v: false }],
  ];
  const b = new Bytes();
  b.raw(new TextEncoder().encode('GGUF'));
  b.u32(3);
  b.u64(tensors.length);
  b.u64(meta.length);
  for (const [k, m] of meta) writeMeta(b, k, m);
  let offset = 0;
  for (const x of tensors) {
    b.str(x.name);
    b.u32(x.dims.length);
    for (const d of x.dims) b.u64(d);
    b.u32(x.type);
    b.u64(offset);
    offset += Math.ceil(x.bytes.length / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;
  }
  b.pad(GGUF_ALIGNMENT);
  for (const x of tensors) {
    b.raw(x.bytes);
    b.pad(GGUF_ALIGNMENT);
  }
  return b.parts();
}
