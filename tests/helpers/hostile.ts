/**
 * Hostile inputs for the input-safety tests and bench/hostile.ts, built in memory: gzip bombs
 * (deflate streams of zeros, a member whose ISIZE understates it, an experiment container whose one
 * blob is all zeros), deeply nested JSON, a safetensors header with many extra entries, and
 * checkpoint folders (tests/helpers/hfCheckpoint.ts) with a runaway pre-tokenizer regex, a runaway
 * chat template or a vocabulary far past vocab_size, and ONNX graphs past the reader's caps (float_data
 * in one-value chunks, many nodes or initializers, a cycle, nested If, a hex offset, long packed lists).
 * Each is the smallest input that reaches the
 * code path of the real attack; the sizes are parameters.
 *
 * Not here: what the readers say about them (the tests), timing (bench/hostile.ts).
 */
import { constants, deflateRawSync } from 'node:zlib';
import { Msg, varint } from '../../bench/onnx/protobuf';
import { writeSafetensors, type StTensor } from '../../src/model/safetensors';
import { hfCheckpoint, tinyTokenizerJson } from './hfCheckpoint';

const enc = (o: unknown): Uint8Array => new TextEncoder().encode(typeof o === 'string' ? o : JSON.stringify(o));

/** Zeros per repeated deflate chunk (a sync-flushed chunk ends byte-aligned, so copies concatenate). */
const CHUNK = 1 << 24;

/** Raw deflate of `n` zero bytes (n a multiple of 16 MiB, or smaller than it), preceded by `prefix` (deflated too); not final until `finish`. */
export function zeroDeflate(n: number, prefix: Uint8Array = new Uint8Array(0)): Uint8Array {
  const flush = { finishFlush: constants.Z_SYNC_FLUSH, level: 9 };
  const parts: Uint8Array[] = [];
  if (prefix.length > 0) parts.push(deflateRawSync(prefix, flush));
  if (n >= CHUNK) {
    const chunk = deflateRawSync(new Uint8Array(CHUNK), flush);
    for (let i = 0; i < Math.floor(n / CHUNK); i++) parts.push(chunk);
  }
  if (n % CHUNK > 0) parts.push(deflateRawSync(new Uint8Array(n % CHUNK), flush));
  parts.push(Uint8Array.of(0x03, 0x00)); // a final, empty fixed-Huffman block
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** A gzip member whose deflate data is `deflated`; its trailer claims `isize` (mod 2^32) and a CRC that is not checked before the refusal. */
export function gzipMember(deflated: Uint8Array, isize: number): Uint8Array {
  const out = new Uint8Array(10 + deflated.length + 8);
  out.set([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff]);
  out.set(deflated, 10);
  const dv = new DataView(out.buffer);
  dv.setUint32(out.length - 4, isize % 2 ** 32, true);
  return out;
}

/** A gzip bomb of `n` zeros (the trailer's ISIZE is n mod 2^32, as gzip writes it). */
export function gzipBomb(n: number): Uint8Array {
  return gzipMember(zeroDeflate(n), n);
}

/** A valid experiment container (savefile.ts layout) whose one blob is `values` f64 zeros, gzipped as a bomb. */
export function containerBomb(values: number): Uint8Array {
  const header = JSON.stringify({ __metadata__: { format: 'sat-playground-experiment', version: '2', header: '{}' }, 0: { dtype: 'F64', shape: [values], data_offsets: [0, values * 8] } });
  const padded = header + ' '.repeat((8 - (header.length % 8)) % 8);
  const prefix = new Uint8Array(8 + padded.length);
  new DataView(prefix.buffer).setUint32(0, padded.length, true);
  prefix.set(enc(padded), 8);
  return gzipMember(zeroDeflate(values * 8, prefix), prefix.length + values * 8);
}

/** A config.json-like object whose `field` holds `depth` nested arrays: {"model_type": "llama", field: [[[…]]]}. */
export function deepJson(depth: number, field = 'rope_scaling'): Uint8Array {
  return enc(`{"model_type":"llama","${field}":${'['.repeat(depth)}${']'.repeat(depth)}}`);
}

/** A checkpoint folder whose model.safetensors carries `extra` more zero-length tensors than the model has. */
export function extraEntriesFolder(extra: number): Map<string, Uint8Array> {
  const ck = hfCheckpoint();
  const st = new Map<string, StTensor>([...Array(extra).keys()].map((i) => [`x${i}`, { dtype: 'F32', shape: [0], data: new Float32Array(0) }]));
  for (const [name, t] of ck.tensors) st.set(name, { dtype: 'F32', shape: t.shape, data: t.data });
  const files = new Map(ck.files);
  files.set('model.safetensors', writeSafetensors(st, { format: 'pt' }));
  return files;
}

/** A tokenizer.json whose pre-tokenizer splits on `pattern` (a Split in a Sequence, as the attack wrote it) before the byte-level step. */
export function regexTokenizer(pattern: string): Record<string, unknown> {
  const tj = tinyTokenizerJson();
  return {
    ...tj,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false }, tj.pre_tokenizer] },
  };
}

/** The catastrophic-backtracking patterns of the attack. */
export const RUNAWAY_PATTERNS = ['([\\s\\S]+)+Q', '(\\d+|\\w+|\\s+|.)+\\$'] as const;

/** Pre-tokenizer patterns of real checkpoints (GPT-2, Llama-3, Qwen2 / SmolLM2-style, GPT-4o), which must keep loading. */
export const REAL_PATTERNS = {
  'GPT-2': "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
  'Llama-3': "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  Qwen2: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  'GPT-4o': "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  'SmolLM digits': '\\p{N}',
} as const;

/** The runaway chat templates of the attack, by what they do. */
export const RUNAWAY_TEMPLATES = {
  'nested range(100000) loops': '{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}',
  'range(1000000) | join': "{{ range(1000000) | join(',') }}",
  'string doubling through namespace': "{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}",
  'range(10**9)': '{% for i in range(10**9) %}x{% endfor %}',
  'nested loops under the range cap': '{% for i in range(5000) %}{% for j in range(5000) %}{% endfor %}{% endfor %}',
} as const;

/** A tokenizer.json with `entries` vocabulary entries (ids 0..entries-1), against a config that says 272; written as text, a million entries at a time. */
export function bigVocabTokenizer(entries: number): Uint8Array {
  const tj = tinyTokenizerJson();
  const vocab = (tj.model as { vocab: Record<string, number> }).vocab;
  const head = JSON.stringify({ ...tj, added_tokens: [], model: { ...(tj.model as object), vocab: { ...vocab, __more__: 0 } } });
  const [before, after] = head.split('"__more__":0');
  const parts: Uint8Array[] = [enc(before!.slice(0, -1))]; // the vocabulary so far, without its closing brace's comma position
  for (let from = Object.keys(vocab).length; from < entries; from += 1_000_000) {
    const chunk: string[] = [];
    for (let i = from; i < Math.min(entries, from + 1_000_000); i++) chunk.push(`"t${i}":${i}`);
    parts.push(enc(`,${chunk.join(',')}`));
  }
  parts.push(enc(after!));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * A legitimate byte-level BPE tokenizer.json of `vocab` ids, the size of a real large one (Qwen2's
 * 151,643): the 256 byte tokens, merges of earlier tokens (a seeded walk, shorter tokens likelier)
 * up to vocab − 3 ids, then the three SPECIAL tokens — with the config that declares it.
 */
export function largeBpeFolder(vocab: number): Map<string, Uint8Array> {
  const tj = tinyTokenizerJson();
  const chars = Object.keys((tj.model as { vocab: Record<string, number> }).vocab).slice(0, 256);
  const tokens = [...chars];
  const have = new Set(tokens);
  const merges: string[] = [];
  let x = 12345;
  const next = (n: number): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return Math.floor(((x >>> 8) / 2 ** 24) ** 2 * n); // skewed to low ids: short tokens merge most
  };
  while (tokens.length < vocab - 3) {
    const a = tokens[next(tokens.length)]!;
    const b = tokens[next(Math.min(tokens.length, 4096))]!;
    if (have.has(a + b) || (a + b).length > 16) continue;
    have.add(a + b);
    tokens.push(a + b);
    merges.push(`${a} ${b}`);
  }
  const special = specialsAt(vocab);
  const ck = hfCheckpoint({ vocab, d: 16, heads: 2, kvHeads: 1, hidden: 16, layers: 1 });
  const config = JSON.parse(new TextDecoder().decode(ck.files.get('config.json')!)) as Record<string, unknown>;
  const files = new Map(ck.files);
  files.set('config.json', enc({ ...config, bos_token_id: vocab - 3, eos_token_id: vocab - 3 }));
  files.set('generation_config.json', enc({ bos_token_id: vocab - 3, eos_token_id: vocab - 3 }));
  files.set('tokenizer.json', enc({ ...tj, added_tokens: special, model: { ...(tj.model as object), vocab: Object.fromEntries(tokens.map((t, i) => [t, i])), merges } }));
  return files;
}

/** SPECIAL as added tokens at the last three ids of a `vocab`-id tokenizer. */
function specialsAt(vocab: number): Record<string, unknown>[] {
  return ['<|endoftext|>', '<|im_start|>', '<|im_end|>'].map((content, i) => ({ id: vocab - 3 + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
}

/** An ONNX ModelProto (ir 8, opset 17) around `graph`. */
export function onnxModel(graph: Msg): Uint8Array {
  return new Msg().int(1, 8).msg(7, graph).msg(8, new Msg().str(1, '').int(2, 17)).bytes();
}

/** A graph holding one f32 initializer of `n` values written as `n` packed float_data fields of one value each. */
export function onnxFloatChunks(n: number): Uint8Array {
  const t = new Msg().int(1, n).int(2, 1).str(8, 'w');
  const one = new Uint8Array(4);
  for (let i = 0; i < n; i++) t.raw(4, one);
  return onnxModel(new Msg().msg(5, t));
}

/** A graph of `n` Identity nodes in a chain (x → v0 → v1 → …). */
export function onnxIdentityNodes(n: number): Uint8Array {
  const g = new Msg();
  for (let i = 0; i < n; i++) g.msg(1, new Msg().str(1, i === 0 ? 'x' : `v${i - 1}`).str(2, `v${i}`).str(4, 'Identity'));
  return onnxModel(g);
}

/** A graph of `n` scalar f32 initializers. */
export function onnxScalarInitializers(n: number): Uint8Array {
  const g = new Msg();
  const zero = new Uint8Array(4);
  for (let i = 0; i < n; i++) g.msg(5, new Msg().int(2, 1).str(8, `c${i}`).raw(9, zero));
  return onnxModel(g);
}

/** A graph whose two nodes feed each other (a → b → a). */
export function onnxCycle(): Uint8Array {
  return onnxModel(new Msg().msg(1, new Msg().str(1, 'b').str(2, 'a').str(3, 'first').str(4, 'Identity')).msg(1, new Msg().str(1, 'a').str(2, 'b').str(3, 'second').str(4, 'Identity')));
}

/**
 * A graph whose If node's then_branch holds an If node, `depth` deep. Written outside-in as the
 * concatenation of each level's prefix (tags and lengths, computed inside-out), so 10,000 levels
 * cost their few hundred kilobytes, not a copy per level.
 */
export function onnxNestedIf(depth: number): Uint8Array {
  const enc = (s: string) => new TextEncoder().encode(s);
  const cat = (...xs: Uint8Array[]) => {
    const out = new Uint8Array(xs.reduce((a, x) => a + x.length, 0));
    let o = 0;
    for (const x of xs) (out.set(x, o), (o += x.length));
    return out;
  };
  const tag = (field: number, wire: number) => varint(field * 8 + wire);
  const len = (field: number, n: number) => cat(tag(field, 2), varint(n));
  const str = (field: number, s: string) => cat(len(field, enc(s).length), enc(s));
  const leaf = new Msg().str(1, 'x').str(2, 'y').str(4, 'Identity').bytes();
  const prefixes: Uint8Array[] = [];
  let node = leaf.length; // the innermost node's length
  for (let k = 0; k < depth; k++) {
    const graphHead = len(1, node); // GraphProto { node = … }
    const graph = graphHead.length + node;
    const attrHead = cat(str(1, 'then_branch'), tag(20, 0), varint(5), len(6, graph));
    const attr = attrHead.length + graph;
    const nodeHead = cat(str(1, 'cond'), str(2, `out${k}`), str(4, 'If'), len(5, attr));
    prefixes.push(cat(nodeHead, attrHead, graphHead));
    node = nodeHead.length + attr;
  }
  const graph = cat(len(1, node), ...prefixes.reverse(), leaf);
  return cat(tag(1, 0), varint(8), len(7, graph.length), graph, new Msg().msg(8, new Msg().str(1, '').int(2, 17)).bytes());
}

/** A graph with one f32 initializer [4] stored externally in "w.bin" at the offset written `offset` (e.g. "0x0"). */
export function onnxExternalOffset(offset: string): Map<string, Uint8Array> {
  const kv = (k: string, v: string) => new Msg().str(1, k).str(2, v);
  const t = new Msg().int(1, 4).int(2, 1).str(8, 'w').msg(13, kv('location', 'w.bin')).msg(13, kv('offset', offset)).msg(13, kv('length', '16')).int(14, 1);
  return new Map([['m.onnx', onnxModel(new Msg().msg(5, t))], ['w.bin', new Uint8Array(64)]]);
}

/** A Transpose node whose `perm` attribute is `n` packed ints. */
export function onnxPackedInts(n: number): Uint8Array {
  const packed = new Uint8Array(n).fill(1);
  const attr = new Msg().str(1, 'perm').raw(8, packed).int(20, 7);
  return onnxModel(new Msg().msg(1, new Msg().str(1, 'x').str(2, 'y').str(4, 'Transpose').msg(5, attr)));
}
