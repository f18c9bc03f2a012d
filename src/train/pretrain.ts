/**
 * Pretraining a tiny language model from scratch on a task's generated train split: next-token
 * cross-entropy on the answer tokens of `corpus.ts` examples, AdamW with a cosine learning-rate
 * schedule, then held-out accuracy by greedy decoding. Used by `npm run pretrain` to build the
 * model zoo in public/models/.
 *
 * Not here: RL (src/sat) or file writing (the CLI does it with src/model/weights.ts).
 */
import { Rng } from '../core/rng';
import { EOS, tokenizer } from '../model/tokenizer';
import type { Transformer } from '../model/transformer';
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

/**
 * One step of next-token cross-entropy on the loss positions of `examples`; returns the mean loss.
 * Row (b, t) of the logits predicts token t+1; it counts when t+1 ≥ lossFrom of its example.
 */
export function crossEntropyStep(model: Transformer, examples: readonly { tokens: Int32Array; lossFrom: number }[], lr: number, weightDecay: number): { loss: number; tokens: number } {
  const B = examples.length;
  const T = Math.max(...examples.map((e) => e.tokens.length));
  const V = model.cfg.vocab;
  const tokens = new Int32Array(B * T);
  examples.forEach((e, b) => tokens.set(e.tokens, b * T));
  model.zeroGrad();
  const logits = model.forward(tokens, B, T, { keep: true });
  const dlogits = new Float32Array(logits.length);
  let count = 0;
  for (const e of examples) count += e.tokens.length - e.lossFrom;
  let loss = 0;
  examples.forEach((e, b) => {
    for (let t = e.lossFrom - 1; t < e.tokens.length - 1; t++) {
      const row = (b * T + t) * V;
      let m = -Infinity;
      for (let v = 0; v < V; v++) m = Math.max(m, logits[row + v]!);
      let sum = 0;
      for (let v = 0; v < V; v++) sum += Math.exp(logits[row + v]! - m);
      const target = e.tokens[t + 1]!;
      loss -= logits[row + target]! - m - Math.log(sum);
      // ∂(mean CE)/∂z_v = (softmax_v − 1[v = target]) / count
      for (let v = 0; v < V; v++) dlogits[row + v] = (Math.exp(logits[row + v]! - m) / sum - (v === target ? 1 : 0)) / count;
    }
  });
  model.backward(dlogits);
  model.adamStep(lr, weightDecay);
  return { loss: loss / count, tokens: B * T };
}

/** Trains until the step or time budget runs out. Returns the number of steps and seconds. */
export function pretrain(model: Transformer, task: LlmTask, o: PretrainOptions): { steps: number; seconds: number; finalLoss: number } {
  const rng = new Rng(o.seed, [0x7072]);
  const t0 = Date.now();
  let ema = NaN;
  let tokens = 0;
  let step = 0;
  for (; step < o.steps; step++) {
    const elapsed = (Date.now() - t0) / 1000;
    if (elapsed >= o.seconds) break;
    const progress = Math.max(step / o.steps, elapsed / o.seconds);
    // Cosine decay to 10 % of the peak, after a short warm-up.
    const warm = Math.min(1, (step + 1) / 50);
    const lr = o.lr * warm * (0.1 + 0.45 * (1 + Math.cos(Math.PI * Math.min(1, progress))));
    const examples = Array.from({ length: o.batch }, (_, b) => pretrainExample(task, rng.fork(step, b)));
    const r = crossEntropyStep(model, examples, lr, o.weightDecay);
    tokens += r.tokens;
    ema = Number.isNaN(ema) ? r.loss : 0.98 * ema + 0.02 * r.loss;
    if (o.onProgress && (step % (o.every ?? 50) === 0 || step === o.steps - 1)) {
      const el = (Date.now() - t0) / 1000;
      o.onProgress({ step, loss: ema, tokensPerSecond: tokens / Math.max(1e-3, el), elapsed: el, done: Math.max((step + 1) / o.steps, el / o.seconds) });
    }
  }
  return { steps: step, seconds: (Date.now() - t0) / 1000, finalLoss: ema };
}

/** Held-out problems behind a shipped model's recorded accuracy (the zoo test re-measures on the same ones). */
export const ZOO_EVAL_COUNT = 500;

/** Held-out accuracy of greedy answers in the solo format (agent 0's turn marker). */
export function heldOutAccuracy(model: Transformer, task: LlmTask, count: number, batch = 64): { accuracy: number; examples: { prompt: string; answer: string; correct: boolean }[] } {
  let correct = 0;
  const examples: { prompt: string; answer: string; correct: boolean }[] = [];
  for (let start = 0; start < count; start += batch) {
    const problems = Array.from({ length: Math.min(batch, count - start) }, (_, i) => task.generate('heldout', start + i));
    const out = model.generate(problems.map((p) => soloPromptTokens(p)), { maxNew: task.maxAnswerChars + 1, temperature: 0, topK: 1, seed: 0, stream: 0, stop: EOS });
    problems.forEach((p, i) => {
      const text = tokenizer.decode(out.tokens[i]!, { skipSpecial: true });
      const ok = task.verify(p, text).correct;
      if (ok) correct++;
      if (examples.length < 8) examples.push({ prompt: p.prompt, answer: text, correct: ok });
    });
  }
  return { accuracy: correct / count, examples };
}
