/**
 * The ONNX messages both writers build (export.ts: the bench's fixed-length forward; decoder.ts:
 * Hugging Face-layout decoders with a KV cache): the element and attribute type numbers of
 * onnx.proto, a node attribute, a graph input/output's ValueInfoProto, and the [rows × cols] →
 * [cols × rows] transpose every MatMul weight needs (our matrices are [out × in], ONNX MatMul
 * computes x·M).
 *
 * Not here: the wire format (protobuf.ts), graphs (the writers).
 */
import { Msg } from './protobuf';

/** TensorProto.DataType values used here. */
export const FLOAT = 1;
export const UINT8 = 2;
export const INT64 = 7;
export const FLOAT16 = 10;

/** AttributeProto.AttributeType values used here. */
const ATTR_FLOAT = 1;
const ATTR_INT = 2;
const ATTR_INTS = 7;

/** A node attribute: an int, a list of ints, or a float. */
export type Attr = { name: string; i: number } | { name: string; ints: readonly number[] } | { name: string; f: number };

/** AttributeProto: name 1, f 2, i 3, ints 8, type 20. */
export function attrMsg(a: Attr): Msg {
  const m = new Msg().str(1, a.name);
  if ('f' in a) return m.float(2, a.f).int(20, ATTR_FLOAT);
  if ('i' in a) return m.int(3, a.i).int(20, ATTR_INT);
  return m.ints(8, a.ints).int(20, ATTR_INTS);
}

/** ValueInfoProto { name 1, type 2: TypeProto { tensor_type 1: { elem_type 1, shape 2 } } }; a string dim is symbolic. */
export function valueInfo(name: string, elemType: number, dims: readonly (number | string)[]): Msg {
  const shape = new Msg();
  // TensorShapeProto.dim 1: Dimension { dim_value 1 | dim_param 2 }
  for (const d of dims) shape.msg(1, typeof d === 'number' ? new Msg().int(1, d) : new Msg().str(2, d));
  const tensorType = new Msg().int(1, elemType).msg(2, shape);
  return new Msg().str(1, name).msg(2, new Msg().msg(1, tensorType));
}

/** Row-major [rows × cols] → row-major [cols × rows]. */
export function transpose(w: Float32Array, rows: number, cols: number): Float32Array {
  const t = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = w[r * cols + c]!;
  return t;
}
