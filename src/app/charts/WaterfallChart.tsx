/**
 * "Where did the promise come from?" — one stage's certificate (SAT.md §7) as a waterfall: the
 * measured gain ΣG_i up from 0, then −shift, −bias, −finite down from where the last bar ended, so
 * the running end is the lower bound; the lower bound again as a total from 0, beside the realised
 * ΔJ (filled ink when it reached the bound, hollow red when it did not). A toggle switches between
 * the episodic form and the paper's γ form, and when the bound is vacuous the chart says so in words.
 *
 * Not here: the cumulative arithmetic (series.ts `waterfallRows`), choosing the stage (a prop).
 */
import { Bar, BarChart, CartesianGrid, LabelList, Rectangle, ReferenceLine, Tooltip, XAxis, YAxis, type BarShapeProps } from 'recharts';
import type { CertForm } from '../../sat/certificate';
import type { StageRecord } from '../../sat/stage';
import { fixed3 } from '../format';
import { GRID, INK, MUTED_INK, NOT_HELD } from '../theme';
import { ChartFrame, DEFAULT_HEIGHT, HeldGlyph, Toggle } from './ChartFrame';
import { grouped, term } from './fmt';
import { waterfallRows, type FormChoice, type WaterfallRow } from './series';

export interface WaterfallChartProps {
  /** The stage to explain (usually the selected or the latest one); null before the first stage ends. */
  readonly record: StageRecord | null;
  /** Form shown; default the run's configured form. */
  readonly form?: FormChoice;
  /** Called by the γ / episodic toggle; without it the toggle is not shown. */
  readonly onFormChange?: (form: CertForm) => void;
  /** γ of the run (for the words; the terms already use it). */
  readonly gamma?: number;
  /** Horizon H of the episodic form (for the words). */
  readonly horizon?: number;
  /** R_max − R_min: a bound below −span is vacuous. */
  readonly span?: number;
  readonly width?: number;
  readonly height?: number;
}

const FILL: Record<WaterfallRow['kind'], string> = {
  gain: '#4b5563',
  shift: '#9ca3af',
  bias: '#b8bcc2',
  finite: '#cfd2d6',
  lower: INK,
  realised: INK,
};

function shapeFor(held: boolean) {
  return function WaterfallBar(p: BarShapeProps) {
    const row = p.payload as WaterfallRow;
    if (row.kind === 'realised' && !held) return <Rectangle {...p} fill="#fff" stroke={NOT_HELD} strokeWidth={2} />;
    return <Rectangle {...p} fill={FILL[row.kind]} stroke="none" />;
  };
}

function WfTooltip({ active, payload }: { active?: boolean; payload?: readonly { payload?: unknown }[] }) {
  const row = payload?.[0]?.payload as WaterfallRow | undefined;
  if (!active || !row) return null;
  return (
    <div className="chart-tip">
      <div className="chart-tip-title">{row.label}</div>
      <div>{term(row.value)}</div>
      {!row.total && (
        <div className="muted">
          {term(row.from)} → {term(row.to)}
        </div>
      )}
    </div>
  );
}

export function WaterfallChart({ record, form = 'chosen', onFormChange, gamma, horizon, span, width, height = DEFAULT_HEIGHT }: WaterfallChartProps) {
  const wf = record ? waterfallRows(record, form, span) : null;
  const shown: CertForm = wf ? wf.form : form === 'gamma' ? 'gamma' : 'episodic';
  const formName = shown === 'gamma' ? `γ form${gamma !== undefined ? ` (γ = ${gamma})` : ''}` : `episodic form${horizon !== undefined ? ` (H = ${horizon})` : ''}`;
  return (
    <ChartFrame
      testid="chart-waterfall"
      title="Where did the promise come from?"
      points={wf ? wf.rows.length : 0}
      width={width}
      empty={<>Step a stage to see its certificate term by term.</>}
      actions={
        onFormChange && (
          <Toggle<CertForm>
            label="Certificate form"
            value={shown}
            onChange={onFormChange}
            options={[
              { value: 'episodic', label: 'episodic', title: 'Finite horizon H, no discount (docs/certificate.md)' },
              { value: 'gamma', label: 'γ (paper)', title: "The paper's discounted form; vacuous at γ = 0.99" },
            ]}
          />
        )
      }
      readout={
        wf && (
          <>
            <span>
              stage {record!.stage}, {formName}
            </span>
            <span>
              lower bound <b className="num">{term(wf.terms.lower)}</b> vs realised ΔJ <b className="num">{term(wf.dJ)}</b>
            </span>
            <span className="chart-held">
              <HeldGlyph held={wf.held} /> {wf.held ? 'held' : 'not held'}
            </span>
            {wf.vacuous && (
              <span className="chart-warn" data-testid="vacuous-note">
                Vacuous: the bound only promises J will not fall by more than {grouped(-wf.terms.lower)}
                {span !== undefined ? `, while J can move by at most ${fixed3(span)}` : ''}
                {Number.isFinite(wf.penaltyOverGain) ? `; the penalties are ${grouped(wf.penaltyOverGain)}× the gain` : ''}.
                {shown === 'gamma' ? ' This is the paper’s γ form as written; the episodic form is the usable one.' : ''}
              </span>
            )}
          </>
        )
      }
      howTo={
        <>
          Bars left to right: the measured gain of the stage&apos;s agent updates, minus the policy-shift penalty (grows with the
          KL radius), minus the estimator&apos;s bias, minus the finite-sample width; what is left is the certified lower bound on
          ΔJ, shown beside the ΔJ that really happened (SAT.md §7). Healthy: the realised bar reaches at least the bound (filled).
          A bound far below zero is true but says little — with γ = 0.99 the shift penalty alone is thousands of times the gain.
        </>
      }
    >
      {(w) =>
        wf && (
          <BarChart width={w} height={height} data={wf.rows} margin={{ top: 18, right: 16, bottom: 4, left: 4 }}>
            <CartesianGrid stroke={GRID} vertical={false} />
            <XAxis dataKey="label" tickLine={false} stroke={MUTED_INK} fontSize={12} interval={0} />
            <YAxis tickFormatter={(v: number) => term(v)} width={64} stroke={MUTED_INK} fontSize={12} />
            <ReferenceLine y={0} stroke={MUTED_INK} />
            <Tooltip content={<WfTooltip />} cursor={{ fill: 'rgba(0,0,0,0.04)' }} />
            <Bar dataKey="range" shape={shapeFor(wf.held)} isAnimationActive={false}>
              <LabelList dataKey="value" position="top" fontSize={11} fill={INK} formatter={(v: unknown) => (typeof v === 'number' ? term(v) : '')} />
            </Bar>
          </BarChart>
        )
      }
    </ChartFrame>
  );
}
