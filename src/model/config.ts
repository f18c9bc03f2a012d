/**
 * The shape of a small Llama-family decoder: RMSNorm, rotary positions, SwiGLU MLP, embeddings tied
 * (the playground's own models) or untied (many Hugging Face checkpoints). A `ModelConfig` fixes
 * every tensor shape (names in weights.ts). Attention has as many K/V heads as query heads: a
 * grouped-query checkpoint is brought to this shape at load (hfLoad.ts), so there is no `kvHeads`.
 *
 * Not here: tensor storage (weights.ts), the forward pass (src/backend), training settings.
 */
import { ConfigError } from '../core/errors';
import { vocabSize as charVocab } from './tokenizer';

export interface ModelConfig {
  /** Number of token ids. */
  readonly vocab: number;
  /** Model (residual stream) width. */
  readonly d: number;
  /** Number of transformer blocks. */
  readonly layers: number;
  /** Attention heads; head size d/heads must be even (rotary pairs). */
  readonly heads: number;
  /** SwiGLU inner width (w1, w3: hidden×d; w2: d×hidden). */
  readonly hidden: number;
  /** Longest sequence (context) the model is run on. */
  readonly maxSeq: number;
  /** Rotary base θ (10000). */
  readonly ropeTheta: number;
  /** RMSNorm ε (1e-5). */
  readonly normEps: number;
  /** true: the output head is tok_emb; false: a separate `lm_head` [V × d]. Default true. */
  readonly tied: boolean;
}

/** Block size of int8/int4 quantization along the input dim. */
export const QUANT_BLOCK = 32;

/** The fields every config must give; the rest have defaults. */
export type ModelConfigInput = Pick<ModelConfig, 'vocab' | 'd' | 'layers' | 'heads' | 'hidden' | 'maxSeq'> &
  Partial<Pick<ModelConfig, 'ropeTheta' | 'normEps' | 'tied'>>;

const CONFIG_KEYS = ['vocab', 'd', 'layers', 'heads', 'hidden', 'maxSeq', 'ropeTheta', 'normEps', 'tied'] as const;

/** Fills defaults (ropeTheta 10000, normEps 1e-5, tied) and validates. */
export function modelConfig(input: ModelConfigInput, opts: ValidateOptions = {}): ModelConfig {
  const cfg: ModelConfig = {
    vocab: input.vocab,
    d: input.d,
    layers: input.layers,
    heads: input.heads,
    hidden: input.hidden,
    maxSeq: input.maxSeq,
    ropeTheta: input.ropeTheta ?? 10000,
    normEps: input.normEps ?? 1e-5,
    tied: input.tied ?? true,
  };
  return validateConfig(cfg, opts);
}

export interface ValidateOptions {
  /** Also require what int8/int4 storage needs: d % 32 == 0. */
  readonly quantized?: boolean;
}

function checkInt(key: string, v: unknown, min: number, max: number): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(key, v, `Model config "${key}" = ${JSON.stringify(v)} must be an integer in [${min}, ${max}].`);
  }
}

/**
 * Checks a config; returns it unchanged or throws ConfigError naming the offending field.
 * Ranges: vocab 2..65536, d 2..8192, layers 1..128, heads 1..d with d % heads == 0 and an even
 * head size, hidden 1..65536, maxSeq 1..65536, ropeTheta > 0, 0 < normEps < 1, tied a boolean.
 * `quantized` also needs d % 32 == 0 (int8/int4 blocks of 32 along a matrix's input dim); `hidden`
 * need not be: w2, whose input dim it is, then stays f32 in a quantized model (weights.ts).
 */
export function validateConfig(cfg: ModelConfig, opts: ValidateOptions = {}): ModelConfig {
  checkInt('vocab', cfg.vocab, 2, 65536);
  checkInt('d', cfg.d, 2, 8192);
  checkInt('layers', cfg.layers, 1, 128);
  checkInt('heads', cfg.heads, 1, cfg.d);
  checkInt('hidden', cfg.hidden, 1, 65536);
  checkInt('maxSeq', cfg.maxSeq, 1, 65536);
  if (cfg.d % cfg.heads !== 0) {
    throw new ConfigError('heads', cfg.heads, `Model config "heads" = ${cfg.heads} must divide d = ${cfg.d}.`);
  }
  const hs = cfg.d / cfg.heads;
  if (hs % 2 !== 0) {
    throw new ConfigError(
      'heads',
      cfg.heads,
      `Model config "heads" = ${cfg.heads} gives head size d/heads = ${hs}, which must be even (rotary positions rotate pairs).`,
    );
  }
  if (typeof cfg.ropeTheta !== 'number' || !Number.isFinite(cfg.ropeTheta) || cfg.ropeTheta <= 0) {
    throw new ConfigError('ropeTheta', cfg.ropeTheta, `Model config "ropeTheta" = ${cfg.ropeTheta} must be a finite number > 0 (usually 10000).`);
  }
  if (typeof cfg.normEps !== 'number' || !Number.isFinite(cfg.normEps) || cfg.normEps <= 0 || cfg.normEps >= 1) {
    throw new ConfigError('normEps', cfg.normEps, `Model config "normEps" = ${cfg.normEps} must be in (0, 1) (usually 1e-5).`);
  }
  if (typeof cfg.tied !== 'boolean') {
    throw new ConfigError('tied', cfg.tied, `Model config "tied" = ${JSON.stringify(cfg.tied)} must be true (head = tok_emb) or false (a separate lm_head).`);
  }
  if (opts.quantized && cfg.d % QUANT_BLOCK !== 0) {
    throw new ConfigError(
      'd',
      cfg.d,
      `Model config "d" = ${cfg.d} must be a multiple of ${QUANT_BLOCK} to store the model quantized (int8/int4 blocks of ${QUANT_BLOCK} along d); use f32 or a d of 32, 64, 96, 128, ….`,
    );
  }
  return cfg;
}

/**
 * Loose input (parsed JSON from a model file or card) → a checked config. Unknown keys and missing
 * keys are ConfigErrors naming the key.
 */
export function parseConfig(raw: unknown, opts: ValidateOptions = {}): ModelConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError('config', raw, `Model config must be an object with ${CONFIG_KEYS.join(', ')}; got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}.`);
  }
  const o = raw as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!(CONFIG_KEYS as readonly string[]).includes(k)) {
      throw new ConfigError(k, o[k], `Unknown model config field "${k}"; known fields: ${CONFIG_KEYS.join(', ')}.`);
    }
  }
  for (const k of CONFIG_KEYS) {
    if (!(k in o)) throw new ConfigError(k, undefined, `Model config is missing field "${k}".`);
  }
  return validateConfig(o as unknown as ModelConfig, opts);
}

/** Parameter counts by part; `total` is what `paramCount` returns. */
export interface ParamBreakdown {
  /** V·d: token embedding (shared with the output head when tied). */
  readonly embedding: number;
  /** V·d for an untied output head (lm_head), else 0. */
  readonly head: number;
  /** 4·d² + 3·d·hidden + 2·d for one block. */
  readonly perLayer: number;
  /** d: the final RMSNorm gain. */
  readonly finalNorm: number;
  readonly total: number;
}

/**
 * The parameters by part:
 *   params = V·d                                (tok_emb; also the output head when tied)
 *          + V·d                                (lm_head, only when untied)
 *          + layers · (4·d² + 3·d·hidden + 2·d)  (wq wk wv wo, w1 w3 w2, two RMSNorm gains)
 *          + d                                  (final_norm)
 */
export function paramBreakdown(cfg: ModelConfig): ParamBreakdown {
  const { vocab: V, d, layers, hidden } = cfg;
  const embedding = V * d;
  const head = cfg.tied ? 0 : V * d;
  const perLayer = 4 * d * d + 3 * d * hidden + 2 * d;
  const finalNorm = d;
  return { embedding, head, perLayer, finalNorm, total: embedding + head + layers * perLayer + finalNorm };
}

/** Number of parameters (tied embeddings counted once). */
export function paramCount(cfg: ModelConfig): number {
  return paramBreakdown(cfg).total;
}

/** Names of the playground's size presets. */
export type ModelSize = 'S' | 'M' | 'L';

/**
 * Playground presets over the char tokenizer (vocab 64), hidden = 3·d:
 *   S: d 32,  2 layers, 4 heads, hidden 96   →  28,832 params
 *   M: d 64,  2 layers, 4 heads, hidden 192  → 110,912 params (3.85 × S)
 *   L: d 128, 2 layers, 8 heads, hidden 384  → 434,816 params (15.1 × S)
 * All have d % 32 == 0 and hidden % 32 == 0, so every matrix quantizes.
 */
export const MODEL_PRESETS: Readonly<Record<ModelSize, ModelConfig>> = {
  S: modelConfig({ vocab: charVocab, d: 32, layers: 2, heads: 4, hidden: 96, maxSeq: 128 }, { quantized: true }),
  M: modelConfig({ vocab: charVocab, d: 64, layers: 2, heads: 4, hidden: 192, maxSeq: 128 }, { quantized: true }),
  L: modelConfig({ vocab: charVocab, d: 128, layers: 2, heads: 8, hidden: 384, maxSeq: 128 }, { quantized: true }),
};

/**
 * Reference configs of the bench (vocab 40, hidden ≈ 8d/3 rounded up to a multiple of 4, as
 * llama2.c sizes it). hidden is not a multiple of 32, so in a quantized file w2 stays f32.
 *   BENCH_100K: d 64,  2 layers, 4 heads, hidden 172 → 101,696 params
 *   BENCH_400K: d 128, 2 layers, 4 heads, hidden 344 → 401,024 params
 */
export const BENCH_100K: ModelConfig = modelConfig({ vocab: 40, d: 64, layers: 2, heads: 4, hidden: 172, maxSeq: 64 }, { quantized: true });
export const BENCH_400K: ModelConfig = modelConfig({ vocab: 40, d: 128, layers: 2, heads: 4, hidden: 344, maxSeq: 64 }, { quantized: true });

/** True if two configs describe the same model. */
export function sameConfig(a: ModelConfig, b: ModelConfig): boolean {
  return CONFIG_KEYS.every((k) => a[k] === b[k]);
}

/** One line for people: "d 64 · 2 layers · 4 heads · hidden 172 · vocab 40 (101,696 params)". */
export function describeConfig(cfg: ModelConfig): string {
  return `d ${cfg.d} · ${cfg.layers} layer${cfg.layers === 1 ? '' : 's'} · ${cfg.heads} heads · hidden ${cfg.hidden} · vocab ${cfg.vocab} · maxSeq ${cfg.maxSeq}${cfg.tied ? '' : ' · untied head'} (${paramCount(cfg).toLocaleString('en-US')} params)`;
}
