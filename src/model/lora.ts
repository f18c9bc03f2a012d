/**
 * LoRA adapters (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models"): for a
 * frozen matrix W [out × in] an agent trains A [r × in] and B [out × r], and the layer uses
 *
 *   W' = W + (alpha / r) · B · A
 *
 * A starts small and random (N(0, 1/in)), B starts at zero, so the initial delta is exactly 0 and
 * a fresh adapter leaves the base model's outputs unchanged. Targets are the attention and MLP
 * projections of every layer: wq wk wv wo (attention), w1 w3 w2 (MLP); never embeddings or norms.
 * Adapters are f32 (row-major like the weights); the base they sit on may be quantized.
 *
 * Here: the adapter's config and state, init, the delta, merge/unmerge into f32 weights, counts.
 * Not here: the forward/backward through an adapter (src/backend), optimizer state, saving
 * adapters to a file.
 */
import { ConfigError } from '../core/errors';
import type { Rng } from '../core/rng';
import { type ModelConfig } from './config';
import { dequantizeTensor, expectedShape, type ModelWeights } from './weights';

/** Projections LoRA can adapt. */
export type LoraTarget = 'wq' | 'wk' | 'wv' | 'wo' | 'w1' | 'w3' | 'w2';
export const LORA_ATTN: readonly LoraTarget[] = ['wq', 'wk', 'wv', 'wo'];
export const LORA_MLP: readonly LoraTarget[] = ['w1', 'w3', 'w2'];
export const LORA_ALL: readonly LoraTarget[] = [...LORA_ATTN, ...LORA_MLP];

export interface LoraConfig {
  /** Rank r ≥ 1, at most min(out, in) of every target. */
  readonly rank: number;
  /** Scale numerator: the delta is (alpha / r)·B·A. > 0; alpha = r gives scale 1. */
  readonly alpha: number;
  /** Which projections to adapt, in every layer. Default LORA_ALL. */
  readonly targets?: readonly LoraTarget[];
}

/** One adapted matrix: name of the base weight and its A, B. */
export interface LoraPair {
  /** Base weight name, e.g. "layers.0.wq". */
  readonly name: string;
  readonly out: number;
  readonly in: number;
  /** [r × in], row-major. */
  readonly a: Float32Array;
  /** [out × r], row-major. */
  readonly b: Float32Array;
}

export interface LoraAdapter {
  readonly rank: number;
  readonly alpha: number;
  /** alpha / rank. */
  readonly scale: number;
  /** Base weight name → pair, in `loraTargets` order. */
  readonly pairs: Map<string, LoraPair>;
}

/** One adaptable matrix of a model. */
export interface LoraSite {
  readonly name: string;
  readonly out: number;
  readonly in: number;
}

/** The matrices an adapter with these targets covers, layer by layer in LORA_ALL order. */
export function loraTargets(cfg: ModelConfig, targets: readonly LoraTarget[] = LORA_ALL): LoraSite[] {
  const sites: LoraSite[] = [];
  for (let l = 0; l < cfg.layers; l++) {
    for (const t of LORA_ALL) {
      if (!targets.includes(t)) continue;
      const name = `layers.${l}.${t}`;
      const [out, inp] = expectedShape(cfg, name) as [number, number];
      sites.push({ name, out, in: inp });
    }
  }
  return sites;
}

/** Checks a LoRA config against a model; ConfigError naming "rank", "alpha" or "targets". */
export function validateLoraConfig(cfg: ModelConfig, lcfg: LoraConfig): void {
  const targets = lcfg.targets ?? LORA_ALL;
  if (!Array.isArray(targets) || targets.length === 0) {
    throw new ConfigError('targets', targets, `LoRA "targets" must list at least one of ${LORA_ALL.join(', ')}.`);
  }
  for (const t of targets) {
    if (!LORA_ALL.includes(t)) throw new ConfigError('targets', t, `LoRA target "${String(t)}" is unknown; choose from ${LORA_ALL.join(', ')}.`);
  }
  if (new Set(targets).size !== targets.length) throw new ConfigError('targets', targets, 'LoRA "targets" lists a projection twice.');
  const maxRank = Math.min(...loraTargets(cfg, targets).map((s) => Math.min(s.out, s.in)));
  if (!Number.isInteger(lcfg.rank) || lcfg.rank < 1 || lcfg.rank > maxRank) {
    throw new ConfigError('rank', lcfg.rank, `LoRA "rank" = ${lcfg.rank} must be an integer in [1, ${maxRank}] (the smallest dimension of the adapted matrices).`);
  }
  if (typeof lcfg.alpha !== 'number' || !Number.isFinite(lcfg.alpha) || lcfg.alpha <= 0) {
    throw new ConfigError('alpha', lcfg.alpha, `LoRA "alpha" = ${lcfg.alpha} must be a finite number > 0 (alpha = rank gives scale 1).`);
  }
}

/** Number of trainable parameters: Σ r·(in + out) over the targets. */
export function loraParamCount(cfg: ModelConfig, lcfg: LoraConfig): number {
  return loraTargets(cfg, lcfg.targets ?? LORA_ALL).reduce((n, s) => n + lcfg.rank * (s.in + s.out), 0);
}

/**
 * A fresh adapter: A ~ N(0, 1/in) drawn from `rng.fork(i)` (i = the site's index in
 * `loraTargets`), B = 0, so the delta is exactly zero.
 */
export function initLora(cfg: ModelConfig, lcfg: LoraConfig, rng: Rng): LoraAdapter {
  validateLoraConfig(cfg, lcfg);
  const r = lcfg.rank;
  const pairs = new Map<string, LoraPair>();
  loraTargets(cfg, lcfg.targets ?? LORA_ALL).forEach((s, i) => {
    const a = new Float32Array(r * s.in);
    const std = 1 / Math.sqrt(s.in);
    const g = rng.fork(i);
    for (let j = 0; j < a.length; j++) a[j] = g.normal() * std;
    pairs.set(s.name, { name: s.name, out: s.out, in: s.in, a, b: new Float32Array(s.out * r) });
  });
  return { rank: r, alpha: lcfg.alpha, scale: lcfg.alpha / r, pairs };
}

/** delta = scale · B·A  [out × in] (into `out` if given). */
export function loraDelta(pair: LoraPair, rank: number, scale: number, out?: Float32Array): Float32Array {
  const { out: O, in: C, a, b } = pair;
  const delta = out ?? new Float32Array(O * C);
  const row = new Float64Array(C);
  for (let o = 0; o < O; o++) {
    row.fill(0);
    for (let k = 0; k < rank; k++) {
      const bk = b[o * rank + k]!;
      if (bk === 0) continue;
      const ak = k * C;
      for (let c = 0; c < C; c++) row[c]! += bk * a[ak + c]!;
    }
    for (let c = 0; c < C; c++) delta[o * C + c] = scale * row[c]!;
  }
  return delta;
}

/** w += sign · scale · B·A, in place on an f32 [out × in] matrix. */
export function addLoraDelta(w: Float32Array, pair: LoraPair, rank: number, scale: number, sign: 1 | -1 = 1): void {
  if (w.length !== pair.out * pair.in) {
    throw new ConfigError('name', pair.name, `LoRA pair "${pair.name}" is [${pair.out} × ${pair.in}] but the weight has ${w.length} values.`);
  }
  const delta = loraDelta(pair, rank, scale);
  for (let i = 0; i < w.length; i++) w[i] = w[i]! + sign * delta[i]!;
}

function applyAll(weights: ModelWeights, adapter: LoraAdapter, sign: 1 | -1): ModelWeights {
  const out: ModelWeights = new Map();
  for (const [name, t] of weights) {
    const pair = adapter.pairs.get(name);
    if (!pair) {
      out.set(name, t);
      continue;
    }
    const data = dequantizeTensor(t);
    addLoraDelta(data, pair, adapter.rank, adapter.scale, sign);
    out.set(name, { dtype: 'f32', shape: [...t.shape], data });
  }
  for (const name of adapter.pairs.keys()) {
    if (!weights.has(name)) throw new ConfigError('name', name, `LoRA adapter targets "${name}", which the weights do not have.`);
  }
  return out;
}

/**
 * Weights with the adapter folded in: each adapted matrix becomes f32 W + scale·B·A (a quantized
 * base is dequantized first). Other tensors are shared with the input, not copied.
 */
export function mergeLora(weights: ModelWeights, adapter: LoraAdapter): ModelWeights {
  return applyAll(weights, adapter, 1);
}

/** The inverse of mergeLora on f32 weights: W − scale·B·A (equal to the original up to f32 rounding). */
export function unmergeLora(weights: ModelWeights, adapter: LoraAdapter): ModelWeights {
  return applyAll(weights, adapter, -1);
}
