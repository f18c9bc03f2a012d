/**
 * A verdict's mark on a chart and the legend of the marks (src/sat/verdicts.ts defines both: one
 * visual language for held, not held, undecided, not checked and certified on every chart).
 *
 * Not here: deciding the verdict (series.ts `heldUnder`), the CLI's glyphs (src/cli/sat.ts).
 */
import { VERDICTS, type Verdict } from '../../sat/verdicts';

/** The mark of a held state at (cx, cy), tagged with data-verdict for tests and assistive reading. */
export function VerdictDot({ verdict, cx, cy, scale = 1 }: { verdict: Exclude<Verdict, 'certified'>; cx: number; cy: number; scale?: number }) {
  const m = VERDICTS[verdict].mark!;
  return <circle cx={cx} cy={cy} r={m.r * scale} fill={m.fill} stroke={m.stroke} strokeWidth={m.strokeWidth} {...(m.dash ? { strokeDasharray: m.dash } : {})} data-verdict={verdict} />;
}

/** The legend: one small mark and its sentence per verdict listed. */
export function VerdictLegend({ verdicts }: { verdicts: readonly Verdict[] }) {
  return (
    <span className="verdict-legend" data-testid="verdict-legend">
      {verdicts.map((v) => (
        <span key={v} className="verdict-key" data-verdict-key={v}>
          {v === 'certified' ? (
            <span aria-hidden="true">{VERDICTS.certified.glyph}</span>
          ) : (
            <svg width="12" height="12" aria-hidden="true">
              <VerdictDot verdict={v} cx={6} cy={6} scale={0.9} />
            </svg>
          )}{' '}
          {VERDICTS[v].legend}
        </span>
      ))}
    </span>
  );
}
