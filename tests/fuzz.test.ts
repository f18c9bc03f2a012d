/**
 * Seeded fuzzing of the two readers a person can hand bytes to: the experiment file (src/app/savefile.ts, `parseExperimentFile`, and the
 * page's import path `openExperimentBytes` in src/app/boot.ts) and the model file
 * (src/model/safetensors.ts `readSafetensors`, src/model/weights.ts `loadModel`).
 *
 * Experiment files: ≥ 1,000 mutants of files exported from real runs — a climbing team with the
 * cursor inside a stage, the relay-pnp preset with its plug-and-play swap, and a two-agent
 * language team on the shipped arithmetic-S model. Mutations of the gzip layer: truncation,
 * appended bytes, bit flips in the gzip header / compressed data / trailer, a lying length; of the
 * container inside it, re-compressed so that gzip's CRC-32 is right and the container's own checks
 * must catch them: lying header lengths, tensors relabelled, reshaped, renamed, missing or extra,
 * the metadata's format and version; and — re-packed the same way — JSON edits (numbers to strings, NaN tags, huge values, deleted / added / duplicated
 * entries, deep nesting, huge strings), blobs of the wrong type or size, missing, extra or shared
 * blobs, non-finite weights, inconsistent cursors and configs. Each mutant must be either refused
 * with the module's own result (a known code, the file's fixed wording, a short message naming what
 * is wrong, never the "failed unexpectedly" catch-all) or accepted as a well-formed experiment: it
 * has the shape the stage loop writes (checked here against the unmutated run, field by field, with
 * counts and agent indices whole and in range, β and weights finite) and round-trips exactly. The
 * exported experiment objects are deep-equal before and after, and a refused import through the
 * page's path leaves the store and the session as they were.
 *
 * Model files: ≥ 300 mutants of the shipped S and M models and of tiny random models written by
 * saveModel (f32, q8, q4, and one whose w2 stays f32), plus raw safetensors mutants of a file with
 * every supported dtype. Each must load as a well-formed model (shapes as the config says, every
 * f32 weight and f16 scale finite, a round trip through saveModel) or throw FormatError with a
 * short, specific message; nothing else may escape.
 *
 * Every mutation draws from one Rng whose seed is printed (FUZZ_SEED=… reproduces a run; each
 * finding names its case). The distinct refusal messages (numbers and quoted names blanked) are
 * printed with their counts.
 *
 * Not here: the hand-written case per message (tests/savefile.test.ts, tests/model-io.test.ts).
 */
import { exactDiff } from './helpers/exactDiff';
import type { StageRecord } from '../src/sat/stage';
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { gzipSync, inflateSync } from 'fflate';
import { FormatError, SatError } from '../src/core/errors';
import { f16ToF32 } from '../src/core/f16';
import { Rng } from '../src/core/rng';
import {
  type Blob64,
  type ExperimentData,
  type ExperimentErrorCode,
  decodeContainer,
  encodeContainer,
  parseExperimentFile,
  serializeExperiment,
} from '../src/app/savefile';
import { openExperimentBytes } from '../src/app/boot';
import { Session } from '../src/app/session';
import { usePlayground } from '../src/app/store';
import { createTabularExperiment, runStages, type Experiment } from '../src/sat/experiment';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { presetConfig } from '../src/sat/presets';
import { makeCard } from '../src/model/card';
import { modelConfig, type ModelConfig } from '../src/model/config';
import { readSafetensors, writeSafetensors, type StTensor } from '../src/model/safetensors';
import { vocabSize } from '../src/model/tokenizer';
import { expectedShape, initWeights, loadModel, quantizeWeights, saveModel, weightNames, type LoadedModel } from '../src/model/weights';

// ---------------------------------------------------------------------------------------------
// The one seed.

const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : 20_260_110;
const ROOT = new Rng(SEED);
console.log(`[fuzz] seed ${SEED} (rerun with FUZZ_SEED=${SEED}; every finding names its case)`);

const EXPERIMENT_MUTANTS = 1200;
const MODEL_MUTANTS = 360;
const RAW_ST_MUTANTS = 120;
/**
 * A reader that takes longer than this on one mutant counts as a hang (an unbounded loop, a
 * quadratic blow-up on a huge field). Not a speed target — those live in bench/ — so the bound is
 * far above any honest parse on a loaded 2-core machine (the slowest mutant is printed; 25–75 ms
 * here), and a finding names the case to replay with FUZZ_SEED.
 */
const SLOW_MS = 20_000;
/** Longest refusal a person should have to read (the experiment wording adds ~100 characters). */
const MAX_MESSAGE = 900;

// ---------------------------------------------------------------------------------------------
// Shared helpers.


/** A message with its particulars blanked, so that messages of one kind count together. */
function template(msg: string): string {
  return msg
    .replace(/"(?:[^"\\]|\\.){0,80}"/g, '"…"')
    .replace(/0x[0-9a-f]+/gi, 'H')
    .replace(/-?\d+(\.\d+)?(e[-+]?\d+)?/gi, 'N')
    .slice(0, 180);
}

/** A mutation's kind without its particulars (paths, numbers, names). */
function family(kind: string): string {
  return kind
    .replace(/"[^"]*"/g, '"…"')
    .replace(/\.[\w[\]/.]+/g, ' P')
    .replace(/\d+/g, 'N')
    .replace(/ at\s*(P)?$/, '')
    .trim();
}

class Tally {
  readonly counts = new Map<string, number>();
  add(key: string): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }
  print(title: string, what = 'refusals', distinct = 'distinct messages'): void {
    const rows = [...this.counts.entries()].sort((a, b) => b[1] - a[1]);
    console.log(`[fuzz] ${title}: ${rows.reduce((s, r) => s + r[1], 0)} ${what}, ${rows.length} ${distinct}\n${rows.map(([k, c]) => `${String(c).padStart(6)}  ${k}`).join('\n')}`);
  }
}

function pick<T>(rng: Rng, xs: readonly T[]): T {
  return xs[rng.int(xs.length)]!;
}

function nested(depth: number, obj: boolean): string {
  return obj ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '['.repeat(depth) + '1' + ']'.repeat(depth);
}

/** A copy of `bytes` with `k` random single-bit flips in [from, to). */
function flipBits(bytes: Uint8Array, rng: Rng, from: number, to: number, k: number): Uint8Array {
  const out = bytes.slice();
  for (let i = 0; i < k; i++) {
    const at = from + rng.int(Math.max(1, to - from));
    out[at] = out[at]! ^ (1 << rng.int(8));
  }
  return out;
}

function setU32(bytes: Uint8Array, at: number, v: number): Uint8Array {
  const out = bytes.slice();
  new DataView(out.buffer).setUint32(at, v >>> 0, true);
  return out;
}

/** An experiment file made of edited contents: compressed again, so gzip's CRC-32 is right and the content checks must catch the edit. */
function regzip(contents: Uint8Array): Uint8Array {
  return gzipSync(contents, { mtime: 0 });
}

function time<T>(f: () => T): [T, number] {
  const t = performance.now();
  const r = f();
  return [r, performance.now() - t];
}

// =============================================================================================
// Experiment files.

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Path = (string | number)[];

interface ExpBase {
  readonly name: string;
  readonly data: ExperimentData;
  /** A deep copy taken right after the export, compared with `data` at the end. */
  readonly before: ExperimentData;
  readonly bytes: Uint8Array;
  readonly header: string;
  readonly blobs: Blob64[];
  /** The file's contents: the safetensors bytes inside the gzip. */
  readonly contents: Uint8Array;
  readonly leaves: Path[];
  readonly objects: Path[];
  readonly arrays: Path[];
  readonly n: number;
}

interface ExpMutant {
  readonly kind: string;
  readonly bytes: Uint8Array;
  /** 'refuse': accepting it is a finding. 'either': refusal or a well-formed acceptance. */
  readonly must: 'refuse' | 'either';
  /** Codes a refusal may have. */
  readonly codes?: readonly ExperimentErrorCode[];
  /** Each must occur in the refusal's message. */
  readonly mention?: readonly (string | RegExp)[];
}

const ALL_CODES: readonly ExperimentErrorCode[] = ['magic', 'text-mode', 'version', 'truncated', 'too-large', 'trailing', 'checksum', 'layout', 'json', 'format', 'config', 'agents', 'snapshot', 'stages', 'cursor'];
const CONTENT_CODES: readonly ExperimentErrorCode[] = ['json', 'format', 'config', 'agents', 'snapshot', 'stages', 'cursor'];
const PREFIX = 'This experiment file cannot be opened: ';
const SUFFIX = ' Nothing was loaded; the experiment on the page is unchanged.';
/** The module's catch-alls: a refusal that reaches one of them is an error nobody named. */
const GENERIC = [/failed unexpectedly/, /nests too deeply to read/, /\[object Object\]/];

async function exportOf(exp: Experiment, stages: StageRecord[], preset: string, agent?: number): Promise<ExperimentData> {
  const snaps = await Promise.all(exp.team.map((a) => a.snapshot()));
  const infos = await Promise.all(exp.team.map((a) => a.info()));
  return {
    config: exp.cfg,
    presetName: preset,
    createdAt: '2026-01-10T09:00:00.000Z',
    stages,
    agents: snaps.map((snapshot, i) => ({ snapshot, info: infos[i]! })),
    betas: exp.betas.slice(),
    cursor: agent === undefined ? { stage: stages.length } : { stage: stages.length + 1, agent },
  };
}

function walk(v: Json, path: Path, leaves: Path[], objects: Path[], arrays: Path[]): void {
  if (Array.isArray(v)) {
    arrays.push(path);
    v.forEach((x, i) => walk(x, [...path, i], leaves, objects, arrays));
  } else if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0]!.startsWith('$') && !keys[0]!.startsWith('$$')) {
      leaves.push(path); // a blob reference or a number tag
      return;
    }
    objects.push(path);
    for (const k of keys) walk(v[k]!, [...path, k], leaves, objects, arrays);
  } else {
    leaves.push(path);
  }
}

function makeExpBase(name: string, data: ExperimentData): ExpBase {
  const bytes = serializeExperiment(data);
  const c = decodeContainer(bytes);
  if (!c.ok) throw new Error(`${name}: ${c.error}`);
  const contents = new Uint8Array(gunzipSync(bytes));
  const leaves: Path[] = [];
  const objects: Path[] = [];
  const arrays: Path[] = [];
  walk(JSON.parse(c.value.header) as Json, [], leaves, objects, arrays);
  return { name, data, before: structuredClone(data), bytes, header: c.value.header, blobs: c.value.blobs, contents, leaves, objects, arrays, n: data.config.agents };
}

function getAt(root: Json, path: Path): Json {
  let v: Json = root;
  for (const p of path) v = (v as Record<string | number, Json>)[p]!;
  return v;
}

function setAt(root: Json, path: Path, value: Json): void {
  const parent = getAt(root, path.slice(0, -1)) as Record<string | number, Json>;
  parent[path[path.length - 1]!] = value;
}

function showPath(path: Path): string {
  return path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('');
}

/** Where in the header a path lies, for the message it should get. */
function mentionFor(path: Path): (string | RegExp)[] {
  if (path[0] === 'stages' && typeof path[1] === 'number') return [new RegExp(`stage record ${path[1] + 1}\\b|stages\\[${path[1]}\\]|cursor|stage records`)];
  if (path[0] === 'agents' && typeof path[1] === 'number') return [new RegExp(`agent ${path[1]}\\b|agents\\[${path[1]}\\]|agents|blob`)];
  return [];
}

/** Packs an edited header object and blob list with a fresh, correct checksum. */
function repack(h: Json, blobs: readonly Blob64[]): Uint8Array {
  return encodeContainer(JSON.stringify(h), blobs);
}

const HUGE_NUMBERS: readonly number[] = [1e308, -1e308, 2 ** 53, 2 ** 53 + 2, 1e21, -1, 0.5, 4294967296, 123456789.25];
const SPECIALS = ['NaN', 'Infinity', '-Infinity', '-0'];

function jsonEdit(b: ExpBase, rng: Rng): ExpMutant {
  const h = JSON.parse(b.header) as Json;
  const blobs = b.blobs.slice();
  const op = rng.int(14);
  const leaf = pick(rng, b.leaves);
  const v = getAt(h, leaf);
  const mention = mentionFor(leaf);
  const where = showPath(leaf);
  const out = (kind: string, must: 'refuse' | 'either' = 'either', m: (string | RegExp)[] = mention): ExpMutant => ({ kind: `${kind} at ${where}`, bytes: repack(h, blobs), must, codes: CONTENT_CODES, mention: m });
  switch (op) {
    case 0:
      setAt(h, leaf, typeof v === 'number' ? String(v) : typeof v === 'string' ? v.length : typeof v === 'boolean' ? String(v) : 'text');
      return out('type change (number ⇄ string, boolean → string)');
    case 1:
      setAt(h, leaf, { $num: pick(rng, SPECIALS) });
      return out('NaN / ±Infinity / −0 tag');
    case 2:
      setAt(h, leaf, pick(rng, HUGE_NUMBERS));
      return out('huge or fractional number');
    case 3:
      setAt(h, leaf, pick(rng, [null, true, {}, [], [1, 2], { x: 1 }] as Json[]));
      return out('null / boolean / object / array in place of a value');
    case 4: {
      const oPath = pick(rng, b.objects);
      const o = getAt(h, oPath) as Record<string, Json>;
      const keys = Object.keys(o);
      if (keys.length === 0) return out('no-op');
      const k = pick(rng, keys);
      delete o[k];
      return { kind: `deleted key ${showPath([...oPath, k])}`, bytes: repack(h, blobs), must: 'either', codes: CONTENT_CODES, mention: mentionFor([...oPath, k]) };
    }
    case 5: {
      const oPath = pick(rng, b.objects);
      const o = getAt(h, oPath) as Record<string, Json>;
      const k = pick(rng, ['zz_extra', '$evil', '__proto__', 'swap', 'info', 'accuracy', 'constructor', '$f64']);
      o[k] = pick(rng, [1, 'x', { q50: 'a' }, [1], null, { $f64: 0 }] as Json[]);
      return { kind: `added key "${k}" at ${showPath(oPath)}`, bytes: repack(h, blobs), must: 'either', codes: CONTENT_CODES, mention: mentionFor(oPath) };
    }
    case 6: {
      const aPath = pick(rng, b.arrays);
      const a = getAt(h, aPath) as Json[];
      if (a.length === 0) return out('no-op');
      const i = rng.int(a.length);
      const r = rng.int(3);
      if (r === 0) a.splice(i, 0, structuredClone(a[i]!));
      else if (r === 1) a.splice(i, 1);
      else {
        const j = rng.int(a.length);
        [a[i], a[j]] = [a[j]!, a[i]!];
      }
      return { kind: `${['duplicated', 'removed', 'swapped'][r]} element of ${showPath(aPath)}`, bytes: repack(h, blobs), must: 'either', codes: CONTENT_CODES, mention: mentionFor(aPath) };
    }
    case 7: {
      const depth = pick(rng, [65, 300, 5000, 200_000]);
      const target: Path = rng.int(4) === 0 ? ['format'] : leaf;
      // Splice the nested text in by hand: building it as an object would overflow JSON.stringify here.
      setAt(h, target, '@@NEST@@');
      const bytes = encodeContainer(JSON.stringify(h).replace('"@@NEST@@"', nested(depth, rng.int(2) === 0)), blobs);
      // 200,000 levels of brackets (400 kB) deflate to about 1 kB: past 32 times its size plus
      // 1 MiB, such a file may be refused as a bomb (too-large) before its JSON is read.
      const codes = depth === 200_000 ? [...CONTENT_CODES, 'too-large' as const] : CONTENT_CODES;
      return { kind: `nested ${depth} deep at ${showPath(target)}`, bytes, must: 'refuse', codes };
    }
    case 8:
      setAt(h, leaf, 'x'.repeat(pick(rng, [65, 5000, 200_000])));
      return out('huge string');
    case 9: {
      const c = h as { cursor: { stage: number; agent?: number } };
      const f = rng.int(2) === 0 ? 'stage' : 'agent';
      const was = c.cursor[f] ?? 0;
      c.cursor[f] = pick(rng, [was + 1, was - 1, 0, b.n, 1e9, -1]);
      return { kind: `cursor.${f} moved`, bytes: repack(h, blobs), must: 'either', codes: CONTENT_CODES };
    }
    case 10: {
      const c = (h as { config: Record<string, Json> }).config;
      if (rng.int(6) === 0) {
        // An unknown setting with a long name: refused quickly, in a short message.
        c['y'.repeat(pick(rng, [70, 100_000]))] = 1;
        return { kind: 'config has a long unknown key', bytes: repack(h, blobs), must: 'refuse', codes: ['config'] };
      }
      const k = pick(rng, ['agents', 'actions', 'task', 'stages', 'swapAgent', 'swapAt', 'protocol', 'model', 'lr', 'seed', 'delta', 'beta']);
      c[k] = pick(rng, [1, 2, 3, 4, 7, 0, -1, 1e6, 'relay', 'climbing', 'arithmetic', 'chain', 'L', 0.01] as Json[]);
      return { kind: `config.${k} changed`, bytes: repack(h, blobs), must: 'either', codes: CONTENT_CODES };
    }
    case 11: {
      // A blob of the wrong type, size, or missing; an extra or shared blob.
      const k = rng.int(blobs.length);
      const src = blobs[k]!;
      const r = rng.int(6);
      if (r === 0) {
        blobs[k] = rng.int(2) === 0 ? new Float32Array(src.length) : new Int32Array(src.length);
        return { kind: `blob ${k} of the wrong type`, bytes: repack(h, blobs), must: 'refuse', codes: ['format'], mention: [`blob ${k}`] };
      }
      if (r === 1) {
        const len = Math.max(0, src.length + pick(rng, [-3, -1, 1, 2, -src.length]));
        const nb = new Float64Array(len);
        nb.set(src.subarray(0, Math.min(len, src.length)));
        blobs[k] = nb;
        return { kind: `blob ${k} resized ${src.length} → ${len}`, bytes: repack(h, blobs), must: 'either', codes: CONTENT_CODES };
      }
      if (r === 2) {
        blobs.splice(k, 1);
        return { kind: `blob ${k} missing`, bytes: repack(h, blobs), must: 'refuse', codes: CONTENT_CODES };
      }
      if (r === 3) {
        blobs.push(Float64Array.from(src));
        return { kind: 'an extra blob nothing refers to', bytes: repack(h, blobs), must: 'refuse', codes: ['format'], mention: [/blob/] };
      }
      if (r === 4) {
        // Two references to one blob (the writer gives every array its own).
        const refs = b.leaves.filter((p) => {
          const x = getAt(h, p);
          return x !== null && typeof x === 'object' && !Array.isArray(x) && '$f64' in x;
        });
        const [p, q] = [pick(rng, refs), pick(rng, refs)];
        if (showPath(p) === showPath(q)) return out('no-op');
        setAt(h, q, getAt(h, p));
        return { kind: `${showPath(q)} shares the blob of ${showPath(p)}`, bytes: repack(h, blobs), must: 'refuse', codes: CONTENT_CODES };
      }
      const nb = Float64Array.from(src);
      if (nb.length === 0) return out('no-op');
      nb[rng.int(nb.length)] = pick(rng, [NaN, Infinity, -Infinity, 1e308]);
      blobs[k] = nb;
      return { kind: `a non-finite or huge value in blob ${k}`, bytes: repack(h, blobs), must: 'either', codes: CONTENT_CODES };
    }
    case 12: {
      // A random character of the header text changed, the file compressed again.
      const at = rng.int(b.header.length);
      const ch = rng.int(4) === 0 ? String.fromCharCode(32 + rng.int(95)) : String.fromCharCode(b.header.charCodeAt(at) ^ (1 << rng.int(7)));
      const text = b.header.slice(0, at) + ch + b.header.slice(at + 1);
      return { kind: 'header character changed, checksum right', bytes: encodeContainer(text, blobs), must: 'either', codes: CONTENT_CODES };
    }
    default: {
      // A number edited to another number: usually a legitimate file.
      if (typeof v !== 'number') return out('no-op');
      setAt(h, leaf, v + pick(rng, [1, -1, 0.25]));
      return out('number changed to another number');
    }
  }
}

/** True when `bytes` (a mutated file) still inflates to exactly the original contents (a flip in bits deflate ignores). */
function sameContents(bytes: Uint8Array, contents: Uint8Array): boolean {
  try {
    const got = inflateSync(bytes.subarray(10, bytes.length - 8));
    return got.length === contents.length && got.every((x, i) => x === contents[i]);
  } catch {
    return false;
  }
}

/** The safetensors header of a file's contents, and a container built from an edited one (no checks). */
function innerHeader(contents: Uint8Array): Record<string, Json> {
  const N = new DataView(contents.buffer, contents.byteOffset).getUint32(0, true);
  return JSON.parse(new TextDecoder().decode(contents.subarray(8, 8 + N))) as Record<string, Json>;
}

function innerData(contents: Uint8Array): Uint8Array {
  const N = new DataView(contents.buffer, contents.byteOffset).getUint32(0, true);
  return contents.subarray(8 + N);
}

function containerEdit(b: ExpBase, rng: Rng): ExpMutant {
  const n = b.bytes.length;
  const op = rng.int(11);
  switch (op) {
    case 0: {
      const cut = rng.int(n);
      return { kind: `truncated to ${cut} bytes`, bytes: b.bytes.slice(0, cut), must: 'refuse', codes: ['truncated'], mention: [cut === 0 ? 'empty' : `truncated at byte ${cut}`] };
    }
    case 1: {
      const extra = 1 + rng.int(64);
      const out = new Uint8Array(n + extra);
      out.set(b.bytes);
      for (let i = n; i < out.length; i++) out[i] = rng.int(256);
      return { kind: `${extra} bytes appended`, bytes: out, must: 'refuse', codes: ['trailing'], mention: [`${extra} unexpected bytes`] };
    }
    case 2: {
      // The gzip header: signature, method and flags must hold; mtime, XFL and OS mean nothing to a reader.
      const at = rng.int(10);
      const bytes = flipBits(b.bytes, rng, at, at + 1, 1);
      if (at >= 4) return { kind: `bit flip in gzip header byte ${at} (mtime, XFL, OS)`, bytes, must: 'either', codes: ALL_CODES };
      if (at === 3 && (bytes[3]! ^ b.bytes[3]!) === 1) return { kind: 'FTEXT flag flipped (a hint only)', bytes, must: 'either', codes: ALL_CODES };
      const codes: ExperimentErrorCode[] = at < 2 ? ['magic', 'text-mode'] : at === 2 ? ['magic'] : ['layout', 'truncated', 'checksum', 'trailing'];
      return { kind: `bit flip in gzip header byte ${at}`, bytes, must: 'refuse', codes };
    }
    case 3:
    case 4: {
      // Compressed data: a flip that leaves the inflated contents as they were (padding bits,
      // a stored block's redundant length) is no damage; any other is refused.
      const k = 1 + rng.int(4);
      const bytes = flipBits(b.bytes, rng, 10, n - 8, k);
      const harmless = sameContents(bytes, b.contents);
      return { kind: `${k} bit flips in the compressed data`, bytes, must: harmless ? 'either' : 'refuse', codes: ['checksum', 'truncated'], mention: [/checksum mismatch|compressed data is damaged|ends before the end of the stream|inside gzip's 8-byte trailer/] };
    }
    case 5:
      return { kind: 'bit flip in the gzip trailer', bytes: flipBits(b.bytes, rng, n - 8, n, 1), must: 'refuse', codes: ['checksum'], mention: ['checksum mismatch'] };
    case 6: {
      const v = pick(rng, [0, 1, 20, n - 1, n + 1, b.contents.length - 1, b.contents.length + 1, 0x40000001, 0xffffffff, rng.nextU32()]);
      return { kind: `gzip length field says ${v}`, bytes: setU32(b.bytes, n - 4, v), must: v === b.contents.length ? 'either' : 'refuse', codes: ['checksum'], mention: ['checksum mismatch'] };
    }
    case 7: {
      // The container's header length lies (gzip right).
      const N = new DataView(b.contents.buffer, b.contents.byteOffset).getUint32(0, true);
      const v = pick(rng, [0, 1, 7, N - 1, N + 1, N + 8, b.contents.length, 0xffffffff, rng.int(b.contents.length)]);
      if (v === N) return { kind: 'no-op', bytes: b.bytes, must: 'either' };
      return { kind: `container header length says ${v}`, bytes: regzip(setU32(b.contents, 0, v)), must: 'refuse', codes: ['layout'], mention: ['not a valid container'] };
    }
    case 8: {
      // A tensor relabelled, reshaped, renamed, dropped or added (gzip right).
      const h = innerHeader(b.contents);
      const data = innerData(b.contents);
      const names = Object.keys(h).filter((x) => x !== '__metadata__');
      const k = rng.int(names.length);
      const e = h[String(k)] as { dtype: string; shape: number[]; data_offsets: [number, number] };
      const r = rng.int(5);
      if (r === 0) {
        // Same bytes read as 32-bit values: the container is fine, the reference must catch it.
        e.dtype = pick(rng, ['F32', 'I32']);
        e.shape = [e.shape[0]! * 2];
        return { kind: `tensor ${k} relabelled as 32-bit values`, bytes: regzip(packSt(h, data)), must: 'refuse', codes: ['format'], mention: [`blob ${k}`] };
      }
      if (r === 1) {
        e.dtype = pick(rng, ['U8', 'F16', 'I16', 'BF16']);
        e.shape = [(e.data_offsets[1] - e.data_offsets[0]) / (e.dtype === 'U8' ? 1 : 2)];
        return { kind: `tensor ${k} of dtype ${e.dtype}`, bytes: regzip(packSt(h, data)), must: 'refuse', codes: ['layout'], mention: [`blob ${k}`] };
      }
      if (r === 2) {
        e.shape = pick(rng, [[1, e.shape[0]!], [e.shape[0]!, 1], [], [e.shape[0]! + 1]]);
        return { kind: `tensor ${k} reshaped to [${e.shape.join(', ')}]`, bytes: regzip(packSt(h, data)), must: 'refuse', codes: ['layout'] };
      }
      if (r === 3) {
        const to = pick(rng, ['x', '-1', '01', String(names.length), String(names.length + 5), ' 0']);
        h[to] = h[String(k)]!;
        delete h[String(k)];
        return { kind: `tensor ${k} renamed "${to}"`, bytes: regzip(packSt(h, data)), must: 'refuse', codes: ['layout', 'format'] };
      }
      const st = readSafetensors(b.contents);
      if (rng.int(2) === 0) st.tensors.set(String(names.length), { dtype: 'F64', shape: [2], data: new Float64Array(2) });
      else st.tensors.delete(String(names.length - 1));
      return { kind: 'a tensor added or dropped', bytes: regzip(writeSafetensors(st.tensors, st.metadata)), must: 'refuse', codes: ['format', 'layout'], mention: [/blob/] };
    }
    case 9: {
      // The metadata: format, version or header missing or changed (gzip right).
      const st = readSafetensors(b.contents);
      const key = pick(rng, ['format', 'version', 'header']);
      const v = pick(rng, [undefined, '', '1', '3', 'sat-playground-experiment/stage', 'x']);
      const meta = { ...st.metadata };
      if (v === undefined) delete meta[key];
      else meta[key] = v;
      const same = meta[key] === st.metadata[key];
      const codes: ExperimentErrorCode[] = key === 'format' ? ['format'] : key === 'version' ? ['version'] : ['format', 'json'];
      return { kind: `metadata "${key}" ${v === undefined ? 'missing' : `= "${v}"`}`, bytes: regzip(writeSafetensors(st.tensors, meta)), must: same ? 'either' : 'refuse', codes };
    }
    default: {
      // A file of the older format version 1: its signature, then the rest of this file.
      const out = b.bytes.slice();
      out.set([0x89, 0x53, 0x41, 0x54, 0x0d, 0x0a, 0x1a, 0x0a]);
      return { kind: 'a version 1 signature', bytes: out, must: 'refuse', codes: ['version'], mention: ['from an older version of the playground'] };
    }
  }
}

// ---- What an accepted mutant must look like -------------------------------------------------

/** Fields that are counts or agent indices wherever they occur in a record (whole, ≥ 0). */
const COUNT_FIELDS = new Set(['stage', 'position', 'agent', 'backtracks', 'units', 'episodes', 'turns', 'parameters']);
const AGENT_FIELDS = new Set(['agent']);
/**
 * Fields a record may lack: a swap happens in some stages only; J's accuracy is a language task's;
 * the team-level certificate's scope and team block, its refusal, the held verdict, its estimator
 * and a sequential record's episodes per unit came later (older files open without them,
 * docs/certificate.md).
 */
const OPTIONAL_FIELDS = new Set(['swap', 'accuracy', 'scope', 'team', 'refused', 'held', 'estimator', 'unitEpisodes']);

function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (ArrayBuffer.isView(v)) return v.constructor.name;
  return typeof v;
}

/**
 * Problems of an accepted value `a` measured against what the real run wrote (`ref`): every field
 * of `ref` is there with the same kind, counts and agent indices are whole and in range, a metrics
 * record holds numbers or lists of numbers, lists of records keep their length (a finished stage
 * has one step per agent; a certificate's looks, one a round, excepted), and an optional `swap`
 * or `info` present only in `a` has its schema.
 */
function conform(a: unknown, ref: unknown, path: string, n: number, problems: string[], refSwap: unknown): void {
  if (problems.length > 5) return;
  const key = path.slice(path.lastIndexOf('.') + 1);
  if (key === 'metrics') {
    if (kindOf(a) !== 'object') return void problems.push(`${path} is ${kindOf(a)}`);
    for (const [k, v] of Object.entries(a as object)) {
      if (typeof v !== 'number' && !(Array.isArray(v) && v.every((x) => typeof x === 'number'))) problems.push(`${path}.${k} is ${kindOf(v)}`);
    }
    return;
  }
  if (kindOf(a) !== kindOf(ref)) return void problems.push(`${path} is ${kindOf(a)}, the run wrote ${kindOf(ref)}`);
  if (typeof ref === 'number') {
    const x = a as number;
    if (COUNT_FIELDS.has(key) && !(Number.isSafeInteger(x) && x >= 0)) problems.push(`${path} = ${x} is not a count`);
    if (AGENT_FIELDS.has(key) && !(x < n)) problems.push(`${path} = ${x} is not an agent`);
    return;
  }
  if (Array.isArray(ref)) {
    const arr = a as unknown[];
    const isOrder = key === 'order';
    // A sequential certificate's looks are as many as the rounds it drew: the file's own ties
    // (savefile.ts sequentialProblem) check them, not the reference run's count.
    if ((typeof ref[0] === 'object' && key !== 'looks') || isOrder || key === 'range' || key === 'lambdaHist') {
      if (arr.length !== ref.length) return void problems.push(`${path} has ${arr.length} entries, the run wrote ${ref.length}`);
    }
    arr.forEach((x, i) => conform(x, ref[Math.min(i, ref.length - 1)], `${path}[${i}]`, n, problems, refSwap));
    if (isOrder) {
      const s = [...(arr as number[])].sort((p, q) => p - q);
      if (!s.every((x, i) => x === i)) problems.push(`${path} = [${arr.join(', ')}] is not a permutation of the agents`);
    }
    return;
  }
  if (ArrayBuffer.isView(ref)) return;
  if (ref !== null && typeof ref === 'object') {
    const o = a as Record<string, unknown>;
    const r = ref as Record<string, unknown>;
    for (const k of Object.keys(r)) {
      if (r[k] === undefined) continue;
      if (!(k in o) && OPTIONAL_FIELDS.has(k)) continue;
      if (!(k in o)) {
        problems.push(`${path}.${k} is missing`);
        continue;
      }
      conform(o[k], r[k], `${path}.${k}`, n, problems, refSwap);
    }
    if ('swap' in o && !('swap' in r) && path.match(/\.stages\[\d+\]$/)) {
      if (refSwap === undefined) problems.push(`${path}.swap appeared`);
      else conform(o.swap, refSwap, `${path}.swap`, n, problems, refSwap);
    }
    if (path.endsWith('.evaluation') && 'accuracy' in o && !('accuracy' in r) && typeof o.accuracy !== 'number') problems.push(`${path}.accuracy is ${kindOf(o.accuracy)}`);
  }
}

function acceptedProblems(v: ExperimentData, b: ExpBase, refSwap: unknown): string[] {
  const problems: string[] = [];
  conform(v.stages, b.data.stages, '$.stages', b.n, problems, refSwap);
  // info is optional (the page omits it for an agent it has not built yet); present, it has its fields.
  v.agents.forEach((x, i) => {
    if (x.info !== undefined) conform(x.info, b.data.agents[i]!.info, `$.agents[${i}].info`, b.n, problems, refSwap);
  });
  if (problems.length > 0) return problems; // the checks below read the fields checked above
  const a = v.cursor.agent;
  if (v.cursor.stage !== v.stages.length + (a === undefined ? 0 : 1)) problems.push('cursor.stage ≠ the number of stages (+ 1 with an agent)');
  if (a !== undefined && !(a >= 0 && a < v.config.agents && Number.isInteger(a))) problems.push('cursor.agent out of range');
  if (v.cursor.stage > v.config.stages) problems.push('cursor past the last stage');
  if (v.agents.length !== v.config.agents || v.betas.length !== v.config.agents) problems.push('agent count ≠ config.agents');
  v.betas.forEach((x, i) => {
    if (!(Number.isFinite(x) && x >= 0 && x <= 1e4)) problems.push(`betas[${i}] = ${x}`);
  });
  v.agents.forEach((a, i) => {
    const { params, optim } = a.snapshot;
    if (optim.length !== 1 + 2 * params.length) problems.push(`agent ${i} optimizer size`);
    if (a.info && a.info.parameters !== params.length) problems.push(`agent ${i} info.parameters`);
    if (!params.every(Number.isFinite)) problems.push(`agent ${i} has a non-finite parameter`);
    if (!optim.every(Number.isFinite)) problems.push(`agent ${i} has a non-finite optimizer value`);
  });
  v.stages.forEach((s, i) => {
    s.steps.forEach((st, k) => {
      if (st.agent !== s.order[k]) problems.push(`stages[${i}].steps[${k}].agent = ${st.agent} but order[${k}] = ${s.order[k]}`);
      if (st.cert.agent !== st.agent) problems.push(`stages[${i}].steps[${k}].cert.agent ≠ agent`);
    });
  });
  // A value that parses must also save and parse again to itself.
  try {
    const again = parseExperimentFile(serializeExperiment(v));
    if (!again.ok) problems.push(`re-export refused: ${again.error}`);
    else {
      const d = exactDiff(again.value, v);
      if (d) problems.push(`re-export differs: ${d}`);
    }
  } catch (e) {
    problems.push(`re-export threw ${String(e)}`);
  }
  return problems;
}

function checkRefusal(r: { code: string; error: string }, m: { codes?: readonly string[]; mention?: readonly (string | RegExp)[] }): string[] {
  const p: string[] = [];
  if (!(ALL_CODES as readonly string[]).includes(r.code)) p.push(`unknown code ${r.code}`);
  if (!r.error.startsWith(PREFIX) || !r.error.endsWith(SUFFIX)) p.push('not the file wording');
  for (const g of GENERIC) if (g.test(r.error)) p.push(`generic message ${g}`);
  if (r.error.length > MAX_MESSAGE) p.push(`message of ${r.error.length} characters`);
  if (r.error.length - PREFIX.length - SUFFIX.length < 20) p.push('message too short to name anything');
  if (m.codes && !m.codes.includes(r.code)) p.push(`code ${r.code}, expected one of ${m.codes.join('/')}`);
  for (const f of m.mention ?? []) if (!(typeof f === 'string' ? r.error.includes(f) : f.test(r.error))) p.push(`message does not mention ${String(f)}`);
  return p;
}

describe('fuzz: experiment files', () => {
  it(`refuses every damaged file with its own message, accepts only well-formed ones (${EXPERIMENT_MUTANTS} mutants)`, async () => {
    // Base files from real runs.
    const climb = createTabularExperiment(presetConfig('climbing', { stages: 6, batch: 8, seed: 11 }));
    const climbStages = await runStages(climb, 3);
    const pnp = createTabularExperiment(presetConfig('relay-pnp', { stages: 5, swapAt: 2, batch: 8, seed: 12 }));
    const pnpStages = await runStages(pnp, 3);
    const lm = await createLlmExperiment(
      presetConfig('arith-team', { agents: 2, batch: 2, group: 2, evalEpisodes: 8, stages: 3, lora: 2, epochs: 1, seed: 13 }),
      async (name) => new Uint8Array(readFileSync(`public/models/${name}.safetensors`)),
    );
    const lmStages = await runStages(lm, 1);
    const bases = [
      makeExpBase('climbing', await exportOf(climb, climbStages, 'climbing', 1)),
      makeExpBase('relay-pnp', await exportOf(pnp, pnpStages, 'relay-pnp')),
      makeExpBase('arith-team', await exportOf(lm, lmStages, 'arith-team', 1)),
    ];
    const refSwap = bases[1]!.data.stages[1]!.swap;
    expect(refSwap, 'the relay-pnp base has its swap in stage 2').toBeDefined();
    for (const b of bases) {
      const r = parseExperimentFile(b.bytes);
      if (!r.ok) throw new Error(`${b.name}: ${r.error}`);
      expect(acceptedProblems(r.value, b, refSwap), b.name).toEqual([]);
    }

    // The page's import path: a store with an experiment on it, and no session.
    usePlayground.setState({ preset: 'relay-pnp', stages: bases[1]!.data.stages, config: bases[1]!.data.config, status: 'ready', error: null });
    const storeBefore = { ...usePlayground.getState() };
    const session = new Session(usePlayground);
    const sessionBefore = session.sessionState();

    const tally = new Tally();
    const findings: string[] = [];
    const kinds = new Tally();
    let accepted = 0;
    let refused = 0;
    let imports = 0;
    let slowest = 0;
    for (let k = 0; k < EXPERIMENT_MUTANTS; k++) {
      const b = bases[k % bases.length]!;
      const rng = ROOT.fork(1, k);
      const id = `seed ${SEED} experiment case ${k} (${b.name})`;
      let m: ExpMutant;
      try {
        m = rng.int(2) === 0 ? containerEdit(b, rng) : jsonEdit(b, rng);
      } catch (e) {
        throw new Error(`${id}: building the mutant failed: ${String(e)}`);
      }
      kinds.add(family(m.kind));
      let r: ReturnType<typeof parseExperimentFile>;
      let ms: number;
      try {
        [r, ms] = time(() => parseExperimentFile(m.bytes));
      } catch (e) {
        findings.push(`${id}, ${m.kind}: parseExperimentFile threw ${e instanceof Error ? `${e.name}: ${e.message.slice(0, 200)}` : String(e)}`);
        continue;
      }
      slowest = Math.max(slowest, ms);
      if (ms > SLOW_MS) findings.push(`${id}, ${m.kind}: took ${ms.toFixed(0)} ms`);
      if (r.ok) {
        accepted++;
        if (m.must === 'refuse') findings.push(`${id}, ${m.kind}: accepted, but it must be refused`);
        else for (const p of acceptedProblems(r.value, b, refSwap)) findings.push(`${id}, ${m.kind}: accepted a malformed file: ${p}`);
        continue;
      }
      refused++;
      tally.add(`${r.code.padEnd(9)} ${template(r.error.slice(PREFIX.length, r.error.length - SUFFIX.length))}`);
      for (const p of checkRefusal(r, m)) findings.push(`${id}, ${m.kind}: ${p}: ${r.error.slice(0, 300)}`);
      if (k % 8 === 0) {
        // The page's import of the same bytes: refused, said so, nothing else touched.
        imports++;
        const ok = await openExperimentBytes(session, m.bytes, 'fuzz.satexp');
        const s = usePlayground.getState();
        if (ok) findings.push(`${id}, ${m.kind}: the page imported a file parseExperimentFile refused`);
        if (!s.error?.includes(r.error)) findings.push(`${id}, ${m.kind}: the page's banner does not carry the reason`);
        for (const key of Object.keys(storeBefore) as (keyof typeof storeBefore)[]) {
          if (key !== 'error' && s[key] !== storeBefore[key]) findings.push(`${id}, ${m.kind}: a refused import changed the store's "${String(key)}"`);
        }
        if (session.sessionState() !== sessionBefore) findings.push(`${id}, ${m.kind}: a refused import changed the session`);
        usePlayground.setState({ error: null });
      }
    }

    // Decoding is pure: the exported experiments are as they were, and so are their bytes.
    for (const b of bases) {
      expect(exactDiff(b.data, b.before), `${b.name} changed while fuzzing`).toBeNull();
      expect(serializeExperiment(b.data)).toEqual(b.bytes);
    }
    kinds.print('experiment mutations by kind', 'mutants', 'kinds');
    tally.print('experiment refusals by message');
    console.log(`[fuzz] experiments: ${EXPERIMENT_MUTANTS} mutants, ${refused} refused, ${accepted} accepted well-formed, ${imports} refused imports through the page, slowest ${slowest.toFixed(1)} ms`);
    if (findings.length) console.log(`[fuzz] ${findings.length} findings:\n${findings.slice(0, 200).join('\n')}`);
    expect(findings.slice(0, 20)).toEqual([]);
    expect(refused + accepted).toBe(EXPERIMENT_MUTANTS);
    expect(tally.counts.size, 'distinct refusal messages').toBeGreaterThanOrEqual(25);
  });
});

// =============================================================================================
// Model files.

interface ModelBase {
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly header: Record<string, Json>;
  readonly data: Uint8Array;
  readonly tensors: string[];
}

function splitSt(bytes: Uint8Array): { header: Record<string, Json>; data: Uint8Array } {
  const N = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + N))) as Record<string, Json>;
  return { header, data: bytes.slice(8 + N) };
}

/** A safetensors file from a header (object or text) and a data section, no checks. */
function packSt(header: Record<string, Json> | string, data: Uint8Array): Uint8Array {
  const text = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + text.length + data.length);
  new DataView(out.buffer).setUint32(0, text.length, true);
  out.set(text, 8);
  out.set(data, 8 + text.length);
  return out;
}

function makeModelBase(name: string, bytes: Uint8Array): ModelBase {
  const { header, data } = splitSt(bytes);
  return { name, bytes, header, data, tensors: Object.keys(header).filter((k) => k !== '__metadata__') };
}

interface ModelMutant {
  readonly kind: string;
  readonly bytes: Uint8Array;
  readonly must: 'refuse' | 'either';
  readonly mention?: readonly (string | RegExp)[];
}

interface Entry {
  dtype: Json;
  shape: Json;
  data_offsets: Json;
}

function tensorEntry(h: Record<string, Json>, name: string): Entry {
  return h[name] as unknown as Entry;
}

function modelMutant(b: ModelBase, rng: Rng): ModelMutant {
  const n = b.bytes.length;
  const N = n - b.data.length - 8;
  const h = structuredClone(b.header);
  const name = pick(rng, b.tensors);
  const e = tensorEntry(h, name);
  const base = name.replace(/\.(q|scales)$/, '');
  const named = [name, base];
  const mentionName = [new RegExp(named.map((x) => `"${x.replace(/[.]/g, '\\.')}`).join('|'))];
  const meta = h.__metadata__ as Record<string, Json>;
  const op = rng.int(16);
  switch (op) {
    case 0: {
      const cut = rng.int(n);
      return { kind: `truncated to ${cut} bytes`, bytes: b.bytes.slice(0, cut), must: 'refuse', mention: [/truncated|only \d+ bytes?|runs past the end/] };
    }
    case 1: {
      const extra = 1 + rng.int(64);
      const out = new Uint8Array(n + extra);
      out.set(b.bytes);
      return { kind: `${extra} bytes appended`, bytes: out, must: 'refuse', mention: [`${extra} unexpected bytes`] };
    }
    case 2:
      return { kind: 'bit flip in the header length', bytes: flipBits(b.bytes, rng, 0, 8, 1), must: 'either' };
    case 3:
      return { kind: 'bit flips in the header JSON', bytes: flipBits(b.bytes, rng, 8, 8 + N, 1 + rng.int(3)), must: 'either' };
    case 4:
      return { kind: 'bit flips in the tensor data', bytes: flipBits(b.bytes, rng, 8 + N, n, 1 + rng.int(8)), must: 'either' };
    case 5: {
      const v = pick(rng, [0, 1, 2, N - 1, N + 1, N + 8, n, 100_000_001, 2 ** 40, rng.int(n)]);
      const out = b.bytes.slice();
      const dv = new DataView(out.buffer);
      dv.setUint32(0, v % 2 ** 32, true);
      dv.setUint32(4, Math.floor(v / 2 ** 32), true);
      return { kind: `header length says ${v}`, bytes: out, must: v === N ? 'either' : 'refuse' };
    }
    case 6: {
      // Lying offsets.
      const [b0, e0] = e.data_offsets as [number, number];
      const r = rng.int(5);
      if (r === 0) e.data_offsets = [b0 + 4, e0 + 4];
      else if (r === 1) e.data_offsets = [b0, e0 + pick(rng, [1, -1, 1e6, 2 ** 53])];
      else if (r === 2) e.data_offsets = pick(rng, [[e0, b0], [-1, e0], [b0], [b0, e0, 0], 'x', [b0 + 0.5, e0], null, [String(b0), e0]] as Json[]);
      else if (r === 3) {
        if (b0 === 0) return { kind: 'no-op', bytes: b.bytes, must: 'either' };
        e.data_offsets = [0, e0 - b0];
      }
      else {
        // Swap with a tensor of the same byte size: a legitimately loadable (if scrambled) file.
        const other = b.tensors.find((t) => {
          const [x, y] = tensorEntry(h, t).data_offsets as [number, number];
          return t !== name && y - x === e0 - b0;
        });
        if (!other) return { kind: 'no-op', bytes: b.bytes, must: 'either' };
        const o = tensorEntry(h, other);
        [e.data_offsets, o.data_offsets] = [o.data_offsets, e.data_offsets];
        return { kind: `offsets of "${name}" and "${other}" swapped`, bytes: packSt(h, b.data), must: 'either' };
      }
      return { kind: `offsets of "${name}" lie (${r})`, bytes: packSt(h, b.data), must: 'refuse', mention: [/"[^"]*"|overlap|belong to no tensor|unexpected bytes/] };
    }
    case 7: {
      const d = pick(rng, ['F32', 'F16', 'BF16', 'I32', 'U32', 'I8', 'U8', 'I16', 'U16', 'F64', 'BOOL', 'I64', 'F8_E4M3', 'f32', 'Q4', '', 7, null, ['F32']] as Json[]);
      if (d === e.dtype) return { kind: 'no-op', bytes: b.bytes, must: 'either' };
      e.dtype = d;
      return { kind: `dtype of "${name}" → ${JSON.stringify(d)}`, bytes: packSt(h, b.data), must: 'refuse', mention: mentionName };
    }
    case 8: {
      const s = e.shape as number[];
      const r = rng.int(5);
      if (r === 0 && s.length > 0) e.shape = s.map((x, i) => (i === s.length - 1 ? x + 1 : x));
      else if (r === 1) {
        const [b0, e0] = e.data_offsets as [number, number];
        void b0;
        void e0;
        e.shape = [s.reduce((p, q) => p * q, 1)]; // flattened: same bytes, wrong shape
        if (s.length === 1) e.shape = [1, s[0]!];
      } else if (r === 2) {
        if (s.length < 2 || s[0] === s[1]) return { kind: 'no-op', bytes: b.bytes, must: 'either' };
        e.shape = [...s].reverse(); // transposed
      } else if (r === 3) e.shape = pick(rng, [[-1, 2], [1.5], ['32'], [null], {}, 'x', [2 ** 53, 2 ** 53], [[32]]] as Json[]);
      else e.shape = new Array(pick(rng, [40, 20_000])).fill(1) as Json;
      return { kind: `shape of "${name}" wrong (${r})`, bytes: packSt(h, b.data), must: 'refuse', mention: mentionName };
    }
    case 9: {
      // A duplicated tensor under another name, its bytes appended.
      const [b0, e0] = e.data_offsets as [number, number];
      const dup = pick(rng, [`${name}_copy`, 'layers.9.wq', `${base}.q`, `${base}`, 'tok_emb.scales', '__proto__', 'x'.repeat(5000)]);
      if (dup in h) return { kind: 'no-op', bytes: b.bytes, must: 'either' };
      h[dup] = { dtype: e.dtype, shape: e.shape, data_offsets: [b.data.length, b.data.length + (e0 - b0)] };
      const data = new Uint8Array(b.data.length + (e0 - b0));
      data.set(b.data);
      data.set(b.data.subarray(b0, e0), b.data.length);
      return { kind: `"${name}" duplicated as "${dup.slice(0, 30)}"`, bytes: packSt(h, data), must: 'refuse' };
    }
    case 10: {
      // A duplicated JSON key: the later one wins, pointing elsewhere.
      const text = JSON.stringify(h);
      const other = pick(rng, b.tensors);
      const dupText = text.slice(0, -1) + `,${JSON.stringify(name)}:${JSON.stringify(h[other])}}`;
      return { kind: `key "${name}" given twice`, bytes: packSt(dupText, b.data), must: other === name ? 'either' : 'refuse' };
    }
    case 11: {
      // A missing tensor, with or without its bytes.
      if (rng.int(2) === 0) {
        delete h[name];
        return { kind: `entry "${name}" missing, bytes kept`, bytes: packSt(h, b.data), must: 'refuse' };
      }
      const st = readSafetensors(b.bytes);
      st.tensors.delete(name);
      return { kind: `tensor "${name}" removed`, bytes: writeSafetensors(st.tensors, st.metadata), must: 'refuse', mention: [base] };
    }
    case 12: {
      // Metadata: missing, wrong type, wrong values.
      const key = pick(rng, ['format', 'version', 'quant', 'config', 'card']);
      const was = meta?.[key];
      const r = rng.int(4);
      if (r === 0) delete meta[key];
      else if (r === 1) meta[key] = pick(rng, [1, null, true, ['x'], { a: 'b' }] as Json[]);
      else if (r === 2) meta[key] = pick(rng, ['', 'x', '2', 'q3', 'f16', 'sat-playground ', '{}', '[]', 'null', '1']);
      else {
        const other = pick(rng, [{ a: 1 }, [], 'x', 7, null] as Json[]);
        h.__metadata__ = other;
        return { kind: `__metadata__ is ${JSON.stringify(other)}`, bytes: packSt(h, b.data), must: 'refuse' };
      }
      if (meta[key] === was) return { kind: 'no-op', bytes: b.bytes, must: 'either' };
      return { kind: `metadata "${key}" ${['missing', 'not a string', 'a wrong value'][r]}`, bytes: packSt(h, b.data), must: 'refuse', mention: [key === 'format' ? /format|SAT Playground model/ : key] };
    }
    case 13: {
      // The config or card JSON edited: numbers to strings, huge values, deep nesting, long text.
      const key = pick(rng, ['config', 'card']);
      if (typeof meta?.[key] !== 'string') return { kind: 'no-op', bytes: b.bytes, must: 'either' };
      const obj = JSON.parse(meta[key] as string) as Record<string, Json>;
      const field = pick(rng, Object.keys(obj));
      const r = rng.int(6);
      let text: string;
      const v = obj[field];
      if (r === 0) obj[field] = typeof v === 'string' ? v.length : typeof v === 'object' ? JSON.stringify(v) : String(v);
      else if (r === 1) obj[field] = pick(rng, [1e308, -1, 0.5, 2 ** 53 + 2, 1e6]);
      else if (r === 2) obj[field] = 'x'.repeat(pick(rng, [100, 100_000]));
      else if (r === 3) obj['x'.repeat(pick(rng, [10, 100_000]))] = 1;
      else if (r === 4) delete obj[field];
      if (r === 5) {
        obj[field] = '@@NEST@@';
        text = JSON.stringify(obj).replace('"@@NEST@@"', nested(pick(rng, [100, 10_000, 200_000]), rng.int(2) === 0));
      } else text = JSON.stringify(obj);
      meta[key] = text;
      // A card number changed to another number, or a long name, can be a legitimate card.
      const legit = key === 'card' && (r === 1 || r === 2 || (r === 4 && field === 'pretrainWorkers'));
      return { kind: `metadata ${key}.${field.slice(0, 20)} edited (${r})`, bytes: packSt(h, b.data), must: legit ? 'either' : 'refuse', mention: [/model card|config|model file/] };
    }
    case 14: {
      // The header is not an object of tensors, or is nested deep.
      const r = rng.int(4);
      if (r === 0) return { kind: 'header is an array', bytes: packSt('[1,2,3]', b.data), must: 'refuse' };
      if (r === 1) return { kind: 'header is deeply nested', bytes: packSt(`{"t":${nested(pick(rng, [100, 100_000]), rng.int(2) === 0)}}`, b.data), must: 'refuse' };
      if (r === 2) {
        e.shape = '@@NEST@@';
        return { kind: `shape of "${name}" deeply nested`, bytes: packSt(JSON.stringify(h).replace('"@@NEST@@"', nested(pick(rng, [100, 100_000]), false)), b.data), must: 'refuse', mention: mentionName };
      }
      (e as unknown as Record<string, Json>)['x'.repeat(pick(rng, [5, 50_000]))] = 1;
      return { kind: `entry "${name}" has an unknown field`, bytes: packSt(h, b.data), must: 'refuse', mention: mentionName };
    }
    default: {
      // Random bytes overwritten anywhere.
      const out = b.bytes.slice();
      for (let i = 0; i < 1 + rng.int(6); i++) out[rng.int(n)] = rng.int(256);
      return { kind: 'random bytes overwritten', bytes: out, must: 'either' };
    }
  }
}

function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Problems of a model that loaded, checked here rather than by the module's own checker. */
function modelProblems(m: LoadedModel): string[] {
  const p: string[] = [];
  const names = weightNames(m.cfg);
  if ([...m.weights.keys()].join() !== names.join()) p.push('tensor names differ from the config');
  if (exactDiff(m.card.config, m.cfg)) p.push("card's config differs");
  let quant = 'f32';
  for (const name of names) {
    const t = m.weights.get(name);
    if (!t) continue;
    const want = expectedShape(m.cfg, name);
    if (t.shape.join() !== want.join() || !t.shape.every((s) => Number.isSafeInteger(s) && s > 0)) p.push(`${name} shape [${t.shape.join(', ')}]`);
    const count = numel(want);
    if (t.dtype === 'f32') {
      if (!(t.data instanceof Float32Array) || t.data.length !== count) p.push(`${name} data length`);
      else if (!t.data.every(Number.isFinite)) p.push(`${name} has a non-finite weight`);
    } else {
      quant = t.dtype;
      const qlen = t.dtype === 'q8' ? count : count / 2;
      if (t.q.length !== qlen || t.scales.length !== count / 32) p.push(`${name} code or scale count`);
      for (let i = 0; i < t.scales.length; i++) {
        if (!Number.isFinite(f16ToF32(t.scales[i]!))) {
          p.push(`${name} scale ${i} is not finite`);
          break;
        }
      }
    }
  }
  if (m.card.quant !== quant && !(quant === 'f32' && m.card.quant !== 'f32')) p.push(`card quant ${m.card.quant} but the weights are ${quant}`);
  try {
    const again = loadModel(saveModel(m.cfg, m.weights, m.card));
    const d = exactDiff({ cfg: again.cfg, card: again.card, weights: again.weights }, { cfg: m.cfg, card: m.card, weights: m.weights });
    if (d) p.push(`round trip differs: ${d}`);
  } catch (e) {
    p.push(`round trip threw ${String(e).slice(0, 200)}`);
  }
  return p;
}

function checkModelError(e: unknown, m: { mention?: readonly (string | RegExp)[] }): string[] {
  if (!(e instanceof FormatError) || !(e instanceof SatError) || e.code !== 'format') {
    return [`threw ${e instanceof Error ? `${e.name}: ${e.message.slice(0, 200)}` : String(e)} instead of a FormatError`];
  }
  const p: string[] = [];
  if (e.message.length > MAX_MESSAGE) p.push(`message of ${e.message.length} characters: ${e.message.slice(0, 120)}…`);
  if (e.message.length < 30) p.push(`message too short: ${e.message}`);
  for (const g of GENERIC) if (g.test(e.message)) p.push(`generic message ${g}: ${e.message.slice(0, 200)}`);
  for (const f of m.mention ?? []) if (!(typeof f === 'string' ? e.message.includes(f) : f.test(e.message))) p.push(`message does not mention ${String(f)}: ${e.message.slice(0, 200)}`);
  return p;
}

const TINY: ModelConfig = modelConfig({ vocab: vocabSize, d: 32, layers: 2, heads: 4, hidden: 64, maxSeq: 32 });
const ODD: ModelConfig = modelConfig({ vocab: vocabSize, d: 32, layers: 1, heads: 2, hidden: 40, maxSeq: 16 });

function tinyModel(cfg: ModelConfig, quant: 'f32' | 'q8' | 'q4', seed: number): Uint8Array {
  const w = quantizeWeights(cfg, initWeights(cfg, new Rng(seed)), quant);
  const card = makeCard(cfg, { name: `fuzz-${quant}`, task: 'arithmetic', dataSeed: seed, heldOutAccuracy: 0.5, pretrainSeconds: 1, quant, created: '2026-01-10T09:00:00.000Z' });
  return saveModel(cfg, w, card);
}

describe('fuzz: model files', () => {
  it(`loads every mutant correctly or refuses it with a specific FormatError (${MODEL_MUTANTS} model mutants)`, () => {
    const shipped = ['arithmetic-S', 'countdown-S', 'arithmetic-M', 'countdown-M'];
    const bases = [
      ...shipped.map((s) => makeModelBase(s, new Uint8Array(readFileSync(`public/models/${s}.safetensors`)))),
      makeModelBase('tiny f32', tinyModel(TINY, 'f32', 1)),
      makeModelBase('tiny q8', tinyModel(TINY, 'q8', 2)),
      makeModelBase('tiny q4', tinyModel(TINY, 'q4', 3)),
      makeModelBase('odd q4 (w2 f32)', tinyModel(ODD, 'q4', 4)),
    ];
    const originals = bases.map((b) => b.bytes.slice());
    for (const b of bases) expect(modelProblems(loadModel(b.bytes)), b.name).toEqual([]);

    const tally = new Tally();
    const kinds = new Tally();
    const findings: string[] = [];
    let accepted = 0;
    let refused = 0;
    let slowest = 0;
    for (let k = 0; k < MODEL_MUTANTS; k++) {
      const b = bases[k % bases.length]!;
      const rng = ROOT.fork(2, k);
      const id = `seed ${SEED} model case ${k} (${b.name})`;
      const m = modelMutant(b, rng);
      kinds.add(family(m.kind));
      let loaded: LoadedModel | undefined;
      let err: unknown;
      const t = performance.now();
      try {
        loaded = loadModel(m.bytes);
      } catch (e) {
        err = e;
      }
      const ms = performance.now() - t;
      slowest = Math.max(slowest, ms);
      if (ms > SLOW_MS) findings.push(`${id}, ${m.kind}: took ${ms.toFixed(0)} ms`);
      if (loaded) {
        accepted++;
        if (m.must === 'refuse') findings.push(`${id}, ${m.kind}: loaded, but it must be refused`);
        for (const p of modelProblems(loaded)) findings.push(`${id}, ${m.kind}: loaded a malformed model: ${p}`);
        continue;
      }
      refused++;
      const p = checkModelError(err, m);
      for (const x of p) findings.push(`${id}, ${m.kind}: ${x}`);
      if (err instanceof Error) tally.add(template(err.message));
    }
    bases.forEach((b, i) => expect(b.bytes, `${b.name} changed while fuzzing`).toEqual(originals[i]));
    kinds.print('model mutations by kind', 'mutants', 'kinds');
    tally.print('model refusals by message');
    console.log(`[fuzz] models: ${MODEL_MUTANTS} mutants, ${refused} refused, ${accepted} loaded well-formed, slowest ${slowest.toFixed(1)} ms`);
    if (findings.length) console.log(`[fuzz] ${findings.length} findings:\n${findings.slice(0, 200).join('\n')}`);
    expect(findings.slice(0, 20)).toEqual([]);
    expect(tally.counts.size, 'distinct refusal messages').toBeGreaterThanOrEqual(25);
  });

  it(`reads every raw safetensors mutant correctly or refuses it with a FormatError (${RAW_ST_MUTANTS} mutants)`, () => {
    const rng0 = ROOT.fork(3);
    const mk = <T extends StTensor['data']>(make: (n: number) => T, n: number, fill: (i: number) => number): T => {
      const a = make(n);
      for (let i = 0; i < n; i++) a[i] = fill(i);
      return a;
    };
    const tensors = new Map<string, StTensor>([
      ['f64', { dtype: 'F64', shape: [3, 2], data: mk((n) => new Float64Array(n), 6, (i) => i * 1.5) }],
      ['f32', { dtype: 'F32', shape: [4], data: mk((n) => new Float32Array(n), 4, () => rng0.normal()) }],
      ['f16', { dtype: 'F16', shape: [2, 2], data: mk((n) => new Uint16Array(n), 4, (i) => 0x3c00 + i) }],
      ['bf16', { dtype: 'BF16', shape: [3], data: mk((n) => new Uint16Array(n), 3, (i) => 0x3f80 + i) }],
      ['i32', { dtype: 'I32', shape: [2], data: Int32Array.of(-5, 7) }],
      ['u32', { dtype: 'U32', shape: [1], data: Uint32Array.of(0xdeadbeef) }],
      ['i16', { dtype: 'I16', shape: [3], data: Int16Array.of(-1, 2, -3) }],
      ['u16', { dtype: 'U16', shape: [2], data: Uint16Array.of(1, 65535) }],
      ['i8', { dtype: 'I8', shape: [5], data: Int8Array.of(-128, -1, 0, 1, 127) }],
      ['u8', { dtype: 'U8', shape: [0, 4], data: new Uint8Array(0) }],
      ['scalar', { dtype: 'U8', shape: [], data: Uint8Array.of(9) }],
    ]);
    const base = makeModelBase('all dtypes', writeSafetensors(tensors, { note: 'fuzz', empty: '' }));
    const SIZES: Record<string, number> = { F64: 8, F32: 4, F16: 2, BF16: 2, I32: 4, U32: 4, I16: 2, U16: 2, I8: 1, U8: 1 };
    const tally = new Tally();
    const findings: string[] = [];
    let accepted = 0;
    for (let k = 0; k < RAW_ST_MUTANTS; k++) {
      const rng = ROOT.fork(4, k);
      const id = `seed ${SEED} safetensors case ${k}`;
      // A plain file has no model scheme: any change that keeps it valid safetensors may be read.
      const m0 = modelMutant(base, rng);
      const m: ModelMutant = { ...m0, must: 'either', mention: /^truncated|appended/.test(m0.kind) ? m0.mention : [] };
      try {
        const st = readSafetensors(m.bytes);
        accepted++;
        let total = 0;
        for (const [name, t] of st.tensors) {
          const size = SIZES[t.dtype];
          if (size === undefined) findings.push(`${id}, ${m.kind}: "${name}" has dtype ${t.dtype}`);
          else if (t.data.length !== numel(t.shape) || t.data.byteLength !== numel(t.shape) * size) findings.push(`${id}, ${m.kind}: "${name}" data does not match its shape`);
          total += t.data.byteLength;
        }
        const N = new DataView(m.bytes.buffer).getUint32(0, true);
        if (total !== m.bytes.length - 8 - N) findings.push(`${id}, ${m.kind}: tensors do not tile the data section`);
        if (!Object.values(st.metadata).every((v) => typeof v === 'string')) findings.push(`${id}, ${m.kind}: metadata value not a string`);
      } catch (e) {
        for (const x of checkModelError(e, m)) findings.push(`${id}, ${m.kind}: ${x}`);
        if (e instanceof Error) tally.add(template(e.message));
      }
    }
    tally.print('raw safetensors refusals by message');
    console.log(`[fuzz] raw safetensors: ${RAW_ST_MUTANTS} mutants, ${RAW_ST_MUTANTS - accepted} refused, ${accepted} read well-formed`);
    if (findings.length) console.log(`[fuzz] ${findings.length} findings:\n${findings.slice(0, 200).join('\n')}`);
    expect(findings.slice(0, 20)).toEqual([]);
  });
});
