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
 *   - every node's operator must be one this reader knows (KNOWN_OPS), else the node is named;
 *   - counts (nodes, initializers, inputs and outputs, every list, subgraph nesting) stay within
 *     ONNX_LIMITS (src/core/limits.ts), checked before the item is decoded;
 *   - the nodes of each graph are acyclic with one producer per value, and external-data offsets
 *     and lengths are decimal byte counts — checked here so onnxruntime never sees such a graph.
 * Repeated fields are gathered in one pass and decoded once into an array of their final size;
 * nothing recurses on the file's nesting (subgraphs are walked with an explicit stack).
 * Errors are FormatErrors naming the file, the node or the initializer, and the limit.
 *
 * Not here: the protobuf wire format (wire.ts), what the initializers mean for a Llama model
 * (llama.ts), running the graph (ort.ts).
 */
import { FormatError } from '../../core/errors';
import { f16ToF32 } from '../../core/f16';
import { ONNX_LIMITS } from '../../core/limits';
import { escapeControl } from '../../core/text';
import { fields, packedCount, packedInts, safeInt, str, type Field } from './wire';

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

const LIMITS_DOC = 'docs/models.md, "Input limits"';

/** A string of the file (a name, an operator, a path) as a message quotes it: control characters escaped (src/core/text.ts), at most 100 characters. */
const q = (s: string): string => escapeControl(s.length > 100 ? `${s.slice(0, 100)}…` : s);

/** Refuses a list of `n` items past ONNX_LIMITS.list, naming what holds it and the field. */
function checkList(n: number, what: string, field: string): void {
  if (n > ONNX_LIMITS.list) throw new FormatError(`${what}: ${field} holds more than ${ONNX_LIMITS.list.toLocaleString('en')} items, past what this reader accepts (${LIMITS_DOC})`);
}

const f32Of = (u: bigint): number => new DataView(new Uint32Array([Number(u)]).buffer).getFloat32(0, true);

/** An attribute, and the subgraphs it holds (`g`, `graphs`) as undecoded views. */
function parseAttr(buf: Uint8Array, what: string): { attr: OnnxAttr; graphs: Uint8Array[] } {
  let name = '';
  let i: number | undefined;
  let f: number | undefined;
  let s: string | undefined;
  const ints: number[] = [];
  const floats: number[] = [];
  const graphs: Uint8Array[] = [];
  let strings = 0;
  for (const fl of fields(buf, what)) {
    const here = () => `${what} "${q(name)}"`;
    if (fl.field === 1) name = str(fl, `${what} name`);
    else if (fl.field === 2 && fl.wire === 5) f = f32Of(fl.int);
    else if (fl.field === 3) i = safeInt(fl, here());
    else if (fl.field === 4) s = str(fl, here());
    else if (fl.field === 6 && fl.wire === 2) graphs.push(fl.bytes);
    else if (fl.field === 11 && fl.wire === 2) {
      graphs.push(fl.bytes);
      checkList(graphs.length, here(), 'graphs');
    } else if (fl.field === 9) checkList(++strings, here(), 'strings');
    else if (fl.field === 8) {
      checkList(ints.length + (fl.wire === 2 ? packedCount(fl.bytes) : 1), here(), 'ints');
      if (fl.wire === 2) packedInts(fl.bytes, here(), ints);
      else ints.push(safeInt(fl, here()));
    } else if (fl.field === 7) {
      if (fl.wire === 2) {
        if (fl.bytes.length % 4 !== 0) throw new FormatError(`${here()}: packed floats of ${fl.bytes.length} bytes`);
        checkList(floats.length + fl.bytes.length / 4, here(), 'floats');
        const dv = new DataView(fl.bytes.buffer, fl.bytes.byteOffset, fl.bytes.length);
        for (let k = 0; k < fl.bytes.length; k += 4) floats.push(dv.getFloat32(k, true));
      } else {
        checkList(floats.length + 1, here(), 'floats');
        floats.push(f32Of(fl.int));
      }
    }
  }
  return { attr: { name, i, f, s, ints: ints.length ? ints : undefined, floats: floats.length ? floats : undefined }, graphs };
}

/** A node, and the subgraphs its attributes hold. `where` names its graph ("the graph", "node "x"'s subgraph"). */
function parseNode(buf: Uint8Array, index: number, file: string, where = ''): { node: OnnxNode; graphs: Uint8Array[] } {
  const what = `${file}: ${where}node ${index}`;
  const inputs: string[] = [];
  const outputs: string[] = [];
  const attrs = new Map<string, OnnxAttr>();
  const graphs: Uint8Array[] = [];
  let name = '';
  let opType = '';
  let domain = '';
  for (const f of fields(buf, what)) {
    if (f.field === 1) {
      checkList(inputs.length + 1, what, 'input');
      inputs.push(str(f, `${what} input`));
    } else if (f.field === 2) {
      checkList(outputs.length + 1, what, 'output');
      outputs.push(str(f, `${what} output`));
    } else if (f.field === 3) name = str(f, `${what} name`);
    else if (f.field === 4) opType = str(f, `${what} op_type`);
    else if (f.field === 7) domain = normDomain(str(f, `${what} domain`));
    else if (f.field === 5 && f.wire === 2) {
      checkList(attrs.size + 1, what, 'attribute');
      const a = parseAttr(f.bytes, `${what} attribute`);
      attrs.set(a.attr.name, a.attr);
      for (const g of a.graphs) graphs.push(g);
    }
  }
  return { node: { name: name || `#${index}`, opType, domain, inputs, outputs, attrs }, graphs };
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
              checkList(dims.length + 1, what, 'shape');
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
    if (!Number.isInteger(d) || d < 0) throw new FormatError(`${what}: dimension ${d} in [${dims.slice(0, 8).join(', ')}${dims.length > 8 ? ', …' : ''}] is not a size`);
    n *= d;
    if (n > MAX_ELEMENTS) throw new FormatError(`${what}: dims [${dims.slice(0, 8).join(', ')}${dims.length > 8 ? ', …' : ''}] hold more than ${MAX_ELEMENTS} elements (the product overflows what this reader accepts)`);
  }
  return n;
}

/** Bytes `count` elements of `dataType` take (4-bit types packed two to a byte). */
export function byteLength(dataType: number, count: number): number {
  return Math.ceil((count * DT_BITS[dataType]!) / 8);
}

/** An external-data value that must be a byte count: decimal digits only ("0x0", "1e3", "-1", " 5" are refused by name). */
function byteCount(v: string | undefined, fallback: number, what: string, key: string): number {
  if (v === undefined) return fallback;
  if (!/^[0-9]{1,15}$/.test(v)) throw new FormatError(`${what}: external data ${key} ${JSON.stringify(v.slice(0, 40))} is not a byte ${key === 'offset' ? 'offset' : 'count'} (a decimal number of bytes, at most 15 digits)`);
  return Number(v);
}

/**
 * A repeated numeric field of a tensor, gathered in one pass: each occurrence (packed, or one value
 * unpacked) is kept as a view and counted; the values are decoded once, after the count is checked
 * against the tensor's dims, into one array of the final size.
 */
class Repeated {
  readonly chunks: Field[] = [];
  count = 0;
  constructor(private readonly width: 0 | 4) {}
  add(f: Field, what: string): void {
    const n = f.wire !== 2 ? 1 : this.width === 4 ? f.bytes.length / 4 : packedCount(f.bytes);
    if (!Number.isInteger(n)) throw new FormatError(`${what} of ${f.bytes.length} bytes, not a whole number of floats`);
    this.count += n;
    if (this.count > MAX_ELEMENTS) throw new FormatError(`${what} holds more than ${MAX_ELEMENTS} values, past what this reader accepts`);
    this.chunks.push(f);
  }
  floats(): Float32Array {
    const out = new Float32Array(this.count);
    let k = 0;
    for (const f of this.chunks) {
      if (f.wire !== 2) {
        out[k++] = f32Of(f.int);
        continue;
      }
      const dv = new DataView(f.bytes.buffer, f.bytes.byteOffset, f.bytes.length);
      for (let b = 0; b < f.bytes.length; b += 4) out[k++] = dv.getFloat32(b, true);
    }
    return out;
  }
  ints(what: string, int32: boolean): number[] {
    const out: number[] = [];
    for (const f of this.chunks) {
      if (f.wire === 2) packedInts(f.bytes, what, out);
      else out.push(safeInt(f, what));
    }
    if (int32) for (let k = 0; k < out.length; k++) out[k] = out[k]! | 0;
    return out;
  }
}

function parseTensor(buf: Uint8Array, file: string, index: number, where = ''): OnnxTensor {
  let what = `${file}: ${where}initializer ${index}`;
  const dims: number[] = [];
  let dataType = 0;
  let name = '';
  let raw: Uint8Array | null = null;
  const floatData = new Repeated(4);
  const int32Data = new Repeated(0);
  const int64Data = new Repeated(0);
  const external = new Map<string, string>();
  let location = 0;
  for (const f of fields(buf, what)) {
    switch (f.field) {
      case 1:
        checkList(dims.length + (f.wire === 2 ? packedCount(f.bytes) : 1), what, 'dims');
        if (f.wire === 2) packedInts(f.bytes, `${what} dims`, dims);
        else dims.push(safeInt(f, `${what} dim`));
        break;
      case 2: dataType = safeInt(f, `${what} data_type`); break;
      case 3: throw new FormatError(`${what}: a segmented tensor; not supported`);
      case 4: floatData.add(f, `${what}: float_data`); break;
      case 5: int32Data.add(f, `${what}: int32_data`); break;
      case 7: int64Data.add(f, `${what}: int64_data`); break;
      case 8: name = str(f, `${what} name`); what = `${file}: ${where}initializer "${q(name)}"`; break;
      case 9: raw = f.bytes; break;
      case 13: {
        checkList(external.size + 1, what, 'external_data');
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
  const shape = `[${dims.slice(0, 8).join(', ')}${dims.length > 8 ? ', …' : ''}] ${dtypeName(dataType)}`;
  let source: TensorSource;
  if (location === 1) {
    const file = external.get('location');
    if (!file) throw new FormatError(`${what}: external data without a "location"`);
    const offset = byteCount(external.get('offset'), 0, what, 'offset');
    const length = byteCount(external.get('length'), need, what, 'length');
    if (length !== need) throw new FormatError(`${what}: external data length ${length} bytes, but ${shape} needs ${need}`);
    source = { kind: 'external', file, offset, length };
  } else if (raw !== null) {
    if (raw.length !== need) throw new FormatError(`${what}: ${shape} needs ${need} bytes but the file holds ${raw.length} for it`);
    source = { kind: 'raw', bytes: raw };
  } else if (floatData.count > 0) {
    if (floatData.count !== count) throw new FormatError(`${what}: ${shape} needs ${count} values but float_data holds ${floatData.count}`);
    source = { kind: 'floats', values: floatData.floats() };
  } else if (int32Data.count > 0 || (count === 0 && dataType !== DT.INT64)) {
    if (int32Data.count !== count) throw new FormatError(`${what}: ${shape} needs ${count} values but int32_data holds ${int32Data.count}`);
    source = { kind: 'int32s', values: int32Data.ints(`${what} int32_data`, true) };
  } else {
    if (int64Data.count !== count) throw new FormatError(`${what}: ${shape} needs ${count} values but the file holds ${int64Data.count} for it`);
    source = { kind: 'int64s', values: int64Data.ints(`${what} int64_data`, false) };
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
 * Refuses a graph whose nodes are not in an order onnxruntime can run: a value produced by two
 * nodes, or a cycle (a node that needs, through other nodes, its own output). Kahn's algorithm
 * over the values the graph's own nodes produce; the rest (graph inputs, initializers, an outer
 * graph's values) are available from the start.
 */
function checkAcyclic(nodes: readonly OnnxNode[], file: string, where: string): void {
  const producer = new Map<string, number>();
  nodes.forEach((n, i) => {
    for (const o of n.outputs) {
      if (o === '') continue;
      if (producer.has(o)) throw new FormatError(`${file}: ${where}value "${q(o)}" is the output of two nodes ("${q(nodes[producer.get(o)!]!.name)}" and "${q(n.name)}"); an ONNX graph gives each value one producer`);
      producer.set(o, i);
    }
  });
  const waiting = new Int32Array(nodes.length);
  const consumers: number[][] = nodes.map(() => []);
  nodes.forEach((n, i) => {
    for (const x of n.inputs) {
      const p = producer.get(x);
      if (p === undefined) continue;
      waiting[i]!++;
      consumers[p]!.push(i);
    }
  });
  const ready: number[] = [];
  waiting.forEach((w, i) => w === 0 && ready.push(i));
  let done = 0;
  while (ready.length > 0) {
    const i = ready.pop()!;
    done++;
    for (const c of consumers[i]!) if (--waiting[c]! === 0) ready.push(c);
  }
  if (done < nodes.length) {
    const stuck = nodes[waiting.findIndex((w) => w > 0)]!;
    throw new FormatError(`${file}: ${where}node "${q(stuck.name)}" (${q(stuck.opType)}) is on a cycle: it needs a value that is computed, through other nodes, from its own output; an ONNX graph must be acyclic`);
  }
}

/** The external data of `t` checked: a file of the folder (no path outside it), the range inside it. */
function checkExternal(t: OnnxTensor, path: string, file: string, sizeOf: (name: string) => number | undefined): void {
  if (t.source.kind !== 'external') return;
  const where = resolveExternal(path, t.source.file);
  if (where === null) throw new FormatError(`${file}: initializer "${q(t.name)}" names external data "${q(t.source.file)}", a path outside the model's folder`);
  const size = sizeOf(where);
  if (size === undefined) throw new FormatError(`${file}: initializer "${q(t.name)}" is stored in "${q(where)}", which the folder lacks`);
  if (t.source.offset + t.source.length > size) {
    throw new FormatError(`${file}: initializer "${q(t.name)}" says its ${t.source.length} bytes are at offset ${t.source.offset} of "${q(where)}", but that file has ${size} bytes; the external data is truncated or the offsets are wrong`);
  }
}

function checkKnownOp(n: OnnxNode, file: string, where: string): void {
  const known = KNOWN_OPS[n.domain];
  if (known === undefined || !known.has(n.opType)) {
    throw new FormatError(`${file}: ${where}node "${q(n.name)}" uses operator "${q(n.opType)}"${n.domain ? ` of domain "${q(n.domain)}"` : ''}, which this playground does not know; supported: the ONNX default domain's common operators and onnxruntime's com.microsoft decoder operators (docs/models.md)`);
  }
}

/** The refusal of a graph with more than `cap` of `count` ("nodes"), its subgraphs included. */
function tooMany(file: string, count: string, cap: number): FormatError {
  return new FormatError(`${file}: the graph has more than ${cap.toLocaleString('en')} ${count} (its subgraphs included), past what this playground reads (${LIMITS_DOC}); a decoder has far fewer`);
}

/** Reads `length` bytes of a file from `offset` (a Blob's slice, a file handle's read, or a view of bytes in memory). */
export type ReadAt = (offset: number, length: number) => Promise<Uint8Array>;

/** The window scanOnnxCounts reads at a time. */
const SCAN_WINDOW = 1 << 20;

/**
 * Counts the main graph's nodes and initializers of the ONNX file `path` (`size` bytes) from its
 * field keys and lengths alone, a window at a time — the payloads skipped, never the file whole —
 * and refuses one past ONNX_LIMITS as readOnnxGraph does, before the file is read or anything of it
 * decoded. Whatever is malformed ends the scan quietly: readOnnxGraph names it.
 */
export async function scanOnnxCounts(readAt: ReadAt, size: number, path: string): Promise<void> {
  let buf: Uint8Array = new Uint8Array(0);
  let start = 0;
  /** A varint at `p` and the position after it, or null past `end` or ten bytes (a number ≥ 2^53 counts as malformed). */
  const varint = async (p: number, end: number): Promise<[number, number] | null> => {
    if (p < start || p + Math.min(10, end - p) > start + buf.length) {
      start = p;
      buf = await readAt(p, Math.min(SCAN_WINDOW, size - p));
    }
    let v = 0;
    for (let i = 0; i < 8 && p < end && p - start < buf.length; i++) {
      const b = buf[p - start]!;
      p++;
      v += (b & 0x7f) * 2 ** (7 * i);
      if ((b & 0x80) === 0) return [v, p];
    }
    return null;
  };
  /** Calls `each(field, from, length)` for every length-delimited field in [from, to); false when the bytes are malformed. */
  const scan = async (from: number, to: number, each: (field: number, at: number, length: number) => void): Promise<boolean> => {
    for (let p = from; p < to; ) {
      const key = await varint(p, to);
      if (key === null) return false;
      const [k, q] = key;
      const wire = k % 8;
      p = q;
      if (wire === 0) {
        const v = await varint(p, to);
        if (v === null) return false;
        p = v[1];
      } else if (wire === 1) p += 8;
      else if (wire === 5) p += 4;
      else if (wire === 2) {
        const len = await varint(p, to);
        if (len === null || len[1] + len[0] > to) return false;
        each(Math.floor(k / 8), len[1], len[0]);
        p = len[1] + len[0];
      } else return false;
    }
    return true;
  };
  let graph: [number, number] | null = null;
  if (!(await scan(0, size, (field, at, length) => void (field === 7 && (graph = [at, length]))))) return;
  if (graph === null) return;
  const [at, length] = graph as [number, number];
  let nodes = 0;
  let inits = 0;
  const file = q(path);
  await scan(at, at + length, (field) => {
    if (field === 1 && ++nodes > ONNX_LIMITS.nodes) throw tooMany(file, 'nodes', ONNX_LIMITS.nodes);
    if (field === 5 && ++inits > ONNX_LIMITS.initializers) throw tooMany(file, 'initializers', ONNX_LIMITS.initializers);
  });
}

/**
 * Parses `files.get(file)` (a ModelProto). External data is located in `files` (names relative to
 * the folder) and checked against that file's size; nothing is decoded yet.
 */
export function readOnnx(files: ReadonlyMap<string, Uint8Array>, file: string): OnnxModel {
  const bytes = files.get(file);
  if (bytes === undefined) throw new FormatError(`ONNX folder: "${q(file)}" is missing`);
  return readOnnxGraph(bytes, file, (n) => files.get(n)?.length);
}

/**
 * Parses the ModelProto `bytes` of `file`, with the folder's other files known by their sizes only
 * (`sizeOf`: what the budgeted check needs, src/workers/inputJobs.ts `onnxGraph`). Every count of
 * ONNX_LIMITS is checked as the protobuf is read, before the item it counts is decoded; subgraphs
 * (an `If`'s branches, a `Loop`'s body) are walked with an explicit stack, each checked like the
 * main graph (operators, cycles, external data) but not returned.
 */
export function readOnnxGraph(bytes: Uint8Array, path: string, sizeOf: (name: string) => number | undefined): OnnxModel {
  const file = q(path); // for messages: a name from the folder, printed with its control characters escaped
  let irVersion = 0;
  let producer = '';
  const opsets = new Map<string, number>();
  let graph: Uint8Array | null = null;
  for (const f of fields(bytes, `${file}: ModelProto`)) {
    if (f.field === 1) irVersion = safeInt(f, `${file}: ir_version`);
    else if (f.field === 2) producer = str(f, `${file}: producer_name`);
    else if (f.field === 7 && f.wire === 2) graph = f.bytes;
    else if (f.field === 8 && f.wire === 2) {
      checkList(opsets.size + 1, `${file}: ModelProto`, 'opset_import');
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
  let nodes: OnnxNode[] = [];
  const inputs: OnnxValueInfo[] = [];
  const outputs: OnnxValueInfo[] = [];
  let initializers = new Map<string, OnnxTensor>();
  let nNode = 0;
  let nInit = 0;
  // The main graph at depth 0, then each subgraph as its node is read: an explicit stack, never recursion on the file's nesting.
  const stack: { readonly bytes: Uint8Array; readonly depth: number; readonly where: string }[] = [{ bytes: graph, depth: 0, where: '' }];
  while (stack.length > 0) {
    const g = stack.pop()!;
    const top = g.depth === 0;
    const own: OnnxNode[] = [];
    const inits = new Map<string, OnnxTensor>();
    // This graph's nodes and initializers counted on their field keys, before the first is decoded.
    for (const f of fields(g.bytes, `${file}: ${g.where}GraphProto`)) {
      if (f.wire === 2 && f.field === 1 && ++nNode > ONNX_LIMITS.nodes) throw tooMany(file, 'nodes', ONNX_LIMITS.nodes);
      if (f.wire === 2 && f.field === 5 && ++nInit > ONNX_LIMITS.initializers) throw tooMany(file, 'initializers', ONNX_LIMITS.initializers);
    }
    for (const f of fields(g.bytes, `${file}: ${g.where}GraphProto`)) {
      if (f.wire !== 2) continue;
      if (f.field === 1) {
        const { node, graphs } = parseNode(f.bytes, own.length, file, g.where);
        own.push(node);
        for (const sub of graphs) {
          if (g.depth + 1 > ONNX_LIMITS.subgraphDepth) throw new FormatError(`${file}: ${g.where}node "${q(node.name)}" (${q(node.opType)}) holds subgraphs nested more than ${ONNX_LIMITS.subgraphDepth} deep, past what this playground reads (${LIMITS_DOC}); a decoder nests one level at most`);
          stack.push({ bytes: sub, depth: g.depth + 1, where: `a subgraph ${g.depth + 1} deep, in node "${q(node.name)}": ` });
        }
      } else if (f.field === 5) {
        const t = parseTensor(f.bytes, file, inits.size, g.where);
        if (inits.has(t.name)) throw new FormatError(`${file}: ${g.where}initializer "${q(t.name)}" is defined twice`);
        inits.set(t.name, t);
      } else if (f.field === 15) throw new FormatError(`${file}: sparse initializers are not supported`);
      else if (top && (f.field === 11 || f.field === 12)) {
        if (inputs.length + outputs.length + 1 > ONNX_LIMITS.values) throw tooMany(file, 'inputs and outputs', ONNX_LIMITS.values);
        (f.field === 11 ? inputs : outputs).push(parseValueInfo(f.bytes, `${file}: graph ${f.field === 11 ? 'input' : 'output'}`));
      }
    }
    for (const n of own) checkKnownOp(n, file, g.where);
    checkAcyclic(own, file, g.where);
    for (const t of inits.values()) checkExternal(t, path, file, sizeOf);
    if (top) {
      nodes = own;
      initializers = inits;
    }
  }
  return { file: path, irVersion, producer, opsets, nodes, inputs, outputs, initializers };
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
  const what = `${q(m.file)}: initializer "${q(t.name)}"`;
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
  const what = `${q(m.file)}: initializer "${q(t.name)}"`;
  const bits = DT_BITS[t.dataType];
  if (bits !== 8 && bits !== 4) throw new FormatError(`${what}: has type ${dtypeName(t.dataType)}, not an 8-bit or 4-bit type`);
  const raw = rawBytes(m, files, t);
  if (raw !== null) return raw;
  if (t.source.kind === 'int32s') return Uint8Array.from(t.source.values, (v) => v & 0xff);
  throw new FormatError(`${what}: 8-bit data in ${t.source.kind}`);
}

/** An int64 / int32 initializer's values (shapes, indices). */
export function tensorInts(m: OnnxModel, files: ReadonlyMap<string, Uint8Array>, t: OnnxTensor): number[] {
  if (t.source.kind === 'int64s' || t.source.kind === 'int32s') return t.source.values.slice();
  const raw = rawBytes(m, files, t);
  if (raw === null || (t.dataType !== DT.INT64 && t.dataType !== DT.INT32)) throw new FormatError(`${q(m.file)}: initializer "${q(t.name)}" is not an integer tensor`);
  const dv = new DataView(raw.buffer, raw.byteOffset, raw.length);
  const out: number[] = [];
  for (let i = 0; i < t.count; i++) out.push(t.dataType === DT.INT64 ? Number(dv.getBigInt64(8 * i, true)) : dv.getInt32(4 * i, true));
  return out;
}

