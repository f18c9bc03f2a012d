/**
 * The thin-wrapper machinery every WebGPU kernel uses (a kernel is a WGSL file, a wrapper that
 * knows only its dispatch shape and cache key, and a test against its CPU twin): `GpuTensor`, a
 * storage buffer or a view into one; `GpuContext`, which owns the device, pools buffers, compiles
 * each kernel once per cache key and records dispatches; `defineKernel` / `params`, how a wrapper
 * names its shader, bindings and uniforms. Ops are recorded, not run: nothing is observable until
 * `download`, which also throws any WebGPU error raised since the last check.
 *
 * Shader conventions and the checklist for adding an op: docs/kernels.md.
 *
 * Not here: any kernel's maths (one file per op), device acquisition (device.ts), the `Backend`
 * object binding the wrappers to src/backend/types.ts (backend.ts).
 */
import { VIEW_ALIGN, type HostTensors, type TensorKind } from '../types';
import { checkBufferSize } from './device';
import { shaderSource } from './shaders';

/** A tensor on the GPU: `length` elements of `kind`, in `buffer` from byte `offset` (size ≥ 4·⌈bytes/4⌉). */
export interface GpuTensor<K extends TensorKind = TensorKind> {
  readonly kind: K;
  readonly length: number;
  readonly buffer: GPUBuffer;
  /** Bytes holding the data (length × element size), before padding to 4. */
  readonly byteLength: number;
  /** A view (`GpuContext.view`): its first byte in `buffer` (a multiple of 256); it owns no buffer. Absent: the tensor owns `buffer` from byte 0. */
  readonly offset?: number;
}

const ELEMENT_BYTES: { [K in TensorKind]: number } = { f32: 4, i32: 4, i8: 1, u8: 1, u16: 2 };
const CTORS: { [K in TensorKind]: new (buf: ArrayBuffer, off: number, len: number) => HostTensors[K] } = {
  f32: Float32Array,
  i32: Int32Array,
  i8: Int8Array,
  u8: Uint8Array,
  u16: Uint16Array,
};

/** A uniform field: u32, i32 or f32 (4 bytes each). */
export type Param = { readonly t: 'u32' | 'i32' | 'f32'; readonly v: number };
export const u32 = (v: number): Param => ({ t: 'u32', v });
export const i32 = (v: number): Param => ({ t: 'i32', v });
export const f32 = (v: number): Param => ({ t: 'f32', v });

/** The bytes of a uniform struct whose fields are `ps` in order (padded to 16 bytes). */
export function params(ps: readonly Param[]): ArrayBuffer {
  const n = Math.max(4, Math.ceil(ps.length / 4) * 4);
  const buf = new ArrayBuffer(n * 4);
  const dv = new DataView(buf);
  ps.forEach((p, i) => {
    if (p.t === 'f32') dv.setFloat32(i * 4, p.v, true);
    else if (p.t === 'i32') dv.setInt32(i * 4, p.v, true);
    else dv.setUint32(i * 4, p.v >>> 0, true);
  });
  return buf;
}

/** How a kernel's storage bindings (1, 2, …) are accessed. */
export type Access = 'read' | 'rw';

/** Everything that identifies one compiled pipeline. */
export interface KernelDef {
  /** Names in shaders/ (without .wgsl); several are concatenated in order (e.g. a helper + the kernel). */
  readonly shaders: readonly string[];
  /** Entry point (`@compute fn`). */
  readonly entry: string;
  /** Access of storage bindings 1…n (binding 0 is always the uniform params). */
  readonly bindings: readonly Access[];
  /** Pipeline-overridable constants (`override` in WGSL): workgroup size WG and the like. */
  readonly overrides: Readonly<Record<string, number>>;
}

/** A kernel definition (and its cache key). */
export function defineKernel(def: {
  shaders: string | readonly string[];
  entry?: string;
  bindings: readonly Access[];
  overrides?: Readonly<Record<string, number>>;
}): KernelDef {
  return {
    shaders: typeof def.shaders === 'string' ? [def.shaders] : def.shaders,
    entry: def.entry ?? 'main',
    bindings: def.bindings,
    overrides: def.overrides ?? {},
  };
}

function keyOf(k: KernelDef): string {
  const o = Object.keys(k.overrides)
    .sort()
    .map((n) => `${n}=${k.overrides[n]}`)
    .join(',');
  return `${k.shaders.join('+')}:${k.entry}:${k.bindings.join(',')}:${o}`;
}

/** Rounds a byte size up to its pool size class: 256 bytes, then powers of two up to 1 MiB, then 1 MiB steps. */
function sizeClass(bytes: number): number {
  const b = Math.max(256, Math.ceil(bytes / 4) * 4);
  if (b <= 1 << 20) return 2 ** Math.ceil(Math.log2(b));
  return Math.ceil(b / (1 << 20)) * (1 << 20);
}

const STORAGE_USAGE = 0x0080 | 0x0004 | 0x0008; // STORAGE | COPY_SRC | COPY_DST (GPUBufferUsage, spelled out for Node before globals exist)
const UNIFORM_USAGE = 0x0040 | 0x0008; // UNIFORM | COPY_DST
const READBACK_USAGE = 0x0001 | 0x0008; // MAP_READ | COPY_DST
const STAGING_USAGE = 0x0004; // COPY_SRC (mapped at creation)
const MAP_READ = 0x0001;

/** `GpuContext.counts`, as a value. */
export interface GpuCounts {
  readonly dispatches: number;
  readonly submissions: number;
  readonly uploads: number;
  readonly downloads: number;
  readonly byKernel: Readonly<Record<string, number>>;
}

/**
 * The device, its pipelines, buffer pools and the pending command encoder. Buffers are pooled by
 * size class and reused after `dispose`; pipelines use an explicit bind-group layout, keyed by
 * shader names + entry point + overrides. Dispatches and uploads (a mapped staging buffer copied
 * in the encoder) go into one pending encoder, submitted by `flush` or `download`; downloads
 * asked for in the same JS task share one submission (the flush waits a microtask).
 */
export class GpuContext {
  readonly device: GPUDevice;
  private readonly pipelines = new Map<string, { pipeline: GPUComputePipeline; layout: GPUBindGroupLayout }>();
  private readonly freeStorage = new Map<number, GPUBuffer[]>();
  private readonly freeUniform: GPUBuffer[] = [];
  private inFlightUniform: GPUBuffer[] = [];
  /** Upload staging buffers recorded in the pending encoder (destroyed once the GPU is done). */
  private pendingStaging: GPUBuffer[] = [];
  /** The flush that downloads of this JS task wait for (a microtask), or null. */
  private flushSoon: Promise<void> | null = null;
  private encoder: GPUCommandEncoder | null = null;
  private destroyed = false;
  /** A 16-byte buffer bound where a kernel has an optional output the caller passed as null. */
  readonly dummy: GpuTensor<'f32'>;

  /**
   * What this context has asked of the GPU so far: compute dispatches (and per kernel, keyed by
   * its shader names, `+`-joined, and `:entry` when not `main`), command submissions, host writes
   * (uploads, recorded as copies: they submit nothing) and read-backs. Read the difference around
   * a step to know what it costs (`npm run bench -- --gpu` prints them; `countsSince` diffs).
   */
  readonly counts = { dispatches: 0, submissions: 0, uploads: 0, downloads: 0, byKernel: {} as Record<string, number> };

  /** WebGPU validation / out-of-memory errors not yet reported (thrown by the next download). */
  private readonly errors: string[] = [];

  /** Workgroups per grid dimension (the device limit, or a smaller number to test 2-D grids). */
  private readonly maxPerDim: number;

  constructor(device: GPUDevice, opts: { maxWorkgroupsPerDimension?: number } = {}) {
    this.device = device;
    this.maxPerDim = Math.min(device.limits.maxComputeWorkgroupsPerDimension, opts.maxWorkgroupsPerDimension ?? Infinity);
    device.addEventListener('uncapturederror', (ev) => {
      const e = (ev as GPUUncapturedErrorEvent).error;
      if (this.errors.length < 8) this.errors.push(e.message);
    });
    this.dummy = this.zeros('f32', 4);
  }

  /** Throws an Error carrying every WebGPU error raised since the last check (a bad shader, a bad binding…). */
  checkErrors(): void {
    if (this.errors.length === 0) return;
    const msg = this.errors.splice(0).join('\n---\n');
    throw new Error(`WebGPU error(s):\n${msg}`);
  }

  // --- tensors ---

  private allocate(bytes: number, what: string): GPUBuffer {
    checkBufferSize(this.device, bytes, what);
    const cls = sizeClass(bytes);
    const free = this.freeStorage.get(cls);
    const hit = free?.pop();
    if (hit !== undefined) return hit;
    this.storageBytes += cls;
    return this.device.createBuffer({ size: cls, usage: STORAGE_USAGE });
  }

  /** Bytes of storage buffers created so far (pooled ones count once): the GPU memory the page shows. */
  storageBytes = 0;

  /** A new tensor holding a copy of `data` (recorded: a staging buffer copied in the pending encoder). */
  upload<K extends TensorKind>(kind: K, data: HostTensors[K]): GpuTensor<K> {
    const byteLength = data.length * ELEMENT_BYTES[kind];
    const buffer = this.allocate(byteLength, `upload(${kind}[${data.length}])`);
    this.counts.uploads++;
    const t: GpuTensor<K> = { kind, length: data.length, buffer, byteLength };
    this.write(t, new Uint8Array(data.buffer, data.byteOffset, byteLength));
    return t;
  }

  /**
   * Record a copy of `bytes` into `t` (from its first byte): a staging buffer mapped at creation,
   * copied in the pending encoder — ordered after every op recorded before it and before every op
   * after it, with no submission (queue.writeBuffer would run ahead of the unsubmitted encoder).
   */
  private write(t: GpuTensor, bytes: Uint8Array): void {
    const padded = Math.ceil(bytes.byteLength / 4) * 4;
    if (padded === 0) return;
    const staging = this.device.createBuffer({ size: padded, usage: STAGING_USAGE, mappedAtCreation: true });
    new Uint8Array(staging.getMappedRange()).set(bytes);
    staging.unmap();
    this.enc().copyBufferToBuffer(staging, 0, t.buffer, t.offset ?? 0, padded);
    this.pendingStaging.push(staging);
  }

  /** A new zero-filled tensor of `length` elements. */
  zeros<K extends TensorKind>(kind: K, length: number): GpuTensor<K> {
    const byteLength = length * ELEMENT_BYTES[kind];
    const buffer = this.allocate(byteLength, `zeros(${kind}[${length}])`);
    this.enc().clearBuffer(buffer, 0, Math.ceil(byteLength / 4) * 4);
    return { kind, length, buffer, byteLength };
  }

  /** Overwrite a float tensor with a constant (0 uses clearBuffer; others a recorded write of the value). */
  fill(t: GpuTensor<'f32'>, value: number): void {
    if (value === 0 && !Object.is(value, -0)) {
      if (t.byteLength > 0) this.enc().clearBuffer(t.buffer, t.offset ?? 0, t.byteLength);
      return;
    }
    const data = new Float32Array(t.length).fill(value);
    this.write(t, new Uint8Array(data.buffer));
  }

  /**
   * A tensor of `length` f32 elements viewing `t` from element `offset` (a multiple of VIEW_ALIGN,
   * as WebGPU binds storage at 256-byte offsets). Ops read and write it like any tensor; it owns
   * no memory (`dispose` of a view does nothing; dispose `t` when done with every view of it).
   * WebGPU tracks usage per buffer, not per range: one dispatch may not write a view and bind
   * any other view of the same buffer (`run` refuses it; residualForward copies first).
   */
  view(t: GpuTensor<'f32'>, offset: number, length: number): GpuTensor<'f32'> {
    if (!Number.isInteger(offset) || offset < 0 || offset % VIEW_ALIGN !== 0) throw new RangeError(`view: offset ${offset} must be a multiple of ${VIEW_ALIGN} elements (256 bytes)`);
    if (!Number.isInteger(length) || length < 0 || offset + length > t.length) throw new RangeError(`view: [${offset}, ${offset} + ${length}) is outside the tensor's ${t.length} elements`);
    return { kind: 'f32', length, buffer: t.buffer, byteLength: 4 * length, offset: (t.offset ?? 0) + 4 * offset };
  }

  /**
   * Copy of the tensor's contents after every op recorded before it has run. The copy is recorded
   * now; the submission waits a microtask, so that every download asked for in the same JS task
   * (e.g. `Promise.all([download(a), download(b)])`) rides in one command submission.
   */
  async download<K extends TensorKind>(kind: K, t: GpuTensor<K>): Promise<HostTensors[K]> {
    if (t.kind !== kind) throw new TypeError(`download: tensor is ${t.kind}, asked for ${kind}`);
    const padded = Math.ceil(t.byteLength / 4) * 4;
    const ctor = CTORS[kind];
    if (padded === 0) return new ctor(new ArrayBuffer(0), 0, 0);
    const staging = this.device.createBuffer({ size: padded, usage: READBACK_USAGE });
    this.counts.downloads++;
    this.enc().copyBufferToBuffer(t.buffer, t.offset ?? 0, staging, 0, padded);
    await (this.flushSoon ??= Promise.resolve().then(() => {
      this.flushSoon = null;
      this.flush();
    }));
    await staging.mapAsync(MAP_READ);
    const copy = staging.getMappedRange().slice(0, padded);
    staging.unmap();
    staging.destroy();
    this.checkErrors();
    return new ctor(copy, 0, t.length);
  }

  /** A new tensor with a copy of `t` (recorded, like an op). */
  clone<K extends TensorKind>(t: GpuTensor<K>): GpuTensor<K> {
    const buffer = this.allocate(t.byteLength, `clone(${t.kind}[${t.length}])`);
    const padded = Math.ceil(t.byteLength / 4) * 4;
    if (padded > 0) this.enc().copyBufferToBuffer(t.buffer, t.offset ?? 0, buffer, 0, padded);
    return { kind: t.kind, length: t.length, buffer, byteLength: t.byteLength };
  }

  /** Record a copy of the first `length` elements of `src` into `dst` (a buffer copy: no dispatch). */
  copy(src: GpuTensor<'f32'>, dst: GpuTensor<'f32'>, length: number): void {
    if (length > src.length || length > dst.length) throw new RangeError(`copy: ${length} elements, src has ${src.length}, dst ${dst.length}`);
    if (length > 0) this.enc().copyBufferToBuffer(src.buffer, src.offset ?? 0, dst.buffer, dst.offset ?? 0, 4 * length);
  }

  /** Return the tensor's buffer to the pool (it must not be used afterwards). */
  dispose(t: GpuTensor): void {
    if (t === this.dummy || t.offset !== undefined) return;
    const cls = t.buffer.size;
    let free = this.freeStorage.get(cls);
    if (free === undefined) this.freeStorage.set(cls, (free = []));
    free.push(t.buffer);
  }

  // --- kernels ---

  /** The compiled pipeline of `k` (compiled once per cache key). */
  pipeline(k: KernelDef): { pipeline: GPUComputePipeline; layout: GPUBindGroupLayout } {
    const key = keyOf(k);
    const hit = this.pipelines.get(key);
    if (hit !== undefined) return hit;
    const code = k.shaders.map(shaderSource).join('\n');
    const module = this.device.createShaderModule({ code, label: k.shaders.join('+') });
    const entries: GPUBindGroupLayoutEntry[] = [{ binding: 0, visibility: 4 /* COMPUTE */, buffer: { type: 'uniform' } }];
    k.bindings.forEach((a, i) =>
      entries.push({ binding: i + 1, visibility: 4, buffer: { type: a === 'rw' ? 'storage' : 'read-only-storage' } }),
    );
    const layout = this.device.createBindGroupLayout({ entries, label: key });
    const pipeline = this.device.createComputePipeline({
      label: key,
      layout: this.device.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: { module, entryPoint: k.entry, constants: { ...k.overrides } },
    });
    const rec = { pipeline, layout };
    this.pipelines.set(key, rec);
    return rec;
  }

  /** A 2-D workgroup grid (x, y) covering `count` workgroups within the per-dimension limit. */
  grid(count: number): [number, number] {
    const max = this.maxPerDim;
    if (count <= max) return [Math.max(1, count), 1];
    const y = Math.ceil(count / max);
    if (y > max) throw new RangeError(`dispatch of ${count} workgroups exceeds this device's maxComputeWorkgroupsPerDimension² (${max}²)`);
    return [Math.ceil(count / y), y];
  }

  /**
   * Record one dispatch of kernel `k` over `workgroups` workgroups (laid out by `grid`), with the
   * uniform `ps` at binding 0 and `tensors` at bindings 1…n. A count of 0 records nothing.
   */
  run(k: KernelDef, ps: readonly Param[], tensors: readonly GpuTensor[], workgroups: number): void {
    if (this.destroyed) throw new Error('WebGPU: the context was destroyed');
    if (tensors.length !== k.bindings.length) {
      throw new Error(`${k.entry}: kernel has ${k.bindings.length} storage bindings, got ${tensors.length} tensors`);
    }
    for (let i = 0; i < tensors.length; i++) {
      for (let j = i + 1; j < tensors.length; j++) {
        if (tensors[i]!.buffer === tensors[j]!.buffer && (k.bindings[i] === 'rw' || k.bindings[j] === 'rw') && tensors[i] !== this.dummy) {
          throw new Error(`${k.shaders.join('+')}: bindings ${i + 1} and ${j + 1} are the same tensor and one is written (WebGPU forbids aliasing a writable binding, even disjoint views of one buffer); copy it first`);
        }
      }
    }
    if (workgroups <= 0) return;
    const { pipeline, layout } = this.pipeline(k);
    const uni = this.uniform(params(ps));
    const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: uni } }];
    tensors.forEach((t, i) =>
      entries.push({ binding: i + 1, resource: t.offset === undefined ? { buffer: t.buffer } : { buffer: t.buffer, offset: t.offset, size: Math.max(4, Math.ceil(t.byteLength / 4) * 4) } }),
    );
    const bindGroup = this.device.createBindGroup({ layout, entries });
    const [x, y] = this.grid(workgroups);
    const pass = this.enc().beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(x, y);
    pass.end();
    this.counts.dispatches++;
    const name = k.entry === 'main' ? k.shaders.join('+') : `${k.shaders.join('+')}:${k.entry}`;
    this.counts.byKernel[name] = (this.counts.byKernel[name] ?? 0) + 1;
  }

  /** A snapshot of `counts` (byKernel copied), for `countsSince`. */
  countsNow(): GpuCounts {
    return { ...this.counts, byKernel: { ...this.counts.byKernel } };
  }

  /** What was asked of the GPU since the snapshot `c0` (byKernel: only kernels that ran, most dispatches first). */
  countsSince(c0: GpuCounts): GpuCounts {
    const c = this.counts;
    const byKernel: Record<string, number> = {};
    const rows = Object.entries(c.byKernel).map(([n, v]) => [n, v - (c0.byKernel[n] ?? 0)] as const).filter(([, v]) => v > 0);
    rows.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    for (const [n, v] of rows) byKernel[n] = v;
    return { dispatches: c.dispatches - c0.dispatches, submissions: c.submissions - c0.submissions, uploads: c.uploads - c0.uploads, downloads: c.downloads - c0.downloads, byKernel };
  }

  private uniform(data: ArrayBuffer): GPUBuffer {
    let b = this.freeUniform.find((u) => u.size === data.byteLength);
    if (b !== undefined) this.freeUniform.splice(this.freeUniform.indexOf(b), 1);
    else b = this.device.createBuffer({ size: data.byteLength, usage: UNIFORM_USAGE });
    // writeBuffer runs on the queue before the encoder holding this dispatch is submitted.
    this.device.queue.writeBuffer(b, 0, data);
    this.inFlightUniform.push(b);
    return b;
  }

  private enc(): GPUCommandEncoder {
    if (this.encoder === null) this.encoder = this.device.createCommandEncoder();
    return this.encoder;
  }

  /** Submit everything recorded so far. Uniform buffers return to their pool when the GPU is done. */
  flush(): void {
    if (this.encoder === null) return;
    const cb = this.encoder.finish();
    this.encoder = null;
    this.device.queue.submit([cb]);
    this.counts.submissions++;
    const done = this.inFlightUniform;
    const staging = this.pendingStaging;
    this.inFlightUniform = [];
    this.pendingStaging = [];
    void this.device.queue.onSubmittedWorkDone().then(() => {
      this.freeUniform.push(...done);
      for (const b of staging) b.destroy();
    });
  }

  /** Flush and wait until the GPU has finished all submitted work. */
  async finish(): Promise<void> {
    this.flush();
    await this.device.queue.onSubmittedWorkDone();
    this.checkErrors();
  }

  /** Destroy the device (which frees every buffer, pooled or not); the context is unusable afterwards. */
  destroy(): void {
    this.destroyed = true;
    this.device.destroy();
  }
}
