/**
 * "Does the update order change the outcome?" — team J per stage for the same seed under two or
 * more update orders σ (claim 3 of docs/method.md §10b: the certificate holds for any σ, the
 * numbers change), one line per order in its own colour and dash (the legend's key the same);
 * each stage's mark its verdict's (src/sat/verdicts.ts: held, not held, undecided, not checked —
 * a language stage whose bound was not checked is a small grey dot, never a red ring). Where J is a
 * held-out estimate (language teams) each point carries its 95 % interval as an error bar, and the
 * legend and tooltip say ±; the orders' points then sit side by side around their stage (a small
 * offset each) so their bars do not hide one another.
 * Its formula card (formulas.ts `orderFormula`) writes each order's last stage J, bound and ΔJ; a
 * row clicked there thickens its line.
 *
 * Not here: running the extra orders (sideRuns.ts, which stores one StageRecord[] per order) or
 * merging them (series.ts `orderRows`).
 */
import { memo } from 'react';
import { CartesianGrid, ErrorBar, LineChart, Line, Tooltip, XAxis, YAxis, type DotItemDotProps } from 'recharts';
import { fixed3 } from '../format';
import { GRID, MUTED_INK, teamSeries } from '../theme';
import { undecidedOrUnchecked, VERDICTS } from '../../sat/verdicts';
import { VerdictDot, VerdictLegend } from './VerdictMark';
import { ChartFrame, DEFAULT_HEIGHT } from './ChartFrame';
import { bindFormula, orderFormula } from './formulas';
import { HELD_CODE, HELD_OF_CODE, orderRows, orderSummary, resolvedForm, type FormChoice, type OrderRow, type OrderSeries } from './series';

export interface OrderChartProps {
  /** One series per order, e.g. { label: 'σ = 0→1→2', stages } (the store's SeriesRun[] as is). */
  readonly series: readonly OrderSeries[];
  readonly form?: FormChoice;
  readonly width?: number;
  readonly height?: number;
}

function dotFor(k: number) {
  return function OrderDot(p: DotItemDotProps) {
    const key = `o${k}-${p.index}`;
    const row = p.payload as OrderRow;
    const h = row[`h${k}`];
    if (p.cx === undefined || p.cy === undefined || row[`s${k}`] === undefined) return <g key={key} />;
    if (h === undefined) return <circle key={key} cx={p.cx} cy={p.cy} r={2} fill={teamSeries(k).stroke} />;
    return (
      <g key={key} data-order={k}>
        <VerdictDot verdict={HELD_OF_CODE[h]!} cx={p.cx} cy={p.cy} scale={0.8} />
      </g>
    );
  };
}

function OTooltip({ active, payload, label, names }: { active?: boolean; payload?: readonly { payload?: unknown }[]; label?: unknown; names: readonly string[] }) {
  const row = payload?.[0]?.payload as OrderRow | undefined;
  if (!active || !row) return null;
  return (
    <div className="chart-tip">
      <div className="chart-tip-title">stage {typeof label === 'number' ? Math.round(label) : String(label)}</div>
      {names.map((n, k) =>
        row[`s${k}`] === undefined ? null : (
          <div key={k}>
            {n}: <b>{fixed3(row[`s${k}`]!)}</b>
            {row[`e${k}`] !== undefined ? ` ± ${fixed3(row[`e${k}`]!)}` : ''}
            {row[`h${k}`] !== undefined && row[`h${k}`] !== HELD_CODE.held ? ` (${VERDICTS[HELD_OF_CODE[row[`h${k}`]!]!].words})` : ''}
          </div>
        ),
      )}
    </div>
  );
}

export const OrderChart = memo(function OrderChart({ series, form = 'chosen', width, height = DEFAULT_HEIGHT }: OrderChartProps) {
  const rows = orderRows(series, form);
  const summary = orderSummary(series, form);
  const points = series.reduce((s, x) => s + x.stages.length, 0);
  const names = series.map((s) => s.label);
  const lasts = series.map((s) => s.stages[s.stages.length - 1]);
  const formula = lasts.length > 0 && lasts.every((r) => r && resolvedForm(r, form) === r.certificate.form) ? bindFormula(orderFormula(names), lasts.map((r) => r!.metrics)) : null;
  const withCi = series.map((_, k) => rows.some((r) => r[`e${k}`] !== undefined));
  // With error bars, order k's points move off their stage by a fraction of a stage, centred.
  const spread = withCi.some(Boolean) && series.length > 1 ? Math.min(0.3, 0.6 / series.length) : 0;
  const dataOf = (k: number) => (spread === 0 ? undefined : rows.map((r) => ({ ...r, stage: r.stage + (k - (series.length - 1) / 2) * spread })));
  return (
    <ChartFrame
      testid="chart-orders"
      title="Does the update order change the outcome?"
      points={series.length >= 1 ? points : 0}
      width={width}
      empty={<>Compare orders to see the same seed trained under two or more update orders σ side by side.</>}
      formula={formula}
      readout={summary.map((s, k) => (
        <span key={k} className="order-key">
          <svg width="26" height="8" aria-hidden="true">
            <line x1="0" y1="4" x2="26" y2="4" stroke={teamSeries(k).stroke} strokeWidth="2" strokeDasharray={teamSeries(k).dash} />
          </svg>
          <span>
            {s.label}: J <b className="num" data-testid={`order-final-${k}`} data-value={s.finalJ} data-ci={s.finalCi}>{fixed3(s.finalJ)}</b>
            {s.finalCi > 0 ? ` ± ${fixed3(s.finalCi)}` : ''}, <span data-testid={`order-held-${k}`} data-held={s.held} data-checked={s.checked}>{s.checked === 0 ? 'bound not checked' : `held ${s.held}/${s.checked}${s.checked < s.stages ? ` (${undecidedOrUnchecked(s.undecided, s.stages - s.checked - s.undecided)})` : ''}`}</span>
          </span>
        </span>
      ))}
      legend={<VerdictLegend verdicts={['held', 'not held', 'undecided', 'unchecked']} />}
      howTo={
        <>
          Each line is the same seed and settings trained with a different update order σ. SAT&apos;s certificate holds whatever the
          order (docs/method.md §10b, claim 3) — look for filled marks on every line (a small grey dot: a language stage whose bound was not checked) — but which agent moves first changes what the others
          react to, so the curves may part. Lines that end far apart mean the order matters for this game. On a language team the
          orders run the next stages from where your team stands, and the bars are each held-out J&apos;s 95 % interval: lines whose
          bars overlap are not told apart by this evaluation.
        </>
      }
    >
      {(w, picked) => (
        <LineChart width={w} height={height} data={rows} margin={{ top: 8, right: 16, bottom: 4, left: 4 }}>
          <CartesianGrid stroke={GRID} vertical={false} />
          <XAxis dataKey="stage" type="number" domain={spread === 0 ? ['dataMin', 'dataMax'] : [(m: number) => m - 0.5, (m: number) => m + 0.5]} allowDecimals={false} tickLine={false} stroke={MUTED_INK} fontSize={13} />
          <YAxis domain={['auto', 'auto']} tickFormatter={(v: number) => fixed3(v)} width={56} stroke={MUTED_INK} fontSize={13} />
          <Tooltip content={<OTooltip names={names} />} />
          {series.map((s, k) => (
            <Line key={k} data={dataOf(k)} dataKey={`s${k}`} name={s.label} stroke={teamSeries(k).stroke} strokeDasharray={teamSeries(k).dash} strokeWidth={picked === `s${k}` ? 3.5 : 1.75} className={picked === `s${k}` ? 'highlighted' : undefined} dot={dotFor(k)} connectNulls isAnimationActive={false}>
              {withCi[k] && <ErrorBar dataKey={`e${k}`} width={4 + 3 * k} strokeWidth={1} stroke={teamSeries(k).stroke} isAnimationActive={false} />}
            </Line>
          ))}
        </LineChart>
      )}
    </ChartFrame>
  );
});
