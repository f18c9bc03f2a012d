/**
 * A verdict's mark on a chart, inline with text, and the key of the marks (src/sat/verdicts.ts
 * defines them all: one visual language for held, not held, undecided, not checked and certified,
 * and for a claim's holds / does not hold / not established, on every chart and view). A key is one
 * compact line (ChartFrame's `legend`): each mark with its word, the sentence of what it means in
 * its title.
 *
 * Not here: deciding the verdict (series.ts `heldUnder`, src/studies/claims.ts), the CLI's glyphs
 * (src/cli/sat.ts).
 */
import { CLAIM_VERDICT_ORDER, CLAIM_VERDICTS, VERDICTS, type ClaimVerdict, type Verdict } from '../../sat/verdicts';

type Marked = Exclude<Verdict, 'certified'>;

/** The mark of a held state at (cx, cy), tagged with data-verdict for tests and assistive reading. */
export function VerdictDot({ verdict, cx, cy, scale = 1 }: { verdict: Marked; cx: number; cy: number; scale?: number }) {
  const m = VERDICTS[verdict].mark!;
  return <circle cx={cx} cy={cy} r={m.r * scale} fill={m.fill} stroke={m.stroke} strokeWidth={m.strokeWidth} {...(m.dash ? { strokeDasharray: m.dash } : {})} data-verdict={verdict} />;
}

/** A mark inline with text, `size` px square (the stage table, the timeline, the claims' chips). */
export function VerdictGlyph({ verdict, size = 12 }: { verdict: Marked; size?: number }) {
  return (
    <svg width={size} height={size} viewBox={`0 0 ${size} ${size}`} aria-hidden="true" className="held-glyph">
      <VerdictDot verdict={verdict} cx={size / 2} cy={size / 2} scale={size / 12} />
    </svg>
  );
}

/** One key of a legend: a mark (or the ✓), its word, and its meaning in the title and for screen readers. */
function Key({ verdict, word, title, keyAttr, testid }: { verdict: Verdict; word: string; title: string; keyAttr: string; testid?: string }) {
  return (
    <span className="verdict-key" data-verdict-key={keyAttr} title={title} {...(testid ? { 'data-testid': testid } : {})}>
      {verdict === 'certified' ? <span aria-hidden="true">{VERDICTS.certified.glyph}</span> : <VerdictGlyph verdict={verdict} size={12} />}
      <span className="verdict-word" aria-hidden="true">{word}</span>
      <span className="sr-only">{title}</span>
    </span>
  );
}

/**
 * The key of the certificate's marks, one per verdict listed. `perStage`: the ✓'s key also says,
 * visibly, that its 95 % is per stage, and its title what it proves at that level (`legend`,
 * verdicts.ts `certifiedLegend`) and what per stage means over the run (`perStageNote`).
 */
export function VerdictLegend({ verdicts, perStage }: { verdicts: readonly Verdict[]; perStage?: { level: string; note: string; legend: string } }) {
  return (
    <span className="verdict-legend" data-testid="verdict-legend">
      {verdicts.map((v) => {
        const per = v === 'certified' && perStage;
        return (
          <Key key={v} verdict={v} keyAttr={v} word={per ? `${VERDICTS[v].words}, ${per.level} per stage` : VERDICTS[v].words}
            title={per ? `${per.legend}; ${per.note}` : VERDICTS[v].legend} {...(per ? { testid: 'per-stage-note' } : {})} />
        );
      })}
    </span>
  );
}

/** The key of a claim's verdicts: each drawn with the certificate mark it is like. */
export function ClaimVerdictLegend({ verdicts = CLAIM_VERDICT_ORDER }: { verdicts?: readonly ClaimVerdict[] }) {
  return (
    <span className="verdict-legend" data-testid="verdict-legend">
      {verdicts.map((v) => (
        <Key key={v} verdict={CLAIM_VERDICTS[v].mark} keyAttr={v} word={v} title={CLAIM_VERDICTS[v].legend} />
      ))}
    </span>
  );
}

/** A claim's verdict in words with its mark before it (the Claims view's chips, Sweep δ's readout). */
export function ClaimVerdictChip({ verdict, testid, className = 'claim-verdict' }: { verdict: ClaimVerdict; testid?: string; className?: string }) {
  return (
    <span className={className} data-claim-verdict={verdict} title={CLAIM_VERDICTS[verdict].legend}>
      <VerdictGlyph verdict={CLAIM_VERDICTS[verdict].mark} size={11} /> <span {...(testid ? { 'data-testid': testid } : {})}>{verdict}</span>
    </span>
  );
}
