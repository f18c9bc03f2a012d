/**
 * The public option and result types of the model (src/model/model.ts), kept apart so callers
 * (workers, the RL loop, the CLI) can import them without the class.
 *
 * Not here: any behaviour.
 */
import type { LoraConfig } from './lora';

/** Which parameters train. */
export type Trainable = 'full' | 'lora' | 'none';

/** How a model is built (the backend and its float precision are the constructor's first argument). */
export interface ModelOptions {
  /** 'full': all weights (f32 only); 'lora': adapters over a frozen base; 'none': inference. */
  readonly trainable: Trainable;
  /** Required for (and only for) trainable 'lora'. */
  readonly lora?: LoraConfig;
  /** Seed of the LoRA A init (initLora with Rng(seed)). Default 0. */
  readonly seed?: number;
  /**
   * How Q8/Q4 matrices take their input: 'exact' (default) — f32 activations, the same numbers as
   * the dequantized f32 model; 'int8' — activations quantized per block of 32 and multiplied with
   * integer dot products (faster, not the same numbers: docs/kernels.md "int8 activations"). Every
   * forward of the model (sampling, log-probs, training) uses the same choice, so the policy is one
   * function; the input gradient treats the activation rounding as the identity.
   */
  readonly activations?: 'exact' | 'int8';
  /**
   * The frozen weights' arrays were made by this backend (its `zeros`, e.g. a loader writing
   * straight into the CPU kernels' memory): the model uses them as its tensors without a copy and
   * releases them on `dispose`, so the caller must not use them after. On a backend whose tensors
   * are not host arrays (no `hostView`: WebGPU) they are uploaded as usual. Default false.
   */
  readonly adopt?: boolean;
}

/** One named slice of the flat parameter array. */
export interface ParamSlot {
  /** A weight name ('full') or "<weight>.lora_a" / "<weight>.lora_b" ('lora'). */
  readonly name: string;
  readonly offset: number;
  readonly size: number;
  readonly shape: readonly number[];
}

export interface GenerateOptions {
  /** Most tokens to generate per prompt (the stop token included in the count). */
  readonly maxNew: number;
  /** τ ≥ 0; 0 is greedy (argmax). */
  readonly temperature: number;
  /** Keep the k largest logits; ≤ 0 keeps all. */
  readonly topK: number;
  /** Philox key word 0 (u32). */
  readonly seed: number;
  /** Philox key word 1 (u32), e.g. mixPath([stage, agent]). */
  readonly stream: number;
  /** Token that ends a sequence (EOS); it is not returned in `tokens`. */
  readonly stop: number;
  /** Total length cap (prompt + generated), ≤ cfg.maxSeq (the default). */
  readonly maxSeq?: number;
  /** Sequence id of prompt 0 for the sampler; prompt i uses seq0 + i. Default 0. */
  readonly seq0?: number;
  /** Also return the logits row used for every sampled token. Default false. */
  readonly returnLogits?: boolean;
}

/** What `generate` returns: tokens and stops always; log-probs and logits with `returnLogits`. */
export interface GenerateResult {
  /** Per prompt: the generated tokens, without the stop token. */
  readonly tokens: Int32Array[];
  /** Per prompt: whether it ended by sampling `stop`. */
  readonly stopped: boolean[];
  /** With returnLogits, per prompt: log π(token) = log_softmax(z/τ)[token] over the full vocabulary (τ = 1 when τ = 0). */
  readonly logp?: Float32Array[];
  /** With returnLogits, per prompt: log π(stop) when stopped, else NaN (the stop token is a sampled action too). */
  readonly stopLogp?: Float32Array;
  /** With returnLogits, per prompt: [k × V], the logits of each sampled token (stop included). */
  readonly logits?: Float32Array[];
}

/** Options of the next-token training helper. */
export interface TrainOptions {
  readonly lr: number;
  /** Decoupled AdamW weight decay λ. Default 0. */
  readonly weightDecay?: number;
  /** Clip the global gradient L2 norm to this (≤ 0 or absent: no clipping). */
  readonly maxGradNorm?: number;
}
