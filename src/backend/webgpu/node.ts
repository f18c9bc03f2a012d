/**
 * Node-only helper: where to find a software Vulkan driver (SwiftShader, shipped with Chromium)
 * so that `acquireDevice` (device.ts) gets an adapter on a machine with no GPU — CI, the kernel
 * tests, a headless bench. Returns the options for `acquireDevice({ node })`, or undefined when
 * no such driver is installed (a real GPU driver, if any, is then used as is).
 * `acquireAnyDevice` is `acquireDevice` with that fallback — what every Node caller that takes
 * any adapter wants (the agent worker, the CLI's backend = webgpu, the benches, the GPU tests).
 *
 * Not here: anything the browser needs — the agent worker imports this file too, where it returns
 * undefined at once; it uses `process.getBuiltinModule` rather than an `import` of node:fs so that
 * the browser bundle and the shared tsconfig never pull Node modules in.
 */

import { acquireDevice, type AcquireOptions, type AcquireResult } from './device';

/** Chromium's SwiftShader ICD and its bundled Vulkan loader, if present in a known place. */
export function softwareFallback(dirs: readonly string[] = ['/usr/lib/chromium', '/usr/lib64/chromium', '/opt/google/chrome']): { vulkanIcd: string; vulkanLibrary: string } | undefined {
  const proc = globalThis.process;
  if (proc?.platform !== 'linux' || typeof proc.getBuiltinModule !== 'function') return undefined;
  const fs = proc.getBuiltinModule('node:fs');
  for (const d of dirs) {
    const icd = `${d}/vk_swiftshader_icd.json`;
    const lib = `${d}/libvulkan.so.1`;
    if (fs.existsSync(icd) && fs.existsSync(lib)) return { vulkanIcd: icd, vulkanLibrary: lib };
  }
  return undefined;
}

/** `acquireDevice(opts)` with Chromium's SwiftShader as the driver of last resort in Node (header). */
export function acquireAnyDevice(opts: Omit<AcquireOptions, 'node'> = {}): Promise<AcquireResult> {
  const fallback = softwareFallback();
  return acquireDevice(fallback !== undefined ? { ...opts, node: fallback } : opts);
}
