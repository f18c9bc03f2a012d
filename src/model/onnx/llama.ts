/**
 * Maps the weights of an ONNX Llama-family decoder (read.ts) onto our model's (weights.ts), for the
 * trainable ONNX seat. The folder is the transformers.js / onnx-community layout: config.json (the
 * Llama fields of a checkpoint: hfConfig.ts), tokenizer.json and one .onnx file with its external
 * data. Weights are found by node (exporters name initializers differently but nodes after the
 * PyTorch modules), dequantized exactly as onnxruntime computes them, then mapped as hfLoad.ts maps
 * a checkpoint; anything this mapping would silently drop is refused by name.
 *
 * Not here: the protobuf (wire.ts, read.ts), running the graph (ort.ts), the seat (src/sat/onnxSeat.ts).
 */
import { ConfigError, FormatError } from '../../core/errors';
import { escapeControl } from '../../core/text';
import type { ModelConfig } from '../config';
import { checkFits, estimateMemory, type HfInfo } from '../hfConfig';
import { hfTokenizerOf, permuteRopeRows, readHfConfig, repeatKvRows, type HfFiles, type HfLoadOptions, type HfModel } from '../hfLoad';
import { quantizeWeights, weightNames, type ModelWeights } from '../weights';
import { DT, dtypeName, readOnnx, tensorBytes, tensorF32, type OnnxModel, type OnnxNode, type OnnxTensor } from './read';

/** How one of our weights was stored in the file. */
export type OnnxEncoding = 'f32' | 'f16' | 'bf16' | 'int8' | 'uint8' | 'int4';

export interface OnnxLlama extends HfModel {
  readonly onnx: {
    readonly file: string;
    /** Our weight name → how the file stores it. */
    readonly encodings: ReadonlyMap<string, OnnxEncoding>;
    /** Bytes of the .onnx file and its external data. */
    readonly bytes: number;
  };
  /** The weights as the file's values, f32 (before storage as `quant`): what the parity check runs. */
  readonly exact: ModelWeights;
}

/** The .onnx files of a folder, in the order a seat offers them (onnx/ first, model.onnx first). */
export function onnxFilesOf(files: HfFiles): string[] {
  const list = [...files.keys()].filter((n) => n.endsWith('.onnx'));
  const rank = (n: string): number => (n.startsWith('onnx/') ? 0 : 2) + (/(^|\/)model\.onnx$/.test(n) ? 0 : 1);
  return list.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/** Bytes of an .onnx file plus the external data files it names (estimated: every `<file>_data` / `.data` beside it). */
export function onnxFileBytes(files: HfFiles, file: string): number {
  let n = files.get(file)?.length ?? 0;
  for (const [name, b] of files) if (name !== file && name.startsWith(file) && !name.endsWith('.onnx')) n += b.length;
  return n;
}

/*
 * Which node is which weight (optimum names initializers onnx::MatMul_N, onnxruntime-genai
 * model.layers.L.attn.q_proj.MatMul.weight, but both name the nodes after the modules):
 *   /model/layers.L/(self_attn|attn)/(q|k|v|o)_proj/…   MatMul or MatMulNBits  → wq wk wv wo
 *   /model/layers.L/mlp/(gate|up|down)_proj/…           MatMul or MatMulNBits  → w1 w3 w2
 *   /lm_head/…                                          MatMul or MatMulNBits  → lm_head
 *   the Gather whose indices are input_ids                                      → tok_emb
 * and the norm gains by initializer name: model.layers.L.input_layernorm.weight,
 * model.layers.L.post_attention_layernorm.weight, model.norm.weight (genai:
 * model.layers.{layers}.final_norm_layernorm.weight).
 */
const PROJ = /^\/model\/layers\.(\d+)\/(?:self_attn|attn)\/(q|k|v|o|qkv)_proj\//;
const MLP = /^\/model\/layers\.(\d+)\/mlp\/(gate|up|down|gate_up)_proj\//;
const HEAD = /^\/lm_head\//;
const OURS: Record<string, string> = { q: 'wq', k: 'wk', v: 'wv', o: 'wo', gate: 'w1', up: 'w3', down: 'w2' };

interface Resolved {
  /** Values in the file's layout ([in × out] for MatMul weights; [N × K] for MatMulNBits). */
  readonly data: Float32Array;
  readonly dims: readonly number[];
  readonly encoding: OnnxEncoding;
  readonly source: string;
}

function encodingOf(t: OnnxTensor): OnnxEncoding {
  switch (t.dataType) {
    case DT.FLOAT: return 'f32';
    case DT.FLOAT16: return 'f16';
    case DT.BFLOAT16: return 'bf16';
    case DT.INT8: return 'int8';
    case DT.UINT8: return 'uint8';
    default: return 'int4';
  }
}

class Mapper {
  private readonly producer = new Map<string, OnnxNode>();
  constructor(readonly m: OnnxModel, readonly files: HfFiles) {
    for (const n of m.nodes) for (const o of n.outputs) this.producer.set(o, n);
  }

  init(name: string, what: string): OnnxTensor {
    const t = this.m.initializers.get(name);
    if (!t) throw new FormatError(`${this.m.file}: ${what} "${name}" is not an initializer`);
    return t;
  }

  /** A constant weight value: an initializer, through Cast and DequantizeLinear. */
  resolve(value: string, who: string): Resolved {
    const t = this.m.initializers.get(value);
    if (t) {
      if (t.dataType !== DT.FLOAT && t.dataType !== DT.FLOAT16 && t.dataType !== DT.BFLOAT16) {
        throw new FormatError(`${this.m.file}: ${who} reads initializer "${value}" of type ${dtypeName(t.dataType)} directly; a weight must be float, f16, or 8-bit behind a DequantizeLinear`);
      }
      return { data: tensorF32(this.m, this.files, t), dims: t.dims, encoding: encodingOf(t), source: value };
    }
    const p = this.producer.get(value);
    if (p?.opType === 'Cast' && p.domain === '') return this.resolve(p.inputs[0]!, who);
    if (p?.opType === 'DequantizeLinear') return this.dequantizeLinear(p, who);
    throw new FormatError(`${this.m.file}: ${who}: its weight "${value}" is computed by ${p ? `node "${p.name}" (${p.opType})` : 'a graph input'}, not an initializer (optionally behind Cast or DequantizeLinear); this graph cannot be mapped to the model`);
  }

  private dequantizeLinear(n: OnnxNode, who: string): Resolved {
    const what = `${this.m.file}: node "${n.name}" (DequantizeLinear, the weight of ${who})`;
    if (n.attrs.has('block_size') && (n.attrs.get('block_size')!.i ?? 0) !== 0) throw new FormatError(`${what}: blocked quantization (block_size) is not supported`);
    const x = this.init(n.inputs[0]!, `${what}: the quantized data`);
    if (x.dataType !== DT.INT8 && x.dataType !== DT.UINT8) throw new FormatError(`${what}: data "${x.name}" is ${dtypeName(x.dataType)}; supported: int8, uint8`);
    const s = this.init(n.inputs[1]!, `${what}: the scale`);
    const scale = tensorF32(this.m, this.files, s);
    const zpName = n.inputs[2] ?? '';
    let zp: Int32Array;
    if (zpName === '') zp = new Int32Array(scale.length);
    else {
      const z = this.init(zpName, `${what}: the zero point`);
      if (z.dataType !== x.dataType) throw new FormatError(`${what}: zero point "${z.name}" is ${dtypeName(z.dataType)} but the data is ${dtypeName(x.dataType)}`);
      if (z.count !== scale.length) throw new FormatError(`${what}: zero point "${z.name}" has ${z.count} values but the scale has ${scale.length}`);
      const zb = tensorBytes(this.m, this.files, z);
      zp = Int32Array.from(zb, (b) => (z.dataType === DT.INT8 ? (b << 24) >> 24 : b));
    }
    const q = tensorBytes(this.m, this.files, x);
    const dims = x.dims;
    const rank = dims.length;
    let axis = n.attrs.get('axis')?.i ?? 1;
    if (axis < 0) axis += rank;
    const perTensor = scale.length === 1; // (one value per axis of size 1 is the same thing)
    if (!perTensor && (axis < 0 || axis >= rank || scale.length !== dims[axis])) {
      throw new FormatError(`${what}: scale "${s.name}" has ${scale.length} values, which matches neither the whole tensor nor axis ${axis} of [${dims.join(', ')}]`);
    }
    const inner = perTensor ? 1 : dims.slice(axis + 1).reduce((a, b) => a * b, 1);
    const groups = perTensor ? 1 : dims[axis]!;
    const out = new Float32Array(x.count);
    const signed = x.dataType === DT.INT8;
    for (let i = 0; i < x.count; i++) {
      const g = perTensor ? 0 : Math.floor(i / inner) % groups;
      const v = signed ? (q[i]! << 24) >> 24 : q[i]!;
      out[i] = Math.fround((v - zp[g]!) * scale[g]!);
    }
    return { data: out, dims, encoding: signed ? 'int8' : 'uint8', source: x.name };
  }

  /** A MatMulNBits node's weight, dequantized: [N × K] (already our [out × in]). */
  nbits(n: OnnxNode): Resolved {
    const what = `${this.m.file}: node "${n.name}" (MatMulNBits)`;
    const K = n.attrs.get('K')?.i;
    const N = n.attrs.get('N')?.i;
    const bits = n.attrs.get('bits')?.i ?? 4;
    const bs = n.attrs.get('block_size')?.i;
    if (K === undefined || N === undefined || bs === undefined) throw new FormatError(`${what}: attributes K, N and block_size are required`);
    if (bits !== 4) throw new FormatError(`${what}: bits = ${bits}; supported: 4`);
    if (!Number.isInteger(bs) || bs < 16 || (bs & (bs - 1)) !== 0) throw new FormatError(`${what}: block_size = ${bs} is not a power of two ≥ 16`);
    if ((n.inputs[4] ?? '') !== '' || (n.inputs[5] ?? '') !== '') throw new FormatError(`${what}: g_idx or bias inputs are not supported`);
    const nb = Math.ceil(K / bs);
    const blob = bs / 2;
    const B = this.init(n.inputs[1]!, `${what}: the 4-bit blocks`);
    if (B.dataType !== DT.UINT8 || B.count !== N * nb * blob) {
      throw new FormatError(`${what}: blocks "${B.name}" are [${B.dims.join(', ')}] ${dtypeName(B.dataType)}; K = ${K}, N = ${N}, block_size = ${bs} need ${N * nb * blob} uint8 ([${N}, ${nb}, ${blob}])`);
    }
    const S = this.init(n.inputs[2]!, `${what}: the scales`);
    if (S.count !== N * nb) throw new FormatError(`${what}: scales "${S.name}" hold ${S.count} values; N × blocks = ${N * nb}`);
    const scales = tensorF32(this.m, this.files, S);
    const zName = n.inputs[3] ?? '';
    let zps: Uint8Array | null = null;
    const zRow = Math.ceil(nb / 2);
    if (zName !== '') {
      const Z = this.init(zName, `${what}: the zero points`);
      if (Z.dataType !== DT.UINT8) throw new FormatError(`${what}: zero points "${Z.name}" are ${dtypeName(Z.dataType)}; supported: packed uint8`);
      if (Z.count !== N * zRow) throw new FormatError(`${what}: zero points "${Z.name}" hold ${Z.count} bytes; N × ⌈blocks / 2⌉ = ${N * zRow}`);
      zps = tensorBytes(this.m, this.files, Z);
    }
    const b = tensorBytes(this.m, this.files, B);
    const out = new Float32Array(N * K);
    for (let r = 0; r < N; r++) {
      for (let blk = 0; blk < nb; blk++) {
        const s = scales[r * nb + blk]!;
        const zp = zps ? (zps[r * zRow + (blk >> 1)]! >> ((blk & 1) * 4)) & 15 : 8;
        const base = (r * nb + blk) * blob;
        for (let j = 0; j < bs && blk * bs + j < K; j++) {
          const q = (b[base + (j >> 1)]! >> ((j & 1) * 4)) & 15;
          out[r * K + blk * bs + j] = Math.fround((q - zp) * s);
        }
      }
    }
    return { data: out, dims: [N, K], encoding: 'int4', source: B.name };
  }
}

function transpose(w: Float32Array, rows: number, cols: number): Float32Array {
  const t = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = w[r * cols + c]!;
  return t;
}

const yieldToEventLoop = (): Promise<void> => new Promise((r) => setTimeout(r, 0));

/** The parse of the graph and config without decoding a weight: for estimates before anything is allocated. */
export function readOnnxLlamaHead(files: HfFiles, file: string, maxSeq?: number): { cfg: ModelConfig; info: HfInfo; raw: unknown; model: OnnxModel; untiedHead: boolean } {
  const head = readHfConfig(files, maxSeq);
  const model = readOnnx(files, file);
  const hasHead = model.nodes.some((n) => HEAD.test(n.name) && (n.opType === 'MatMul' || n.opType === 'MatMulNBits'));
  // A head node is a separate weight; whether it equals the embedding is known only once decoded —
  // the estimate counts it untied (the worst case).
  const cfg = hasHead ? { ...head.cfg, tied: false } : head.cfg;
  return { ...head, cfg, model, untiedHead: hasHead };
}

/**
 * Reads an ONNX Llama folder's `file` into our model, stored as `opts.quant`. A MatMul's weight is
 * an initializer, or one reached through Cast (f16 → f32) or DequantizeLinear (8-bit, per tensor or
 * per axis, with its zero point); a MatMulNBits node holds 4-bit blocks (any block_size, f32/f16
 * scales, packed uint8 zero points or the default 8). Values are f32 of (q − zp)·scale, then RoPE
 * rows permuted and K/V rows repeated for GQA as hfLoad.ts does. The model stays tied when the
 * graph's head equals the embedding bit for bit, else it is untied with the graph's head.
 *
 * Refused, naming the node or initializer: fused projections (qkv_proj, gate_up_proj), a weight
 * computed by anything else, GatherBlockQuantized embeddings, MatMulNBits with bits ≠ 4, g_idx or
 * a bias, a projection missing or found twice, a shape that does not match config.json, a
 * non-finite value, and any other MatMul by a constant that touches the model's width.
 */
export async function loadOnnxLlama(files: HfFiles, file: string, opts: HfLoadOptions = {}): Promise<OnnxLlama> {
  const quant = opts.quant ?? 'f32';
  const progress = opts.onProgress ?? (() => {});
  progress({ phase: 'reading', done: 0, total: 1, item: file });
  const { cfg: cfg0, info, raw, model: m } = readOnnxLlamaHead(files, file, opts.maxSeq);
  if (quant !== 'f32' && cfg0.d % 32 !== 0) {
    throw new ConfigError('hidden_size', cfg0.d, `config.json: "hidden_size" = ${cfg0.d} is not a multiple of 32, so the model cannot be stored ${quant}; load it as f32.`);
  }
  if (opts.memory) {
    // The f32 copy of the file's values (the parity check's model) is held next to the stored one while seating.
    const e = estimateMemory(cfg0, { quant, ...opts.memory });
    const exactF32 = quant === 'f32' ? 0 : estimateMemory(cfg0, { quant: 'f32', loraRank: 0, sequences: 1, seqLen: 1, prompts: 1 }).weights;
    checkFits({ ...e, total: e.total + exactF32 }, opts.memory.limitBytes, opts.memory.where);
  }
  const tokenizer = hfTokenizerOf(files, cfg0, info, opts.turns);
  const mapper = new Mapper(m, files);
  const { d, hidden: H, vocab: V, heads, layers } = cfg0;
  const HS = d / heads;
  const kvRows = info.kvHeads * HS;
  const encodings = new Map<string, OnnxEncoding>();
  const found = new Map<string, { r: Resolved; node: string }>();
  const take = (ours: string, r: Resolved, node: string): void => {
    if (found.has(ours)) throw new FormatError(`${file}: node "${node}" and node "${found.get(ours)!.node}" both map to ${ours}; the graph is not one Llama decoder`);
    found.set(ours, { r, node });
  };
  // Projections and the head, by node.
  for (const n of m.nodes) {
    const proj = PROJ.exec(n.name) ?? MLP.exec(n.name);
    const isHead = HEAD.test(n.name);
    if ((!proj && !isHead) || (n.opType !== 'MatMul' && n.opType !== 'MatMulNBits')) continue;
    if (proj && (proj[2] === 'qkv' || proj[2] === 'gate_up')) throw new FormatError(`${file}: node "${n.name}" is a fused ${proj[2]}_proj projection; not supported (export with separate projections)`);
    opts.signal?.throwIfAborted();
    const ours = isHead ? 'lm_head' : `layers.${proj![1]}.${OURS[proj![2]!]!}`;
    if (!isHead && Number(proj![1]) >= layers) throw new FormatError(`${file}: node "${n.name}" is in layer ${proj![1]}, but config.json has ${layers} layers`);
    const r = n.opType === 'MatMulNBits' ? mapper.nbits(n) : mapper.resolve(n.inputs[1]!, `node "${n.name}"`);
    take(ours, r, n.name);
  }
  // The embedding: the Gather on input_ids.
  for (const n of m.nodes) {
    if (!n.inputs.includes('input_ids')) continue;
    if (n.opType === 'GatherBlockQuantized') throw new FormatError(`${file}: node "${n.name}" reads the embedding with GatherBlockQuantized (block-quantized embeddings); not supported — use a file whose embedding is float, f16 or 8-bit`);
    if (n.opType === 'Gather' && n.inputs[1] === 'input_ids') take('tok_emb', mapper.resolve(n.inputs[0]!, `node "${n.name}" (the embedding)`), n.name);
  }
  // Every other MatMul by a constant of the model's width would be a weight left out.
  for (const n of m.nodes) {
    if ((n.opType !== 'MatMul' && n.opType !== 'MatMulNBits' && n.opType !== 'Gemm') || PROJ.test(n.name) || MLP.test(n.name) || HEAD.test(n.name)) continue;
    let r: Resolved;
    try {
      r = n.opType === 'MatMulNBits' ? mapper.nbits(n) : mapper.resolve(n.inputs[1]!, `node "${n.name}"`);
    } catch {
      continue; // not a constant weight
    }
    if (r.dims.some((x) => x === d || x === H || x === V)) {
      throw new FormatError(`${file}: node "${n.name}" (${n.opType}) multiplies by weight "${r.source}" [${r.dims.join(', ')}], which is not a Llama projection this mapping knows; the graph cannot be mapped to the model`);
    }
  }
  // Norms, by initializer name.
  const normNames: [string, string[]][] = [];
  for (let l = 0; l < layers; l++) {
    normNames.push([`layers.${l}.attn_norm`, [`model.layers.${l}.input_layernorm.weight`]], [`layers.${l}.mlp_norm`, [`model.layers.${l}.post_attention_layernorm.weight`]]);
  }
  normNames.push(['final_norm', ['model.norm.weight', `model.layers.${layers}.final_norm_layernorm.weight`]]);
  for (const [ours, names] of normNames) {
    const name = names.find((x) => m.initializers.has(x));
    if (name === undefined) throw new FormatError(`${file}: initializer "${names.join('" or "')}" (the ${ours} gain, [${d}]) is missing`);
    take(ours, mapper.resolve(name, `the ${ours} gain`), name);
  }

  // Shapes, layout, checks, and our transformations.
  let head = found.get('lm_head');
  const emb = found.get('tok_emb');
  if (!emb) throw new FormatError(`${file}: no Gather node reads the embedding with input_ids; not a decoder this mapping knows`);
  let tied = !head;
  const want = (ours: string): [number, number] | [number] => {
    const p = ours.slice(ours.lastIndexOf('.') + 1);
    if (ours === 'tok_emb' || ours === 'lm_head') return [V, d];
    if (ours.endsWith('norm')) return [d];
    if (p === 'wk' || p === 'wv') return [kvRows, d];
    if (p === 'w1' || p === 'w3') return [H, d];
    if (p === 'w2') return [d, H];
    return [d, d];
  };
  const names = weightNames({ ...cfg0, tied: false });
  const exact: ModelWeights = new Map();
  for (const [i, ours] of names.entries()) {
    opts.signal?.throwIfAborted();
    if (i % 8 === 0) await yieldToEventLoop();
    progress({ phase: 'converting', done: i, total: names.length, item: ours });
    const f = ours === 'lm_head' ? head : found.get(ours);
    if (!f) {
      if (ours === 'lm_head') continue;
      throw new FormatError(`${file}: no node maps to ${ours} (expected a MatMul or MatMulNBits named like ${ours.startsWith('layers.') ? `/model/layers.${ours.split('.')[1]}/…/${Object.entries(OURS).find(([, v]) => v === ours.split('.')[2])?.[0]}_proj/MatMul` : '/lm_head/MatMul'})`);
    }
    const [rows, cols] = want(ours);
    let data: Float32Array;
    const isNbits = f.r.encoding === 'int4';
    const isMat = cols !== undefined && ours !== 'tok_emb';
    const shown = `[${f.r.dims.join(', ')}]`;
    if (cols === undefined) {
      if (f.r.dims.length !== 1 || f.r.dims[0] !== rows) throw new FormatError(`${file}: "${f.node}" is ${shown}; config.json implies [${rows}]`);
      data = f.r.data;
    } else if (!isMat || isNbits) {
      if (f.r.dims[0] !== rows || f.r.dims[1] !== cols || f.r.dims.length !== 2) throw new FormatError(`${file}: the weight of "${f.node}" is ${shown}; config.json implies [${rows}, ${cols}]`);
      data = f.r.data;
    } else {
      // MatMul computes x·W: W is [in × out].
      if (f.r.dims.length !== 2 || f.r.dims[0] !== cols || f.r.dims[1] !== rows) throw new FormatError(`${file}: the weight "${f.r.source}" of node "${f.node}" is ${shown}; config.json implies [${cols}, ${rows}] (in × out)`);
      data = transpose(f.r.data, cols, rows);
    }
    for (let k = 0; k < data.length; k++) {
      if (!Number.isFinite(data[k]!)) throw new FormatError(`${file}: the weight of "${f.node}" (${ours}) has element ${k} = ${data[k]}; the weights are corrupt`);
    }
    const part = ours.slice(ours.lastIndexOf('.') + 1);
    if (part === 'wq') data = permuteRopeRows(data, heads, HS, d);
    if (part === 'wk') data = permuteRopeRows(data, info.kvHeads, HS, d);
    if (part === 'wk' || part === 'wv') data = repeatKvRows(data, info.kvHeads, heads, HS, d);
    const shape = part === 'wk' || part === 'wv' ? [d, d] : cols === undefined ? [rows] : [rows, cols];
    exact.set(ours, { dtype: 'f32', shape, data });
    encodings.set(ours, f.r.encoding);
  }
  if (head) {
    const e = exact.get('tok_emb')!;
    const h = exact.get('lm_head')!;
    if (e.dtype === 'f32' && h.dtype === 'f32' && e.data.every((v, k) => Object.is(v, h.data[k]))) {
      tied = true;
      exact.delete('lm_head');
      encodings.delete('lm_head');
      head = undefined;
    }
  }
  const cfg: ModelConfig = { ...cfg0, tied };
  progress({ phase: quant === 'f32' ? 'converting' : 'quantizing', done: names.length - 1, total: names.length, item: '' });
  const weights = quant === 'f32' ? exact : quantizeWeights(cfg, exact, quant);
  progress({ phase: quant === 'f32' ? 'converting' : 'quantizing', done: names.length, total: names.length, item: '' });
  const named = (raw as Record<string, unknown>)._name_or_path;
  const name = typeof named === 'string' && named.length > 0 ? escapeControl(named.slice(0, 120)) : 'onnx model';
  return { cfg, weights, info, tokenizer, name, exact, onnx: { file, encodings, bytes: onnxFileBytes(files, file) } };
}

