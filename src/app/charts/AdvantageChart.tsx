/**
 * "Which episodes pushed agent j, and which way?" — the histogram of one agent step's advantages,
 * one count per episode of the batch it was trained on (docs/method.md §4): normalised Ã (what the
 * objective multiplies, clipped to ±A_clip) or raw R − μ (reward units). Bars in the agent's colour.
 * Its formula card (formulas.ts `adv`) writes the normalisation and the clipped objective with the
 * step's agent/<j>/surrogate, clipfrac and grad_norm; a term clicked there outlines the bars.
 *
 * Not here: binning (series.ts `advantageRows`), choosing the agent step (a prop).
 */
import { memo, useState } from 'react';
import { Bar, BarChart, CartesianGrid, Tooltip, XAxis, YAxis } from 'recharts';
import type { AgentStepRecord } from '../../sat/stage';
import { fixed3, short } from '../format';
import { agentColor, GRID, INK, MUTED_INK } from '../theme';
import { ChartFrame, DEFAULT_HEIGHT, Toggle } from './ChartFrame';
import { bindFormula, FORMULAS } from './formulas';
import { pct } from './fmt';
import { ADV_BINS, ADV_ZERO, advantageRows, niceScale, type AdvMode, type BinRow } from './series';

export interface AdvantageChartProps {
  /** The agent step in view; null before the first. */
  readonly step: AgentStepRecord | null;
  /** Controlled mode; without it the chart keeps its own, starting at `defaultMode`. */
  readonly mode?: AdvMode;
  readonly defaultMode?: AdvMode;
  readonly onModeChange?: (m: AdvMode) => void;
  /** A_clip of the run: the normalised histogram spans ±A_clip. */
  readonly aClip?: number;
  readonly bins?: number;
  readonly width?: number;
  readonly height?: number;
}

function AdvTooltip({ active, payload }: { active?: boolean; payload?: readonly { payload?: unknown }[] }) {
  const row = payload?.[0]?.payload as BinRow | undefined;
  if (!active || !row) return null;
  return (
    <div className="chart-tip">
      <div className="chart-tip-title">
        [{fixed3(row.lo)}, {fixed3(row.hi)})
      </div>
      <div>{row.count} episodes</div>
    </div>
  );
}

export const AdvantageChart = memo(function AdvantageChart({ step, mode, defaultMode = 'norm', onModeChange, aClip, bins = ADV_BINS, width, height = DEFAULT_HEIGHT }: AdvantageChartProps) {
  const [own, setOwn] = useState<AdvMode>(defaultMode);
  const m = mode ?? own;
  const rows = step ? advantageRows(step, m, { bins, aClip }) : [];
  const xs = step ? (m === 'norm' ? step.advNorm : step.advRaw) : new Float64Array(0);
  let pos = 0;
  let zero = 0;
  for (const x of xs) {
    if (x > ADV_ZERO) pos++;
    else if (Math.abs(x) <= ADV_ZERO) zero++;
  }
  const n = xs.length;
  const color = step ? agentColor(step.agent) : MUTED_INK;
  const lo = rows[0]?.lo ?? -1;
  const hi = rows[rows.length - 1]?.hi ?? 1;
  const ticks = niceScale(lo, hi, 6).ticks.filter((t) => t >= lo - 1e-9 && t <= hi + 1e-9);
  const who = step ? `agent ${step.agent}` : 'an agent';
  const formula = step ? bindFormula(FORMULAS.adv, step.metrics, step.agent) : null;
  return (
    <ChartFrame
      testid="chart-adv"
      title={`Which episodes pushed ${who}, and which way?`}
      points={n > 0 ? rows.length : 0}
      width={width}
      empty={<>Step an agent to see the advantages it was trained on.</>}
      formula={formula}
      actions={
        <Toggle<AdvMode>
          label="Advantage scale"
          value={m}
          onChange={(v) => (onModeChange ? onModeChange(v) : setOwn(v))}
          options={[
            { value: 'norm', label: 'normalised', title: 'Ã = (R − μ)/(σ + ε), clipped: what the objective uses' },
            { value: 'raw', label: 'raw', title: 'R − μ in reward units' },
          ]}
        />
      }
      readout={
        step && (
          <>
            <span>
              stage {step.stage}, step {step.position + 1} of σ
            </span>
            <span>{n} episodes</span>
            <span>{pct(n > 0 ? pos / n : 0)} pushed up</span>
            <span>{pct(n > 0 ? (n - pos - zero) / n : 0)} pushed down</span>
            {zero > 0 && <span className={zero === n ? 'chart-warn' : ''}>{pct(zero / n)} at 0 (whole group scored alike: no signal)</span>}
          </>
        )
      }
      howTo={
        <>
          Each episode of the batch the agent was trained on adds one count at its advantage: right of 0 its actions become more
          likely, left of 0 less (docs/method.md §4; under <i>resample</i> the batch was drawn after its predecessors&apos; updates).
          Healthy: mass on both sides. A spike at 0 means every sample of a prompt scored the same — nothing to learn from.
        </>
      }
    >
      {(w, picked) => (
        <BarChart width={w} height={height} data={rows} margin={{ top: 8, right: 16, bottom: 4, left: 4 }} barCategoryGap={1} className={picked === 'bars' ? 'highlighted' : undefined}>
          <CartesianGrid stroke={GRID} vertical={false} />
          <XAxis dataKey="mid" type="number" domain={[lo, hi]} ticks={ticks} tickFormatter={(v: number) => short(v)} stroke={MUTED_INK} fontSize={13} tickLine={false} />
          <YAxis allowDecimals={false} width={40} stroke={MUTED_INK} fontSize={13} />
          <Tooltip content={<AdvTooltip />} cursor={{ fill: 'rgba(0,0,0,0.04)' }} />
          <Bar dataKey="count" fill={color} stroke={picked === 'bars' ? INK : undefined} strokeWidth={picked === 'bars' ? 2 : 0} isAnimationActive={false} />
        </BarChart>
      )}
    </ChartFrame>
  );
});
