/**
 * "How hard did the trust region push back?" — per agent step, in run order: the KL penalty β each
 * agent carries out of the step (one line per agent, in its colour, log scale) and the step's
 * backtracks (bars in the agent's colour; hollow dot = the step was rejected). Backtracking and
 * adaptive β: docs/method.md §6.2–§6.4. Its formula card (formulas.ts `beta`) writes the rules with
 * the latest step's agent/<j>/beta, backtracks, kl_q and delta; a term clicked there thickens the β
 * lines or outlines the backtrack bars.
 *
 * Not here: the rows (series.ts `betaRows`) or the β schedule itself (src/sat/monitor.ts).
 */
import { memo } from 'react';
import { Bar, CartesianGrid, ComposedChart, Line, Rectangle, Tooltip, XAxis, YAxis, type BarShapeProps, type DotItemDotProps } from 'recharts';
import type { StageRecord } from '../../sat/stage';
import { count, sci } from '../format';
import { agentColor, agentTint, GRID, INK, MUTED_INK } from '../theme';
import { ChartFrame, DEFAULT_HEIGHT } from './ChartFrame';
import { bindFormula, FORMULAS } from './formulas';
import { allSteps, betaRows, type BetaRow, type PartialStage } from './series';

export interface BetaChartProps {
  readonly records: readonly StageRecord[];
  /** The running stage's steps so far. */
  readonly current?: PartialStage | null;
  readonly nAgents: number;
  readonly width?: number;
  readonly height?: number;
}

function BTooltip({ active, payload }: { active?: boolean; payload?: readonly { payload?: unknown }[] }) {
  const r = payload?.[0]?.payload as BetaRow | undefined;
  if (!active || !r) return null;
  return (
    <div className="chart-tip">
      <div className="chart-tip-title">
        stage {r.stage}, step {r.position + 1}: agent {r.agent}
      </div>
      <div>β = {sci(r.beta)}</div>
      <div>
        {count(r.backtracks)} backtrack{r.backtracks === 1 ? '' : 's'}
        {r.accepted ? '' : ', rejected'}
      </div>
    </div>
  );
}

export const BetaChart = memo(function BetaChart({ records, current, nAgents, width, height = DEFAULT_HEIGHT }: BetaChartProps) {
  const rows = betaRows(records, current);
  const logScale = rows.length > 0 && rows.every((r) => r.beta > 0 && Number.isFinite(r.beta));
  const totalBt = rows.reduce((s, r) => s + r.backtracks, 0);
  const rejected = rows.filter((r) => !r.accepted).length;
  const maxBt = Math.max(1, ...rows.map((r) => r.backtracks));
  const agents = Array.from({ length: nAgents }, (_, j) => j);
  const steps = allSteps(records, current);
  const latest = steps[steps.length - 1];
  const formula = latest ? bindFormula(FORMULAS.beta, latest.metrics, latest.agent) : null;
  const barShape = (picked: string | null) =>
    function BacktrackBar(p: BarShapeProps) {
      const r = p.payload as BetaRow;
      const lit = picked === 'backtracks' && r.backtracks > 0;
      const bar = <Rectangle {...p} fill={agentTint(r.agent, 0.55)} stroke={lit ? INK : agentColor(r.agent)} strokeWidth={lit ? 2.5 : 1} />;
      return lit ? <g data-highlighted="backtracks">{bar}</g> : bar;
    };
  const dotFor = (j: number) =>
    function BetaDot(p: DotItemDotProps) {
      const r = p.payload as BetaRow;
      if (p.cx === undefined || p.cy === undefined || r.agent !== j) return <g key={`b${j}-${p.index}`} />;
      return r.accepted ? (
        <circle key={`b${j}-${p.index}`} cx={p.cx} cy={p.cy} r={3} fill={agentColor(j)} />
      ) : (
        <circle key={`b${j}-${p.index}`} cx={p.cx} cy={p.cy} r={3.5} fill="#fff" stroke={agentColor(j)} strokeWidth={1.5} />
      );
    };
  return (
    <ChartFrame
      testid="chart-beta"
      title="How hard did the trust region push back?"
      points={rows.length}
      width={width}
      empty={<>Step an agent to see its KL penalty β and backtracks.</>}
      formula={formula}
      readout={
        <>
          <span>{rows.length} agent steps</span>
          <span>{count(totalBt)} backtracks</span>
          <span className={rejected > 0 ? 'chart-warn' : ''}>{count(rejected)} rejected</span>
        </>
      }
      howTo={
        <>
          Lines: each agent&apos;s KL penalty β after each of its updates (log scale). Bars: how many times the monitor undid a step
          that left the trust region and retried with β × 1.5 (docs/method.md §6.2); a hollow dot marks an update rejected after all
          tries. β falls (÷ 1.5) when an update stays well inside δ. Healthy: few bars, β settling rather than climbing every stage.
        </>
      }
    >
      {(w, picked) => (
        <ComposedChart width={w} height={height} data={rows} margin={{ top: 8, right: 8, bottom: 4, left: 4 }}>
          <CartesianGrid stroke={GRID} vertical={false} />
          <XAxis dataKey="i" type="number" domain={[0.5, rows.length + 0.5]} allowDecimals={false} tickLine={false} stroke={MUTED_INK} fontSize={13} />
          <YAxis yAxisId="beta" scale={logScale ? 'log' : 'auto'} domain={logScale ? ['auto', 'auto'] : [0, 'auto']} tickFormatter={(v: number) => sci(v)} width={52} stroke={MUTED_INK} fontSize={13} />
          <YAxis yAxisId="bt" orientation="right" allowDecimals={false} domain={[0, maxBt * 2]} width={28} stroke={MUTED_INK} fontSize={13} />
          <Tooltip content={<BTooltip />} />
          <Bar yAxisId="bt" dataKey="backtracks" shape={barShape(picked)} isAnimationActive={false} />
          {agents.map((j) => (
            <Line key={j} yAxisId="beta" dataKey={`beta${j}`} stroke={agentColor(j)} strokeWidth={picked === 'beta' ? 3.5 : 1.5} className={picked === 'beta' ? 'highlighted' : undefined} connectNulls dot={dotFor(j)} isAnimationActive={false} name={`agent ${j}`} />
          ))}
        </ComposedChart>
      )}
    </ChartFrame>
  );
});
