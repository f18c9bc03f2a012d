/**
 * The token inspector's numbers (docs/method.md §9b.1): for one language agent's accepted update,
 * per token of its training batch, π_new against π_cur — the log-probs, the ratio r_k, the exact
 * per-state KL, the contribution w_e·Ã_e·log r_k and whether its term is clipped at π_new (the
 * token's own term under `objective=token`, its episode's under `sequence`). The worker keeps what
 * this needs of each update (`keepForInspection`), and of the steps the page records, the
 * parameters they left (AgentApi.keep), so any recorded step can be inspected later.
 *
 * Not here: the objective's maths (src/backend/cpu/objective.ts, whose clip rule is used here),
 * keeping the update in the worker (src/workers/agentApi.ts), drawing (TokenInspector.tsx).
 */
import { clippedTerm } from '../backend/cpu/objective';
import { logSoftmaxForward } from '../backend/cpu/softmax';
import type { LmSteps } from './agents/lm';
import type { AgentBatch, StepSet } from './types';
import type { UpdatePlan, UpdateSettings } from './update';

/** The settings the inspection reads (a slice of UpdateSettings). */
export type InspectSettings = Pick<UpdateSettings, 'objective' | 'tokenAgg' | 'epsLow' | 'epsHigh'>;

export interface InspectInput {
  /** The agent's training batch of the step (its `context` is the batch's LmSteps). */
  readonly batch: AgentBatch;
  /** Raw advantages R − μ per episode (reward units), shown beside Ã. */
  readonly rawAdv: Float64Array;
  /** log π_cur(·|s_k) and log π_new(·|s_k) at τ, [K × V] row-major. */
  readonly lpCur: Float64Array;
  readonly lpNew: Float64Array;
  readonly V: number;
  readonly settings: InspectSettings;
  /** The agent's trust radius δ_j. */
  readonly delta: number;
  readonly rejected: boolean;
  readonly agent: number;
  readonly temperature: number;
  /** Episodes listed in detail (the first ones the agent acts in); default 12. */
  readonly maxEpisodes?: number;
}

/** One token of the agent's. */
export interface TokenView {
  /** Its index among the agent's K steps of the batch. */
  readonly k: number;
  readonly token: number;
  readonly logpNew: number;
  readonly logpCur: number;
  /** r_k = exp(logpNew − logpCur). */
  readonly ratio: number;
  /** KL(π_new(·|s_k) ‖ π_cur(·|s_k)), exact over the vocabulary. */
  readonly kl: number;
  /** w_e · Ã_e · log r_k. */
  readonly contribution: number;
  /** The clipped branch is active for the term this token is in (its episode's, under `sequence`). */
  readonly clipped: boolean;
  /** Row of `pCur` / `pNew` holding this state's next-token distributions. */
  readonly row: number;
}

/** One message of the agent's: the prefix it was written after, then its tokens. */
export interface MessageView {
  /** The tokens before the message (prompt and earlier messages, as the agent saw them). */
  readonly context: Int32Array;
  readonly tokens: readonly TokenView[];
}

export interface EpisodeView {
  /** Index of the episode in the batch. */
  readonly e: number;
  /** Ã_e (normalised, clipped), R − μ, and the IS weight w_e. */
  readonly adv: number;
  readonly rawAdv: number;
  readonly weight: number;
  /** u_e = Σ log r_k over the agent's tokens, r_e = exp(u_e), and the sequence term's clip decision. */
  readonly logRatio: number;
  readonly ratio: number;
  readonly clipped: boolean;
  readonly messages: readonly MessageView[];
}

export interface TokenInspection {
  readonly agent: number;
  readonly objective: InspectSettings['objective'];
  readonly tokenAgg: InspectSettings['tokenAgg'];
  readonly epsLow: number;
  readonly epsHigh: number;
  readonly delta: number;
  readonly temperature: number;
  readonly vocab: number;
  readonly rejected: boolean;
  /** Episodes in the batch, and the agent's tokens (K) in it. */
  readonly nEpisodes: number;
  readonly nTokens: number;
  /** Over the whole batch: fraction of terms clipped at π_new, mean and max KL, fraction of states with KL > δ. */
  readonly clipFrac: number;
  readonly klMean: number;
  readonly klMax: number;
  readonly violRate: number;
  /** The largest |contribution| among the listed tokens (the colour scale's end). */
  readonly maxAbsContribution: number;
  readonly episodes: readonly EpisodeView[];
  /** π_cur(·|s) and π_new(·|s) at the listed tokens' states, [rows × V] (row = TokenView.row). */
  readonly pCur: Float32Array;
  readonly pNew: Float32Array;
}

/** The inspection of one update (header), from both policies' log-prob rows at the batch's states. */
export function inspectUpdate(inp: InspectInput): TokenInspection {
  const { batch, V, settings: s } = inp;
  const K = batch.obs.length;
  const N = batch.nEpisodes;
  if (inp.lpCur.length !== K * V || inp.lpNew.length !== K * V) throw new RangeError(`inspectUpdate: ${K} steps × ${V} tokens need log-prob rows of ${K * V}, got ${inp.lpCur.length} and ${inp.lpNew.length}`);
  const ctx = batch.context as LmSteps | undefined;
  if (!ctx || !Array.isArray(ctx.seqs)) throw new TypeError('inspectUpdate: the batch has no token sequences (context); only language agents can be inspected');
  const logLo = Math.log(1 - s.epsLow);
  const logHi = Math.log(1 + s.epsHigh);

  // Per step: the action's log-probs, its log-ratio and the exact KL.
  const lpN = new Float64Array(K);
  const lpC = new Float64Array(K);
  const kl = new Float64Array(K);
  for (let k = 0; k < K; k++) {
    const a = batch.actions[k]!;
    const off = k * V;
    lpN[k] = inp.lpNew[off + a]!;
    lpC[k] = inp.lpCur[off + a]!;
    let d = 0;
    for (let b = 0; b < V; b++) {
      const lp = inp.lpNew[off + b]!;
      const p = Math.exp(lp);
      if (p > 0) d += p * (lp - inp.lpCur[off + b]!);
    }
    kl[k] = Math.max(0, d); // as the monitor clamps rounding below 0
  }

  // Per episode: u_e and the sequence term's decision; per step: the token term's decision.
  const u = new Float64Array(N);
  const acts = new Uint8Array(N);
  for (let k = 0; k < K; k++) {
    u[batch.episodeOf[k]!]! += lpN[k]! - lpC[k]!;
    acts[batch.episodeOf[k]!] = 1;
  }
  const epClipped = new Uint8Array(N);
  for (let e = 0; e < N; e++) epClipped[e] = clippedTerm(u[e]!, batch.adv[e]!, logLo, logHi).clipped ? 1 : 0;
  const clipped = new Uint8Array(K);
  for (let k = 0; k < K; k++) {
    const e = batch.episodeOf[k]!;
    clipped[k] = s.objective === 'sequence' ? epClipped[e]! : clippedTerm(lpN[k]! - lpC[k]!, batch.adv[e]!, logLo, logHi).clipped ? 1 : 0;
  }
  let terms = 0;
  let clippedTerms = 0;
  if (s.objective === 'sequence') {
    for (let e = 0; e < N; e++) {
      if (!acts[e]) continue; // an episode the agent is absent from has no term of its own (r = 1)
      terms++;
      clippedTerms += epClipped[e]!;
    }
  } else {
    terms = K;
    for (let k = 0; k < K; k++) clippedTerms += clipped[k]!;
  }
  let klSum = 0;
  let klMax = 0;
  let viol = 0;
  for (let k = 0; k < K; k++) {
    klSum += kl[k]!;
    klMax = Math.max(klMax, kl[k]!);
    if (kl[k]! > inp.delta) viol++;
  }

  // The listed episodes, message by message (a message = the agent's steps on one sequence).
  const maxEp = inp.maxEpisodes ?? 12;
  const byEpisode = new Map<number, number[]>();
  for (let k = 0; k < K; k++) {
    const e = batch.episodeOf[k]!;
    if (!byEpisode.has(e)) {
      if (byEpisode.size >= maxEp) continue;
      byEpisode.set(e, []);
    }
    byEpisode.get(e)!.push(k);
  }
  const rows: number[] = [];
  let maxAbs = 0;
  const episodes: EpisodeView[] = [...byEpisode.entries()]
    .sort((x, y) => x[0] - y[0])
    .map(([e, ks]) => {
      const messages: { seq: number; context: Int32Array; tokens: TokenView[] }[] = [];
      for (const k of ks) {
        const o = batch.obs[k]!;
        const seq = ctx.stepSeq[o]!;
        let m = messages[messages.length - 1];
        if (!m || m.seq !== seq) {
          m = { seq, context: ctx.seqs[seq]!.slice(0, ctx.stepPos[o]!), tokens: [] };
          messages.push(m);
        }
        const contribution = batch.weight[e]! * batch.adv[e]! * (lpN[k]! - lpC[k]!);
        maxAbs = Math.max(maxAbs, Math.abs(contribution));
        m.tokens.push({
          k, token: batch.actions[k]!, logpNew: lpN[k]!, logpCur: lpC[k]!, ratio: Math.exp(lpN[k]! - lpC[k]!), kl: kl[k]!,
          contribution, clipped: clipped[k] === 1, row: rows.push(k) - 1,
        });
      }
      return {
        e, adv: batch.adv[e]!, rawAdv: inp.rawAdv[e]!, weight: batch.weight[e]!, logRatio: u[e]!, ratio: Math.exp(u[e]!), clipped: epClipped[e] === 1,
        messages: messages.map(({ context, tokens }) => ({ context, tokens })),
      };
    });
  const pCur = new Float32Array(rows.length * V);
  const pNew = new Float32Array(rows.length * V);
  rows.forEach((k, r) => {
    for (let b = 0; b < V; b++) {
      pCur[r * V + b] = Math.exp(inp.lpCur[k * V + b]!);
      pNew[r * V + b] = Math.exp(inp.lpNew[k * V + b]!);
    }
  });
  return {
    agent: inp.agent, objective: s.objective, tokenAgg: s.tokenAgg, epsLow: s.epsLow, epsHigh: s.epsHigh, delta: inp.delta, temperature: inp.temperature,
    vocab: V, rejected: inp.rejected, nEpisodes: N, nTokens: K, clipFrac: terms > 0 ? clippedTerms / terms : 0, klMean: K > 0 ? klSum / K : 0, klMax,
    violRate: K > 0 ? viol / K : 0, maxAbsContribution: maxAbs, episodes, pCur, pNew,
  };
}

/** One bar of the next-token chart: a token (or the rest of the vocabulary, token = null). */
export interface DistBar {
  readonly token: number | null;
  readonly pCur: number;
  readonly pNew: number;
}

/**
 * The `k` tokens most likely under either policy at one state (by max(π_cur, π_new), ties by id),
 * the sampled token always among them, then "rest" with the remaining mass of each.
 */
export function topTokens(pCur: ArrayLike<number>, pNew: ArrayLike<number>, row: number, V: number, k: number, sampled: number): DistBar[] {
  const ids = Array.from({ length: V }, (_, b) => b);
  const score = (b: number) => Math.max(pCur[row * V + b]!, pNew[row * V + b]!);
  ids.sort((x, y) => score(y) - score(x) || x - y);
  const top = ids.slice(0, Math.max(1, k));
  if (!top.includes(sampled)) top[top.length - 1] = sampled;
  const bars: DistBar[] = top.map((b) => ({ token: b, pCur: pCur[row * V + b]!, pNew: pNew[row * V + b]! }));
  let restCur = 0;
  let restNew = 0;
  for (let b = 0; b < V; b++) {
    if (top.includes(b)) continue;
    restCur += pCur[row * V + b]!;
    restNew += pNew[row * V + b]!;
  }
  bars.push({ token: null, pCur: restCur, pNew: restNew });
  return bars;
}

/** What an agent's worker keeps of its latest update to inspect it later (π_cur's logits at the batch's K states: K × V × 4 bytes). */
export interface KeptUpdate {
  /** The plan's batch, raw advantages, δ and settings (not its after-update step sets). */
  readonly plan: Pick<UpdatePlan, 'batch' | 'rawAdv' | 'delta' | 'settings'>;
  readonly rejected: boolean;
  /** π_cur's logits at τ at the batch's states, [K × V]. */
  readonly zCur: Float32Array;
}

/**
 * What the inspection needs of a language seat, on any backend: an LmAgent (src/sat/agents/lm.ts),
 * or a Stage-0 seat (src/sat/agents/projected.ts) whose student holds the reference.
 */
export interface InspectableSeat {
  readonly index: number;
  readonly temperature: number;
  readonly model: { readonly cfg: { readonly vocab: number } };
  /** π_θ(·|s) of the policy that samples for the seat now. */
  distributions(steps: StepSet): Promise<Float64Array>;
  /** π_cur's logits at τ at every step's state ([K × V]). */
  referenceLogits?(steps: StepSet): Promise<Float32Array>;
  readonly student?: { referenceLogits(steps: StepSet): Promise<Float32Array> };
}

function referenceLogits(agent: InspectableSeat, steps: StepSet): Promise<Float32Array> {
  if (agent.student) return agent.student.referenceLogits(steps);
  if (!agent.referenceLogits) throw new TypeError(`agent ${agent.index}: no reference policy to inspect against`);
  return agent.referenceLogits(steps);
}

/**
 * Called right after the update (AgentApi.update): π_cur's logits at the batch's states, which the
 * agent still caches from the update's own KL checks (a download, no forward pass).
 */
export async function keepForInspection(agent: InspectableSeat, plan: UpdatePlan, rejected: boolean): Promise<KeptUpdate> {
  const { batch, rawAdv, delta, settings } = plan;
  return { plan: { batch, rawAdv, delta, settings }, rejected, zCur: await referenceLogits(agent, batch) };
}

/**
 * The inspection of a kept update, with π_new = the agent as it stands (its distributions on the
 * batch: one forward pass). Valid only while the agent has not moved since that update.
 */
export async function inspectKept(agent: InspectableSeat, kept: KeptUpdate, maxEpisodes?: number): Promise<TokenInspection> {
  const { plan } = kept;
  const K = plan.batch.obs.length;
  const V = agent.model.cfg.vocab;
  const tau = agent.temperature;
  const lpCur = new Float64Array(K * V);
  if (K > 0) logSoftmaxForward(lpCur, kept.zCur, K, V, tau);
  const lpNew = K > 0 ? (await agent.distributions(plan.batch)).map(Math.log) : new Float64Array(0);
  return inspectUpdate({
    batch: plan.batch, rawAdv: plan.rawAdv, lpCur, lpNew, V, settings: plan.settings, delta: plan.delta, rejected: kept.rejected,
    agent: agent.index, temperature: tau, ...(maxEpisodes !== undefined ? { maxEpisodes } : {}),
  });
}

/** The inspector's answer: the inspection, or why this step cannot be inspected (in words). */
export type InspectAnswer = { readonly ok: true; readonly inspection: TokenInspection } | { readonly ok: false; readonly reason: string };
