/**
 * The experiment file: one format for "Export experiment",
 * "Import experiment" and the IndexedDB autosave. It holds the config, the finished stages' records
 * (every metric the charts draw), every agent's parameters and optimizer state at the last stage
 * boundary, β per agent, and a cursor naming the last completed agent step (a StepRef, see
 * stepRef.ts): { stage: k } when k stages are finished and none is in progress, { stage: k + 1,
 * agent: a } when agent a's update was the last step done of stage k + 1. A run is fixed by its
 * seed, so restoring the boundary and replaying until that agent has moved lands exactly on it.
 *
 * Layout (format version 2):
 *
 *   the file        one gzip member (RFC 1952), written by fflate with mtime 0 so that the same
 *                   data gives the same bytes; gzip's trailer — the CRC-32 and the length (ISIZE)
 *                   of the contents — is the integrity check
 *   its contents    a safetensors file (src/model/safetensors.ts writes and reads it):
 *                   u64 little-endian N, N bytes of JSON, then the data section
 *     JSON          { "__metadata__": { "format": "sat-playground-experiment", "version": "2",
 *                                        "header": "<the experiment header, JSON text>" },
 *                     "0": { "dtype": "F64", "shape": [count], "data_offsets": [b, e] }, "1": … }
 *
 * The header is `{ createdAt, presetName, config, betas, cursor, agents: [{ info?, params, optim }],
 * stages, checkpoints? }`; `checkpoints` (language tasks) lists the seats that hold a Hugging Face
 * checkpoint of their own as `{ agent, name, hash, quant }` (hfFiles.ts SeatRef: the files are not
 * in the file), so opening it seats them again — or asks for the folder — instead of restoring a
 * checkpoint's parameters into the shipped model; files without the field open as before. Typed arrays (agent weights and the records' advNorm/advRaw/kl) are the tensors, named
 * by their index and referred to from the header as `{"$f64": k}` (`$f32`, `$i32`); numbers JSON
 * cannot spell are `{"$num": "NaN" | "Infinity" | "-Infinity" | "-0"}`; an object key that starts
 * with "$" is written with one more "$". So every value round-trips exactly, bit for bit.
 *
 * Why these pieces: safetensors is the container the repository already reads and writes for model
 * files, strictly (tensors tile the data section, sizes match dtypes, bounded messages), so the
 * experiment file needs no container code of its own; raw little-endian tensors keep every bit
 * (NaN payloads, −0) at 8 bytes a double. gzip adds what safetensors lacks — a checksum and a length
 * — and shrinks the metrics' JSON about tenfold. fflate reads and writes gzip synchronously in the
 * browser and in Node; it does not check gzip's trailer when it inflates, so `readContainer`
 * compares the trailer with the one fflate writes for the inflated bytes (`gzipTrailer`).
 * Inflating (inflate.ts) stops as soon as the contents pass their cap: MAX_EXPERIMENT_BYTES, or
 * INFLATE_RATIO times the file's size when that is less (src/core/limits.ts).
 *
 * Files of format version 1 (the playground's own container before this one, signature
 * "\x89SAT\r\n\x1a\n") are refused with a message saying so; they are not converted.
 *
 * `parseExperimentFile` never throws: every problem — not an experiment file, an older version, a
 * file mangled by a text-mode transfer, truncation (at which byte), extra bytes, a checksum or
 * length mismatch, damaged compressed data, contents that are not a valid container, a header that
 * is not JSON, a config out of range or inconsistent (parseConfig's own message), an agent count
 * that does not match the config, snapshots of inconsistent sizes (with each other, with the
 * agent's info, or — tabular games — with the game's table), non-finite weights, optimizer state or
 * β, stage records that are not what the stage loop writes (every field of StageRecord has its type
 * checked — numbers, whole counts, agent indices, list lengths — and σ must match the steps), a blob
 * referred to twice or by nothing, a bad cursor — is `{ ok: false, code, error }` with a specific
 * message of bounded length.
 *
 * The autosave stores the same file cut into parts (`serializeParts` / `parseParts`): a small head
 * (everything but the stages and the agents), the boundary (agents and β) and one part per stage
 * record, each part a container of its own, so that a finished stage is written once; the parts are
 * put back together and checked exactly as a file is.
 *
 * Not here: reading or writing files and IndexedDB (the page, persist.ts and autosave.ts),
 * rebuilding a team from the data (session.ts). No React, no DOM: runs in Node tests.
 */
import { seatOnnx } from './onnxSeatRef';
import { Gzip, gzipSync } from 'fflate';
import { ConfigError, FormatError } from '../core/errors';
import { formatSize, INFLATE_FLOOR, INFLATE_RATIO } from '../core/limits';
import { readSafetensors, writeSafetensors, type StTensor } from '../model/safetensors';
import { type Config, isLlmTask, parseConfig, resolvedProtocol } from '../sat/config';
import { makeGame, type TaskName } from '../tasks/index';
import type { StageRecord } from '../sat/stage';
import { LAMBDA_EDGES } from '../sat/stage0';
import type { AgentInfo, AgentSnapshot } from '../sat/types';
import { inflateCapped } from './inflate';
import type { StepRef } from './stepRef';

/** gzip's signature (ID1 ID2 CM = deflate): the first 3 bytes of every experiment file. */
export const EXPERIMENT_MAGIC: Uint8Array = Uint8Array.of(0x1f, 0x8b, 0x08);
/** The signature of format version 1 files (refused with a message naming the older version). */
export const OLD_EXPERIMENT_MAGIC: Uint8Array = Uint8Array.of(0x89, 0x53, 0x41, 0x54, 0x0d, 0x0a, 0x1a, 0x0a);
/** Version written, and the only one read. */
export const EXPERIMENT_VERSION = 2;
/** The container's `format` metadata: a whole file. The autosave's parts add "/head", "/boundary", "/stage". */
export const EXPERIMENT_FORMAT = 'sat-playground-experiment';
/** Largest file read or written, compressed or not (bytes): far above a team of the shipped models with a long history. */
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

/** One agent as saved: its state at the last stage boundary, and what it is. */
export interface SavedAgent {
  readonly snapshot: AgentSnapshot;
  /** Name, kind, parameter count and backend, when known (checked against the snapshot's size). */
  readonly info?: AgentInfo;
}

export interface ExperimentData {
  readonly config: Config;
  /** The preset the experiment started from (shown in the gallery; "" when none). */
  readonly presetName: string;
  /** When the experiment was created (ISO 8601). */
  readonly createdAt: string;
  readonly stages: readonly StageRecord[];
  /** The agents as they were after the last finished stage. */
  readonly agents: readonly SavedAgent[];
  /** β per agent at the boundary (adaptive β is carried across stages). */
  readonly betas: readonly number[];
  /** The last completed agent step: { stage: stages.length }, or { stage: stages.length + 1, agent }. */
  readonly cursor: StepRef;
  /** Language tasks: the seats on a checkpoint of their own ([] when none); absent in files written before seats were recorded. */
  readonly checkpoints?: readonly SavedCheckpoint[];
}

/** A seat's checkpoint as the file records it (hfFiles.ts SeatRef). */
export interface SavedCheckpoint {
  readonly agent: number;
  readonly name: string;
  /** hfFolderHash of its files (64 hex digits). */
  readonly hash: string;
  readonly quant: 'q8' | 'q4' | 'f32';
  /** An ONNX model folder's seat: which .onnx file, trainable or frozen (absent: a checkpoint). */
  readonly onnx?: { readonly file: string; readonly mode: 'trainable' | 'frozen' };
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
// Blobs: typed arrays, stored as the container's tensors.

export type Blob64 = Float64Array | Float32Array | Int32Array;
const BLOB_TYPES = [
  { dtype: 'F64', tag: '$f64' },
  { dtype: 'F32', tag: '$f32' },
  { dtype: 'I32', tag: '$i32' },
] as const;

function blobType(a: Blob64): (typeof BLOB_TYPES)[number] {
  return a instanceof Float64Array ? BLOB_TYPES[0] : a instanceof Float32Array ? BLOB_TYPES[1] : BLOB_TYPES[2];
}

// ---------------------------------------------------------------------------------------------
// gzip through fflate, with the trailer check fflate leaves to its caller.

/** Input slice fed to the inflater at a time: the output is counted (and capped) between slices. */
const INFLATE_SLICE = 1 << 14;

/** gzip's 8-byte trailer for `contents` (CRC-32 and ISIZE, little-endian), as fflate writes it. */
function gzipTrailer(contents: Uint8Array): Uint8Array {
  let last: Uint8Array = new Uint8Array(0);
  // A stored (level 0) member: fflate computes the CRC while it copies; only the last chunk is kept.
  const g = new Gzip({ level: 0, mtime: 0 }, (chunk, final) => {
    if (final) last = chunk;
  });
  if (contents.length === 0) g.push(contents, true);
  for (let i = 0; i < contents.length; i += INFLATE_SLICE) g.push(contents.subarray(i, i + INFLATE_SLICE), i + INFLATE_SLICE >= contents.length);
  return last.subarray(last.length - 8);
}

/** Length of the gzip header at the start of `bytes` (RFC 1952 §2.3: optional fields skipped). */
function gzipHeaderLength(bytes: Uint8Array): number {
  const n = bytes.length;
  const short = () => new FileFail('truncated', `the file is truncated at byte ${n}, inside its gzip header; it was probably cut short while downloading or copying.`);
  if (n < 10) throw short();
  const flags = bytes[3]!;
  if (flags & 0xe0) throw new FileFail('layout', `its gzip header has reserved flag bits set (flags 0x${flags.toString(16)}); it was not written by a gzip program.`);
  let o = 10;
  if (flags & 4) {
    if (o + 2 > n) throw short();
    o += 2 + (bytes[o]! | (bytes[o + 1]! << 8));
  }
  for (const bit of [8, 16]) {
    if (!(flags & bit)) continue; // FNAME, FCOMMENT: zero-terminated
    while (o < n && bytes[o] !== 0) o++;
    o++;
  }
  if (flags & 2) o += 2; // FHCRC
  if (o > n) throw short();
  return o;
}

function sameBytes(a: Uint8Array, at: number, b: Uint8Array, from = 0, to = b.length): boolean {
  for (let i = from; i < to; i++) if (a[at + i - from] !== b[i]) return false;
  return true;
}

/** The most a file of `fileLength` bytes may inflate to, and why (for the message). */
interface InflateCap {
  readonly bytes: number;
  readonly why: string;
}

/**
 * min(maxBytes, max(INFLATE_FLOOR, INFLATE_RATIO × the file's length)): a real experiment barely
 * compresses, so a bomb is refused after inflating a few dozen times its own size, not 1 GiB.
 */
function inflateCap(fileLength: number, maxBytes: number): InflateCap {
  const byRatio = Math.max(INFLATE_FLOOR, INFLATE_RATIO * fileLength);
  if (byRatio >= maxBytes) return { bytes: maxBytes, why: '' };
  return { bytes: byRatio, why: ` from a file of ${fileLength} bytes (${INFLATE_RATIO} times its size, at least ${formatSize(INFLATE_FLOOR)}; a real experiment compresses far less)` };
}

/** Inflates raw deflate data with a cap on the output; a stream that needs more input is FileFail('truncated'). */
function inflateOrFail(data: Uint8Array, fileLength: number, cap: InflateCap): Uint8Array {
  const r = inflateCapped(data, cap.bytes, INFLATE_SLICE);
  if (r.ok) return r.bytes;
  if (r.why === 'too-large') throw new FileFail('too-large', `it decompresses to more than the ${cap.bytes} bytes this playground reads${cap.why}.`);
  if (r.why === 'eof') {
    throw new FileFail('truncated', `the file is truncated at byte ${fileLength}: its compressed data ends before the end of the stream (it was probably cut short while downloading or copying, or it is corrupted).`);
  }
  throw new FileFail('checksum', `its compressed data is damaged (${r.detail}): the file is corrupted.`);
}

/**
 * The contents of a gzip file, checked: inflated with a cap on their size, then gzip's trailer
 * compared with the contents' own. That trailer found earlier in the file means bytes were
 * appended; compressed data that runs into the last 8 bytes means the file was cut inside the
 * trailer; otherwise a mismatch is corruption.
 */
function gunzipChecked(bytes: Uint8Array, maxBytes: number): Uint8Array {
  const n = bytes.length;
  const h = gzipHeaderLength(bytes);
  if (n < h + 10) throw new FileFail('truncated', `the file is truncated at byte ${n} (at least ${h + 10} bytes were expected); it was probably cut short while downloading or copying.`);
  // Not the trailer's ISIZE: it is the length mod 2^32, and the last 4 bytes of a truncated file.
  const cap = inflateCap(n, maxBytes);
  const contents = inflateOrFail(bytes.subarray(h), n, cap);
  const want = gzipTrailer(contents);
  if (sameBytes(bytes, n - 8, want)) return contents;
  for (let p = h; p + 8 < n; p++) {
    if (sameBytes(bytes, p, want)) throw new FileFail('trailing', `it has ${n - p - 8} unexpected bytes after its end at byte ${p + 8}; something was appended to it.`);
  }
  try {
    inflateOrFail(bytes.subarray(h, n - 8), n, cap);
  } catch (e) {
    if (e instanceof FileFail && e.code === 'truncated') {
      throw new FileFail('truncated', `the file is truncated at byte ${n}, inside gzip's 8-byte trailer (its checksum and length); it was probably cut short while downloading or copying.`);
    }
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const crc = new DataView(want.buffer, want.byteOffset, 8).getUint32(0, true);
  throw new FileFail('checksum', `checksum mismatch (stored CRC-32 ${hex(view.getUint32(n - 8, true))} and length ${view.getUint32(n - 4, true)}, computed ${hex(crc)} and ${contents.length}): the file is corrupted.`);
}

function hex(x: number): string {
  return `0x${x.toString(16).padStart(8, '0')}`;
}

// ---------------------------------------------------------------------------------------------
// The container: gzip of a safetensors file whose metadata holds the header. Exported for tests and tools.

/**
 * Packs a header text and blobs into a file (no check of the header's contents). `format` names
 * what it holds (EXPERIMENT_FORMAT, or an autosave part's); `version` is for tests of other versions;
 * `level` is the deflate level (6, fflate's default; 0 stores the bytes as they are, still in a
 * gzip member with its CRC — what the autosave's boundary part uses, below).
 */
export function encodeContainer(header: string, blobs: readonly Blob64[], version = EXPERIMENT_VERSION, format = EXPERIMENT_FORMAT, level: 0 | 6 = 6): Uint8Array {
  const tensors = new Map<string, StTensor>(blobs.map((b, k) => [String(k), { dtype: blobType(b).dtype, shape: [b.length], data: b }]));
  const inner = writeSafetensors(tensors, { format, version: String(version), header });
  if (inner.length > MAX_EXPERIMENT_BYTES) throw new FormatError(`The experiment would take ${inner.length} bytes, more than the ${MAX_EXPERIMENT_BYTES} a file may have.`);
  return gzipSync(inner, { mtime: 0, level });
}

/** Unpacks a file's header text and blobs, checking signature, compression, checksum, container and version. */
export function decodeContainer(bytes: Uint8Array, format = EXPERIMENT_FORMAT): ParseResult<{ header: string; blobs: Blob64[] }> {
  try {
    return { ok: true, value: readContainer(bytes, format) };
  } catch (e) {
    if (e instanceof FileFail) return failed(e.code, e.reason);
    return failed('layout', `reading it failed unexpectedly (${e instanceof Error ? e.message : String(e)}).`);
  }
}

function checkSignature(bytes: Uint8Array): void {
  const n = bytes.length;
  if (n === 0) throw new FileFail('truncated', 'the file is empty (0 bytes); it was probably cut short while downloading or copying.');
  const old = Math.min(n, OLD_EXPERIMENT_MAGIC.length);
  if (n >= 4 && sameBytes(bytes, 0, OLD_EXPERIMENT_MAGIC, 0, old)) {
    throw new FileFail('version', 'it is an experiment file from an older version of the playground (format version 1); this version reads version 2 only and does not convert older files. Open it with the playground that wrote it, or run the experiment again from its settings.');
  }
  if (n >= 4 && bytes[1] === 0x53 && bytes[2] === 0x41 && bytes[3] === 0x54) {
    throw new FileFail('text-mode', 'its signature was altered (high bit stripped or line endings rewritten) and it looks like an experiment file from an older version of the playground: it was probably transferred as text; transfer it as a binary file.');
  }
  if (bytes[0] === 0x1f && n === 1) throw new FileFail('truncated', 'the file is truncated at byte 1, inside its gzip header; it was probably cut short while downloading or copying.');
  if (bytes[0] === 0x1f && bytes[1] === 0x0b) {
    throw new FileFail('text-mode', 'its signature was altered (its high bits stripped): it was probably transferred as text; transfer it as a binary file.');
  }
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) {
    const first = bytes[0];
    const what =
      first === 0x7b || first === 0x5b ? ' (it looks like a JSON text file)'
      : n >= 9 && bytes[8] === 0x7b && bytes[5] === 0 && bytes[6] === 0 && bytes[7] === 0 ? ' (it looks like the uncompressed contents of one: compress it again with gzip)'
      : '';
    throw new FileFail('magic', `it is not a SAT Playground experiment file${what}: exports are gzip files and start with the bytes 1f 8b.`);
  }
  if (n >= 3 && bytes[2] !== 0x08) throw new FileFail('magic', `its gzip header names compression method ${bytes[2]}, not deflate (8); it is not an experiment file of this playground.`);
}

function readContainer(bytes: Uint8Array, format: string, maxBytes = MAX_EXPERIMENT_BYTES): { header: string; blobs: Blob64[] } {
  checkSignature(bytes);
  if (bytes.length > MAX_EXPERIMENT_BYTES) throw new FileFail('too-large', `it is ${bytes.length} bytes long, more than the ${MAX_EXPERIMENT_BYTES} this playground reads.`);
  const contents = gunzipChecked(bytes, maxBytes);
  // From here the bytes are what was written; a failure is a writer bug or a crafted file.
  let st: ReturnType<typeof readSafetensors>;
  try {
    st = readSafetensors(contents);
  } catch (e) {
    throw new FileFail('layout', `its contents are not a valid container: ${clip((e instanceof Error ? e.message : String(e)).replace(/^safetensors: /, ''), MAX_REASON)}.`);
  }
  const meta = st.metadata;
  if (meta.format !== format) throw new FileFail('format', `its contents name the format ${describe(meta.format)}, not "${format}".`);
  const version = meta.version;
  if (version !== String(EXPERIMENT_VERSION)) {
    const v = Number(version);
    const shown = typeof version === 'string' && /^\d{1,6}$/.test(version) ? version : describe(version);
    throw new FileFail('version', `it is of format version ${shown}, and this playground reads version ${EXPERIMENT_VERSION} only${Number.isFinite(v) && v > EXPERIMENT_VERSION ? ' (it was written by a newer playground)' : ''}.`);
  }
  if (typeof meta.header !== 'string') throw new FileFail('format', 'its contents hold no experiment header.');
  const blobs: Blob64[] = new Array<Blob64>(st.tensors.size);
  for (const [name, t] of st.tensors) {
    const k = /^(0|[1-9]\d{0,9})$/.test(name) ? Number(name) : -1;
    if (!(k >= 0 && k < blobs.length)) throw new FileFail('layout', `its tensor ${describe(name)} is not a blob number 0..${blobs.length - 1}.`);
    const bt = BLOB_TYPES.find((x) => x.dtype === t.dtype);
    if (!bt) throw new FileFail('layout', `blob ${k} has the type ${t.dtype}; an experiment holds F64, F32 and I32 blobs only.`);
    if (t.shape.length !== 1) throw new FileFail('layout', `blob ${k} has the shape [${t.shape.slice(0, 8).join(', ')}]; a blob is a list of values (one dimension).`);
    blobs[k] = t.data as Blob64;
  }
  return { header: meta.header, blobs };
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

/** The `format` of each autosave part (the whole file's is EXPERIMENT_FORMAT). */
export const PART_FORMATS = {
  head: `${EXPERIMENT_FORMAT}/head`,
  boundary: `${EXPERIMENT_FORMAT}/boundary`,
  stage: `${EXPERIMENT_FORMAT}/stage`,
} as const;

type Head = Pick<ExperimentData, 'config' | 'presetName' | 'createdAt' | 'cursor' | 'checkpoints'>;
type Boundary = Pick<ExperimentData, 'agents' | 'betas'>;

function headJson(d: Head, blobs: Blob64[]): Record<string, unknown> {
  const cursor = d.cursor.agent === undefined ? { stage: d.cursor.stage } : { stage: d.cursor.stage, agent: d.cursor.agent };
  const out: Record<string, unknown> = { createdAt: d.createdAt, presetName: d.presetName, config: toJson(d.config, blobs, 'config'), cursor };
  if (d.checkpoints !== undefined) out.checkpoints = d.checkpoints.map((c) => ({ agent: c.agent, name: c.name, hash: c.hash, quant: c.quant, ...(c.onnx ? { onnx: c.onnx } : {}) }));
  return out;
}

function boundaryJson(d: Boundary, blobs: Blob64[]): Record<string, unknown> {
  const agents = d.agents.map((a, i) => {
    const out: Record<string, unknown> = {
      params: toJson(a.snapshot.params, blobs, `agents[${i}].params`),
      optim: toJson(a.snapshot.optim, blobs, `agents[${i}].optim`),
    };
    if (a.info !== undefined) out.info = toJson(a.info, blobs, `agents[${i}].info`);
    return out;
  });
  return { betas: toJson(d.betas, blobs, 'betas'), agents };
}

/**
 * The experiment as a file. Deterministic: the same data gives the same bytes. Throws FormatError
 * only for data that cannot be stored (a Map, a sparse array, …) or a file over
 * MAX_EXPERIMENT_BYTES — never for what the stage loop records.
 */
export function serializeExperiment(data: ExperimentData): Uint8Array {
  const blobs: Blob64[] = [];
  const header = { ...headJson(data, blobs), ...boundaryJson(data, blobs), stages: toJson(data.stages, blobs, 'stages') };
  return encodeContainer(JSON.stringify(header), blobs);
}

/** The autosave's head part: config, preset, date and cursor (a few kilobytes, rewritten after every agent step). */
export function serializeHead(head: Head): Uint8Array {
  const blobs: Blob64[] = [];
  return encodeContainer(JSON.stringify(headJson(head, blobs)), blobs, EXPERIMENT_VERSION, PART_FORMATS.head);
}

/** The autosave's boundary part: the agents and β after the last finished stage (rewritten once per stage). */
export function serializeBoundary(boundary: Boundary): Uint8Array {
  const blobs: Blob64[] = [];
  // Stored, not deflated: the agents' parameters and optimizer state are f32 mantissas, which
  // deflate shrinks by ~7 % for ~8× the time (1 MB: 35 ms against 4.4 ms in Node) — time the
  // page's main thread spent after every stage, between the stage and the next step.
  return encodeContainer(JSON.stringify(boundaryJson(boundary, blobs)), blobs, EXPERIMENT_VERSION, PART_FORMATS.boundary, 0);
}

/** The autosave's part for one finished stage (written once). */
export function serializeStage(rec: StageRecord): Uint8Array {
  const blobs: Blob64[] = [];
  return encodeContainer(JSON.stringify(toJson(rec, blobs, `stages[${rec.stage - 1}]`)), blobs, EXPERIMENT_VERSION, PART_FORMATS.stage);
}

/** A container's header, decoded (blob references resolved), and the check that every blob was referred to. */
function readPart(bytes: Uint8Array, format: string, trail: Trail = [], maxBytes = MAX_EXPERIMENT_BYTES): { value: unknown; checkUsed: () => void } {
  const { header, blobs } = readContainer(bytes, format, maxBytes);
  let raw: unknown;
  try {
    raw = JSON.parse(header);
  } catch (e) {
    throw new FileFail('json', `its header is not valid JSON (${e instanceof Error ? e.message.slice(0, 120) : 'parse error'}).`);
  }
  const users = new Array<string | undefined>(blobs.length).fill(undefined);
  const value = fromJson(raw, blobs, users, trail);
  return { value, checkUsed: () => checkAllUsed(users, blobs) };
}

/** Runs a reader; every failure becomes the file's wording. */
function guarded(read: () => ExperimentData): ParseResult<ExperimentData> {
  try {
    return { ok: true, value: read() };
  } catch (e) {
    if (e instanceof FileFail) return failed(e.code, e.reason);
    if (e instanceof RangeError) return failed('format', 'its header nests too deeply to read.');
    return failed('format', `reading it failed unexpectedly (${e instanceof Error ? e.message : String(e)}).`);
  }
}

/**
 * Reads an experiment file. Never throws: `{ ok: true, value }`, or `{ ok: false, code, error }`
 * whose message names the problem (and, for truncation, the byte) and says nothing was loaded.
 * `maxBytes` caps the inflated contents (lowered by tests, to try a gzip bomb cheaply).
 */
export function parseExperimentFile(bytes: Uint8Array, maxBytes = MAX_EXPERIMENT_BYTES): ParseResult<ExperimentData> {
  return guarded(() => {
    const { value, checkUsed } = readPart(bytes, EXPERIMENT_FORMAT, [], maxBytes);
    const data = readExperiment(value);
    checkUsed();
    return data;
  });
}

/**
 * Puts the autosave's parts back together and checks the whole exactly as parseExperimentFile
 * checks a file (same messages). `stages[i]` is stage i + 1's part.
 */
export function parseParts(head: Uint8Array, boundary: Uint8Array, stages: readonly Uint8Array[]): ParseResult<ExperimentData> {
  return guarded(() => {
    const h = readPart(head, PART_FORMATS.head);
    const b = readPart(boundary, PART_FORMATS.boundary);
    const recs = stages.map((bytes, i) => readPart(bytes, PART_FORMATS.stage, ['stages', i]));
    need(isObj(h.value) && isObj(b.value), 'format', 'its head or boundary part is not a JSON object.');
    const data = readExperiment({ ...h.value, ...b.value, stages: recs.map((r) => r.value) });
    for (const part of [h, b, ...recs]) part.checkUsed();
    return data;
  });
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

/** The decoded header (blob references resolved), checked field by field. */
function readExperiment(h: unknown): ExperimentData {
  need(isObj(h), 'format', 'its header is not a JSON object.');
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
  need(Array.isArray(h.stages), 'stages', 'its header has no list of stages.');
  const stages = h.stages as unknown[];
  const cursor = readCursor(h.cursor, stages.length, config);
  stages.forEach((s, i) => checkStage(s, i, n));

  const checkpoints = h.checkpoints === undefined ? undefined : readCheckpoints(h.checkpoints, config);
  return { config, presetName: h.presetName, createdAt: h.createdAt, stages: stages as StageRecord[], agents, betas: betas as number[], cursor, ...(checkpoints ? { checkpoints } : {}) };
}

const SEAT_QUANTS: readonly SavedCheckpoint['quant'][] = ['q8', 'q4', 'f32'];

/** The seats' checkpoints: a list of {agent, name, hash, quant}, one entry per agent at most, language tasks only. */
function readCheckpoints(v: unknown, config: Config): SavedCheckpoint[] {
  need(Array.isArray(v) && v.length <= config.agents, 'agents', `its "checkpoints" is not a list of at most ${config.agents} seats.`);
  need(v.length === 0 || isLlmTask(config.task), 'agents', `it seats checkpoints, but task "${config.task}" is not a language task.`);
  const out: SavedCheckpoint[] = [];
  v.forEach((c: unknown, i: number) => {
    const at = `its checkpoint entry ${i}`;
    need(isObj(c), 'agents', `${at} is not an object {agent, name, hash, quant}.`);
    need(typeof c.agent === 'number' && Number.isInteger(c.agent) && c.agent >= 0 && c.agent < config.agents, 'agents', `${at} has agent ${describe(c.agent)}; an agent is an integer in [0, ${config.agents - 1}].`);
    need(!out.some((x) => x.agent === c.agent), 'agents', `${at} seats agent ${c.agent as number} a second time.`);
    need(typeof c.name === 'string' && c.name.length > 0 && c.name.length <= 64, 'agents', `${at} has no valid name (1..64 characters).`);
    need(typeof c.hash === 'string' && /^[0-9a-f]{64}$/.test(c.hash), 'agents', `${at} has hash ${describe(c.hash)}; a folder hash is 64 lowercase hex digits.`);
    need(SEAT_QUANTS.includes(c.quant as SavedCheckpoint['quant']), 'agents', `${at} has quant ${describe(c.quant)}; expected "q8", "q4" or "f32".`);
    const onnx = c.onnx === undefined ? undefined : seatOnnx(c.onnx);
    need(c.onnx === undefined || onnx !== undefined, 'agents', `${at} has onnx ${describe(c.onnx)}; expected {file: "….onnx", mode: "trainable" or "frozen"}.`);
    out.push({ agent: c.agent, name: c.name, hash: c.hash, quant: c.quant as SavedCheckpoint['quant'], ...(onnx ? { onnx } : {}) });
  });
  return out;
}

/** The cursor, a StepRef: the end of the last finished stage, or an agent's step of the next one. */
function readCursor(c: unknown, k: number, config: Config): StepRef {
  const n = config.agents;
  need(
    isObj(c) && isCount(c.stage) && (c.agent === undefined || isCount(c.agent)) && Object.keys(c).every((x) => x === 'stage' || x === 'agent'),
    'cursor',
    'its cursor is not {stage, agent?} with whole numbers ≥ 0.',
  );
  need(k <= config.stages, 'cursor', `it holds ${k} finished stages, more than its config's stages = ${config.stages}.`);
  if (c.agent === undefined) {
    need(c.stage === k, 'cursor', `its cursor says ${c.stage} stages are finished, but it holds ${k} stage records.`);
    return { stage: k };
  }
  need(c.stage === k + 1, 'cursor', `its cursor names agent ${c.agent}'s step of stage ${c.stage}, but it holds ${k} stage records, so the stage in progress is ${k + 1}.`);
  need(c.stage <= config.stages, 'cursor', `its cursor names a step of stage ${c.stage}, past the last stage (${config.stages}).`);
  need(c.agent < n, 'cursor', `its cursor names agent ${c.agent}, but the team has only ${n} (agents 0..${n - 1}).`);
  return { stage: c.stage + 0, agent: c.agent + 0 }; // + 0: a −0 tag reads as 0, as it is written back
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
    certificate: {
      fields: { chosen: BOUND_TERMS, gamma: BOUND_TERMS, episodic: BOUND_TERMS, form: { oneOf: ['episodic', 'gamma'] } },
      // Absent in records written before the team-level certificate (docs/certificate.md §5.1).
      optional: {
        scope: { oneOf: ['team', 'agents'] },
        team: { fields: { ...numbers('ess', 'truncationCost', 'maxRatio'), mismatches: 'count', episodes: 'count' } },
        refused: 'string',
      },
    },
    ...numbers('jBefore', 'jAfter'),
    metrics: 'metrics',
    evaluation: { fields: { J: 'number', ci: 'number', exact: 'boolean' }, optional: { accuracy: 'number' } },
  },
  optional: {
    swap: SWAP_SPEC,
    // Absent in records written before "held" was a test (src/sat/heldCheck.ts); their cert/held metric is kept as it was.
    held: { fields: { state: { oneOf: ['held', 'not held', 'undecided', 'unchecked'] }, ...numbers('estimate', 'se'), pairs: 'count' } },
  },
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
