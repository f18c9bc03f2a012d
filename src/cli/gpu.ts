/**
 * The command line's WebGPU agents (`--set backend=webgpu` on a language preset): one GPUDevice per
 * agent, as the page has one per agent worker, from the machine's driver through Dawn or, failing
 * that, Chromium's SwiftShader (correct but far slower than the CPU backend, docs/performance.md).
 * A device that cannot be had ends the run before any work (exit 1, SatError 'backend'); one lost
 * mid-run is reported by `lost()`. Same seed and backend ⇒ the same run, but not the CPU's bits.
 *
 *   const gpu = cliGpuBackends(log);
 *   const exp = await createLlmExperiment(cfg, loadFromDisk, { backendOf: gpu.backendOf });
 *   gpu.release();                    // destroys the devices (the process can then exit)
 *
 * Not here: the kernels, the page's choice between 'auto', 'webgpu' and 'cpu' (agentApi.ts).
 */
import { SatError } from '../core/errors';
import type { Backend } from '../backend/types';
import { webgpuBackend, type GpuTensors } from '../backend/webgpu/backend';
import { GpuContext } from '../backend/webgpu/kernel';
import { acquireAnyDevice } from '../backend/webgpu/node';

export interface CliGpu {
  /** Agent `index`'s backend on a device of its own (createLlmExperiment's `backendOf`). */
  backendOf(index: number): Promise<Backend<GpuTensors>>;
  /** One line per agent: its adapter. */
  readonly adapters: string[];
  /** The first device loss seen, as a sentence naming the agent; null while none. */
  lost(): string | null;
  /** Destroys every device made here (their loss is then expected and not reported). */
  release(): void;
  /** Dispatches and command submissions of every agent's context so far (what `--profile` prints beside the phases). */
  counts(): { dispatches: number; submissions: number };
}

export function cliGpuBackends(): CliGpu {
  const devices: GPUDevice[] = [];
  const contexts: GpuContext[] = [];
  const adapters: string[] = [];
  let lost: string | null = null;
  let released = false;
  return {
    adapters,
    async backendOf(index) {
      const r = await acquireAnyDevice({
        onLost: ({ reason, message }) => {
          if (!released && lost === null) lost = `agent ${index}'s GPU device was lost (${reason}${message ? `: ${message}` : ''})`;
        },
      });
      if (!r.ok) throw new SatError('backend', `backend = webgpu: agent ${index} got no GPU device — ${r.reason}. Run with --set backend=cpu (the default on the command line) instead.`);
      devices.push(r.device);
      const ctx = new GpuContext(r.device);
      contexts.push(ctx);
      adapters.push(`agent ${index}: ${r.description}`);
      return webgpuBackend(ctx, r.description);
    },
    lost: () => lost,
    release() {
      released = true;
      for (const d of devices) d.destroy();
    },
    counts: () => contexts.reduce((s, c) => ({ dispatches: s.dispatches + c.counts.dispatches, submissions: s.submissions + c.counts.submissions }), { dispatches: 0, submissions: 0 }),
  };
}
