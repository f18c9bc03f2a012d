/**
 * Capped inflating of raw deflate data, shared by the two readers a person hands compressed bytes
 * to: share links (share.ts) and experiment files (savefile.ts). fflate's streaming Inflate is fed
 * `slice` input bytes at a time and its output counted as it comes, so data that inflates past
 * `cap` (a zip bomb) is given up as soon as the cap is passed, at most one slice's output later.
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
    for (let i = 0; i < data.length; i += slice) inflater.push(data.subarray(i, i + slice), i + slice >= data.length);
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
