/**
 * Tiny random Hugging Face Llama checkpoints for the tests (tests/hf*.test.ts, tests/cli-hf.test.ts),
 * built in memory in the HF layout — config.json, model.safetensors or shards with
 * model.safetensors.index.json, tokenizer.json (+ tokenizer_config.json with a chat template) —
 * so nothing is downloaded. Tensors have HF's names and shapes (K/V projections with
 * num_key_value_heads·head_dim rows, q/k rows in HF's rotate-half order) and are seeded; the
 * exact values written (after rounding to BF16/F16 when stored so) are returned next to the
 * files, for the tests to compare against.
 *
 * The tokenizer is a byte-level BPE written by hand here (GPT-2's byte → character map, 256 byte
 * tokens, five merges, three special tokens): a valid tokenizer.json that @huggingface/tokenizers
 * reads, which round-trips any text.
 *
 * Not here: the loader (src/model/hfLoad.ts) or any reference maths (tests/hf.test.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { f16ToF32, f32ToF16 } from '../../src/core/f16';
import { Rng } from '../../src/core/rng';
import { writeSafetensors, type StTensor } from '../../src/model/safetensors';

export interface HfSpec {
  readonly vocab?: number;
  readonly d?: number;
  readonly layers?: number;
  readonly heads?: number;
  readonly kvHeads?: number;
  readonly hidden?: number;
  readonly tied?: boolean;
  readonly dtype?: 'F32' | 'BF16' | 'F16';
  /** Number of shards (1: a single model.safetensors). */
  readonly shards?: number;
  readonly ropeTheta?: number;
  readonly eps?: number;
  readonly maxPositions?: number;
  /** Write tokenizer_config.json with a ChatML-style chat template. Default true. */
  readonly chat?: boolean;
  /** Extra config.json fields (or overrides), for the refusal tests. */
  readonly config?: Record<string, unknown>;
  /** Edits the safetensors entries before they are written (drop, reshape, retype a tensor). */
  readonly mutate?: (tensors: Map<string, StTensor>) => void;
  readonly seed?: number;
}

export interface HfCheckpoint {
  readonly files: Map<string, Uint8Array>;
  /** HF tensor name → the values as stored (f32 view of BF16/F16 data). */
  readonly tensors: Map<string, { shape: number[]; data: Float32Array }>;
  readonly config: Record<string, unknown>;
}

/** GPT-2's byte → printable character map (bytes that print stand for themselves). */
export function byteChars(): string[] {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const map: string[] = new Array(256);
  for (const b of bs) map[b] = String.fromCharCode(b);
  let n = 0;
  for (let b = 0; b < 256; b++) if (map[b] === undefined) map[b] = String.fromCharCode(256 + n++);
  return map;
}

export const SPECIAL = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;
const MERGES: [string, string][] = [['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['1', '2'], ['+', '1']];

/**
 * A byte-level BPE tokenizer.json: ids 0..255 bytes, 256..260 merges, 261..263 SPECIAL. With
 * `bos`, its post-processor puts <|endoftext|> (261) first, as Llama tokenizers put <s> first.
 */
export function tinyTokenizerJson(opts: { bos?: boolean } = {}): Record<string, unknown> {
  const vocab: Record<string, number> = {};
  byteChars().forEach((c, b) => (vocab[c] = b));
  MERGES.forEach(([a, b], i) => (vocab[a + b] = 256 + i));
  const special = SPECIAL.map((content, i) => ({ id: 256 + MERGES.length + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: special,
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: opts.bos
      ? { type: 'TemplateProcessing', single: [{ SpecialToken: { id: SPECIAL[0], type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }], pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }], special_tokens: { [SPECIAL[0]]: { id: SPECIAL[0], ids: [256 + MERGES.length], tokens: [SPECIAL[0]] } } }
      : byteLevel,
    decoder: byteLevel,
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges: MERGES.map(([a, b]) => `${a} ${b}`) },
  };
}

export const CHAT_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const enc = (o: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(o, null, 2));

/** The HF tensor list of a spec, in HF's usual order: name → shape. */
function hfTensorShapes(s: Required<Omit<HfSpec, 'config' | 'seed' | 'dtype' | 'shards' | 'chat' | 'mutate'>>): [string, number[]][] {
  const HS = s.d / s.heads;
  const out: [string, number[]][] = [['model.embed_tokens.weight', [s.vocab, s.d]]];
  for (let l = 0; l < s.layers; l++) {
    const p = `model.layers.${l}`;
    out.push(
      [`${p}.input_layernorm.weight`, [s.d]],
      [`${p}.self_attn.q_proj.weight`, [s.d, s.d]],
      [`${p}.self_attn.k_proj.weight`, [s.kvHeads * HS, s.d]],
      [`${p}.self_attn.v_proj.weight`, [s.kvHeads * HS, s.d]],
      [`${p}.self_attn.o_proj.weight`, [s.d, s.d]],
      [`${p}.post_attention_layernorm.weight`, [s.d]],
      [`${p}.mlp.gate_proj.weight`, [s.hidden, s.d]],
      [`${p}.mlp.up_proj.weight`, [s.hidden, s.d]],
      [`${p}.mlp.down_proj.weight`, [s.d, s.hidden]],
    );
  }
  out.push(['model.norm.weight', [s.d]]);
  if (!s.tied) out.push(['lm_head.weight', [s.vocab, s.d]]);
  return out;
}

/** bf16 bits of the f32 with bits `u`, rounded to nearest even (as torch's .to(bfloat16)). */
function bf16Bits(u: number): number {
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** A random tiny checkpoint (header). Defaults: vocab 272, d 64, 2 layers, 4 heads, 2 K/V heads, hidden 96, untied, F32, one file. */
export function hfCheckpoint(spec: HfSpec = {}): HfCheckpoint {
  const s = {
    vocab: spec.vocab ?? 272, d: spec.d ?? 64, layers: spec.layers ?? 2, heads: spec.heads ?? 4, kvHeads: spec.kvHeads ?? 2,
    hidden: spec.hidden ?? 96, tied: spec.tied ?? false, ropeTheta: spec.ropeTheta ?? 10000, eps: spec.eps ?? 1e-5, maxPositions: spec.maxPositions ?? 64,
  };
  const dtype = spec.dtype ?? 'F32';
  const rng = new Rng(spec.seed ?? 5, [0x6866]);
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
  const st = new Map<string, StTensor>();
  hfTensorShapes(s).forEach(([name, shape], i) => {
    const r = rng.fork(i);
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    // Norm gains near 1, the embedding O(1), matrices N(0, 1/in): logits of order 1.
    const std = shape.length === 1 ? 0.2 : name.includes('embed') ? 1 : 1 / Math.sqrt(shape[1]!);
    for (let k = 0; k < n; k++) data[k] = (shape.length === 1 ? 1 : 0) + std * r.normal();
    if (dtype === 'F32') st.set(name, { dtype, shape, data });
    else {
      const bits = new Uint16Array(n);
      const asU32 = new Uint32Array(data.buffer);
      for (let k = 0; k < n; k++) bits[k] = dtype === 'BF16' ? bf16Bits(asU32[k]!) : f32ToF16(data[k]!);
      st.set(name, { dtype, shape, data: bits });
      for (let k = 0; k < n; k++) {
        if (dtype === 'BF16') asU32[k] = bits[k]! << 16;
        else data[k] = f16ToF32(bits[k]!);
      }
    }
    tensors.set(name, { shape, data });
  });
  spec.mutate?.(st);
  const config: Record<string, unknown> = {
    architectures: ['LlamaForCausalLM'], model_type: 'llama', _name_or_path: 'tests/tiny-llama',
    vocab_size: s.vocab, hidden_size: s.d, intermediate_size: s.hidden, num_hidden_layers: s.layers,
    num_attention_heads: s.heads, num_key_value_heads: s.kvHeads, hidden_act: 'silu', max_position_embeddings: s.maxPositions,
    rms_norm_eps: s.eps, rope_theta: s.ropeTheta, rope_scaling: null, attention_bias: false, mlp_bias: false,
    tie_word_embeddings: s.tied, bos_token_id: 261, eos_token_id: 261, torch_dtype: dtype === 'F32' ? 'float32' : dtype === 'BF16' ? 'bfloat16' : 'float16',
    ...spec.config,
  };
  const files = new Map<string, Uint8Array>();
  files.set('config.json', enc(config));
  const shards = spec.shards ?? 1;
  if (shards === 1) files.set('model.safetensors', writeSafetensors(st, { format: 'pt' }));
  else {
    const names = [...st.keys()];
    const per = Math.ceil(names.length / shards);
    const weightMap: Record<string, string> = {};
    for (let k = 0; k < shards; k++) {
      const file = `model-${String(k + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
      const part = new Map(names.slice(k * per, (k + 1) * per).map((n) => [n, st.get(n)!] as const));
      for (const n of part.keys()) weightMap[n] = file;
      files.set(file, writeSafetensors(part, { format: 'pt' }));
    }
    files.set('model.safetensors.index.json', enc({ metadata: { total_size: 0 }, weight_map: weightMap }));
  }
  files.set('tokenizer.json', enc(tinyTokenizerJson()));
  if (spec.chat ?? true) {
    files.set('tokenizer_config.json', enc({ bos_token: null, eos_token: '<|im_end|>', chat_template: CHAT_TEMPLATE, model_max_length: s.maxPositions }));
  }
  files.set('generation_config.json', enc({ bos_token_id: 261, eos_token_id: 261 }));
  return { files, tensors, config };
}

/** Writes a checkpoint's files into `dir` (created), for the CLI. */
export function writeHfFolder(dir: string, files: ReadonlyMap<string, Uint8Array>): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, bytes] of files) writeFileSync(join(dir, name), bytes);
}
