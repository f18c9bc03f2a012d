/**
 * Reads an ONNX file (a ModelProto) into what the playground needs of it: the opsets, the graph's
 * nodes (operator, domain, inputs, outputs, scalar and list attributes), its inputs and outputs,
 * and its initializers as *references* — dims, data type and where the bytes are (raw_data, the
 * typed repeated fields, or an external data file) — decoded to numbers only when asked
 * (`tensorF32`, `tensorBytes`). Every size is checked before anything is allocated:
 *   - dims must be integers ≥ 0 whose product stays below MAX_ELEMENTS (no overflow);
 *   - a tensor's bytes must be exactly what its dims and type need (so a 1 GB initializer
 *     declared in a 1 MB file is refused by name, before a 1 GB array exists);
 *   - external data must name a file of the folder (no path outside it), with an offset and
 *     length inside that file;
 *   - every node's operator must be one this reader knows (KNOWN_OPS), else the node is named.
 * Errors are FormatErrors naming the file, the node or the initializer.
 *
 * Not here: the protobuf wire format (wire.ts), what the initializers mean for a Llama model
 * (llama.ts), running the graph (ort.ts).
 */
import { FormatError } from '../../core/errors';
import { f16ToF32 } from '../../core/f16';
import { fields, packedInts, safeInt, str } from './wire';

/** TensorProto.DataType codes. */
export const DT = { FLOAT: 1, UINT8: 2, INT8: 3, UINT16: 4, INT16: 5, INT32: 6, INT64: 7, STRING: 8, BOOL: 9, FLOAT16: 10, DOUBLE: 11, UINT32: 12, UINT64: 13, BFLOAT16: 16, UINT4: 21, INT4: 22 } as const;
const DT_NAME: Record<number, string> = Object.fromEntries(Object.entries(DT).map(([k, v]) => [v, k.toLowerCase()]));
/** Bits per element of each type this reader decodes. */
const DT_BITS: Record<number, number> = { 1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64, 16: 16, 21: 4, 22: 4 };

/** The most elements one tensor may declare (2^31: a 2 GB ArrayBuffer of bytes, 8 GB of f32). */
export const MAX_ELEMENTS = 2 ** 31;

export function dtypeName(t: number): string {
  return DT_NAME[t] ?? `type ${t}`;
}

export interface OnnxAttr {
  readonly name: string;
  readonly i?: number;
  readonly f?: number;
  readonly s?: string;
  readonly ints?: readonly number[];
  readonly floats?: readonly number[];
}

export interface OnnxNode {
  readonly name: string;
  readonly opType: string;
  /** '' for the default ONNX domain ('ai.onnx' is normalized to ''). */
  readonly domain: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly attrs: ReadonlyMap<string, OnnxAttr>;
}

export interface OnnxValueInfo {
  readonly name: string;
  readonly elemType: number;
  /** Each dim: a number (dim_value), a string (dim_param), or null (unknown). */
  readonly dims: readonly (number | string | null)[];
}

/** Where an initializer's bytes are. */
export type TensorSource =
  | { readonly kind: 'raw'; readonly bytes: Uint8Array }
  | { readonly kind: 'external'; readonly file: string; readonly offset: number; readonly length: number }
  | { readonly kind: 'floats'; readonly values: Float32Array }
  | { readonly kind: 'int32s' | 'int64s'; readonly values: readonly number[] };

export interface OnnxTensor {
  readonly name: string;
  readonly dims: readonly number[];
  readonly dataType: number;
  readonly count: number;
  readonly source: TensorSource;
}

export interface OnnxModel {
  /** The file's name in the folder ("onnx/model_q4.onnx"). */
  readonly file: string;
  readonly irVersion: number;
  readonly producer: string;
  /** domain → opset version ('' the default domain). */
  readonly opsets: ReadonlyMap<string, number>;
  readonly nodes: readonly OnnxNode[];
  readonly inputs: readonly OnnxValueInfo[];
  readonly outputs: readonly OnnxValueInfo[];
  readonly initializers: ReadonlyMap<string, OnnxTensor>;
}

/**
 * Operators this reader accepts: the default domain's (the ones decoder exports use, and the
 * common rest), and onnxruntime's com.microsoft contrib operators that transformers.js /
 * onnx-community and onnxruntime-genai decoders use. Anything else is refused by node.
 */
export const KNOWN_OPS: Readonly<Record<string, ReadonlySet<string>>> = {
  '': new Set([
    'Abs', 'Add', 'And', 'ArgMax', 'Cast', 'CastLike', 'Ceil', 'Clip', 'Concat', 'ConcatFromSequence', 'Constant', 'ConstantOfShape', 'Cos', 'CumSum', 'DequantizeLinear',
    'Div', 'DynamicQuantizeLinear', 'Einsum', 'Equal', 'Erf', 'Exp', 'Expand', 'Flatten', 'Floor', 'Gather', 'GatherElements', 'GatherND', 'Gelu', 'Gemm', 'Greater',
    'GreaterOrEqual', 'Identity', 'If', 'IsInf', 'IsNaN', 'LayerNormalization', 'Less', 'LessOrEqual', 'Log', 'LogSoftmax', 'MatMul', 'MatMulInteger', 'Max', 'Mean', 'Min', 'Mod',
    'Mul', 'Neg', 'Not', 'Or', 'Pow', 'QuantizeLinear', 'Range', 'Reciprocal', 'ReduceL2', 'ReduceMax', 'ReduceMean', 'ReduceMin', 'ReduceSum', 'Relu', 'Reshape', 'Resize',
    'RMSNormalization', 'RotaryEmbedding', 'ScatterND', 'Shape', 'Sigmoid', 'Sign', 'Sin', 'Size', 'Slice', 'Softmax', 'Softplus', 'Split', 'Sqrt', 'Squeeze', 'Sub', 'Sum',
    'Tanh', 'Tile', 'TopK', 'Transpose', 'Trilu', 'Unsqueeze', 'Where', 'Xor', 'Attention',
  ]),
  'com.microsoft': new Set([
    'MatMulNBits', 'GatherBlockQuantized', 'GroupQueryAttention', 'MultiHeadAttention', 'RotaryEmbedding', 'SimplifiedLayerNormalization', 'SkipSimplifiedLayerNormalization',
    'SkipLayerNormalization', 'FastGelu', 'BiasGelu', 'QuickGelu', 'Gelu', 'DynamicQuantizeMatMul', 'MatMulIntegerToFloat', 'FusedMatMul', 'QuantizeLinear', 'DequantizeLinear',
  ]),
};

function normDomain(d: string): string {
  return d === 'ai.onnx' ? '' : d;
}

function parseAttr(buf: Uint8Array, what: string): OnnxAttr {
  let name = '';
  let i: number | undefined;
  let f: number | undefined;
  let s: string | undefined;
  const ints: number[] = [];
  const floats: number[] = [];
  for (const fl of fields(buf, what)) {
    if (fl.field === 1) name = str(fl, `${what} name`);
    else if (fl.field === 2 && fl.wire === 5) f = new DataView(new Uint32Array([Number(fl.int)]).buffer).getFloat32(0, true);
    else if (fl.field === 3) i = safeInt(fl, `${what} "${name}"`);
    else if (fl.field === 4) s = str(fl, `${what} "${name}"`);
    else if (fl.field === 8) {
      if (fl.wire === 2) ints.push(...packedInts(fl.bytes, `${what} "${name}"`));
      else ints.push(safeInt(fl, `${what} "${name}"`));
    } else if (fl.field === 7) {
      if (fl.wire === 2) {
        if (fl.bytes.length % 4 !== 0) throw new FormatError(`${what} "${name}": packed floats of ${fl.bytes.length} bytes`);
        const dv = new DataView(fl.bytes.buffer, fl.bytes.byteOffset, fl.bytes.length);
        for (let k = 0; k < fl.bytes.length; k += 4) floats.push(dv.getFloat32(k, true));
      } else floats.push(new DataView(new Uint32Array([Number(fl.int)]).buffer).getFloat32(0, true));
    }
  }
  return { name, i, f, s, ints: ints.length ? ints : undefined, floats: floats.length ? floats : undefined };
}

function parseNode(buf: Uint8Array, index: number, file: string): OnnxNode {
  const what = `${file}: node ${index}`;
  const inputs: string[] = [];
  const outputs: string[] = [];
  const attrs = new Map<string, OnnxAttr>();
  let name = '';
  let opType = '';
  let domain = '';
  for (const f of fields(buf, what)) {
    if (f.field === 1) inputs.push(str(f, `${what} input`));
    else if (f.field === 2) outputs.push(str(f, `${what} output`));
    else if (f.field === 3) name = str(f, `${what} name`);
    else if (f.field === 4) opType = str(f, `${what} op_type`);
    else if (f.field === 7) domain = normDomain(str(f, `${what} domain`));
    else if (f.field === 5 && f.wire === 2) {
      const a = parseAttr(f.bytes, `${what} attribute`);
      attrs.set(a.name, a);
    }
  }
  return { name: name || `#${index}`, opType, domain, inputs, outputs, attrs };
}

function parseValueInfo(buf: Uint8Array, what: string): OnnxValueInfo {
  let name = '';
  let elemType = 0;
  const dims: (number | string | null)[] = [];
  for (const f of fields(buf, what)) {
    if (f.field === 1) name = str(f, `${what} name`);
    else if (f.field === 2 && f.wire === 2) {
      for (const t of fields(f.bytes, `${what} type`)) {
        if (t.field !== 1 || t.wire !== 2) continue; // tensor_type only
        for (const tt of fields(t.bytes, `${what} tensor type`)) {
          if (tt.field === 1) elemType = safeInt(tt, `${what} elem_type`);
          else if (tt.field === 2 && tt.wire === 2) {
            for (const d of fields(tt.bytes, `${what} shape`)) {
              if (d.field !== 1 || d.wire !== 2) continue;
              let dim: number | string | null = null;
              for (const dv of fields(d.bytes, `${what} dim`)) {
                if (dv.field === 1) dim = safeInt(dv, `${what} dim`);
                else if (dv.field === 2) dim = str(dv, `${what} dim`);
              }
              dims.push(dim);
            }
          }
        }
      }
    }
  }
  return { name, elemType, dims };
}

/** Elements of `dims`, refused when a dim is negative or the product passes MAX_ELEMENTS. */
export function elementCount(dims: readonly number[], what: string): number {
  let n = 1;
  for (const d of dims) {
    if (!Number.isInteger(d) || d < 0) throw new FormatError(`${what}: dimension ${d} in [${dims.join(', ')}] is not a size`);
    n *= d;
    if (n > MAX_ELEMENTS) throw new FormatError(`${what}: dims [${dims.join(', ')}] hold more than ${MAX_ELEMENTS} elements (the product overflows what this reader accepts)`);
  }
  return n;
}

/** Bytes `count` elements of `dataType` take (4-bit types packed two to a byte). */
export function byteLength(dataType: number, count: number): number {
  return Math.ceil((count * DT_BITS[dataType]!) / 8);
}

function parseTensor(buf: Uint8Array, file: string, index: number): OnnxTensor {
  let what = `${file}: initializer ${index}`;
  const dims: number[] = [];
  let dataType = 0;
  let name = '';
  let raw: Uint8Array | null = null;
  let floats: Float32Array | null = null;
  const int32s: number[] = [];
  const int64s: number[] = [];
  const external = new Map<string, string>();
  let location = 0;
  for (const f of fields(buf, what)) {
    switch (f.field) {
      case 1:
        if (f.wire === 2) dims.push(...packedInts(f.bytes, `${what} dims`));
        else dims.push(safeInt(f, `${what} dim`));
        break;
      case 2: dataType = safeInt(f, `${what} data_type`); break;
      case 3: throw new FormatError(`${what}: a segmented tensor; not supported`);
      case 4:
        if (f.wire === 2) {
          if (f.bytes.length % 4 !== 0) throw new FormatError(`${what}: float_data of ${f.bytes.length} bytes, not a whole number of floats`);
          const prev: Float32Array = floats ?? new Float32Array(0);
          const next: Float32Array = new Float32Array(prev.length + f.bytes.length / 4);
          next.set(prev);
          const dv = new DataView(f.bytes.buffer, f.bytes.byteOffset, f.bytes.length);
          for (let k = 0; k < f.bytes.length / 4; k++) next[prev.length + k] = dv.getFloat32(4 * k, true);
          floats = next;
        }
        break;
      case 5:
        if (f.wire === 2) int32s.push(...packedInts(f.bytes, `${what} int32_data`).map((v) => v | 0));
        else int32s.push(safeInt(f, `${what} int32_data`) | 0);
        break;
      case 7:
        if (f.wire === 2) int64s.push(...packedInts(f.bytes, `${what} int64_data`));
        else int64s.push(safeInt(f, `${what} int64_data`));
        break;
      case 8: name = str(f, `${what} name`); what = `${file}: initializer "${name}"`; break;
      case 9: raw = f.bytes; break;
      case 13: {
        let k = '';
        let v = '';
        for (const e of fields(f.bytes, `${what} external_data`)) {
          if (e.field === 1) k = str(e, `${what} external_data key`);
          else if (e.field === 2) v = str(e, `${what} external_data value`);
        }
        external.set(k, v);
        break;
      }
      case 14: location = safeInt(f, `${what} data_location`); break;
      default: break;
    }
  }
  if (!(dataType in DT_BITS)) throw new FormatError(`${what}: data type ${dtypeName(dataType)} is not one this reader decodes`);
  const count = elementCount(dims, what);
  const need = byteLength(dataType, count);
  const shape = `[${dims.join(', ')}] ${dtypeName(dataType)}`;
  let source: TensorSource;
  if (location === 1) {
    const file = external.get('location');
    if (!file) throw new FormatError(`${what}: external data without a "location"`);
    const offset = Number(external.get('offset') ?? '0');
    const length = external.has('length') ? Number(external.get('length')) : need;
    if (!Number.isSafeInteger(offset) || offset < 0) throw new FormatError(`${what}: external data offset "${external.get('offset')}" is not a byte offset`);
    if (!Number.isSafeInteger(length) || length < 0) throw new FormatError(`${what}: external data length "${external.get('length')}" is not a byte count`);
    if (length !== need) throw new FormatError(`${what}: external data length ${length} bytes, but ${shape} needs ${need}`);
    source = { kind: 'external', file, offset, length };
  } else if (raw !== null) {
    if (raw.length !== need) throw new FormatError(`${what}: ${shape} needs ${need} bytes but the file holds ${raw.length} for it`);
    source = { kind: 'raw', bytes: raw };
  } else if (floats !== null) {
    if (floats.length !== count) throw new FormatError(`${what}: ${shape} needs ${count} values but float_data holds ${floats.length}`);
    source = { kind: 'floats', values: floats };
  } else if (int32s.length > 0 || (count === 0 && dataType !== DT.INT64)) {
    if (int32s.length !== count) throw new FormatError(`${what}: ${shape} needs ${count} values but int32_data holds ${int32s.length}`);
    source = { kind: 'int32s', values: int32s };
  } else {
    if (int64s.length !== count) throw new FormatError(`${what}: ${shape} needs ${count} values but the file holds ${int64s.length} for it`);
    source = { kind: 'int64s', values: int64s };
  }
  return { name, dims, dataType, count, source };
}

/** The folder holding the ONNX file's external data: file names relative to the .onnx file's directory. */
function resolveExternal(onnxFile: string, location: string): string | null {
  if (location.startsWith('/') || location.includes('\\') || location.split('/').some((p) => p === '..' || p === '')) return null;
  const dir = onnxFile.includes('/') ? onnxFile.slice(0, onnxFile.lastIndexOf('/') + 1) : '';
  return dir + location;
}

/**
 * Parses `files.get(file)` (a ModelProto). External data is located in `files` (names relative to
 * the folder) and checked against that file's size; nothing is decoded yet.
 */
export function readOnnx(files: ReadonlyMap<string, Uint8Array>, file: string): OnnxModel {
  const bytes = files.get(file);
  if (bytes === undefined) throw new FormatError(`ONNX folder: "${file}" is missing`);
  let irVersion = 0;
  let producer = '';
  const opsets = new Map<string, number>();
  let graph: Uint8Array | null = null;
  for (const f of fields(bytes, `${file}: ModelProto`)) {
    if (f.field === 1) irVersion = safeInt(f, `${file}: ir_version`);
    else if (f.field === 2) producer = str(f, `${file}: producer_name`);
    else if (f.field === 7 && f.wire === 2) graph = f.bytes;
    else if (f.field === 8 && f.wire === 2) {
      let d = '';
      let v = 0;
      for (const o of fields(f.bytes, `${file}: opset_import`)) {
        if (o.field === 1) d = normDomain(str(o, `${file}: opset domain`));
        else if (o.field === 2) v = safeInt(o, `${file}: opset version`);
      }
      opsets.set(d, v);
    }
  }
  if (irVersion === 0 || graph === null) throw new FormatError(`${file}: not an ONNX model (no ir_version or no graph in the protobuf)`);
  const nodes: OnnxNode[] = [];
  const inputs: OnnxValueInfo[] = [];
  const outputs: OnnxValueInfo[] = [];
  const initializers = new Map<string, OnnxTensor>();
  let nNode = 0;
  let nInit = 0;
  for (const f of fields(graph, `${file}: GraphProto`)) {
    if (f.wire !== 2) continue;
    if (f.field === 1) nodes.push(parseNode(f.bytes, nNode++, file));
    else if (f.field === 5) {
      const t = parseTensor(f.bytes, file, nInit++);
      if (initializers.has(t.name)) throw new FormatError(`${file}: initializer "${t.name}" is defined twice`);
      initializers.set(t.name, t);
    } else if (f.field === 15) throw new FormatError(`${file}: sparse initializers are not supported`);
    else if (f.field === 11) inputs.push(parseValueInfo(f.bytes, `${file}: graph input`));
    else if (f.field === 12) outputs.push(parseValueInfo(f.bytes, `${file}: graph output`));
  }
  for (const n of nodes) {
    const known = KNOWN_OPS[n.domain];
    if (known === undefined || !known.has(n.opType)) {
      throw new FormatError(`${file}: node "${n.name}" uses operator "${n.opType}"${n.domain ? ` of domain "${n.domain}"` : ''}, which this playground does not know; supported: the ONNX default domain's common operators and onnxruntime's com.microsoft decoder operators (docs/models.md)`);
    }
  }
  // External data: the named file must be in the folder, and the range inside it.
  for (const t of initializers.values()) {
    if (t.source.kind !== 'external') continue;
    const where = resolveExternal(file, t.source.file);
    if (where === null) throw new FormatError(`${file}: initializer "${t.name}" names external data "${t.source.file}", a path outside the model's folder`);
    const data = files.get(where);
    if (data === undefined) throw new FormatError(`${file}: initializer "${t.name}" is stored in "${where}", which the folder lacks`);
    if (t.source.offset + t.source.length > data.length) {
      throw new FormatError(`${file}: initializer "${t.name}" says its ${t.source.length} bytes are at offset ${t.source.offset} of "${where}", but that file has ${data.length} bytes; the external data is truncated or the offsets are wrong`);
    }
  }
  return { file, irVersion, producer, opsets, nodes, inputs, outputs, initializers };
}

/** The bytes of an initializer stored raw or externally (little-endian, as ONNX stores them). */
function rawBytes(m: OnnxModel, files: ReadonlyMap<string, Uint8Array>, t: OnnxTensor): Uint8Array | null {
  if (t.source.kind === 'raw') return t.source.bytes;
  if (t.source.kind === 'external') {
    const where = resolveExternal(m.file, t.source.file)!;
    return files.get(where)!.subarray(t.source.offset, t.source.offset + t.source.length);
  }
  return null;
}

let f16Table: Float32Array | null = null;

/** An initializer of type float, float16 or bfloat16 as f32 (a fresh array); other types refused by name. */
export function tensorF32(m: OnnxModel, files: ReadonlyMap<string, Uint8Array>, t: OnnxTensor): Float32Array {
  const what = `${m.file}: initializer "${t.name}"`;
  if (t.source.kind === 'floats') return t.source.values.slice();
  const raw = rawBytes(m, files, t);
  if (t.dataType === DT.FLOAT) {
    if (raw === null) throw new FormatError(`${what}: float data in ${t.source.kind}`);
    const out = new Float32Array(t.count);
    new Uint8Array(out.buffer).set(raw);
    return out;
  }
  if (t.dataType === DT.FLOAT16 || t.dataType === DT.BFLOAT16) {
    const bits = new Uint16Array(t.count);
    if (raw !== null) new Uint8Array(bits.buffer).set(raw);
    else if (t.source.kind === 'int32s') bits.set(t.source.values); // f16 / bf16 bits held in int32_data
    const out = new Float32Array(t.count);
    if (t.dataType === DT.BFLOAT16) {
      const u = new Uint32Array(out.buffer);
      for (let i = 0; i < bits.length; i++) u[i] = bits[i]! << 16;
    } else {
      if (f16Table === null) {
        f16Table = new Float32Array(65536);
        for (let h = 0; h < 65536; h++) f16Table[h] = f16ToF32(h);
      }
      for (let i = 0; i < bits.length; i++) out[i] = f16Table[bits[i]!]!;
    }
    return out;
  }
  throw new FormatError(`${what}: has type ${dtypeName(t.dataType)}, not a float type`);
}

/** An 8-bit or 4-bit (packed) initializer's bytes: a view for raw / external data. */
export function tensorBytes(m: OnnxModel, files: ReadonlyMap<string, Uint8Array>, t: OnnxTensor): Uint8Array {
  const what = `${m.file}: initializer "${t.name}"`;
  const bits = DT_BITS[t.dataType];
  if (bits !== 8 && bits !== 4) throw new FormatError(`${what}: has type ${dtypeName(t.dataType)}, not an 8-bit or 4-bit type`);
  const raw = rawBytes(m, files, t);
  if (raw !== null) return raw;
  if (t.source.kind === 'int32s') return Uint8Array.from(t.source.values, (v) => v & 0xff);
  throw new FormatError(`${what}: 8-bit data in ${t.source.kind}`);
}

/** An int64 / int32 initializer's values (shapes, indices). */
export function tensorInts(m: OnnxModel, files: ReadonlyMap<string, Uint8Array>, t: OnnxTensor): number[] {
  if (t.source.kind === 'int64s' || t.source.kind === 'int32s') return [...t.source.values];
  const raw = rawBytes(m, files, t);
  if (raw === null || (t.dataType !== DT.INT64 && t.dataType !== DT.INT32)) throw new FormatError(`${m.file}: initializer "${t.name}" is not an integer tensor`);
  const dv = new DataView(raw.buffer, raw.byteOffset, raw.length);
  const out: number[] = [];
  for (let i = 0; i < t.count; i++) out.push(t.dataType === DT.INT64 ? Number(dv.getBigInt64(8 * i, true)) : dv.getInt32(4 * i, true));
  return out;
}

