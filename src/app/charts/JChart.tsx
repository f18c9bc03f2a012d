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
 * Drawn as plain SVG (it is on the first screen and redraws after every stage): the axes, grid,
 * band, floors, line, marks and the dashed overlay are a few paths; hovering the plot, or the
 * arrow keys once it has focus, show one stage's tooltip.
 *
 * Not here: computing rows (series.ts `jSeries`), picking the certificate form (a prop).
 */
import { type KeyboardEvent, type MouseEvent, memo, useState } from 'react';
import { fixed3, signed3, tickLabels } from '../format';
import { BAND_FILL, GRID, INK, MUTED_INK } from '../theme';
import { VerdictDot, VerdictGlyph, VerdictLegend } from './VerdictMark';
import { byChanceOver, certifiedLegend, certifiedSentence, confidenceLevel, perStageNote, undecidedOrUnchecked, VERDICT_ORDER, VERDICTS, withNoise } from '../../sat/verdicts';
import { ChartFrame, DEFAULT_HEIGHT } from './ChartFrame';
import { bindFormula, FORMULAS } from './formulas';
import { CHECK, kOfN, term } from './fmt';
import { jSeries, resolvedForm, type FormChoice, type JRow, type JSeries } from './series';
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
  /** δ_conf of the run: the ✓'s confidence level (the config's default when absent). */
  readonly deltaConf?: number;
}

/** A ✓ drawn as a path (crisp at any zoom, no font needed), centred 11 px above (cx, cy). */
function CheckMark({ cx, cy }: { cx: number; cy: number }) {
  const y = cy - 11;
  return <path d={`M${cx - 3.5},${y} L${cx - 1},${y + 2.75} L${cx + 3.75},${y - 3}`} fill="none" stroke={INK} strokeWidth={1.75} strokeLinecap="round" strokeLinejoin="round" data-certified="true" />;
}

/** A stage's mark at (cx, cy): its verdict's mark (src/sat/verdicts.ts); a small dot at stage 0. */
function JDot({ row, cx, cy }: { row: JRow; cx: number; cy: number }) {
  if (row.held === null) return <circle cx={cx} cy={cy} r={2.5} fill={INK} />;
  return <VerdictDot verdict={row.held} cx={cx} cy={cy} />;
}

/** A stage's floor mark at (cx, cy): a short bar, or ▼ on the bottom edge when clipped; `big` when the formula card picked the floor. */
function FloorMark({ cx, cy, clipped, big }: { cx: number; cy: number; clipped: boolean; big: boolean }) {
  const k = big ? 2 : 1;
  const fill = big ? INK : MUTED_INK;
  return (
    <g {...(big ? { 'data-highlighted': 'floor' } : {})}>
      {clipped ? <path d={`M${cx - 4 * k},${cy - 7 * k} L${cx + 4 * k},${cy - 7 * k} L${cx},${cy - 1} Z`} fill={fill} /> : <rect x={cx - 7 * k} y={cy - k} width={14 * k} height={2 * k} fill={fill} />}
    </g>
  );
}

/** Whole-stage ticks from `lo` to `hi`, at most about six, a step of 1, 2 or 5 times a power of ten. */
export function stageTicks(lo: number, hi: number): number[] {
  const span = Math.max(hi - lo, 1);
  const raw = span / 6;
  const p = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * p).find((v) => v >= raw) ?? 10 * p);
  const out: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) out.push(t);
  return out;
}

const MARGIN = { top: 16, right: 16, bottom: 4, left: 4 };
const Y_AXIS_W = 56;
const X_AXIS_H = 30;

/** The plot: team J's band, line and marks, the floors and the dashed overlay, on a linear scale. */
function JPlot({ s, width, height, lastX, picked, deltaConf }: { s: JSeries; width: number; height: number; lastX: number; picked: string | null; deltaConf: number }) {
  const [hover, setHover] = useState<number | null>(null);
  const x0 = s.rows[0]?.stage ?? 0;
  const x1 = Math.max(lastX, x0 + 1e-9);
  const left = MARGIN.left + Y_AXIS_W;
  const right = width - MARGIN.right;
  const top = MARGIN.top;
  const bottom = height - MARGIN.bottom - X_AXIS_H;
  const [d0, d1] = s.domain;
  const yLabels = tickLabels(s.ticks);
  const x = (v: number) => left + ((v - x0) / (x1 - x0)) * (right - left);
  const y = (v: number) => bottom - ((Math.min(Math.max(v, d0), d1) - d0) / (d1 - d0 || 1)) * (bottom - top);
  const line = (pts: readonly { stage: number; j: number }[]) => pts.map((r, i) => `${i ? 'L' : 'M'}${x(r.stage).toFixed(2)},${y(r.j).toFixed(2)}`).join('');
  const band = s.rows.some((r) => r.ci > 0)
    ? `${s.rows.map((r, i) => `${i ? 'L' : 'M'}${x(r.stage).toFixed(2)},${y(r.band[1]).toFixed(2)}`).join('')}${[...s.rows].reverse().map((r) => `L${x(r.stage).toFixed(2)},${y(r.band[0]).toFixed(2)}`).join('')}Z`
    : null;
  const row = hover === null ? undefined : s.rows[hover];
  const nearest = (px: number) => {
    let best = 0;
    s.rows.forEach((r, i) => {
      if (Math.abs(x(r.stage) - px) < Math.abs(x(s.rows[best]!.stage) - px)) best = i;
    });
    return best;
  };
  const onMove = (e: MouseEvent<SVGSVGElement>) => setHover(nearest(e.clientX - e.currentTarget.getBoundingClientRect().left));
  const onKey = (e: KeyboardEvent<SVGSVGElement>) => {
    const n = s.rows.length;
    const at = hover ?? n - 1;
    const to = e.key === 'ArrowLeft' ? Math.max(0, at - 1) : e.key === 'ArrowRight' ? Math.min(n - 1, at + 1) : e.key === 'Home' ? 0 : e.key === 'End' ? n - 1 : null;
    if (to === null) return;
    e.preventDefault();
    setHover(to);
  };
  const tipLeft = row ? x(row.stage) + 12 : 0;
  return (
    <div className="j-plot">
      <svg
        width={width}
        height={height}
        className="j-svg"
        tabIndex={0}
        role="img"
        aria-label={`Team J over ${s.stages} stage${s.stages === 1 ? '' : 's'}; arrow keys show one stage`}
        onMouseMove={onMove}
        onMouseLeave={() => setHover(null)}
        onFocus={() => setHover((h) => h ?? s.rows.length - 1)}
        onBlur={() => setHover(null)}
        onKeyDown={onKey}
      >
        <g className="j-grid">
          {s.ticks.map((t) => (
            <line key={t} x1={left} x2={right} y1={y(t)} y2={y(t)} stroke={GRID} />
          ))}
        </g>
        <g className="j-y-axis" fontSize={13} fill={MUTED_INK}>
          <line x1={left} x2={left} y1={top} y2={bottom} stroke={MUTED_INK} />
          {s.ticks.map((t, k) => (
            <text key={t} className="j-tick-value" x={left - 8} y={y(t)} textAnchor="end" dominantBaseline="middle">
              {yLabels[k]}
            </text>
          ))}
        </g>
        <g className="j-x-axis" fontSize={13} fill={MUTED_INK}>
          <line x1={left} x2={right} y1={bottom} y2={bottom} stroke={MUTED_INK} />
          {stageTicks(x0, lastX).map((t) => (
            <text key={t} className="j-tick-value" x={x(t)} y={bottom + 16} textAnchor="middle">
              {t}
            </text>
          ))}
        </g>
        {band && <path className="j-band" d={band} fill={BAND_FILL} stroke="none" />}
        {row && <line x1={x(row.stage)} x2={x(row.stage)} y1={top} y2={bottom} stroke={GRID} strokeWidth={1} />}
        <g className="j-floors">
          {s.rows.map((r) => (r.floorShown === null ? null : <FloorMark key={r.stage} cx={x(r.stage)} cy={y(r.floorShown)} clipped={r.floorClipped} big={picked === 'floor'} />))}
        </g>
        <path className={`j-line${picked === 'j' ? ' highlighted' : ''}`} d={line(s.rows)} fill="none" stroke={INK} strokeWidth={picked === 'j' ? 4 : 2} strokeLinejoin="round" />
        {s.overlay.length > 0 && <path className="j-overlay-line" d={line(s.overlay)} fill="none" stroke={MUTED_INK} strokeWidth={2} strokeDasharray="6 4" />}
        <g className="j-dots">
          {s.rows.map((r) => (
            <JDot key={r.stage} row={r} cx={x(r.stage)} cy={y(r.j)} />
          ))}
        </g>
        <g className="j-cert-marks" aria-hidden="true">
          {s.rows.map((r) => (r.certified ? <CheckMark key={r.stage} cx={x(r.stage)} cy={y(r.j)} /> : null))}
        </g>
      </svg>
      {row && (
        <div className="j-tip" style={tipLeft > width / 2 ? { right: width - x(row.stage) + 12, top: MARGIN.top } : { left: tipLeft, top: MARGIN.top }}>
          <JTooltip row={row} deltaConf={deltaConf} />
        </div>
      )}
    </div>
  );
}

function JTooltip({ row, deltaConf }: { row: JRow; deltaConf: number }) {
  return (
    <div className="chart-tip">
      <div className="chart-tip-title">{row.held === null ? 'initial team' : `stage ${row.stage}`}</div>
      <div>
        {row.ci > 0 ? 'held-out J' : 'J'} <b>{fixed3(row.j)}</b>
        {row.ci > 0 && <> ± {fixed3(row.ci)}</>}
      </div>
      {row.held !== null && (
        <>
          <div data-testid="j-tip-dj">{row.ci > 0 ? <>held-out ΔJ {withNoise(row.dJ!, row.ci)} (the held-out J&apos;s noise)</> : <>realised ΔJ {signed3(row.dJ!)}</>}</div>
          <div>certified ΔJ ≥ {term(row.lower!)}</div>
          {row.certified && (
            <div className="chart-certified" data-testid="j-certified-sentence">
              <span aria-hidden="true">{CHECK}</span> {certifiedSentence(row.lower!, deltaConf, row.ci === 0)}, for this stage.
            </div>
          )}
          <div className="chart-tip-held">
            <VerdictGlyph verdict={row.held} /> certificate {VERDICTS[row.held].words}.
          </div>
        </>
      )}
    </div>
  );
}

export const JChart = memo(function JChart({ records, form = 'chosen', span, j0ci, overlay, width, height = DEFAULT_HEIGHT, deltaConf = 0.05 }: JChartProps) {
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
      legend={<VerdictLegend verdicts={VERDICT_ORDER} perStage={{ level: confidenceLevel(deltaConf), note: perStageNote(s.stages, deltaConf), legend: certifiedLegend(deltaConf, !last || last.ci === 0) }} />}
      readout={
        <>
          <span data-testid="j-now" title={last && last.ci > 0 ? 'The line is J on held-out problems no stage trained on, ± its 95 % interval; the bounds and the ✓ are about J on the training problems.' : undefined}>
            {last && last.ci > 0 ? 'held-out J now' : 'J now'}{' '}
            <b className="num" {...(lastRec ? { 'data-metric': 'team/J', 'data-value': lastRec.metrics['team/J'] as number } : {})}>
              {last ? fixed3(last.j) : '—'}
            </b>
            {last && last.ci > 0 && <> ± {fixed3(last.ci)}</>}
          </span>
          <span data-testid="j-held-count">
            held in {kOfN(s.heldCount, s.checkedCount)}
            {s.checkedCount < s.stages && <> ({undecidedOrUnchecked(s.undecidedCount, s.stages - s.checkedCount - s.undecidedCount)})</>}
          </span>
          {s.flat && (
            <span className="muted" data-testid="j-flat" title="Every J so far rounds to the same value at 3 decimals">
              no change
            </span>
          )}
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
          ticked, floors just under the line. On a language team the line is held-out J (problems no stage trained on, with its
          95 % interval) while the bound and the ✓ are about J on the training problems: a ✓ beside a small held-out fall is the
          held-out noise, not a contradiction. A dashed grey ring is undecided; a small grey dot is a stage whose bound was not checked — not a failure. The
          {' '}{confidenceLevel(deltaConf)} of a ✓ is per stage: {byChanceOver(s.stages, deltaConf)}. The key
          under the plot names each mark; hover it for what the mark means.
        </>
      }
    >
      {(w, picked) => <JPlot s={s} width={w} height={height} lastX={lastX} picked={picked} deltaConf={deltaConf} />}
    </ChartFrame>
  );
});
