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
 *   - gzip bombs: random sizes of zeros with random trailers;
 *   - ONNX graphs: a real export's protobuf with bytes flipped, cut, doubled or hostile fields
 *     spliced in (runaway varints, huge lengths, long packed lists);
 *   - run logs, one family per format (verl file and console, W&B CSV and JSON lines, the SAT
 *     authors' trainer): fixtures with hostile pieces spliced in (digit runs, brackets, control
 *     characters, long lines), slices cut or doubled, lines dropped;
 *   - generation dumps: verl's and TeamTR's fixtures mutated the same way, read as one import;
 *   - recipe YAML: an exported recipe mutated the same way (tags, deep brackets, quotes); and random
 *     documents of known nesting (tests/helpers/yamlDepth.ts: block, compact and flow levels at odd
 *     indents, with block scalars, continued scalars and comments stepping right), refused exactly
 *     when deeper than the cap.
 * A refusal's message must also hold no control character (every quoted string is escaped).
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

describe('fuzz: hostile ONNX graphs, run logs, generation dumps and recipes', () => {
  /** Accepted, or refused with the reader's class, a short message and no control character (every string is escaped). */
  const judged = (label: string, f: () => void, classes: readonly (new (...a: never[]) => Error)[]): string => {
    const m = outcome(label, f, classes);
    if (m !== 'ok' && /[\u0000-\u001f\u007f-\u009f]/.test(m)) throw new Error(`${label}: a message with a control character: ${JSON.stringify(m)}`);
    return m;
  };
  const bytesOf = (s: string) => new TextEncoder().encode(s);
  /** A few hostile pieces a mutant may splice in: digit runs, brackets, quotes, control characters, long lines. */
  const HOSTILE = ['1'.repeat(5_000), '['.repeat(200), '{'.repeat(200), '"'.repeat(50), '\u001b[2J\nerror: forged', 'nan', '-inf', '1e999', '\u0000', ':'.repeat(500), 'x'.repeat(20_000), '\r\n', ' - ', 'np.float64(', '!!js/function', '0x0'];

  /** `text` with 1–4 random edits: a hostile piece spliced in, a slice cut, a slice doubled, a line dropped. */
  function mutateText(rng: Rng, text: string): string {
    let t = text;
    for (let k = 1 + rng.int(4); k > 0; k--) {
      const at = rng.int(t.length + 1);
      const to = Math.min(t.length, at + rng.int(200));
      switch (rng.int(4)) {
        case 0: t = t.slice(0, at) + pick(rng, HOSTILE) + t.slice(at); break;
        case 1: t = t.slice(0, at) + t.slice(to); break;
        case 2: t = t.slice(0, to) + t.slice(at, to) + t.slice(to); break;
        default: {
          const lines = t.split('\n');
          lines.splice(rng.int(lines.length), 1);
          t = lines.join('\n');
        }
      }
    }
    return t;
  }

  it('ONNX protobuf mutants are read or refused by name (300 mutants)', async () => {
    const { readOnnx } = await import('../src/model/onnx/read');
    const { onnxFolder } = await import('./helpers/onnxFolder');
    const rng = new Rng(SEED, [7]);
    const bases = [onnxFolder({}, { weights: 'f32' }), onnxFolder({}, { weights: 'f32', external: true })];
    let refused = 0;
    for (let i = 0; i < 300; i++) {
      const base = pick(rng, bases);
      const bytes = base.files.get(base.file)!.slice();
      let m: Uint8Array = bytes;
      for (let k = 1 + rng.int(3); k > 0; k--) {
        const at = rng.int(m.length);
        switch (rng.int(5)) {
          case 0: m[at] = rng.int(256); break; // a flipped byte
          case 1: m = m.slice(0, at); break; // truncated
          case 2: m[at] = 0xff; break; // a varint that runs on
          case 3: { // a slice doubled (repeated fields, duplicate names)
            const to = Math.min(m.length, at + 1 + rng.int(64));
            const out = new Uint8Array(m.length + to - at);
            out.set(m.subarray(0, to));
            out.set(m.subarray(at, to), to);
            out.set(m.subarray(to), to + to - at);
            m = out;
            break;
          }
          default: { // a hostile field spliced in: a long packed list, a huge length, a deep group
            const piece = pick(rng, [Uint8Array.of(0x42, 0xff, 0xff, 0xff, 0x0f), Uint8Array.of(0x0a, 0x80, 0x80, 0x80, 0x80, 0x10), new Uint8Array(64).fill(0x80), Uint8Array.of(0x0b, 0x0c)]);
            const out = new Uint8Array(m.length + piece.length);
            out.set(m.subarray(0, at));
            out.set(piece, at);
            out.set(m.subarray(at), at + piece.length);
            m = out;
          }
        }
      }
      const files = new Map(base.files);
      files.set(base.file, m);
      if (judged(`onnx mutant ${i}`, () => void readOnnx(files, base.file), [FormatError]) !== 'ok') refused++;
    }
    expect(refused).toBeGreaterThan(50);
  });

  it('run log mutants of each format are read (bad lines skipped by name) or refused by name (5 × 200 mutants)', async () => {
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { readRunLog } = await import('../src/bridge/runLog');
    const { csvRows } = await import('../src/bridge/logs/wandb');
    const fixture = (n: string) => readFileSync(join(import.meta.dirname, 'fixtures/bridge/logs', n), 'utf8');
    const csv = fixture('wandb-history.csv');
    const [head, ...rows] = csvRows(csv);
    const wandbJson = rows.map((r) => JSON.stringify(Object.fromEntries(head!.map((k, j) => [k, Number(r[j]) || r[j]])))).join('\n');
    const formats: Record<string, [string, string]> = {
      'verl-jsonl': ['verl-file.jsonl', fixture('verl-file.jsonl')],
      'verl-console': ['verl-console.log', fixture('verl-console.log')],
      'wandb-csv': ['wandb-history.csv', csv],
      'wandb-json': ['wandb-history.jsonl', wandbJson],
      'sat-trainer': ['sat-trainer.log', fixture('sat-trainer.log')],
    };
    for (const [format, [name, text]] of Object.entries(formats)) {
      expect(readRunLog(text, name).format).toBe(format);
      const rng = new Rng(SEED, [8, Object.keys(formats).indexOf(format)]);
      let read = 0;
      for (let i = 0; i < 200; i++) {
        const m = mutateText(rng, text);
        const label = `${format} mutant ${i}`;
        if (judged(label, () => {
          const log = readRunLog(m, name);
          if (log.steps.some((s) => !Number.isInteger(s)) || log.columns.some((c) => c.some((v) => !Number.isFinite(v) && !Number.isNaN(v)))) throw new Error(`${label}: a step that is not whole or a metric that is not finite`);
          if (log.columns.some((c) => c.length !== log.steps.length) || log.steps.some((s, i) => i > 0 && s <= log.steps[i - 1]!)) throw new Error(`${label}: columns not one value per step, or steps not increasing`);
        }, [FormatError]) === 'ok') read++;
      }
      expect(read, format).toBeGreaterThan(20);
    }
  });

  it('generation dump mutants are read (bad lines skipped by name) or refused by name (300 mutants)', async () => {
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { readGenerations } = await import('../src/bridge/generations');
    const fixture = (n: string) => readFileSync(join(import.meta.dirname, 'fixtures/bridge/logs', n), 'utf8');
    const bases = [fixture('verl-generations/3.jsonl'), fixture('teamtr-generations/2.jsonl')];
    const rng = new Rng(SEED, [10]);
    let read = 0;
    for (let i = 0; i < 300; i++) {
      const label = `generation dump mutant ${i}`;
      const files = bases.map((b, k) => ({ name: `${k + 2}.jsonl`, text: mutateText(rng, b) }));
      if (judged(label, () => {
        const d = readGenerations(files);
        for (const r of d.rows) {
          if (!Number.isInteger(r.step) || typeof r.input !== 'string' || typeof r.output !== 'string') throw new Error(`${label}: a row without a whole step or its texts`);
          if (r.score !== null && !Number.isFinite(r.score)) throw new Error(`${label}: a score that is not finite`);
          if (r.agent !== null && !(Number.isInteger(r.agent) && r.agent >= 0 && r.agent < d.agents)) throw new Error(`${label}: an agent outside 0..${d.agents - 1}`);
        }
        if (d.steps.some((s, j) => j > 0 && s <= d.steps[j - 1]!)) throw new Error(`${label}: steps not increasing`);
        if (d.warnings.length > 21) throw new Error(`${label}: ${d.warnings.length} warnings`);
      }, [FormatError]) === 'ok') read++;
    }
    expect(read).toBeGreaterThan(20);
  });

  it('recipe YAML mutants are read or refused by name (300 mutants)', async () => {
    const { readRecipe, recipe } = await import('../src/bridge/recipe');
    const { parseConfig } = await import('../src/sat/config');
    const { presetConfig } = await import('../src/sat/presets');
    const base = parseConfig({ ...presetConfig('arith-team'), protocol: 'independent', swapAgent: -1, order: 'fixed' });
    const yaml = recipe(base).yaml!;
    const rng = new Rng(SEED, [9]);
    let read = 0;
    for (let i = 0; i < 300; i++) {
      const m = mutateText(rng, yaml);
      if (judged(`recipe mutant ${i}`, () => void readRecipe(m, base), [FormatError, ConfigError]) === 'ok') read++;
    }
    expect(read).toBeGreaterThan(20);
  });

  it('recipe YAML of known nesting (1–45 levels, 300 documents) is refused exactly past the depth cap', async () => {
    const [{ checkRecipeYaml }, { RECIPE_MAX_DEPTH }, { parseDocument }, { valueDepth, yamlOfDepth }] = await Promise.all([import('../src/bridge/recipe'), import('../src/core/limits'), import('yaml'), import('./helpers/yamlDepth')]);
    const rng = new Rng(SEED, [10]);
    const verdicts = { refused: 0, read: 0 };
    for (let i = 0; i < 300; i++) {
      const depth = 1 + rng.int(45);
      const text = yamlOfDepth(rng, depth);
      // the generator's own check: the library composes the text to a value of that depth (no deeper than 45: its recursion is safe)
      const doc = parseDocument(text);
      if (doc.errors.length > 0 || valueDepth(doc.toJS()) !== depth) throw new Error(`document ${i}: not ${depth} deep (${doc.errors[0]?.message ?? valueDepth(doc.toJS())})`);
      const message = outcome(`document ${i} (${depth} deep)`, () => checkRecipeYaml(text), [FormatError]);
      if (depth > RECIPE_MAX_DEPTH) expect(message, `document ${i} (${depth} deep)`).toMatch(/^Line \d+ of this recipe nests more than 32 levels deep/);
      else expect(message, `document ${i} (${depth} deep)`).toBe('ok');
      verdicts[message === 'ok' ? 'read' : 'refused']++;
    }
    expect(verdicts.refused).toBeGreaterThan(50);
    expect(verdicts.read).toBeGreaterThan(50);
  });
});
