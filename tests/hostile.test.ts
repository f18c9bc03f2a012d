/**
 * Hostile inputs, one regression test per reproducer (tests/helpers/hostile.ts builds them, small
 * where the real one is big but through the same code path): gzip bombs and an experiment
 * container with one huge blob refused as soon as a prefix inflates past the ratio; a safetensors header with entries the
 * config does not have refused by its size before it is decoded, and an unexpected entry before
 * any tensor data is copied; 100,000-deep JSON refused by name; runaway pre-tokenizer patterns
 * refused while the real GPT-2 / Llama-3 / Qwen2 / GPT-4o / SmolLM patterns load and encode (and a
 * text past one encode call's cap refused, the ids up to it unchanged); each
 * malformed vocabulary refused naming its entry; runaway chat templates stopped by their budgets
 * while real ones render; config.json values that print oddly; control characters escaped.
 * The CLI's folder reading (links, devices, pipes, folders) is tests/hostile-cli.test.ts.
 *
 * Not here: timing (bench/hostile.ts prints time to refusal and peak memory per class), the
 * seeded fuzz families (tests/hostile-fuzz.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { deflateRawSync, gunzipSync } from 'node:zlib';
import { FormatError, SatError } from '../src/core/errors';
import { jsonDepth, readJson } from '../src/core/json';
import { INFLATE_RATIO, INFLATE_SLACK, TEMPLATE_MAX_CHARS, TOKENIZER_MAX_ENCODE_CHARS } from '../src/core/limits';
import { Tokenizer } from '@huggingface/tokenizers';
import { escapeControl, escapeLines } from '../src/core/text';
import { inflateCapped } from '../src/app/inflate';
import { parseExperimentFile, serializeExperiment } from '../src/app/savefile';
import { loadHfCheckpoint, type HfFiles } from '../src/model/hfLoad';
import { ChatTemplate } from '../src/model/chatTemplate';
import { HfTokenizer } from '../src/model/hfTokenizer';
import { backtrackingRisk } from '../src/model/regexSafety';
import { readSafetensors, writeSafetensors } from '../src/model/safetensors';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { presetConfig } from '../src/sat/presets';
import { CHAT_TEMPLATE, hfCheckpoint, tinyTokenizerJson } from './helpers/hfCheckpoint';
import { containerBomb, deepJson, extraEntriesFolder, gzipBomb, gzipMember, regexTokenizer, REAL_PATTERNS, RUNAWAY_PATTERNS, RUNAWAY_TEMPLATES, zeroDeflate } from './helpers/hostile';

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const enc = (o: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(o));

async function loadError(files: HfFiles): Promise<Error> {
  try {
    await loadHfCheckpoint(files, { quant: 'q8' });
  } catch (e) {
    return e as Error;
  }
  throw new Error('the folder loaded');
}

function tokError(tj: unknown, tc: Record<string, unknown> = {}, gen?: unknown): Error {
  try {
    new HfTokenizer(tj, { tokenizerConfig: tc, generationConfig: gen, vocab: 272, turns: tc.chat_template ? 'chat' : 'plain' });
  } catch (e) {
    return e as Error;
  }
  throw new Error('the tokenizer loaded');
}

describe('experiment files: inflation stops at the cap', () => {
  const expectTooLarge = (bytes: Uint8Array, fragment: string) => {
    const r = parseExperimentFile(bytes);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.code).toBe('too-large');
    expect(r.error).toContain(fragment);
  };

  it('a bomb of zeros is refused as soon as a prefix inflates past INFLATE_RATIO times its length (plus the slack), not at 1 GiB', () => {
    const bomb = gzipBomb(256 * MiB); // ~256 KiB: the 1 GiB − 64 bomb in small
    expect(bomb.length).toBeLessThan(MiB);
    const r = parseExperimentFile(bomb);
    expectTooLarge(bomb, `part of it decompresses to more than ${INFLATE_RATIO} times its size: the first `);
    const m = /the first (\d+) bytes of its compressed data already inflate to (\d+) bytes, (\d+) times their size/.exec(r.ok ? '' : r.error);
    expect(m, r.ok ? '' : r.error).not.toBeNull();
    const [input, output, times] = [Number(m![1]), Number(m![2]), Number(m![3])];
    // True: that prefix did inflate past the limit, and the figures agree with each other.
    expect(output).toBeGreaterThan(INFLATE_RATIO * input + INFLATE_SLACK);
    expect(times).toBe(Math.floor(output / input));
    // Soon: within one step of the limit, a few kilobytes of a file of ~256 KiB.
    expect(input).toBeLessThan(8 * 1024);
    expect(output).toBeLessThan(INFLATE_SLACK + 2 * MiB);
  });

  it('a bomb is given up before its later bytes are read: a cut after its first 24 KiB is never reached', () => {
    // The 1 GiB − 64 bomb's data (~1 MiB; zeros inflate ~1,000-fold) cut short: capped by the whole
    // file's length (32 × 1 MiB), inflating reads ~32 KiB of input and runs into the cut; the prefix
    // limit stops within ~2 KiB.
    const full = zeroDeflate(GiB - 64);
    const cut = full.subarray(0, 24 * 1024);
    expect(inflateCapped(cut, INFLATE_RATIO * full.length, 1 << 14)).toMatchObject({ ok: false, why: 'eof' });
    expect(inflateCapped(cut, INFLATE_RATIO * full.length, 1 << 14, { times: INFLATE_RATIO, slack: INFLATE_SLACK })).toMatchObject({ ok: false, why: 'ratio' });
  });

  it('the limit holds every prefix: data that inflates little at first may hold long runs of zeros later, not first', () => {
    const random = new Uint8Array(2 * MiB);
    let x = 11;
    for (let i = 0; i < random.length; i++) random[i] = (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24;
    const zeros = new Uint8Array(24 * MiB);
    const cat = (a: Uint8Array, b: Uint8Array) => Buffer.concat([a, b]);
    const limit = { times: INFLATE_RATIO, slack: INFLATE_SLACK };
    const late = cat(random, zeros);
    const r = inflateCapped(deflateRawSync(late), 2 ** 30, 1 << 14, limit);
    expect(r.ok && Buffer.from(r.bytes).equals(late)).toBe(true);
    // The same bytes the other way round inflate as little overall (~13-fold), but their first kilobytes ~1,000-fold.
    expect(inflateCapped(deflateRawSync(cat(zeros, random)), 2 ** 30, 1 << 14, limit)).toMatchObject({ ok: false, why: 'ratio' });
  });

  it('inflates exactly while its step shrinks and grows (zeros, random bytes, zeros), and refuses one byte past the cap', () => {
    const plain = new Uint8Array(6 * MiB);
    let x = 7;
    for (let i = 2 * MiB; i < 4 * MiB; i++) plain[i] = (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24;
    const deflated = deflateRawSync(plain);
    for (const slice of [1 << 14, 1 << 16]) {
      const r = inflateCapped(deflated, plain.length, slice);
      expect(r.ok && Buffer.from(r.bytes).equals(Buffer.from(plain))).toBe(true);
      expect(inflateCapped(deflated, plain.length - 1, slice)).toMatchObject({ ok: false, why: 'too-large' });
    }
  });

  it('a trailer that understates the length (ISIZE is mod 2^32) changes nothing', () => {
    expectTooLarge(gzipMember(zeroDeflate(256 * MiB), 64), `more than ${INFLATE_RATIO} times its size`);
  });

  it('a valid container whose one blob is all zeros is refused before the blob is read', () => {
    expectTooLarge(containerBomb(32 * MiB), `more than ${INFLATE_RATIO} times its size`);
  });

  it('a real experiment compresses far less than the cap allows (so the cap refuses no real file)', async () => {
    const exp = createTabularExperiment(presetConfig('relay', { stages: 12, batch: 4, seed: 5 }));
    const stages = await runStages(exp, 12);
    const snaps = await Promise.all(exp.team.map((a) => a.snapshot()));
    const infos = await Promise.all(exp.team.map((a) => a.info()));
    const bytes = serializeExperiment({ config: exp.cfg, presetName: 'relay', createdAt: '2026-12-01T00:00:00.000Z', stages, agents: snaps.map((snapshot, i) => ({ snapshot, info: infos[i]! })), betas: exp.betas.slice(), cursor: { stage: 12 } });
    expect(gunzipSync(bytes).length / bytes.length).toBeLessThan(INFLATE_RATIO / 2);
    // Every prefix too, with room to spare: under a quarter of the ratio and no slack at all.
    expect(inflateCapped(bytes.subarray(10), 2 ** 30, 1 << 14, { times: INFLATE_RATIO / 4, slack: 0 }).ok).toBe(true);
    expect(parseExperimentFile(bytes).ok).toBe(true);
  });
});

describe('checkpoint folders: sizes before bytes', () => {
  it('a safetensors header with entries the config does not have is refused by the folder size, and by the header size alone', async () => {
    const err = await loadError(extraEntriesFolder(5000));
    expect(err).toBeInstanceOf(FormatError);
    expect(err.message).toMatch(/^checkpoint folder: its safetensors files hold [\d.]+ KiB, but config\.json describes 96,576 parameters, at most [\d.]+ KiB even as F32/);
    const st = extraEntriesFolder(5000).get('model.safetensors')!;
    expect(() => readSafetensors(st, { maxHeaderBytes: 64 * 1024, headerWhy: 'this test' })).toThrow(/header length \d+ bytes is more than the 65536 a file of this kind needs \(this test\)/);
  });

  it('an unexpected entry is refused before any tensor data is copied', () => {
    const file = writeSafetensors(new Map([['a', { dtype: 'F32', shape: [4], data: new Float32Array(4) }], ['evil', { dtype: 'F32', shape: [4], data: new Float32Array(4) }]]));
    const seen: string[] = [];
    expect(() => readSafetensors(file, { checkEntry: (name) => { seen.push(name); if (name === 'evil') throw new FormatError('no evil'); } })).toThrow('no evil');
    expect(seen).toEqual(['a', 'evil']);
  });

  it('100,000-deep JSON is refused by name before it is parsed, in config.json and tokenizer.json', async () => {
    const files = new Map(hfCheckpoint().files).set('config.json', deepJson(100_000));
    const err = await loadError(files);
    expect(err.message).toBe('checkpoint folder: "config.json" nests arrays and objects more than 64 deep (at byte 100); no file of its kind is nested so deeply');
    const tok = new Map(hfCheckpoint().files).set('tokenizer.json', deepJson(100_000, 'model'));
    expect((await loadError(tok)).message).toContain('"tokenizer.json" nests arrays and objects more than 64 deep');
  });

  it('jsonDepth skips brackets inside strings and escapes', () => {
    expect(jsonDepth(enc({ a: '[[[[{{{{', b: ['\\"[['] }), 8)).toBe(2);
    expect(jsonDepth(enc([[[1]]]), 2)).toEqual({ at: 2 });
    expect(() => readJson('x.json', enc('x'.repeat(100)), { maxBytes: 10, maxDepth: 4, why: 'a test cap' })).toThrow('x.json is 102 bytes, more than the 10 bytes this playground reads (a test cap)');
  });

  it('a tokenizer.json far larger than vocab_size needs is refused by its size before it is parsed', async () => {
    const tj = tinyTokenizerJson();
    const files = new Map(hfCheckpoint().files).set('tokenizer.json', enc({ ...tj, padding_junk: 'x'.repeat(5 * MiB) }));
    expect((await loadError(files)).message).toMatch(/^checkpoint folder: "tokenizer\.json" is 5\.0 MiB, more than the 4\.3 MiB this playground reads \(4 MiB and 1 KiB per token of config\.json's "vocab_size" = 272\)/);
  });

  it('config.json: hidden_size 1e400 is shown as Infinity; rope_theta and rms_norm_eps say config.json once', async () => {
    const text = new TextDecoder().decode(hfCheckpoint().files.get('config.json')!);
    expect(text).toContain('"hidden_size": 64,');
    const big = await loadError(new Map(hfCheckpoint().files).set('config.json', new TextEncoder().encode(text.replace('"hidden_size": 64,', '"hidden_size": 1e400,'))));
    expect(big.message).toContain('"hidden_size" = Infinity (a number too large for a double) must be a positive integer');
    for (const key of ['rope_theta', 'rms_norm_eps']) {
      const m = (await loadError(new Map(hfCheckpoint({ config: { [key]: -1 } }).files))).message;
      expect(m).toBe(`config.json: "${key}" = -1 must be a finite number > 0.`);
    }
  });

  it("the checkpoint's name keeps no control character", async () => {
    const evil = '\u001b]0;TITLE\u0007\u001b[2J\u001b[31mRED\u001b[0m\r\nerror: fake line';
    const m = await loadHfCheckpoint(hfCheckpoint({ config: { _name_or_path: evil } }).files);
    expect(m.name).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(m.name).toBe('\\u{1b}]0;TITLE\\u{7}\\u{1b}[2J\\u{1b}[31mRED\\u{1b}[0m\\r\\nerror: fake line');
  });
});

describe('tokenizers: runaway patterns refused, real ones load', () => {
  it.each(RUNAWAY_PATTERNS)('%s is refused at load, naming the pattern and where it is', (p) => {
    const err = tokError(regexTokenizer(p));
    expect(err).toBeInstanceOf(FormatError);
    expect(err.message).toContain(`tokenizer.json: the pattern ${JSON.stringify(p)} of pre_tokenizer.pretokenizers[0].pattern could take exponential time to match: the repeated group`);
  });

  it.each(Object.entries(REAL_PATTERNS))('the %s pattern loads and encodes a 40-character prompt', (_name, p) => {
    expect(backtrackingRisk(p)).toBeNull();
    const t = new HfTokenizer(regexTokenizer(p), { vocab: 272, tokenizerConfig: { eos_token: '<|im_end|>' } });
    const text = "What's 12+34? It's 46, isn't it?  Yes!!\n";
    expect(text).toHaveLength(40);
    expect(t.decode(t.encode(text, false))).toBe(text);
  });

  it('a text past TOKENIZER_MAX_ENCODE_CHARS is refused before a checked but quadratic pattern runs on it; up to it, ids are the library\'s own', () => {
    // \w+! passes the load checks, and splitting n word characters with no "!" takes ~n²/2 steps.
    expect(backtrackingRisk('\\w+!')).toBeNull();
    const t = new HfTokenizer(regexTokenizer('\\w+!'), { vocab: 272, tokenizerConfig: { eos_token: '<|im_end|>' } });
    expect(() => t.encode('a'.repeat(TOKENIZER_MAX_ENCODE_CHARS + 1))).toThrow(
      new FormatError(`tokenizer: a text of ${TOKENIZER_MAX_ENCODE_CHARS + 1} characters is longer than the ${TOKENIZER_MAX_ENCODE_CHARS} this playground encodes in one call (a seat's context is at most 1,024 tokens; a checked pre-tokenizer pattern may still take time growing with the square of the length, docs/models.md "Input limits")`),
    );
    // The real patterns at the cap: the same ids as @huggingface/tokenizers gives unbounded.
    const line = "What's 12+34? It's 46, isn't it?  Yes!!\n";
    const text = line.repeat(Math.ceil(TOKENIZER_MAX_ENCODE_CHARS / line.length)).slice(0, TOKENIZER_MAX_ENCODE_CHARS);
    for (const p of Object.values(REAL_PATTERNS)) {
      const tj = regexTokenizer(p);
      expect(new HfTokenizer(tj, { vocab: 272, tokenizerConfig: { eos_token: '<|im_end|>' } }).encode(text, false)).toEqual(new Tokenizer(tj, {}).encode(text, { add_special_tokens: false }).ids);
    }
  });

  it('the two shapes of exponential backtracking, and a backreference, are named; safe repetitions are not', () => {
    expect(backtrackingRisk('(a|a)+b')).toEqual({ time: 'exponential', why: 'the repeated group "(a|a)+" has alternatives that can match the same text' });
    expect(backtrackingRisk('(?:x+x+)+y')).toEqual({ time: 'exponential', why: 'the repeated group "(?:x+x+)+" holds a repeated part of its own (a nested quantifier)' });
    expect(backtrackingRisk('(a)\\1')?.why).toContain('refers back to a group');
    for (const ok of ['(?:a|b)+', '\\d+\\d+', '(ab){1,3}', '[a-z]+(?=\\s)', '\\p{N}{1,3}', "(?i:'s|'t)?", '\\s*[\\r\\n]+', '\\s+(?!\\S)']) expect(backtrackingRisk(ok)).toBeNull();
  });

  it('three chained unbounded repetitions (polynomial backtracking) are refused, at any depth; two are not', () => {
    expect(backtrackingRisk('\\w*\\d*\\w*$')).toEqual({ time: 'polynomial', why: 'the part "\\w*\\d*\\w*" chains 3 unbounded repetitions, so a failing scan of n characters can take about n^3 steps (at most 2 are accepted)' });
    expect(backtrackingRisk('x|a(?:\\s*b)?\\s*\\w+!')?.why).toContain('the part "(?:\\s*b)?\\s*\\w+" chains 3 unbounded');
    expect(backtrackingRisk('(?=\\s*\\s*\\s*)a')?.time).toBe('polynomial');
    expect(backtrackingRisk('\\s*a\\s*b{2,}')?.why).toContain('n^3');
    for (const ok of ['\\s*\\w*$', '\\w*(?=\\s*)\\d+', 'a*|b*|c*']) expect(backtrackingRisk(ok)).toBeNull();
  });

  it('two unbounded repetitions that may share characters, before a part that can fail, are refused; at a sequence\'s end, or disjoint, they are not', () => {
    expect(backtrackingRisk('\\w*\\w*!')).toEqual({ time: 'polynomial', why: 'the part "\\w*\\w*!" has two unbounded repetitions before a part that can fail, so a failing scan of n characters can take about n^3 steps' });
    expect(backtrackingRisk('a|(\\d+x*)\\d+(?=y)')?.time).toBe('polynomial');
    for (const ok of ['\\w*\\w*', '\\s*\\w+!', 'a+b+c', '\\s*[\\r\\n]+', ...Object.values(REAL_PATTERNS)]) expect(backtrackingRisk(ok)).toBeNull();
  });

  it('a pre-tokenizer with a polynomial pattern is refused at load, before a 40-character prompt is encoded', () => {
    const err = tokError(regexTokenizer('\\s*\\w*\\s*$'));
    expect(err).toBeInstanceOf(FormatError);
    expect(err.message).toContain('tokenizer.json: the pattern "\\\\s*\\\\w*\\\\s*$" of pre_tokenizer.pretokenizers[0].pattern could take polynomial time to match: the part "\\s*\\w*\\s*" chains 3 unbounded repetitions');
  });

  it('a normalizer or decoder pattern is checked too', () => {
    const tj = tinyTokenizerJson();
    const err = tokError({ ...tj, normalizer: { type: 'Replace', pattern: { Regex: '(\\s+)*$' }, content: ' ' } });
    expect(err.message).toContain('of normalizer.pattern could take exponential time');
  });
});

describe('tokenizers: malformed vocabularies refused at load, naming the entry', () => {
  const tj = tinyTokenizerJson();
  const model = tj.model as Record<string, unknown> & { vocab: Record<string, number>; merges: string[] };
  const withVocab = (edit: (v: Record<string, unknown>) => void) => {
    const vocab: Record<string, unknown> = { ...model.vocab };
    edit(vocab);
    return { ...tj, model: { ...model, vocab } };
  };
  const cases: [string, unknown, string][] = [
    ['a fractional id', withVocab((v) => (v.a = 97.5)), 'tokenizer.json: model.vocab token "a" has id 97.5; an id is an integer ≥ 0'],
    ['an id as a string', withVocab((v) => (v.a = '97')), 'tokenizer.json: model.vocab token "a" has id "97" (a string); an id is an integer ≥ 0'],
    ['a negative id', withVocab((v) => (v.a = -3)), 'tokenizer.json: model.vocab token "a" has id -3; an id is an integer ≥ 0'],
    ['an id past vocab_size', withVocab((v) => (v.a = 9999)), 'tokenizer.json: model.vocab token "a" has id 9999, but config.json "vocab_size" = 272, so ids run 0..271'],
    ['a duplicate id', withVocab((v) => (v.zz = 97)), 'tokenizer.json: model.vocab gives id 97 to both "a" and "zz"'],
    ['model type "Evil"', { ...tj, model: { ...model, type: 'Evil' } }, 'tokenizer.json: model.type = "Evil" (a string) is not a tokenizer model; supported: BPE, WordPiece, Unigram, WordLevel'],
    ['WordPiece without its unk token', { ...tj, model: { type: 'WordPiece', vocab: model.vocab, unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100 } }, 'tokenizer.json: model.unk_token "[UNK]" is not in model.vocab; a WordPiece model needs it'],
    ['a merge naming a missing token', { ...tj, model: { ...model, merges: [...model.merges, 'Ġ nothere'] } }, 'tokenizer.json: model.merges entry 5 names "nothere", which is not in model.vocab'],
    ['a merge whose result is missing', { ...tj, model: { ...model, merges: [...model.merges, 'a b'] } }, 'tokenizer.json: model.merges entry 5 merges "a" and "b" into "ab", which is not in model.vocab'],
    ['an added token past vocab_size', { ...tj, added_tokens: [{ id: 300, content: '<x>' }] }, 'tokenizer.json: added_tokens entry 0 ("<x>") has id 300, but config.json "vocab_size" = 272'],
  ];
  it.each(cases)('%s', (_label, json, message) => {
    const err = tokError(json);
    expect(err).toBeInstanceOf(FormatError);
    expect(err.message).toContain(message);
  });

  it('an eos id of −5 (generation_config.json) or past the vocabulary is refused at load', () => {
    expect(tokError(tj, {}, { eos_token_id: -5 }).message).toBe('generation_config.json: "eos_token_id" = -5 is not a token id (an integer ≥ 0)');
    expect(tokError(tj, {}, { eos_token_id: 5000 }).message).toContain('the end-of-sequence token id 5000 is not in the vocabulary (ids 0..271)');
  });
});

describe('chat templates: budgets', () => {
  it.each(Object.entries(RUNAWAY_TEMPLATES))('%s is stopped with a specific message', (_label, template) => {
    const err = tokError(tinyTokenizerJson(), { eos_token: '<|im_end|>', chat_template: template });
    expect(err).toBeInstanceOf(FormatError);
    expect(err.message).toMatch(/^tokenizer_config\.json: "chat_template" is stopped: (range\(\) asks for [\d,]+ items, more than 10,000|it builds a string of more than 1,048,576 characters|it takes more than 50,000 evaluation steps), past what rendering one chat may take/);
  });

  it('a real template renders as before, with the globals it uses', () => {
    const t = new HfTokenizer(tinyTokenizerJson(), { tokenizerConfig: { eos_token: '<|im_end|>', chat_template: CHAT_TEMPLATE }, vocab: 272 });
    expect(t.renderContext('2+2=<a0>')).toBe('<|im_start|>user\n2+2=<|im_end|>\n<|im_start|>assistant\n');
    const llama = "{{ bos_token }}{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% if loop.last %}{{ m['role'] | upper }}:{{ m['content'] | trim }}{% endif %}{% endfor %}{{ ns.n }}{% if strftime_now('%Y') | length == 4 and none is none and true %}!{% endif %}{{ range(3) | join(',') }}";
    const u = new HfTokenizer(tinyTokenizerJson(), { tokenizerConfig: { eos_token: '<|im_end|>', bos_token: '<|endoftext|>', chat_template: llama }, vocab: 272 });
    expect(u.renderContext(' hi <a1>')).toBe('<|endoftext|>USER:hi1!0,1,2');
  });

  it('a string exactly at the cap is fine; twice that is not', () => {
    const doubling = (k: number) => `{% set ns = namespace(s='yyyyyyyy') %}{% for i in range(${k}) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}`;
    expect(8 * 2 ** 17).toBe(TEMPLATE_MAX_CHARS);
    const t = new HfTokenizer(tinyTokenizerJson(), { tokenizerConfig: { eos_token: '<|im_end|>', chat_template: doubling(17) }, vocab: 272 });
    expect(t.renderContext('x<a0>')).toBe(String(TEMPLATE_MAX_CHARS));
    expect(tokError(tinyTokenizerJson(), { eos_token: '<|im_end|>', chat_template: doubling(18) }).message).toContain('it builds a string of more than 1,048,576 characters');
  });
});

describe('small messages', () => {
  it('a weight too large for an f16 block scale is named by tensor, row and block', async () => {
    const files = hfCheckpoint({ mutate: (t) => { (t.get('model.layers.1.mlp.up_proj.weight')!.data as Float32Array)[70] = 1e9; } }).files;
    const err = await loadError(files);
    expect(err.message).toBe('tensor "model.layers.1.mlp.up_proj.weight": row 1, block 0: block scale 7874015.748031496 does not fit in f16 (largest 65504): the weights are too large to quantize');
  });

  it('a long real conversation renders far within the template budget', () => {
    const t = new ChatTemplate(CHAT_TEMPLATE);
    const messages = Array.from({ length: 500 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}` }));
    expect(t.render({ messages, add_generation_prompt: true }).split('<|im_start|>')).toHaveLength(502);
  });
});

describe('terminal text', () => {
  it('escapes C0, DEL, C1 and bidi controls; escapeLines keeps our own line breaks', () => {
    expect(escapeControl('a\u001b[2Jb\u0007\u009b\u202e\r\n\t')).toBe('a\\u{1b}[2Jb\\u{7}\\u{9b}\\u{202e}\\r\\n\\t');
    expect(escapeLines('one\u001b\ntwo')).toBe('one\\u{1b}\ntwo');
    expect(new SatError('x', 'a').message).toBe('a');
  });
});
