/**
 * A tokenizer.json checked before @huggingface/tokenizers is given it: the library accepts
 * malformed vocabularies silently (a fractional id, an id written as a string, an unknown model
 * type) or fails only at the first encode, and compiles any pattern it is handed. Each check throws
 * a FormatError naming the entry:
 *   - model.type one of BPE, WordPiece, Unigram, WordLevel;
 *   - the vocabulary: no more entries than config.json's vocab_size, every id an integer in
 *     [0, vocab_size), no id given to two tokens (Unigram: [token, score] pairs, ids by position);
 *   - WordPiece's unk_token in the vocabulary; a Unigram unk_id in range;
 *   - BPE merges: each a pair of tokens of the vocabulary whose merge is a token too;
 *   - added_tokens: each a { id, content } with its id in range;
 *   - every Regex pattern of the normalizer, pre-tokenizer and decoder free of exponential
 *     backtracking (regexSafety.ts).
 *
 * Not here: the size of the file (hfLoad.ts checks it against vocab_size before parsing), the
 * special tokens' roles (hfTokenizer.ts), encoding.
 */
import { FormatError } from '../core/errors';
import { backtrackingRisk } from './regexSafety';
import { quote } from './safetensors';

const MODEL_TYPES = ['BPE', 'WordPiece', 'Unigram', 'WordLevel'] as const;

function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function show(v: unknown): string {
  return typeof v === 'string' ? `${quote(v)} (a string)` : typeof v === 'number' ? String(v) : v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v;
}

const bad = (msg: string): FormatError => new FormatError(`tokenizer.json: ${msg}`);

/** Checks the id `id` of `what` (a token, in words) against [0, vocabSize). */
function checkId(id: unknown, what: string, vocabSize: number | undefined): number {
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) throw bad(`${what} has id ${show(id)}; an id is an integer ≥ 0`);
  if (vocabSize !== undefined && id >= vocabSize) throw bad(`${what} has id ${id}, but config.json "vocab_size" = ${vocabSize}, so ids run 0..${vocabSize - 1}`);
  return id;
}

/** The vocabulary's token → id, checked (header). */
function checkVocab(model: Record<string, unknown>, type: string, vocabSize: number | undefined): Map<string, number> {
  const tokens = new Map<string, number>();
  const owner = new Map<number, string>();
  const add = (token: string, id: number): void => {
    const other = owner.get(id);
    if (other !== undefined) throw bad(`model.vocab gives id ${id} to both ${quote(other)} and ${quote(token)}`);
    owner.set(id, token);
    tokens.set(token, id);
  };
  const tooMany = (n: number): FormatError => bad(`model.vocab has ${n.toLocaleString('en-US')} entries, but config.json "vocab_size" = ${vocabSize}; the tokenizer does not belong to this model`);
  if (type === 'Unigram') {
    const v = model.vocab;
    if (!Array.isArray(v)) throw bad('model.vocab of a Unigram model must be a list of [token, score] pairs');
    if (vocabSize !== undefined && v.length > vocabSize) throw tooMany(v.length);
    v.forEach((e, id) => {
      if (!Array.isArray(e) || typeof e[0] !== 'string' || typeof e[1] !== 'number' || !Number.isFinite(e[1])) throw bad(`model.vocab entry ${id} must be [token, score] with a finite score`);
      if (tokens.has(e[0])) throw bad(`model.vocab lists the token ${quote(e[0])} twice`);
      add(e[0], id);
    });
    if (model.unk_id !== undefined && model.unk_id !== null) checkId(model.unk_id, 'model.unk_id', v.length);
    return tokens;
  }
  const v = obj(model.vocab);
  if (v === undefined) throw bad(`model.vocab of a ${type} model must be an object of token → id`);
  const entries = Object.entries(v);
  if (vocabSize !== undefined && entries.length > vocabSize) throw tooMany(entries.length);
  for (const [token, id] of entries) add(token, checkId(id, `model.vocab token ${quote(token)}`, vocabSize));
  return tokens;
}

/** BPE merges: "a b" strings or [a, b] pairs, each of vocabulary tokens merging into one. */
function checkMerges(model: Record<string, unknown>, tokens: ReadonlyMap<string, number>): void {
  const merges = model.merges ?? [];
  if (!Array.isArray(merges)) throw bad('model.merges must be a list');
  const prefix = typeof model.continuing_subword_prefix === 'string' ? model.continuing_subword_prefix : '';
  merges.forEach((m, k) => {
    let pair: unknown[] | undefined;
    if (typeof m === 'string') {
      const cut = m.indexOf(' ', 1);
      pair = cut > 0 ? [m.slice(0, cut), m.slice(cut + 1)] : undefined;
    } else if (Array.isArray(m)) pair = m;
    if (pair === undefined || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string') throw bad(`model.merges entry ${k} (${show(m)}) is not a pair of tokens ("a b" or ["a", "b"])`);
    const [a, b] = pair as [string, string];
    for (const t of [a, b]) if (!tokens.has(t)) throw bad(`model.merges entry ${k} names ${quote(t)}, which is not in model.vocab`);
    const merged = a + (prefix !== '' && b.startsWith(prefix) ? b.slice(prefix.length) : b);
    if (!tokens.has(merged)) throw bad(`model.merges entry ${k} merges ${quote(a)} and ${quote(b)} into ${quote(merged)}, which is not in model.vocab`);
  });
}

/** Every `Regex` pattern under `v` (a normalizer, pre-tokenizer or decoder, nested through Sequences), with where it is. */
function patterns(v: unknown, where: string, out: [string, string][]): [string, string][] {
  if (Array.isArray(v)) v.forEach((x, i) => patterns(x, `${where}[${i}]`, out));
  else if (typeof v === 'object' && v !== null) {
    for (const [k, x] of Object.entries(v)) {
      if (k === 'Regex') {
        if (typeof x !== 'string') throw bad(`${where}.Regex must be a string`);
        out.push([where, x]);
      } else patterns(x, `${where}.${k}`, out);
    }
  }
  return out;
}

/**
 * Checks a parsed tokenizer.json (header) for a model of `vocabSize` tokens; returns its
 * vocabulary (token → id, added tokens included) for the caller's own look-ups.
 */
export function checkTokenizerJson(tj: Record<string, unknown>, vocabSize: number | undefined): Map<string, number> {
  const model = obj(tj.model);
  if (model === undefined) throw bad('has no "model" object; it is not a Hugging Face tokenizer file');
  const type = model.type;
  if (typeof type !== 'string' || !(MODEL_TYPES as readonly string[]).includes(type)) {
    throw bad(`model.type ${type === undefined ? 'is missing' : `= ${show(type)} is not a tokenizer model`}; supported: ${MODEL_TYPES.join(', ')}`);
  }
  const tokens = checkVocab(model, type, vocabSize);
  if (type === 'WordPiece') {
    const unk = model.unk_token;
    if (typeof unk !== 'string' || !tokens.has(unk)) throw bad(`model.unk_token ${typeof unk === 'string' ? `${quote(unk)} is not in model.vocab` : 'is missing'}; a WordPiece model needs it for words it cannot split`);
  }
  if (type === 'BPE') checkMerges(model, tokens);
  const added = tj.added_tokens ?? [];
  if (!Array.isArray(added)) throw bad('added_tokens must be a list');
  added.forEach((t, k) => {
    const o = obj(t);
    if (o === undefined || typeof o.content !== 'string') throw bad(`added_tokens entry ${k} must be an object with a "content" string`);
    tokens.set(o.content, checkId(o.id, `added_tokens entry ${k} (${quote(o.content)})`, vocabSize));
  });
  for (const part of ['normalizer', 'pre_tokenizer', 'decoder']) {
    for (const [where, p] of patterns(tj[part], part, [])) {
      const risk = backtrackingRisk(p);
      if (risk !== null) throw bad(`the pattern ${quote(p)} of ${where} could take ${risk.time} time to match: ${risk.why}; a real tokenizer's pattern does not need this`);
    }
  }
  return tokens;
}
