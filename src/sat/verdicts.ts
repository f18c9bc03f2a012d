/**
 * One visual language for what the certificate says about a stage (docs/certificate.md §12): held,
 * not held, undecided, not checked — did the bound stay below the real ΔJ? — and certified — did
 * the bound prove an improvement? Each has one mark (its SVG circle on the charts, its glyph in the
 * CLI's columns) and one sentence for legends, so that the J chart, Compare orders, Sweep δ, the
 * certify report, the claims view and the CLI draw and say them alike. "Not checked" is never
 * drawn like "not held": a stage whose bound was not tested is grey and small, not red.
 *
 * Also the words a ✓ carries — what it proves, at which level, per stage — and the noise of a
 * held-out J point.
 *
 * Not here: deciding a verdict (heldCheck.ts, stage.ts; the charts' series.ts `heldUnder`) or
 * drawing a chart.
 */
import type { HeldState } from './heldCheck';

/** What one stage's certificate says: a held state, or that it proved an improvement. */
export type Verdict = HeldState | 'certified';

/** How a verdict is drawn on a chart: a circle at the point (radius, fill, outline, dash). */
export interface VerdictMark {
  readonly r: number;
  readonly fill: string;
  readonly stroke: string;
  readonly strokeWidth: number;
  readonly dash?: string;
}

/** The colours the marks use (the page's theme takes its ink and red from here). */
export const VERDICT_INK = '#1f2328';
export const VERDICT_RED = '#c62828';
export const VERDICT_GREY = '#5f6670';

export interface VerdictStyle {
  /** The CLI's column glyph. */
  readonly glyph: string;
  /** The word a tooltip or count uses. */
  readonly words: string;
  /** The legend's sentence: what the mark means. */
  readonly legend: string;
  /** The chart mark (certified has none of its own: a ✓ above the point's mark). */
  readonly mark?: VerdictMark;
}

export const VERDICTS: Record<Verdict, VerdictStyle> = {
  held: {
    glyph: '●', words: 'held', legend: 'held: the bound stayed at or below the real ΔJ',
    mark: { r: 4.5, fill: VERDICT_INK, stroke: '#fff', strokeWidth: 1 },
  },
  'not held': {
    glyph: '○', words: 'not held', legend: 'not held: the bound claimed more than the team gained',
    mark: { r: 4.25, fill: '#fff', stroke: VERDICT_RED, strokeWidth: 2 },
  },
  undecided: {
    glyph: '?', words: 'undecided', legend: 'undecided: the check\u2019s estimate of ΔJ is too noisy to tell',
    mark: { r: 4, fill: '#fff', stroke: VERDICT_GREY, strokeWidth: 1.5, dash: '2.5 2' },
  },
  unchecked: {
    glyph: '–', words: 'not checked', legend: 'not checked: the bound was not tested (held-out J is too noisy to test it)',
    mark: { r: 2.5, fill: VERDICT_GREY, stroke: 'none', strokeWidth: 0 },
  },
  certified: {
    glyph: '✓', words: 'certified', legend: '✓ certified: J on the training problems rose by at least the lower bound, with 95 % confidence for that stage',
  },
};

/** The verdicts in the order legends list them. */
export const VERDICT_ORDER: readonly Verdict[] = ['held', 'not held', 'undecided', 'unchecked', 'certified'];

/** δ_conf as the confidence level a page writes: "95 %". */
export function confidenceLevel(deltaConf: number): string {
  return `${Math.round(100 * (1 - deltaConf))} %`;
}

/** The number as a ✓'s sentence writes it: three decimals, or two significant digits below 0.001. */
function amount(x: number): string {
  return Math.abs(x) >= 0.001 ? x.toFixed(3) : x.toPrecision(2);
}

/**
 * What a ✓ proves, in one sentence: "J on the training problems rose by at least 0.001 (95 %)".
 * `exact`: tabular games, where J is J and there is no split of problems.
 */
export function certifiedSentence(lower: number, deltaConf: number, exact: boolean): string {
  const level = confidenceLevel(deltaConf);
  return `${exact ? 'J' : 'J on the training problems'} rose by at least ${amount(lower)} (${level})`;
}

/**
 * The per-stage meaning of the confidence level over a run: each ✓ is wrong with probability at
 * most δ_conf on its own, so over `stages` stages with no real change about stages × δ_conf would
 * show one.
 */
export function perStageNote(stages: number, deltaConf: number): string {
  return `the ${confidenceLevel(deltaConf)} is per stage: ${byChanceOver(stages, deltaConf)}`;
}

/** "over 30 stages with no real change about 1.5 would show a ✓" (perStageNote's second half). */
export function byChanceOver(stages: number, deltaConf: number): string {
  const expected = stages * deltaConf;
  return `over ${stages} stage${stages === 1 ? '' : 's'} with no real change about ${expected < 10 ? expected.toFixed(1) : expected.toFixed(0)} would show a ✓`;
}

/** A held-out J (or ΔJ) point with its noise: "−0.004 ± 0.030"; exact values alone. */
export function withNoise(x: number, halfWidth: number, digits = 3): string {
  const v = x.toFixed(digits).replace(/^-/, '\u2212');
  return Number.isFinite(halfWidth) && halfWidth > 0 ? `${v} ± ${halfWidth.toFixed(digits)}` : v;
}
