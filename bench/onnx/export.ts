/**
 * ONNX export of the tiny Llama's forward pass (the same maths as Model.forward, src/model/model.ts), for a fixed
 * sequence length T and a dynamic batch B:
 *   input  `tokens` int64 [B, T]  →  output `logits` float [B, T, V]   (positions 0..T−1)
 * The file is a plain ModelProto (ir_version 8, default-domain opset 17) written by our own
 * protobuf encoder (onnx/protobuf.ts); weights are f32 initializers in `raw_data` (little-endian).
 * Only standard ops that onnxruntime-web's wasm provider runs: Gather, MatMul, Add, Mul, Div, Sqrt,
 * ReduceMean (opset 17: `axes` is an attribute), Reshape, Transpose, Softmax, Sigmoid.
 *
 * The graph, with x [B, T, d] and heads as [B, NH, T, HS]:
 *   x = Gather(E, tokens)
 *   rmsnorm(x; g)  = (x · 1/√(ReduceMean(x·x, −1) + eps)) · g           (rmsnorm.ts order)
 *   per layer:
 *     h = rmsnorm(x; g_attn)
 *     q = rope(h·Wqᵀ), k = rope(h·Wkᵀ), v = h·Wvᵀ    — each Reshape [B, T, NH, HS]
 *     rope(x) = x ⊙ COS + (x·P) ⊙ SIN                 — COS, SIN [T, 1, HS], P [HS × HS]
 *     att = Softmax((q·kᵀ) · 1/√HS + MASK)             — MASK [T × T]: −1e9 above the diagonal
 *     x ← x + Reshape(att·v → [B, T, d])·Woᵀ
 *     h = rmsnorm(x; g_mlp);  a = h·W1ᵀ;  x ← x + ((a ⊙ Sigmoid(a)) ⊙ h·W3ᵀ)·W2ᵀ
 *   logits = rmsnorm(x; g_final)·Hᵀ                   (H = tok_emb when tied, else lm_head; Hᵀ its own initializer)
 * RoPE follows src/backend/cpu/rope.ts: interleaved pairs (2i, 2i+1) inside each head,
 * φ = t·θ^(−2i/HS),  (y_2i, y_2i+1) = (x_2i cos φ − x_2i+1 sin φ,  x_2i sin φ + x_2i+1 cos φ).
 * So COS[t, 2i] = COS[t, 2i+1] = cos φ, SIN likewise with sin φ, and P is the signed permutation
 * with (x·P)_2i = −x_2i+1, (x·P)_2i+1 = x_2i, i.e. P[2i+1, 2i] = −1, P[2i, 2i+1] = +1. The tables
 * are computed in f64 and rounded to f32, like ropeTable.
 *
 * Matrices are stored [out × in] (weights.ts) and ONNX MatMul computes x·M, so every projection is
 * written transposed ([in × out]). Numbers: ONNX Runtime accumulates in f32 (ours in f64), so the
 * logits agree to ~1e-6 relative, not bit for bit (tests/onnx.test.ts measures it).
 *
 * A quantized model exports its dequantized weights (dequantizeWeights first): the graph is f32.
 *
 * Not here: the KV-cache / incremental decoding, training, LoRA (merge it first: exportWeights),
 * quantized ONNX ops, loading ONNX back.
 */
import { ConfigError } from '../../src/core/errors';
import { validateConfig, type ModelConfig } from '../../src/model/config';
import { Msg } from './protobuf';
import { attrMsg, FLOAT, INT64, transpose, valueInfo, type Attr } from './onnxProto';
import { checkWeights, type ModelWeights } from '../../src/model/weights';

export const ONNX_IR_VERSION = 8;
export const ONNX_OPSET = 17;
export const ONNX_PRODUCER = 'sat-playground';
/** Added to masked (future) attention scores; exp underflows to exactly 0 in f32. */
export const ONNX_MASK_VALUE = -1e9;

/** TensorProto: dims 1, data_type 2, name 8, raw_data 9. */
function tensorMsg(name: string, dims: readonly number[], data: Float32Array | BigInt64Array): Msg {
  const n = dims.reduce((p, s) => p * s, 1);
  if (data.length !== n) throw new RangeError(`onnx: initializer "${name}" has ${data.length} values; dims [${dims.join(', ')}] need ${n}`);
  const raw = new Uint8Array(data.byteLength);
  const dv = new DataView(raw.buffer);
  if (data instanceof Float32Array) for (let i = 0; i < n; i++) dv.setFloat32(4 * i, data[i]!, true);
  else for (let i = 0; i < n; i++) dv.setBigInt64(8 * i, data[i]!, true);
  return new Msg()
    .ints(1, dims)
    .int(2, data instanceof Float32Array ? FLOAT : INT64)
    .str(8, name)
    .raw(9, raw);
}

/** Collects nodes and initializers of one GraphProto. */
class GraphBuilder {
  private readonly nodes: Msg[] = [];
  private readonly inits: Msg[] = [];
  private readonly names = new Set<string>();
  private count = 0;

  /** An f32 (or int64) constant; returns its name. */
  init(name: string, dims: readonly number[], data: Float32Array | BigInt64Array): string {
    if (this.names.has(name)) throw new RangeError(`onnx: duplicate value name "${name}"`);
    this.names.add(name);
    this.inits.push(tensorMsg(name, dims, data));
    return name;
  }

  /** A scalar f32 constant. */
  scalar(name: string, v: number): string {
    return this.init(name, [], Float32Array.of(v));
  }

  /**
   * NodeProto { input 1, output 2, name 3, op_type 4, attribute 5 }; returns the output's name:
   * `hint_<n>` (unique), or exactly `name` when given (a graph output).
   */
  op(opType: string, inputs: readonly string[], hint: string, attrs: readonly Attr[] = [], name?: string): string {
    const n = this.count++;
    const out = name ?? `${hint}_${n}`;
    const m = new Msg();
    for (const i of inputs) m.str(1, i);
    m.str(2, out).str(3, `${opType}_${n}`).str(4, opType);
    for (const a of attrs) m.msg(5, attrMsg(a));
    this.nodes.push(m);
    return out;
  }

  /** The GraphProto of everything added, with these inputs and outputs. */
  graph(name: string, inputs: readonly Msg[], outputs: readonly Msg[]): Msg {
    // GraphProto: node 1, name 2, initializer 5, input 11, output 12
    const g = new Msg();
    for (const n of this.nodes) g.msg(1, n);
    g.str(2, name);
    for (const t of this.inits) g.msg(5, t);
    for (const i of inputs) g.msg(11, i);
    for (const o of outputs) g.msg(12, o);
    return g;
  }
}

/** The RoPE tables COS, SIN [T × HS] (pair-duplicated) and the pair-rotation P [HS × HS] (header). */
export function ropeConstants(T: number, HS: number, theta: number): { cos: Float32Array; sin: Float32Array; perm: Float32Array } {
  const cos = new Float32Array(T * HS);
  const sin = new Float32Array(T * HS);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < HS / 2; i++) {
      const phi = t * Math.pow(theta, (-2 * i) / HS);
      cos[t * HS + 2 * i] = cos[t * HS + 2 * i + 1] = Math.cos(phi);
      sin[t * HS + 2 * i] = sin[t * HS + 2 * i + 1] = Math.sin(phi);
    }
  }
  const perm = new Float32Array(HS * HS);
  for (let i = 0; i < HS / 2; i++) {
    perm[(2 * i + 1) * HS + 2 * i] = -1; // (x·P)_2i   = −x_2i+1
    perm[2 * i * HS + 2 * i + 1] = 1; //    (x·P)_2i+1 =  x_2i
  }
  return { cos, sin, perm };
}

export interface OnnxExportOptions {
  /** graph name (default "sat_playground_lm"). */
  readonly name?: string;
  /** A fixed batch size instead of the dynamic "batch" dimension. */
  readonly batch?: number;
}

/**
 * Serializes the forward pass of an f32 model for sequence length T (header) as ONNX bytes.
 * ConfigError if the weights do not fit `cfg`, a tensor is quantized (dequantizeWeights first),
 * or T is not an integer in [1, cfg.maxSeq].
 */
export function exportOnnx(cfg: ModelConfig, weights: ModelWeights, T: number, opts: OnnxExportOptions = {}): Uint8Array {
  validateConfig(cfg);
  checkWeights(cfg, weights);
  if (!Number.isInteger(T) || T < 1 || T > cfg.maxSeq) throw new ConfigError('T', T, `exportOnnx: T must be an integer in [1, ${cfg.maxSeq}] (the model's maxSeq), got ${T}.`);
  const batch = opts.batch;
  if (batch !== undefined && (!Number.isInteger(batch) || batch < 1)) throw new ConfigError('batch', batch, `exportOnnx: batch must be an integer ≥ 1 (or omitted for a dynamic batch), got ${batch}.`);
  const w = (name: string): Float32Array => {
    const t = weights.get(name)!;
    if (t.dtype !== 'f32') {
      throw new ConfigError('weights', name, `exportOnnx: "${name}" is ${t.dtype}; export the dequantized weights (dequantizeWeights) — the ONNX graph is f32.`);
    }
    return t.data;
  };
  const { vocab: V, d: C, heads: NH, hidden: H, layers: L, normEps, ropeTheta } = cfg;
  const HS = C / NH;
  const g = new GraphBuilder();

  // ---- shared constants
  const emb = g.init('tok_emb', [V, C], w('tok_emb'));
  const headName = cfg.tied ? 'tok_emb' : 'lm_head';
  const head = g.init(`${headName}_T`, [C, V], transpose(w(headName), V, C));
  const eps = g.scalar('norm_eps', normEps);
  const one = g.scalar('one', 1);
  const scale = g.scalar('attn_scale', 1 / Math.sqrt(HS));
  const rope = ropeConstants(T, HS, ropeTheta);
  const cos = g.init('rope_cos', [T, 1, HS], rope.cos);
  const sin = g.init('rope_sin', [T, 1, HS], rope.sin);
  const perm = g.init('rope_perm', [HS, HS], rope.perm);
  const mask = new Float32Array(T * T);
  for (let t = 0; t < T; t++) for (let t2 = t + 1; t2 < T; t2++) mask[t * T + t2] = ONNX_MASK_VALUE;
  const causal = g.init('causal_mask', [T, T], mask);
  const headsShape = g.init('shape_heads', [4], BigInt64Array.of(-1n, BigInt(T), BigInt(NH), BigInt(HS)));
  const seqShape = g.init('shape_seq', [3], BigInt64Array.of(-1n, BigInt(T), BigInt(C)));

  const rmsnorm = (x: string, gain: string, hint: string): string => {
    const sq = g.op('Mul', [x, x], `${hint}_sq`);
    const ms = g.op('ReduceMean', [sq], `${hint}_ms`, [{ name: 'axes', ints: [-1] }, { name: 'keepdims', i: 1 }]);
    const rms = g.op('Sqrt', [g.op('Add', [ms, eps], `${hint}_mse`)], `${hint}_rms`);
    const rstd = g.op('Div', [one, rms], `${hint}_rstd`);
    return g.op('Mul', [g.op('Mul', [x, rstd], `${hint}_xr`), gain], hint);
  };
  const linear = (x: string, name: string, out: number, inp: number, hint: string): string => g.op('MatMul', [x, g.init(`${name}_T`, [inp, out], transpose(w(name), out, inp))], hint);
  const ropeOp = (x: string, hint: string): string => {
    const xc = g.op('Mul', [x, cos], `${hint}_cos`);
    const xs = g.op('Mul', [g.op('MatMul', [x, perm], `${hint}_perm`), sin], `${hint}_sin`);
    return g.op('Add', [xc, xs], hint);
  };

  // ---- the forward
  let x = g.op('Gather', [emb, 'tokens'], 'x0', [{ name: 'axis', i: 0 }]);
  for (let l = 0; l < L; l++) {
    const p = `layers.${l}`;
    const h = rmsnorm(x, g.init(`${p}.attn_norm`, [C], w(`${p}.attn_norm`)), `l${l}_ln1`);
    const split = (y: string, hint: string): string => g.op('Reshape', [y, headsShape], hint); // [B, T, NH, HS]
    const q = ropeOp(split(linear(h, `${p}.wq`, C, C, `l${l}_q`), `l${l}_qh`), `l${l}_qr`);
    const k = ropeOp(split(linear(h, `${p}.wk`, C, C, `l${l}_k`), `l${l}_kh`), `l${l}_kr`);
    const v = split(linear(h, `${p}.wv`, C, C, `l${l}_v`), `l${l}_vh`);
    const qT = g.op('Transpose', [q], `l${l}_qt`, [{ name: 'perm', ints: [0, 2, 1, 3] }]); // [B, NH, T, HS]
    const kT = g.op('Transpose', [k], `l${l}_kt`, [{ name: 'perm', ints: [0, 2, 3, 1] }]); // [B, NH, HS, T]
    const vT = g.op('Transpose', [v], `l${l}_vt`, [{ name: 'perm', ints: [0, 2, 1, 3] }]); // [B, NH, T, HS]
    const s = g.op('Mul', [g.op('MatMul', [qT, kT], `l${l}_qk`), scale], `l${l}_s`);
    const att = g.op('Softmax', [g.op('Add', [s, causal], `l${l}_sm`)], `l${l}_att`, [{ name: 'axis', i: -1 }]);
    const ao = g.op('MatMul', [att, vT], `l${l}_av`); // [B, NH, T, HS]
    const merged = g.op('Reshape', [g.op('Transpose', [ao], `l${l}_aot`, [{ name: 'perm', ints: [0, 2, 1, 3] }]), seqShape], `l${l}_ao`);
    x = g.op('Add', [x, linear(merged, `${p}.wo`, C, C, `l${l}_o`)], `l${l}_xmid`);
    const h2 = rmsnorm(x, g.init(`${p}.mlp_norm`, [C], w(`${p}.mlp_norm`)), `l${l}_ln2`);
    const a = linear(h2, `${p}.w1`, H, C, `l${l}_a`);
    const b = linear(h2, `${p}.w3`, H, C, `l${l}_b`);
    const silu = g.op('Mul', [a, g.op('Sigmoid', [a], `l${l}_sig`)], `l${l}_silu`);
    const hh = g.op('Mul', [silu, b], `l${l}_h`);
    x = g.op('Add', [x, linear(hh, `${p}.w2`, C, H, `l${l}_down`)], `l${l}_x`);
  }
  const lnf = rmsnorm(x, g.init('final_norm', [C], w('final_norm')), 'lnf');
  g.op('MatMul', [lnf, head], 'logits', [], 'logits');

  const B = batch ?? 'batch';
  const graph = g.graph(opts.name ?? 'sat_playground_lm', [valueInfo('tokens', INT64, [B, T])], [valueInfo('logits', FLOAT, [B, T, V])]);
  return finish(graph);
}

function finish(graph: Msg): Uint8Array {
  // ModelProto: ir_version 1, producer_name 2, producer_version 3, graph 7, opset_import 8
  return new Msg()
    .int(1, ONNX_IR_VERSION)
    .str(2, ONNX_PRODUCER)
    .str(3, '1')
    .msg(7, graph)
    .msg(8, new Msg().str(1, '').int(2, ONNX_OPSET))
    .bytes();
}
