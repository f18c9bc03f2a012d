/**
 * Vitest global setup: runs before any test file (once per project), so that every file sees the
 * same machine.
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
 * It also bundles the Node agent worker (tests/helpers/agentWorkerNode.ts) into one ES module,
 * AGENT_WORKER_BUNDLE, once per run, which tests/helpers/nodeAgentWorker.ts starts: a worker that
 * loads one file is ready several times sooner than one that compiles the TypeScript sources and
 * resolves hundreds of small package files itself, and the worker tests start dozens of them.
 *
 * It makes the folder the browser tests' one build of the page goes into (tests/e2e/harness.ts), and
 * removes it when the run ends.
 *
 * Not here: finding the WebGPU adapter (tests/webgpu/gpu.ts, per file).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';
import { ensureChromium } from '../../scripts/ensure-chromium.mjs';
import { AGENT_WORKER_BUNDLE } from '../helpers/workerBundle';

/** Bundles the agent worker's sources and packages; onnxruntime-web stays a package import (it finds its WASM files beside itself). */
async function bundleAgentWorker(): Promise<void> {
  await build({
    entryPoints: [new URL('../helpers/agentWorkerNode.ts', import.meta.url).pathname],
    outfile: AGENT_WORKER_BUNDLE.pathname,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['onnxruntime-web', 'webgpu'],
    // CommonJS packages inside an ES module bundle call `require`; give them Node's.
    banner: { js: "import { createRequire as __satRequire } from 'node:module'; const require = __satRequire(import.meta.url);" },
    logLevel: 'warning',
  });
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The folder the browser tests build the page into, once per run. */
    e2eBuildRoot: string;
  }
}

/** The one bundling of a run: Vitest calls `setup` once per project, in the same process. */
let bundled: Promise<void> | undefined;

/** Runs once per Vitest project; returns the teardown that removes what it made. */
export async function setup(project: TestProject): Promise<() => void> {
  bundled ??= bundleAgentWorker();
  await bundled;
  const buildRoot = mkdtempSync(join(tmpdir(), 'sat-e2e-build-'));
  project.provide('e2eBuildRoot', buildRoot);
  const teardown = (): void => rmSync(buildRoot, { recursive: true, force: true });
  try {
    const path = await ensureChromium();
    console.log(`[global setup] Chromium: ${path}`);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    if (process.env.SAT_ALLOW_NO_GPU === '1') {
      console.warn(`[global setup] WARNING (SAT_ALLOW_NO_GPU=1): going on without Chromium — ${why}. Without it the GPU test files skip when no other WebGPU adapter exists, and the browser test fails.`);
      return teardown;
    }
    teardown();
    throw new Error(`[global setup] ${why} (or set SAT_ALLOW_NO_GPU=1 to run the tests that need neither Chromium nor a WebGPU adapter)`);
  }
  return teardown;
}
