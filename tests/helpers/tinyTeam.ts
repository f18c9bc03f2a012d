/**
 * A team of tiny random language models on the enumerable task (src/tasks/llm/tiny.ts): vocabulary
 * 5, one layer, d = 8, each agent its own weights; the environment computes J exactly
 * (ExactLmEnv). For the language certificate's tests (tests/certificate-lm*.test.ts). `stages`
 * runs SAT stages with the real stage loop, J exact at every stage end.
 *
 * Not here: the shipped models or the page's workers.
 */
import { cpuBackend } from '../../src/backend/cpu';
import { Rng } from '../../src/core/rng';
import { modelConfig } from '../../src/model/config';
import { Model } from '../../src/model/model';
import { initWeights } from '../../src/model/weights';
import { LmAgent } from '../../src/sat/agents/lm';
import type { Config } from '../../src/sat/config';
import { ExactLmEnv } from '../../src/sat/env/lm';
import type { TeamEvaluation } from '../../src/sat/env/types';
import { runStage, type StageRecord } from '../../src/sat/stage';
import { TINY_PROBLEMS, TINY_VOCAB, tinyTask, tinyTokenizer } from '../../src/tasks/llm/tiny';

export const tinyLmCfg = modelConfig({ vocab: TINY_VOCAB, d: 8, layers: 1, heads: 1, hidden: 16, maxSeq: 32 });

export interface TinyTeamOptions {
  readonly agents: number;
  readonly maxNew: number;
  readonly temperature: number;
  readonly topK: number;
  /** Weights seed. */
  readonly seed: number;
  /** Score the full softmax (the negative control), not the sampler's distribution. */
  readonly fullSoftmaxScores?: boolean;
  /** Multiplies the embeddings (sd 0.02 from initWeights); default 10. Larger: more peaked policies. */
  readonly embeddingScale?: number;
}

export function tinyTeam(o: TinyTeamOptions): { env: ExactLmEnv; team: LmAgent[] } {
  const env = new ExactLmEnv(tinyTask, 'chain', o.agents, { maxNew: o.maxNew, evalEpisodes: 8, evalSeed: 1 }, TINY_PROBLEMS);
  const team = Array.from({ length: o.agents }, (_, i) => {
    const w = initWeights(tinyLmCfg, new Rng(o.seed, [i]));
    // initWeights keeps the first logits near uniform (embeddings of sd 0.02); sd 0.2 gives policies
    // with clear favourites, whose top-k sets mean something.
    const scale = o.embeddingScale ?? 10;
    for (const x of ['tok_emb', 'lm_head']) {
      const t = w.get(x);
      if (t && t.dtype === 'f32') for (let k = 0; k < t.data.length; k++) t.data[k]! *= scale;
    }
    const model = new Model(cpuBackend, tinyLmCfg, w, { trainable: 'full' });
    return new LmAgent(i, model, { temperature: o.temperature, topK: o.topK, tokenizer: tinyTokenizer, fullSoftmaxScores: o.fullSoftmaxScores ?? false });
  });
  return { env, team };
}

/**
 * `count` SAT stages of the tiny team under `cfg` (its seed fixes the run), J exact. `onCertLook`
 * sees the units of every look of each stage's sequential certificate.
 */
export async function tinyStages(env: ExactLmEnv, team: LmAgent[], cfg: Config, count: number, onCertLook?: (stage: number, x: Float64Array, range: readonly [number, number], scale: number | undefined) => void): Promise<StageRecord[]> {
  const rng = new Rng(cfg.seed);
  const betas = team.map(() => cfg.beta);
  const out: StageRecord[] = [];
  let startEval: TeamEvaluation = await env.evaluate(team);
  // The run's certification budget carries from stage to stage, as in experiment.ts.
  let certCredit = 0;
  for (let stage = 1; stage <= count; stage++) {
    const gen = runStage({ env, cfg, team, rng, betas, stage, aMax: 1, startEval, certCredit, ...(onCertLook ? { onCertLook: (x: Float64Array, range: readonly [number, number], scale: number | undefined) => onCertLook(stage, x, range, scale) } : {}) });
    let r = await gen.next();
    while (!r.done) r = await gen.next();
    out.push(r.value);
    startEval = r.value.evaluation;
    certCredit = r.value.metrics['cert/credit'] as number;
  }
  return out;
}
