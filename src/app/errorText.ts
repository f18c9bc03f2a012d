/**
 * The banner's words for a failure: a SatError's own message, anything else said plainly with a
 * request to report it, each followed by what was kept. Not here: which errors are caught (the
 * callers) or the errors themselves (src/core/errors.ts).
 */
import { SatError } from '../core/errors';

/** A message a person can act on, for any failure. */
export function describeError(e: unknown, kept: string): string {
  if (e instanceof SatError) return `${e.message} ${kept}`;
  const m = e instanceof Error ? e.message : String(e);
  return `Something went wrong: ${m}. ${kept} If it happens again, please report it with the share link.`;
}
