/**
 * "Do trust-region violations grow like √δ?" — the fraction of visited states whose KL exceeds δ,
 * against δ, on log–log axes (SAT.md §10 claim 5): one mark per (source, δ) — this run's agent
 * steps averaged per δ, sweep points as given — the fitted power law v ≈ c·δ^p (solid) and a √δ
 * reference line of slope ½ through the points' centre (dotted).
 *
 * Not here: the aggregation and fit (series.ts `aggregateViolation`, `violationFit`, stats.fitPowerLaw)
 * or running sweeps (the session runs them and passes the points).
 */
import { CartesianGrid, ComposedChart, Legend, Line, Scatter, Tooltip, XAxis, YAxis } from 'recharts';
import { sci, short } from '../format';
import { GRID, INK, MUTED_INK, teamSeries } from '../theme';
import { ChartFrame, DEFAULT_HEIGHT } from './ChartFrame';
import { pct } from './fmt';
import { aggregateViolation, decadeTicks, sqrtReference, violationFit, type ViolationPoint } from './series';

export interface ViolationChartProps {
  /** Points from this run (series.violationPointsFromStages) and sweeps (series.violationPointsFromSweep). */
  readonly points: readonly ViolationPoint[];
  readonly width?: number;
  readonly height?: number;
}

function VTooltip({ active, payload }: { active?: boolean; payload?: readonly { payload?: unknown }[] }) {
  const p = payload?.[0]?.payload as (ViolationPoint & { x?: number }) | undefined;
  if (!active || !p || p.source === undefined) return null;
  return (
    <div className="chart-tip">
      <div className="chart-tip-title">{p.source}</div>
      <div>δ = {sci(p.delta)}</div>
      <div>violation rate {pct(p.rate, 2)}</div>
      {p.weight !== undefined && p.weight > 1 && <div className="muted">mean of {p.weight} agent steps</div>}
    </div>
  );
}

export function ViolationChart({ points, width, height = DEFAULT_HEIGHT }: ViolationChartProps) {
  const agg = aggregateViolation(points);
  const positive = agg.filter((p) => p.rate > 0);
  const zeros = agg.length - positive.length;
  const fit = violationFit(points);
  const ref = sqrtReference(points);
  const sources = [...new Set(positive.map((p) => p.source))];
  const deltas = new Set(agg.map((p) => p.delta));
  const xs = [...positive.map((p) => p.delta), ...(ref ? ref.map((r) => r[0]) : [])];
  const ys = [...positive.map((p) => p.rate), ...(ref ? ref.map((r) => r[1]) : []), ...(fit ? fit.line.map((r) => r[1]) : [])];
  const xScale = positive.length > 0 ? decadeTicks(Math.min(...xs), Math.max(...xs)) : null;
  const yScale = positive.length > 0 ? decadeTicks(Math.min(...ys), Math.max(...ys)) : null;
  return (
    <ChartFrame
      testid="chart-violation"
      title="Do trust-region violations grow like √δ?"
      points={positive.length}
      width={width}
      empty={
        agg.length > 0 ? (
          <>No visited state went past δ yet ({agg.length} δ value{agg.length > 1 ? 's' : ''}, every rate 0): nothing to draw on a log scale.</>
        ) : (
          <>Step an agent to see its violation rate; run a δ sweep to see the exponent.</>
        )
      }
      readout={
        <>
          {fit ? (
            <span>
              fit v ≈ {short(fit.c)}·δ<sup>{short(fit.p)}</sup>, r² = {short(fit.r2)} over {fit.used} points
            </span>
          ) : (
            <span className="muted">
              {deltas.size < 2 ? 'one δ only: run a sweep (the delta-sweep preset) to fit the exponent' : 'fewer than two δ with a rate > 0: no fit'}
            </span>
          )}
          {zeros > 0 && <span className="muted">{zeros} point{zeros > 1 ? 's' : ''} at rate 0 not drawn</span>}
        </>
      }
      howTo={
        <>
          Each mark is the share of visited states whose KL went past the radius δ, at that δ (both axes logarithmic). The solid
          line is the least-squares fit v ≈ c·δ^p; the dotted one has slope ½, the √δ law the paper reports (SAT.md §10, claim 5).
          Healthy with backtracking on: rates near 0. With the monitor watching but not enforcing (delta-sweep), a fitted p near
          0.5 reproduces the paper.
        </>
      }
    >
      {(w) => (
        <ComposedChart width={w} height={height} margin={{ top: 8, right: 16, bottom: 4, left: 4 }}>
          <CartesianGrid stroke={GRID} />
          <XAxis dataKey="delta" type="number" scale="log" domain={xScale!.domain} ticks={xScale!.ticks} allowDataOverflow tickFormatter={(v: number) => sci(v)} stroke={MUTED_INK} fontSize={12} name="δ" />
          <YAxis dataKey="rate" type="number" scale="log" domain={yScale!.domain} ticks={yScale!.ticks} allowDataOverflow tickFormatter={(v: number) => sci(v)} width={52} stroke={MUTED_INK} fontSize={12} name="violation rate" />
          <Tooltip content={<VTooltip />} />
          <Legend verticalAlign="top" height={22} iconSize={10} wrapperStyle={{ fontSize: 12 }} />
          {sources.map((src, k) => (
            <Scatter key={src} name={src} data={positive.filter((p) => p.source === src)} dataKey="rate" fill={teamSeries(k).stroke} isAnimationActive={false} />
          ))}
          {fit && <Line name={`fit p = ${short(fit.p)}`} data={fit.line.map(([delta, rate]) => ({ delta, rate }))} dataKey="rate" stroke={INK} strokeWidth={1.5} dot={false} isAnimationActive={false} />}
          {ref && <Line name="√δ reference" data={ref.map(([delta, rate]) => ({ delta, rate }))} dataKey="rate" stroke={MUTED_INK} strokeDasharray="2 3" dot={false} isAnimationActive={false} />}
        </ComposedChart>
      )}
    </ChartFrame>
  );
}
