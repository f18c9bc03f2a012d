/**
 * The scripted stand-in model of the chain parity tests (tests/bridge-chain.test.ts,
 * tests/verl-team.test.ts): the replies a model might write for a problem, and the hash that picks
 * one of them from a context, in TypeScript (src/tasks/llm/types.ts hashString) and in Python.
 */
import type { Rng } from '../../src/core/rng';
import type { Problem } from '../../src/tasks/llm/index';

/** src/tasks/llm/types.ts hashString in Python: FNV-1a over UTF-16 code units, then the murmur3 finaliser. */
export const FNV_PY = String.raw`def fnv(s):
    b = s.encode("utf-16-le", "surrogatepass")
    h = 0x811C9DC5
    for i in range(0, len(b), 2):
        h ^= b[i] | (b[i + 1] << 8)
        h = (h * 0x01000193) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h
`;

/** Replies a model might write for `p`: right, wrong, worded, boxed, with markers, empty, odd Unicode. */
export function candidates(p: Problem, rng: Rng): string[] {
  const nums = (p.meta.numbers as number[] | undefined)?.map(String) ?? [String(p.meta.a), String(p.meta.b)];
  const wrong = () => String(rng.int(40) - 10);
  return [p.answer, p.answer, ` ${p.answer}`, `The answer is ${p.answer}.`, `\\boxed{${p.answer}}`, `#### ${p.answer}`, wrong(), wrong(), `${nums.join('+')}`, `${nums[0]}-${nums[1] ?? nums[0]}`, `${p.answer}<sep>x`, `<a1>${p.answer}`, `${wrong()}<a2>`, '', '  ', 'é𝟘 ok', `${p.answer}\n${wrong()}`];
}
