/**
 * Number formats the charts need beyond ../format.ts: bound terms that may be tiny (1e−3) or huge
 * (−4.7e4, the vacuous γ form), ratios, percentages, log-axis ticks, counts in words ("3 of 8
 * stages") and the ✓ of a certified improvement. Built on ../format.ts so the typographic minus and
 * the em dash for missing values are the same everywhere.
 *
 * Not here: choosing what to show (components) or any computation of the shown numbers (series.ts).
 */
import { fixed3, sci } from '../format';
import { VERDICTS } from '../../sat/verdicts';

const MINUS = '\u2212';

/** Bound terms and ΔJ: 3 decimals in the everyday range, scientific beyond 1e4 or below 1e−3. */
export function term(x: number): string {
  if (!Number.isFinite(x)) return '—';
  const a = Math.abs(x);
  if (a !== 0 && (a >= 1e4 || a < 1e-3)) return (x < 0 ? MINUS : '') + sci(a);
  return fixed3(x);
}

/** A large count or magnitude with thousands separators: "47,213". */
export function grouped(x: number): string {
  if (!Number.isFinite(x)) return '—';
  return (x < 0 ? MINUS : '') + Math.round(Math.abs(x)).toLocaleString('en-US');
}

/** A fraction as a percentage: "2.5 %", "0 %". */
export function pct(x: number, digits = 1): string {
  if (!Number.isFinite(x)) return '—';
  return x === 0 ? '0 %' : `${(100 * x).toFixed(digits)} %`;
}

/** A tick on a log10 axis (value = log10 of the quantity): "1e−3". */
export function decade(log10: number): string {
  return sci(10 ** log10);
}

/** The mark of a certified improvement (bound > 0), the same in the charts, the table and the timeline. */
export const CHECK = VERDICTS.certified.glyph;

/** "k of n stages" / "1 of 1 stage". */
export function kOfN(k: number, n: number, noun = 'stage'): string {
  return `${k} of ${n} ${noun}${n === 1 ? '' : 's'}`;
}
