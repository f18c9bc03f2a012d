/**
 * Capped inflating of raw deflate data, shared by the two readers a person hands compressed bytes
 * to: share links (share.ts) and experiment files (savefile.ts). fflate's streaming Inflate is fed
 * input a step at a time and its output counted as it comes, so data that inflates past `cap` (a
 * zip bomb) is given up as soon as the cap is passed, at most one step's output later. A step is
 * `slice` bytes while the data inflates little (each push costs fflate a copy of its window, so a
 * real file wants few); where it inflates a lot, the step shrinks so that one push yields about
 * STEP_OUTPUT bytes — a bomb's pushes stay small, and the cap is noticed within one of them.
 *
 * Not here: what the callers tell the user (each maps the outcome to its own message), gzip's
 * header and trailer (savefile.ts).
 */
import { Inflate } from 'fflate';

export type InflateResult =
  | { readonly ok: true; readonly bytes: Uint8Array }
  /** 'too-large': past the cap; 'eof': the stream needs more input; 'damaged': not valid deflate (fflate's reason). */
  | { readonly ok: false; readonly why: 'too-large' | 'eof' | 'damaged'; readonly detail: string };

class TooLarge {}

/** Output one push aims at when the data inflates many times (the step shrinks to keep to it). */
const STEP_OUTPUT = 1 << 20;
/** Smallest step, in input bytes. */
const MIN_STEP = 256;

/** Inflates `data` (raw deflate); never throws. Bytes after the stream's final block are ignored. */
export function inflateCapped(data: Uint8Array, cap: number, slice: number): InflateResult {
  const parts: Uint8Array[] = [];
  let total = 0;
  const inflater = new Inflate((chunk) => {
    total += chunk.length;
    if (total > cap) throw new TooLarge();
    parts.push(chunk);
  });
  try {
    if (data.length === 0) inflater.push(data, true);
    let step = slice;
    for (let i = 0; i < data.length; ) {
      const before = total;
      const end = Math.min(data.length, i + step);
      inflater.push(data.subarray(i, end), end >= data.length);
      const ratio = (total - before) / (end - i);
      step = Math.max(MIN_STEP, Math.min(slice, Math.floor(STEP_OUTPUT / Math.max(ratio, 1))));
      i = end;
    }
  } catch (e) {
    if (e instanceof TooLarge) return { ok: false, why: 'too-large', detail: `more than ${cap} bytes` };
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
