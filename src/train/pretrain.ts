/**
 * Pretraining a tiny language model from scratch on a task's generated train split: next-token
 * cross-entropy on the answer tokens of `corpus.ts` examples, AdamW with a cosine learning-rate
 * schedule, then held-out accuracy by greedy decoding. Used by `npm run pretrain` to build the
 * model zoo in public/models/. `crossEntropyGrad` is also the per-shard gradient of the
 * data-parallel step (src/train/parallel.ts).
 *
 * Not here: RL (src/sat), file writing (the CLI does it with src/model/weights.ts), or threads
 * (parallel.ts; this file imports nothing from Node, so the app may import it).
 */
import { Rng } from '../core/rng';
import { EOS, tokenizer } from '../model/tokenizer';
import type { HostTensors, TensorKinds } from '../backend/types';
import { nextTokenLoss } from '../model/loss';
import type { Model } from '../model/model';
import { pretrainExample, soloPromptTokens } from '../tasks/llm/corpus';
import type { LlmTask } from '../tasks/llm/types';

export interface PretrainOptions {
  readonly seed: number;
  /** Sequences per step. */
  readonly batch: number;
  readonly lr: number;
  readonly weightDecay: number;
  /** Stop after this many steps … */
  readonly steps: number;
  /** … or after this many seconds, whichever comes first. */
  readonly seconds: number;
  /** Called every `every` steps with progress. */
  readonly onProgress?: (p: PretrainProgress) => void;
  readonly every?: number;
}

export interface PretrainProgress {
  readonly step: number;
  readonly loss: number;
  readonly tokensPerSecond: number;
  readonly elapsed: number;
  /** Fraction of the budget (steps or seconds) used. */
  readonly done: number;
}

/** One training sequence: its tokens and the first position whose token counts in the loss. */
export interface PretrainExample {
  readonly tokens: Int32Array;
  readonly lossFrom: number;
}

/** Target tokens of a batch: the denominator of its mean loss (Σ over examples of length − lossFrom). */
export function targetCount(examples: readonly PretrainExample[]): number {
  let count = 0;
  for (const e of examples) count += e.tokens.length - e.lossFrom;
  return count;
}

/**
 * Forward and backward of Σ CE / `count` over the loss positions of `examples` (the one
 * next-token loss, src/model/loss.ts), leaving its gradient in the model's gradients (zeroed
 * first); no optimizer step. Row (b, t) of the logits predicts token t+1; it counts when
 * t+1 ≥ lossFrom of its example. Returns the SUMMED loss (not divided by count) and the padded
 * tokens B·T.
 *
 * `count` is the target-token count of the WHOLE batch (default: of `examples`). A data-parallel
 * shard passes the whole batch's count, so that each shard's gradient is its share of the
 * whole-batch mean loss: the gradients of the shards then sum to the whole-batch gradient, and
 * every ∂loss/∂logit is bit for bit the whole batch's (only the f32 rounding of the summed
 * weight gradients differs). Dividing by the shard's own count would weight a short shard's
 * tokens more than a long one's.
 */
export async function crossEntropyGrad<X extends TensorKinds>(model: Model<X>, examples: readonly PretrainExample[], count = targetCount(examples)): Promise<{ lossSum: number; tokens: number }> {
  const B = examples.length;
  const T = Math.max(...examples.map((e) => e.tokens.length));
  const tokens = new Int32Array(B * T); // right-padded with PAD, which is never a target
  examples.forEach((e, b) => tokens.set(e.tokens, b * T));
  model.zeroGrad();
  const { lossSum } = await nextTokenLoss(model, { tokens, B, T, lossFrom: Int32Array.from(examples, (e) => e.lossFrom) }, { backward: true, count });
  return { lossSum, tokens: B * T };
}

/**
 * One step of next-token cross-entropy on the loss positions of `examples` (crossEntropyGrad,
 * then one AdamW step, all on this thread); returns the mean loss.
 */
export async function crossEntropyStep<X extends TensorKinds>(model: Model<X>, examples: readonly PretrainExample[], lr: number, weightDecay: number): Promise<{ loss: number; tokens: number }> {
  const count = targetCount(examples);
  const r = await crossEntropyGrad(model, examples, count);
  model.adamStep({ lr, weightDecay });
  return { loss: r.lossSum / count, tokens: r.tokens };
}

/**
 * The bookkeeping of a pretraining run, shared by the single-thread loop (`pretrain`) and the
 * data-parallel one (src/train/parallel.ts) so both see the same data, schedule and progress:
 * `next()` gives step s's learning rate and batch (or null when the budget is spent), `record()`
 * takes the step's loss.
 */
export class PretrainRun {
  private readonly rng: Rng;
  private readonly t0 = Date.now();
  private ema = NaN;
  private tokens = 0;
  private step = 0;

  constructor(
    private readonly task: LlmTask,
    private readonly o: PretrainOptions,
  ) {
    this.rng = new Rng(o.seed, [0x7072]);
  }

  /** Step `step`'s learning rate and examples, or null when the step or time budget is spent. */
  next(): { lr: number; examples: PretrainExample[] } | null {
    const { o, step } = this;
    if (step >= o.steps) return null;
    const elapsed = (Date.now() - this.t0) / 1000;
    if (elapsed >= o.seconds) return null;
    const progress = Math.max(step / o.steps, elapsed / o.seconds);
    // Cosine decay to 10 % of the peak, after a short warm-up.
    const warm = Math.min(1, (step + 1) / 50);
    const lr = o.lr * warm * (0.1 + 0.45 * (1 + Math.cos(Math.PI * Math.min(1, progress))));
    const examples = Array.from({ length: o.batch }, (_, b) => pretrainExample(this.task, this.rng.fork(step, b)));
    return { lr, examples };
  }

  /** Records the step just taken (its mean loss and padded tokens) and reports progress. */
  record(r: { loss: number; tokens: number }): void {
    const { o, step } = this;
    this.tokens += r.tokens;
    this.ema = Number.isNaN(this.ema) ? r.loss : 0.98 * this.ema + 0.02 * r.loss;
    if (o.onProgress && (step % (o.every ?? 50) === 0 || step === o.steps - 1)) {
      const el = (Date.now() - this.t0) / 1000;
      o.onProgress({ step, loss: this.ema, tokensPerSecond: this.tokens / Math.max(1e-3, el), elapsed: el, done: Math.max((step + 1) / o.steps, el / o.seconds) });
    }
    this.step++;
  }

  /** Steps taken, wall-clock seconds, and the loss EMA. */
  result(): { steps: number; seconds: number; finalLoss: number } {
    return { steps: this.step, seconds: (Date.now() - this.t0) / 1000, finalLoss: this.ema };
  }
}

/**
 * Trains on this thread until the step or time budget runs out (`--workers 1`). Returns the number
 * of steps and seconds. The data-parallel twin is `pretrainParallel` (src/train/parallel.ts).
 */
export async function pretrain<X extends TensorKinds>(model: Model<X>, task: LlmTask, o: PretrainOptions): Promise<{ steps: number; seconds: number; finalLoss: number }> {
  const run = new PretrainRun(task, o);
  for (let s = run.next(); s !== null; s = run.next()) run.record(await crossEntropyStep(model, s.examples, s.lr, o.weightDecay));
  return run.result();
}

/** Held-out problems behind a shipped model's recorded accuracy (the zoo test re-measures on the same ones). */
export const ZOO_EVAL_COUNT = 500;

/** Held-out accuracy of greedy answers in the solo format (agent 0's turn marker). */
export async function heldOutAccuracy<X extends TensorKinds = HostTensors>(model: Model<X>, task: LlmTask, count: number, batch = 64): Promise<{ accuracy: number; examples: { prompt: string; answer: string; correct: boolean }[] }> {
  let correct = 0;
  const examples: { prompt: string; answer: string; correct: boolean }[] = [];
  for (let start = 0; start < count; start += batch) {
    const problems = Array.from({ length: Math.min(batch, count - start) }, (_, i) => task.generate('heldout', start + i));
    const out = await model.generate(problems.map((p) => soloPromptTokens(p)), { maxNew: task.maxAnswerChars + 1, temperature: 0, topK: 1, seed: 0, stream: 0, stop: EOS });
    problems.forEach((p, i) => {
      const text = tokenizer.decode(out.tokens[i]!, { skipSpecial: true });
      const ok = task.verify(p, text).correct;
      if (ok) correct++;
      if (examples.length < 8) examples.push({ prompt: p.prompt, answer: text, correct: ok });
    });
  }
  return { accuracy: correct / count, examples };
}
