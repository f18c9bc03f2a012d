/**
 * A language team in one process: every agent on its shipped model (`lmAgent`), on the CPU kernels
 * or one WebGPU device each — the CLI's and the tests' way to run a language experiment. The page
 * runs the same plan (experiment.ts `planLlm`) with each agent in its worker (src/workers/remoteTeam.ts),
 * so this module, with the model code it pulls in, stays out of the page's first load.
 *
 * Not here: the stage loop and the tabular team (experiment.ts).
 */
import { cpuBackend } from '../backend/cpu';
import type { Backend, HostTensors, TensorKinds } from '../backend/types';
import type { GpuTensors } from '../backend/webgpu/backend';
import { Rng } from '../core/rng';
import { Model } from '../model/model';
import { dequantizeWeights, loadModel, type LoadedModel, type ModelWeights } from '../model/weights';
import { LmAgent } from './agents/lm';
import type { Config } from './config';
import { planLlm, type LlmExperiment, type LmInit, type LmSeat, type ModelLoader } from './experiment';
import { configuredLmSwap } from './lmSwap';

/**
 * The agent an `LmInit` describes, over a loaded model, on a backend (the CPU kernels unless
 * given). `full` (lora = 0 only) is the dequantized weights; pass one copy to every agent of a
 * team (each uploads its own parameters from it).
 */
export function lmAgent<X extends TensorKinds = HostTensors>(init: LmInit, loaded: LoadedModel, be: Backend<X> = cpuBackend as unknown as Backend<X>, full?: ModelWeights): LmAgent<X> {
  const model = init.lora === 0
    ? new Model(be, loaded.cfg, full ?? dequantizeWeights(loaded.weights), { trainable: 'full' })
    : new Model(be, loaded.cfg, loaded.weights, { trainable: 'lora', lora: { rank: init.lora, alpha: init.loraAlpha }, seed: init.seed, activations: init.activations });
  return new LmAgent(init.index, model, { name: init.name, temperature: init.temperature, topK: init.topK });
}

/** Where a language team's agents run in-process (the page's workers choose their own: src/workers/agentApi.ts). */
export interface LlmBackends {
  /**
   * Agent `index`'s WebGPU backend, asked once per agent in index order — one device each, as in
   * the page (the CLI's backend = webgpu, src/cli/sat.ts). Without it every agent is on the CPU.
   */
  readonly backendOf?: (index: number) => Promise<Backend<GpuTensors>>;
}

/**
 * A language team: every agent starts from its shipped model `<task>-<size>` (`model`, or its own
 * entry of `agentModels`; full weights when lora = 0, else a LoRA adapter over the frozen quantized
 * base), on the task's train split; J is estimated on held-out problems.
 */
export async function createLlmExperiment(cfg: Config, load: ModelLoader, opts: LlmBackends = {}): Promise<LlmExperiment> {
  const { modelName, env, aMax, agents } = planLlm(cfg);
  // Each distinct model file is loaded (and dequantized) once, whatever the number of agents on it.
  const files = new Map<string, { loaded: LoadedModel; full?: ModelWeights }>();
  for (const f of new Set(agents.map((a) => a.modelFile))) {
    const loaded = loadModel(await load(f));
    files.set(f, { loaded, full: cfg.lora === 0 ? dequantizeWeights(loaded.weights) : undefined });
  }
  const team: LmSeat[] = [];
  for (const init of agents) {
    const m = files.get(init.modelFile)!;
    team.push(opts.backendOf ? lmAgent(init, m.loaded, await opts.backendOf(init.index), m.full) : lmAgent(init, m.loaded, cpuBackend, m.full));
  }
  const j0 = (await env.evaluate(team)).J;
  return { cfg, env, team, rng: new Rng(cfg.seed), betas: team.map(() => cfg.beta), aMax, j0, stagesDone: 0, modelName, swapModel: configuredLmSwap(load) };
}
