/**
 * The experiment file's bytes: one gzip member (RFC 1952, written by fflate with mtime 0, so the
 * same data gives the same bytes) holding a safetensors file (src/model/safetensors.ts) whose
 * metadata is { format, version: "2", header: "<the header, JSON text>" } and whose tensors are
 * the typed arrays, named by their index. In the header a typed array is `{"$f64": k}` (`$f32`,
 * `$i32`), a number JSON cannot spell `{"$num": "NaN" | "Infinity" | "-Infinity" | "-0"}`, and an
 * object key starting with "$" gets one more "$": every value round-trips bit for bit.
 *
 * gzip's trailer (CRC-32 and length) is the integrity check. fflate inflates but leaves the
 * trailer to its caller and reads bytes after a member as a further member, so `gunzipChecked`
 * reads the header's length, inflates capped (inflate.ts: it stops at the first step past the
 * cap, or past INFLATE_RATIO times the input read so far), and compares the trailer with the one
 * fflate writes for the contents. Every failure is a FileFail with its code and a specific reason
 * (savefile.ts words it for the page).
 *
 * Not here: what the header must hold (savefile.ts, src/sat/records.ts, payloads.ts).
 */
import { Gzip, gzipSync } from 'fflate';
import { FormatError } from '../core/errors';
import { formatSize, INFLATE_RATIO, INFLATE_SLACK } from '../core/limits';
import { describeValue as describe } from '../core/schema';
import { readSafetensors, writeSafetensors, type StTensor } from '../model/safetensors';
import { inflateCapped } from './inflate';

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
/** Longest reason quoted from another module's message. */
export const MAX_REASON = 700;

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

export class FileFail {
  constructor(
    readonly code: ExperimentErrorCode,
    readonly reason: string,
  ) {}
}

const FALLBACK = 'Nothing was loaded; the experiment on the page is unchanged.';

export function failed<T>(code: ExperimentErrorCode, reason: string): ParseResult<T> {
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

/**
 * Inflates raw deflate data: at most `maxBytes` out, and no prefix of the data inflating to more
 * than INFLATE_RATIO times its length plus INFLATE_SLACK (inflate.ts), so a bomb is refused after
 * a few kilobytes of its input. A stream that needs more input is FileFail('truncated').
 */
function inflateOrFail(data: Uint8Array, fileLength: number, maxBytes: number): Uint8Array {
  const r = inflateCapped(data, maxBytes, INFLATE_SLICE, { times: INFLATE_RATIO, slack: INFLATE_SLACK });
  if (r.ok) return r.bytes;
  if (r.why === 'too-large') throw new FileFail('too-large', `it decompresses to more than the ${maxBytes} bytes this playground reads.`);
  if (r.why === 'ratio') {
    const times = Math.floor(r.output / r.input);
    throw new FileFail(
      'too-large',
      `part of it decompresses to more than ${INFLATE_RATIO} times its size: the first ${r.input} bytes of its compressed data already inflate to ${r.output} bytes, ${times} times their size (this playground reads data that inflates at most ${INFLATE_RATIO} times, plus ${formatSize(INFLATE_SLACK)}; a real experiment compresses far less).`,
    );
  }
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
  const contents = inflateOrFail(bytes.subarray(h), n, maxBytes);
  const want = gzipTrailer(contents);
  if (sameBytes(bytes, n - 8, want)) return contents;
  for (let p = h; p + 8 < n; p++) {
    if (sameBytes(bytes, p, want)) throw new FileFail('trailing', `it has ${n - p - 8} unexpected bytes after its end at byte ${p + 8}; something was appended to it.`);
  }
  try {
    inflateOrFail(bytes.subarray(h, n - 8), n, maxBytes);
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

export function readContainer(bytes: Uint8Array, format: string, maxBytes = MAX_EXPERIMENT_BYTES): { header: string; blobs: Blob64[] } {
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
export type Trail = (string | number)[];
function at(root: string, trail: Trail): string {
  return root + trail.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('');
}

/** Sets out[k] = v; `__proto__` as an own key, never as the prototype. */
function put(out: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  else out[k] = v;
}

/** A JSON-safe copy of `v`, pushing typed arrays to `blobs`. Throws FormatError on what it cannot store. */
export function toJson(v: unknown, blobs: Blob64[], root: string, trail: Trail = []): unknown {
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

/** The `format` of each autosave part (the whole file's is EXPERIMENT_FORMAT). */
export const PART_FORMATS = {
  head: `${EXPERIMENT_FORMAT}/head`,
  boundary: `${EXPERIMENT_FORMAT}/boundary`,
  stage: `${EXPERIMENT_FORMAT}/stage`,
} as const;
/** A container's header, decoded (blob references resolved), and the check that every blob was referred to. */
export function readPart(bytes: Uint8Array, format: string, trail: Trail = [], maxBytes = MAX_EXPERIMENT_BYTES): { value: unknown; checkUsed: () => void } {
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
export function guarded<T>(read: () => T): ParseResult<T> {
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

/** `text`, cut to `max` characters. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
