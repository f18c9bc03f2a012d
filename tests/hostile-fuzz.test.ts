/**
 * Seeded fuzzing of the untrusted inputs of a checkpoint folder, one family per kind, each within
 * a bounded number of cases (the experiment file and safetensors families are tests/fuzz.test.ts):
 *   - tokenizer.json: mutants of a valid byte-level BPE (ids made fractional, negative, strings,
 *     huge or shared; tokens and merges dropped or invented; the model type changed; added tokens
 *     broken; patterns inserted, runaway or real);
 *   - chat templates: random templates built from loops (over ranges of random length, nested),
 *     namespace string and list doubling, filters and joins;
 *   - config.json: random values (huge, non-finite, fractional, negative, strings with terminal
 *     escapes, nested) for the fields the loader reads;
 *   - regex patterns: random patterns from a small grammar, each judged by regexSafety.ts and, when
 *     accepted, run on a 24-character string of its own characters;
 *   - gzip bombs: random sizes of zeros with random trailers.
 * Each case must end either accepted and well-formed (a tokenizer that round-trips a prompt with
 * every id in range; a rendered template within the output cap; a config that loads) or refused
 * with the reader's own error class and a short message — never another error, a hang or a crash.
 * FUZZ_SEED=… reproduces a run; every finding names its case.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, FormatError } from '../src/core/errors';
import { TEMPLATE_MAX_CHARS } from '../src/core/limits';
import { Rng } from '../src/core/rng';
import { parseExperimentFile } from '../src/app/savefile';
import { readHfConfig } from '../src/model/hfLoad';
import { HfTokenizer } from '../src/model/hfTokenizer';
import { backtrackingRisk } from '../src/model/regexSafety';
import { hfCheckpoint, tinyTokenizerJson } from './helpers/hfCheckpoint';
import { gzipMember, REAL_PATTERNS, RUNAWAY_PATTERNS, zeroDeflate } from './helpers/hostile';

const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : 20_261_202;
console.log(`[hostile-fuzz] seed ${SEED} (rerun with FUZZ_SEED=${SEED})`);

const pick = <T,>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)]!;
const clone = <T,>(x: T): T => JSON.parse(JSON.stringify(x)) as T;
const MAX_MESSAGE = 400;

/** Runs `f`; accepted → 'ok', refused with one of `classes` and a short message → the message; anything else fails the test naming the case. */
function outcome(label: string, f: () => void, classes: readonly (new (...a: never[]) => Error)[]): string {
  try {
    f();
    return 'ok';
  } catch (e) {
    const err = e as Error;
    if (!classes.some((c) => err instanceof c)) throw new Error(`${label}: escaped as ${err?.name}: ${err?.message}`);
    if (err.message.length > MAX_MESSAGE) throw new Error(`${label}: a message of ${err.message.length} characters`);
    return err.message;
  }
}

describe('fuzz: hostile inputs of a checkpoint folder', () => {
  it('tokenizer.json mutants load and round-trip, or are refused by name (400 mutants)', () => {
    const rng = new Rng(SEED, [1]);
    const base = tinyTokenizerJson();
    const tokens = Object.keys((base.model as { vocab: object }).vocab);
    let refused = 0;
    for (let i = 0; i < 400; i++) {
      const tj = clone(base) as Record<string, unknown> & { model: Record<string, unknown> & { vocab: Record<string, unknown>; merges: unknown[] }; added_tokens: Record<string, unknown>[] };
      const edits = 1 + rng.int(3);
      for (let k = 0; k < edits; k++) {
        const t = pick(rng, tokens);
        switch (rng.int(10)) {
          case 0: tj.model.vocab[t] = pick(rng, [0.5, -1, -5, 1e9, 271, 272, '7', null, [1], 2 ** 53]) as never; break;
          case 1: tj.model.vocab[t] = tj.model.vocab[pick(rng, tokens)]; break;
          case 2: delete tj.model.vocab[t]; break;
          case 3: tj.model.vocab[`new${i}`] = rng.int(300); break;
          case 4: tj.model.merges.push(pick(rng, [`${t} ${pick(rng, tokens)}`, 'x', [t], [t, 'missing'], 7, `missing ${t}`])); break;
          case 5: tj.model.type = pick(rng, ['Evil', 'WordPiece', 'Unigram', 'WordLevel', 7, undefined]); break;
          case 6: tj.added_tokens.push(pick(rng, [{ id: rng.int(400), content: `<t${i}>` }, { id: -1, content: 'x' }, { id: 3.5, content: 'y' }, { content: 'z' }, 'str'] as never[])); break;
          case 7: tj.pre_tokenizer = { type: 'Split', pattern: { Regex: pick(rng, [...RUNAWAY_PATTERNS, ...Object.values(REAL_PATTERNS), '(', '[a-', '(?<x>a+)+', '\\1']) }, behavior: 'Isolated', invert: false }; break;
          case 8: tj.normalizer = { type: 'Replace', pattern: { Regex: pick(rng, ['\\s+', '(\\s+)*', '(a|a)*', ' ']) }, content: ' ' }; break;
          default: tj.model.merges = (tj.model.merges as unknown[]).filter(() => rng.uniform() < 0.7);
        }
      }
      const label = `tokenizer mutant ${i}`;
      const r = outcome(label, () => {
        const tk = new HfTokenizer(tj, { vocab: 272, tokenizerConfig: { eos_token: '<|im_end|>' } });
        const text = 'What is 12+34? agent 1: 46\n';
        const ids = tk.encode(text, false);
        for (const id of ids) if (!(Number.isInteger(id) && id >= 0 && id < 272)) throw new Error(`${label}: encoded id ${id}`);
      }, [FormatError]);
      if (r !== 'ok') refused++;
    }
    expect(refused).toBeGreaterThan(100);
    expect(refused).toBeLessThan(400);
  });

  it('random chat templates render within the cap, or are stopped by name (200 templates)', () => {
    const rng = new Rng(SEED, [2]);
    const n = () => pick(rng, ['3', '100', '5000', '20000', '10**6', '10**9', 'messages|length']);
    const body = (depth: number): string => {
      const parts: string[] = [];
      for (let k = 0; k < 1 + rng.int(3); k++) {
        switch (depth > 2 ? rng.int(3) : rng.int(6)) {
          case 0: parts.push("{{ messages[0]['content'] }}"); break;
          case 1: parts.push('{{ ns.s }}'); break;
          case 2: parts.push(pick(rng, ['{% set ns.s = ns.s + ns.s %}', '{% set ns.l = ns.l + ns.l %}', "{{ range(3) | join(',') }}"])); break;
          case 3: parts.push(`{% for i in range(${n()}) %}${body(depth + 1)}{% endfor %}`); break;
          case 4: parts.push(`{{ range(${n()}) | join('') | length }}`); break;
          default: parts.push(`{% if ns.s | length > ${rng.int(100)} %}${body(depth + 1)}{% endif %}`);
        }
      }
      return parts.join('');
    };
    const stopped = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const template = `{% set ns = namespace(s='ab', l=[1, 2]) %}${body(0)}`;
      const label = `template ${i}: ${template.slice(0, 200)}`;
      const r = outcome(label, () => {
        const tk = new HfTokenizer(tinyTokenizerJson(), { vocab: 272, tokenizerConfig: { eos_token: '<|im_end|>', chat_template: template } });
        if (tk.renderContext('hi<a0>').length > TEMPLATE_MAX_CHARS) throw new Error(`${label}: output past the cap`);
      }, [FormatError]);
      if (r !== 'ok') {
        expect(r, label).toMatch(/^tokenizer_config\.json: "chat_template" (is stopped|fails to render)/);
        stopped.add(r.replace(/[\d,]+/g, 'N'));
      }
    }
    expect(stopped.size).toBeGreaterThan(1);
  });

  it('random config.json values load or are refused by their own ConfigError (300 configs)', () => {
    const rng = new Rng(SEED, [3]);
    const base = hfCheckpoint().config;
    const fields = ['vocab_size', 'hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'rope_theta', 'rms_norm_eps', 'max_position_embeddings', 'tie_word_embeddings', 'bos_token_id', 'eos_token_id', 'head_dim', 'rope_scaling', '_name_or_path', 'model_type'];
    const values = ['1e400', '-1e400', '0', '-3', '2.5', '1e15', '"64"', 'null', 'true', '[]', '{"a":[[[1]]]}', '"\\u001b[2J\\r\\nerror: x"', '4', '2'];
    for (let i = 0; i < 300; i++) {
      let text = JSON.stringify(base);
      for (let k = 0; k < 1 + rng.int(2); k++) text = text.replace('{', `{"${pick(rng, fields)}":${pick(rng, values)},`);
      const label = `config ${i}: ${text.slice(0, 160)}`;
      outcome(label, () => void readHfConfig(new Map([['config.json', new TextEncoder().encode(text)]])), [ConfigError, FormatError]);
    }
  });

  it('random patterns are judged without error; accepted ones match a 24-character string of their own characters (300 patterns)', () => {
    const rng = new Rng(SEED, [4]);
    const atoms = ['a', 'b', '\\d', '\\s', '.', '[ab]', '\\p{L}', "'s"];
    const gen = (depth: number): string => {
      let out = '';
      for (let k = 0; k < 1 + rng.int(3); k++) {
        let a = depth < 2 && rng.uniform() < 0.35 ? `(?:${gen(depth + 1)}${rng.uniform() < 0.4 ? `|${gen(depth + 1)}` : ''})` : pick(rng, atoms);
        a += pick(rng, ['', '', '+', '*', '?', '{1,3}', '{2,}']);
        out += a;
      }
      return out;
    };
    let accepted = 0;
    for (let i = 0; i < 300; i++) {
      const p = gen(0) + pick(rng, ['', '$', 'Q']);
      const risk = backtrackingRisk(p);
      if (risk !== null) {
        expect(risk.why.length, p).toBeLessThan(MAX_MESSAGE);
        continue;
      }
      accepted++;
      const re = new RegExp(p, 'gu');
      const s = Array.from({ length: 24 }, () => pick(rng, ['a', 'b', '1', ' ', 'x'])).join('');
      s.match(re); // a pattern judged safe that backtracks exponentially would stall here
    }
    expect(accepted).toBeGreaterThan(30);
  });

  it('gzip bombs of random sizes with random trailers are refused by the inflation cap or the checksum (12 bombs)', () => {
    const rng = new Rng(SEED, [5]);
    for (let i = 0; i < 12; i++) {
      const size = (1 + rng.int(8)) * 2 ** 23 + rng.int(1000);
      const bytes = gzipMember(zeroDeflate(size), pick(rng, [size, 0, 64, rng.int(2 ** 24) * 256]));
      const r = parseExperimentFile(bytes);
      expect(r.ok, `bomb ${i}`).toBe(false);
      if (!r.ok) expect(['too-large', 'checksum', 'layout'], `bomb ${i}: ${r.error}`).toContain(r.code);
    }
  });
});
