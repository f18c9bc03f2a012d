/**
 * One visual language for what the certificate says about a stage (docs/certificate.md §12): held,
 * not held, undecided, not checked — did the bound stay below the real ΔJ? — and certified — did
 * the bound prove an improvement? Each has one mark (its SVG circle on the charts, its glyph in the
 * CLI's columns) and one sentence for legends, so that the J chart, Compare orders, the stage
 * table, the certify report and the CLI draw and say them alike. "Not checked" is never drawn like
 * "not held": a stage whose bound was not tested is grey and small, not red. A measured claim's
 * verdict (the Claims view, Sweep δ) borrows the mark of its like: holds as held, does not hold as
 * not held, not established as undecided.
 *
 * Also the words a ✓ carries — what it proves, at which level, per stage — the noise of a
 * held-out J point, and what Check bound's "±" is and how it decides.
 *
 * Not here: deciding a verdict (heldCheck.ts, stage.ts; the charts' series.ts `heldUnder`) or
 * drawing a chart.
 */
import { HELD_Z, type HeldState } from './heldCheck';

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
    glyph: '✓', words: 'certified', legend: '✓ certified: J rose by at least the lower bound, which is above 0 (at the run\u2019s confidence, for that stage)',
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

/** The ✓'s legend at a level, on a game (`exact`) or a language team (J over its training problems). */
export function certifiedLegend(deltaConf: number, exact: boolean): string {
  return `✓ certified: ${exact ? 'J' : 'J on the training problems'} rose by at least the lower bound, which is above 0 (${confidenceLevel(deltaConf)}, for that stage)`;
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

/** The stages a "held in k of n checked" leaves out, by verdict: "2 not checked, 1 undecided". */
export function undecidedOrUnchecked(undecided: number, unchecked: number): string {
  return [unchecked > 0 ? `${unchecked} ${VERDICTS.unchecked.words}` : '', undecided > 0 ? `${undecided} ${VERDICTS.undecided.words}` : ''].filter(Boolean).join(', ');
}

/** A held-out J (or ΔJ) point with its noise: "−0.004 ± 0.030"; exact values alone. */
export function withNoise(x: number, halfWidth: number, digits = 3): string {
  const v = x.toFixed(digits).replace(/^-/, '\u2212');
  return Number.isFinite(halfWidth) && halfWidth > 0 ? `${v} ± ${halfWidth.toFixed(digits)}` : v;
}

/** A measured claim's (or one of its tests') verdict, as src/studies/claims.ts decides it. */
export type ClaimVerdict = 'holds' | 'does not hold' | 'not established';

/** The claim verdicts in the order a legend lists them. */
export const CLAIM_VERDICT_ORDER: readonly ClaimVerdict[] = ['holds', 'does not hold', 'not established'];

/**
 * Each claim verdict's mark: the certificate verdict it is like (its interval on the claimed side,
 * on the other side, or unable to tell), and its legend's sentence.
 */
export const CLAIM_VERDICTS: Record<ClaimVerdict, { readonly mark: Exclude<Verdict, 'certified' | 'unchecked'>; readonly legend: string }> = {
  holds: { mark: 'held', legend: 'holds: the 95 % interval lies where the claim\u2019s rule says it holds' },
  'does not hold': { mark: 'not held', legend: 'does not hold: the 95 % interval lies where the rule rules the claim out' },
  'not established': { mark: 'undecided', legend: 'not established: the 95 % interval is too wide to tell either way' },
};

/** The decided states of Check bound's test (heldCheck.ts) with the rule behind each. */
export const CHECK_RULE: Record<'held' | 'not held' | 'undecided', string> = {
  held: `the bound is at least ${HELD_Z} standard errors below the estimate`,
  'not held': `the bound is more than ${HELD_Z} standard errors above the estimate`,
  undecided: `the bound is within ${HELD_Z} standard errors of the estimate: it cannot tell`,
};

/**
 * What Check bound's "±" is, said wherever its estimate is shown: one standard error of the
 * common-random-numbers estimate of ΔJ over `pairs` pairs (about a 68 % interval; the verdict
 * needs two of them) — not the 95 % half-width a held-out J point carries.
 */
export function checkPlusMinus(pairs: number): string {
  return `± one standard error of the paired estimate, about a 68 % interval; ${pairs.toLocaleString('en')} pairs`;
}
