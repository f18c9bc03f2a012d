/**
 * Vitest global setup: runs once, before any test file, so that every file sees the same machine.
 * It makes sure Debian's Chromium is at /usr/bin/chromium (scripts/ensure-chromium.mjs: installed
 * with apt-get when missing and running as root; otherwise the run stops here with the exact
 * command to run). Chromium is what the browser test drives, and its SwiftShader is the WebGPU
 * adapter of the GPU tests on a machine without a GPU (tests/webgpu/gpu.ts) — installing it
 * during the run, after those files had already looked for an adapter, is what this prevents.
 *
 * SAT_ALLOW_NO_GPU=1 is the one way to go on without Chromium: the setup then prints why, the GPU
 * test files skip with their reason printed, and the browser test still fails with the command
 * to run (it never skips).
 *
 * Not here: finding the WebGPU adapter (tests/webgpu/gpu.ts, per file).
 */
import { ensureChromium } from '../../scripts/ensure-chromium.mjs';

export async function setup(): Promise<void> {
  try {
    const path = await ensureChromium();
    console.log(`[global setup] Chromium: ${path}`);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    if (process.env.SAT_ALLOW_NO_GPU === '1') {
      console.warn(`[global setup] WARNING (SAT_ALLOW_NO_GPU=1): going on without Chromium — ${why}. Without it the GPU test files skip when no other WebGPU adapter exists, and the browser test fails.`);
      return;
    }
    throw new Error(`[global setup] ${why} (or set SAT_ALLOW_NO_GPU=1 to run the tests that need neither Chromium nor a WebGPU adapter)`);
  }
}
