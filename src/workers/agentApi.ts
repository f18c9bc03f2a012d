/**
 * The worker boundary, which is where the parameters are (an agent's whole update is one call):
 * `AgentApi` is one agent — its model, its optimizer, its backend — behind a plain class.
 * agent.worker.ts only exposes it with comlink; the main thread drives it through
 * `Remote<AgentApi>` (src/app/remoteTeam.ts); tests and the CLI can use the class directly. It
 * speaks in plain, cloneable data: `AgentSpec` in, typed arrays out.
 *
 *   const api = new AgentApi();
 *   await api.init({ kind: 'tabular', index: 0, nObs: 3, nActions: 3, initScale: 0.5, seed: 1, path: [0, 0] });
 *   const p = await api.distributions({ obs: Int32Array.of(0, 1, 2) });
 *
 * Step-set keys. An `LmAgent` caches the padded token batch and π_cur's logits behind a step set
 * by the identity of its `obs` array (one forward pass saved per trainStep and klToReference).
 * Across a worker boundary every call clones a new array, so identity is lost: the caller may pass
 * a `key` (a number naming that step set; src/app/remoteTeam.ts numbers them by identity on its
 * side), and AgentApi hands the agent the SAME obs array for every call with that key. A key is a
 * promise that the step set has not changed since it was first sent.
 *
 * Results: every typed array a method returns is fresh and referenced by nobody here, so the
 * worker side may transfer it (src/workers/wire.ts `withTransfer`). Arguments are never kept
 * except a keyed step set's `obs` (copied by the clone anyway when it crossed a boundary).
 *
 * Not here: comlink (wire.ts, agent.worker.ts), the stage loop (src/sat/stage.ts, on the main
 * thread), building the rest of an experiment (src/sat/experiment.ts `planTabular` / `planLlm`).
 */
import { AgentWorkerError, DeviceLostError } from './errors';

export { AgentWorkerError, DeviceLostError };
import { acquireDevice, isSoftwareAdapter } from '../backend/webgpu/device';
import { GpuContext } from '../backend/webgpu/kernel';
import { softwareFallback } from '../backend/webgpu/node';
import { webgpuBackend, type GpuTensors } from '../backend/webgpu/backend';
import { BackendModel } from '../model/backendModel';
import { dequantizeWeights, loadModel, type LoadedModel } from '../model/weights';
import { BackendLmAgent } from '../sat/backendAgent';
import { lmAgent, tableAgent, type LmInit, type TableInit } from '../sat/experiment';
import { LmAgent, type GenerateOptions, type LmAgentPolicy } from '../sat/lm';
import { TabularSoftmaxAgent } from '../sat/tabularAgent';
import type { AgentBatch, AgentInfo, AgentSnapshot, ObjectiveSpec, StepSet, TrainReport } from '../sat/types';

/** A table agent: the same description createExperiment uses, so the initial table is identical. */
export interface TableSpec extends TableInit {
  readonly kind: 'tabular';
}

/** A language-model agent: createLlmExperiment's description plus the model file's bytes. */
export interface LmSpec extends LmInit {
  readonly kind: 'lm';
  /** The shipped model's name, e.g. "arithmetic-S". */
  readonly modelName: string;
  /** The model file (safetensors). Send a copy the caller will not use again, and transfer it. */
  readonly model: Uint8Array;
  /**
   * Where the model runs: 'cpu' (the TypeScript kernels; the default), 'webgpu' (a GPUDevice of
   * this worker's own; an error when there is none) or 'auto' (WebGPU when a hardware adapter
   * exists, else the CPU, saying why — a software adapter such as SwiftShader is slower here than
   * the CPU kernels).
   */
  readonly backend?: 'cpu' | 'webgpu' | 'auto';
}

export type AgentSpec = TableSpec | LmSpec;

/** The agent's backend as the page names it. */
export const CPU_BACKEND = 'cpu (TypeScript)';

type AnyAgent = TabularSoftmaxAgent | LmAgent | BackendLmAgent<GpuTensors>;

/** How many keyed step sets AgentApi remembers (a stage uses a handful per agent step). */
const KEYED_STEP_SETS = 32;

export class AgentApi {
  #agent: AnyAgent | null = null;
  /** What `info().backend` says: the CPU, or the WebGPU adapter (and why not, after a fallback). */
  #backend = CPU_BACKEND;
  #gpu: { device: GPUDevice; ctx: GpuContext } | null = null;
  /** Set when the GPU device is lost; every later call throws it. */
  #lost: DeviceLostError | null = null;
  /** Bytes of the model file (LM agents): its frozen base stays resident in LoRA mode. */
  #modelBytes = 0;
  /** key → the obs array every call with that key sees (insertion order = least recently used first). */
  #keyed = new Map<number, Int32Array>();
  #hits = 0;
  #misses = 0;

  /** Builds (or replaces) the agent. */
  async init(spec: AgentSpec): Promise<void> {
    this.#keyed.clear();
    this.#hits = 0;
    this.#misses = 0;
    if (spec.kind === 'tabular') {
      this.#agent = tableAgent(spec);
      this.#modelBytes = 0;
    } else if (spec.kind === 'lm') {
      const loaded = loadModel(spec.model);
      this.#modelBytes = spec.model.byteLength;
      this.#agent = (spec.backend ?? 'cpu') === 'cpu' ? this.#cpuAgent(spec, loaded) : await this.#gpuAgent(spec, loaded);
    } else {
      throw new AgentWorkerError(`agent worker: unknown agent kind ${JSON.stringify((spec as { kind?: unknown }).kind)}; expected "tabular" or "lm".`);
    }
  }

  #cpuAgent(spec: LmSpec, loaded: LoadedModel, why?: string): LmAgent {
    this.#backend = why ? `${CPU_BACKEND} — ${why}` : CPU_BACKEND;
    return lmAgent(spec, loaded);
  }

  /** The same agent over this worker's own GPUDevice (src/model/backendModel.ts on webgpuBackend). */
  async #gpuAgent(spec: LmSpec, loaded: LoadedModel): Promise<AnyAgent> {
    // 'auto' means the browser's WebGPU: a page (or worker) with navigator.gpu. Node has none, so
    // the CLI and Node tests stay on the CPU unless they ask for 'webgpu' (Dawn) explicitly.
    if (spec.backend === 'auto' && (globalThis as { navigator?: { gpu?: unknown } }).navigator?.gpu === undefined) {
      return this.#cpuAgent(spec, loaded, 'this browser has no WebGPU (navigator.gpu)');
    }
    const fallback = softwareFallback(); // Node without a GPU driver: Chromium's SwiftShader, if installed
    let inUse = true; // false once this device is given back below: its loss is then expected
    const r = await acquireDevice({
      ...(fallback ? { node: fallback } : {}),
      onLost: ({ reason, message }) => {
        if (!inUse) return;
        this.#lost = new DeviceLostError(
          `Agent ${spec.index}'s GPU device was lost (${reason}${message ? `: ${message}` : ''}); its weights and optimizer state are safe in the last snapshot.`,
        );
      },
    });
    if (!r.ok) {
      if (spec.backend === 'webgpu') throw new AgentWorkerError(`agent ${spec.index}: backend = webgpu was asked for, but ${r.reason}`);
      return this.#cpuAgent(spec, loaded, `no WebGPU: ${r.reason}`);
    }
    if (spec.backend === 'auto' && isSoftwareAdapter(r.adapter)) {
      inUse = false;
      r.device.destroy();
      return this.#cpuAgent(spec, loaded, `the only WebGPU adapter is a software one (${r.description}), slower here than the CPU backend; set backend = webgpu to use it anyway`);
    }
    const ctx = new GpuContext(r.device);
    this.#gpu = { device: r.device, ctx };
    const be = webgpuBackend(ctx, r.description);
    const weights = spec.lora === 0 ? dequantizeWeights(loaded.weights) : loaded.weights;
    const model = new BackendModel(be, loaded.cfg, weights, spec.lora === 0 ? { trainable: 'full' } : { trainable: 'lora', lora: { rank: spec.lora, alpha: spec.loraAlpha }, seed: spec.seed });
    this.#backend = be.name;
    return new BackendLmAgent(spec.index, model, { name: spec.name, temperature: spec.temperature, topK: spec.topK });
  }

  get #a(): AnyAgent {
    if (this.#lost) throw this.#lost;
    if (!this.#agent) throw new AgentWorkerError('agent worker: no agent yet — call init(spec) before anything else.');
    return this.#agent;
  }

  /**
   * Runs one call; if the device was lost while it ran (the call then fails or returns garbage
   * read from a dead device), the loss is what gets reported.
   */
  async #call<T>(fn: (a: AnyAgent) => T | Promise<T>): Promise<T> {
    const a = this.#a;
    try {
      const out = await fn(a);
      if (this.#lost) throw this.#lost;
      return out;
    } catch (e) {
      if (this.#lost) throw this.#lost;
      throw e;
    }
  }

  /** For tests and demonstrations: destroys this agent's GPU device (as a driver reset would). */
  async loseDevice(): Promise<boolean> {
    if (!this.#gpu) return false;
    this.#gpu.device.destroy();
    // device.lost resolves asynchronously; wait for it so the next call sees the loss.
    await this.#gpu.device.lost;
    await new Promise((r) => setTimeout(r, 0));
    return true;
  }

  #table(what: string): TabularSoftmaxAgent {
    const a = this.#a;
    if (!(a instanceof TabularSoftmaxAgent)) throw new AgentWorkerError(`agent ${a.index}: ${what} needs a tabular agent; this one is a language model.`);
    return a;
  }

  #lm(what: string): LmAgentPolicy {
    const a = this.#a;
    if (a instanceof TabularSoftmaxAgent) throw new AgentWorkerError(`agent ${a.index}: ${what} needs a language-model agent; this one is a table.`);
    return a;
  }

  /** The step set with the obs array first sent under `key` (so the agent's identity caches hit). */
  #steps<S extends StepSet>(s: S, key: number | undefined): S {
    if (key === undefined) return s;
    const hit = this.#keyed.get(key);
    if (hit && hit.length === s.obs.length) {
      this.#hits++;
      this.#keyed.delete(key);
      this.#keyed.set(key, hit);
      return hit === s.obs ? s : { ...s, obs: hit };
    }
    this.#misses++;
    this.#keyed.set(key, s.obs);
    if (this.#keyed.size > KEYED_STEP_SETS) this.#keyed.delete(this.#keyed.keys().next().value!);
    return s;
  }

  /** Name, kind, trainable parameter count, and the backend it runs on. */
  async info(): Promise<AgentInfo> {
    return { ...(await this.#a.info()), backend: this.#backend };
  }

  /**
   * Rough resident bytes: parameters, gradients (LM), optimizer moments and the reference copy,
   * plus the model file for an LM (its frozen base, or the weights copied into params). Activation
   * buffers, which grow with the batch, are not counted.
   */
  async memoryBytes(): Promise<number> {
    const a = this.#a;
    if (a instanceof TabularSoftmaxAgent) return 5 * a.nObs * a.nActions * Float64Array.BYTES_PER_ELEMENT;
    if (a instanceof BackendLmAgent) return this.#gpu?.ctx.storageBytes ?? 0; // GPU buffers created
    return 5 * a.model.params.length * a.model.params.BYTES_PER_ELEMENT + this.#modelBytes;
  }

  /** Keyed step sets seen again (hits) and first seen (misses) since init. */
  async cacheStats(): Promise<{ hits: number; misses: number }> {
    return { hits: this.#hits, misses: this.#misses };
  }

  async distributions(steps: StepSet, key?: number): Promise<Float64Array> {
    return this.#call((a) => a.distributions(this.#steps(steps, key)));
  }

  async logProbs(steps: StepSet, key?: number): Promise<Float64Array> {
    return this.#call((a) => a.logProbs(this.#steps(steps, key)));
  }

  async setReference(): Promise<void> {
    return this.#call((a) => a.setReference());
  }

  async klToReference(steps: StepSet, key?: number): Promise<Float64Array> {
    return this.#call((a) => a.klToReference(this.#steps(steps, key)));
  }

  async trainStep(batch: AgentBatch, spec: ObjectiveSpec, key?: number): Promise<TrainReport> {
    return this.#call((a) => a.trainStep(this.#steps(batch, key), spec));
  }

  async surrogateGradient(batch: AgentBatch, key?: number): Promise<Float64Array> {
    return this.#call((a) => a.surrogateGradient(this.#steps(batch, key)));
  }

  async fisherVectorProduct(steps: StepSet, v: Float64Array, key?: number): Promise<Float64Array> {
    return this.#call((a) => a.fisherVectorProduct(this.#steps(steps, key), v));
  }

  async snapshot(): Promise<AgentSnapshot> {
    return this.#call((a) => a.snapshot());
  }

  async restore(s: AgentSnapshot): Promise<void> {
    return this.#call((a) => a.restore(s));
  }

  async interpolate(from: AgentSnapshot, f: number): Promise<void> {
    return this.#call((a) => a.interpolate(from, f));
  }

  async generate(contexts: readonly Int32Array[], opts: GenerateOptions): Promise<{ tokens: Int32Array[]; stopped: boolean[] }> {
    const a = this.#lm('generate');
    return this.#call(() => a.generate(contexts, opts));
  }

  /** The table's logits (tabular agents; for swaps and export). */
  async getLogits(): Promise<Float64Array> {
    return this.#table('getLogits').getLogits();
  }

  /** Replaces the table's logits and resets its optimizer (tabular agents; swaps). */
  async setLogits(z: Float64Array): Promise<void> {
    this.#table('setLogits').setLogits(z);
  }
}
