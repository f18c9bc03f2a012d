/**
 * A Hugging Face checkpoint as one seat of a language team: the pieces the CLI
 * (src/cli/hfSeat.ts, `--agent-model J=DIR`) and the page (src/workers/agentApi.ts, an `hf` agent
 * spec built in the seat's worker) share, so a folder seated either way is the same agent:
 *
 *   hfSeatBudget(cfg)      what the memory estimate counts (hfConfig.ts estimateMemory): LoRA rank,
 *                          one training pass over batch × group messages of HF_SEAT_MAX_SEQ tokens,
 *                          sampling max(batch × group, evalEpisodes) prompts at once
 *   hfSeatSeed(seed, j)    the seed of agent j's LoRA initialisation
 *   hfSeatAgent(j, m, …)   the LmAgent: LoRA adapters over the frozen (quantized) base, prompted
 *                          with the checkpoint's own tokenizer
 *
 * Not here: reading a folder (the CLI's fs reads, the page's File objects: src/app/hfFiles.ts),
 * the load and its checks (src/model/hfLoad.ts), or where the agent runs.
 */
import { cpuBackend } from '../backend/cpu';
import type { Backend, HostTensors, TensorKinds } from '../backend/types';
import { Rng } from '../core/rng';
import type { HfModel } from '../model/hfLoad';
import { Model } from '../model/model';
import { LmAgent } from './agents/lm';
import type { Config } from './config';

/** LoRA rank of a seated checkpoint when the `lora` setting is 0 (full training of a 100M model is not offered). */
export const HF_DEFAULT_LORA_RANK = 8;

/** Context of a seated checkpoint (positions): our tasks' turns, chat template included, fit well within it. */
export const HF_SEAT_MAX_SEQ = 128;

/** What the memory estimate of a seated checkpoint counts, for these settings. */
export interface HfSeatBudget {
  readonly loraRank: number;
  readonly sequences: number;
  readonly seqLen: number;
  readonly prompts: number;
}

export function hfSeatBudget(cfg: Pick<Config, 'lora' | 'batch' | 'group' | 'evalEpisodes'>): HfSeatBudget {
  // One training pass packs the agent's batch × group messages, each at most HF_SEAT_MAX_SEQ tokens.
  // Sampling: a rollout's batch × group prompts, or an evaluation's evalEpisodes, at once.
  return { loraRank: cfg.lora > 0 ? cfg.lora : HF_DEFAULT_LORA_RANK, sequences: cfg.batch * cfg.group, seqLen: HF_SEAT_MAX_SEQ, prompts: Math.max(cfg.batch * cfg.group, cfg.evalEpisodes) };
}

/** Seed of agent j's LoRA initialisation on a seated checkpoint (the run seed's fork "hf", j). */
export function hfSeatSeed(runSeed: number, j: number): number {
  return new Rng(runSeed, [0x6866, j]).nextU32();
}

/** What the agent on a seated checkpoint takes from the settings. */
export interface HfSeatAgentOptions {
  readonly loraRank: number;
  readonly loraAlpha: number;
  /** hfSeatSeed(run seed, j). */
  readonly seed: number;
  readonly temperature: number;
  readonly topK: number;
  /** Shown for the agent; "<name>#j" (default: the checkpoint's own name). */
  readonly name?: string;
}

/** Agent j over a loaded checkpoint: LoRA adapters over its frozen base, its own tokenizer. */
export function hfSeatAgent<X extends TensorKinds = HostTensors>(j: number, m: HfModel, o: HfSeatAgentOptions, be: Backend<X> = cpuBackend as unknown as Backend<X>): LmAgent<X> {
  const model = new Model(be, m.cfg, m.weights, { trainable: 'lora', lora: { rank: o.loraRank, alpha: o.loraAlpha }, seed: o.seed });
  return new LmAgent(j, model, { name: `${o.name ?? m.name}#${j}`, temperature: o.temperature, topK: o.topK, tokenizer: m.tokenizer });
}
