/**
 * Next-token cross-entropy — the one language-modelling loss of the project, used by pretraining
 * (src/train), the bench (bench/cpu.ts) and the tests — over a `Model` on any backend.
 *
 * A batch is tokens [B × T]; row (b, t) of the logits predicts token (b, t + 1). A target counts
 * when t + 1 ≥ lossFrom[b] (default 1: every next token) and the target is not PAD (so right
 * padding never counts). With M the number of targets that count and `count` the denominator
 * (default M; a data-parallel shard passes the whole batch's M, src/train/parallel.ts):
 *
 *   loss = (1/count) Σ (logsumexp(z) − z[target]),   ∂loss/∂z = (softmax(z) − onehot(target)) / count.
 *
 * Everything runs on the model's backend — one crossEntropy op: logSoftmaxForward and
 * gatherForward for the per-row terms, gatherBackward and logSoftmaxBackward (with per-row
 * weights w/count, w = 0 where the target does not count) for the logit gradient, composed on the
 * CPU and one dispatch on WebGPU — and only the B·T per-row log-probs are
 * downloaded, so the same loss serves the CPU and a GPU. `backward` ACCUMULATES into the model's
 * gradients; call zeroGrad first.
 *
 * Not here: the RL objectives (the agents compute those on the backend, src/sat/agents/lm.ts).
 */
import type { TensorKinds } from '../backend/types';
import { ConfigError, NumericError } from '../core/errors';
import { sumOfSquares } from '../core/vec';
import type { Model } from './model';
import { PAD } from './tokenizer';
import type { TrainOptions } from './types';

/** A next-token batch: tokens [B × T], and per row the first position whose token is a target. */
export interface NextTokenBatch {
  readonly tokens: Int32Array;
  readonly B: number;
  readonly T: number;
  /** Per row b: targets are positions ≥ lossFrom[b] (≥ 1). Default: 1 for every row. */
  readonly lossFrom?: Int32Array;
}

/**
 * Σ CE over the batch's targets (header) and, with `backward`, its gradient divided by `count`
 * accumulated into the model's gradients. Returns the SUMMED loss and the number of targets.
 */
export async function nextTokenLoss<X extends TensorKinds>(
  model: Model<X>,
  batch: NextTokenBatch,
  opts: { readonly backward?: boolean; readonly count?: number } = {},
): Promise<{ lossSum: number; targets: number }> {
  return recordNextTokenLoss(model, batch, opts)();
}

/**
 * `nextTokenLoss` in two halves: this records every op (forward, loss, backward) and returns the
 * read-back, which downloads the per-row log-probs when called. A caller that calls it in the
 * same JS task as other downloads (trainOnSequences: the gradient) gets them all in one GPU
 * command submission.
 */
function recordNextTokenLoss<X extends TensorKinds>(
  model: Model<X>,
  batch: NextTokenBatch,
  opts: { readonly backward?: boolean; readonly count?: number },
): () => Promise<{ lossSum: number; targets: number }> {
  const { tokens, B, T, lossFrom } = batch;
  const V = model.cfg.vocab;
  const N = B * T;
  const backward = opts.backward ?? false;
  // Row (b, t) predicts token (b, t + 1); w = 1 where that target counts, else 0 (target 0 there).
  const targets = new Int32Array(N);
  const w = new Float32Array(N);
  let M = 0;
  for (let b = 0; b < B; b++) {
    for (let t = Math.max(1, lossFrom?.[b] ?? 1); t < T; t++) {
      const target = tokens[b * T + t]!;
      if (target === PAD) continue;
      targets[b * T + t - 1] = target;
      w[b * T + t - 1] = 1;
      M++;
    }
  }
  const count = opts.count ?? M;
  if (M === 0) throw new ConfigError('tokens', 'no targets', 'nextTokenLoss: no target position (every next token is PAD or before lossFrom, or T = 1).');
  if (!(count >= M)) throw new ConfigError('count', count, `nextTokenLoss: count = ${count} is below the batch's ${M} targets.`);
  const be = model.be;
  const tgt = be.upload('i32', targets);
  const dout = backward ? be.upload('f32', w.map((x) => -x / count)) : null;
  const logits = model.forward(tokens, B, T, { keep: backward });
  const lrow = be.zeros('f32', N);
  const owned: X[keyof X][] = [tgt, lrow];
  // lrow = log p[target] per row and, for the backward, ∂(Σ_i w_i·(−log p_i[target_i]) / count)/∂logits:
  // logSoftmax → gather (→ gatherBackward → logSoftmaxBackward) as one op.
  const dlogits = dout !== null ? be.zeros('f32', N * V) : null;
  be.crossEntropy(lrow, dlogits, logits, tgt, dout, N, V);
  if (dout !== null && dlogits !== null) {
    model.backward(dlogits);
    owned.push(dout, dlogits);
  }
  return async () => {
    const lp = await be.download('f32', lrow);
    for (const t of owned) be.dispose(t as X['f32']);
    let lossSum = 0;
    for (let i = 0; i < N; i++) if (w[i] !== 0) lossSum -= lp[i]!;
    if (!Number.isFinite(lossSum)) throw new NumericError(`nextTokenLoss: the loss is ${lossSum}; the model or its inputs produced non-finite logits.`);
    return { lossSum, targets: M };
  };
}

/**
 * One next-token training step on tokens [B × T] (every next token that is not PAD is a target):
 * zeroGrad, mean loss + backward, optional global-norm clipping, AdamW. Returns the loss before
 * the step. A non-finite loss or gradient throws NumericError and leaves the parameters untouched.
 * On a GPU the step is one command submission: the loss rows and the gradient are read back
 * together (the norm and the clipping decision need them on the host), and the clipping and AdamW
 * ops recorded after it ride in the next submission (the next step's, or whatever reads next).
 */
export async function trainOnSequences<X extends TensorKinds>(model: Model<X>, tokens: Int32Array, B: number, T: number, opts: TrainOptions): Promise<number> {
  model.zeroGrad();
  const loss = recordNextTokenLoss(model, { tokens, B, T }, { backward: true });
  const [{ lossSum, targets }, grads] = await Promise.all([loss(), model.getGrads()]);
  const norm = Math.sqrt(sumOfSquares(grads));
  if (!Number.isFinite(norm)) throw new NumericError(`trainOnSequences: the gradient norm is ${norm}; no step taken.`);
  const clip = opts.maxGradNorm ?? 0;
  if (clip > 0 && norm > clip) model.scaleGrads(clip / norm);
  model.adamStep({ lr: opts.lr, weightDecay: opts.weightDecay ?? 0 });
  return lossSum / targets;
}
