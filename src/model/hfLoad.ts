/**
 * Loads a Hugging Face Llama-family checkpoint folder (config.json, model.safetensors or its
 * shards, tokenizer.json and friends) into our weights (weights.ts names and layout), as f32 or
 * quantized on load to Q8/Q4. The input is a map file name → bytes (or, for a safetensors file, a
 * reader of its byte ranges), so the CLI and the page build the same thing. Only the headers are
 * read whole: each tensor is read a row block at a time and converted (and quantized) straight
 * into its final arrays, so no copy of a whole file, nor an f32 copy of a quantized model, exists.
 *
 * Two transformations make our forward pass HF's exactly (docs/models.md, "How it is loaded"):
 * q/k rows are permuted inside every head (HF rotates half pairs, our RoPE interleaved pairs), and
 * grouped-query K/V heads are repeated into full [d × d] wk, wv (no new backend op).
 *
 * Every problem is a FormatError or ConfigError naming the file, tensor or field; sizes are
 * checked before bytes (src/core/limits.ts), and memory before any tensor is read.
 *
 * Not here: config.json's fields (hfConfig.ts), the tokenizer (hfTokenizer.ts), the page's files.
 */
import type { Backend, HostTensors } from '../backend/types';
import { ConfigError, FormatError } from '../core/errors';
import { f16ToF32 } from '../core/f16';
import { readJson } from '../core/json';
import { formatSize, MAX_JSON_DEPTH, MAX_SMALL_JSON_BYTES, maxCheckpointHeaderBytes, maxTokenizerBytes } from '../core/limits';
import { escapeControl } from '../core/text';
import type { ModelConfig } from './config';
import { checkFits, checkpointParams, estimateMemory, parseHfConfig, type HfInfo } from './hfConfig';
import { HfTokenizer, type HfTurns } from './hfTokenizer';
import { QK, quantizeRowsQ4, quantizeRowsQ8, type QuantKind } from './quant';
import { bytesRanges, dtypeSize, quote, readRange, readSafetensorsIndex, showShape, type ByteRanges, type StEntry } from './safetensors';
import { isQuantizable, weightNames, type ModelWeights, type WeightTensor } from './weights';

/** A checkpoint folder: file name (relative to the folder, e.g. "model-00001-of-00002.safetensors") → bytes. */
export type HfFiles = ReadonlyMap<string, Uint8Array>;

/**
 * A checkpoint folder as the loader reads it: its JSON files as bytes, each safetensors file as
 * bytes or read by range (a file on disk, a Blob), so the weights are read as they are converted.
 */
export type HfFolder = ReadonlyMap<string, Uint8Array | ByteRanges>;

export interface HfProgress {
  readonly phase: 'reading' | 'converting' | 'quantizing';
  /** Files whose headers are read / tensors read and converted so far, of `total`. */
  readonly done: number;
  readonly total: number;
  /** The file or tensor at hand. */
  readonly item: string;
}

export interface HfLoadOptions {
  /** Storage of the matrices after load (quantizable ones: input dim a multiple of 32). Default 'f32'. */
  readonly quant?: QuantKind;
  /** Longest context the model runs on (hfConfig.ts; default min(max_position_embeddings, 512)). */
  readonly maxSeq?: number;
  /** How turns are marked in the tokenizer's text (hfTokenizer.ts). Default: 'chat' if the tokenizer config has a chat template, else 'plain'. */
  readonly turns?: HfTurns;
  readonly onProgress?: (p: HfProgress) => void;
  /** Aborts between tensors (the promise rejects with the signal's reason). */
  readonly signal?: AbortSignal;
  /** Refuse before reading any tensor when the estimate for an agent with this LoRA rank exceeds the limit. */
  /**
   * Where the weights' arrays are made (default: ordinary typed arrays): a backend's `zeros`, so
   * the CPU backend's weights are written straight into its kernels' memory, for a Model built
   * with `adopt` to use as they are (one copy of the weights in all).
   */
  readonly into?: Pick<Backend<HostTensors>, 'zeros'>;
  /** Most bytes of a safetensors file read (and converted to f32) at once: whole rows, at least one. Default 1 MiB. */
  readonly chunkBytes?: number;
  readonly memory?: { readonly limitBytes: number; readonly loraRank: number; readonly where: string; readonly sequences?: number; readonly seqLen?: number; readonly prompts?: number; readonly hostCopy?: boolean };
}

export interface HfModel {
  readonly cfg: ModelConfig;
  readonly weights: ModelWeights;
  readonly info: HfInfo;
  readonly tokenizer: HfTokenizer;
  /** config.json's "_name_or_path" (its first 120 characters, control characters escaped) when it has one, else "checkpoint". */
  readonly name: string;
}

const IGNORED = /^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/;
const SUPPORTED_DTYPES = ['F32', 'F16', 'BF16'];

/** HF tensor name of each of our weights. */
export function hfName(ours: string): string {
  if (ours === 'tok_emb') return 'model.embed_tokens.weight';
  if (ours === 'final_norm') return 'model.norm.weight';
  if (ours === 'lm_head') return 'lm_head.weight';
  const m = /^layers\.(\d+)\.(\w+)$/.exec(ours);
  if (!m) throw new ConfigError('name', ours, `"${ours}" is not one of our weight names.`);
  const part: Record<string, string> = {
    attn_norm: 'input_layernorm', mlp_norm: 'post_attention_layernorm',
    wq: 'self_attn.q_proj', wk: 'self_attn.k_proj', wv: 'self_attn.v_proj', wo: 'self_attn.o_proj',
    w1: 'mlp.gate_proj', w3: 'mlp.up_proj', w2: 'mlp.down_proj',
  };
  return `model.layers.${m[1]}.${part[m[2]!]}.weight`;
}

/** The [rows × cols] shape HF stores our weight `ours` with (K/V projections: kvHeads·headDim rows). */
function hfShape(cfg: ModelConfig, info: HfInfo, ours: string): number[] {
  const { vocab: V, d, hidden: H } = cfg;
  const kvRows = info.kvHeads * (d / cfg.heads);
  if (ours === 'tok_emb' || ours === 'lm_head') return [V, d];
  if (ours === 'final_norm' || ours.endsWith('_norm')) return [d];
  const p = ours.slice(ours.lastIndexOf('.') + 1);
  if (p === 'wk' || p === 'wv') return [kvRows, d];
  if (p === 'w1' || p === 'w3') return [H, d];
  if (p === 'w2') return [d, H];
  return [d, d];
}

let f16Table: Float32Array | null = null;

/**
 * The f32 values of F32 / F16 / BF16 little-endian bytes (a whole number of elements), written
 * into `out` from element 0: BF16 is the top half of an f32 (its bits shifted up), F16 through a
 * table of all 65,536 values, F32 copied.
 */
function toF32Into(dtype: 'F32' | 'F16' | 'BF16', bytes: Uint8Array, out: Float32Array): void {
  const size = dtypeSize(dtype);
  const n = bytes.length / size;
  // A typed view needs its offset aligned to the element; a file's data need not be.
  const b = bytes.byteOffset % size === 0 ? bytes : bytes.slice();
  if (dtype === 'F32') {
    out.set(new Float32Array(b.buffer, b.byteOffset, n));
    return;
  }
  const bits = new Uint16Array(b.buffer, b.byteOffset, n);
  if (dtype === 'BF16') {
    const u = new Uint32Array(out.buffer, out.byteOffset, n);
    for (let i = 0; i < n; i++) u[i] = bits[i]! << 16;
    return;
  }
  if (f16Table === null) {
    f16Table = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) f16Table[h] = f16ToF32(h);
  }
  for (let i = 0; i < n; i++) out[i] = f16Table[bits[i]!]!;
}

/** HF rotate-half rows → our interleaved rows, within each of `nHeads` heads of size HS (header). */
export function permuteRopeRows(w: Float32Array, nHeads: number, HS: number, cols: number): Float32Array {
  const out = new Float32Array(w.length);
  const half = HS / 2;
  for (let h = 0; h < nHeads; h++) {
    for (let i = 0; i < half; i++) {
      const base = h * HS;
      out.set(w.subarray((base + i) * cols, (base + i + 1) * cols), (base + 2 * i) * cols);
      out.set(w.subarray((base + half + i) * cols, (base + half + i + 1) * cols), (base + 2 * i + 1) * cols);
    }
  }
  return out;
}

/** K/V rows of `kvHeads` heads → `heads` heads, head h a copy of K/V head ⌊h / (heads/kvHeads)⌋ (HF repeat_kv). */
export function repeatKvRows(w: Float32Array, kvHeads: number, heads: number, HS: number, cols: number): Float32Array {
  if (kvHeads === heads) return w;
  const g = heads / kvHeads;
  const out = new Float32Array(heads * HS * cols);
  for (let h = 0; h < heads; h++) {
    const j = Math.floor(h / g);
    out.set(w.subarray(j * HS * cols, (j + 1) * HS * cols), h * HS * cols);
  }
  return out;
}

/** File `name` of the folder as JSON, within `maxBytes` (default the small files' cap) and MAX_JSON_DEPTH. */
function json(files: HfFolder, name: string, required: boolean, maxBytes = MAX_SMALL_JSON_BYTES, why?: string): unknown {
  const bytes = files.get(name);
  if (bytes === undefined) {
    if (!required) return undefined;
    throw new FormatError(`checkpoint folder: "${name}" is missing; a Hugging Face Llama folder has config.json, model.safetensors (or its shards with model.safetensors.index.json) and tokenizer.json`);
  }
  if (!(bytes instanceof Uint8Array)) throw new FormatError(`checkpoint folder: "${name}" was given as a range reader; a JSON file is read whole, within its cap, before it is parsed`);
  return readJson(`checkpoint folder: "${name}"`, bytes, { maxBytes, maxDepth: MAX_JSON_DEPTH, why });
}

/** The folder's config.json, read and checked (hfConfig.ts) — the loader's first step, which the page also runs before reading any weights. */
export function readHfConfig(files: HfFolder, maxSeq?: number): { cfg: ModelConfig; info: HfInfo; raw: unknown } {
  const raw = json(files, 'config.json', true);
  return { ...parseHfConfig(raw, { maxSeq }), raw };
}

/**
 * The folder's tokenizer (tokenizer.json, with tokenizer_config.json and generation_config.json
 * when present), for a config parsed from its config.json. loadHfCheckpoint builds the model's
 * with it; the page builds one only in workers (the budgeted check, the seat's own worker, which
 * encodes its prompts: src/sat/env/lm.ts `TextSpeaker`).
 */
export function hfTokenizerOf(files: HfFolder, cfg: ModelConfig, info: HfInfo, turns?: HfTurns): HfTokenizer {
  const cap = maxTokenizerBytes(cfg.vocab);
  return new HfTokenizer(
    json(files, 'tokenizer.json', true, cap, `4 MiB and 1 KiB per token of config.json's "vocab_size" = ${cfg.vocab}`),
    { tokenizerConfig: json(files, 'tokenizer_config.json', false), generationConfig: json(files, 'generation_config.json', false), info, vocab: cfg.vocab, turns },
  );
}

/** Largest header of one safetensors file of a checkpoint with this config: room for every tensor it has (and old inv_freq buffers). */
function headerCapOf(cfg: ModelConfig): number {
  return maxCheckpointHeaderBytes(weightNames(cfg).length + cfg.layers);
}

/**
 * The most bytes the safetensors files of a checkpoint with this config hold together: 4 bytes a
 * parameter (F32, the widest dtype read), and a header each.
 */
export function hfWeightsCap(cfg: ModelConfig, info: HfInfo, shards: number): number {
  return 4 * checkpointParams(cfg, info) + shards * (8 + headerCapOf(cfg));
}

/**
 * The most bytes file `name` of a checkpoint folder with this config may have — what the CLI and
 * the page check before reading it: tokenizer.json grows with vocab_size, a safetensors file is
 * bounded by the parameters, any other JSON file is small.
 */
export function hfFileCap(name: string, cfg: ModelConfig, info: HfInfo): number {
  if (name === 'tokenizer.json') return maxTokenizerBytes(cfg.vocab);
  if (name.endsWith('.safetensors')) return hfWeightsCap(cfg, info, 1);
  return MAX_SMALL_JSON_BYTES;
}

/** Which file holds each tensor: the index's weight_map, or everything in model.safetensors. */
function shardPlan(files: HfFolder): { shards: string[]; where: (tensor: string) => string | undefined } {
  const index = json(files, 'model.safetensors.index.json', false);
  if (index === undefined) {
    if (!files.has('model.safetensors')) {
      throw new FormatError('checkpoint folder: "model.safetensors" is missing (and there is no "model.safetensors.index.json" naming shards)');
    }
    return { shards: ['model.safetensors'], where: () => 'model.safetensors' };
  }
  const map = (index as { weight_map?: unknown } | null)?.weight_map;
  if (typeof map !== 'object' || map === null || Array.isArray(map)) {
    throw new FormatError('checkpoint folder: "model.safetensors.index.json" has no "weight_map" object (tensor name → shard file)');
  }
  const wm = map as Record<string, unknown>;
  const shards: string[] = [];
  for (const [tensor, file] of Object.entries(wm)) {
    if (typeof file !== 'string') throw new FormatError(`checkpoint folder: "model.safetensors.index.json" maps tensor "${escapeControl(tensor)}" to ${escapeControl(JSON.stringify(file) ?? String(file))}, not a file name`);
    if (!files.has(file)) throw new FormatError(`checkpoint folder: shard "${escapeControl(file)}" is missing (model.safetensors.index.json puts tensor "${escapeControl(tensor)}" in it)`);
    if (!shards.includes(file)) shards.push(file);
  }
  return { shards, where: (t) => (typeof wm[t] === 'string' ? (wm[t] as string) : undefined) };
}

/** Bytes of a source file read at once while converting (HfLoadOptions.chunkBytes' default). */
const CHUNK_BYTES = 1 << 20;

/** Allocates a converted tensor's arrays: plain typed arrays, or (HfLoadOptions.into) a backend's own memory. */
type Alloc = <K extends 'f32' | 'i8' | 'u8' | 'u16'>(kind: K, length: number) => HostTensors[K];

const ARRAYS = { f32: Float32Array, i8: Int8Array, u8: Uint8Array, u16: Uint16Array } as const;

/** A folder's file as ranges: a reader given, or bytes in memory read without a copy. */
function rangesOf(f: Uint8Array | ByteRanges): ByteRanges {
  return f instanceof Uint8Array ? bytesRanges(f) : f;
}

/** `run`, its FormatErrors prefixed with the file they are about. */
async function inFile<T>(file: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof FormatError) throw new FormatError(`${escapeControl(file)}: ${e.message}`);
    throw e;
  }
}

/**
 * Where each source row of a weight goes in ours (null: to the same row): q rows are permuted
 * inside each of `heads` heads, k rows inside each K/V head and then, like v rows, repeated to
 * every head of its group (what permuteRopeRows and repeatKvRows do to whole matrices).
 */
function rowMap(part: string, heads: number, kvHeads: number, HS: number): ((s: number) => number[]) | null {
  const half = HS / 2;
  const rope = (p: number): number => (p < half ? 2 * p : 2 * (p - half) + 1);
  const g = heads / kvHeads;
  const group = (j: number, p: number): number[] => Array.from({ length: g }, (_, k) => (j * g + k) * HS + p);
  if (part === 'wq') return (s) => [Math.floor(s / HS) * HS + rope(s % HS)];
  if (part === 'wk') return (s) => group(Math.floor(s / HS), rope(s % HS));
  if (part === 'wv' && g !== 1) return (s) => group(Math.floor(s / HS), s % HS);
  return null;
}

/**
 * One tensor, read from its file a row block at a time, converted to f32, checked finite and
 * written (or quantized) straight into its final arrays at the rows `map` gives: the only copies
 * are one block of the file's bytes and its f32 values. The numbers are those of converting the
 * whole tensor, permuting and repeating its rows, then quantizing (each row's blocks are its own).
 */
async function convertTensor(
  found: ShardTensor,
  hf: string,
  shape: number[],
  kind: QuantKind,
  map: ((s: number) => number[]) | null,
  alloc: Alloc,
  chunkBytes: number,
): Promise<WeightTensor> {
  const { e, file, src, dataStart } = found;
  const [rows, cols] = shape.length === 2 ? [shape[0]!, shape[1]!] : [1, shape[0]!];
  const srcRows = e.shape.length === 2 ? e.shape[0]! : 1;
  const n = rows * cols;
  const what = `tensor "${hf}"`;
  const out: WeightTensor =
    kind === 'q8' ? { dtype: 'q8', shape, q: alloc('i8', n), scales: alloc('u16', n / QK) }
    : kind === 'q4' ? { dtype: 'q4', shape, q: alloc('u8', n / 2), scales: alloc('u16', n / QK) }
    : { dtype: 'f32', shape, data: alloc('f32', n) };
  const rowBytes = cols * dtypeSize(e.dtype);
  const block = Math.max(1, Math.min(srcRows, Math.floor(chunkBytes / Math.max(1, rowBytes))));
  const x = new Float32Array(block * cols);
  const put = (xAt: number, count: number, at: number): void => {
    if (out.dtype === 'q8') quantizeRowsQ8(x, xAt, count, cols, out, at, what);
    else if (out.dtype === 'q4') quantizeRowsQ4(x, xAt, count, cols, out, at, what);
    else out.data.set(x.subarray(xAt, xAt + count * cols), at * cols);
  };
  const from = dataStart + e.begin;
  for (let s0 = 0; s0 < srcRows; s0 += block) {
    const s1 = Math.min(srcRows, s0 + block);
    const bytes = await inFile(file, () => readRange(src, from + s0 * rowBytes, from + s1 * rowBytes));
    toF32Into(e.dtype as 'F32' | 'F16' | 'BF16', bytes, x); // dtypes other than these were refused with the header
    const m = (s1 - s0) * cols;
    for (let k = 0; k < m; k++) {
      if (!Number.isFinite(x[k]!)) throw new FormatError(`${escapeControl(file)}: tensor "${hf}" element ${s0 * cols + k} is ${x[k]}; the weights are corrupt`);
    }
    if (map === null) put(0, s1 - s0, s0);
    else for (let s = s0; s < s1; s++) for (const r of map(s)) put((s - s0) * cols, 1, r);
  }
  return out;
}

const yieldToEventLoop = (): Promise<void> => new Promise((r) => setTimeout(r, 0));

/** A tensor of a checkpoint as its shard's header places it: the entry, the file, the file's reader and where its data starts. */
export interface ShardTensor {
  readonly e: StEntry;
  readonly file: string;
  readonly src: ByteRanges;
  readonly dataStart: number;
}

/**
 * Every safetensors header of a checkpoint folder with this config, read by range and checked
 * before any tensor is: the files' total size against what the config can hold, each header
 * against its cap, each entry's name, dtype and shape against the config, the tiling of each
 * file's data, and each tensor in the file the index puts it in, once. The loader's first read,
 * and the CLI's door runs it in its worker (src/workers/inputJobs.ts, checkpointFolder) before the
 * CLI's thread reads anything of the weights. `onShard` hears each file as it is read.
 */
export async function readShardHeaders(
  files: HfFolder,
  cfg: ModelConfig,
  info: HfInfo,
  opts: { readonly signal?: AbortSignal; readonly onShard?: (done: number, total: number, file: string) => void } = {},
): Promise<{ readonly where: (tensor: string) => string | undefined; readonly tensors: ReadonlyMap<string, ShardTensor> }> {
  const plan = shardPlan(files);
  const shapes = new Map(weightNames(cfg).map((ours) => [hfName(ours), hfShape(cfg, info, ours)]));
  const headerCap = headerCapOf(cfg);
  const stored = plan.shards.reduce((n, f) => n + files.get(f)!.byteLength, 0);
  const most = hfWeightsCap(cfg, info, plan.shards.length);
  if (stored > most) {
    throw new FormatError(`checkpoint folder: its safetensors files hold ${formatSize(stored)}, but config.json describes ${checkpointParams(cfg, info).toLocaleString('en-US')} parameters, at most ${formatSize(most)} even as F32; the weights do not belong to this config`);
  }
  // Each header entry, checked before any tensor data is copied (readSafetensors' checkEntry).
  const checkEntry = (name: string, dtype: string, shape: readonly number[]): void => {
    if (name === 'lm_head.weight' && cfg.tied) {
      throw new ConfigError('tie_word_embeddings', true, 'config.json: "tie_word_embeddings" = true, but the checkpoint has its own "lm_head.weight"; a tied model\'s head is model.embed_tokens.weight (fix the config: tie_word_embeddings false)');
    }
    const want = shapes.get(name);
    if (want === undefined) {
      if (IGNORED.test(name)) return;
      throw new FormatError(`unexpected tensor ${quote(name)}; it is not part of a Llama model with this config.json (${cfg.layers} layers${cfg.tied ? ', tied embeddings' : ''})`);
    }
    if (!SUPPORTED_DTYPES.includes(dtype)) throw new FormatError(`tensor "${name}" has dtype ${dtype}; supported: ${SUPPORTED_DTYPES.join(', ')}`);
    if (shape.length !== want.length || shape.some((x, k) => x !== want[k])) {
      throw new FormatError(`tensor "${name}" has shape ${showShape(shape)} but config.json implies ${showShape(want)}`);
    }
  };
  const tensors = new Map<string, ShardTensor>();
  for (const [i, file] of plan.shards.entries()) {
    opts.signal?.throwIfAborted();
    opts.onShard?.(i, plan.shards.length, file);
    await yieldToEventLoop();
    const src = rangesOf(files.get(file)!);
    const index = await inFile(file, () => readSafetensorsIndex(src, { maxHeaderBytes: headerCap, headerWhy: `1 KiB for each of the ${shapes.size} tensors of this config.json, and 64 KiB`, checkEntry }));
    for (const e of index.entries) {
      const want = plan.where(e.name);
      if (want !== undefined && want !== file) throw new FormatError(`${escapeControl(file)}: holds tensor "${e.name}", which model.safetensors.index.json puts in "${escapeControl(want)}"`);
      if (tensors.has(e.name)) throw new FormatError(`${escapeControl(file)}: tensor "${e.name}" is also in "${escapeControl(tensors.get(e.name)!.file)}"`);
      tensors.set(e.name, { e, file, src, dataStart: index.dataStart });
    }
  }
  opts.onShard?.(plan.shards.length, plan.shards.length, '');
  return { where: plan.where, tensors };
}

/** Reads, checks, converts (and quantizes) a checkpoint folder; see the header for every step and check. */
export async function loadHfCheckpoint(files: HfFolder, opts: HfLoadOptions = {}): Promise<HfModel> {
  const quant = opts.quant ?? 'f32';
  const progress = opts.onProgress ?? (() => {});
  const { cfg, info, raw: rawConfig } = readHfConfig(files, opts.maxSeq);
  if (quant !== 'f32' && cfg.d % 32 !== 0) {
    throw new ConfigError('hidden_size', cfg.d, `config.json: "hidden_size" = ${cfg.d} is not a multiple of 32, so the model cannot be stored ${quant}; load it as f32.`);
  }
  if (opts.memory) checkFits(estimateMemory(cfg, { quant, ...opts.memory }), opts.memory.limitBytes, opts.memory.where);
  // The tokenizer first: it is small, and a folder without one fails before the big read.
  const tokenizer = hfTokenizerOf(files, cfg, info, opts.turns);

  const chunkBytes = opts.chunkBytes ?? CHUNK_BYTES;
  if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1) throw new ConfigError('chunkBytes', chunkBytes, `loadHfCheckpoint: chunkBytes must be a whole number of bytes ≥ 1, got ${String(chunkBytes)}.`);
  const into = opts.into;
  const alloc: Alloc = into ? (kind, length) => into.zeros(kind, length) : (kind, length) => new ARRAYS[kind](length) as HostTensors[typeof kind];
  // Every shard's header first, so a bad file is refused before any tensor is converted; the data is read tensor by tensor below.
  const names = weightNames(cfg);
  const { where, tensors } = await readShardHeaders(files, cfg, info, { signal: opts.signal, onShard: (done, total, item) => progress({ phase: 'reading', done, total, item }) });

  const HS = cfg.d / cfg.heads;
  const weights: ModelWeights = new Map();
  for (const [i, ours] of names.entries()) {
    opts.signal?.throwIfAborted();
    const hf = hfName(ours);
    const found = tensors.get(hf);
    const want = hfShape(cfg, info, ours);
    if (!found) {
      const at = where(hf);
      throw new FormatError(`checkpoint folder: tensor "${hf}" (shape ${showShape(want)}) is missing${at ? ` from "${escapeControl(at)}", where model.safetensors.index.json puts it` : ''}`);
    }
    progress({ phase: 'converting', done: i, total: names.length, item: hf });
    if (i % 8 === 0) await yieldToEventLoop();
    const part = ours.slice(ours.lastIndexOf('.') + 1);
    const shape = ours === 'tok_emb' || ours === 'lm_head' ? [cfg.vocab, cfg.d] : part === 'wk' || part === 'wv' ? [cfg.d, cfg.d] : want;
    const kind = quant !== 'f32' && isQuantizable(shape) ? quant : 'f32';
    if (kind !== 'f32') progress({ phase: 'quantizing', done: i, total: names.length, item: hf });
    weights.set(ours, await convertTensor(found, hf, shape, kind, rowMap(part, cfg.heads, info.kvHeads, HS), alloc, chunkBytes));
  }
  progress({ phase: quant === 'f32' ? 'converting' : 'quantizing', done: names.length, total: names.length, item: '' });
  const named = (rawConfig as Record<string, unknown>)._name_or_path;
  return { cfg, weights, info, tokenizer, name: typeof named === 'string' && named.length > 0 ? escapeControl(named.slice(0, 120)) : 'checkpoint' };
}

/**
 * A content hash of a folder (hex SHA-256 over "name\0sha256(bytes)\n" lines, files by name), so a
 * share link can name the checkpoint it was made with and the page can tell whether a folder
 * given later is the same one.
 */
export async function hfFolderHash(files: HfFiles): Promise<string> {
  const hex = (b: ArrayBuffer): string => [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, '0')).join('');
  let lines = '';
  for (const name of [...files.keys()].sort()) {
    const bytes = files.get(name)!;
    lines += `${name}\0${hex(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>))}\n`;
  }
  return hex(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(lines)));
}
