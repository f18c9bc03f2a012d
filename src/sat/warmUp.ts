/**
 * A language agent's warm-up: one whole update (update.ts `updateAgent`) of a scratch copy of the
 * agent on a made-up batch of a stage's shape, so a fresh worker compiles the update's code and
 * grows the kernels' memory before the first click rather than during the first stage
 * (docs/performance.md, "The page's language stage"). The copy is the caller's and is dropped
 * after: the agent, its optimizer, its caches and every result later are untouched.
 *
 * Not here: building the copy and deciding when to run (src/workers/agentApi.ts `warmUp`, started
 * by the page once a team is built: src/app/team.ts).
 */
import { certEpisodesOf, type Config } from './config';
import type { LmAgent, LmSteps } from './agents/lm';
import type { AgentBatch } from './types';
import { updateAgent, updateSettings, type UpdatePlan, type UpdateSettings } from './update';

/** A stage's shape as one agent's update sees it (plain data: it crosses to a worker). */
export interface WarmUpShape {
  /** Episodes in the agent's training batch: batch × group. */
  readonly episodes: number;
  /** Episodes of a certification batch, whose log-probs the update returns too (the larger batch). */
  readonly certEpisodes: number;
  /** Tokens before a message: a prompt and, in a chain, the other agents' messages (a stage's sequences are whole episodes). */
  readonly contextTokens: number;
  /** Most tokens per message. */
  readonly maxNew: number;
  readonly delta: number;
  readonly beta: number;
  readonly settings: UpdateSettings;
}

/** The shape of `cfg`'s stages, roughly: an arithmetic or countdown prompt, then every message. At most one retry: enough to run that path once. */
export function warmUpShape(cfg: Config): WarmUpShape {
  const before = cfg.protocol === 'chain' ? cfg.agents - 1 : 0;
  return {
    episodes: cfg.batch * cfg.group,
    certEpisodes: certEpisodesOf(cfg),
    contextTokens: 8 + before * (cfg.maxNew + 2),
    maxNew: cfg.maxNew,
    delta: cfg.delta,
    beta: cfg.beta,
    settings: { ...updateSettings(cfg), maxBacktracks: Math.min(1, cfg.maxBacktracks) },
  };
}

/**
 * Runs one update of `scratch` (a copy the caller drops afterwards) on `shape`'s batch: contexts of
 * filler tokens, the copy's own sampled messages, alternating advantages; messages are sampled and
 * log-probs returned for a certification batch's worth of episodes too, the largest calls of a
 * stage. What it learns is noise and is thrown away with the copy.
 */
export async function warmUpUpdate(scratch: LmAgent, shape: WarmUpShape): Promise<void> {
  const V = scratch.model.cfg.vocab;
  const eos = scratch.tokenizer.eos;
  const room = scratch.model.cfg.maxSeq - shape.maxNew - 1;
  const n = Math.max(1, Math.min(shape.contextTokens, room));
  // Filler ids in [4, V): past the char tokenizer's pad, bos, eos and separator, never eos.
  const filler = (e: number, i: number): number => {
    const t = 4 + ((e * 7 + i * 3) % Math.max(1, V - 4));
    return t === eos ? 4 : t;
  };
  const all = Math.max(shape.episodes, shape.certEpisodes);
  const contexts = Array.from({ length: all }, (_, e) => Int32Array.from({ length: n }, (_, i) => filler(e, i)));
  const { tokens } = await scratch.generate(contexts, { maxNew: shape.maxNew, seed: 1, stream: 0 });
  const seqs: Int32Array[] = [];
  const stepSeq: number[] = [];
  const stepPos: number[] = [];
  const episodeOf: number[] = [];
  contexts.forEach((c, e) => {
    const msg = tokens[e]!.subarray(0, shape.maxNew - 1);
    const seq = new Int32Array(c.length + msg.length + 1);
    seq.set(c);
    seq.set(msg, c.length);
    seq[seq.length - 1] = eos;
    for (let p = c.length; p < seq.length; p++) {
      stepSeq.push(e);
      stepPos.push(p);
      episodeOf.push(e);
    }
    seqs.push(seq);
  });
  const context: LmSteps = { seqs, stepSeq: Int32Array.from(stepSeq), stepPos: Int32Array.from(stepPos) };
  const actions = Int32Array.from(stepSeq, (e, k) => seqs[e]![stepPos[k]!]!);
  const inBatch = episodeOf.findIndex((e) => e >= shape.episodes);
  const k = inBatch < 0 ? stepSeq.length : inBatch;
  const batch: AgentBatch = {
    obs: Int32Array.from({ length: k }, (_, i) => i),
    actions: actions.subarray(0, k),
    context,
    nEpisodes: shape.episodes,
    episodeOf: Int32Array.from(episodeOf.slice(0, k)),
    adv: Float64Array.from({ length: shape.episodes }, (_, e) => (e % 2 === 0 ? 1 : -1)),
    weight: new Float64Array(shape.episodes).fill(1),
    horizon: shape.maxNew,
  };
  await scratch.setReference();
  const plan: UpdatePlan = {
    batch,
    rawAdv: Float64Array.from(batch.adv, (a) => a / 2),
    delta: shape.delta,
    beta: shape.beta,
    settings: shape.settings,
    after: { logProbs: [batch, { obs: Int32Array.from(stepSeq, (_, i) => i), actions, context }] },
  };
  await updateAgent(scratch, plan);
}
