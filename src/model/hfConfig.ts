/**
 * A Hugging Face Llama-family `config.json` → our `ModelConfig` (config.ts), with every option we
 * do not implement refused by name, and the memory an agent on it will hold estimated from the
 * config alone — before a tensor is read or a buffer allocated (docs/models.md, "Your own
 * checkpoint"). Grouped-query attention is carried by repeating K/V rows at load (hfLoad.ts), so
 * the ModelConfig is plain multi-head and `kvHeads` lives in `HfInfo`.
 *
 * Not here: reading tensors (hfLoad.ts), the tokenizer (hfTokenizer.ts).
 */
import { ConfigError } from '../core/errors';
import { modelConfig, QUANT_BLOCK, type ModelConfig } from './config';
import type { QuantKind } from './quant';

/** What the checkpoint says beyond our ModelConfig. */
export interface HfInfo {
  readonly modelType: 'llama';
  /** num_key_value_heads: K/V heads before the load repeats them. */
  readonly kvHeads: number;
  /** max_position_embeddings: the longest context the checkpoint was trained on. */
  readonly maxPositions: number;
  readonly bosTokenId: number | null;
  /** eos_token_id (the first one when config.json lists several). */
  readonly eosTokenId: number | null;
}

const REQUIRED = ['vocab_size', 'hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads'] as const;

/** Default longest context the loaded model runs on (positions). */
export const HF_DEFAULT_MAX_SEQ = 512;

function field(o: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(o, key) ? o[key] : undefined;
}

/** A config value as a message shows it: short, and a number JSON cannot spell (1e400 parses as Infinity) as itself. */
function show(v: unknown): string {
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : `${v} (a number too large for a double)`;
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}

function refuse(key: string, v: unknown, why: string): never {
  throw new ConfigError(key, v, `config.json: "${key}" = ${show(v)} ${why}`);
}

function int(o: Record<string, unknown>, key: string, dflt?: number): number {
  const v = field(o, key) ?? dflt;
  if (v === undefined) throw new ConfigError(key, undefined, `config.json: "${key}" is missing; a Llama config must give it.`);
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) refuse(key, v, 'must be a positive integer.');
  return v;
}

function num(o: Record<string, unknown>, key: string, dflt: number): number {
  const v = field(o, key) ?? dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) refuse(key, v, 'must be a finite number > 0.');
  return v;
}

function tokenId(o: Record<string, unknown>, key: string): number | null {
  const v = field(o, key);
  const first = Array.isArray(v) ? v[0] : v;
  if (first === undefined || first === null) return null;
  if (typeof first !== 'number' || !Number.isInteger(first) || first < 0) refuse(key, v, 'must be a token id (an integer ≥ 0) or a list of them.');
  return first;
}

/**
 * Parsed config.json → our config and what else the checkpoint says. Throws ConfigError whose
 * `key` is the config.json field at fault and whose message names its value. Fields read (HF
 * `LlamaConfig` names, its defaults when absent):
 *   model_type               must be "llama" (qwen2 has q/k/v biases, mistral a sliding window,
 *                            gemma a different norm and head: all refused)
 *   vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads   required
 *   num_key_value_heads      default num_attention_heads; must divide it (grouped-query attention)
 *   head_dim                 default hidden_size / num_attention_heads; any other value is refused
 *   rope_theta 10000, rms_norm_eps 1e-6, max_position_embeddings 2048, tie_word_embeddings false
 *   hidden_act "silu", attention_bias false, mlp_bias false, rope_scaling null   (else refused)
 *   bos_token_id, eos_token_id          kept for the tokenizer (hfTokenizer.ts)
 * Anything else (torch_dtype, use_cache, …) does not change the forward pass and is ignored. The
 * model runs on at most `maxSeq` positions (default min(max_position_embeddings, 512)).
 */
export function parseHfConfig(raw: unknown, opts: { readonly maxSeq?: number } = {}): { cfg: ModelConfig; info: HfInfo } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError('config.json', raw, 'config.json must hold a JSON object (the model\'s Hugging Face config).');
  }
  const o = raw as Record<string, unknown>;
  const modelType = field(o, 'model_type');
  if (modelType !== 'llama') {
    const hint = modelType === undefined ? 'is missing' : 'is not supported';
    throw new ConfigError('model_type', modelType, `config.json: "model_type" ${modelType === undefined ? '' : `= ${show(modelType)} `}${hint}; supported: "llama" (Llama-family checkpoints such as SmolLM, TinyLlama).`);
  }
  for (const k of REQUIRED) int(o, k);
  const act = field(o, 'hidden_act') ?? 'silu';
  if (act !== 'silu') refuse('hidden_act', act, 'is not supported: the MLP is SwiGLU with silu.');
  for (const k of ['attention_bias', 'mlp_bias'] as const) {
    const v = field(o, k) ?? false;
    if (v !== false) refuse(k, v, 'is not supported: projections here have no bias.');
  }
  const scaling = field(o, 'rope_scaling');
  if (scaling !== undefined && scaling !== null) refuse('rope_scaling', scaling, 'is not supported: only plain rotary positions (rope_scaling null).');
  const d = int(o, 'hidden_size');
  const heads = int(o, 'num_attention_heads');
  const kvHeads = int(o, 'num_key_value_heads', heads);
  if (heads % kvHeads !== 0) refuse('num_key_value_heads', kvHeads, `must divide num_attention_heads = ${heads} (each K/V head serves a whole group of query heads).`);
  if (d % heads !== 0) refuse('num_attention_heads', heads, `must divide hidden_size = ${d}.`);
  const headDim = field(o, 'head_dim');
  if (headDim !== undefined && headDim !== null && headDim !== d / heads) {
    refuse('head_dim', headDim, `is not supported: it must equal hidden_size / num_attention_heads = ${d / heads}.`);
  }
  const tied = field(o, 'tie_word_embeddings') ?? false;
  if (typeof tied !== 'boolean') refuse('tie_word_embeddings', tied, 'must be true or false.');
  const maxPositions = int(o, 'max_position_embeddings', 2048);
  const maxSeq = Math.min(maxPositions, opts.maxSeq ?? HF_DEFAULT_MAX_SEQ);
  // Read (and refused, with their own message) before modelConfig, whose errors are re-worded below.
  const ropeTheta = num(o, 'rope_theta', 10000);
  const normEps = num(o, 'rms_norm_eps', 1e-6);
  let cfg: ModelConfig;
  try {
    cfg = modelConfig({
      vocab: int(o, 'vocab_size'), d, layers: int(o, 'num_hidden_layers'), heads, hidden: int(o, 'intermediate_size'), maxSeq, ropeTheta, normEps, tied,
    });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const hf: Record<string, string> = { vocab: 'vocab_size', d: 'hidden_size', layers: 'num_hidden_layers', heads: 'num_attention_heads', hidden: 'intermediate_size', normEps: 'rms_norm_eps', ropeTheta: 'rope_theta' };
    const key = hf[e.key] ?? e.key;
    throw new ConfigError(key, e.value, `config.json: "${key}" = ${show(e.value)} cannot be run here: ${e.message}`);
  }
  return { cfg, info: { modelType: 'llama', kvHeads, maxPositions, bosTokenId: tokenId(o, 'bos_token_id'), eosTokenId: tokenId(o, 'eos_token_id') } };
}

/** Parameters of the checkpoint as its config describes it (K/V projections at kvHeads rows). */
export function checkpointParams(cfg: ModelConfig, info: Pick<HfInfo, 'kvHeads'>): number {
  const { vocab: V, d, hidden: H, layers: L } = cfg;
  const kv = info.kvHeads * (d / cfg.heads);
  return (cfg.tied ? 1 : 2) * V * d + L * (2 * d * d + 2 * kv * d + 3 * H * d + 2 * d) + d;
}

/** Bytes one [out × in] matrix takes stored as `quant` (q8: 1 byte + an f16 scale per 32; q4: ½ byte + the same). */
function matrixBytes(out: number, inp: number, quant: QuantKind): number {
  const n = out * inp;
  if (quant === 'f32' || inp % QUANT_BLOCK !== 0) return 4 * n;
  return (quant === 'q8' ? n : n / 2) + 2 * (n / QUANT_BLOCK);
}

/** What an agent on a loaded checkpoint holds, in bytes, by part. */
export interface MemoryEstimate {
  /** The stored weights (quantized where they can be), K/V rows already repeated for GQA, as the
   *  backend holds them. */
  readonly weights: number;
  /** A second copy of them beside the backend's (EstimateOptions.hostCopy; 0 without one). */
  readonly hostWeights: number;
  /** LoRA adapters: parameters, gradient and two AdamW moments, f32 (0 without LoRA). */
  readonly lora: number;
  /** Activations of one training forward+backward over `sequences` × `seqLen` rows (kept for every layer) and their logits. */
  readonly activations: number;
  /** Sampling `prompts` messages at once: the KV cache (every layer, seqLen positions) and one layer's prefill activations. */
  readonly sampling: number;
  readonly total: number;
}

export interface EstimateOptions {
  readonly quant: QuantKind;
  /** LoRA rank (0: inference only / no adapter). */
  readonly loraRank: number;
  /** Sequences of one training pass, B: an LM agent packs all its messages of a batch (batch × group) into one. Default 8. */
  readonly sequences?: number;
  /** Their padded length T. Default maxSeq (the worst case). */
  readonly seqLen?: number;
  /** Prompts sampled in one call (the rollout's batch × group, or an evaluation's episodes). Default `sequences`. */
  readonly prompts?: number;
  /**
   * Whether the seat holds a second copy of the weights beside the backend's: true (the default)
   * where its model uploads them (a WebGPU seat keeps the host arrays it was built from); false
   * for a CPU seat loaded into the kernels' memory, whose model adopts them (hfLoad.ts `into`).
   */
  readonly hostCopy?: boolean;
}

/**
 * Memory an agent on `cfg` will hold, estimated from the config (before allocation). The
 * activations count what model.ts keeps per layer for N = B·T rows — 9 [N × d] and 3 [N × hidden]
 * tensors and the attention matrix [B·heads·T·T] — plus the [N × vocab] logits and their gradient
 * and the scratch of one layer's backward; sampling `prompts` at once holds a KV cache of
 * 2·layers·prompts·seqLen·d values and one layer's prefill activations. It is an estimate: a batch
 * whose sequences are shorter than `seqLen` holds less.
 */
export function estimateMemory(cfg: ModelConfig, o: EstimateOptions): MemoryEstimate {
  const { vocab: V, d, hidden: H, layers: L, heads, maxSeq } = cfg;
  const perLayer = 4 * matrixBytes(d, d, o.quant) + 2 * matrixBytes(H, d, o.quant) + matrixBytes(d, H, o.quant) + 2 * 4 * d;
  const embMats = cfg.tied ? 1 : 2;
  const weights = embMats * matrixBytes(V, d, o.quant) + L * perLayer + 4 * d;
  const loraParams = o.loraRank > 0 ? L * o.loraRank * (4 * (d + d) + 2 * (d + H) + (H + d)) : 0;
  const Bs = o.sequences ?? 8;
  const T = o.seqLen ?? maxSeq;
  const N = Bs * T;
  const activations = 4 * (L * (N * (9 * d + 3 * H) + Bs * heads * T * T) + 2 * N * V + 8 * N * Math.max(d, H));
  const S = o.prompts ?? Bs;
  const sampling = 4 * (2 * L * S * T * d + S * T * (9 * d + 3 * H) + S * heads * T * T + S * V);
  const lora = 4 * 4 * loraParams;
  // The model keeps its training and sampling buffers side by side (both grow-only), so they add.
  const hostWeights = o.hostCopy === false ? 0 : weights;
  return { weights, hostWeights, lora, activations, sampling, total: weights + hostWeights + lora + activations + sampling };
}

/** "1.23 GiB" / "456.7 MiB". */
export function formatBytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  return `${(n / 2 ** 10).toFixed(1)} KiB`;
}

/** One line: "weights 150 MiB + their host copy 150 MiB + LoRA 40 MiB + activations 1.7 GiB + sampling … = …" (no host copy term when there is none). */
export function describeEstimate(e: MemoryEstimate): string {
  return `weights ${formatBytes(e.weights)}${e.hostWeights > 0 ? ` + their host copy ${formatBytes(e.hostWeights)}` : ''} + LoRA ${formatBytes(e.lora)} + activations ${formatBytes(e.activations)} + sampling ${formatBytes(e.sampling)} = ${formatBytes(e.total)}`;
}

/** Throws ConfigError('memory', …) before anything is allocated when the estimate exceeds `limitBytes`. */
export function checkFits(e: MemoryEstimate, limitBytes: number, where: string): void {
  if (e.total > limitBytes) {
    throw new ConfigError(
      'memory',
      e.total,
      `This checkpoint needs about ${formatBytes(e.total)} (${describeEstimate(e)}) but ${where} allows ${formatBytes(limitBytes)}; quantize it (q8 or q4), train and sample fewer sequences at once (batch × group, evalEpisodes), lower the LoRA rank or the context (maxSeq), or pick a smaller model.`,
    );
  }
}
