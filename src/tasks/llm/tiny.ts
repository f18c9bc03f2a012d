/**
 * A language task small enough to enumerate (docs/certificate.md §13), to test the language
 * certificate against the truth: prompts a–d ask for the next letter (d → a); five tokens (a–d and
 * end), messages of at most two, so every episode of a small team can be listed and J computed
 * exactly (src/sat/env/lm.ts `ExactLmEnv`). Reward 1 for the letter, ½ for a message containing it.
 * `tinyTokenizer` folds a protocol context onto the same five ids (end stands for every marker).
 *
 * Not here: a task people would train on (arithmetic.ts, countdown.ts), the enumeration itself.
 */
import type { TextTokenizer } from '../../model/tokenizer';
import { splitSpecial } from './protocols';
import type { LlmTask, Problem, Split, Verdict } from './types';

/** The letters a message may contain; the end token is id TINY_LETTERS.length. */
export const TINY_LETTERS = 'abcd';
export const TINY_VOCAB = TINY_LETTERS.length + 1;
export const TINY_EOS = TINY_LETTERS.length;

export const tinyTokenizer: TextTokenizer = {
  vocabSize: TINY_VOCAB,
  eos: TINY_EOS,
  encodeContext(context: string): number[] {
    const ids = [TINY_EOS];
    for (const piece of splitSpecial(context)) {
      const marker = /^<a(\d)>$/.exec(piece);
      if (marker) ids.push(TINY_EOS, Number(marker[1]) % TINY_LETTERS.length);
      else if (piece.startsWith('<')) ids.push(TINY_EOS);
      else for (const ch of piece) ids.push(ch.charCodeAt(0) % TINY_LETTERS.length);
    }
    return ids;
  },
  decodeMessage(ids: ArrayLike<number>): string {
    let s = '';
    for (let i = 0; i < ids.length; i++) s += ids[i]! < TINY_LETTERS.length ? TINY_LETTERS[ids[i]!] : '';
    return s;
  },
};

/** The four problems; `index` picks one (so a uniform index is a uniform prompt). */
function problem(split: Split, index: number): Problem {
  const k = ((index % 4) + 4) % 4;
  const prompt = TINY_LETTERS[k]!;
  const answer = TINY_LETTERS[(k + 1) % 4]!;
  return { id: `tiny:${split}:${index}`, split, index, key: prompt, prompt, answer, meta: { k } };
}

export const tinyTask: LlmTask = {
  name: 'tiny',
  title: 'Next letter (a vocabulary of 5 tokens, enumerable)',
  level: 1,
  seed: 0,
  heldoutFraction: 0.5,
  maxPromptChars: 1,
  maxAnswerChars: 2,
  rewardRange: [0, 1],
  generate: problem,
  verify(p: Problem, answerText: string): Verdict {
    if (answerText === p.answer) return { reward: 1, correct: true, parsed: answerText };
    if (answerText.includes(p.answer)) return { reward: 0.5, correct: false, parsed: answerText, reason: `contains ${p.answer} but is not exactly it` };
    return { reward: 0, correct: false, parsed: answerText, reason: `expected ${p.answer}` };
  },
};

/** The four prompts of the train split, each with probability ¼ (what `generate` draws from a uniform index). */
export const TINY_PROBLEMS: readonly Problem[] = [0, 1, 2, 3].map((k) => problem('train', k));
