/**
 * What a frozen ONNX seat needs of its folder beyond the graph: the model's name, vocabulary and
 * longest context from config.json (read loosely — any architecture: only vocab_size,
 * max_position_embeddings / n_positions / max_seq_len, bos / eos ids and _name_or_path are
 * used), the tokenizer (tokenizer.json, tokenizer_config.json's chat template and special tokens,
 * generation_config.json: hfTokenizer.ts, as a checkpoint seat's), and the memory onnxruntime-web
 * will hold for it, estimated before a session is created.
 *
 * Not here: the Llama mapping of a trainable seat (llama.ts reads config.json strictly, as a checkpoint's).
 */
import { ConfigError, FormatError } from '../../core/errors';
import { escapeControl } from '../../core/text';
import { formatBytes } from '../hfConfig';
import { HfTokenizer, type HfTurns } from '../hfTokenizer';
import { onnxFileBytes } from './llama';
import type { OnnxModel } from './read';

export interface OnnxFolderInfo {
  readonly name: string;
  readonly vocab: number;
  readonly maxPositions: number;
  readonly tokenizer: HfTokenizer;
}

function json(files: ReadonlyMap<string, Uint8Array>, name: string, required: boolean): unknown {
  const bytes = files.get(name);
  if (bytes === undefined) {
    if (!required) return undefined;
    throw new FormatError(`ONNX folder: "${name}" is missing; an ONNX model folder has config.json, tokenizer.json and a .onnx file (onnx/model.onnx, onnx/model_q4.onnx, …)`);
  }
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw new FormatError(`ONNX folder: "${name}" is not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
}

const posInt = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);
const tokenId = (v: unknown): number | null => {
  const x = Array.isArray(v) ? v[0] : v;
  return typeof x === 'number' && Number.isInteger(x) && x >= 0 ? x : null;
};

/** The folder's config.json (any architecture) and tokenizer, checked against the graph's vocabulary when the graph is given. */
export function readOnnxFolderInfo(files: ReadonlyMap<string, Uint8Array>, model?: OnnxModel, turns?: HfTurns): OnnxFolderInfo {
  const raw = json(files, 'config.json', true);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new FormatError('ONNX folder: config.json must hold a JSON object');
  const c = raw as Record<string, unknown>;
  const logitsDim = model?.outputs.find((o) => o.name === 'logits')?.dims.at(-1);
  const vocab = posInt(c.vocab_size) ?? (typeof logitsDim === 'number' ? logitsDim : undefined);
  if (vocab === undefined) throw new ConfigError('vocab_size', c.vocab_size, 'config.json: "vocab_size" is missing and the graph\'s logits do not say it');
  if (typeof logitsDim === 'number' && logitsDim !== vocab) throw new ConfigError('vocab_size', vocab, `config.json: "vocab_size" = ${vocab} but ${model?.file}'s logits have ${logitsDim} entries; the config is not this graph's`);
  const maxPositions = posInt(c.max_position_embeddings) ?? posInt(c.n_positions) ?? posInt(c.max_seq_len) ?? 2048;
  const tokenizer = new HfTokenizer(json(files, 'tokenizer.json', true), {
    tokenizerConfig: json(files, 'tokenizer_config.json', false),
    generationConfig: json(files, 'generation_config.json', false),
    info: { bosTokenId: tokenId(c.bos_token_id), eosTokenId: tokenId(c.eos_token_id) },
    vocab,
    turns,
  });
  const named = c._name_or_path;
  return { name: typeof named === 'string' && named.length > 0 ? escapeControl(named.slice(0, 120)) : 'onnx model', vocab, maxPositions, tokenizer };
}

export interface OnnxFrozenEstimate {
  /** The .onnx file and its external data, as the seat keeps them. */
  readonly files: number;
  /** onnxruntime's copy of the weights (the initializers, as large as the files). */
  readonly session: number;
  /** One sequence's decoding cache at the context: 2 · layers · context · KV heads · head size values. */
  readonly cache: number;
  /** One full forward's logits (context × vocabulary, f32) — what a log-prob query returns. */
  readonly logits: number;
  readonly total: number;
}

/** Memory a frozen seat on `model` holds at `context` positions (sequences run one at a time). */
export function estimateOnnxFrozen(files: ReadonlyMap<string, Uint8Array>, model: OnnxModel, vocab: number, context: number): OnnxFrozenEstimate {
  const bytes = onnxFileBytes(files, model.file);
  let cache = 0;
  for (const i of model.inputs) {
    if (!/^past_key_values\.\d+\.(key|value)$/.test(i.name)) continue;
    const [kv, hs] = [i.dims[1], i.dims[3]];
    cache += (typeof kv === 'number' ? kv : 1) * (typeof hs === 'number' ? hs : 1) * context * (i.elemType === 10 ? 2 : 4);
  }
  const logits = 4 * context * vocab;
  return { files: bytes, session: bytes, cache, logits, total: 2 * bytes + cache + logits };
}

/**
 * The same estimate from config.json and the files' sizes only (the page checks it before reading
 * a byte of the graph): the cache from num_hidden_layers × (num_key_value_heads × head_dim, or
 * hidden_size) — the largest a Llama-like decoder's cache is; a config without them counts
 * hidden_size, 1,024 if absent.
 */
export function estimateOnnxFrozenFromConfig(config: unknown, fileBytes: number, vocab: number, context: number): OnnxFrozenEstimate {
  const c = (typeof config === 'object' && config !== null ? config : {}) as Record<string, unknown>;
  const layers = posInt(c.num_hidden_layers) ?? posInt(c.n_layer) ?? 32;
  const d = posInt(c.hidden_size) ?? posInt(c.n_embd) ?? 1024;
  const heads = posInt(c.num_attention_heads) ?? 1;
  const kv = posInt(c.num_key_value_heads) ?? heads;
  const headDim = posInt(c.head_dim) ?? Math.ceil(d / heads);
  const cache = 2 * layers * context * kv * headDim * 4;
  const logits = 4 * context * vocab;
  return { files: fileBytes, session: fileBytes, cache, logits, total: 2 * fileBytes + cache + logits };
}

export function describeOnnxFrozen(e: OnnxFrozenEstimate): string {
  return `files ${formatBytes(e.files)} + onnxruntime's copy ${formatBytes(e.session)} + decoding cache ${formatBytes(e.cache)} + logits ${formatBytes(e.logits)} = ${formatBytes(e.total)}`;
}

/** ConfigError('memory', …) before a session is created when the estimate is over the limit. */
export function checkOnnxFrozenFits(e: OnnxFrozenEstimate, limitBytes: number, where: string): void {
  if (e.total > limitBytes) {
    throw new ConfigError('memory', e.total, `This ONNX model needs about ${formatBytes(e.total)} as a frozen seat (${describeOnnxFrozen(e)}) but ${where} allows ${formatBytes(limitBytes)}; pick a smaller file of the folder (model_q4.onnx, model_quantized.onnx) or a smaller model.`);
  }
}
