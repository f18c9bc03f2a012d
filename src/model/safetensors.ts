/**
 * The safetensors file format (huggingface/safetensors), written and read from its spec: an 8-byte
 * little-endian header length N, N bytes of JSON ({ "__metadata__": {…}, "<name>": { dtype, shape,
 * data_offsets }, … }; we pad it so the data starts 8-aligned), then the tensors' bytes. The reader
 * is as strict as the reference: tensors exactly tile the data section, each is numel·sizeof(dtype)
 * bytes, and every failure is a bounded-length FormatError saying what and where. readSafetensors
 * copies the data out (no aliasing); readSafetensorsIndex checks a header alone, read by range, so a
 * loader reads each tensor's bytes when it needs them. F16/BF16 are raw Uint16 bits (src/core/f16.ts); BOOL, I64, U64 and F8 are
 * refused by name.
 *
 * Not here: what the tensors mean (weights.ts decides names, shapes and the model scheme).
 */
import { FormatError } from '../core/errors';
import { escapeControl } from '../core/text';

export type StDtype = 'F64' | 'F32' | 'F16' | 'BF16' | 'I32' | 'U32' | 'I16' | 'U16' | 'I8' | 'U8';

export type StData = Float64Array | Float32Array | Uint16Array | Int32Array | Uint32Array | Int16Array | Int8Array | Uint8Array;

export interface StTensor {
  readonly dtype: StDtype;
  readonly shape: readonly number[];
  readonly data: StData;
}

export interface Safetensors {
  /** Tensors in the order of their data in the file. */
  readonly tensors: Map<string, StTensor>;
  readonly metadata: Record<string, string>;
}

/** Largest header we accept (the reference implementation uses the same 100 MB limit). */
export const MAX_HEADER_BYTES = 100_000_000;

const DTYPES: Readonly<Record<StDtype, { size: number; make: (b: ArrayBuffer) => StData; is: (d: StData) => boolean }>> = {
  F64: { size: 8, make: (b) => new Float64Array(b), is: (d) => d instanceof Float64Array },
  F32: { size: 4, make: (b) => new Float32Array(b), is: (d) => d instanceof Float32Array },
  F16: { size: 2, make: (b) => new Uint16Array(b), is: (d) => d instanceof Uint16Array },
  BF16: { size: 2, make: (b) => new Uint16Array(b), is: (d) => d instanceof Uint16Array },
  I32: { size: 4, make: (b) => new Int32Array(b), is: (d) => d instanceof Int32Array },
  U32: { size: 4, make: (b) => new Uint32Array(b), is: (d) => d instanceof Uint32Array },
  I16: { size: 2, make: (b) => new Int16Array(b), is: (d) => d instanceof Int16Array },
  U16: { size: 2, make: (b) => new Uint16Array(b), is: (d) => d instanceof Uint16Array },
  I8: { size: 1, make: (b) => new Int8Array(b), is: (d) => d instanceof Int8Array },
  U8: { size: 1, make: (b) => new Uint8Array(b), is: (d) => d instanceof Uint8Array },
};
const KNOWN_UNSUPPORTED = ['BOOL', 'I64', 'U64', 'F8_E4M3', 'F8_E5M2'];
const ENTRY_KEYS = ['dtype', 'shape', 'data_offsets'];

function isDtype(s: string): s is StDtype {
  return Object.prototype.hasOwnProperty.call(DTYPES, s);
}

function assertLittleEndian(): void {
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
    throw new FormatError('safetensors: this platform is big-endian; only little-endian hosts are supported');
  }
}

function numel(shape: readonly number[]): number {
  let n = 1;
  for (const s of shape) n *= s;
  return n;
}

/** A shape as messages show it: every dim of a short one, the first and last few of a long one. */
export function showShape(shape: readonly unknown[]): string {
  if (shape.length <= 8) return `[${shape.join(', ')}]`;
  return `[${shape.slice(0, 4).join(', ')}, …, ${shape.slice(-2).join(', ')}] (${shape.length} dims)`;
}

/** A name or other text from a file, quoted for a message: at most 80 characters of it, its control characters escaped (JSON's escapes, then escapeControl for the rest). */
export function quote(text: string): string {
  return text.length <= 80 ? escapeControl(JSON.stringify(text)) : `${escapeControl(JSON.stringify(text.slice(0, 80)))}… (${text.length} characters)`;
}

/**
 * A value from a file's header as a message shows it, whatever it is: never recursive (a value
 * nested 100,000 deep would overflow JSON.stringify's stack) and never long.
 */
function preview(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null || typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (typeof v === 'string') return quote(v);
  if (Array.isArray(v)) {
    const flat = v.length <= 8 && v.every((x) => x === null || ['number', 'boolean', 'string'].includes(typeof x));
    if (flat) return `[${v.map((x) => (typeof x === 'string' ? quote(x) : String(x))).join(', ')}]`;
    return `an array of ${v.length} entr${v.length === 1 ? 'y' : 'ies'}${v.some((x) => typeof x === 'object' && x !== null) ? ' (some of them nested)' : ''}`;
  }
  return `an object with ${Object.keys(v as object).length} field(s)`;
}

/**
 * Serialises tensors (in the given order) and string metadata to safetensors bytes. Throws
 * FormatError if a tensor's data does not match its dtype or shape.
 */
export function writeSafetensors(
  tensors: ReadonlyMap<string, StTensor> | Readonly<Record<string, StTensor>>,
  metadata: Readonly<Record<string, string>> = {},
): Uint8Array {
  assertLittleEndian();
  const entries: [string, StTensor][] = tensors instanceof Map ? [...tensors.entries()] : Object.entries(tensors);
  const header: Record<string, unknown> = {};
  const metaKeys = Object.keys(metadata);
  if (metaKeys.length > 0) {
    const meta: Record<string, string> = {};
    for (const k of metaKeys) {
      const v = metadata[k];
      if (typeof v !== 'string') throw new FormatError(`safetensors: metadata ${quote(k)} must be a string, got ${typeof v}`);
      meta[k] = v;
    }
    header.__metadata__ = meta;
  }
  let offset = 0;
  for (const [name, t] of entries) {
    if (name === '' || name === '__metadata__') throw new FormatError(`safetensors: "${name}" cannot be a tensor name`);
    if (!isDtype(t.dtype)) throw new FormatError(`safetensors: tensor ${quote(name)} has unknown dtype ${preview(t.dtype)}`);
    const spec = DTYPES[t.dtype];
    if (!spec.is(t.data)) {
      throw new FormatError(`safetensors: tensor ${quote(name)} is ${t.dtype} but its data is a ${t.data.constructor.name}`);
    }
    if (!t.shape.every((s) => Number.isSafeInteger(s) && s >= 0)) {
      throw new FormatError(`safetensors: tensor ${quote(name)} shape ${showShape(t.shape)} must be non-negative integers`);
    }
    const n = numel(t.shape);
    if (n !== t.data.length) {
      throw new FormatError(`safetensors: tensor ${quote(name)} has ${t.data.length} values but shape ${showShape(t.shape)} needs ${n}`);
    }
    if (Object.prototype.hasOwnProperty.call(header, name)) throw new FormatError(`safetensors: tensor ${quote(name)} given twice`);
    const end = offset + t.data.byteLength;
    header[name] = { dtype: t.dtype, shape: [...t.shape], data_offsets: [offset, end] };
    offset = end;
  }
  let json = JSON.stringify(header);
  let hbytes = new TextEncoder().encode(json);
  const pad = (8 - (hbytes.length % 8)) % 8;
  if (pad > 0) {
    json += ' '.repeat(pad);
    hbytes = new TextEncoder().encode(json);
  }
  const out = new Uint8Array(8 + hbytes.length + offset);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, hbytes.length, true);
  dv.setUint32(4, Math.floor(hbytes.length / 2 ** 32), true);
  out.set(hbytes, 8);
  let p = 8 + hbytes.length;
  for (const [, t] of entries) {
    out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), p);
    p += t.data.byteLength;
  }
  return out;
}

/** A tensor's entry in a file's header: its dtype, shape and byte range [begin, end) in the data section. */
export interface StEntry {
  readonly name: string;
  readonly dtype: StDtype;
  readonly shape: readonly number[];
  readonly begin: number;
  readonly end: number;
}

/**
 * A file's header, read and checked without its data: the entries sorted by offset (exactly tiling
 * the data section), the metadata, and where the data section starts in the file.
 */
export interface SafetensorsIndex {
  readonly entries: readonly StEntry[];
  readonly metadata: Record<string, string>;
  readonly dataStart: number;
}

/** A file's bytes read by range (a positioned read of a file on disk, a Blob slice, or bytes in memory). */
export interface ByteRanges {
  readonly byteLength: number;
  /** Bytes [begin, end) of the file; fewer than asked is an error of the reader. */
  read(begin: number, end: number): Promise<Uint8Array>;
}

/** Bytes [begin, end) of `src`; a FormatError when the reader gives fewer or more (the file changed since it was sized). */
export async function readRange(src: ByteRanges, begin: number, end: number): Promise<Uint8Array> {
  const b = await src.read(begin, end);
  if (b.length !== end - begin) {
    throw new FormatError(`safetensors: bytes [${begin}, ${end}) of the file read as ${b.length} bytes, not ${end - begin}; the file changed or was truncated while it was read`);
  }
  return b;
}

/** Bytes already in memory, read by range without a copy. */
export function bytesRanges(bytes: Uint8Array): ByteRanges {
  return { byteLength: bytes.byteLength, read: (begin, end) => Promise.resolve(bytes.subarray(begin, end)) };
}

/** What a reader that knows what the file should hold can refuse early (readSafetensors). */
export interface ReadBounds {
  /** Largest header accepted (default MAX_HEADER_BYTES), and why, for the message. */
  readonly maxHeaderBytes?: number;
  readonly headerWhy?: string;
  /** Called for each entry once its own fields are checked, before any tensor data is copied; throws to refuse the file. */
  readonly checkEntry?: (name: string, dtype: StDtype, shape: readonly number[]) => void;
}

/** The header length N from a file's first 8 bytes, checked against the file's length L and the bounds. */
function headerLength(first: Uint8Array, L: number, bounds: ReadBounds): number {
  assertLittleEndian();
  if (L < 8) {
    throw new FormatError(
      `safetensors: file is only ${L} byte${L === 1 ? '' : 's'} long; a safetensors file starts with an 8-byte header length (file empty or truncated)`,
    );
  }
  const dv = new DataView(first.buffer, first.byteOffset, 8);
  const N = dv.getUint32(0, true) + dv.getUint32(4, true) * 2 ** 32;
  if (N > MAX_HEADER_BYTES) {
    throw new FormatError(
      `safetensors: header length ${N} bytes is absurd (limit ${MAX_HEADER_BYTES}); the file is corrupt or not a safetensors file`,
    );
  }
  if (bounds.maxHeaderBytes !== undefined && N > bounds.maxHeaderBytes) {
    throw new FormatError(`safetensors: header length ${N} bytes is more than the ${bounds.maxHeaderBytes} a file of this kind needs${bounds.headerWhy ? ` (${bounds.headerWhy})` : ''}; it holds entries that do not belong to it`);
  }
  if (8 + N > L) {
    throw new FormatError(
      `safetensors: header length ${N} bytes runs past the end of the file (${L} bytes, so at most ${L - 8} header bytes); the file is truncated or not a safetensors file`,
    );
  }
  return N;
}

/** The header's N bytes (file bytes 8..8+N) decoded and checked against a file of L bytes (header). */
function parseHeader(hbytes: Uint8Array, L: number, bounds: ReadBounds): SafetensorsIndex {
  const N = hbytes.length;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(hbytes);
  } catch {
    throw new FormatError(`safetensors: header (bytes 8..${8 + N}) is not valid UTF-8; the file is corrupt or not a safetensors file`);
  }
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new FormatError(`safetensors: header is not valid JSON (${why}); the file is corrupt or not a safetensors file`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) {
    const kind = header === null ? 'null' : Array.isArray(header) ? 'an array' : typeof header;
    throw new FormatError(`safetensors: header must be a JSON object of tensors, got ${kind}`);
  }
  const h = header as Record<string, unknown>;

  const metadata: Record<string, string> = {};
  const rawMeta = h.__metadata__;
  if (rawMeta !== undefined) {
    if (typeof rawMeta !== 'object' || rawMeta === null || Array.isArray(rawMeta)) {
      throw new FormatError('safetensors: "__metadata__" must be an object of string values');
    }
    for (const [k, v] of Object.entries(rawMeta as Record<string, unknown>)) {
      if (typeof v !== 'string') throw new FormatError(`safetensors: "__metadata__" value ${quote(k)} must be a string, got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`);
      metadata[k] = v;
    }
  }

  const dataLen = L - 8 - N;
  const entries: StEntry[] = [];
  for (const [name, raw] of Object.entries(h)) {
    if (name === '__metadata__') continue;
    const where = `safetensors: tensor ${quote(name)}`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      throw new FormatError(`${where}: entry must be an object with dtype, shape and data_offsets`);
    }
    const r = raw as Record<string, unknown>;
    for (const k of Object.keys(r)) {
      if (!ENTRY_KEYS.includes(k)) throw new FormatError(`${where}: unknown field ${quote(k)} (allowed: ${ENTRY_KEYS.join(', ')})`);
    }
    const dtype = r.dtype;
    if (typeof dtype !== 'string') throw new FormatError(`${where}: "dtype" must be a string such as "F32", got ${preview(dtype)}`);
    if (!isDtype(dtype)) {
      if (KNOWN_UNSUPPORTED.includes(dtype)) {
        throw new FormatError(`${where}: dtype "${dtype}" is valid safetensors but not supported here (supported: ${Object.keys(DTYPES).join(', ')})`);
      }
      throw new FormatError(`${where}: unknown dtype ${quote(dtype)} (supported: ${Object.keys(DTYPES).join(', ')})`);
    }
    const shape = r.shape;
    if (!Array.isArray(shape) || !shape.every((s) => typeof s === 'number' && Number.isSafeInteger(s) && s >= 0)) {
      throw new FormatError(`${where}: "shape" must be an array of non-negative integers, got ${preview(shape)}`);
    }
    const offs = r.data_offsets;
    if (
      !Array.isArray(offs) ||
      offs.length !== 2 ||
      !offs.every((s) => typeof s === 'number' && Number.isSafeInteger(s) && s >= 0)
    ) {
      throw new FormatError(`${where}: "data_offsets" must be [begin, end] with non-negative integers, got ${preview(offs)}`);
    }
    const [begin, end] = offs as [number, number];
    if (end < begin) throw new FormatError(`${where}: data_offsets [${begin}, ${end}] end before they begin`);
    const size = DTYPES[dtype].size;
    const need = numel(shape as number[]) * size;
    if (end - begin !== need) {
      throw new FormatError(
        `${where}: data_offsets [${begin}, ${end}] span ${end - begin} bytes but shape ${showShape(shape)} of ${dtype} needs ${need}`,
      );
    }
    if (end > dataLen) {
      throw new FormatError(
        `safetensors: file is truncated or its offsets are out of bounds: tensor ${quote(name)} needs data bytes [${begin}, ${end}) but only ${dataLen} bytes follow the header (file is ${L} bytes, expected at least ${8 + N + end})`,
      );
    }
    bounds.checkEntry?.(name, dtype, shape as number[]);
    entries.push({ name, dtype, shape: [...(shape as number[])], begin, end });
  }

  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let pos = 0;
  let prev: StEntry | null = null;
  for (const e of entries) {
    if (e.begin < pos && prev) {
      throw new FormatError(
        `safetensors: tensors ${quote(prev.name)} [${prev.begin}, ${prev.end}) and ${quote(e.name)} [${e.begin}, ${e.end}) overlap in the data section`,
      );
    }
    if (e.begin > pos) {
      throw new FormatError(
        `safetensors: data bytes [${pos}, ${e.begin}) before tensor ${quote(e.name)} belong to no tensor; tensors must be packed contiguously from offset 0`,
      );
    }
    pos = e.end;
    prev = e;
  }
  if (pos !== dataLen) {
    throw new FormatError(`safetensors: ${dataLen - pos} unexpected bytes after the last tensor (data section is ${dataLen} bytes, tensors end at ${pos})`);
  }

  return { entries, metadata, dataStart: 8 + N };
}

/**
 * Parses safetensors bytes, validating everything; throws FormatError with a specific message.
 * `bounds` lets a caller that knows what the file should hold refuse a header too large for it,
 * or an entry it does not expect, before the header is decoded or any data copied.
 */
export function readSafetensors(bytes: Uint8Array, bounds: ReadBounds = {}): Safetensors {
  const L = bytes.length;
  const N = headerLength(bytes.subarray(0, Math.min(8, L)), L, bounds);
  const { entries, metadata, dataStart } = parseHeader(bytes.subarray(8, 8 + N), L, bounds);
  const tensors = new Map<string, StTensor>();
  const base = bytes.byteOffset + dataStart;
  for (const e of entries) {
    const buf = bytes.buffer.slice(base + e.begin, base + e.end) as ArrayBuffer;
    tensors.set(e.name, { dtype: e.dtype, shape: e.shape, data: DTYPES[e.dtype].make(buf) });
  }
  return { tensors, metadata };
}

/**
 * A file's header read by range (its first 8 bytes, then the header alone), checked exactly as
 * readSafetensors checks it, so a loader can then read each tensor's bytes as it converts them
 * (`dataStart + begin`, `dataStart + end`) and no copy of the whole file is ever made.
 */
export async function readSafetensorsIndex(src: ByteRanges, bounds: ReadBounds = {}): Promise<SafetensorsIndex> {
  const L = src.byteLength;
  const N = headerLength(L < 8 ? new Uint8Array(8) : await readRange(src, 0, 8), L, bounds);
  return parseHeader(await readRange(src, 8, 8 + N), L, bounds);
}

/** Bytes per element of a dtype. */
export function dtypeSize(dtype: StDtype): number {
  return DTYPES[dtype].size;
}
