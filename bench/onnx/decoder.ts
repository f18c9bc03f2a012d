/**
 * ONNX export of a Hugging Face Llama checkpoint as a *decoder with a KV cache*, in the layouts
 * the browser's small quantized models come in — so the tests and the benchmark can build the
 * folders a teacher would bring (transformers.js / onnx-community, onnxruntime-genai) without a
 * download. Input: the HF tensors (tests/helpers/hfCheckpoint.ts: HF names, [out × in], q/k rows
 * in rotate-half order, K/V with num_key_value_heads heads). Output: the .onnx bytes, the external
 * data file when asked, and the values the graph computes with (dequantized), per HF name.
 *
 * Graph (opset 17, plus com.microsoft MatMulNBits for q4), HF's maths exactly:
 *   inputs   input_ids int64 [B, T], attention_mask int64 [B, P+T], position_ids int64 [B, T],
 *            past_key_values.L.key / .value float [B, KV, P, HS]
 *   outputs  logits float [B, T, V], present.L.key / .value float [B, KV, P+T, HS]
 *   x = embed[input_ids];  cos, sin = COS[position_ids], SIN[position_ids]   (rotate-half tables)
 *   mask[b, t, s] = −1e9 where s > position_ids[b, t] or attention_mask[b, s] = 0, else 0
 *   per layer: h = rmsnorm(x) (Pow/ReduceMean/Add/Sqrt/Div/Mul, as optimum's export decomposes it)
 *     q, k, v = h·Wqᵀ, h·Wkᵀ, h·Wvᵀ → [B, heads, T, HS]; q, k ← q·cos + rotate_half(q)·sin
 *     present.k = Concat(past.k, k), present.v likewise (axis 2)
 *     repeat_kv by Gather on the head axis; att = Softmax(q·kᵀ/√HS + mask); x += (att·v)·Woᵀ
 *     x += (silu(h·W1ᵀ) ⊙ h·W3ᵀ)·W2ᵀ with h = rmsnorm(x)
 *   logits = rmsnorm(x)·lm_headᵀ  (its own initializer even when the config ties it, as optimum writes)
 *
 * Weight storage (`weights`):
 *   f32   MatMul on an f32 initializer [in × out]
 *   f16   a float16 initializer, Cast to float before its MatMul / Gather (norm gains too)
 *   q8    uint8 [in × out] with a scale and zero point per output column, DequantizeLinear(axis 1)
 *         before MatMul; the embedding per row, DequantizeLinear(axis 0) before Gather
 *   q4    com.microsoft MatMulNBits (bits 4, block_size 32): B uint8 [N, K/32, 16], scales f32
 *         [N·K/32], zero_points packed uint8 (optional: without them the zero point is 8);
 *         the embedding stays f32, as onnx-community's q4 files keep it
 * Naming (`naming`):
 *   optimum  nodes /model/layers.L/self_attn/q_proj/MatMul, weights anonymous (onnx::MatMul_N…),
 *            norms model.layers.L.input_layernorm.weight, model.norm.weight
 *   genai    nodes /model/layers.L/attn/q_proj/MatMul (…/MatMulNBits), weights
 *            model.layers.L.attn.q_proj.MatMul.weight (…MatMulNBits.qweight / .scales),
 *            final norm model.layers.{layers}.final_norm_layernorm.weight
 * External data (`external`): every initializer of 1 KiB or more goes to `<file>_data`
 * (data_location EXTERNAL, location / offset / length), as torch.onnx.export writes big models.
 *
 * Not here: reading (src/model/onnx/), our own interleaved-RoPE export without a cache (export.ts).
 */
import { f16ToF32, f32ToF16 } from '../../src/core/f16';
import { Msg } from './protobuf';
import { attrMsg, FLOAT, FLOAT16, INT64, transpose, UINT8, valueInfo, type Attr } from './onnxProto';

export type DecoderWeights = 'f32' | 'f16' | 'q8' | 'q4';
export type DecoderNaming = 'optimum' | 'genai';

export interface DecoderSpec {
  readonly vocab: number;
  readonly d: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly hidden: number;
  readonly ropeTheta: number;
  readonly eps: number;
  /** Rows of the RoPE tables (max_position_embeddings). */
  readonly maxPositions: number;
}

export interface DecoderExportOptions {
  readonly weights?: DecoderWeights;
  readonly naming?: DecoderNaming;
  /** The .onnx file's name in the folder (default "onnx/model.onnx"); external data goes to `${file}_data`. */
  readonly file?: string;
  readonly external?: boolean;
  /** q4 only: write zero points (default true; without them MatMulNBits uses 8). */
  readonly q4ZeroPoints?: boolean;
}

export interface DecoderExport {
  /** file name → bytes: the .onnx file and, with `external`, its data file. */
  readonly files: Map<string, Uint8Array>;
  /** HF name → the [out × in] (or [d]) values the graph computes with, after its own dequantization. */
  readonly used: Map<string, { shape: number[]; data: Float32Array }>;
}

function le(data: Float32Array | BigInt64Array | Uint16Array | Uint8Array): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
}

class Builder {
  readonly nodes: Msg[] = [];
  readonly inits: Msg[] = [];
  private readonly names = new Set<string>();
  private n = 0;
  private anon = 100;
  private ext: Uint8Array[] = [];
  private extSize = 0;
  constructor(private readonly dataFile: string | null) {}

  anonName(hint: string): string {
    return `onnx::${hint}_${this.anon++}`;
  }

  init(name: string, dims: readonly number[], type: number, data: Float32Array | BigInt64Array | Uint16Array | Uint8Array): string {
    if (this.names.has(name)) throw new RangeError(`decoder export: duplicate initializer "${name}"`);
    this.names.add(name);
    const bytes = le(data);
    const t = new Msg().ints(1, dims).int(2, type).str(8, name);
    if (this.dataFile !== null && bytes.length >= 1024) {
      const offset = this.extSize;
      this.ext.push(bytes);
      this.extSize += bytes.length;
      const kv = (k: string, v: string): Msg => new Msg().str(1, k).str(2, v);
      t.msg(13, kv('location', this.dataFile.slice(this.dataFile.lastIndexOf('/') + 1))).msg(13, kv('offset', String(offset))).msg(13, kv('length', String(bytes.length))).int(14, 1);
    } else t.raw(9, bytes);
    this.inits.push(t);
    return name;
  }

  f32(name: string, dims: readonly number[], data: Float32Array): string {
    return this.init(name, dims, FLOAT, data);
  }

  i64(name: string, dims: readonly number[], values: readonly number[]): string {
    return this.init(name, dims, INT64, BigInt64Array.from(values, (v) => BigInt(v)));
  }

  op(opType: string, inputs: readonly string[], nodeName: string, attrs: readonly Attr[] = [], opts: { out?: string; domain?: string; outs?: number } = {}): string {
    const k = this.n++;
    const out = opts.out ?? `${nodeName}_output_${k}`;
    const m = new Msg();
    for (const i of inputs) m.str(1, i);
    m.str(2, out);
    m.str(3, nodeName).str(4, opType);
    for (const a of attrs) m.msg(5, attrMsg(a));
    if (opts.domain) m.str(7, opts.domain);
    this.nodes.push(m);
    return out;
  }

  data(): Uint8Array {
    const out = new Uint8Array(this.extSize);
    let o = 0;
    for (const b of this.ext) {
      out.set(b, o);
      o += b.length;
    }
    return out;
  }
}

/** uint8 asymmetric quantization of `cols` groups of a row-major [rows × cols] matrix along `axis` (0: per row, 1: per column). */
function quantU8(x: Float32Array, rows: number, cols: number, axis: 0 | 1): { q: Uint8Array; scale: Float32Array; zp: Uint8Array; deq: Float32Array } {
  const groups = axis === 0 ? rows : cols;
  const scale = new Float32Array(groups);
  const zp = new Uint8Array(groups);
  const lo = new Float64Array(groups).fill(0);
  const hi = new Float64Array(groups).fill(0);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) {
    const g = axis === 0 ? r : c;
    const v = x[r * cols + c]!;
    lo[g] = Math.min(lo[g]!, v);
    hi[g] = Math.max(hi[g]!, v);
  }
  for (let g = 0; g < groups; g++) {
    scale[g] = Math.fround((hi[g]! - lo[g]!) / 255) || 1;
    zp[g] = Math.min(255, Math.max(0, Math.round(-lo[g]! / scale[g]!)));
  }
  const q = new Uint8Array(rows * cols);
  const deq = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) {
    const g = axis === 0 ? r : c;
    const i = r * cols + c;
    q[i] = Math.min(255, Math.max(0, Math.round(x[i]! / scale[g]!) + zp[g]!));
    deq[i] = Math.fround((q[i]! - zp[g]!) * scale[g]!);
  }
  return { q, scale, zp, deq };
}

/** MatMulNBits 4-bit blocks of W [N × K] (HF layout), block 32 along K. */
function quantNBits(w: Float32Array, N: number, K: number, zeroPoints: boolean): { b: Uint8Array; scales: Float32Array; zps: Uint8Array | null; deq: Float32Array } {
  const BS = 32;
  const nb = K / BS;
  const b = new Uint8Array(N * nb * (BS / 2));
  const scales = new Float32Array(N * nb);
  const zpsPerRow = Math.ceil(nb / 2);
  const zps = zeroPoints ? new Uint8Array(N * zpsPerRow) : null;
  const deq = new Float32Array(N * K);
  for (let n = 0; n < N; n++) {
    for (let blk = 0; blk < nb; blk++) {
      let lo = 0;
      let hi = 0;
      let amax = 0;
      for (let j = 0; j < BS; j++) {
        const v = w[n * K + blk * BS + j]!;
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
        amax = Math.max(amax, Math.abs(v));
      }
      let s: number;
      let zp: number;
      if (zeroPoints) {
        s = Math.fround((hi - lo) / 15) || 1;
        zp = Math.min(15, Math.max(0, Math.round(-lo / s)));
        zps![n * zpsPerRow + (blk >> 1)]! |= zp << ((blk & 1) * 4);
      } else {
        s = Math.fround(amax / 7) || 1;
        zp = 8;
      }
      scales[n * nb + blk] = s;
      for (let j = 0; j < BS; j++) {
        const v = w[n * K + blk * BS + j]!;
        const q = Math.min(15, Math.max(0, Math.round(v / s) + zp));
        b[(n * nb + blk) * (BS / 2) + (j >> 1)]! |= q << ((j & 1) * 4);
        deq[n * K + blk * BS + j] = Math.fround((q - zp) * s);
      }
    }
  }
  return { b, scales, zps, deq };
}

/** Rotate-half RoPE tables [maxPositions × HS] (HF's cos/sin cache, computed in f64, rounded once). */
export function ropeHalfTables(maxPositions: number, HS: number, theta: number): { cos: Float32Array; sin: Float32Array } {
  const cos = new Float32Array(maxPositions * HS);
  const sin = new Float32Array(maxPositions * HS);
  const half = HS / 2;
  for (let p = 0; p < maxPositions; p++) {
    for (let i = 0; i < half; i++) {
      const phi = p * Math.pow(theta, (-2 * i) / HS);
      cos[p * HS + i] = cos[p * HS + i + half] = Math.cos(phi);
      sin[p * HS + i] = sin[p * HS + i + half] = Math.sin(phi);
    }
  }
  return { cos, sin };
}

/** Exports the decoder (header) of HF tensors `t` with shape `s`. */
export function exportHfDecoder(s: DecoderSpec, t: ReadonlyMap<string, { shape: readonly number[]; data: Float32Array }>, opts: DecoderExportOptions = {}): DecoderExport {
  const storage = opts.weights ?? 'f32';
  const naming = opts.naming ?? 'optimum';
  const file = opts.file ?? 'onnx/model.onnx';
  const g = new Builder(opts.external ? `${file}_data` : null);
  const used = new Map<string, { shape: number[]; data: Float32Array }>();
  const { vocab: V, d: C, heads: NH, kvHeads: KV, hidden: H, layers: L } = s;
  const HS = C / NH;
  const get = (name: string): Float32Array => {
    const x = t.get(name);
    if (!x) throw new RangeError(`decoder export: tensor "${name}" is missing`);
    return x.data;
  };
  const castF16 = (name: string, dims: number[], data: Float32Array, node: string): { out: string; used: Float32Array } => {
    const bits = Uint16Array.from(data, (v) => f32ToF16(v));
    const init = g.init(name, dims, FLOAT16, bits);
    return { out: g.op('Cast', [init], node, [{ name: 'to', i: FLOAT }]), used: Float32Array.from(bits, (b) => f16ToF32(b)) };
  };

  // ---- norm gains
  const gain = (hfName: string, initName: string, node: string): string => {
    const data = get(hfName);
    if (storage === 'f16') {
      const c = castF16(initName, [C], data, `${node}/Cast`);
      used.set(hfName, { shape: [C], data: c.used });
      return c.out;
    }
    used.set(hfName, { shape: [C], data: data.slice() });
    return g.f32(initName, [C], data);
  };

  // ---- projections: x [.., in] · Wᵀ with W = HF [out × in]
  const linear = (x: string, hfName: string, out: number, inp: number, path: string, genaiPrefix: string, recordAs = hfName): string => {
    const w = get(hfName);
    if (storage === 'q4') {
      const z = opts.q4ZeroPoints ?? true;
      const q = quantNBits(w, out, inp, z);
      used.set(recordAs, { shape: [out, inp], data: q.deq });
      const base = naming === 'genai' ? `${genaiPrefix}.MatMulNBits` : g.anonName('MatMul');
      const nb = inp / 32;
      const ins = [x, g.init(naming === 'genai' ? `${base}.qweight` : `${base}_Q4`, [out, nb, 16], UINT8, q.b), g.f32(naming === 'genai' ? `${base}.scales` : `${base}_scales`, [out * nb], q.scales)];
      if (q.zps) ins.push(g.init(naming === 'genai' ? `${base}.qzeros` : `${base}_zero_points`, [out * Math.ceil(nb / 2)], UINT8, q.zps));
      return g.op('MatMulNBits', ins, `${path}/MatMulNBits`, [{ name: 'K', i: inp }, { name: 'N', i: out }, { name: 'bits', i: 4 }, { name: 'block_size', i: 32 }], { domain: 'com.microsoft' });
    }
    const wt = transpose(w, out, inp); // [in × out]
    const base = naming === 'genai' ? `${genaiPrefix}.MatMul.weight` : g.anonName('MatMul');
    let weight: string;
    if (storage === 'q8') {
      const q = quantU8(wt, inp, out, 1);
      used.set(recordAs, { shape: [out, inp], data: transpose(q.deq, inp, out) });
      const qn = naming === 'genai' ? base : `${base}_quantized`;
      weight = g.op('DequantizeLinear', [g.init(qn, [inp, out], UINT8, q.q), g.f32(`${qn}_scale`, [out], q.scale), g.init(`${qn}_zero_point`, [out], UINT8, q.zp)], `${path}/DequantizeLinear`, [{ name: 'axis', i: 1 }]);
    } else if (storage === 'f16') {
      const c = castF16(base, [inp, out], wt, `${path}/Cast`);
      used.set(recordAs, { shape: [out, inp], data: transpose(c.used, inp, out) });
      weight = c.out;
    } else {
      used.set(recordAs, { shape: [out, inp], data: w.slice() });
      weight = g.f32(base, [inp, out], wt);
    }
    return g.op('MatMul', [x, weight], `${path}/MatMul`);
  };

  // ---- embedding
  const embName = 'model.embed_tokens.weight';
  let table: string;
  if (storage === 'q8') {
    const q = quantU8(get(embName), V, C, 0);
    used.set(embName, { shape: [V, C], data: q.deq });
    table = g.op('DequantizeLinear', [g.init(`${embName}_quantized`, [V, C], UINT8, q.q), g.f32(`${embName}_scale`, [V], q.scale), g.init(`${embName}_zero_point`, [V], UINT8, q.zp)], '/model/embed_tokens/DequantizeLinear', [{ name: 'axis', i: 0 }]);
  } else if (storage === 'f16') {
    const c = castF16(embName, [V, C], get(embName), '/model/embed_tokens/Cast');
    used.set(embName, { shape: [V, C], data: c.used });
    table = c.out;
  } else {
    used.set(embName, { shape: [V, C], data: get(embName).slice() });
    table = g.f32(embName, [V, C], get(embName));
  }
  let x = g.op('Gather', [table, 'input_ids'], '/model/embed_tokens/Gather', [{ name: 'axis', i: 0 }]);

  // ---- shared constants and the mask
  const eps = g.f32('/model/constants/eps', [], Float32Array.of(s.eps));
  const two = g.f32('/model/constants/two', [], Float32Array.of(2));
  const one = g.f32('/model/constants/one', [], Float32Array.of(1));
  const scale = g.f32('/model/constants/attn_scale', [], Float32Array.of(1 / Math.sqrt(HS)));
  const rope = ropeHalfTables(s.maxPositions, HS, s.ropeTheta);
  const cosT = g.f32('/model/rotary_emb/cos_cache', [s.maxPositions, HS], rope.cos);
  const sinT = g.f32('/model/rotary_emb/sin_cache', [s.maxPositions, HS], rope.sin);
  const perm = new Float32Array(HS * HS); // (x·P)_i = −x_{i+half} (i < half), x_{i−half} (i ≥ half)
  for (let i = 0; i < HS / 2; i++) {
    perm[(i + HS / 2) * HS + i] = -1;
    perm[i * HS + i + HS / 2] = 1;
  }
  const rotate = g.f32('/model/rotary_emb/rotate_half', [HS, HS], perm);
  const ax1 = g.i64('/model/constants/axes_1', [1], [1]);
  const ax2 = g.i64('/model/constants/axes_2', [1], [2]);
  const cos = g.op('Unsqueeze', [g.op('Gather', [cosT, 'position_ids'], '/model/rotary_emb/Gather_cos', [{ name: 'axis', i: 0 }]), ax1], '/model/rotary_emb/Unsqueeze_cos'); // [B, 1, T, HS]
  const sin = g.op('Unsqueeze', [g.op('Gather', [sinT, 'position_ids'], '/model/rotary_emb/Gather_sin', [{ name: 'axis', i: 0 }]), ax1], '/model/rotary_emb/Unsqueeze_sin');
  const total = g.op('Gather', [g.op('Shape', ['attention_mask'], '/model/mask/Shape'), g.i64('/model/constants/one_i', [], [1])], '/model/mask/Gather_total', [{ name: 'axis', i: 0 }]);
  const kpos = g.op('Range', [g.i64('/model/constants/zero_i', [], [0]), total, g.i64('/model/constants/step_i', [], [1])], '/model/mask/Range'); // [S]
  const future = g.op('Greater', [kpos, g.op('Unsqueeze', ['position_ids', ax2], '/model/mask/Unsqueeze_q')], '/model/mask/Greater'); // [B, T, S]
  const pad = g.op('Unsqueeze', [g.op('Equal', ['attention_mask', g.i64('/model/constants/zero_m', [], [0])], '/model/mask/Equal'), ax1], '/model/mask/Unsqueeze_pad'); // [B, 1, S]
  const maskF = g.op('Where', [g.op('Or', [future, pad], '/model/mask/Or'), g.f32('/model/constants/neg', [], Float32Array.of(-1e9)), g.f32('/model/constants/zero_f', [], Float32Array.of(0))], '/model/mask/Where');
  const mask = g.op('Unsqueeze', [maskF, ax1], '/model/mask/Unsqueeze'); // [B, 1, T, S]
  const shapeQ = g.i64('/model/constants/shape_q', [4], [0, 0, NH, HS]);
  const shapeKV = g.i64('/model/constants/shape_kv', [4], [0, 0, KV, HS]);
  const shapeOut = g.i64('/model/constants/shape_out', [3], [0, 0, C]);
  const repeat = g.i64('/model/constants/repeat_kv', [NH], Array.from({ length: NH }, (_, h) => Math.floor(h / (NH / KV))));

  const rmsnorm = (xin: string, w: string, path: string): string => {
    const ms = g.op('ReduceMean', [g.op('Pow', [xin, two], `${path}/Pow`)], `${path}/ReduceMean`, [{ name: 'axes', ints: [-1] }, { name: 'keepdims', i: 1 }]);
    const rstd = g.op('Div', [one, g.op('Sqrt', [g.op('Add', [ms, eps], `${path}/Add`)], `${path}/Sqrt`)], `${path}/Div`);
    return g.op('Mul', [w, g.op('Mul', [xin, rstd], `${path}/Mul`)], `${path}/Mul_1`);
  };
  const ropeOp = (v: string, path: string): string => g.op('Add', [g.op('Mul', [v, cos], `${path}/Mul_cos`), g.op('Mul', [g.op('MatMul', [v, rotate], `${path}/MatMul_rot`), sin], `${path}/Mul_sin`)], `${path}/Add_rope`);
  const heads = (v: string, shape: string, path: string): string => g.op('Transpose', [g.op('Reshape', [v, shape], `${path}/Reshape`)], `${path}/Transpose`, [{ name: 'perm', ints: [0, 2, 1, 3] }]);

  const presentNames: string[] = [];
  for (let l = 0; l < L; l++) {
    const hp = `model.layers.${l}`;
    const attn = naming === 'genai' ? 'attn' : 'self_attn';
    const np = `/model/layers.${l}`;
    const gp = `model.layers.${l}`;
    const h = rmsnorm(x, gain(`${hp}.input_layernorm.weight`, `${hp}.input_layernorm.weight`, `${np}/input_layernorm`), `${np}/input_layernorm`);
    const q = ropeOp(heads(linear(h, `${hp}.self_attn.q_proj.weight`, C, C, `${np}/${attn}/q_proj`, `${gp}.${attn}.q_proj`), shapeQ, `${np}/${attn}/q`), `${np}/${attn}/q`);
    const k = ropeOp(heads(linear(h, `${hp}.self_attn.k_proj.weight`, KV * HS, C, `${np}/${attn}/k_proj`, `${gp}.${attn}.k_proj`), shapeKV, `${np}/${attn}/k`), `${np}/${attn}/k`);
    const v = heads(linear(h, `${hp}.self_attn.v_proj.weight`, KV * HS, C, `${np}/${attn}/v_proj`, `${gp}.${attn}.v_proj`), shapeKV, `${np}/${attn}/v`);
    const pk = g.op('Concat', [`past_key_values.${l}.key`, k], `${np}/${attn}/Concat_k`, [{ name: 'axis', i: 2 }], { out: `present.${l}.key` });
    const pv = g.op('Concat', [`past_key_values.${l}.value`, v], `${np}/${attn}/Concat_v`, [{ name: 'axis', i: 2 }], { out: `present.${l}.value` });
    presentNames.push(pk, pv);
    const kr = g.op('Gather', [pk, repeat], `${np}/${attn}/repeat_k`, [{ name: 'axis', i: 1 }]);
    const vr = g.op('Gather', [pv, repeat], `${np}/${attn}/repeat_v`, [{ name: 'axis', i: 1 }]);
    const kt = g.op('Transpose', [kr], `${np}/${attn}/Transpose_k`, [{ name: 'perm', ints: [0, 1, 3, 2] }]);
    const scores = g.op('Add', [g.op('Mul', [g.op('MatMul', [q, kt], `${np}/${attn}/MatMul_qk`), scale], `${np}/${attn}/Mul_scale`), mask], `${np}/${attn}/Add_mask`);
    const att = g.op('Softmax', [scores], `${np}/${attn}/Softmax`, [{ name: 'axis', i: -1 }]);
    const ao = g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [att, vr], `${np}/${attn}/MatMul_av`)], `${np}/${attn}/Transpose_o`, [{ name: 'perm', ints: [0, 2, 1, 3] }]), shapeOut], `${np}/${attn}/Reshape_o`);
    x = g.op('Add', [x, linear(ao, `${hp}.self_attn.o_proj.weight`, C, C, `${np}/${attn}/o_proj`, `${gp}.${attn}.o_proj`)], `${np}/Add_attn`);
    const h2 = rmsnorm(x, gain(`${hp}.post_attention_layernorm.weight`, `${hp}.post_attention_layernorm.weight`, `${np}/post_attention_layernorm`), `${np}/post_attention_layernorm`);
    const a = linear(h2, `${hp}.mlp.gate_proj.weight`, H, C, `${np}/mlp/gate_proj`, `${gp}.mlp.gate_proj`);
    const b = linear(h2, `${hp}.mlp.up_proj.weight`, H, C, `${np}/mlp/up_proj`, `${gp}.mlp.up_proj`);
    const silu = g.op('Mul', [a, g.op('Sigmoid', [a], `${np}/mlp/act_fn/Sigmoid`)], `${np}/mlp/act_fn/Mul`);
    x = g.op('Add', [x, linear(g.op('Mul', [silu, b], `${np}/mlp/Mul`), `${hp}.mlp.down_proj.weight`, C, H, `${np}/mlp/down_proj`, `${gp}.mlp.down_proj`)], `${np}/Add_mlp`);
  }
  const finalName = naming === 'genai' ? `model.layers.${L}.final_norm_layernorm.weight` : 'model.norm.weight';
  const fin = rmsnorm(x, gain('model.norm.weight', finalName, '/model/norm'), '/model/norm');
  // The head is the graph's own initializer — a copy of the embedding when tied, as optimum writes it.
  const headHf = t.has('lm_head.weight') ? 'lm_head.weight' : embName;
  g.op('Identity', [linear(fin, headHf, V, C, '/lm_head', 'lm_head', 'lm_head.weight')], '/lm_head/Identity', [], { out: 'logits' });

  const graph = new Msg();
  for (const n of g.nodes) graph.msg(1, n);
  graph.str(2, 'main_graph');
  for (const i of g.inits) graph.msg(5, i);
  graph.msg(11, valueInfo('input_ids', INT64, ['batch_size', 'sequence_length']));
  graph.msg(11, valueInfo('attention_mask', INT64, ['batch_size', 'total_sequence_length']));
  graph.msg(11, valueInfo('position_ids', INT64, ['batch_size', 'sequence_length']));
  for (let l = 0; l < L; l++) {
    for (const kv of ['key', 'value']) graph.msg(11, valueInfo(`past_key_values.${l}.${kv}`, FLOAT, ['batch_size', KV, 'past_sequence_length', HS]));
  }
  graph.msg(12, valueInfo('logits', FLOAT, ['batch_size', 'sequence_length', V]));
  for (const p of presentNames) graph.msg(12, valueInfo(p, FLOAT, ['batch_size', KV, 'total_sequence_length', HS]));
  const model = new Msg()
    .int(1, 8)
    .str(2, naming === 'genai' ? 'onnxruntime-genai' : 'pytorch')
    .str(3, '1')
    .msg(7, graph)
    .msg(8, new Msg().str(1, '').int(2, 17))
    .msg(8, new Msg().str(1, 'com.microsoft').int(2, 1));
  const files = new Map<string, Uint8Array>([[file, model.bytes()]]);
  if (opts.external) files.set(`${file}_data`, g.data());
  return { files, used };
}
