/**
 * An independent statement of the token inspector's numbers (docs/method.md §9b.1), for
 * tests/inspect.test.ts and tests/e2e/inspector.test.ts: from a model's forward pass over each of
 * the batch's sequences alone (unpadded, one at a time — not the agent's packed batch) at given
 * parameters, the log-softmax at τ written out in f64, then per step the two log-probs of the token,
 * its ratio and the exact KL(π_new ‖ π_cur) over the vocabulary (§5.4), per episode u_e, and the
 * clip decision in the words of §5.3. No code shared with src/sat/inspect.ts.
 *
 * Not here: running an update (the tests do), or anything of the page.
 */
import type { Model } from '../../src/model/model';
import type { LmSteps } from '../../src/sat/agents/lm';
import type { AgentBatch } from '../../src/sat/types';

/** log_softmax(z/τ) of one row of logits, in f64. */
function logSoftmaxRow(z: Float32Array, off: number, V: number, tau: number): number[] {
  const x = Array.from({ length: V }, (_, b) => z[off + b]! / tau);
  const m = Math.max(...x);
  const lse = m + Math.log(x.reduce((s, v) => s + Math.exp(v - m), 0));
  return x.map((v) => v - lse);
}

/** Per step k of the batch: log π(·|s_k) at τ under `params`, one sequence per forward pass. */
export function logPolicyRows(model: Model, params: ArrayLike<number>, batch: AgentBatch, tau: number): number[][] {
  model.setParams(params);
  const ctx = batch.context as LmSteps;
  const V = model.cfg.vocab;
  const bySeq = new Map<number, Float32Array>();
  return Array.from(batch.obs, (o) => {
    const sq = ctx.stepSeq[o]!;
    if (!bySeq.has(sq)) {
      const seq = ctx.seqs[sq]!;
      bySeq.set(sq, model.forward(seq, 1, seq.length) as Float32Array);
    }
    return logSoftmaxRow(bySeq.get(sq)!, (ctx.stepPos[o]! - 1) * V, V, tau);
  });
}

export interface RefToken {
  readonly logpNew: number;
  readonly logpCur: number;
  readonly ratio: number;
  readonly kl: number;
  /** π_cur(·|s) and π_new(·|s). */
  readonly pCur: number[];
  readonly pNew: number[];
}

/** The per-step numbers and each episode's log-ratio u_e, from the rows before and after. */
export function referenceNumbers(batch: AgentBatch, cur: number[][], nw: number[][]): { tokens: RefToken[]; u: Float64Array } {
  const u = new Float64Array(batch.nEpisodes);
  const tokens = Array.from(batch.actions, (a, k) => {
    const lc = cur[k]!;
    const ln = nw[k]!;
    let kl = 0;
    for (let b = 0; b < ln.length; b++) kl += Math.exp(ln[b]!) * (ln[b]! - lc[b]!);
    u[batch.episodeOf[k]!]! += ln[a]! - lc[a]!;
    return { logpNew: ln[a]!, logpCur: lc[a]!, ratio: Math.exp(ln[a]! - lc[a]!), kl: Math.max(0, kl), pCur: lc.map(Math.exp), pNew: ln.map(Math.exp) };
  });
  return { tokens, u };
}

/** §5.3 in words: the clipped branch is active when Ã > 0 and r > 1+ε_high, or Ã < 0 and r < 1−ε_low. */
export function clippedByTheBook(r: number, adv: number, epsLow: number, epsHigh: number): boolean {
  return (adv > 0 && r > 1 + epsHigh) || (adv < 0 && r < 1 - epsLow);
}
