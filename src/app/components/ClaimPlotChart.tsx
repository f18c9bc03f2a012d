/**
 * One claim's plot drawn with recharts at a given size: each series' means joined (dashed for a
 * fitted or reference curve), its 95 % error bars, the reference lines, the shared colours and
 * round ticks of claimsPlot.ts. Pure: the plot, a width and a height in, no measuring and no
 * browser-only API, so the Claims view draws it at its measured width and any other caller at a
 * fixed one.
 *
 * Not here: the card around it or its width (ClaimsView.tsx), the data (src/studies/claims.ts).
 */
import { CartesianGrid, ComposedChart, ErrorBar, Legend, Line, ReferenceLine, Tooltip, XAxis, YAxis } from 'recharts';
import { CLAIM_COLOURS, niceTicks, plotYTicks } from '../claimsPlot';
import type { ClaimPlot } from '../../studies/claims';
import { GRID, MUTED_INK } from '../theme';

const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : String(x));
const tickText = (x: number) => (x !== 0 && Math.abs(x) < 1e-2 ? x.toExponential(0) : String(Number(x.toPrecision(4))));

export interface ClaimPlotChartProps {
  readonly plot: ClaimPlot;
  readonly width: number;
  readonly height: number;
  /** Hover tooltips (the page); off for a still picture. */
  readonly tooltip?: boolean;
}

/** A claim's plot (module comment). */
export function ClaimPlotChart({ plot, width, height, tooltip = true }: ClaimPlotChartProps) {
  const xs = plot.series.flatMap((s) => s.points.map((p) => p.x));
  const cats = plot.xCategories;
  const [xMin, xMax] = [Math.min(...xs), Math.max(...xs)];
  // A little room either side, so the first and last error bars are not cut by the frame.
  const pad = (xMax - xMin) * 0.03;
  const domain: [number, number] = cats ? [-0.5, cats.length - 0.5] : plot.xLog ? [xMin / 1.15, xMax * 1.15] : [xMin - pad, xMax + pad];
  const decades = plot.xLog
    ? Array.from({ length: Math.round(Math.log10(xMax) - Math.log10(xMin)) + 1 }, (_, k) => 10 ** (Math.round(Math.log10(xMin)) + k))
    : undefined;
  const xTicks = cats ? cats.map((_, i) => i) : plot.xLog ? decades : niceTicks(xMin, xMax, 6).filter((t) => t >= xMin && t <= xMax);
  const yTicks = plotYTicks(plot);
  return (
    <ComposedChart width={width} height={height} margin={{ top: 8, right: 20, bottom: 18, left: 8 }}>
      <CartesianGrid stroke={GRID} />
      <XAxis
        dataKey="x" type="number" scale={plot.xLog ? 'log' : 'linear'} domain={domain} allowDataOverflow
        ticks={xTicks} tickFormatter={(v: number) => (cats ? (cats[v] ?? '') : tickText(v))}
        stroke={MUTED_INK} fontSize={13}
        label={{ value: plot.xLabel, position: 'insideBottom', offset: -10, fontSize: 13, fill: MUTED_INK }}
      />
      <YAxis type="number" domain={[yTicks[0]!, yTicks.at(-1)!]} ticks={yTicks} allowDataOverflow tickFormatter={tickText} stroke={MUTED_INK} fontSize={13} width={56}
        label={{ value: plot.yLabel, angle: -90, position: 'insideLeft', fontSize: 13, fill: MUTED_INK, style: { textAnchor: 'middle' } }} />
      {tooltip && (
        <Tooltip formatter={(v: unknown) => (typeof v === 'number' ? f3(v) : String(v))} labelFormatter={(v: unknown) => (cats ? (cats[Number(v)] ?? String(v)) : `${plot.xLabel} ${String(v)}`)} />
      )}
      <Legend verticalAlign="top" height={24} iconSize={10} wrapperStyle={{ fontSize: 13 }} />
      {plot.refs.map((r) => (
        <ReferenceLine key={r.label} y={r.y} stroke={MUTED_INK} strokeDasharray="2 3" label={{ value: r.label, position: 'insideTopRight', fontSize: 13, fill: MUTED_INK }} />
      ))}
      {plot.series.map((s, i) => (
        <Line
          key={s.name} name={s.errorBars ? `${s.name} (mean ± 95 % CI)` : s.name}
          data={s.points.map((p) => ({ x: p.x, y: p.y, err: [p.y - p.lo, p.hi - p.y] }))}
          dataKey="y" stroke={CLAIM_COLOURS[i % CLAIM_COLOURS.length]} strokeWidth={1.6}
          strokeDasharray={s.errorBars ? undefined : '5 4'} strokeOpacity={cats ? 0 : 1}
          dot={s.errorBars ? { r: 3, fill: CLAIM_COLOURS[i % CLAIM_COLOURS.length] } : false} isAnimationActive={false}
        >
          {s.errorBars && <ErrorBar dataKey="err" width={5} strokeWidth={1.2} stroke={CLAIM_COLOURS[i % CLAIM_COLOURS.length]} direction="y" />}
        </Line>
      ))}
    </ComposedChart>
  );
}
