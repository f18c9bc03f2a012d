/**
 * A bounded reader of the protobuf wire format, for ONNX files (read.ts). Hand-written, like the
 * writer the exporter uses (bench/onnx/protobuf.ts), because the file is hostile input and the
 * reader must never allocate what the bytes do not hold: every length-delimited field is a view
 * (subarray) of the input after its length is checked against what is left, varints are at most
 * ten bytes and lengths at most 2^53 − 1. A generated protobuf library (protobufjs, as
 * onnxruntime's own tooling uses) would copy every `bytes` field, could not report which message
 * was cut short, and is not a dependency of this project.
 *
 * Not here: what the fields mean (read.ts), writing (bench/onnx/protobuf.ts).
 */
import { FormatError } from '../../core/errors';
import { escapeControl } from '../../core/text';

/** Wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32. */
export type WireType = 0 | 1 | 2 | 5;

export interface Field {
  readonly field: number;
  readonly wire: WireType;
  /** varint / fixed values (fixed64 as a bigint, fixed32 as its raw uint32). */
  readonly int: bigint;
  /** length-delimited payload (a view of the input). */
  readonly bytes: Uint8Array;
}

const EMPTY = new Uint8Array(0);

/** Iterates the fields of one message; `what` names the message in errors ("NodeProto 3 of the graph"). */
export function* fields(buf: Uint8Array, what: string): Generator<Field> {
  let p = 0;
  // Seven bytes (49 bits) are summed as a plain number; only a longer varint pays for BigInt.
  const varint = (): bigint => {
    let v = 0;
    for (let i = 0; i < 10; i++) {
      if (p >= buf.length) throw new FormatError(`${what}: the protobuf data ends inside a number (byte ${p} of ${buf.length}); the file is truncated`);
      const b = buf[p++]!;
      if (i === 7) return longVarint(BigInt(v), b, i);
      v += (b & 0x7f) * 2 ** (7 * i);
      if ((b & 0x80) === 0) return BigInt(v);
    }
    throw new FormatError(`${what}: a protobuf number at byte ${p} runs past ten bytes; the file is corrupt`);
  };
  const longVarint = (low: bigint, first: number, from: number): bigint => {
    let v = low;
    let b = first;
    for (let i = from; ; ) {
      v |= BigInt(b & 0x7f) << BigInt(7 * i);
      if ((b & 0x80) === 0) return v;
      if (++i >= 10) throw new FormatError(`${what}: a protobuf number at byte ${p} runs past ten bytes; the file is corrupt`);
      if (p >= buf.length) throw new FormatError(`${what}: the protobuf data ends inside a number (byte ${p} of ${buf.length}); the file is truncated`);
      b = buf[p++]!;
    }
  };
  while (p < buf.length) {
    const at = p;
    const key = varint();
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (field === 0) throw new FormatError(`${what}: field number 0 at byte ${at}; the file is not protobuf (or is corrupt)`);
    if (wire === 0) yield { field, wire, int: varint(), bytes: EMPTY };
    else if (wire === 1 || wire === 5) {
      const n = wire === 1 ? 8 : 4;
      if (p + n > buf.length) throw new FormatError(`${what}: field ${field} needs ${n} bytes at byte ${p} but ${buf.length - p} are left; the file is truncated`);
      const dv = new DataView(buf.buffer, buf.byteOffset + p, n);
      p += n;
      yield { field, wire, int: wire === 1 ? dv.getBigUint64(0, true) : BigInt(dv.getUint32(0, true)), bytes: EMPTY };
    } else if (wire === 2) {
      const len = varint();
      if (len > BigInt(buf.length - p)) {
        throw new FormatError(`${what}: field ${field} declares ${len} bytes at byte ${p} but only ${buf.length - p} are left; the file is truncated or corrupt`);
      }
      const n = Number(len);
      yield { field, wire, int: 0n, bytes: buf.subarray(p, p + n) };
      p += n;
    } else {
      throw new FormatError(`${what}: field ${field} has wire type ${wire} (groups or an unknown type) at byte ${at}; the file is not ONNX (or is corrupt)`);
    }
  }
}

/** A varint field as a safe integer (int64 fields such as dims, offsets): refused past ±2^53. */
export function safeInt(f: Field, what: string): number {
  let v = f.int;
  if (f.wire === 0 && v >= 1n << 63n) v -= 1n << 64n; // two's complement int64
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < -BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new FormatError(`${what} is ${v}, past the largest size this reader accepts (2^53 − 1)`);
  }
  return Number(v);
}

/** How many varints a packed repeated field holds (bytes without the continuation bit): counted before any is decoded. */
export function packedCount(bytes: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < bytes.length; i++) if ((bytes[i]! & 0x80) === 0) n++;
  return n;
}

/**
 * Appends the varints of a packed repeated field (dims, ints written packed) to `out`, one at a
 * time: a list of any length never passes through a spread or an argument list.
 */
export function packedInts(bytes: Uint8Array, what: string, out: number[] = []): number[] {
  let p = 0;
  while (p < bytes.length) {
    let v = 0n;
    let i = 0;
    for (;; i++) {
      if (i >= 10) throw new FormatError(`${what}: a packed number runs past ten bytes; the file is corrupt`);
      if (p >= bytes.length) throw new FormatError(`${what}: the packed numbers end inside one; the file is truncated`);
      const b = bytes[p++]!;
      v |= BigInt(b & 0x7f) << BigInt(7 * i);
      if ((b & 0x80) === 0) break;
    }
    out.push(safeInt({ field: 0, wire: 0, int: v, bytes: EMPTY }, what));
  }
  return out;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A string field (UTF-8, refused when malformed), with its control characters escaped
 * (src/core/text.ts): every name, operator and path of the file reaches messages and terminals
 * through here, so none can forge a line. A real graph's names have none, so nothing it names changes.
 */
export function str(f: Field, what: string): string {
  if (f.wire !== 2) throw new FormatError(`${what}: expected a string (wire type 2), got wire type ${f.wire}`);
  try {
    return escapeControl(UTF8.decode(f.bytes));
  } catch {
    throw new FormatError(`${what}: not valid UTF-8; the file is corrupt`);
  }
}
