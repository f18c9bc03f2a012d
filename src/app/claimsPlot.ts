/**
 * How a claim's plot is drawn, the same by the page's Claims view and the report's SVGs
 * (src/cli/claimsReport.ts): the series colours and the axes' round ticks (d3-scale's, the scale
 * recharts draws with). Pure: no DOM, so the Node report writer imports it too.
 */
import { scaleLinear } from 'd3-scale';
import type { ClaimPlot } from '../studies/claims';

/** Series i of a plot is drawn in colour i (Okabe–Ito, distinguishable with colour blindness). */
export const CLAIM_COLOURS: readonly string[] = ['#0072B2', '#D55E00', '#009E73', '#CC79A7'];

/** About `count` round ticks (1, 2 or 5 × 10^k apart) covering [lo, hi]: the first ≤ lo, the last ≥ hi. */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(Number.isFinite(lo) && Number.isFinite(hi))) throw new RangeError(`niceTicks: [${lo}, ${hi}] is not finite`);
  if (hi - lo < 1e-12 * Math.max(1, Math.abs(lo))) {
    lo -= 0.5;
    hi += 0.5;
  }
  return scaleLinear().domain([lo, hi]).nice(count).ticks(count);
}

/** The y ticks of a plot, covering every interval and reference line. */
export function plotYTicks(plot: ClaimPlot): number[] {
  const ys = [...plot.series.flatMap((s) => s.points.flatMap((p) => [p.lo, p.hi])), ...plot.refs.map((r) => r.y)];
  const [lo, hi] = [Math.min(...ys), Math.max(...ys)];
  // 3 % headroom, so a mark on the last tick is not drawn on the frame.
  const room = 0.03 * (hi - lo);
  return niceTicks(lo - room, hi + room);
}
