/**
 * Model weights: names, shapes, random init, quantization of a whole model, and the model file
 * (safetensors with the scheme in `__metadata__`). The tensor table is at `weightNames`, the file
 * layout at `saveModel`; a tensor's block layouts are in quant.ts.
 *
 * Not here: the forward/backward pass (src/backend), LoRA adapters (lora.ts), the card's fields
 * (card.ts).
 */
import { ConfigError, FormatError, NumericError } from '../core/errors';
import { boundedMessage } from '../core/text';
import type { Rng } from '../core/rng';
import { f16ToF32 } from '../core/f16';
import { cardToJson, validateCard, type ModelCard } from './card';
import { describeConfig, parseConfig, sameConfig, validateConfig, type ModelConfig } from './config';
import {
  QK,
  dequantizeQ4,
  dequantizeQ8,
  firstNonFiniteScale,
  quantizeQ4,
  quantizeQ8,
  type QuantKind,
} from './quant';
import { quote, readSafetensors, showShape, writeSafetensors, type StTensor } from './safetensors';

export interface F32Tensor {
  readonly dtype: 'f32';
  readonly shape: readonly number[];
  readonly data: Float32Array;
}
export interface Q8Tensor {
  readonly dtype: 'q8';
  /** [out, in]; in % 32 == 0. */
  readonly shape: readonly number[];
  readonly q: Int8Array;
  readonly scales: Uint16Array;
}
export interface Q4Tensor {
  readonly dtype: 'q4';
  /** [out, in]; in % 32 == 0. */
  readonly shape: readonly number[];
  readonly q: Uint8Array;
  readonly scales: Uint16Array;
}
export type WeightTensor = F32Tensor | Q8Tensor | Q4Tensor;

/** name → tensor, in `weightNames` order. */
export type ModelWeights = Map<string, WeightTensor>;

/** The per-layer tensor suffixes, in name order. */
export const LAYER_TENSORS = ['attn_norm', 'wq', 'wk', 'wv', 'wo', 'mlp_norm', 'w1', 'w3', 'w2'] as const;
export type LayerTensor = (typeof LAYER_TENSORS)[number];

/** The file scheme identifiers written to `__metadata__`. */
export const MODEL_FORMAT = 'sat-playground';
export const MODEL_FORMAT_VERSION = '1';

/**
 * Every tensor name of a model with this config, in canonical order (layer by layer). Matrices are
 * [out × in], row-major (y = W·x):
 *   tok_emb              [V × d]       token embedding; when tied, also the output head (logits = E·h)
 *   layers.{l}.attn_norm [d]           RMSNorm gain before attention
 *   layers.{l}.wq/wk/wv  [d × d]       query, key, value projections
 *   layers.{l}.wo        [d × d]       attention output projection
 *   layers.{l}.mlp_norm  [d]           RMSNorm gain before the MLP
 *   layers.{l}.w1        [hidden × d]  SwiGLU gate
 *   layers.{l}.w3        [hidden × d]  SwiGLU up
 *   layers.{l}.w2        [d × hidden]  SwiGLU down
 *   final_norm           [d]
 *   lm_head              [V × d]       the output head of an untied model (cfg.tied = false) only
 */
export function weightNames(cfg: ModelConfig): string[] {
  const names = ['tok_emb'];
  for (let l = 0; l < cfg.layers; l++) for (const t of LAYER_TENSORS) names.push(`layers.${l}.${t}`);
  names.push('final_norm');
  if (!cfg.tied) names.push('lm_head');
  return names;
}

/** Name of tensor `t` of layer `l`, e.g. layerName(0, 'wq') = "layers.0.wq". */
export function layerName(l: number, t: LayerTensor): string {
  return `layers.${l}.${t}`;
}

/** The shape of a weight, or null if `name` is not a weight of this config. */
export function shapeOf(cfg: ModelConfig, name: string): number[] | null {
  const { vocab: V, d, hidden } = cfg;
  if (name === 'tok_emb') return [V, d];
  if (name === 'final_norm') return [d];
  if (name === 'lm_head') return cfg.tied ? null : [V, d];
  const m = /^layers\.(0|[1-9]\d*)\.([a-z0-9_]+)$/.exec(name);
  if (!m || Number(m[1]) >= cfg.layers) return null;
  switch (m[2]) {
    case 'attn_norm':
    case 'mlp_norm':
      return [d];
    case 'wq':
    case 'wk':
    case 'wv':
    case 'wo':
      return [d, d];
    case 'w1':
    case 'w3':
      return [hidden, d];
    case 'w2':
      return [d, hidden];
    default:
      return null;
  }
}

/** The shape of a weight; ConfigError if `name` is not a weight of this config. */
export function expectedShape(cfg: ModelConfig, name: string): number[] {
  const s = shapeOf(cfg, name);
  if (!s) {
    throw new ConfigError(
      'name',
      name,
      `"${name}" is not a weight of this model (${cfg.layers} layers${cfg.tied ? ', tied head' : ''}); names are tok_emb, final_norm${cfg.tied ? '' : ', lm_head'} and layers.{0..${cfg.layers - 1}}.{${LAYER_TENSORS.join(',')}}.`,
    );
  }
  return s;
}

function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Deepest nesting of the config or card JSON in a model file that is read (a card nests 2 deep). */
export const MAX_METADATA_DEPTH = 8;
/** Longest message a model file's refusal has (a longer one is cut: a crafted file can hold anything). */
const MAX_MESSAGE = 600;

/** True for a 2-D shape whose input dim (last) is a multiple of 32: it may be stored q8/q4. */
export function isQuantizable(shape: readonly number[]): boolean {
  return shape.length === 2 && shape[1]! > 0 && shape[1]! % QK === 0;
}

/**
 * Random init. Each tensor draws from its own stream `rng.fork(i)`, i = its index in
 * `weightNames(cfg)`, so adding a tensor never changes the others' values.
 *   tok_emb, lm_head       N(0, 0.02²)   (keeps initial logits near uniform)
 *   wq wk wv w1 w3         N(0, 1/in)    (unit-variance outputs for unit-variance inputs)
 *   wo w2                  N(0, 1/in) / √(2·layers)  (residual branches, GPT-2's scaling)
 *   norm gains             1
 */
export function initWeights(cfg: ModelConfig, rng: Rng): ModelWeights {
  validateConfig(cfg);
  const w: ModelWeights = new Map();
  weightNames(cfg).forEach((name, i) => {
    const shape = expectedShape(cfg, name);
    const data = new Float32Array(numel(shape));
    if (shape.length === 1) {
      data.fill(1);
    } else {
      let std = name === 'tok_emb' || name === 'lm_head' ? 0.02 : 1 / Math.sqrt(shape[1]!);
      if (name.endsWith('.wo') || name.endsWith('.w2')) std /= Math.sqrt(2 * cfg.layers);
      const r = rng.fork(i);
      for (let j = 0; j < data.length; j++) data[j] = r.normal() * std;
    }
    w.set(name, { dtype: 'f32', shape, data });
  });
  return w;
}

/** The f32 data of weight `name`; ConfigError if missing or quantized (dequantize first). */
export function getF32(weights: ModelWeights, name: string): Float32Array {
  const t = weights.get(name);
  if (!t) throw new ConfigError('name', name, `Weight "${name}" is missing.`);
  if (t.dtype !== 'f32') throw new ConfigError('name', name, `Weight "${name}" is ${t.dtype}; dequantize it first (dequantizeTensor).`);
  return t.data;
}

/** Bytes a model's tensors hold as stored (data, and the scales of Q8/Q4 ones). */
export function weightBytes(w: ModelWeights): number {
  let n = 0;
  for (const t of w.values()) for (const v of Object.values(t)) if (ArrayBuffer.isView(v)) n += v.byteLength;
  return n;
}

/** f32 copy of any weight tensor. */
export function dequantizeTensor(t: WeightTensor): Float32Array {
  switch (t.dtype) {
    case 'f32':
      return t.data.slice();
    case 'q8':
      return dequantizeQ8(t, t.shape[0]!, t.shape[1]!);
    case 'q4':
      return dequantizeQ4(t, t.shape[0]!, t.shape[1]!);
  }
}

/** A copy of the weights, every tensor f32 (quantized ones dequantized). */
export function dequantizeWeights(weights: ModelWeights): ModelWeights {
  const out: ModelWeights = new Map();
  for (const [name, t] of weights) out.set(name, { dtype: 'f32', shape: [...t.shape], data: dequantizeTensor(t) });
  return out;
}

/**
 * A copy of f32 weights with every quantizable matrix (see `isQuantizable`) stored as `kind`;
 * norms and matrices with an input dim not a multiple of 32 stay f32. kind 'f32' just copies.
 * Requires d % 32 == 0 for q8/q4 (ConfigError naming "d").
 */
export function quantizeWeights(cfg: ModelConfig, weights: ModelWeights, kind: QuantKind): ModelWeights {
  validateConfig(cfg, { quantized: kind !== 'f32' });
  const out: ModelWeights = new Map();
  for (const [name, t] of weights) {
    if (t.dtype !== 'f32') throw new ConfigError('name', name, `Weight "${name}" is already ${t.dtype}; quantize from f32 weights.`);
    const shape = [...t.shape];
    if (kind === 'f32' || !isQuantizable(shape)) {
      out.set(name, { dtype: 'f32', shape, data: t.data.slice() });
    } else if (kind === 'q8') {
      out.set(name, { dtype: 'q8', shape, ...quantizeQ8(t.data, shape[0]!, shape[1]!, `weight "${name}"`) });
    } else {
      out.set(name, { dtype: 'q4', shape, ...quantizeQ4(t.data, shape[0]!, shape[1]!, `weight "${name}"`) });
    }
  }
  return out;
}

/** 'f32' if all tensors are f32, else the single quantized kind used; ConfigError if q8 and q4 are mixed. */
export function weightsQuant(weights: ModelWeights): QuantKind {
  let kind: QuantKind = 'f32';
  for (const [name, t] of weights) {
    if (t.dtype === 'f32') continue;
    if (kind !== 'f32' && kind !== t.dtype) {
      throw new ConfigError('name', name, `Weight "${name}" is ${t.dtype} but others are ${kind}; a model uses one quantized kind.`);
    }
    kind = t.dtype;
  }
  return kind;
}

/**
 * Throws ConfigError unless `weights` has exactly the tensors of `cfg` with the right shapes and
 * consistent storage (quantized data lengths match the shape).
 */
export function checkWeights(cfg: ModelConfig, weights: ModelWeights): void {
  const names = weightNames(cfg);
  for (const name of names) {
    const t = weights.get(name);
    if (!t) throw new ConfigError('name', name, `Weight "${name}" is missing (expected shape ${showShape(expectedShape(cfg, name))}).`);
    const want = expectedShape(cfg, name);
    if (t.shape.length !== want.length || t.shape.some((s, i) => s !== want[i])) {
      throw new ConfigError('name', name, `Weight "${name}" has shape ${showShape(t.shape)} but the config expects ${showShape(want)}.`);
    }
    const n = numel(want);
    if (t.dtype === 'f32') {
      if (t.data.length !== n) throw new ConfigError('name', name, `Weight "${name}" has ${t.data.length} values; shape ${showShape(want)} needs ${n}.`);
    } else {
      if (!isQuantizable(want)) throw new ConfigError('name', name, `Weight "${name}" ${showShape(want)} cannot be ${t.dtype}: its input dim is not a multiple of ${QK}.`);
      const qlen = t.dtype === 'q8' ? n : n / 2;
      if (t.q.length !== qlen || t.scales.length !== n / QK) {
        throw new ConfigError('name', name, `Weight "${name}" (${t.dtype}) has ${t.q.length} codes and ${t.scales.length} scales; shape ${showShape(want)} needs ${qlen} and ${n / QK}.`);
      }
    }
  }
  if (weights.size !== names.length) {
    const known = new Set(names);
    const extra = [...weights.keys()].find((k) => !known.has(k)) ?? '?';
    throw new ConfigError('name', extra, `Weight "${extra}" is not part of a model with this config (${describeConfig(cfg)}).`);
  }
}

/**
 * Serialises a model (config, weights in whatever storage they have, card) to safetensors bytes:
 *   __metadata__ = { "format": "sat-playground", "version": "1", "config": <ModelConfig JSON>,
 *                    "quant": "f32" | "q8" | "q4", "card": <ModelCard JSON> }
 *   an f32 tensor       → one entry  "<name>"         F32 [shape]
 *   a q8 tensor [O × C] → two entries "<name>.q"      I8  [O, C]
 *                                     "<name>.scales" F16 [O, C/32]
 *   a q4 tensor [O × C] → two entries "<name>.q"      U8  [O, C/2]   (two nibbles a byte)
 *                                     "<name>.scales" F16 [O, C/32]
 * "quant" is "f32" when every tensor is f32, otherwise the one quantized kind the file uses (q8
 * and q4 are not mixed). A quantized model quantizes every matrix whose input dim is a multiple of
 * 32; any other (w2 when hidden = 172, say) stays f32 and unpadded; norm gains are always f32.
 */
export function saveModel(cfg: ModelConfig, weights: ModelWeights, card: ModelCard): Uint8Array {
  const quant = weightsQuant(weights);
  validateConfig(cfg, { quantized: quant !== 'f32' });
  checkWeights(cfg, weights);
  const checked = validateCard(card);
  if (!sameConfig(checked.config, cfg)) {
    throw new ConfigError('card.config', checked.config, `The card's config (${describeConfig(checked.config)}) differs from the model's (${describeConfig(cfg)}).`);
  }
  if (checked.quant !== quant) {
    throw new ConfigError('card.quant', checked.quant, `The card says quant "${checked.quant}" but the weights are stored as "${quant}".`);
  }
  const tensors = new Map<string, StTensor>();
  for (const name of weightNames(cfg)) {
    const t = weights.get(name)!;
    if (t.dtype === 'f32') {
      for (let i = 0; i < t.data.length; i++) {
        if (!Number.isFinite(t.data[i]!)) throw new NumericError(`Weight "${name}" element ${i} is ${t.data[i]}; cannot save a model with non-finite weights.`);
      }
      tensors.set(name, { dtype: 'F32', shape: [...t.shape], data: t.data });
    } else {
      const [O, C] = [t.shape[0]!, t.shape[1]!];
      const q: StTensor = t.dtype === 'q8' ? { dtype: 'I8', shape: [O, C], data: t.q } : { dtype: 'U8', shape: [O, C / 2], data: t.q };
      tensors.set(`${name}.q`, q);
      tensors.set(`${name}.scales`, { dtype: 'F16', shape: [O, C / QK], data: t.scales });
    }
  }
  return writeSafetensors(tensors, {
    format: MODEL_FORMAT,
    version: MODEL_FORMAT_VERSION,
    config: JSON.stringify(cfg),
    quant,
    card: cardToJson(checked),
  });
}

export interface LoadedModel {
  readonly cfg: ModelConfig;
  readonly weights: ModelWeights;
  readonly card: ModelCard;
}

function parseJsonField(metadata: Record<string, string>, key: string): unknown {
  const text = metadata[key];
  if (text === undefined) throw new FormatError(`model file: __metadata__ has no "${key}"; the file was not written by saveModel`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new FormatError(tidy(`model file: __metadata__ "${key}" is not valid JSON (${e instanceof Error ? e.message : String(e)})`));
  }
  // The checkers downstream (config.ts, card.ts) print values with JSON.stringify, which overflows
  // the stack on a value nested thousands deep: such a value is refused here, by a loop.
  if (nestedDeeperThan(value, MAX_METADATA_DEPTH)) {
    throw new FormatError(`model file: __metadata__ "${key}" nests deeper than ${MAX_METADATA_DEPTH} levels; a ${key} is a small JSON object (the file is corrupt)`);
  }
  return value;
}

/** True when `v` has arrays/objects nested more than `limit` deep (iterative: no recursion). */
function nestedDeeperThan(v: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[v, 0]];
  while (stack.length > 0) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== 'object') continue;
    if (d >= limit) return true;
    for (const y of Object.values(x as object)) stack.push([y, d + 1]);
  }
  return false;
}

/** A message of bounded length (src/core/text.ts boundedMessage at MAX_MESSAGE). */
const tidy = (message: string): string => boundedMessage(message, MAX_MESSAGE);

function shapeEq(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}

/**
 * Parses and fully validates a model file written by `saveModel`: every expected tensor present
 * with the right shape and dtype, no unknown extras, f32 values and f16 scales finite. Each failure
 * is a FormatError naming the tensor, of bounded length whatever the file holds (the config and
 * card JSON nest at most MAX_METADATA_DEPTH deep; long texts are cut).
 */
export function loadModel(bytes: Uint8Array): LoadedModel {
  const { tensors, metadata } = readSafetensors(bytes);
  const format = metadata.format;
  if (format !== MODEL_FORMAT) {
    throw new FormatError(
      `not a SAT Playground model: __metadata__ "format" is ${format === undefined ? 'missing' : quote(format)}, expected "${MODEL_FORMAT}"`,
    );
  }
  if (metadata.version !== MODEL_FORMAT_VERSION) {
    throw new FormatError(`model file version ${quote(metadata.version ?? '')} is not supported; this build reads version ${MODEL_FORMAT_VERSION} (re-export the model)`);
  }
  const quant = metadata.quant;
  if (quant !== 'f32' && quant !== 'q8' && quant !== 'q4') {
    throw new FormatError(`model file: __metadata__ "quant" is ${quant === undefined ? 'missing' : quote(quant)}; expected "f32", "q8" or "q4"`);
  }
  let cfg: ModelConfig;
  try {
    cfg = parseConfig(parseJsonField(metadata, 'config'), { quantized: quant !== 'f32' });
  } catch (e) {
    if (e instanceof ConfigError) throw new FormatError(tidy(`model file: its config is invalid: ${e.message}`));
    throw e;
  }
  let card: ModelCard;
  try {
    card = validateCard(parseJsonField(metadata, 'card'));
  } catch (e) {
    // validateCard quotes what it finds (an unknown field's name, say), whatever its length.
    if (e instanceof FormatError) throw new FormatError(tidy(e.message));
    throw e;
  }
  if (!sameConfig(card.config, cfg)) throw new FormatError(`model file: the card's config (${describeConfig(card.config)}) differs from the file's (${describeConfig(cfg)})`);
  if (card.quant !== quant) throw new FormatError(`model file: the card says quant "${card.quant}" but the file's quant is "${quant}"`);

  const used = new Set<string>();
  const weights: ModelWeights = new Map();
  for (const name of weightNames(cfg)) {
    const want = expectedShape(cfg, name);
    const plain = tensors.get(name);
    const q = tensors.get(`${name}.q`);
    const sc = tensors.get(`${name}.scales`);
    if (plain && (q || sc)) throw new FormatError(`model file: tensor "${name}" is stored both plain and quantized ("${name}${q ? '.q' : '.scales'}")`);
    if (plain) {
      used.add(name);
      if (plain.dtype !== 'F32') throw new FormatError(`model file: tensor "${name}" has dtype ${plain.dtype}; expected F32`);
      if (!shapeEq(plain.shape, want)) {
        throw new FormatError(`model file: tensor "${name}" has shape ${showShape(plain.shape)} but the config expects ${showShape(want)}`);
      }
      const data = plain.data as Float32Array;
      for (let i = 0; i < data.length; i++) {
        if (!Number.isFinite(data[i]!)) throw new FormatError(`model file: tensor "${name}" element ${i} is ${data[i]}; the weights are corrupt`);
      }
      weights.set(name, { dtype: 'f32', shape: want, data });
      continue;
    }
    if (!q && !sc) throw new FormatError(`model file: tensor "${name}" is missing (expected shape ${showShape(want)}, as "${name}" or "${name}.q" + "${name}.scales")`);
    if (!q || !sc) throw new FormatError(`model file: tensor "${name}" has "${name}.${q ? 'q' : 'scales'}" but no "${name}.${q ? 'scales' : 'q'}"`);
    used.add(`${name}.q`);
    used.add(`${name}.scales`);
    if (quant === 'f32') throw new FormatError(`model file: tensor "${name}" is quantized but __metadata__ "quant" is "f32"`);
    if (!isQuantizable(want)) {
      throw new FormatError(`model file: tensor "${name}" ${showShape(want)} is quantized but its input dim ${want[want.length - 1]} is not a multiple of ${QK}`);
    }
    const [O, C] = [want[0]!, want[1]!];
    const qDtype = quant === 'q8' ? 'I8' : 'U8';
    const qShape = quant === 'q8' ? [O, C] : [O, C / 2];
    if (q.dtype !== qDtype) throw new FormatError(`model file: tensor "${name}.q" has dtype ${q.dtype}; a ${quant} file stores codes as ${qDtype}`);
    if (!shapeEq(q.shape, qShape)) {
      throw new FormatError(`model file: tensor "${name}.q" has shape ${showShape(q.shape)} but the config expects ${showShape(qShape)} (${name} is ${showShape(want)}, ${quant})`);
    }
    if (sc.dtype !== 'F16') throw new FormatError(`model file: tensor "${name}.scales" has dtype ${sc.dtype}; scales are F16`);
    const sShape = [O, C / QK];
    if (!shapeEq(sc.shape, sShape)) {
      throw new FormatError(`model file: tensor "${name}.scales" has shape ${showShape(sc.shape)} but the config expects ${showShape(sShape)}`);
    }
    const scales = sc.data as Uint16Array;
    const bad = firstNonFiniteScale(scales);
    if (bad >= 0) {
      const nb = C / QK;
      throw new FormatError(
        `model file: tensor "${name}" scale of block ${bad} (row ${Math.floor(bad / nb)}, columns ${(bad % nb) * QK}..${(bad % nb) * QK + QK - 1}) is ${f16ToF32(scales[bad]!)}; the weights are corrupt`,
      );
    }
    weights.set(
      name,
      quant === 'q8'
        ? { dtype: 'q8', shape: want, q: q.data as Int8Array, scales }
        : { dtype: 'q4', shape: want, q: q.data as Uint8Array, scales },
    );
  }
  for (const key of tensors.keys()) {
    if (!used.has(key)) {
      throw new FormatError(`model file: unexpected tensor ${quote(key)}; it is not part of a model with this config (${describeConfig(cfg)})`);
    }
  }
  return { cfg, weights, card };
}
