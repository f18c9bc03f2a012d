/**
 * One agent — its model, optimizer and backend — behind a plain class, because the worker boundary
 * is where the parameters are: `update(plan)` runs the agent's whole update (src/sat/update.ts)
 * beside them in one call; the other methods serve rollouts, stage starts, snapshots and the token
 * inspector. agent.worker.ts exposes it with comlink; tests and the CLI use the class directly.
 * Plain cloneable data in (`AgentSpec`: tabular, shipped LM, "hf" or "onnx" folder), fresh typed
 * arrays out, so the worker may transfer them (wire.ts `withTransfer`); arguments are never kept.
 *
 * Not here: comlink (wire.ts, agent.worker.ts), the stage loop (src/sat/stage.ts, main thread),
 * building the rest of an experiment (src/sat/experiment.ts `planTabular` / `planLlm`).
 */
import { AgentWorkerError, DeviceLostError } from './errors';
import { simdAvailable } from '../backend/cpu/simd';
import { cpuThreads, onOneThread, type CpuThreads } from '../backend/cpu/threads';

export { AgentWorkerError, DeviceLostError };
import { isSoftwareAdapter } from '../backend/webgpu/device';
import { GpuContext } from '../backend/webgpu/kernel';
import { acquireAnyDevice } from '../backend/webgpu/node';
import { webgpuBackend, type GpuTensors } from '../backend/webgpu/backend';
import type { Backend, HostTensors } from '../backend/types';
import { loadModel, weightBytes, type LoadedModel } from '../model/weights';
import { loadHfCheckpoint, type HfFiles, type HfProgress } from '../model/hfLoad';
import type { QuantKind } from '../model/quant';
import { hfSeatAgent, HF_SEAT_MAX_SEQ, type HfContextSettings, type HfSeatAgentOptions, type HfSeatBudget } from '../sat/hfSeat';
import type { HfModel } from '../model/hfLoad';
import { pickOrtProvider, type OrtProvider } from '../model/onnx/ort';
import type { OnnxParity } from '../model/onnx/parity';
import { FrozenOnnxAgent } from '../sat/agents/frozen';
import { tableAgent, type LmInit, type LmSeat, type TableInit } from '../sat/experiment';
import { lmAgent } from '../sat/llmExperiment';
import type { ProjectedLmAgent } from '../sat/agents/projected';
import { seatSwap, type SeatSwapOptions, type SeatSwapReport } from '../sat/lmSwap';
import { LmAgent, type GenerateOptions, type LmAgentPolicy } from '../sat/agents/lm';
import { speakHere, type Spoken } from '../sat/env/lm';
import { TabularSoftmaxAgent } from '../sat/agents/tabular';
import type { AgentBatch, AgentInfo, AgentSnapshot, ObjectiveSpec, StepSet, TrainReport } from '../sat/types';
import { agentGeometry, updateAgent, type UpdatePlan, type UpdateResult } from '../sat/update';
import { inspectKept, keepForInspection, type InspectAnswer, type KeptUpdate } from '../sat/inspect';
import { warmUpUpdate, type WarmUpShape } from '../sat/warmUp';

/** A table agent: the same description createTabularExperiment uses, so the initial table is identical. */
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

/** A language seat on a Hugging Face checkpoint folder (src/sat/hfSeat.ts builds the agent). */
export interface HfAgentSpec {
  readonly kind: 'hf';
  readonly index: number;
  /** Where it runs, as LmSpec.backend says ('cpu' when absent). */
  readonly backend?: LmSpec['backend'];
  /** What the page calls the checkpoint (folder name and short hash); the agent is "<name>#index". */
  readonly name: string;
  /** The folder's files by name (src/app/hfFiles.ts). Send copies the caller will not use again, and transfer them. */
  readonly files: HfFiles;
  readonly quant: QuantKind;
  /** The model's context (positions): hfSeatContext for the settings (HF_SEAT_MAX_SEQ when absent). */
  readonly maxSeq?: number;
  /** Refused before any tensor is read when the estimate for this budget exceeds limitBytes ("where" names the limit). */
  readonly memory: HfSeatBudget & { readonly limitBytes: number; readonly where: string };
  readonly agent: HfSeatAgentOptions;
}

/**
 * A language seat on an ONNX model folder (src/sat/onnxSeat.ts): `trainable` maps the
 * initializers into our model (then as an `hf` seat: LoRA, the backend it asks for) after the
 * parity check against onnxruntime-web on the preset's prompts; `frozen` runs the graph itself in
 * onnxruntime-web here (WebGPU where this worker has an adapter, else wasm), never updated.
 */
export interface OnnxAgentSpec extends Omit<HfAgentSpec, 'kind'> {
  readonly kind: 'onnx';
  readonly mode: 'trainable' | 'frozen';
  /** The .onnx file in `files` (e.g. "onnx/model_q4.onnx"). */
  readonly file: string;
  /** The settings the seat's prompts and context come from. */
  readonly settings: HfContextSettings;
}

/** What an ONNX seat is, for its card (`onnxSeat()`). */
export interface OnnxSeatInfo {
  readonly mode: 'trainable' | 'frozen';
  readonly file: string;
  /** onnxruntime-web's execution provider, and why that one. */
  readonly ep: OrtProvider;
  readonly epWhy: string;
  /** Trainable: the parity check's numbers. */
  readonly parity?: OnnxParity;
  /** Frozen: the memory estimate (bytes) and the seat's context. */
  readonly estimateBytes?: number;
  readonly context?: number;
}

export type AgentSpec = TableSpec | LmSpec | HfAgentSpec | OnnxAgentSpec;

/**
 * What this agent's sampling has done so far (`speak` and `generate`, in this worker): messages
 * written, the prompt tokens read and the new tokens written, and the wall time of those calls.
 * (read + written) / seconds is the seat's tokens/s as its card shows it.
 */
export interface SeatSpeed {
  readonly calls: number;
  readonly promptTokens: number;
  readonly newTokens: number;
  readonly ms: number;
}

/** The agent's backend as the page names it. */
export const CPU_BACKEND = 'cpu (TypeScript)';

/**
 * The CPU backend's label with `why` (a GPU fallback's reason, or ''), and — when the platform keeps
 * the kernels on one thread (no SharedArrayBuffer: the page is not cross-origin isolated) — that too.
 * Loads the kernels, which is when threads are decided (src/backend/cpu/threads.ts).
 */
function cpuLabel(why: string): string {
  simdAvailable();
  const t = cpuThreads().why;
  const parts = [why, t.startsWith('no ') ? `one CPU thread: ${t}` : ''].filter((x) => x !== '');
  return parts.length > 0 ? `${CPU_BACKEND} — ${parts.join('; ')}` : CPU_BACKEND;
}

type AnyAgent = TabularSoftmaxAgent | LmSeat | LmAgent<GpuTensors> | ProjectedLmAgent<GpuTensors> | FrozenOnnxAgent;

/** Snapshots whose kept update an agent remembers (a side run takes one; a few spare). */
const KEPT_AT_MAX = 4;

/**
 * Bytes an agent's worker spends on the inspections of its earlier recorded steps (`keep`): each
 * holds π_cur's logits at its batch's states and the parameters right after it. The oldest are
 * dropped first; the inspector then says so.
 */
export const HISTORY_BYTES = 64 * 2 ** 20;

/** A recorded agent step's update, kept to be inspected later: what `inspectKept` needs and the parameters it left. */
interface KeptStep {
  readonly kept: KeptUpdate;
  /** The agent's parameters right after the update (its snapshot's `params`, held as f32: every model keeps f32 parameters, so this is exact). */
  readonly after: Float32Array;
  readonly bytes: number;
}

/** Bytes in MiB as a person reads them: "64 MiB", "0.11 MiB". */
const mib = (bytes: number): string => `${bytes >= 2 ** 20 ? (bytes / 2 ** 20).toFixed(0) : (bytes / 2 ** 20).toPrecision(2)} MiB`;

/** Two FNV-1a hashes over a snapshot's bytes: equal parameters and optimizer state, equal print. */
function snapshotPrint(s: AgentSnapshot): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ s.params.length;
  for (const a of [s.params, s.optim]) {
    const w = new Uint32Array(a.buffer, a.byteOffset, a.byteLength >>> 2);
    for (let i = 0; i < w.length; i++) {
      h1 = Math.imul(h1 ^ w[i]!, 0x01000193);
      h2 = Math.imul(h2 ^ w[i]!, 0x5bd1e995) ^ (h2 >>> 15);
    }
  }
  return `${(h1 >>> 0).toString(16)}.${(h2 >>> 0).toString(16)}.${s.params.length}.${s.optim.length}`;
}

/**
 * The rest of what a stage asks of this worker, on the warm-up's scratch copy: messages after text
 * contexts (`speak`: encode, sample, decode), the snapshot, fingerprint and restore of the
 * certificate's start/final teams, and the copy `keep` makes, so their code is compiled too.
 */
async function warmUpCalls(scratch: LmAgent, shape: WarmUpShape): Promise<void> {
  const tk = scratch.tokenizer;
  const ids = Int32Array.from({ length: Math.max(1, Math.min(shape.contextTokens, scratch.model.cfg.maxSeq - shape.maxNew - 1)) }, (_, i) => 4 + (i % 10));
  const text = tk.decodeMessage(ids);
  await speakHere(scratch, Array.from({ length: Math.max(1, shape.episodes) }, () => text), { maxNew: shape.maxNew, seed: 2, stream: 0 });
  for (let i = 0; i < 2; i++) {
    const s = await scratch.snapshot();
    snapshotPrint(s);
    Float32Array.from(s.params);
    await scratch.restore(s);
  }
}

export class AgentApi {
  #agent: AnyAgent | null = null;
  /** What `info().backend` says: the CPU, or the WebGPU adapter (and why not, after a fallback). */
  #backend = CPU_BACKEND;
  #gpu: { device: GPUDevice; ctx: GpuContext } | null = null;
  /** Set when the GPU device is lost; every later call throws it. */
  #lost: DeviceLostError | null = null;
  /** Bytes of the model file (LM agents): its frozen base stays resident in LoRA mode. */
  #modelBytes = 0;
  /** The latest update, kept for `inspect` (LM agents; src/sat/inspect.ts says what and how much). */
  #kept: KeptUpdate | null = null;
  /** Why there is nothing to inspect, when `#kept` is null. */
  #notKept = 'this agent has not been updated yet: step an agent first.';
  /**
   * The kept update at each recent snapshot, by the snapshot's fingerprint: a side run (Check
   * bound, Compare orders, a language δ sweep) snapshots the team, trains it, and restores that
   * snapshot — the parameters are then those the kept update describes, so it is kept again.
   */
  #keptAt = new Map<string, KeptUpdate>();
  /** The recorded steps' updates by the caller's tag, oldest first (`keep`, `inspect(…, tag)`). */
  #history = new Map<string, KeptStep>();
  /** Why a tag is no longer in `#history` (dropped for room, or the seat was replaced). */
  #dropped = new Map<string, string>();
  #historyBytes = 0;
  /** An ONNX seat's card facts (null for other agents). */
  #onnx: OnnxSeatInfo | null = null;
  /** Sampling done by this agent so far (SeatSpeed), and who is told after each call (`watchSpeed`). */
  #speed: SeatSpeed = { calls: 0, promptTokens: 0, newTokens: 0, ms: 0 };
  #onSpeed: ((s: SeatSpeed) => void) | null = null;
  /** A shipped model on the CPU: what `warmUp` builds its scratch copy from, while that agent is seated. */
  #warmFrom: { readonly spec: LmSpec; readonly loaded: LoadedModel; readonly agent: AnyAgent } | null = null;

  constructor(
    /** The budget of the recorded steps' inspections (HISTORY_BYTES; smaller in tests). */
    private readonly historyLimit = HISTORY_BYTES,
  ) {}

  /** Forgets every recorded step (a new agent, or a seat swapped for another model: their parameters no longer fit). */
  #clearHistory(why: string): void {
    for (const tag of this.#history.keys()) this.#dropped.set(tag, why);
    this.#history.clear();
    this.#historyBytes = 0;
  }

  /** Anything but an update moved the parameters: the kept update no longer describes π_new. */
  #forget(why: string): void {
    this.#kept = null;
    this.#notKept = why;
  }

  /**
   * Builds (or replaces) the agent. An "hf" or "onnx" folder's files cross once, transferred; the
   * loader runs here (src/model/hfLoad.ts, reporting to `onProgress`, a comlink proxy from the page)
   * and the seat is built as the CLI builds it (src/sat/hfSeat.ts, src/sat/onnxSeat.ts), on the
   * backend the spec asks for.
   */
  async init(spec: AgentSpec, onProgress?: (p: HfProgress) => void): Promise<void> {
    this.#forget('this agent has not been updated yet: step an agent first.');
    this.#clearHistory('the agent was built again since (a new team).');
    this.#dropped.clear();
    this.#speed = { calls: 0, promptTokens: 0, newTokens: 0, ms: 0 };
    await (this.#agent instanceof FrozenOnnxAgent ? this.#agent.dispose() : undefined);
    this.#onnx = null;
    this.#warmFrom = null;
    if (spec.kind === 'onnx') {
      // onnxruntime-web (and its wasm) is imported here, on first use only (src/model/onnx/ort.ts).
      const { seatOnnxFrozen, seatOnnxTrainable } = await import('../sat/onnxSeat');
      const pick = await pickOrtProvider();
      if (spec.mode === 'frozen') {
        const seat = await seatOnnxFrozen(spec.files, spec.file, spec.settings, spec.index, { ep: pick.ep, name: spec.name, temperature: spec.agent.temperature, topK: spec.agent.topK, memory: { limitBytes: spec.memory.limitBytes, where: spec.memory.where } });
        this.#agent = seat.agent;
        this.#modelBytes = seat.estimate.total;
        this.#backend = `onnxruntime-web ${pick.ep} (${pick.why})`;
        this.#onnx = { mode: 'frozen', file: spec.file, ep: pick.ep, epWhy: pick.why, estimateBytes: seat.estimate.total, context: seat.context };
        return;
      }
      // The check runs on wasm: it compares numbers, and wasm's are the reproducible ones.
      const seat = await seatOnnxTrainable(spec.files, spec.file, spec.settings, spec.index, { quant: spec.quant, maxSeq: spec.maxSeq ?? HF_SEAT_MAX_SEQ, memory: spec.memory, onProgress: (p) => void onProgress?.(p), ep: 'wasm' });
      this.#onnx = { mode: 'trainable', file: spec.file, ep: 'wasm', epWhy: 'the parity check runs on wasm', parity: seat.parity };
      await this.#seatModel(spec, seat.model);
      return;
    }
    if (spec.kind === 'hf') {
      const m = await loadHfCheckpoint(spec.files, { quant: spec.quant, maxSeq: spec.maxSeq ?? HF_SEAT_MAX_SEQ, memory: spec.memory, onProgress: (p) => void onProgress?.(p) });
      await this.#seatModel(spec, m);
    } else if (spec.kind === 'tabular') {
      this.#agent = tableAgent(spec);
      this.#modelBytes = 0;
    } else if (spec.kind === 'lm') {
      const loaded = loadModel(spec.model);
      this.#modelBytes = spec.model.byteLength;
      this.#agent = (spec.backend ?? 'cpu') === 'cpu' ? this.#cpuAgent(spec, loaded) : await this.#gpuAgent(spec, loaded);
      if (this.#gpu === null) this.#warmFrom = { spec, loaded, agent: this.#agent };
    } else {
      throw new AgentWorkerError(`agent worker: unknown agent kind ${JSON.stringify((spec as { kind?: unknown }).kind)}; expected "tabular", "lm", "hf" or "onnx".`);
    }
  }

  /** A loaded checkpoint (or a mapped ONNX model) as this worker's LoRA agent, on the backend the spec asks for. */
  async #seatModel(spec: HfAgentSpec | OnnxAgentSpec, m: HfModel): Promise<void> {
    this.#modelBytes = weightBytes(m.weights);
    const options = { ...spec.agent, name: spec.name };
    const gpu = spec.backend === undefined || spec.backend === 'cpu' ? { why: '' } : await this.#gpuBackend(spec.index, spec.backend);
    this.#backend = 'be' in gpu ? gpu.be.name : cpuLabel(gpu.why);
    this.#agent = 'be' in gpu ? hfSeatAgent<GpuTensors>(spec.index, m, options, gpu.be) : hfSeatAgent<HostTensors>(spec.index, m, options);
  }

  /** What an ONNX seat is (null for any other agent): file, mode, execution provider, parity or memory. */
  async onnxSeat(): Promise<OnnxSeatInfo | null> {
    return this.#onnx;
  }

  #cpuAgent(spec: LmSpec, loaded: LoadedModel, why?: string): LmAgent {
    this.#backend = cpuLabel(why ?? '');
    return lmAgent(spec, loaded);
  }

  /** The same agent over this worker's own GPUDevice (src/model/model.ts on webgpuBackend). */
  async #gpuAgent(spec: LmSpec, loaded: LoadedModel): Promise<AnyAgent> {
    const gpu = await this.#gpuBackend(spec.index, spec.backend === 'webgpu' ? 'webgpu' : 'auto');
    return 'be' in gpu ? lmAgent<GpuTensors>(spec, loaded, gpu.be) : this.#cpuAgent(spec, loaded, gpu.why);
  }

  /**
   * This worker's own GPUDevice as a backend, for backend = 'webgpu' or 'auto'; or why the agent
   * stays on the CPU ('auto' without a hardware adapter). 'webgpu' without a device is an error.
   */
  async #gpuBackend(index: number, backend: 'webgpu' | 'auto'): Promise<{ be: Backend<GpuTensors> } | { why: string }> {
    // 'auto' means the browser's WebGPU: a page (or worker) with navigator.gpu. Node has none, so
    // the CLI and Node tests stay on the CPU unless they ask for 'webgpu' (Dawn) explicitly.
    if (backend === 'auto' && (globalThis as { navigator?: { gpu?: unknown } }).navigator?.gpu === undefined) {
      return { why: 'this browser has no WebGPU (navigator.gpu)' };
    }
    let inUse = true; // false once this device is given back below: its loss is then expected
    // Node without a GPU driver: Chromium's SwiftShader, if installed (node.ts).
    const r = await acquireAnyDevice({
      onLost: ({ reason, message }) => {
        if (!inUse) return;
        this.#lost = new DeviceLostError(
          `Agent ${index}'s GPU device was lost (${reason}${message ? `: ${message}` : ''}); its weights and optimizer state are safe in the last snapshot.`,
        );
      },
    });
    if (!r.ok) {
      if (backend === 'webgpu') throw new AgentWorkerError(`agent ${index}: backend = webgpu was asked for, but ${r.reason}`);
      return { why: `no WebGPU: ${r.reason}` };
    }
    if (backend === 'auto' && isSoftwareAdapter(r.adapter)) {
      inUse = false;
      r.device.destroy();
      return { why: `the only WebGPU adapter is a software one (${r.description}), slower here than the CPU backend; set backend = webgpu to use it anyway` };
    }
    const ctx = new GpuContext(r.device);
    this.#gpu = { device: r.device, ctx };
    const be = webgpuBackend(ctx, r.description);
    this.#backend = be.name;
    return { be };
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

  /** Name, kind, trainable parameter count, and the backend it runs on. */
  async info(): Promise<AgentInfo> {
    return { ...(await this.#a.info()), backend: this.#backend };
  }

  /** The CPU kernels' threads in this worker (src/backend/cpu/threads.ts `cpuThreads`; loads the kernels). */
  async cpuThreads(): Promise<CpuThreads> {
    simdAvailable();
    return cpuThreads();
  }

  /**
   * Rough resident bytes: parameters, gradients (LM), optimizer moments and the reference copy,
   * plus the model file for an LM (its frozen base, or the weights copied into params) and what it
   * keeps for the token inspector (π_cur's K × V logits of its latest update, and the recorded
   * steps within HISTORY_BYTES; host memory).
   * Activation buffers, which grow with the batch, are not counted.
   */
  async memoryBytes(): Promise<number> {
    const a = this.#a;
    if (a instanceof TabularSoftmaxAgent) return 5 * a.nObs * a.nActions * Float64Array.BYTES_PER_ELEMENT;
    if (a instanceof FrozenOnnxAgent) return this.#modelBytes; // its estimate: files, onnxruntime's copy, cache, logits
    const kept = (this.#kept?.zCur.byteLength ?? 0) + this.#historyBytes;
    if (this.#gpu !== null) return this.#gpu.ctx.storageBytes + kept; // GPU buffers created
    return 5 * a.model.paramCount() * Float32Array.BYTES_PER_ELEMENT + this.#modelBytes + kept;
  }

  async distributions(steps: StepSet): Promise<Float64Array> {
    return this.#call((a) => a.distributions(steps));
  }

  async logProbs(steps: StepSet): Promise<Float64Array> {
    return this.#call((a) => a.logProbs(steps));
  }

  async setReference(): Promise<void> {
    return this.#call((a) => a.setReference());
  }

  async klToReference(steps: StepSet): Promise<Float64Array> {
    return this.#call((a) => a.klToReference(steps));
  }

  async trainStep(batch: AgentBatch, spec: ObjectiveSpec): Promise<TrainReport> {
    this.#forget('the agent took an optimizer step outside an update since.');
    return this.#call((a) => a.trainStep(batch, spec));
  }

  async surrogateGradient(batch: AgentBatch): Promise<Float64Array> {
    return this.#call((a) => a.surrogateGradient(batch));
  }

  async fisherVectorProduct(steps: StepSet, v: Float64Array): Promise<Float64Array> {
    return this.#call((a) => a.fisherVectorProduct(steps, v));
  }

  /**
   * The agent's whole update (src/sat/update.ts `updateAgent`): train epochs, monitor, retries,
   * geometry and the after-update measurements, in this worker, in one call. The plan's step
   * sets arrive in one message, so a set used twice in it (the batch and its after-update
   * log-probs) is one array here and the agent's caches hit without keys.
   */
  async update(plan: UpdatePlan): Promise<UpdateResult> {
    this.#forget('its latest update did not finish.');
    return this.#call(async (a) => {
      const r = await updateAgent(a, plan);
      if (!(a instanceof TabularSoftmaxAgent) && !(a instanceof FrozenOnnxAgent)) this.#kept = await keepForInspection(a, plan, r.rejected);
      return r;
    });
  }

  /**
   * Records the latest update as the caller's step `tag` (the page: "stage 3"), so it can be
   * inspected after the agent has moved on: π_cur's logits as kept at the update and the parameters
   * it left. Call it right after the update, before anything else moves the agent. Oldest steps
   * are dropped past the budget (HISTORY_BYTES). False: nothing to keep (a table, a frozen seat,
   * or the latest update is not kept).
   */
  async keep(tag: string): Promise<boolean> {
    const kept = this.#kept;
    const a = this.#agent;
    if (!kept || !a || a instanceof TabularSoftmaxAgent || a instanceof FrozenOnnxAgent) return false;
    const after = Float32Array.from((await this.#call((x) => x.snapshot())).params);
    const bytes = kept.zCur.byteLength + after.byteLength + kept.plan.batch.obs.byteLength * 4;
    const old = this.#history.get(tag);
    if (old) this.#historyBytes -= old.bytes;
    this.#history.delete(tag);
    this.#history.set(tag, { kept, after, bytes });
    this.#dropped.delete(tag);
    this.#historyBytes += bytes;
    while (this.#historyBytes > this.historyLimit && this.#history.size > 1) {
      const [first, step] = this.#history.entries().next().value!;
      this.#history.delete(first);
      this.#historyBytes -= step.bytes;
      const n = this.#history.size;
      this.#dropped.set(first, `its worker keeps the inspections of its latest updates within ${mib(this.historyLimit)} (${n} of them now, ${mib(step.bytes)} each here: the parameters after the update and π_cur's logits at the batch's states), and this one was dropped to make room. Reset and step to it again to inspect it.`);
    }
    return true;
  }

  /**
   * The token inspector's numbers (src/sat/inspect.ts `inspectKept`: π_cur as kept at the update,
   * π_new from the parameters after it, one forward pass), or why there are none. Without `tag`:
   * the latest update, while the parameters have not moved since (a restore, a swap). With `tag`:
   * a step recorded by `keep`, at any time — its parameters are put in for the forward pass and the
   * agent's own put back, so nothing about the agent changes. The first `maxEpisodes` episodes are
   * listed token by token.
   */
  async inspect(maxEpisodes?: number, tag?: string): Promise<InspectAnswer> {
    return this.#call(async (a) => {
      if (a instanceof TabularSoftmaxAgent) return { ok: false, reason: `agent ${a.index} is a table: the token inspector is for language agents.` };
      if (a instanceof FrozenOnnxAgent) return { ok: false, reason: `Nothing to inspect for agent ${a.index}: it is a frozen ONNX teammate: it is never updated.` };
      if (tag === undefined) {
        const kept = this.#kept;
        if (!kept) return { ok: false, reason: `Nothing to inspect for agent ${a.index}: ${this.#notKept}` };
        return { ok: true, inspection: await inspectKept(a, kept, maxEpisodes) };
      }
      const step = this.#history.get(tag);
      if (!step) return { ok: false, reason: `Nothing to inspect for agent ${a.index}'s update in ${tag}: ${this.#dropped.get(tag) ?? 'its worker never recorded it.'}` };
      if (step.kept === this.#kept) return { ok: true, inspection: await inspectKept(a, step.kept, maxEpisodes) };
      const now = await a.snapshot();
      await a.restore({ params: Float64Array.from(step.after), optim: now.optim });
      try {
        return { ok: true, inspection: await inspectKept(a, step.kept, maxEpisodes) };
      } finally {
        await a.restore(now);
      }
    });
  }

  /**
   * A plug-and-play swap of this language agent (src/sat/lmSwap.ts `seatSwap`), here beside its
   * parameters and on its backend: the incoming model `file` is projected and distilled on `steps`
   * (its token states from a rollout of the current team) and becomes this worker's agent — the
   * Stage-0 seat over the outgoing model, or the new model itself.
   */
  async swapIn(modelName: string, file: Uint8Array, steps: StepSet, o: SeatSwapOptions): Promise<SeatSwapReport> {
    const a = this.#lm('swapIn');
    if (a instanceof FrozenOnnxAgent) throw new AgentWorkerError(`agent ${a.index} is a frozen ONNX teammate: a plug-and-play swap does not replace it (put the seat back on a shipped model first).`);
    const old = a as LmSeat;
    return this.#call(async () => {
      this.#forget('its seat was swapped for another model since.');
      this.#clearHistory('its seat was swapped for another model since: the parameters kept for this step belong to the model it replaced.');
      const r = await seatSwap(old, modelName, loadModel(file), steps, o);
      this.#agent = r.seat;
      this.#modelBytes += file.byteLength;
      return r.report;
    });
  }

  /**
   * One update of a scratch copy of this agent on a made-up batch of `shape` (src/sat/warmUp.ts),
   * on one kernel thread, then the copy is dropped: this worker's code is compiled and its
   * kernels' memory grown before the first stage needs them. The agent is not touched. A shipped model on the CPU only (false:
   * nothing to warm — a table, a checkpoint or ONNX seat, a GPU agent, or a seat swapped since).
   */
  async warmUp(shape: WarmUpShape): Promise<boolean> {
    const w = this.#warmFrom;
    if (w === null || w.agent !== this.#a) return false;
    const scratch = lmAgent(w.spec, w.loaded);
    try {
      // One kernel thread: the other core compiles what the warm-up made hot, and the page stays responsive.
      await onOneThread(async () => {
        await warmUpUpdate(scratch, shape);
        await warmUpCalls(scratch, shape);
      });
    } finally {
      scratch.dispose();
    }
    return true;
  }

  /** κ at the current parameters (update.ts `agentGeometry`), for the greedy order; one call. */
  async kappa(batch: AgentBatch, rawAdv: Float64Array, iters: number): Promise<number> {
    return this.#call(async (a) => (await agentGeometry(a, batch, rawAdv, iters)).kappa);
  }

  async snapshot(): Promise<AgentSnapshot> {
    return this.#call(async (a) => {
      const s = await a.snapshot();
      if (this.#kept) {
        if (this.#keptAt.size >= KEPT_AT_MAX) this.#keptAt.delete(this.#keptAt.keys().next().value!);
        this.#keptAt.set(snapshotPrint(s), this.#kept);
      }
      return s;
    });
  }

  async restore(s: AgentSnapshot): Promise<void> {
    const back = this.#keptAt.get(snapshotPrint(s)) ?? null;
    this.#forget('its parameters were restored from a snapshot since (a restore or a recovery); step it again to inspect.');
    await this.#call((a) => a.restore(s));
    if (back) this.#kept = back; // the very parameters the kept update was inspected at
  }

  async interpolate(from: AgentSnapshot, f: number): Promise<void> {
    this.#forget('its parameters were moved (interpolated) since.');
    return this.#call((a) => a.interpolate(from, f));
  }

  async generate(contexts: readonly Int32Array[], opts: GenerateOptions): Promise<{ tokens: Int32Array[]; stopped: boolean[] }> {
    const a = this.#lm('generate');
    return this.#timed(contexts, () => this.#call(() => a.generate(contexts, opts)));
  }

  /** Runs one sampling call and adds it to this agent's SeatSpeed, then tells the watcher. */
  async #timed<T extends { tokens: Int32Array[] }>(contexts: readonly ArrayLike<unknown>[] | null, f: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    const r = await f();
    const ms = performance.now() - t0;
    const read = (contexts ?? (r as unknown as { contexts: Int32Array[] }).contexts).reduce((n, c) => n + c.length, 0);
    const s = this.#speed;
    this.#speed = { calls: s.calls + 1, promptTokens: s.promptTokens + read, newTokens: s.newTokens + r.tokens.reduce((n, t) => n + t.length, 0), ms: s.ms + ms };
    // A proxy whose page went away rejects: the speed is kept here all the same.
    if (this.#onSpeed) void Promise.resolve(this.#onSpeed(this.#speed)).catch(() => {});
    return r;
  }

  /** The sampling this agent has done since it was built (SeatSpeed). */
  async speed(): Promise<SeatSpeed> {
    return this.#speed;
  }

  /** `cb` is told this agent's SeatSpeed after every sampling call (the page passes a comlink proxy; a message, not a call it waits for). */
  async watchSpeed(cb: (s: SeatSpeed) => void): Promise<void> {
    this.#onSpeed = cb;
  }

  /**
   * Messages after text contexts (src/sat/env/lm.ts `TextSpeaker`): encoded, written and decoded
   * here with this agent's own tokenizer, so the page's thread never builds a checkpoint's.
   */
  async speak(contexts: readonly string[], opts: GenerateOptions): Promise<Spoken> {
    const a = this.#lm('speak');
    return this.#timed(null, () => this.#call(() => speakHere(a, contexts, opts)));
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
