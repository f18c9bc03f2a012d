/**
 * Number formatting for the page, at the precision each quantity deserves (no false digits): J
 * and its bounds to 3 decimals, KL in scientific notation, signed changes with an explicit sign.
 * Uses the typographic minus (U+2212) so columns of numbers line up; `NaN`/missing values show as
 * an em dash.
 *
 * Not here: choosing which metric to show (components) or parsing user input (config.ts).
 */

const MINUS = '\u2212';
const MISSING = '—';

function withMinus(s: string): string {
  return s.replace(/-/g, MINUS);
}

/** J-like quantity: "−3.444", "0.219". Rounds −0.0004 to "0.000", not "−0.000". */
export function fixed3(x: number): string {
  if (!Number.isFinite(x)) return MISSING;
  const s = x.toFixed(3);
  return Number(s) === 0 ? '0.000' : withMinus(s);
}

/** A change: "+0.062", "−1.176", "0.000". */
export function signed3(x: number): string {
  if (!Number.isFinite(x)) return MISSING;
  const s = fixed3(x);
  return x > 0 && s !== '0.000' ? `+${s}` : s;
}

/** KL and other small positive quantities: "1.9e−2"; exactly zero shows as "0". */
export function sci(x: number): string {
  if (!Number.isFinite(x)) return MISSING;
  if (x === 0) return '0';
  return withMinus(x.toExponential(1)).replace('e+', 'e');
}

/** A setting as the user would write it, to 3 significant digits: "0.02", "0.5", "1e−7". */
export function short(x: number): string {
  if (!Number.isFinite(x)) return MISSING;
  return withMinus(String(Number(x.toPrecision(3))));
}

/** Integer counts. */
export function count(x: number): string {
  return Number.isFinite(x) ? String(Math.round(x)) : MISSING;
}

/**
 * A backend line's short form — what runs where, before its " — why" (e.g. "cpu (TypeScript)" of
 * "cpu (TypeScript) — the only WebGPU adapter is a software one…"): the page says the short form
 * once and keeps the whole sentence for the hover.
 */
export function backendShort(line: string): string {
  return line.split(' — ')[0]!.trim();
}

/**
 * Axis tick labels at the fewest decimals (0–6) that write every tick exactly: ticks 0, 2, 4 read
 * "0", "2", "4"; 0.25, 0.5 read "0.25", "0.50". Distinct ticks get distinct labels.
 */
export function tickLabels(ticks: readonly number[]): string[] {
  const size = Math.max(1e-300, ...ticks.map((t) => Math.abs(t)));
  let d = 0;
  while (d < 6 && ticks.some((t) => Math.abs(Number(t.toFixed(d)) - t) > 1e-9 * size)) d++;
  return ticks.map((t) => {
    const s = t.toFixed(d);
    return Number(s) === 0 ? (0).toFixed(d) : withMinus(s);
  });
}
