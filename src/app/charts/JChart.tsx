/**
 * "Did the team improve as much as promised?" — team J after each stage with its 95 % band, the
 * certificate's floor J_before + lower bound (docs/certificate.md §12), and each stage's mark:
 * filled ink when the certificate held (J ended at or above its floor), hollow red when it did not,
 * and a ✓ above it when the stage was certified — its bound above 0, a promised improvement, not
 * just a promise that J would not fall too far. The floor is a short grey bar at each stage.
 * A floor far below the picture (a vacuous bound) is drawn as ▼ on the bottom edge and said in words.
 * Its formula card (formulas.ts `j`) writes the latest stage's team/J, team/dJ and cert/lower; a
 * term clicked there thickens the line or enlarges the floors.
 *
 * Not here: computing rows (series.ts `jSeries`), picking the certificate form (a prop).
 */
import { Area, CartesianGrid, ComposedChart, Line, Tooltip, XAxis, YAxis, useXAxisScale, useYAxisScale, type DotItemDotProps } from 'recharts';
import { fixed3, signed3 } from '../format';
import { BAND_FILL, GRID, HELD_FILL, INK, MUTED_INK, NOT_HELD } from '../theme';
import { ChartFrame, DEFAULT_HEIGHT, HeldGlyph } from './ChartFrame';
import { bindFormula, FORMULAS } from './formulas';
import { CHECK, kOfN, term } from './fmt';
import { heldWords, jSeries, resolvedForm, type FormChoice, type JRow } from './series';
import type { StageRecord } from '../../sat/stage';

export interface JChartProps {
  /** Finished stages, in order. */
  readonly records: readonly StageRecord[];
  /** Which certificate form the floor and the marks use (default: the run's configured form). */
  readonly form?: FormChoice;
  /** R_max − R_min: the largest possible drop of J, to call a bound vacuous. */
  readonly span?: number;
  /** CI half-width of the initial team's J (the store's j0.ci), for the band at stage 0. */
  readonly j0ci?: number;
  /** Another run of the same seed (scheme = simultaneous) drawn dashed beside this one. */
  readonly overlay?: { readonly label: string; readonly stages: readonly StageRecord[] };
  readonly width?: number;
  readonly height?: number;
}

/** A ✓ drawn as a path (crisp at any zoom, no font needed), centred 11 px above (cx, cy). */
function CheckMark({ cx, cy }: { cx: number; cy: number }) {
  const y = cy - 11;
  return <path d={`M${cx - 3.5},${y} L${cx - 1},${y + 2.75} L${cx + 3.75},${y - 3}`} fill="none" stroke={INK} strokeWidth={1.75} strokeLinecap="round" strokeLinejoin="round" data-certified="true" />;
}

function JDot(props: DotItemDotProps) {
  const { cx, cy, payload } = props;
  const row = payload as JRow;
  if (cx === undefined || cy === undefined || row.held === null) {
    return <circle key={`d${props.index}`} cx={cx} cy={cy} r={2.5} fill={INK} />;
  }
  if (row.held === 'held') return <circle key={`d${props.index}`} cx={cx} cy={cy} r={4.5} fill={HELD_FILL} stroke="#fff" strokeWidth={1} />;
  if (row.held === 'not held') return <circle key={`d${props.index}`} cx={cx} cy={cy} r={4.25} fill="#fff" stroke={NOT_HELD} strokeWidth={2} />;
  return <circle key={`d${props.index}`} cx={cx} cy={cy} r={4} fill="#fff" stroke={MUTED_INK} strokeWidth={1.5} strokeDasharray="2.5 2" />;
}

/**
 * The ✓ of every certified stage, on a layer of its own: the line's dots are clipped to the plot
 * area, which would cut a ✓ over a point at the top of the scale in half.
 */
function CertMarks({ rows }: { rows: readonly JRow[] }) {
  const x = useXAxisScale();
  const y = useYAxisScale();
  if (!x || !y) return null;
  return (
    <g className="j-cert-marks" aria-hidden="true">
      {rows.map((r) => {
        if (!r.certified) return null;
        const cx = x(r.stage);
        const cy = y(r.j);
        return typeof cx === 'number' && typeof cy === 'number' && Number.isFinite(cx) && Number.isFinite(cy) ? <CheckMark key={r.stage} cx={cx} cy={cy} /> : null;
      })}
    </g>
  );
}

/** A stage's floor mark; `big` when the formula card picked the floor (drawn in ink, twice the size). */
function floorDot(big: boolean) {
  return function FloorDot(props: DotItemDotProps) {
    const { cx, cy, payload, index } = props;
    const row = payload as JRow;
    if (cx === undefined || cy === undefined || row.floorShown === null) return <g key={`f${index}`} />;
    const k = big ? 2 : 1;
    const mark = row.floorClipped ? (
      <path d={`M${cx - 4 * k},${cy - 7 * k} L${cx + 4 * k},${cy - 7 * k} L${cx},${cy - 1} Z`} fill={big ? INK : MUTED_INK} />
    ) : (
      <rect x={cx - 7 * k} y={cy - k} width={14 * k} height={2 * k} fill={big ? INK : MUTED_INK} />
    );
    return (
      <g key={`f${index}`} {...(big ? { 'data-highlighted': 'floor' } : {})}>
        {mark}
      </g>
    );
  };
}

function JTooltip({ active, payload }: { active?: boolean; payload?: readonly { payload?: unknown }[] }) {
  const row = payload?.[0]?.payload as JRow | undefined;
  if (!active || !row) return null;
  return (
    <div className="chart-tip">
      <div className="chart-tip-title">{row.held === null ? 'initial team' : `stage ${row.stage}`}</div>
      <div>
        J <b>{fixed3(row.j)}</b>
        {row.ci > 0 && <> ± {fixed3(row.ci)}</>}
      </div>
      {row.held !== null && (
        <>
          <div>realised ΔJ {signed3(row.dJ!)}</div>
          <div>certified ΔJ ≥ {term(row.lower!)}</div>
          {row.certified && (
            <div className="chart-certified">
              <span aria-hidden="true">{CHECK}</span> certified improvement: the bound is above 0.{' '}
            </div>
          )}
          <div className="chart-tip-held">
            <HeldGlyph held={row.held} /> certificate {heldWords(row.held)}.
          </div>
        </>
      )}
    </div>
  );
}

export function JChart({ records, form = 'chosen', span, j0ci, overlay, width, height = DEFAULT_HEIGHT }: JChartProps) {
  const s = jSeries(records, { form, span, j0ci, overlay: overlay?.stages });
  const lastX = Math.max(s.rows[s.rows.length - 1]?.stage ?? 0, s.overlay[s.overlay.length - 1]?.stage ?? 0);
  const last = s.rows[s.rows.length - 1];
  const lastRec = records[records.length - 1];
  const formula = lastRec && resolvedForm(lastRec, form) === lastRec.certificate.form ? bindFormula(FORMULAS.j, lastRec.metrics) : null;
  const lowest = Math.min(...s.rows.filter((r) => r.floorClipped).map((r) => r.lower!));
  return (
    <ChartFrame
      testid="chart-j"
      title="Did the team improve as much as promised?"
      points={s.stages}
      width={width}
      empty={<>Step a stage to see the team&apos;s J and what the certificate promised for it.</>}
      formula={formula}
      formulaNote={lastRec && <>The formula card shows the form the run records (certForm = {lastRec.certificate.form}).</>}
      readout={
        <>
          <span>
            J now{' '}
            <b className="num" {...(lastRec ? { 'data-metric': 'team/J', 'data-value': lastRec.metrics['team/J'] as number } : {})}>
              {last ? fixed3(last.j) : '—'}
            </b>
          </span>
          <span>
            held in {kOfN(s.heldCount, s.checkedCount)}
            {s.checkedCount < s.stages && <> ({s.stages - s.checkedCount} not checked or undecided)</>}
          </span>
          {overlay && overlay.stages.length > 0 && (
            <span data-testid="j-overlay">
              <svg width="22" height="8" aria-hidden="true">
                <line x1="0" y1="4" x2="22" y2="4" stroke={MUTED_INK} strokeWidth="2" strokeDasharray="6 4" />
              </svg>{' '}
              {overlay.label}: J {fixed3(overlay.stages[overlay.stages.length - 1]!.jAfter)} at stage {overlay.stages[overlay.stages.length - 1]!.stage}
            </span>
          )}
          <span className={s.certifiedCount > 0 ? 'chart-certified' : undefined} data-testid="certified-count" data-value={s.certifiedCount}>
            <span aria-hidden="true">{CHECK}</span> certified in {kOfN(s.certifiedCount, s.stages)}
          </span>
          {s.clipped > 0 && (
            <span className="chart-warn">
              {s.clipped} floor{s.clipped > 1 ? 's' : ''} below the scale (▼), lowest bound {term(lowest)}
              {s.vacuous > 0 ? ` — ${s.vacuous} vacuous: promising less than J could ever lose` : ''}
            </span>
          )}
        </>
      }
      howTo={
        <>
          The line is team J after each stage (shaded: its 95 % interval; none when J is exact). The short grey bars are the
          certificate&apos;s floor for that stage, J before the stage plus the certified lower bound (docs/certificate.md §12). A
          dot on or above its floor is filled (held); a hollow red ring means the team ended below what was certified. A ✓ marks
          a certified stage: its bound is above 0, so the floor sits above the previous J and the stage promised a real
          improvement, measured on certification batches its updates never saw (§4). Healthy: J climbs, every dot filled and
          ticked, floors just under the line.
        </>
      }
    >
      {(w, picked) => (
        <ComposedChart width={w} height={height} data={s.rows} margin={{ top: 16, right: 16, bottom: 4, left: 4 }}>
          <CartesianGrid stroke={GRID} vertical={false} />
          <XAxis dataKey="stage" type="number" domain={['dataMin', lastX]} allowDecimals={false} tickLine={false} stroke={MUTED_INK} fontSize={12} />
          <YAxis domain={[s.domain[0], s.domain[1]]} ticks={[...s.ticks]} allowDataOverflow tickFormatter={(v: number) => fixed3(v)} width={56} stroke={MUTED_INK} fontSize={12} />
          <Tooltip content={<JTooltip />} />
          <Area dataKey="band" stroke="none" fill={BAND_FILL} isAnimationActive={false} />
          <Line dataKey="floorShown" stroke="none" dot={floorDot(picked === 'floor')} activeDot={false} isAnimationActive={false} name="certified floor" />
          <Line dataKey="j" stroke={INK} strokeWidth={picked === 'j' ? 4 : 2} className={picked === 'j' ? 'highlighted' : undefined} dot={JDot} isAnimationActive={false} name="team J" />
          {s.overlay.length > 0 && <Line data={[...s.overlay]} dataKey="j" stroke={MUTED_INK} strokeWidth={2} strokeDasharray="6 4" dot={false} activeDot={false} isAnimationActive={false} name={overlay?.label} className="j-overlay-line" />}
          <CertMarks rows={s.rows} />
        </ComposedChart>
      )}
    </ChartFrame>
  );
}
