/**
 * The GPU bench's peer (bench/gpu.ts): onnxruntime-web's **webgpu** execution provider, run in
 * Node in the same process and on the same adapter as our kernels (checked: the adapter of the
 * device ORT creates is printed beside ours), on one-node or few-node ONNX graphs written with
 * our protobuf encoder (bench/onnx/protobuf.ts):
 *   - `matmulModel(N, C, OC, W)`:  Y [N × OC] = A [N × C] · Wt,  Wt = Wᵀ [C × OC] an initializer
 *     (the same weights, held on the GPU like ours); one MatMul node;
 *   - `attentionModel(B, T, NH, HS)`: the attention block of bench/onnx/export.ts (q, k, v [B, T, C]
 *     → Reshape → Transpose → MatMul → ·1/√HS → + causal mask → Softmax → MatMul → Transpose →
 *     Reshape → [B, T, C]) — the graph ORT runs for our exported model.
 * ORT creates its OWN GPUDevice (as in a browser), requesting the features it wants (subgroups,
 * shader-f16, …): handing it ours, which enables no optional feature, would push it onto slower
 * shader paths. Inputs and outputs are buffers on ORT's device (`ortUpload`, `ortEmpty`;
 * `Tensor.fromGpuBuffer`, outputs pre-bound), so a run is the kernels plus ORT's per-run
 * overhead, no upload or readback; the caller synchronises with ORT's
 * `device.queue.onSubmittedWorkDone()`. ORT's first session stays open for the whole process:
 * ORT destroys its device when its last session is released.
 *
 * How ORT-web's webgpu EP runs in Node (found by trying; not a documented configuration):
 *   - onnxruntime-web's package "exports" send Node to dist/ort.node.min.mjs, which registers the
 *     wasm (CPU) backend only; the webgpu build (dist/ort.webgpu.min.mjs, ORT 1.30's native WebGPU
 *     EP compiled into ort-wasm-simd-threaded.asyncify.wasm) is imported here by file path;
 *   - it needs `navigator.gpu` (Node 20 has no `navigator`; Node ≥ 21 has one without `gpu`):
 *     we install one from the `webgpu` package (a Dawn instance kept alive for the process,
 *     created after device.ts chose the driver, so it sees the same adapters); ORT requests its
 *     adapter from it (high-performance), and we print that adapter's description;
 *   - Dawn-for-Node's `GPUQueue.writeBuffer` rejects a view of a SharedArrayBuffer with
 *     "Invalid argument", and ORT's wasm memory is shared: `installWriteBufferShim` copies such
 *     views into an ordinary ArrayBuffer first (other calls are untouched).
 * If any step fails, `loadOrtWebgpu` returns the reason (printed instead of the peer's numbers).
 *
 * Not here: timing (bench/gpu.ts), ORT's wasm provider (bench/cpu.ts), correctness tests of our
 * kernels (tests/webgpu/*); the ORT output is compared with ours only as a sanity check.
 */
import type * as Ort from 'onnxruntime-web';
import { Msg } from './onnx/protobuf';

export type OrtModule = typeof Ort;

/** A loaded ORT-web webgpu runtime and the device it created. */
export interface OrtWebgpu {
  readonly ort: OrtModule;
  readonly version: string;
  /** ORT's own GPUDevice (env.webgpu.device after the first session). */
  readonly device: GPUDevice;
  /** One line naming the adapter of that device. */
  readonly adapter: string;
}

const FLOAT = 1;
const INT64 = 7;

/** ValueInfoProto of a tensor with fixed dims. */
function valueInfo(name: string, elemType: number, dims: readonly number[]): Msg {
  const shape = new Msg();
  for (const d of dims) shape.msg(1, new Msg().int(1, d));
  return new Msg().str(1, name).msg(2, new Msg().msg(1, new Msg().int(1, elemType).msg(2, shape)));
}

/** TensorProto initializer (f32 or i64, raw little-endian data). */
function init(name: string, dims: readonly number[], data: Float32Array | BigInt64Array): Msg {
  const raw = new Uint8Array(data.byteLength);
  const dv = new DataView(raw.buffer);
  if (data instanceof Float32Array) data.forEach((x, i) => dv.setFloat32(4 * i, x, true));
  else data.forEach((x, i) => dv.setBigInt64(8 * i, x, true));
  return new Msg().ints(1, dims).int(2, data instanceof Float32Array ? FLOAT : INT64).str(8, name).raw(9, raw);
}

/** NodeProto with optional int / ints attributes. */
function node(op: string, inputs: readonly string[], output: string, attrs: readonly ({ name: string; i: number } | { name: string; ints: readonly number[] })[] = []): Msg {
  const m = new Msg();
  for (const i of inputs) m.str(1, i);
  m.str(2, output).str(3, `${op}_${output}`).str(4, op);
  for (const a of attrs) {
    const am = new Msg().str(1, a.name);
    m.msg(5, 'i' in a ? am.int(3, a.i).int(20, 2) : am.ints(8, a.ints).int(20, 7));
  }
  return m;
}

function model(nodes: readonly Msg[], inits: readonly Msg[], inputs: readonly Msg[], outputs: readonly Msg[]): Uint8Array {
  const g = new Msg();
  for (const n of nodes) g.msg(1, n);
  g.str(2, 'bench');
  for (const t of inits) g.msg(5, t);
  for (const i of inputs) g.msg(11, i);
  for (const o of outputs) g.msg(12, o);
  return new Msg().int(1, 8).str(2, 'sat-playground-bench').msg(7, g).msg(8, new Msg().str(1, '').int(2, 17)).bytes();
}

/** One MatMul: Y [N × OC] = A [N × C] · Wᵀ, with W [OC × C] (our layout) stored transposed. */
export function matmulModel(N: number, C: number, OC: number, W: Float32Array): Uint8Array {
  const wt = new Float32Array(C * OC);
  for (let o = 0; o < OC; o++) for (let c = 0; c < C; c++) wt[c * OC + o] = W[o * C + c]!;
  return model([node('MatMul', ['A', 'Wt'], 'Y')], [init('Wt', [C, OC], wt)], [valueInfo('A', FLOAT, [N, C])], [valueInfo('Y', FLOAT, [N, OC])]);
}

/** Causal multi-head attention on q, k, v [B, T, NH·HS] → out [B, T, NH·HS] (header). */
export function attentionModel(B: number, T: number, NH: number, HS: number): Uint8Array {
  const C = NH * HS;
  const mask = new Float32Array(T * T);
  for (let t = 0; t < T; t++) for (let u = t + 1; u < T; u++) mask[t * T + u] = -1e9;
  const inits = [
    init('heads', [4], BigInt64Array.of(BigInt(B), BigInt(T), BigInt(NH), BigInt(HS))),
    init('seq', [3], BigInt64Array.of(BigInt(B), BigInt(T), BigInt(C))),
    init('scale', [], Float32Array.of(1 / Math.sqrt(HS))),
    init('mask', [T, T], mask),
  ];
  const nodes = [
    node('Reshape', ['q', 'heads'], 'qh'),
    node('Reshape', ['k', 'heads'], 'kh'),
    node('Reshape', ['v', 'heads'], 'vh'),
    node('Transpose', ['qh'], 'qt', [{ name: 'perm', ints: [0, 2, 1, 3] }]),
    node('Transpose', ['kh'], 'kt', [{ name: 'perm', ints: [0, 2, 3, 1] }]),
    node('Transpose', ['vh'], 'vt', [{ name: 'perm', ints: [0, 2, 1, 3] }]),
    node('MatMul', ['qt', 'kt'], 'qk'),
    node('Mul', ['qk', 'scale'], 's'),
    node('Add', ['s', 'mask'], 'sm'),
    node('Softmax', ['sm'], 'p', [{ name: 'axis', i: -1 }]),
    node('MatMul', ['p', 'vt'], 'ao'),
    node('Transpose', ['ao'], 'aot', [{ name: 'perm', ints: [0, 2, 1, 3] }]),
    node('Reshape', ['aot', 'seq'], 'out'),
  ];
  const io = (n: string): Msg => valueInfo(n, FLOAT, [B, T, C]);
  return model(nodes, inits, [io('q'), io('k'), io('v')], [io('out')]);
}

let shimmed = false;
/** Copies SharedArrayBuffer-backed views before Dawn-for-Node's writeBuffer sees them (header). */
function installWriteBufferShim(): void {
  if (shimmed) return;
  const Q = (globalThis as { GPUQueue?: { prototype: GPUQueue } }).GPUQueue;
  if (Q === undefined) return;
  const proto = Q.prototype;
  const orig = proto.writeBuffer;
  proto.writeBuffer = function (this: GPUQueue, buffer: GPUBuffer, offset: number, data: BufferSource | SharedArrayBuffer, dataOffset?: number, size?: number): undefined {
    const view = ArrayBuffer.isView(data) ? data : null;
    if (view !== null && view.buffer instanceof SharedArrayBuffer) {
      const el = 'BYTES_PER_ELEMENT' in view ? (view as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT : 1;
      const start = (dataOffset ?? 0) * el;
      const len = size !== undefined ? size * el : view.byteLength - start;
      const copy = new Uint8Array(len);
      copy.set(new Uint8Array(view.buffer, view.byteOffset + start, len));
      return orig.call(this, buffer, offset, copy, 0, len);
    }
    return orig.call(this, buffer, offset, data as BufferSource, dataOffset, size);
  } as GPUQueue['writeBuffer'];
  shimmed = true;
}

/** Keeps the Dawn instance behind `navigator.gpu` (see device.ts dawnInstances) and ORT's first session alive. */
const keepAlive: unknown[] = [];

/** Makes `navigator.gpu` a Dawn `GPU` in Node (no-op in a browser). Returns an error or null. */
async function installNavigatorGpu(): Promise<string | null> {
  const g = globalThis as { navigator?: { gpu?: GPU } };
  if (g.navigator?.gpu !== undefined) return null;
  let gpu: GPU;
  try {
    const name = 'webgpu';
    const mod = (await import(/* @vite-ignore */ name)) as { create: (flags: string[]) => GPU };
    gpu = mod.create([]);
    keepAlive.push(gpu);
  } catch (e) {
    return `the 'webgpu' package failed to load: ${e instanceof Error ? e.message : String(e)}`;
  }
  if (g.navigator === undefined) {
    Object.defineProperty(globalThis, 'navigator', { value: { gpu, userAgent: `Node.js/${process.version}`, hardwareConcurrency: 1 }, configurable: true, writable: true });
  } else {
    try {
      Object.defineProperty(g.navigator, 'gpu', { value: gpu, configurable: true });
    } catch (e) {
      return `could not add navigator.gpu to Node's navigator: ${e instanceof Error ? e.message : String(e)}`;
    }
  }
  return null;
}

/**
 * Loads ORT-web's webgpu build in Node (header), runs a 4 × 4 MatMul to make it create its
 * device (that session stays open, which keeps the device alive), and returns it, or the reason it cannot run. Call after acquireDevice (which must have
 * taken the Node path: it checks navigator.gpu first).
 */
export async function loadOrtWebgpu(): Promise<OrtWebgpu | string> {
  const nav = await installNavigatorGpu();
  if (nav !== null) return nav;
  installWriteBufferShim();
  let ort: OrtModule;
  const dist = new URL('../node_modules/onnxruntime-web/dist/', import.meta.url);
  try {
    const file = new URL('ort.webgpu.min.mjs', dist).href;
    ort = (await import(/* @vite-ignore */ file)) as OrtModule;
  } catch (e) {
    return `could not import onnxruntime-web/dist/ort.webgpu.min.mjs: ${e instanceof Error ? e.message : String(e)}`;
  }
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = dist.href;
  ort.env.logLevel = 'error';
  ort.env.webgpu.powerPreference = 'high-performance';
  try {
    const s = await createSession(ort, matmulModel(4, 4, 4, new Float32Array(16).fill(1)));
    const y = await s.run({ A: new ort.Tensor('float32', new Float32Array(16).fill(1), [4, 4]) });
    const got = await (y.Y as Ort.Tensor).getData();
    // Not released: ORT destroys its device when its last session goes (PreserveDevice off), and
    // our buffers on that device must outlive every session of the bench.
    keepAlive.push(s);
    if (got[0] !== 4) return `onnxruntime-web's webgpu EP ran in Node but computed ${String(got[0])} instead of 4 in a smoke test`;
  } catch (e) {
    return `onnxruntime-web's webgpu EP failed in Node: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`;
  }
  // Typed as a Promise (the older JSEP build's getter); the native EP assigns the device itself.
  const device = (await (ort.env.webgpu.device as unknown as Promise<GPUDevice | undefined> | GPUDevice | undefined)) ?? undefined;
  if (device === undefined) return "onnxruntime-web's webgpu EP ran but did not expose its device (env.webgpu.device)";
  const info = (device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo;
  const adapter = info ? [info.vendor, info.architecture, info.description].filter((x) => x !== undefined && x !== '').join(' / ') : 'unknown adapter';
  return { ort, version: ort.env.versions.web ?? '?', device, adapter };
}

/** An InferenceSession on the webgpu EP, outputs kept on the GPU. */
export async function createSession(ort: OrtModule, bytes: Uint8Array): Promise<Ort.InferenceSession> {
  return ort.InferenceSession.create(bytes, {
    executionProviders: ['webgpu'],
    graphOptimizationLevel: 'all',
    preferredOutputLocation: 'gpu-buffer',
  });
}

const STORAGE = 0x0080 | 0x0004 | 0x0008; // STORAGE | COPY_SRC | COPY_DST

/** A buffer on ORT's device holding `data`. */
export function ortUpload(o: OrtWebgpu, data: Float32Array): GPUBuffer {
  const b = o.device.createBuffer({ size: Math.max(16, data.byteLength), usage: STORAGE });
  o.device.queue.writeBuffer(b, 0, data as Float32Array<ArrayBuffer>);
  return b;
}

/** A zeroed buffer of `n` floats on ORT's device. */
export function ortEmpty(o: OrtWebgpu, n: number): GPUBuffer {
  return o.device.createBuffer({ size: Math.max(16, 4 * n), usage: STORAGE });
}

/** The first `n` floats of a buffer on ORT's device (after all submitted work). */
export async function ortRead(o: OrtWebgpu, b: GPUBuffer, n: number): Promise<Float32Array> {
  const staging = o.device.createBuffer({ size: Math.max(16, 4 * n), usage: 0x0001 | 0x0008 }); // MAP_READ | COPY_DST
  const enc = o.device.createCommandEncoder();
  enc.copyBufferToBuffer(b, 0, staging, 0, 4 * n);
  o.device.queue.submit([enc.finish()]);
  await staging.mapAsync(0x0001);
  const out = new Float32Array(staging.getMappedRange().slice(0, 4 * n));
  staging.unmap();
  staging.destroy();
  return out;
}

/** A float32 ORT tensor over a GPU buffer of ORT's device (no copy). */
export function gpuTensor(o: OrtWebgpu, buffer: GPUBuffer, dims: readonly number[]): Ort.Tensor {
  return o.ort.Tensor.fromGpuBuffer(buffer as never, { dataType: 'float32', dims });
}
