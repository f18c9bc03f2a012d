/**
 * Batched KV-cache decoding for the Model (model.ts `generate`).
 *
 * Every prompt is prefilled at its own positions 0..P−1 (no padding).
 * Backend ops take one pos0 per call and no views, so prompts are grouped by length: a group
 * advances in lock step (same position), with its own KV cache [S_g × Tmax × C] per layer.
 * Prefill runs group by group (T = P), and each sequence's last hidden row is gathered
 * (embeddingForward as a row gather) and scattered (embeddingBackward into zeros) into one
 * [S × C] tensor in prompt order. A decoding step runs one row per prompt: norms, projections and
 * the MLP over all S rows at once, and per group only RoPE, the cache write and attention, on the
 * group's rows gathered out and scattered back (rows whose sequence has ended compute unused
 * values) — or on the rows in place when one group holds every prompt in order (no gather).
 * Each step ends with ONE final norm, head and `sampleForward` over the S rows (Philox counter
 * (step, seq0 + prompt index)) and ONE download of S token ids. Every kernel computes each
 * row on its own (one accumulator per element), so batched decoding gives bit for bit the logits
 * of one-by-one decoding and of a plain forward over prompt + generated tokens, and the tokens of a
 * prompt do not depend on what else is in the batch.
 */
import { rowLogSumExp } from '../backend/cpu';
import type { Backend, TensorKind, TensorKinds } from '../backend/types';
import type { Acts, LayerActs, ParamSet } from './acts';
import type { ModelConfig } from './config';
import { checkGenerateArgs } from './generateArgs';
import type { GenerateOptions, GenerateResult } from './types';

/** What decoding needs of the model: its backend, shapes and current parameters, and its forward pieces. */
export interface DecodeHost<X extends TensorKinds> {
  readonly be: Backend<X>;
  readonly cfg: ModelConfig;
  /** Head size C / NH. */
  readonly HS: number;
  /** The RoPE table [maxSeq × HS]. */
  readonly rope: X['f32'];
  readonly params: ParamSet<X>;
  /** The embedding or final norm tensor under parameter set P. */
  at(which: 'emb' | 'finalNorm', P: ParamSet<X>): X['f32'];
  /** logits [N × V] = inp [N × C] · headᵀ under parameter set P (the model's head, f32 or quantized). */
  headForward(out: X['f32'], inp: X['f32'], P: ParamSet<X>, N: number): void;
  /** The sampling scratch at N rows. */
  samplingActs(N: number): Acts<X>;
  /** RoPE of q and k, rows [B × T] from pos0. */
  ropeQK(s: LayerActs<X>, acts: Acts<X>, B: number, T: number, pos0: number): void;
  /** One block on N rows; `attention` turns acts.qraw, acts.kraw, s.v into s.q, s.k, s.ao. */
  layerForward(l: number, P: ParamSet<X>, s: LayerActs<X>, acts: Acts<X>, xin: X['f32'], xmid: X['f32'], xout: X['f32'], N: number, attention: (s: LayerActs<X>, l: number) => void): void;
}

/**
 * Samples continuations of each prompt with a KV cache (header: prompts grouped by length, one
 * sample and one download of S ids per step; with `returnLogits` also one download of the S
 * logit rows). Prompt i is sequence seq0 + i for the sampler and its k-th generated token uses
 * step k, so the same seed gives the same tokens whatever else is in the batch. A sequence ends at
 * `stop` (not returned), after `maxNew` tokens, or when prompt + generated reaches maxSeq.
 */
export async function decode<X extends TensorKinds>(m: DecodeHost<X>, prompts: readonly Int32Array[], opts: GenerateOptions): Promise<GenerateResult> {
  const be = m.be;
  const { d: C, vocab: V, heads: NH, layers: L, normEps } = m.cfg;
  const HS = m.HS;
  const S = prompts.length;
  const { maxSeq, seq0, longest } = checkGenerateArgs(m.cfg, prompts, opts);
  const tau = opts.temperature;
  const withLogits = opts.returnLogits ?? false;
  const gen: number[][] = prompts.map(() => []);
  const lps: number[][] = prompts.map(() => []);
  const rows: number[][] = prompts.map(() => []);
  const stopped = prompts.map(() => false);
  const stopLogp = new Float32Array(S).fill(NaN);
  const done = (): GenerateResult => ({
    tokens: gen.map((g) => Int32Array.from(g)),
    stopped,
    ...(withLogits ? { logp: lps.map((g) => Float32Array.from(g)), stopLogp, logits: rows.map((r) => Float32Array.from(r)) } : {}),
  });
  if (S === 0 || opts.maxNew === 0) return done();

  const Tmax = Math.min(maxSeq, longest + opts.maxNew);
  // Groups of prompts of one length P (a prompt that already fills Tmax generates nothing).
  const byLen = new Map<number, number[]>();
  prompts.forEach((p, i) => {
    if (p.length >= Tmax) return;
    const m = byLen.get(p.length);
    if (m) m.push(i);
    else byLen.set(p.length, [i]);
  });
  if (byLen.size === 0) return done();
  const owned: X[TensorKind][] = [];
  const keepT = <T extends X[TensorKind]>(t: T): T => {
    owned.push(t);
    return t;
  };
  const groups = [...byLen].map(([P, members]) => {
    const Sg = members.length;
    const tokens = new Int32Array(Sg * P);
    members.forEach((s, b) => tokens.set(prompts[s]!, b * P));
    return {
      P,
      members,
      live: members.map(() => true),
      prefill: tokens,
      kc: Array.from({ length: L }, () => keepT(be.zeros('f32', Sg * Tmax * C))),
      vc: Array.from({ length: L }, () => keepT(be.zeros('f32', Sg * Tmax * C))),
      /** The group is every prompt, in order: its rows are the decode rows themselves (no gather / scatter). */
      whole: members.length === prompts.length && members.every((s, b) => s === b),
      lastRow: keepT(be.upload('i32', Int32Array.from(members, (_, b) => b * P + P - 1))),
      scatter: keepT(be.upload('i32', Int32Array.from(members))),
    };
  });
  const lastX = keepT(be.zeros('f32', S * C));
  const lastLn = keepT(be.zeros('f32', S * C));
  const lastRstd = keepT(be.zeros('f32', S));
  const logits = keepT(be.zeros('f32', S * V));
  const sampled = keepT(be.zeros('i32', S));
  const maxSg = Math.max(...groups.map((g) => g.members.length));
  const [gq, gk, gv, gqr, gkr, gao] = Array.from({ length: 6 }, () => keepT(be.zeros('f32', maxSg * C)));
  const next = new Int32Array(S);
  const invT = tau > 0 ? 1 / tau : 1;
  const P0 = m.params;
  const liveGroups = () => groups.filter((g) => g.live.some((x) => x));
  try {
    for (let step = 0; liveGroups().length > 0; step++) {
      let last: X['f32'];
      if (step === 0) {
        // Prefill: each group at positions 0..P−1; each sequence's last row → lastX in prompt order.
        be.fill(lastX, 0);
        for (const grp of groups) {
          const Sg = grp.members.length;
          const T = grp.P;
          const N = Sg * T;
          const acts = m.samplingActs(N);
          const s = acts.sets[0]!;
          const tok = be.upload('i32', grp.prefill);
          be.embeddingForward(acts.res[0]!, tok, m.at('emb', P0), Sg, T, C);
          const attention = (st: LayerActs<X>, l: number): void => {
            m.ropeQK(st, acts, Sg, T, 0);
            be.kvCacheWrite(grp.kc[l]!, grp.vc[l]!, st.k, st.v, Sg, T, C, 0, Tmax);
            be.attentionCachedForward(st.ao, st.q, grp.kc[l]!, grp.vc[l]!, Sg, T, NH, HS, 0, Tmax);
          };
          for (let l = 0; l < L; l++) m.layerForward(l, P0, s, acts, acts.res[l]!, s.mid, acts.res[l + 1]!, N, attention);
          be.embeddingForward(gq, grp.lastRow, acts.res[L]!, 1, Sg, C); // row gather: each sequence's last row
          be.embeddingBackward(lastX, gq, grp.scatter, 1, Sg, C); // rows → prompt order (into zeros)
          be.dispose(tok);
        }
        last = lastX;
      } else {
        // Decode: one row per prompt (row s = prompt s; rows that are done compute unused values).
        // Norms, projections and the MLP run over all S rows at once; RoPE, the cache write and
        // attention run per group at the group's position, on its rows gathered and scattered back.
        const acts = m.samplingActs(S);
        const s = acts.sets[0]!;
        const tok = be.upload('i32', next);
        be.embeddingForward(acts.res[0]!, tok, m.at('emb', P0), 1, S, C);
        const live = liveGroups();
        const attention = (st: LayerActs<X>, l: number): void => {
          const only = live.length === 1 && live[0]!.whole ? live[0]! : null;
          if (only !== null) {
            // One group holding every prompt in order: RoPE, the cache write and attention on the rows in place.
            const pos0 = only.P + step - 1;
            m.ropeQK(st, acts, S, 1, pos0);
            be.kvCacheWrite(only.kc[l]!, only.vc[l]!, st.k, st.v, S, 1, C, pos0, Tmax);
            be.attentionCachedForward(st.ao, st.q, only.kc[l]!, only.vc[l]!, S, 1, NH, HS, pos0, Tmax);
            return;
          }
          be.fill(st.ao, 0);
          for (const grp of live) {
            const Sg = grp.members.length;
            const pos0 = grp.P + step - 1;
            be.embeddingForward(gq, grp.scatter, acts.qraw, 1, Sg, C);
            be.embeddingForward(gk, grp.scatter, acts.kraw, 1, Sg, C);
            be.embeddingForward(gv, grp.scatter, st.v, 1, Sg, C);
            be.ropeForward(gqr, gq, m.rope, Sg, 1, NH, HS, pos0);
            be.ropeForward(gkr, gk, m.rope, Sg, 1, NH, HS, pos0);
            be.kvCacheWrite(grp.kc[l]!, grp.vc[l]!, gkr, gv, Sg, 1, C, pos0, Tmax);
            be.attentionCachedForward(gao, gqr, grp.kc[l]!, grp.vc[l]!, Sg, 1, NH, HS, pos0, Tmax);
            be.embeddingBackward(st.ao, gao, grp.scatter, 1, Sg, C);
          }
        };
        for (let l = 0; l < L; l++) m.layerForward(l, P0, s, acts, acts.res[l]!, s.mid, acts.res[l + 1]!, S, attention);
        be.dispose(tok);
        last = acts.res[L]!;
      }
      be.rmsnormForward(lastLn, lastRstd, last, m.at('finalNorm', P0), 1, S, C, normEps);
      m.headForward(logits, lastLn, P0, S);
      be.sampleForward(sampled, logits, S, V, { seed: opts.seed, stream: opts.stream, step, temperature: tau, topK: opts.topK, seq0 });
      const ids = await be.download('i32', sampled);
      const z = withLogits ? await be.download('f32', logits) : null;
      for (const grp of groups) {
        grp.members.forEach((s, b) => {
          if (!grp.live[b]) return;
          const a = ids[s]!;
          let lp = NaN;
          if (z !== null) {
            const row = z.subarray(s * V, (s + 1) * V);
            lp = row[a]! * invT - rowLogSumExp(row, 0, V, invT);
            for (let v = 0; v < V; v++) rows[s]!.push(row[v]!);
          }
          if (a === opts.stop) {
            stopped[s] = true;
            stopLogp[s] = lp;
            grp.live[b] = false;
            return;
          }
          gen[s]!.push(a);
          lps[s]!.push(lp);
          next[s] = a;
          const len = prompts[s]!.length + gen[s]!.length;
          if (gen[s]!.length >= opts.maxNew || len >= Tmax) grp.live[b] = false;
        });
      }
    }
  } finally {
    for (const t of owned) be.dispose(t);
  }
  return done();
}
