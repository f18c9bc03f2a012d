/**
 * Which part of a real model's reply the exported reward reads (the `rewardMode` setting): `strict`
 * grades the whole message, as the playground's own verifier does (and so its J); `extract` first
 * pulls the answer out of a longer reply — the last `\boxed{…}`, else the text after the last
 * `####`, else (arithmetic) the last number or (countdown) the last non-empty line — and grades
 * that strictly. The exported reward.py (rewardPy.ts) implements the same rules in Python, and
 * tests/bridge-reward.test.ts holds the two equal on many random replies in both modes.
 *
 * Not here: the verifiers themselves (src/tasks/llm), the playground's training (always strict).
 */
import type { LlmTask, LlmTaskName, ProblemMeta } from '../tasks/llm/index';

export type RewardMode = 'strict' | 'extract';

/** Replies longer than this (UTF-16 units) are not searched: they are graded as they are (and fail the verifier's length check). */
export const MAX_EXTRACT_CHARS = 65_536;

const BOXED = '\\boxed{';
const HASHES = '####';
/** A number as a reply writes it: optional minus, thousands commas, a decimal part. ASCII digits only. */
const NUMBER = /-?[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?/g;

/** The content of the last `\boxed{…}` with balanced braces, or null. */
function lastBoxed(text: string): string | null {
  const at = text.lastIndexOf(BOXED);
  if (at < 0) return null;
  let depth = 1;
  for (let i = at + BOXED.length; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return text.slice(at + BOXED.length, i);
  }
  return null;
}

/** The last number in `region`, commas dropped and an all-zero decimal part dropped ("16.0" → "16"); null when there is none. */
function lastNumber(region: string): string | null {
  let last: string | null = null;
  for (const m of region.matchAll(NUMBER)) last = m[0];
  if (last === null) return null;
  let s = last.replace(/,/g, '');
  const dot = s.indexOf('.');
  if (dot >= 0 && /^0+$/.test(s.slice(dot + 1))) s = s.slice(0, dot);
  return s;
}

/** A countdown line without a final "." and a trailing "= N" (the reply restating the target). */
function bareExpression(line: string): string {
  let s = line.trim();
  if (s.endsWith('.')) s = s.slice(0, -1).trim();
  const eq = s.lastIndexOf('=');
  if (eq >= 0 && /^[ \t]*-?[0-9]+[ \t]*$/.test(s.slice(eq + 1))) s = s.slice(0, eq).trim();
  return s;
}

/**
 * The answer `mode` reads from a (marker-cleaned) reply for `task`: the reply itself in strict mode,
 * else the extracted part (file header). Never throws; a reply with nothing to extract is returned
 * as it is, for the verifier to grade.
 */
export function extractAnswer(task: LlmTaskName, text: string, mode: RewardMode): string {
  if (mode === 'strict' || typeof text !== 'string' || text.length > MAX_EXTRACT_CHARS) return text;
  const boxed = lastBoxed(text);
  const hashAt = boxed === null ? text.lastIndexOf(HASHES) : -1;
  const marked = boxed ?? (hashAt >= 0 ? text.slice(hashAt + HASHES.length) : null);
  if (task === 'arithmetic') return lastNumber(marked ?? text) ?? (marked ?? text);
  if (marked !== null) return bareExpression(marked);
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return lines.length > 0 ? bareExpression(lines[lines.length - 1]!) : text;
}

/** `task` with its verifier reading the answer `mode` extracts (strict: `task` itself). */
export function withRewardMode<M extends ProblemMeta>(task: LlmTask<M>, mode: RewardMode): LlmTask<M> {
  if (mode === 'strict') return task;
  return { ...task, verify: (p, text) => task.verify(p, extractAnswer(task.name as LlmTaskName, text, mode)) };
}
