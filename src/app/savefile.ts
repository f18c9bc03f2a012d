/**
 * The experiment file (issue "The playground", item 6): one format for "Export experiment",
 * "Import experiment" and the IndexedDB autosave. It holds the config, the finished stages' records
 * (every metric the charts draw), every agent's parameters and optimizer state at the last stage
 * boundary, β per agent, and a cursor saying how many agent steps of the stage in progress to
 * replay (a run is fixed by its seed, so replaying them lands exactly on the last completed step).
 *
 * Layout (all integers little-endian u32):
 *
 *   offset 0   magic    89 53 41 54 0D 0A 1A 0A  ("\x89SAT\r\n\x1a\n", PNG-style: a transfer that
 *                        strips the high bit or rewrites line ends breaks it visibly)
 *          8   version  1
 *         12   length   of the whole file in bytes, checksum included (truncation is told by byte)
 *         16   H        byte length of the header
 *         20   header   H bytes of UTF-8 JSON (below)
 *              K        number of blobs
 *              K ×      [type u32 (1 = f64, 2 = f32, 3 = i32), count u32, count × element bytes]
 *       end−4  CRC-32   (IEEE 802.3, the zlib/PNG one) of every byte before it
 *
 * The header JSON is `{ format: "sat-playground-experiment", createdAt, presetName, config, betas,
 * cursor, agents: [{ info?, params, optim }], stages }`. Typed arrays (agent weights and the
 * records' advNorm/advRaw/kl) are stored as binary blobs referenced from the JSON as
 * `{"$f64": k}`; numbers JSON cannot spell are `{"$num": "NaN" | "Infinity" | "-Infinity" | "-0"}`;
 * an object key that starts with "$" is written with one more "$". So every value round-trips
 * exactly, bit for bit.
 *
 * Why binary blobs rather than base64 inside the JSON: a language agent's snapshot is a few
 * million doubles; raw little-endian bytes are 8 bytes a value instead of 10.7, need no string of
 * tens of megabytes to be built and parsed, and keep every bit (NaN payloads, −0) without a
 * number-to-text round trip. The metrics stay JSON, so a person can still read the header.
 *
 * `parseExperimentFile` never throws: every problem — not an experiment file, a file mangled by a
 * text-mode transfer, an unknown version, truncation (at which byte), extra bytes, a checksum
 * mismatch, a header that is not JSON, a config out of range or inconsistent (parseConfig's own
 * message), an agent count that does not match the config, snapshots of inconsistent sizes (with
 * each other, with the agent's info, or — tabular games — with the game's table), non-finite
 * weights, optimizer state or β, stage records that are not what the stage loop writes (every
 * field of StageRecord has its type checked — numbers, whole counts, agent indices, list lengths —
 * and σ must match the steps), a blob referred to twice or by nothing, a bad cursor — is
 * `{ ok: false, code, error }` with a specific message of bounded length.
 *
 * Not here: reading or writing files and IndexedDB (the page and persist.ts), rebuilding a team
 * from the data (session.ts), compression (weights hardly compress; a person may gzip the file).
 * No React, no DOM: runs in Node tests.
 */
import { ConfigError, FormatError } from '../core/errors';
import { type Config, isLlmTask, parseConfig, resolvedProtocol } from '../sat/config';
import { makeGame, type TaskName } from '../tasks/index';
import type { StageRecord } from '../sat/stage';
import { LAMBDA_EDGES } from '../sat/stage0';
import type { AgentInfo, AgentSnapshot } from '../sat/types';

/** The file's signature: the first 8 bytes. */
export const EXPERIMENT_MAGIC: Uint8Array = Uint8Array.of(0x89, 0x53, 0x41, 0x54, 0x0d, 0x0a, 0x1a, 0x0a);
/** Version written, and the only one read. */
export const EXPERIMENT_VERSION = 1;
/** The header's `format` field. */
export const EXPERIMENT_FORMAT = 'sat-playground-experiment';
/** Largest file read or written (bytes): far above a team of the shipped models with a long history. */
export const MAX_EXPERIMENT_BYTES = 1024 * 1024 * 1024;
/** Deepest nesting of the header JSON that is read (the records nest about 5 deep). */
export const MAX_HEADER_DEPTH = 64;
/** Largest β read (the adaptive β is capped there, as in monitor.ts). */
export const MAX_BETA = 1e4;
/** Longest settings key read (the real ones are under 20 characters). */
const MAX_KEY_LENGTH = 64;
/** Longest reason quoted from another module's message. */
const MAX_REASON = 700;
/** Suggested file name extension for exports. */
export const EXPERIMENT_EXTENSION = '.satexp';

const FIXED = 20; // magic + version + length + H
const TRAILER = 4; // CRC-32

/** One agent as saved: its state at the last stage boundary, and what it is. */
export interface SavedAgent {
  readonly snapshot: AgentSnapshot;
  /** Name, kind, parameter count and backend, when known (checked against the snapshot's size). */
  readonly info?: AgentInfo;
}

/** Where the saved run stands. */
export interface ExperimentCursor {
  /** Finished stages: equals `stages.length`; the agents are saved as they were after it. */
  readonly stage: number;
  /** Agent steps of the next stage already done (to replay on restore): 0 ≤ step < agents. */
  readonly step: number;
}

export interface ExperimentData {
  readonly config: Config;
  /** The preset the experiment started from (shown in the gallery; "" when none). */
  readonly presetName: string;
  /** When the experiment was created (ISO 8601). */
  readonly createdAt: string;
  readonly stages: readonly StageRecord[];
  readonly agents: readonly SavedAgent[];
  /** β per agent at the boundary (adaptive β is carried across stages). */
  readonly betas: readonly number[];
  readonly cursor: ExperimentCursor;
}

/** One class of failure each; the message says which and what to do. */
export type ExperimentErrorCode =
  | 'magic'
  | 'text-mode'
  | 'version'
  | 'truncated'
  | 'too-large'
  | 'trailing'
  | 'checksum'
  | 'layout'
  | 'json'
  | 'format'
  | 'config'
  | 'agents'
  | 'snapshot'
  | 'stages'
  | 'cursor';

export type ParseResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly code: ExperimentErrorCode; readonly error: string };

class FileFail {
  constructor(
    readonly code: ExperimentErrorCode,
    readonly reason: string,
  ) {}
}

const FALLBACK = 'Nothing was loaded; the experiment on the page is unchanged.';

function failed<T>(code: ExperimentErrorCode, reason: string): ParseResult<T> {
  return { ok: false, code, error: `This experiment file cannot be opened: ${reason} ${FALLBACK}` };
}

// ---------------------------------------------------------------------------------------------
// CRC-32 (IEEE, reflected polynomial 0xEDB88320), as in zlib and PNG.

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 of `bytes` (crc32("123456789") = 0xCBF43926). */
export function crc32(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let c = 0xffffffff;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// ---------------------------------------------------------------------------------------------
// Blobs: typed arrays stored as raw little-endian bytes.

export type Blob64 = Float64Array | Float32Array | Int32Array;
const BLOB_TYPES = [
  { code: 1, tag: '$f64', size: 8 },
  { code: 2, tag: '$f32', size: 4 },
  { code: 3, tag: '$i32', size: 4 },
] as const;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function blobType(a: Blob64): (typeof BLOB_TYPES)[number] {
  return a instanceof Float64Array ? BLOB_TYPES[0] : a instanceof Float32Array ? BLOB_TYPES[1] : BLOB_TYPES[2];
}

function writeBlob(view: DataView, bytes: Uint8Array, o: number, a: Blob64): number {
  const t = blobType(a);
  view.setUint32(o, t.code, true);
  view.setUint32(o + 4, a.length, true);
  o += 8;
  if (LITTLE_ENDIAN) {
    bytes.set(new Uint8Array(a.buffer, a.byteOffset, a.length * t.size), o);
  } else {
    for (let i = 0; i < a.length; i++) {
      if (t.code === 1) view.setFloat64(o + 8 * i, a[i]!, true);
      else if (t.code === 2) view.setFloat32(o + 4 * i, a[i]!, true);
      else view.setInt32(o + 4 * i, a[i]!, true);
    }
  }
  return o + a.length * t.size;
}

function readBlob(bytes: Uint8Array, view: DataView, o: number, code: number, count: number): Blob64 {
  const size = code === 1 ? 8 : 4;
  const copy = bytes.slice(o, o + count * size); // fresh, aligned buffer
  if (LITTLE_ENDIAN) return code === 1 ? new Float64Array(copy.buffer) : code === 2 ? new Float32Array(copy.buffer) : new Int32Array(copy.buffer);
  const out = code === 1 ? new Float64Array(count) : code === 2 ? new Float32Array(count) : new Int32Array(count);
  for (let i = 0; i < count; i++) out[i] = code === 1 ? view.getFloat64(o + 8 * i, true) : code === 2 ? view.getFloat32(o + 4 * i, true) : view.getInt32(o + 4 * i, true);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The container: magic, version, length, header text, blobs, CRC. Exported for tests and tools.

/** Packs a header text and blobs into a file (no check of the header's contents). */
export function encodeContainer(header: string, blobs: readonly Blob64[], version = EXPERIMENT_VERSION): Uint8Array {
  const head = new TextEncoder().encode(header);
  let total = FIXED + head.length + 4 + TRAILER;
  for (const b of blobs) total += 8 + b.length * blobType(b).size;
  if (total > MAX_EXPERIMENT_BYTES) throw new FormatError(`The experiment would take ${total} bytes, more than the ${MAX_EXPERIMENT_BYTES} a file may have.`);
  const bytes = new Uint8Array(total);
  const view = new DataView(bytes.buffer);
  bytes.set(EXPERIMENT_MAGIC, 0);
  view.setUint32(8, version, true);
  view.setUint32(12, total, true);
  view.setUint32(16, head.length, true);
  bytes.set(head, FIXED);
  let o = FIXED + head.length;
  view.setUint32(o, blobs.length, true);
  o += 4;
  for (const b of blobs) o = writeBlob(view, bytes, o, b);
  view.setUint32(o, crc32(bytes, 0, o), true);
  return bytes;
}

/** Unpacks a file's header text and blobs, checking signature, version, length and checksum. */
export function decodeContainer(bytes: Uint8Array): ParseResult<{ header: string; blobs: Blob64[] }> {
  try {
    return { ok: true, value: readContainer(bytes) };
  } catch (e) {
    if (e instanceof FileFail) return failed(e.code, e.reason);
    return failed('layout', `reading it failed unexpectedly (${e instanceof Error ? e.message : String(e)}).`);
  }
}

function readContainer(bytes: Uint8Array): { header: string; blobs: Blob64[] } {
  const n = bytes.length;
  const truncated = (needed: number, exact: boolean) =>
    new FileFail('truncated', `the file is truncated at byte ${n} (${exact ? '' : 'at least '}${needed} bytes were expected); it was probably cut short while downloading or copying.`);
  // Signature.
  const m = Math.min(n, EXPERIMENT_MAGIC.length);
  let magicOk = true;
  for (let i = 0; i < m; i++) if (bytes[i] !== EXPERIMENT_MAGIC[i]) magicOk = false;
  if (n === 0) throw new FileFail('truncated', 'the file is empty (0 bytes); it was probably cut short while downloading or copying.');
  if (!magicOk) {
    if (n >= 4 && bytes[1] === 0x53 && bytes[2] === 0x41 && bytes[3] === 0x54) {
      throw new FileFail('text-mode', 'its signature was altered (high bit stripped or line endings rewritten): it was probably transferred as text; transfer it as a binary file.');
    }
    const first = bytes[0];
    const what = first === 0x7b || first === 0x5b ? ' (it looks like a JSON text file)' : '';
    throw new FileFail('magic', `it is not a SAT Playground experiment file${what}: exports start with the signature "\\x89SAT\\r\\n\\x1a\\n".`);
  }
  if (n < FIXED) throw truncated(FIXED + 4 + TRAILER, false);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(8, true);
  if (version !== EXPERIMENT_VERSION) {
    throw new FileFail('version', `it is of format version ${version}, and this playground reads version ${EXPERIMENT_VERSION} only${version > EXPERIMENT_VERSION ? ' (it was written by a newer playground)' : ''}.`);
  }
  const total = view.getUint32(12, true);
  if (total > MAX_EXPERIMENT_BYTES) throw new FileFail('too-large', `its header says it is ${total} bytes long, more than the ${MAX_EXPERIMENT_BYTES} this playground reads.`);
  if (n > MAX_EXPERIMENT_BYTES) throw new FileFail('too-large', `it is ${n} bytes long, more than the ${MAX_EXPERIMENT_BYTES} this playground reads.`);
  if (n < total) throw truncated(total, true);
  if (n > total) throw new FileFail('trailing', `it has ${n - total} unexpected bytes after its end at byte ${total}; something was appended to it.`);
  if (total < FIXED + 4 + TRAILER) throw new FileFail('layout', `its header says it is ${total} bytes long, too short for an experiment.`);
  const stored = view.getUint32(n - TRAILER, true);
  const computed = crc32(bytes, 0, n - TRAILER);
  if (stored !== computed) {
    throw new FileFail('checksum', `checksum mismatch (stored ${hex(stored)}, computed ${hex(computed)}): the file is corrupted.`);
  }
  // From here the bytes are what was written; a failure is a writer bug or a crafted file.
  const H = view.getUint32(16, true);
  const end = n - TRAILER;
  if (FIXED + H + 4 > end) throw new FileFail('layout', `its header length ${H} runs past the end of the file.`);
  let header: string;
  try {
    header = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(FIXED, FIXED + H));
  } catch {
    throw new FileFail('json', 'its header is not valid UTF-8 text.');
  }
  let o = FIXED + H;
  const K = view.getUint32(o, true);
  o += 4;
  const blobs: Blob64[] = [];
  for (let k = 0; k < K; k++) {
    if (o + 8 > end) throw new FileFail('layout', `blob ${k} of ${K} starts past the end of the file.`);
    const code = view.getUint32(o, true);
    const count = view.getUint32(o + 4, true);
    const t = BLOB_TYPES.find((x) => x.code === code);
    if (!t) throw new FileFail('layout', `blob ${k} has an unknown type ${code}.`);
    o += 8;
    if (o + count * t.size > end) throw new FileFail('layout', `blob ${k} (${count} values) runs past the end of the file.`);
    blobs.push(readBlob(bytes, view, o, code, count));
    o += count * t.size;
  }
  if (o !== end) throw new FileFail('layout', `${end - o} bytes between the last blob and the checksum are unaccounted for.`);
  return { header, blobs };
}

function hex(x: number): string {
  return `0x${x.toString(16).padStart(8, '0')}`;
}

// ---------------------------------------------------------------------------------------------
// Values ⇄ JSON: typed arrays become blob references, non-JSON numbers become tags.

const NUM_TAG = '$num';
const SPECIAL_NUMBERS: Readonly<Record<string, number>> = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity, '-0': -0 };

function encodeNumber(x: number): unknown {
  if (Number.isNaN(x)) return { [NUM_TAG]: 'NaN' };
  if (x === Infinity) return { [NUM_TAG]: 'Infinity' };
  if (x === -Infinity) return { [NUM_TAG]: '-Infinity' };
  if (Object.is(x, -0)) return { [NUM_TAG]: '-0' };
  return x;
}

/** Where a walk is, as "stages[0].metrics.x" (built only for messages). */
type Trail = (string | number)[];
function at(root: string, trail: Trail): string {
  return root + trail.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('');
}

/** Sets out[k] = v; `__proto__` as an own key, never as the prototype. */
function put(out: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  else out[k] = v;
}

/** A JSON-safe copy of `v`, pushing typed arrays to `blobs`. Throws FormatError on what it cannot store. */
function toJson(v: unknown, blobs: Blob64[], root: string, trail: Trail = []): unknown {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'number') return Number.isFinite(v) && !Object.is(v, -0) ? v : encodeNumber(v);
  const where = () => at(root, trail);
  if (trail.length > MAX_HEADER_DEPTH) throw new FormatError(`Cannot save ${where()}: nested more than ${MAX_HEADER_DEPTH} deep.`);
  if (v instanceof Float64Array || v instanceof Float32Array || v instanceof Int32Array) {
    blobs.push(v);
    return { [blobType(v).tag]: blobs.length - 1 };
  }
  if (Array.isArray(v)) {
    const out: unknown[] = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) {
      trail.push(i);
      if (!(i in v) || v[i] === undefined) throw new FormatError(`Cannot save ${where()}: it is empty or undefined.`);
      out[i] = toJson(v[i], blobs, root, trail);
      trail.pop();
    }
    return out;
  }
  if (typeof v === 'object' && (ArrayBuffer.isView(v) || v instanceof Map || v instanceof Set || v instanceof Date)) {
    throw new FormatError(`Cannot save ${where()}: a ${v.constructor.name} is not a storable value.`);
  }
  if (typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v)) {
      const x = (v as Record<string, unknown>)[k];
      if (x === undefined) continue; // like JSON: an absent optional field
      trail.push(k);
      put(out, k.charCodeAt(0) === 36 /* $ */ ? `$${k}` : k, toJson(x, blobs, root, trail));
      trail.pop();
    }
    return out;
  }
  throw new FormatError(`Cannot save ${where()}: a ${typeof v} is not a storable value.`);
}

/**
 * The inverse of toJson; throws FileFail('format') naming the path of anything malformed. `users`
 * records where each blob is referred to: the writer gives every typed array its own blob, so a
 * blob referred to twice (two arrays that would alias) is refused here, and one referred to by
 * nothing by `checkAllUsed`.
 */
function fromJson(v: unknown, blobs: readonly Blob64[], users: (string | undefined)[], trail: Trail = []): unknown {
  if (v === null || typeof v !== 'object') return v;
  const where = () => at('header', trail);
  if (trail.length > MAX_HEADER_DEPTH) throw new FileFail('format', `its header nests more than ${MAX_HEADER_DEPTH} deep, below ${at('header', trail.slice(0, 6))}.`);
  if (Array.isArray(v)) {
    const out: unknown[] = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) {
      trail.push(i);
      out[i] = fromJson(v[i], blobs, users, trail);
      trail.pop();
    }
    return out;
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  const only = keys.length === 1 && keys[0]!.charCodeAt(0) === 36 ? keys[0]! : undefined;
  if (only === NUM_TAG) {
    const s = o[NUM_TAG];
    if (typeof s !== 'string' || !Object.prototype.hasOwnProperty.call(SPECIAL_NUMBERS, s)) throw new FileFail('format', `${where()} holds an unknown special number ${JSON.stringify(s)}.`);
    return SPECIAL_NUMBERS[s];
  }
  const bt = only === undefined ? undefined : BLOB_TYPES.find((t) => t.tag === only);
  if (bt) {
    const k = o[bt.tag];
    const b = typeof k === 'number' && Number.isInteger(k) ? blobs[k] : undefined;
    if (!b) throw new FileFail('format', `${where()} refers to blob ${JSON.stringify(k)}, but the file has ${blobs.length} blobs.`);
    if (blobType(b).tag !== bt.tag) throw new FileFail('format', `${where()} expects a ${bt.tag.slice(1)} blob, but blob ${k} holds ${blobType(b).tag.slice(1)} values.`);
    const first = users[k as number];
    if (first !== undefined) throw new FileFail('format', `${where()} refers to blob ${k}, which ${first} already uses; every array of an exported experiment has its own blob.`);
    users[k as number] = where();
    return b;
  }
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    let name = k;
    if (k.charCodeAt(0) === 36) {
      if (!k.startsWith('$$')) throw new FileFail('format', `${where()} has an unknown tag ${JSON.stringify(k.slice(0, 40))}.`);
      name = k.slice(1);
    }
    trail.push(name);
    put(out, name, fromJson(o[k], blobs, users, trail));
    trail.pop();
  }
  return out;
}

/** After fromJson: a blob that nothing referred to is refused (checked last, after the fields that should have). */
function checkAllUsed(users: readonly (string | undefined)[], blobs: readonly Blob64[]): void {
  const unused = users.indexOf(undefined);
  if (unused >= 0) {
    const b = blobs[unused]!;
    throw new FileFail('format', `blob ${unused} of ${blobs.length} (${b.length} ${blobType(b).tag.slice(1)} values) is referred to by nothing in its header; the file was edited or not written by the playground.`);
  }
}

// ---------------------------------------------------------------------------------------------
// Public API.

/**
 * The experiment as a file (also what autosave stores). Deterministic: the same data gives the
 * same bytes. Throws FormatError only for data that cannot be stored (a Map, a sparse array, …)
 * or a file over MAX_EXPERIMENT_BYTES — never for what the stage loop records.
 */
export function serializeExperiment(data: ExperimentData): Uint8Array {
  const blobs: Blob64[] = [];
  const agents = data.agents.map((a, i) => {
    const out: Record<string, unknown> = {
      params: toJson(a.snapshot.params, blobs, `agents[${i}].params`),
      optim: toJson(a.snapshot.optim, blobs, `agents[${i}].optim`),
    };
    if (a.info !== undefined) out.info = toJson(a.info, blobs, `agents[${i}].info`);
    return out;
  });
  const header = {
    format: EXPERIMENT_FORMAT,
    createdAt: data.createdAt,
    presetName: data.presetName,
    config: toJson(data.config, blobs, 'config'),
    betas: toJson(data.betas, blobs, 'betas'),
    cursor: { stage: data.cursor.stage, step: data.cursor.step },
    agents,
    stages: toJson(data.stages, blobs, 'stages'),
  };
  return encodeContainer(JSON.stringify(header), blobs);
}

/**
 * Reads an experiment file. Never throws: `{ ok: true, value }`, or `{ ok: false, code, error }`
 * whose message names the problem (and, for truncation, the byte) and says nothing was loaded.
 */
export function parseExperimentFile(bytes: Uint8Array): ParseResult<ExperimentData> {
  try {
    const { header, blobs } = readContainer(bytes);
    let raw: unknown;
    try {
      raw = JSON.parse(header);
    } catch (e) {
      throw new FileFail('json', `its header is not valid JSON (${e instanceof Error ? e.message.slice(0, 120) : 'parse error'}).`);
    }
    return { ok: true, value: readHeader(raw, blobs) };
  } catch (e) {
    if (e instanceof FileFail) return failed(e.code, e.reason);
    if (e instanceof RangeError) return failed('format', 'its header nests too deeply to read.');
    return failed('format', `reading it failed unexpectedly (${e instanceof Error ? e.message : String(e)}).`);
  }
}

// ---------------------------------------------------------------------------------------------
// Validation of the header's contents.

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

function need(cond: boolean, code: ExperimentErrorCode, reason: string): asserts cond {
  if (!cond) throw new FileFail(code, reason);
}

function readHeader(raw: unknown, blobs: readonly Blob64[]): ExperimentData {
  need(isObj(raw), 'format', 'its header is not a JSON object.');
  need(raw.format === EXPERIMENT_FORMAT, 'format', `its header names the format ${describe(raw.format)}, not "${EXPERIMENT_FORMAT}".`);
  const users = new Array<string | undefined>(blobs.length).fill(undefined);
  const h = fromJson(raw, blobs, users) as Obj;
  need(typeof h.createdAt === 'string' && h.createdAt.length <= 64, 'format', 'its header has no valid "createdAt" date.');
  need(typeof h.presetName === 'string' && h.presetName.length <= 64, 'format', 'its header has no valid "presetName".');

  // The config, checked as any input is.
  need(isObj(h.config), 'config', 'its header has no config object.');
  const longKey = Object.keys(h.config).find((k) => k.length > MAX_KEY_LENGTH);
  need(longKey === undefined, 'config', `its settings have a key of ${longKey?.length} characters (${describe(longKey)}); no setting has a name that long.`);
  // parseConfig prints a value with String(): an object would read "[object Object]".
  const odd = Object.entries(h.config).find(([, v]) => !isSettingValue(v) && !(Array.isArray(v) && v.every(isSettingValue)));
  need(odd === undefined, 'config', `its setting ${JSON.stringify(odd?.[0])} is ${describe(odd?.[1])}; a setting is a number, a text, true or false, or a list of them.`);
  let config: Config;
  try {
    config = parseConfig(h.config);
  } catch (e) {
    throw new FileFail('config', `its settings are not valid: ${clip(e instanceof ConfigError ? e.message : String(e), MAX_REASON)}`);
  }
  const n = config.agents;

  // Agents: one per agent of the config, sizes consistent with each other and with their info.
  need(Array.isArray(h.agents), 'agents', 'its header has no list of agents.');
  need(h.agents.length === n, 'agents', `it holds ${h.agents.length} agents, but its config has agents = ${n}.`);
  const agents: SavedAgent[] = h.agents.map((a: unknown, i: number) => readAgent(a, i));
  checkTableSizes(config, agents);
  const betas = h.betas;
  need(Array.isArray(betas) && betas.length === n && betas.every((b) => typeof b === 'number'), 'agents', `its β list is not ${n} numbers (one per agent).`);
  const badBeta = betas.findIndex((b) => !(Number.isFinite(b) && b >= 0 && b <= MAX_BETA));
  need(badBeta < 0, 'agents', `agent ${badBeta}'s β is ${describe(betas[badBeta])}; a β is a finite number in [0, ${MAX_BETA}].`);

  // Cursor and stages.
  const c = h.cursor;
  need(isObj(c) && isCount(c.stage) && isCount(c.step), 'cursor', 'its cursor is not {stage, step} with whole numbers ≥ 0.');
  need(Array.isArray(h.stages), 'stages', 'its header has no list of stages.');
  const stages = h.stages as unknown[];
  need(c.stage === stages.length, 'cursor', `its cursor says ${c.stage} stages are finished, but it holds ${stages.length} stage records.`);
  need(c.stage <= config.stages, 'cursor', `it holds ${c.stage} finished stages, more than its config's stages = ${config.stages}.`);
  need(c.step < n, 'cursor', `its cursor says ${c.step} agent steps of the stage in progress are done, but a stage has only ${n} (agents 0..${n - 1}).`);
  need(c.step === 0 || c.stage < config.stages, 'cursor', `its cursor has ${c.step} agent steps past the last stage (${config.stages}).`);
  stages.forEach((s, i) => checkStage(s, i, n));
  checkAllUsed(users, blobs);

  return {
    config,
    presetName: h.presetName,
    createdAt: h.createdAt,
    stages: stages as StageRecord[],
    agents,
    betas: betas as number[],
    cursor: { stage: c.stage + 0, step: c.step + 0 }, // + 0: a −0 tag reads as 0, as it is written back
  };
}

function isSettingValue(v: unknown): boolean {
  return typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean';
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** A value as a message shows it: short, whatever it is (never the whole of a long text or list). */
function describe(v: unknown): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'string') return `the text ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}${v.length > 40 ? ` (${v.length} characters)` : ''}`;
  if (v instanceof Float64Array || v instanceof Float32Array || v instanceof Int32Array) return `a blob of ${v.length} ${blobType(v).tag.slice(1)} values`;
  if (Array.isArray(v)) return `a list of ${v.length}`;
  return 'an object';
}

/** `text`, cut to `max` characters. */
function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function readAgent(a: unknown, i: number): SavedAgent {
  need(isObj(a), 'agents', `agent ${i} is not an object.`);
  const { params, optim, info } = a;
  need(params instanceof Float64Array, 'snapshot', `agent ${i} has no parameter blob of doubles.`);
  need(optim instanceof Float64Array, 'snapshot', `agent ${i} has no optimizer-state blob of doubles.`);
  need(optim.length === 1 + 2 * params.length, 'snapshot', `agent ${i}'s snapshot sizes are inconsistent: ${params.length} parameters need an optimizer state of 1 + 2·${params.length} = ${1 + 2 * params.length} values ([step, m…, v…]), it has ${optim.length}.`);
  const p = firstNonFinite(params);
  need(p < 0, 'snapshot', `agent ${i}'s parameter ${p} is ${params[p]}; the saved weights are corrupt (training never saves a non-finite weight).`);
  const q = firstNonFinite(optim);
  need(q < 0, 'snapshot', `agent ${i}'s optimizer state value ${q} is ${optim[q]}; the saved optimizer state is corrupt.`);
  if (info === undefined) return { snapshot: { params, optim } };
  need(
    isObj(info) && typeof info.name === 'string' && (info.kind === 'tabular' || info.kind === 'lm') && isCount(info.parameters) && typeof info.backend === 'string',
    'agents',
    `agent ${i}'s info is not {name, kind: tabular | lm, parameters, backend}.`,
  );
  need(info.parameters === params.length, 'snapshot', `agent ${i}'s snapshot sizes are inconsistent: its info says ${info.parameters} parameters, its parameter blob has ${params.length}.`);
  return { snapshot: { params, optim }, info: { name: info.name, kind: info.kind, parameters: info.parameters, backend: info.backend } };
}

function firstNonFinite(a: Float64Array): number {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i]!)) return i;
  return -1;
}

/** Tabular games: each agent's table must be the game's nObs × nActions for these settings. */
function checkTableSizes(c: Config, agents: readonly SavedAgent[]): void {
  if (isLlmTask(c.task)) return; // a language agent's size depends on the model file, checked when restored
  const game = makeGame(c.task as TaskName, { agents: c.agents, actions: c.actions, protocol: resolvedProtocol(c), taskSeed: c.taskSeed, penaltyK: c.penaltyK });
  agents.forEach((a, i) => {
    const rows = game.nObs[i] ?? 0;
    const cols = game.nActions[i] ?? 0;
    need(
      a.snapshot.params.length === rows * cols,
      'snapshot',
      `agent ${i}'s snapshot has ${a.snapshot.params.length} parameters, but with these settings the ${c.task} game gives it a ${rows}×${cols} table (${rows * cols}).`,
    );
  });
}

// ---------------------------------------------------------------------------------------------
// Stage records: every field the stage loop writes (src/sat/stage.ts StageRecord), with its type.

/**
 * What one value of a record must be: any number (NaN and ±Infinity included: a record holds them,
 * e.g. J after a language agent's step, or an unbounded clip), a count (whole, ≥ 0), an agent index
 * (0..n−1), true/false, a text, a blob of doubles, a metrics record ({name: number | number[]}),
 * one of some texts, a list, or an object with required and optional fields. Fields a record has
 * beyond its schema are kept as they are.
 */
type Spec =
  | 'number'
  | 'count'
  | 'agent'
  | 'boolean'
  | 'string'
  | 'f64'
  | 'metrics'
  | { readonly oneOf: readonly string[] }
  | { readonly list: Spec; readonly length?: number }
  | { readonly fields: Readonly<Record<string, Spec>>; readonly optional?: Readonly<Record<string, Spec>> };

const numbers = (...keys: string[]): Record<string, Spec> => Object.fromEntries(keys.map((k) => [k, 'number' as const]));

const BOUND_TERMS: Spec = { fields: { ...numbers('gain', 'gainInSample', 'shift', 'bias', 'finite', 'lower', 'oracle'), certified: 'boolean' } };
const STEP_SPEC: Spec = {
  fields: {
    stage: 'count',
    position: 'count',
    agent: 'agent',
    metrics: 'metrics',
    advNorm: 'f64',
    advRaw: 'f64',
    kl: 'f64',
    delta: 'number',
    check: { fields: { ...numbers('q', 'mean', 'max', 'violRate'), ok: 'boolean' } },
    accepted: 'boolean',
    backtracks: 'count',
    ...numbers('jBefore', 'jAfter'),
    cert: {
      fields: {
        agent: 'agent',
        ...numbers('gain', 'lower', 'gainInSample', 'clip', 'klMax', 'bias'),
        range: { list: 'number', length: 2 },
        units: 'count',
        episodes: 'count',
        turns: 'count',
        moved: 'boolean',
      },
    },
  },
};
const SWAP_SPEC: Spec = {
  fields: {
    agent: 'agent',
    incoming: 'string',
    stage0: 'boolean',
    klQuantiles: { fields: numbers('q50', 'q90', 'q99') },
    lambdaHist: { list: 'count', length: LAMBDA_EDGES.length - 1 },
    ...numbers('delta0', 'outsideBefore', 'outsideAfter', 'jBefore', 'jAfter', 'certRadius', 'certFloor'),
  },
};
const STAGE_SPEC: Spec = {
  fields: {
    stage: 'count',
    order: { list: 'agent' },
    // steps: checked one by one before the rest (STEP_SPEC), so that a message names "step k".
    certificate: { fields: { chosen: BOUND_TERMS, gamma: BOUND_TERMS, episodic: BOUND_TERMS, form: { oneOf: ['episodic', 'gamma'] } } },
    ...numbers('jBefore', 'jAfter'),
    metrics: 'metrics',
    evaluation: { fields: { J: 'number', ci: 'number', exact: 'boolean' }, optional: { accuracy: 'number' } },
  },
  optional: { swap: SWAP_SPEC },
};

function expected(spec: Spec, n: number): string {
  if (typeof spec === 'string') {
    return {
      number: 'a number',
      count: 'a whole number ≥ 0',
      agent: `an agent 0..${n - 1}`,
      boolean: 'true or false',
      string: 'a text',
      f64: 'an array of doubles',
      metrics: 'an object of metrics',
    }[spec];
  }
  if ('oneOf' in spec) return spec.oneOf.map((x) => JSON.stringify(x)).join(' or ');
  if ('list' in spec) return spec.length === undefined ? 'a list' : `a list of ${spec.length}`;
  return 'an object';
}

/** Checks `v` against `spec`; the first mismatch throws FileFail('stages') naming its path in the record. */
function checkSpec(v: unknown, spec: Spec, path: string, n: number, bad: (what: string) => FileFail): void {
  const wrong = () => bad(`${path} is ${describe(v)}, expected ${expected(spec, n)}`);
  if (spec === 'number') {
    if (typeof v !== 'number') throw wrong();
  } else if (spec === 'count') {
    if (!isCount(v)) throw wrong();
  } else if (spec === 'agent') {
    if (typeof v !== 'number') throw wrong();
    if (!isCount(v) || v >= n) throw bad(`${path} names agent ${describe(v)}, not one of 0..${n - 1}`);
  } else if (spec === 'boolean') {
    if (typeof v !== 'boolean') throw wrong();
  } else if (spec === 'string') {
    if (typeof v !== 'string') throw wrong();
  } else if (spec === 'f64') {
    if (!(v instanceof Float64Array)) throw bad(`${path} is not an array of doubles (it is ${describe(v)})`);
  } else if (spec === 'metrics') {
    if (!isObj(v)) throw wrong();
    for (const [k, x] of Object.entries(v)) {
      if (typeof x === 'number') continue;
      if (Array.isArray(x) && x.every((y) => typeof y === 'number')) continue;
      throw bad(`${path}: metric ${JSON.stringify(k.length > 60 ? `${k.slice(0, 60)}…` : k)} is neither a number nor a list of numbers`);
    }
  } else if ('oneOf' in spec) {
    if (typeof v !== 'string' || !spec.oneOf.includes(v)) throw wrong();
  } else if ('list' in spec) {
    if (!Array.isArray(v) || (spec.length !== undefined && v.length !== spec.length)) throw wrong();
    v.forEach((x, i) => checkSpec(x, spec.list, `${path}[${i}]`, n, bad));
  } else {
    if (!isObj(v)) throw wrong();
    for (const [k, s] of Object.entries(spec.fields)) checkSpec(v[k], s, path ? `${path}.${k}` : k, n, bad);
    for (const [k, s] of Object.entries(spec.optional ?? {})) if (v[k] !== undefined) checkSpec(v[k], s, path ? `${path}.${k}` : k, n, bad);
  }
}

/**
 * One stage record: every field of its schema, then what ties them together — its number, σ a
 * permutation of the agents, one step per agent in σ's order (a finished stage has them all), each
 * step numbered by stage and position, and its certificate input for its own agent.
 */
function checkStage(s: unknown, i: number, n: number): void {
  const at = `stage record ${i + 1}`;
  const bad = (what: string) => new FileFail('stages', `${at} is malformed: ${what}.`);
  if (!isObj(s)) throw bad(`it is ${describe(s)}, not an object`);
  if (s.stage === undefined) throw bad(`it has no "stage" number (expected ${i + 1})`);
  if (s.stage !== i + 1) throw bad(`it is numbered ${describe(s.stage)}, expected ${i + 1}`);
  // Steps first, each by its own name ("step 1.cert.range[0]"), then the rest of the record.
  const steps = s.steps;
  if (!Array.isArray(steps) || steps.length !== n) throw bad(`"steps" is ${describe(steps)}, expected a list of ${n} agent steps (one per agent)`);
  steps.forEach((st: unknown, k: number) => checkSpec(st, STEP_SPEC, `step ${k}`, n, bad));
  checkSpec(s, STAGE_SPEC, '', n, bad);
  const order = s.order as number[];
  if (order.length !== n || new Set(order).size !== n) throw bad(`"order" [${order.slice(0, 8).join(', ')}] is not a permutation of the agents 0..${n - 1}`);
  (steps as StageRecord['steps']).forEach((st, k) => {
    const sat = `step ${k}`;
    if (st.stage !== i + 1 || st.position !== k) throw bad(`${sat} is numbered stage ${st.stage}, position ${st.position}`);
    if (st.agent !== order[k]) throw bad(`${sat} is agent ${st.agent}'s, but σ puts agent ${order[k]} at position ${k}`);
    if (st.cert.agent !== st.agent) throw bad(`${sat} is agent ${st.agent}'s, but its certificate input is agent ${st.cert.agent}'s`);
  });
}
