/**
 * Capped inflating of raw deflate data, shared by the two readers a person hands compressed bytes
 * to: share links (share.ts) and experiment files (expCodec.ts). fflate's streaming Inflate is fed
 * input a step at a time and its output counted as it comes, so data that inflates past `cap` (a
 * zip bomb) is given up as soon as the cap is passed, at most one step's output later.
 *
 * With a `ratio` limit the output is also held to `ratio.times` × the input fed so far plus
 * `ratio.slack`, checked after every step: a bomb (zeros inflate about 1,000-fold) is given up after
 * a few kilobytes of its input, long before it reaches a cap set by the whole file's length, while
 * data that inflates less than `times`-fold all through is read as before.
 *
 * Steps: the first is small and each next one twice the last while the data inflates little, up to
 * `slice` bytes (each push costs fflate a copy of its window, so a real file wants few); where it
 * inflates a lot the step shrinks so that one push yields about STEP_OUTPUT bytes — a bomb's pushes
 * stay small, and a limit is noticed within one of them.
 *
 * Not here: what the callers tell the user (each maps the outcome to its own message), gzip's
 * header and trailer (expCodec.ts).
 */
import { Inflate } from 'fflate';

/** Output held to `times` × the input fed so far + `slack` bytes. */
export interface RatioLimit {
  readonly times: number;
  readonly slack: number;
}

export type InflateResult =
  | { readonly ok: true; readonly bytes: Uint8Array }
  /** 'too-large': past the cap; 'eof': the stream needs more input; 'damaged': not valid deflate (fflate's reason). */
  | { readonly ok: false; readonly why: 'too-large' | 'eof' | 'damaged'; readonly detail: string }
  /** Past the ratio limit: the first `input` bytes inflated to more than `output` bytes. */
  | { readonly ok: false; readonly why: 'ratio'; readonly detail: string; readonly input: number; readonly output: number };

class TooLarge {}
class PastRatio {}

/** Output one push aims at when the data inflates many times (the step shrinks to keep to it). */
const STEP_OUTPUT = 1 << 20;
/** Smallest step, in input bytes. */
const MIN_STEP = 256;
/** First step, in input bytes (then doubled while the data inflates little). */
const FIRST_STEP = 1024;

/** Inflates `data` (raw deflate); never throws. Bytes after the stream's final block are ignored. */
export function inflateCapped(data: Uint8Array, cap: number, slice: number, ratio?: RatioLimit): InflateResult {
  const parts: Uint8Array[] = [];
  let total = 0;
  let fed = 0;
  const inflater = new Inflate((chunk) => {
    total += chunk.length;
    if (total > cap) throw new TooLarge();
    if (ratio && total > ratio.times * fed + ratio.slack) throw new PastRatio();
    parts.push(chunk);
  });
  try {
    if (data.length === 0) inflater.push(data, true);
    let step = Math.min(slice, FIRST_STEP);
    while (fed < data.length) {
      const before = total;
      const start = fed;
      fed = Math.min(data.length, start + step);
      inflater.push(data.subarray(start, fed), fed >= data.length);
      const r = (total - before) / (fed - start);
      step = Math.max(MIN_STEP, Math.min(slice, 2 * step, Math.floor(STEP_OUTPUT / Math.max(r, 1))));
    }
  } catch (e) {
    if (e instanceof TooLarge) return { ok: false, why: 'too-large', detail: `more than ${cap} bytes` };
    if (e instanceof PastRatio) return { ok: false, why: 'ratio', detail: `${fed} bytes inflate to more than ${total}`, input: fed, output: total };
    const eof = (e as { code?: number }).code === 0; // fflate's FlateErrorCode.UnexpectedEOF
    return { ok: false, why: eof ? 'eof' : 'damaged', detail: e instanceof Error ? e.message : String(e) };
  }
  const bytes = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    bytes.set(p, o);
    o += p.length;
  }
  return { ok: true, bytes };
}
