/**
 * A verdict's mark on a chart and the key of the marks (src/sat/verdicts.ts defines both: one
 * visual language for held, not held, undecided, not checked and certified on every chart). The
 * key is one compact line under the plot (ChartFrame's `legend`): each mark with its word, the
 * sentence of what it means in its title.
 *
 * Not here: deciding the verdict (series.ts `heldUnder`), the CLI's glyphs (src/cli/sat.ts).
 */
import { VERDICTS, type Verdict } from '../../sat/verdicts';

/** The mark of a held state at (cx, cy), tagged with data-verdict for tests and assistive reading. */
export function VerdictDot({ verdict, cx, cy, scale = 1 }: { verdict: Exclude<Verdict, 'certified'>; cx: number; cy: number; scale?: number }) {
  const m = VERDICTS[verdict].mark!;
  return <circle cx={cx} cy={cy} r={m.r * scale} fill={m.fill} stroke={m.stroke} strokeWidth={m.strokeWidth} {...(m.dash ? { strokeDasharray: m.dash } : {})} data-verdict={verdict} />;
}

/**
 * The key: one small mark and its word per verdict listed, its meaning in the title (and, for
 * screen readers, in hidden text). `perStage`: the ✓'s key also says, visibly, that its 95 % is
 * per stage, and its title what that means over the run (verdicts.ts `perStageNote`).
 */
export function VerdictLegend({ verdicts, perStage }: { verdicts: readonly Verdict[]; perStage?: { level: string; note: string } }) {
  return (
    <span className="verdict-legend" data-testid="verdict-legend">
      {verdicts.map((v) => {
        const per = v === 'certified' && perStage;
        const title = per ? `${VERDICTS[v].legend}; ${per.note}` : VERDICTS[v].legend;
        return (
          <span key={v} className="verdict-key" data-verdict-key={v} title={title} {...(per ? { 'data-testid': 'per-stage-note' } : {})}>
            {v === 'certified' ? (
              <span aria-hidden="true">{VERDICTS.certified.glyph}</span>
            ) : (
              <svg width="12" height="12" aria-hidden="true">
                <VerdictDot verdict={v} cx={6} cy={6} scale={0.9} />
              </svg>
            )}
            <span className="verdict-word" aria-hidden="true">{per ? `${VERDICTS[v].words}, ${per.level} per stage` : VERDICTS[v].words}</span>
            <span className="sr-only">{title}</span>
          </span>
        );
      })}
    </span>
  );
}
