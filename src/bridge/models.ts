/**
 * Which real checkpoints stand for the zoo's sizes in an export: the Hugging Face ids that the
 * sizes S / M / L become (`ModelMap`), with small Llama-family defaults a user should replace.
 *
 * Not here: the playground's own shipped models (src/model, public/models).
 */
import { ConfigError } from '../core/errors';
import type { Config } from '../sat/config';

/** The zoo's sizes → Hugging Face model ids for the real run. */
export type ModelMap = Readonly<Record<'S' | 'M' | 'L', string>>;

/** Small Llama-family checkpoints by size: placeholders the user should choose for their task. */
export const DEFAULT_MODELS: ModelMap = {
  S: 'HuggingFaceTB/SmolLM2-135M-Instruct',
  M: 'HuggingFaceTB/SmolLM2-360M-Instruct',
  L: 'HuggingFaceTB/SmolLM2-1.7B-Instruct',
};

/** The zoo size agent `i` starts from. */
export function sizeOf(cfg: Config, i: number): 'S' | 'M' | 'L' {
  return (cfg.agentModels.length > 0 ? cfg.agentModels[i]! : cfg.model) as 'S' | 'M' | 'L';
}

/** The Hugging Face id of a zoo size, or a ConfigError naming the missing size. */
export function hfId(models: ModelMap, size: string): string {
  const id = (models as Record<string, string>)[size];
  if (!id) throw new ConfigError('model', size, `No Hugging Face id for the zoo size "${size}"; give one (S, M and L each need an id).`);
  return id;
}

/** Each agent's Hugging Face id, in agent order. */
export function teamIds(cfg: Config, models: ModelMap): string[] {
  return Array.from({ length: cfg.agents }, (_, i) => hfId(models, sizeOf(cfg, i)));
}
