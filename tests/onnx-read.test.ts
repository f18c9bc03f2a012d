/**
 * The ONNX reader (src/model/onnx/read.ts, wire.ts) and the Llama weight mapping
 * (src/model/onnx/llama.ts) on folders the tests write themselves (tests/helpers/onnxFolder.ts:
 * a tiny random HF checkpoint exported by bench/onnx/decoder.ts), nothing downloaded:
 *   - every weight read back bit for bit: f32 files against the checkpoint's own tensors, f16 /
 *     8-bit (DequantizeLinear) / 4-bit (MatMulNBits, with and without zero points) files against
 *     the values the exporter computed with, after the same RoPE-row and K/V-repeat mapping as a
 *     safetensors checkpoint (hfLoad.ts) — in both namings (optimum, onnxruntime-genai) and with
 *     external data;
 *   - hostile files refused with their own message before anything big is allocated: truncated
 *     protobuf, external data whose offsets lie, dims whose product overflows, a 1 GB initializer
 *     declared in a 1 MB file, an unknown operator, a path outside the folder;
 *   - graphs that cannot be mapped refused naming the node or initializer.
 */
import { describe, expect, it } from 'vitest';
import { Msg } from '../bench/onnx/protobuf';
import { FormatError } from '../src/core/errors';
import { Rng } from '../src/core/rng';
import { permuteRopeRows, repeatKvRows } from '../src/model/hfLoad';
import { loadOnnxLlama, onnxFilesOf } from '../src/model/onnx/llama';
import { MAX_ELEMENTS, readOnnx, tensorF32 } from '../src/model/onnx/read';
import { hfName } from '../src/model/hfLoad';
import type { ModelWeights } from '../src/model/weights';
import { onnxFolder, type OnnxFolder } from './helpers/onnxFolder';

const SPEC = { kvHeads: 2, tied: false } as const;

/** Our weight `ours` as the mapping must produce it from HF-layout values `hf` ([out × in]). */
function mapped(f: OnnxFolder, ours: string, hf: Float32Array): Float32Array {
  const c = f.hf.config as Record<string, number>;
  const d = c.hidden_size!;
  const heads = c.num_attention_heads!;
  const kv = c.num_key_value_heads!;
  const HS = d / heads;
  const part = ours.slice(ours.lastIndexOf('.') + 1);
  let x = hf;
  if (part === 'wq') x = permuteRopeRows(x, heads, HS, d);
  if (part === 'wk') x = permuteRopeRows(x, kv, HS, d);
  if (part === 'wk' || part === 'wv') x = repeatKvRows(x, kv, heads, HS, d);
  return x;
}

function sameBits(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  let diff = 0;
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) diff++;
  return diff;
}

function exactF32(w: ModelWeights, name: string): Float32Array {
  const t = w.get(name)!;
  if (t.dtype !== 'f32') throw new Error(`${name} is ${t.dtype}`);
  return t.data;
}

describe('initializers read back bit for bit', () => {
  const cases: [string, Parameters<typeof onnxFolder>[1]][] = [
    ['f32, optimum naming', { weights: 'f32' }],
    ['f32, genai naming, external data', { weights: 'f32', naming: 'genai', external: true }],
    ['f16, optimum naming', { weights: 'f16' }],
    ['8-bit DequantizeLinear, external data', { weights: 'q8', external: true }],
    ['4-bit MatMulNBits with zero points, optimum naming', { weights: 'q4' }],
    ['4-bit MatMulNBits without zero points, genai naming, external data', { weights: 'q4', q4ZeroPoints: false, naming: 'genai', external: true }],
  ];
  it.each(cases)('%s', async (_label, o) => {
    const f = onnxFolder(SPEC, o);
    const m = await loadOnnxLlama(f.files, f.file, { quant: 'f32' });
    expect(m.cfg.tied).toBe(false);
    let checked = 0;
    for (const [ours] of m.exact) {
      const hf = hfName(ours);
      const src = o!.weights === 'f32' ? f.hf.tensors.get(hf)!.data : f.used.get(hf)!.data;
      expect(sameBits(exactF32(m.exact, ours), mapped(f, ours, src)), ours).toBe(0);
      checked++;
    }
    expect(checked).toBe(2 + 2 * 9 + 1);
    // f32 storage keeps the exact values; q8 / q4 storage are our blocks of them.
    expect(m.weights).toBe(m.exact);
    if (o!.weights !== 'f32') expect(new Set(m.onnx.encodings.values()).size).toBeGreaterThan(0);
  });

  it('a tied checkpoint whose f32 head equals the embedding stays tied; a quantized head unties it', async () => {
    const f32 = onnxFolder({ kvHeads: 2, tied: true }, { weights: 'f32' });
    expect((await loadOnnxLlama(f32.files, f32.file)).cfg.tied).toBe(true);
    const q4 = onnxFolder({ kvHeads: 2, tied: true }, { weights: 'q4' });
    const m = await loadOnnxLlama(q4.files, q4.file);
    expect(m.cfg.tied).toBe(false);
    expect(sameBits(exactF32(m.exact, 'lm_head'), q4.used.get('lm_head.weight')!.data)).toBe(0);
  });

  it('tensorF32 reads an f16 initializer as its exact f32 values', () => {
    const f = onnxFolder(SPEC, { weights: 'f16' });
    const m = readOnnx(f.files, f.file);
    const t = m.initializers.get('model.norm.weight')!;
    expect(sameBits(tensorF32(m, f.files, t), f.used.get('model.norm.weight')!.data)).toBe(0);
  });

  it('stores the mapped weights as q8 / q4 blocks when asked', async () => {
    const f = onnxFolder(SPEC, { weights: 'q4' });
    for (const quant of ['q8', 'q4'] as const) {
      const m = await loadOnnxLlama(f.files, f.file, { quant });
      expect(m.weights.get('layers.0.wq')!.dtype).toBe(quant);
      expect(m.weights.get('layers.0.attn_norm')!.dtype).toBe('f32');
    }
  });

  it('lists a folder\'s .onnx files, onnx/model.onnx first', () => {
    const files = new Map<string, Uint8Array>([['onnx/model_q4.onnx', new Uint8Array()], ['onnx/model.onnx', new Uint8Array()], ['model.onnx', new Uint8Array()], ['config.json', new Uint8Array()]]);
    expect(onnxFilesOf(files)).toEqual(['onnx/model.onnx', 'onnx/model_q4.onnx', 'model.onnx']);
  });
});

/** A ModelProto holding one graph with `inits` and `nodes` (already-encoded messages). */
function model(inits: Msg[], nodes: Msg[] = []): Uint8Array {
  const g = new Msg();
  for (const n of nodes) g.msg(1, n);
  g.str(2, 'g');
  for (const t of inits) g.msg(5, t);
  return new Msg().int(1, 8).msg(7, g).msg(8, new Msg().str(1, '').int(2, 17)).bytes();
}
const tensor = (name: string, dims: number[], raw: Uint8Array): Msg => new Msg().ints(1, dims).int(2, 1).str(8, name).raw(9, raw);
const refuse = (files: Map<string, Uint8Array>, file: string, re: RegExp): void => {
  let err: unknown;
  try {
    readOnnx(files, file);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(FormatError);
  expect((err as Error).message).toMatch(re);
};

describe('malformed and hostile files are refused with a specific message', () => {
  it('a truncated file', () => {
    const f = onnxFolder(SPEC, { weights: 'f32' });
    const bytes = f.files.get(f.file)!;
    for (const cut of [bytes.length - 3, Math.floor(bytes.length / 2), 7]) {
      refuse(new Map([['m.onnx', bytes.subarray(0, cut)]]), 'm.onnx', /truncated|not an ONNX model/);
    }
  });

  it('external data whose offsets lie, or that is missing, or outside the folder', () => {
    const f = onnxFolder(SPEC, { weights: 'f32', external: true });
    const files = new Map(f.files);
    const data = files.get(`${f.file}_data`)!;
    files.set(`${f.file}_data`, data.subarray(0, data.length - 100));
    refuse(files, f.file, /at offset \d+ of "onnx\/model\.onnx_data", but that file has \d+ bytes/);
    files.delete(`${f.file}_data`);
    refuse(files, f.file, /is stored in "onnx\/model\.onnx_data", which the folder lacks/);
    const kv = (k: string, v: string): Msg => new Msg().str(1, k).str(2, v);
    const ext = (loc: string, offset: string, length: string): Msg => new Msg().ints(1, [4]).int(2, 1).str(8, 'w').msg(13, kv('location', loc)).msg(13, kv('offset', offset)).msg(13, kv('length', length)).int(14, 1);
    const one = (t: Msg): Map<string, Uint8Array> => new Map([['m.onnx', model([t])], ['w.bin', new Uint8Array(64)], ['../secret', new Uint8Array(64)]]);
    refuse(one(ext('../secret', '0', '16')), 'm.onnx', /a path outside the model's folder/);
    refuse(one(ext('w.bin', '56', '16')), 'm.onnx', /at offset 56 of "w\.bin", but that file has 64 bytes/);
    refuse(one(ext('w.bin', '-8', '16')), 'm.onnx', /offset "-8" is not a byte offset/);
    refuse(one(ext('w.bin', '0', '1024')), 'm.onnx', /external data length 1024 bytes, but \[4\] float needs 16/);
  });

  it('dims whose product overflows', () => {
    refuse(new Map([['m.onnx', model([tensor('w', [1 << 20, 1 << 20, 1 << 20], new Uint8Array(16))])]]), 'm.onnx', new RegExp(`initializer "w": dims \\[1048576, 1048576, 1048576\\] hold more than ${MAX_ELEMENTS} elements`));
    refuse(new Map([['m.onnx', model([tensor('w', [4, -1], new Uint8Array(16))])]]), 'm.onnx', /dimension -1 .* is not a size/);
  });

  it('a 1 GB initializer declared in a 1 MB file', () => {
    const bytes = model([tensor('big', [268435456], new Uint8Array(1 << 20))]);
    expect(bytes.length).toBeLessThan(1.1 * 2 ** 20);
    refuse(new Map([['m.onnx', bytes]]), 'm.onnx', /initializer "big": \[268435456\] float needs 1073741824 bytes but the file holds 1048576 for it/);
  });

  it('an unknown operator, named with its node', () => {
    const node = new Msg().str(1, 'x').str(2, 'y').str(3, '/model/mystery').str(4, 'FlashFooAttention').str(7, 'com.example');
    refuse(new Map([['m.onnx', model([], [node])]]), 'm.onnx', /node "\/model\/mystery" uses operator "FlashFooAttention" of domain "com.example", which this playground does not know/);
  });

  it('never throws anything but a FormatError on random damage (seeded: cuts and flipped bytes)', () => {
    const f = onnxFolder(SPEC, { weights: 'q4', external: true });
    const bytes = f.files.get(f.file)!;
    const r = new Rng(99, [0x6f6e]);
    let refused = 0;
    for (let i = 0; i < 300; i++) {
      const b = i % 3 === 0 ? bytes.slice(0, r.int(bytes.length)) : bytes.slice();
      if (i % 3 !== 0) for (let k = 0; k < 1 + r.int(8); k++) b[r.int(b.length)] = r.int(256);
      const files = new Map(f.files).set(f.file, b);
      try {
        const m = readOnnx(files, f.file);
        for (const t of m.initializers.values()) if (t.dataType === 1 || t.dataType === 10) tensorF32(m, files, t);
      } catch (e) {
        if (!(e instanceof FormatError)) throw new Error(`mutation ${i}: ${String(e)}`);
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(100);
  });

  it('not protobuf at all, or no graph', () => {
    refuse(new Map([['m.onnx', new TextEncoder().encode('{"not": "onnx"}')]]), 'm.onnx', /wire type|not ONNX|truncated|field number 0/);
    refuse(new Map([['m.onnx', new Msg().int(1, 8).bytes()]]), 'm.onnx', /not an ONNX model \(no ir_version or no graph/);
    refuse(new Map(), 'm.onnx', /"m.onnx" is missing/);
  });
});

describe('graphs that cannot be mapped are refused by node or initializer', () => {
  const load = async (f: OnnxFolder): Promise<string> => {
    try {
      await loadOnnxLlama(f.files, f.file);
    } catch (e) {
      expect(e).toBeInstanceOf(FormatError);
      return (e as Error).message;
    }
    throw new Error('loaded');
  };
  /** The folder with the .onnx file's bytes edited as text (names are stored as UTF-8). */
  const edit = (f: OnnxFolder, from: string, to: string): OnnxFolder => {
    const bytes = f.files.get(f.file)!;
    const enc = new TextEncoder();
    const a = enc.encode(from);
    const b = enc.encode(to);
    expect(a.length).toBe(b.length);
    const out = bytes.slice();
    let n = 0;
    for (let i = 0; i + a.length <= out.length; i++) {
      if (a.every((x, k) => out[i + k] === x)) {
        out.set(b, i);
        n++;
      }
    }
    expect(n).toBeGreaterThan(0);
    const files = new Map(f.files);
    files.set(f.file, out);
    return { ...f, files };
  };

  it('a fused q/k/v projection', async () => {
    const f = edit(onnxFolder(SPEC), '/model/layers.1/self_attn/q_proj/MatMul', '/model/layers.1/self_attn/qkv_proj/MatM');
    expect(await load(f)).toMatch(/node "\/model\/layers\.1\/self_attn\/qkv_proj\/MatM" is a fused qkv_proj projection/);
  });

  it('a projection missing (renamed away) is named, and so is the unmapped weight it leaves', async () => {
    const f = edit(onnxFolder(SPEC), '/model/layers.0/mlp/up_proj/MatMul', '/model/layers.0/mlp/up_xxxx/MatMul');
    expect(await load(f)).toMatch(/node "\/model\/layers\.0\/mlp\/up_xxxx\/MatMul" \(MatMul\) multiplies by weight "onnx::MatMul_\d+" \[64, 96\], which is not a Llama projection/);
  });

  it('a missing norm gain, by initializer name', async () => {
    const f = edit(onnxFolder(SPEC), 'model.layers.1.post_attention_layernorm.weight', 'model.layers.1.post_attention_layernorm.weighX');
    expect(await load(f)).toMatch(/initializer "model\.layers\.1\.post_attention_layernorm\.weight" \(the layers\.1\.mlp_norm gain, \[64\]\) is missing/);
  });

  it('a shape that does not match config.json', async () => {
    const f = onnxFolder(SPEC);
    const files = new Map(f.files);
    const cfg = JSON.parse(new TextDecoder().decode(files.get('config.json')));
    files.set('config.json', new TextEncoder().encode(JSON.stringify({ ...cfg, intermediate_size: 128 })));
    expect(await load({ ...f, files })).toMatch(/the weight "onnx::MatMul_\d+" of node "\/model\/layers\.0\/mlp\/gate_proj\/MatMul" is \[64, 96\]; config\.json implies \[64, 128\]/);
  });

  it('a block-quantized embedding (GatherBlockQuantized)', async () => {
    const node = new Msg().str(1, 'model.embed_tokens.weight').str(1, 'input_ids').str(2, 'x').str(3, '/model/embed_tokens/GatherBlockQuantized').str(4, 'GatherBlockQuantized').str(7, 'com.microsoft');
    const g = onnxFolder(SPEC);
    const files = new Map(g.files);
    files.set(g.file, model([], [node]));
    expect(await load({ ...g, files })).toMatch(/node "\/model\/embed_tokens\/GatherBlockQuantized" reads the embedding with GatherBlockQuantized/);
  });
});
