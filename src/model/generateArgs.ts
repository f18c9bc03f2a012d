/**
 * The checks every `generate` makes on its arguments before sampling a token, kept apart from the
 * model (src/model/model.ts) so the Stage-0 sampler (src/sat/agents/projected.ts) refuses the same
 * inputs with the same messages: maxSeq within the model's, maxNew ≥ 0, τ ≥ 0, integer top-k, u32 Philox
 * key and sequence ids, prompts non-empty, within maxSeq, tokens inside the vocabulary.
 *
 * Not here: sampling itself (each model's generate) or the Philox counter layout (sampling.ts).
 */
import { ConfigError } from '../core/errors';
import type { ModelConfig } from './config';
import type { GenerateOptions } from './types';

function checkU32(what: string, x: number): void {
  if (!Number.isInteger(x) || x < 0 || x > 0xffffffff) throw new ConfigError(what, x, `generate: "${what}" must be an integer in [0, 4294967295], got ${x}.`);
}

/** What the checks derive: the length cap, prompt 0's sequence id, the longest prompt and the total prompt tokens. */
export interface GenerateArgs {
  readonly maxSeq: number;
  readonly seq0: number;
  readonly longest: number;
  readonly total: number;
}

/** Throws ConfigError naming the first bad argument; returns the derived values otherwise. */
export function checkGenerateArgs(cfg: ModelConfig, prompts: readonly Int32Array[], opts: GenerateOptions): GenerateArgs {
  const V = cfg.vocab;
  const S = prompts.length;
  const maxSeq = opts.maxSeq ?? cfg.maxSeq;
  if (!Number.isInteger(maxSeq) || maxSeq < 1 || maxSeq > cfg.maxSeq) throw new ConfigError('maxSeq', maxSeq, `generate: maxSeq must be an integer in [1, ${cfg.maxSeq}] (the model's), got ${maxSeq}.`);
  if (!Number.isInteger(opts.maxNew) || opts.maxNew < 0) throw new ConfigError('maxNew', opts.maxNew, `generate: maxNew must be an integer ≥ 0, got ${opts.maxNew}.`);
  const tau = opts.temperature;
  if (!(tau >= 0) || !Number.isFinite(tau)) throw new ConfigError('temperature', tau, `generate: temperature must be a finite number ≥ 0, got ${tau}.`);
  if (!Number.isInteger(opts.topK)) throw new ConfigError('topK', opts.topK, `generate: topK must be an integer (≤ 0 keeps all), got ${opts.topK}.`);
  checkU32('seed', opts.seed);
  checkU32('stream', opts.stream);
  const seq0 = opts.seq0 ?? 0;
  checkU32('seq0 + prompts − 1', seq0 + Math.max(0, S - 1));
  let total = 0;
  let longest = 0;
  prompts.forEach((p, i) => {
    if (p.length < 1) throw new ConfigError('prompts', i, `generate: prompt ${i} is empty; start it with BOS.`);
    if (p.length > maxSeq) throw new ConfigError('prompts', i, `generate: prompt ${i} has ${p.length} tokens, more than maxSeq = ${maxSeq}.`);
    for (let j = 0; j < p.length; j++) {
      if (!(p[j]! >= 0 && p[j]! < V)) throw new ConfigError('prompts', i, `generate: prompt ${i} token ${j} is ${p[j]}, outside [0, ${V}).`);
    }
    total += p.length;
    longest = Math.max(longest, p.length);
  });
  return { maxSeq, seq0, longest, total };
}
