/**
 * "How far did agent j move?" — the per-state KL κ(s) = KL(π_new(·|s) ‖ π_cur(·|s)) of one agent
 * step, one count per visited state, on log-spaced bins (docs/method.md §6.1), with the
 * trust-region radius δ (solid) and the monitor's (1−α)-quantile q (dashed). Bars past δ are drawn
 * solid, the rest tinted. Its formula card (formulas.ts `kl`) writes the check with the step's
 * agent/<j>/kl_q, delta, viol_rate, kl_mean and kl_max; a term clicked there thickens its line or
 * outlines its bars here.
 *
 * Not here: binning (series.ts `klRows`), the monitor itself (src/sat/monitor.ts).
 */
import { memo } from 'react';
import { Bar, BarChart, CartesianGrid, Rectangle, ReferenceLine, Tooltip, XAxis, YAxis, type BarShapeProps } from 'recharts';
import type { AgentStepRecord } from '../../sat/stage';
import { count, sci } from '../format';
import { agentColor, agentTint, GRID, INK, MUTED_INK } from '../theme';
import { ChartFrame, DEFAULT_HEIGHT } from './ChartFrame';
import { bindFormula, FORMULAS } from './formulas';
import { decade, pct } from './fmt';
import { klRows, type BinRow } from './series';

export interface KlChartProps {
  readonly step: AgentStepRecord | null;
  /** α of the monitor (for the label of q). */
  readonly alpha?: number;
  /** Bins per factor of 10. */
  readonly perDecade?: number;
  readonly width?: number;
  readonly height?: number;
}

function KlTooltip({ active, payload }: { active?: boolean; payload?: readonly { payload?: unknown }[] }) {
  const row = payload?.[0]?.payload as BinRow | undefined;
  if (!active || !row) return null;
  return (
    <div className="chart-tip">
      <div className="chart-tip-title">
        κ in [{decade(row.lo)}, {decade(row.hi)})
      </div>
      <div>{row.count} state visits</div>
    </div>
  );
}

export const KlChart = memo(function KlChart({ step, alpha, perDecade = 4, width, height = DEFAULT_HEIGHT }: KlChartProps) {
  const h = step ? klRows(step, perDecade) : null;
  const n = h ? h.n : 0;
  const agent = step ? step.agent : 0;
  const lo = h ? h.rows[0]!.lo : 0;
  const hi = h ? h.rows[h.rows.length - 1]!.hi : 1;
  const ticks: number[] = [];
  for (let d = Math.ceil(lo); d <= hi; d++) ticks.push(d);
  const qLabel = alpha !== undefined ? `${Math.round((1 - alpha) * 1000) / 10} % quantile` : 'quantile q';
  const formula = step ? bindFormula(FORMULAS.kl, step.metrics, step.agent) : null;
  const m = (key: string) => ({ 'data-metric': `agent/${agent}/${key}`, 'data-value': step?.metrics[`agent/${agent}/${key}`] as number });
  const shapeFor = (picked: string | null) =>
    function KlBar(p: BarShapeProps) {
      const row = p.payload as BinRow & { over: boolean };
      const bar = <Rectangle {...p} fill={row.over ? agentColor(agent) : agentTint(agent, 0.45)} stroke={row.over ? INK : 'none'} strokeWidth={row.over ? 1 : 0} />;
      const lit = row.count > 0 && (picked === 'bars' || (picked === 'over' && row.over));
      return lit ? (
        <g data-highlighted={picked}>
          <Rectangle {...p} fill="none" stroke={INK} strokeWidth={2.5} />
          {bar}
        </g>
      ) : (
        bar
      );
    };
  return (
    <ChartFrame
      testid="chart-kl"
      title={`How far did ${step ? `agent ${step.agent}` : 'the agent'} move?`}
      points={n > 0 && h ? h.rows.length : 0}
      width={width}
      empty={<>Step an agent to see how far its policy moved at each state.</>}
      formula={formula}
      readout={
        step && (
          <>
            <span>
              q = <b className="num" {...m('kl_q')}>{sci(step.check.q)}</b> {step.check.ok ? '≤' : '>'} δ = <b className="num" {...m('delta')}>{sci(step.delta)}</b>
            </span>
            <span>
              <span {...m('viol_rate')}>{pct(step.check.violRate)}</span> of visits past δ
            </span>
            <span>
              mean <span {...m('kl_mean')}>{sci(step.check.mean)}</span>, max <span {...m('kl_max')}>{sci(step.check.max)}</span>
            </span>
            <span className={step.accepted ? '' : 'chart-warn'}>
              {step.accepted ? 'accepted' : 'rejected (kept π_cur)'}
              {step.backtracks > 0 ? ` after ${count(step.backtracks)} backtrack${step.backtracks > 1 ? 's' : ''}` : ''}
            </span>
          </>
        )
      }
      howTo={
        <>
          One count per state the agent visited, at the KL between its new and old action distribution there (log scale; κ = 0
          counts in the leftmost bin). The solid line is the radius δ, the dashed one the monitor&apos;s {qLabel}: the update is
          kept only when q ≤ δ, otherwise it is undone and retried with a larger β (docs/method.md §6.1–§6.2). Healthy: the mass sits left of δ,
          the dashed line just inside it — the agent used its budget without leaving the trust region.
        </>
      }
    >
      {(w, picked) =>
        h && (
          <BarChart width={w} height={height} data={h.rows} margin={{ top: 16, right: 16, bottom: 4, left: 4 }} barCategoryGap={1}>
            <CartesianGrid stroke={GRID} vertical={false} />
            <XAxis dataKey="mid" type="number" domain={[lo, hi]} ticks={ticks} tickFormatter={decade} stroke={MUTED_INK} fontSize={13} tickLine={false} />
            <YAxis allowDecimals={false} width={40} stroke={MUTED_INK} fontSize={13} />
            <Tooltip content={<KlTooltip />} cursor={{ fill: 'rgba(0,0,0,0.04)' }} />
            <Bar dataKey="count" shape={shapeFor(picked)} isAnimationActive={false} />
            {Number.isFinite(h.logDelta) && <ReferenceLine x={h.logDelta} stroke={INK} strokeWidth={picked === 'delta' ? 4 : 1.5} label={{ value: 'δ', position: 'top', fill: INK, fontSize: 13 }} />}
            {Number.isFinite(h.logQ) && <ReferenceLine x={h.logQ} stroke={INK} strokeWidth={picked === 'q' ? 4 : 1} strokeDasharray="4 3" label={{ value: 'q', position: 'insideTopLeft', fill: MUTED_INK, fontSize: 13 }} />}
          </BarChart>
        )
      }
    </ChartFrame>
  );
});
