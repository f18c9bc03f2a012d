/**
 * Acquiring a WebGPU device, in the browser (navigator.gpu) or in Node (the `webgpu` package: Dawn
 * on any Vulkan driver, including Chromium's SwiftShader CPU driver), behind one function that
 * returns a device or a reason a person can act on. Also checks the limits a kernel's buffers need
 * (`checkBufferSize`) and reports device loss to a callback.
 *
 * Not here: what to do when the device is lost (src/workers/agentApi.ts), the kernels (kernel.ts
 * and one file per op), choosing between the WebGPU and CPU backends (the app).
 */
/** What `acquireDevice` hands back when it works. */
export interface GpuDeviceHandle {
  readonly ok: true;
  readonly adapter: GPUAdapter;
  readonly device: GPUDevice;
  /** One line naming the adapter (vendor, architecture, description), for logs and the UI. */
  readonly description: string;
  /** Where the device came from. */
  readonly source: 'navigator.gpu' | 'node-webgpu';
}

/** Why no device: a sentence a person can act on. */
export interface GpuUnavailable {
  readonly ok: false;
  readonly reason: string;
}

export type AcquireResult = GpuDeviceHandle | GpuUnavailable;

export interface AcquireOptions {
  readonly powerPreference?: GPUPowerPreference;
  /**
   * Called once if the device is lost (driver reset, `device.destroy()`, tab backgrounded too
   * long…), with the reason and the browser's message. Recreation is the caller's business.
   */
  readonly onLost?: (info: { reason: string; message: string }) => void;
  /**
   * Node only: how to reach a Vulkan driver when the machine's own give no adapter (a real GPU is
   * preferred; node.ts `softwareFallback()` finds SwiftShader's). `vulkanIcd` sets VK_ICD_FILENAMES
   * (read when Dawn creates its instance, so setting it from JS works) unless the environment sets
   * it; `vulkanLibrary` pre-loads libvulkan.so.1 by absolute path so Dawn's dlopen finds it by
   * soname — LD_LIBRARY_PATH is read only at process start, too late for a test file.
   */
  readonly node?: { readonly vulkanIcd?: string; readonly vulkanLibrary?: string };
}

// glibc dlopen flags (Linux): RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE.
const RTLD_NOW = 2;
const RTLD_GLOBAL = 0x100;
const RTLD_NODELETE = 0x1000;

/** Pre-load a shared library by absolute path with RTLD_NODELETE, so that it stays loaded. */
function preloadLibrary(path: string): string | null {
  const proc = globalThis.process;
  try {
    proc.dlopen({ exports: {} } as NodeJS.Module, path, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    // Node rejects a library that is not a Node addon *after* dlopen succeeded; with
    // RTLD_NODELETE the library stays mapped, which is all we want.
    if (!/self-register/.test(msg)) return `could not load the Vulkan loader ${path}: ${msg}`;
  }
  return null;
}

type DawnModule = { create: (flags: string[]) => GPU; globals: object };
let dawn: DawnModule | null = null;
/**
 * Every Dawn instance we created, held for the life of the process: a `GPU` object that is
 * garbage-collected while its adapter or device lives destroys the native instance under them
 * (Dawn's ProcessEvents then crashes the process on a freed mutex — seen as random
 * segfaults / "futex facility returned an unexpected error code").
 */
const dawnInstances: GPU[] = [];
function newInstance(mod: DawnModule): GPU {
  const g = mod.create([]);
  dawnInstances.push(g);
  return g;
}

async function loadDawn(): Promise<DawnModule | string> {
  if (dawn !== null) return dawn;
  try {
    const name = 'webgpu'; // a variable, so that bundlers leave this Node-only import alone
    dawn = (await import(/* @vite-ignore */ name)) as DawnModule;
  } catch (e) {
    return `the 'webgpu' npm package (Dawn for Node) is not installed or failed to load: ${e instanceof Error ? e.message : String(e)}`;
  }
  // GPUBufferUsage, GPUMapMode, … as globals, as in a browser.
  for (const [k, v] of Object.entries(dawn.globals)) {
    if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
  }
  return dawn;
}

/** Point the Vulkan loader at the software driver of `opts.node` (AcquireOptions.node). */
function applySoftwareDriver(opts: AcquireOptions): string | null {
  const proc = globalThis.process;
  const icd = opts.node?.vulkanIcd;
  if (icd !== undefined && proc.env.VK_ICD_FILENAMES === undefined) proc.env.VK_ICD_FILENAMES = icd;
  const lib = opts.node?.vulkanLibrary;
  if (lib !== undefined && proc.platform === 'linux') return preloadLibrary(lib);
  return null;
}

async function nodeAdapter(opts: AcquireOptions, powerPreference: GPURequestAdapterOptions): Promise<GPUAdapter | string> {
  const mod = await loadDawn();
  if (typeof mod === 'string') return mod;
  // First whatever driver the machine has; then, if given, the software driver.
  const first = await newInstance(mod).requestAdapter(powerPreference);
  if (first !== null || opts.node === undefined) {
    return first ?? 'no WebGPU adapter: Dawn found no Vulkan driver (install a GPU driver, or pass a software driver: softwareFallback() in src/backend/webgpu/node.ts finds Chromium\'s SwiftShader)';
  }
  const err = applySoftwareDriver(opts);
  if (err !== null) return err;
  const second = await newInstance(mod).requestAdapter(powerPreference);
  return second ?? `no WebGPU adapter, even with VK_ICD_FILENAMES=${globalThis.process.env.VK_ICD_FILENAMES ?? '(unset)'} and the Vulkan loader ${opts.node.vulkanLibrary ?? '(system)'}`;
}

/** One line describing an adapter. */
export function describeAdapter(adapter: GPUAdapter): string {
  const i = adapter.info;
  return [i.vendor, i.architecture, i.description].filter((s) => s !== undefined && s !== '').join(' / ') || 'unknown adapter';
}

/**
 * True for a CPU-emulated adapter (SwiftShader, llvmpipe/lavapipe, or one the browser marks as a
 * fallback): correct, but slower for these models than the CPU backend's own kernels.
 */
export function isSoftwareAdapter(adapter: GPUAdapter): boolean {
  const i = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
  return i.isFallbackAdapter === true || /swiftshader|llvmpipe|lavapipe|software/i.test(describeAdapter(adapter));
}

/**
 * A WebGPU device, or the reason there is none. Requests the adapter's own limits for storage
 * buffer size and binding size (the defaults are far lower than most adapters allow).
 */
export async function acquireDevice(opts: AcquireOptions = {}): Promise<AcquireResult> {
  let adapter: GPUAdapter | null;
  let source: GpuDeviceHandle['source'];
  const pp: GPURequestAdapterOptions = opts.powerPreference !== undefined ? { powerPreference: opts.powerPreference } : {};
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  try {
    if (nav?.gpu !== undefined) {
      source = 'navigator.gpu';
      adapter = await nav.gpu.requestAdapter(pp);
      if (adapter === null) return { ok: false, reason: 'WebGPU is present but no adapter is available (GPU blocklisted or disabled): the CPU backend will be used' };
    } else if (typeof globalThis.process?.versions?.node === 'string') {
      source = 'node-webgpu';
      const a = await nodeAdapter(opts, pp);
      if (typeof a === 'string') return { ok: false, reason: a };
      adapter = a;
    } else {
      return { ok: false, reason: 'this browser has no WebGPU (navigator.gpu is missing): the CPU backend will be used' };
    }
  } catch (e) {
    return { ok: false, reason: `requestAdapter failed: ${e instanceof Error ? e.message : String(e)}` };
  }
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({
      requiredLimits: {
        maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
        maxBufferSize: adapter.limits.maxBufferSize,
      },
    });
  } catch (e) {
    return { ok: false, reason: `requestDevice failed: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (opts.onLost !== undefined) {
    const cb = opts.onLost;
    void device.lost.then((info) => cb({ reason: info.reason, message: info.message }));
  }
  return { ok: true, adapter, device, description: describeAdapter(adapter), source };
}

/**
 * Throws a RangeError naming the limit when a buffer of `bytes` cannot be bound as one storage
 * buffer on `device` (maxStorageBufferBindingSize) or created at all (maxBufferSize).
 */
export function checkBufferSize(device: GPUDevice, bytes: number, what: string): void {
  const lim = device.limits;
  if (bytes > lim.maxStorageBufferBindingSize) {
    throw new RangeError(`${what}: ${bytes} bytes exceeds this device's maxStorageBufferBindingSize (${lim.maxStorageBufferBindingSize} bytes); split the tensor or use a smaller model`);
  }
  if (bytes > lim.maxBufferSize) {
    throw new RangeError(`${what}: ${bytes} bytes exceeds this device's maxBufferSize (${lim.maxBufferSize} bytes)`);
  }
}
