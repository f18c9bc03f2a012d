/**
 * Pretraining text for the language-model agents, generated from a task's train split in exactly
 * the context format the protocols use at RL time (protocols.ts), so a pretrained model already
 * knows where a message starts and ends:
 *
 *   solo   <bos> prompt <aj> answer <eos>                                   (independent, vote, router solvers)
 *   chain  <bos> prompt <a0> m0 <sep> … <a(t−1)> m(t−1) <sep> <at> answer <eos>   (agent t of a chain)
 *
 * In solo examples j is drawn uniformly from the turn markers so any agent slot works. In chain
 * examples t ∈ 1..n−1 earlier messages come first, each the right answer half of the time and
 * another problem's answer otherwise, so copying a teammate blindly is not what pretraining
 * teaches. The loss covers the answer and <eos> only.
 *
 * Not here: the training loop (src/train) or the tokenizer (src/model/tokenizer.ts).
 */
import type { Rng } from '../../core/rng';
import { BOS, EOS, SEP, tokenizer, AGENT_TOKENS } from '../../model/tokenizer';
import type { LlmTask, Problem } from './types';

export interface PretrainExample {
  readonly tokens: Int32Array;
  /** Index of the first token the loss covers (the answer's first token). */
  readonly lossFrom: number;
}

/** Fraction of examples in the chain format. */
export const CHAIN_FRACTION = 0.25;

/** One pretraining example from the task's train split. */
export function pretrainExample(task: LlmTask, rng: Rng, nAgents = AGENT_TOKENS.length): PretrainExample {
  const p = task.generate('train', rng.int(1 << 24));
  const ids: number[] = [BOS, ...tokenizer.encode(p.prompt)];
  let j = rng.int(nAgents);
  if (nAgents > 1 && rng.uniform() < CHAIN_FRACTION) {
    j = 1 + rng.int(nAgents - 1); // agent j speaks after agents 0..j−1
    for (let i = 0; i < j; i++) {
      const earlier = rng.uniform() < 0.5 ? p.answer : task.generate('train', rng.int(1 << 24)).answer;
      ids.push(AGENT_TOKENS[i]!, ...tokenizer.encode(earlier), SEP);
    }
  }
  ids.push(AGENT_TOKENS[j]!);
  const lossFrom = ids.length;
  ids.push(...tokenizer.encode(p.answer), EOS);
  return { tokens: Int32Array.from(ids), lossFrom };
}

/** The solo context an agent sees for a problem: <bos> prompt <a_agent>. */
export function soloPromptTokens(p: Problem, agent = 0): Int32Array {
  return Int32Array.from([BOS, ...tokenizer.encode(p.prompt), AGENT_TOKENS[agent]!]);
}
