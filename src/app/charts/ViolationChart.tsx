/**
 * "Do trust-region violations grow like √δ?" — the fraction of visited states whose KL exceeds δ,
 * against δ, on log–log axes (docs/method.md §6.1, §9.2): this run's agent steps averaged per δ,
 * and — after **Sweep δ** — the δ sweep's points (src/studies/deltaSweep.ts: only δ changes, one step
 * with lr ∝ √δ, no backtracking), with its fitted power law v ≈ c·δ^p (solid), the bootstrap 95 %
 * interval of p as two thin lines through the fit's centre, a √δ reference line of slope ½ through
 * the points' centre (dotted), the scaling check (mean KL/δ per δ) in the readout and tooltips, and
 * the sweep's verdict on √δ by claim 5's rule with its shared mark and key (VerdictMark.tsx).
 * Without a sweep the fit, if any, is over this run's points. Its formula card (formulas.ts
 * `violation`) writes v for the agent step in view (agent/<j>/viol_rate at agent/<j>/delta); a term
 * clicked there enlarges this run's points.
 *
 * Not here: the aggregation and fits (series.ts `aggregateViolation`, `violationFit`,
 * `deltaSweepFit`, stats.fitPowerLaw) or running sweeps (sideRuns.ts runs them; the panel passes
 * the result).
 */
import { memo } from 'react';
import { CartesianGrid, ComposedChart, Legend, Line, Scatter, Tooltip, XAxis, YAxis } from 'recharts';
import type { DeltaSweepResult } from '../../studies/deltaSweep';
import { sci, short } from '../format';
import { GRID, INK, MUTED_INK, teamSeries } from '../theme';
import { ChartFrame, DEFAULT_HEIGHT } from './ChartFrame';
import { bindFormula, FORMULAS } from './formulas';
import type { AgentStepRecord } from '../../sat/stage';
import { pct } from './fmt';
import { ClaimVerdictChip, ClaimVerdictLegend } from './VerdictMark';
import { CLAIM_VERDICTS } from '../../sat/verdicts';
import { verdictOf } from '../../studies/claims';
import {
  aggregateViolation, decadeTicks, deltaSweepFit, klScaleCheck, sqrtReference, violationFit, violationPointsFromDeltaSweep,
  type SweepViolationPoint, type ViolationFit, type ViolationPoint,
} from './series';

export interface ViolationChartProps {
  /** Points from this run (series.violationPointsFromStages) and any others (series.violationPointsFromSweep). */
  readonly points: readonly ViolationPoint[];
  /** The δ sweep's result (sideRuns.sweepDeltas), if one was run. */
  readonly sweep?: DeltaSweepResult | null;
  /** The latest agent step, for the formula card (none without it). */
  readonly step?: AgentStepRecord | null;
  /** A language team: Sweep δ runs from where the team stands, in its workers (the help says so). */
  readonly language?: boolean;
  readonly width?: number;
  readonly height?: number;
}

function VTooltip({ active, payload }: { active?: boolean; payload?: readonly { payload?: unknown }[] }) {
  const p = payload?.[0]?.payload as (ViolationPoint & Partial<SweepViolationPoint>) | undefined;
  if (!active || !p || p.source === undefined) return null;
  return (
    <div className="chart-tip">
      <div className="chart-tip-title">{p.source}</div>
      <div>δ = {sci(p.delta)}</div>
      <div>violation rate {pct(p.rate, 2)}</div>
      {p.klOverDelta !== undefined && <div>mean KL/δ {short(p.klOverDelta)} (lr {short(p.lr ?? Number.NaN)})</div>}
      {p.seeds !== undefined && <div className="muted">{p.weight} visits over {p.seeds} seeds</div>}
      {p.seeds === undefined && p.weight !== undefined && p.weight > 1 && <div className="muted">mean of {p.weight} agent steps</div>}
    </div>
  );
}

/** This run's points when its formula card picked them: larger, ringed in ink. */
function BigPoint(p: { cx?: number; cy?: number; fill?: unknown }) {
  return <circle cx={p.cx} cy={p.cy} r={7} fill={typeof p.fill === 'string' ? p.fill : MUTED_INK} stroke={INK} strokeWidth={2} data-highlighted="points" />;
}

const asRows = (line: readonly (readonly [number, number])[]) => line.map(([delta, rate]) => ({ delta, rate }));

export const ViolationChart = memo(function ViolationChart({ points, sweep, step, language = false, width, height = DEFAULT_HEIGHT }: ViolationChartProps) {
  const formula = step ? bindFormula(FORMULAS.violation, step.metrics, step.agent) : null;
  const sweepPts = sweep ? violationPointsFromDeltaSweep(sweep) : [];
  const agg: ViolationPoint[] = [...aggregateViolation(points), ...sweepPts].sort((a, b) => a.delta - b.delta);
  const positive = agg.filter((p) => p.rate > 0);
  const zeros = agg.length - positive.length;
  const sweepFit = sweep ? deltaSweepFit(sweep) : null;
  const fit: ViolationFit | null = sweep ? sweepFit : violationFit(points);
  const ref = sweep ? sqrtReference(sweepPts) : sqrtReference(points);
  const check = sweep ? klScaleCheck(sweep) : null;
  const sources = [...new Set(positive.map((p) => p.source))];
  const deltas = new Set(agg.map((p) => p.delta));
  const lines = [...(ref ?? []), ...(fit ? fit.line : []), ...(sweepFit?.band ? [...sweepFit.band.lo, ...sweepFit.band.hi] : [])];
  const xs = [...positive.map((p) => p.delta), ...lines.map((r) => r[0])];
  const ys = [...positive.map((p) => p.rate), ...lines.map((r) => r[1])].filter((y) => y > 0);
  const xScale = positive.length > 0 ? decadeTicks(Math.min(...xs), Math.max(...xs)) : null;
  const yScale = positive.length > 0 ? decadeTicks(Math.min(...ys), Math.max(...ys)) : null;
  // The sweep's verdict on √δ by claim 5's rule (the Claims view): ½ inside p's interval and 0 outside.
  const sqrtVerdict = sweepFit?.ci ? verdictOf(sweepFit.ci, 'contains', 0.5, 0) : null;
  return (
    <ChartFrame
      testid="chart-violation"
      title="Do trust-region violations grow like √δ?"
      points={positive.length}
      width={width}
      formula={formula}
      legend={
        sqrtVerdict && (
          <span className="verdict-legend">
            <span className="muted">the verdict&apos;s marks (not the points&apos;):</span> <ClaimVerdictLegend />
          </span>
        )
      }
      empty={
        agg.length > 0 ? (
          <>No visited state went past δ yet ({agg.length} δ value{agg.length > 1 ? 's' : ''}, every rate 0): nothing to draw on a log scale.</>
        ) : (
          <>Step an agent to see its violation rate; press Sweep δ to see the exponent.</>
        )
      }
      readout={
        <>
          {fit ? (
            <span data-testid="violation-fit">
              fit v ≈ {short(fit.c)}·δ<sup>{short(fit.p)}</sup>
              {sweepFit?.ci && (
                <>
                  , p 95 % CI [{short(sweepFit.ci.lo)}, {short(sweepFit.ci.hi)}] (bootstrap over {sweep!.protocol.seeds.length} seeds)
                </>
              )}
              , r² = {short(fit.r2)} over {fit.used} points
            </span>
          ) : (
            <span className="muted">
              {sweep ? 'the sweep: fewer than two δ with a rate > 0, no fit' : deltas.size < 2 ? 'one δ only: press Sweep δ to fit the exponent' : 'fewer than two δ with a rate > 0: no fit'}
            </span>
          )}
          {sqrtVerdict && (
            <span data-testid="sweep-verdict" title={`Claim 5's rule: holds when p's 95 % interval contains ½ and excludes 0, does not hold when it excludes ½, else not established (${CLAIM_VERDICTS[sqrtVerdict].legend}).`}>
              grows like √δ (p = ½)? <ClaimVerdictChip verdict={sqrtVerdict} />
            </span>
          )}
          {check && (
            <span data-testid="violation-kl-check">
              check: mean KL/δ {short(check.min)}–{short(check.max)} across δ (max/min {short(check.spread)}; 1 = step scaled exactly with δ)
            </span>
          )}
          {sweep && !sweep.complete && <span className="muted">sweep cancelled: {sweep.protocol.seeds.length} seed{sweep.protocol.seeds.length > 1 ? 's' : ''} finished</span>}
          {zeros > 0 && <span className="muted">{zeros} point{zeros > 1 ? 's' : ''} at rate 0 not drawn</span>}
        </>
      }
      howTo={
        <>
          Each mark is the share of visited states whose KL went past the radius δ, at that δ (both axes logarithmic).{' '}
          {language ? (
            <>
              Sweep δ runs one stage from where your team stands at seven radii over three seeds, in the agents&apos; workers, with only δ changing —
              one step per update with lr ∝ √δ from these settings&apos; δ and lr, no backtracking, fixed β — then puts the team back as it was.
            </>
          ) : (
            <>
              Sweep δ runs the delta-sweep preset (its open settings, if that preset is open; else its relay of 4 agents with 264 local states) at
              seven radii with only δ changing — same tables and seeds, one Adam step per update with lr ∝ √δ, no backtracking, fixed β.
            </>
          )}{' '}
          The step is scaled to the radius: mean KL/δ should stay flat (the check). The solid line is the
          least-squares fit v ≈ c·δ^p, the thin ones its 95 % interval; the dotted one has slope ½, the √δ law the paper reports.
          The verdict above the plot is claim 5&apos;s (the Claims view), its mark explained under it: √δ holds when p&apos;s interval contains ½ and excludes 0.
          On the delta-sweep preset we measure p ≈ 0, not ½ (docs/method.md §9.2). With backtracking on, rates stay near 0.
        </>
      }
    >
      {(w, picked) => (
        <ComposedChart width={w} height={height} margin={{ top: 8, right: 16, bottom: 4, left: 4 }}>
          <CartesianGrid stroke={GRID} />
          <XAxis dataKey="delta" type="number" scale="log" domain={xScale!.domain} ticks={xScale!.ticks} allowDataOverflow tickFormatter={(v: number) => sci(v)} stroke={MUTED_INK} fontSize={13} name="δ" />
          <YAxis dataKey="rate" type="number" scale="log" domain={yScale!.domain} ticks={yScale!.ticks} allowDataOverflow tickFormatter={(v: number) => sci(v)} width={52} stroke={MUTED_INK} fontSize={13} name="violation rate" />
          <Tooltip content={<VTooltip />} />
          {/* Its height measured, not fixed (a sweep adds entries and a second line), and room below it for the top y label. */}
          <Legend verticalAlign="top" iconSize={10} wrapperStyle={{ fontSize: 13, paddingBottom: 10 }} />
          {sources.map((src, k) => (
            <Scatter
              key={src}
              name={src}
              data={positive.filter((p) => p.source === src)}
              dataKey="rate"
              fill={teamSeries(k).stroke}
              {...(picked === 'points' && src === 'this run' ? { shape: BigPoint } : {})}
              isAnimationActive={false}
            />
          ))}
          {fit && <Line name={`fit p = ${short(fit.p)}`} data={asRows(fit.line)} dataKey="rate" stroke={INK} strokeWidth={1.5} dot={false} isAnimationActive={false} />}
          {sweepFit?.band && (
            <Line name="95 % CI of p" data={asRows(sweepFit.band.lo)} dataKey="rate" stroke={INK} strokeWidth={0.75} strokeOpacity={0.6} dot={false} isAnimationActive={false} />
          )}
          {sweepFit?.band && (
            <Line name="95 % CI of p (upper)" legendType="none" data={asRows(sweepFit.band.hi)} dataKey="rate" stroke={INK} strokeWidth={0.75} strokeOpacity={0.6} dot={false} isAnimationActive={false} />
          )}
          {ref && <Line name="√δ reference" data={asRows(ref)} dataKey="rate" stroke={MUTED_INK} strokeDasharray="2 3" dot={false} isAnimationActive={false} />}
        </ComposedChart>
      )}
    </ChartFrame>
  );
});
