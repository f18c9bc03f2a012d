/**
 * A minimal protobuf *encoder* — just what writing an ONNX ModelProto needs (export.ts):
 *   tag      = (field << 3) | wire type   (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32)
 *   varint   = 7 bits a byte, low group first, high bit = "more"; a negative int64 is its 64-bit
 *              two's complement, so always 10 bytes (done with BigInt, exact for any safe integer)
 *   len      = varint byte length, then the bytes (strings UTF-8, nested messages, raw data)
 *   fixed32  = 4 bytes little-endian (an f32 scalar)
 * Repeated scalars are written unpacked (one tag per element), which every parser must accept
 * for proto2 files like onnx.proto.
 *
 * A `Msg` collects its fields as byte chunks; `bytes()` concatenates them once. Nested messages
 * are encoded bottom-up (their length is known when the parent writes them).
 *
 * Not here: decoding, groups, zig-zag (sint) encodings, field-order rules (callers write fields
 * in field-number order, as protoc does, though parsers do not require it).
 */

const UTF8 = new TextEncoder();

/** Varint bytes of a (possibly negative) integer, as an int64/uint64 field stores it. */
export function varint(value: number | bigint): Uint8Array {
  if (typeof value === 'number' && !Number.isSafeInteger(value)) throw new RangeError(`protobuf varint: ${value} is not a safe integer`);
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    const byte = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v === 0n ? byte : byte | 0x80);
  } while (v !== 0n);
  return Uint8Array.from(out);
}

/** A message under construction (header). */
export class Msg {
  private readonly parts: Uint8Array[] = [];
  private size = 0;

  private push(b: Uint8Array): void {
    this.parts.push(b);
    this.size += b.length;
  }

  private tag(field: number, wire: 0 | 1 | 2 | 5): void {
    this.push(varint(field * 8 + wire));
  }

  /** int32 / int64 / enum / bool field (varint). */
  int(field: number, value: number | bigint): this {
    this.tag(field, 0);
    this.push(varint(value));
    return this;
  }

  /** Repeated int64, unpacked. */
  ints(field: number, values: readonly number[]): this {
    for (const v of values) this.int(field, v);
    return this;
  }

  /** float field (fixed32, little-endian). */
  float(field: number, value: number): this {
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    this.push(b);
    return this;
  }

  /** bytes field. */
  raw(field: number, data: Uint8Array): this {
    this.tag(field, 2);
    this.push(varint(data.length));
    this.push(data);
    return this;
  }

  /** string field (UTF-8). */
  str(field: number, s: string): this {
    return this.raw(field, UTF8.encode(s));
  }

  /** Embedded message field. */
  msg(field: number, m: Msg): this {
    return this.raw(field, m.bytes());
  }

  /** Encoded length so far. */
  get length(): number {
    return this.size;
  }

  /** The encoded message. */
  bytes(): Uint8Array {
    const out = new Uint8Array(this.size);
    let o = 0;
    for (const p of this.parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
}
