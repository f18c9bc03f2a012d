/**
 * A Hugging Face checkpoint as one seat of a language team: the LmAgent with LoRA adapters over
 * the frozen (quantized) base, prompted with the checkpoint's own tokenizer, shared by the CLI
 * (src/cli/hfSeat.ts, `--agent-model J=DIR`) and the page (an `hf` agent spec built in the seat's
 * worker, src/workers/agentApi.ts), so a folder seated either way is the same agent. A context
 * longer than its maxSeq is refused naming both.
 *
 * Not here: the model-free checks (context, budget, swap refusal, seed: hfSeatLimits.ts, re-exported
 * below), reading a folder (src/app/hfFiles.ts), the load and its checks (src/model/hfLoad.ts).
 */
import { cpuBackend } from '../backend/cpu';
import type { Backend, HostTensors, TensorKinds } from '../backend/types';
import { ConfigError } from '../core/errors';
import type { HfModel } from '../model/hfLoad';
import { Model } from '../model/model';
import { LmAgent, type GenerateOptions } from './agents/lm';

export { HF_DEFAULT_LORA_RANK, HF_SEAT_MAX_CONTEXT, HF_SEAT_MAX_SEQ, hfSeatBudget, hfSeatContext, hfSeatSeed, hfSwapRefusal, type HfContextSettings, type HfSeatBudget } from './hfSeatLimits';

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
  /** How the frozen base takes its input (the activations setting; default exact). */
  readonly activations?: 'exact' | 'int8';
  /** The checkpoint's weights were loaded into this backend's memory (hfLoad.ts `into`): the model takes them without a copy, and they are its alone (Model option `adopt`). */
  readonly adopt?: boolean;
}

/** An LmAgent on a checkpoint: a context its model cannot hold is refused naming the seat, the length and the limit. */
class HfSeatAgent<X extends TensorKinds> extends LmAgent<X> {
  override generate(contexts: readonly Int32Array[], opts: GenerateOptions): Promise<{ tokens: Int32Array[]; stopped: boolean[] }> {
    const maxSeq = this.model.cfg.maxSeq;
    const longest = contexts.reduce((n, c) => Math.max(n, c.length), 0);
    if (longest >= maxSeq) {
      return Promise.reject(new ConfigError(
        'context',
        longest,
        `${this.name}: a context of ${longest} tokens (the prompt and earlier messages as its tokenizer encodes them) leaves no room for a message in the seat's context of ${maxSeq} tokens (measured for the preset when it was seated: hfSeatContext); lower maxNew or the agents in the chain.`,
      ));
    }
    return super.generate(contexts, opts);
  }
}

/** Agent j over a loaded checkpoint: LoRA adapters over its frozen base, its own tokenizer. */
export function hfSeatAgent<X extends TensorKinds = HostTensors>(j: number, m: HfModel, o: HfSeatAgentOptions, be: Backend<X> = cpuBackend as unknown as Backend<X>): LmAgent<X> {
  const model = new Model(be, m.cfg, m.weights, { trainable: 'lora', lora: { rank: o.loraRank, alpha: o.loraAlpha }, seed: o.seed, activations: o.activations, adopt: o.adopt });
  return new HfSeatAgent(j, model, { name: `${o.name ?? m.name}#${j}`, temperature: o.temperature, topK: o.topK, tokenizer: m.tokenizer });
}
