/**
 * The charts' data: pure functions (no React, no store) that turn what a run records —
 * `StageRecord[]`, one `AgentStepRecord`, sweep points, language episodes — into the rows each
 * chart plots (jSeries, waterfallRows, advantageRows, klRows, violation*, betaRows, orderRows,
 * transcriptRows, timelineStages). All the maths of the pictures lives here, so it is unit-tested
 * in Node on real runs (tests/charts.test.ts).
 *
 * Not here: drawing (the components beside this file), running anything, or formatting numbers
 * for people (../format.ts).
 */
import { fitPowerLaw, histogram, type PowerLawFit } from '../../core/stats';
import type { BoundTerms, CertForm } from '../../sat/certificate';
import type { DeltaSweepResult } from '../../studies/deltaSweep';
import { heldTolerance, type HeldState } from '../../sat/heldCheck';
import type { AgentStepRecord, StageRecord } from '../../sat/stage';

export type { HeldState };
import { findStep as findIn, refOf, type StepRef } from '../stepRef';
import { teamLevelBound } from './formulas';

export type { StepRef };

// ─────────────────────────────────────────────────────────────────────────────────────────────
// Shared shapes
// ─────────────────────────────────────────────────────────────────────────────────────────────

/** A stage still running: its order σ (when known) and the agent steps done so far. */
export interface PartialStage {
  readonly stage: number;
  readonly order?: readonly number[];
  readonly steps: readonly AgentStepRecord[];
}

/** Which certificate form a chart reads: the configured one ('chosen') or a named one. */
export type FormChoice = CertForm | 'chosen';

export function termsOf(rec: StageRecord, form: FormChoice): BoundTerms {
  return form === 'chosen' ? rec.certificate.chosen : form === 'gamma' ? rec.certificate.gamma : rec.certificate.episodic;
}

/** The form `chosen` stands for in this record. */
export function resolvedForm(rec: StageRecord, form: FormChoice): CertForm {
  return form === 'chosen' ? rec.certificate.form : form;
}

/** Realised ΔJ of a stage. */
function realisedDJ(rec: StageRecord): number {
  return rec.jAfter - rec.jBefore;
}

/**
 * How the bound of `form` stands against what the stage really did, as stage.ts decides cert/held
 * (docs/certificate.md): with exact J (tabular), lower ≤ ΔJ within a few ulps of |J|; with
 * estimated J (language teams), only a common-random-numbers check decides — the record's verdict
 * for its chosen form ('undecided' when the check could not tell), and 'unchecked' otherwise: a
 * noisy held-out ΔJ never decides it. Records saved before the verdict existed compare as before.
 */
export function heldUnder(rec: StageRecord, form: FormChoice): HeldState {
  const lower = termsOf(rec, form).lower;
  if (rec.evaluation.exact) return lower <= realisedDJ(rec) + heldTolerance(rec.jBefore, rec.jAfter) ? 'held' : 'not held';
  if (rec.held !== undefined) return resolvedForm(rec, form) === rec.certificate.form ? rec.held.state : 'unchecked';
  return lower <= realisedDJ(rec) ? 'held' : 'not held';
}

/**
 * "Certified" exactly as certificate.ts decides it: the lower bound is above 0, so the team
 * improved with probability ≥ 1 − δ_conf (docs/certificate.md §12). Records saved before the
 * field existed fall back to the same rule on their lower bound.
 */
export function certifiedUnder(rec: StageRecord, form: FormChoice): boolean {
  const t = termsOf(rec, form);
  return typeof t.certified === 'boolean' ? t.certified : t.lower > 0;
}

/**
 * A bound is vacuous when it promises less than nothing: below −span, where span = R_max − R_min is
 * the largest drop J can have at all. Without a span, any bound below −1e3 counts (the paper's γ = 0.99
 * form sits near −4.7e4 for n = 3, A_max = 5).
 */
export function isVacuous(lower: number, span?: number): boolean {
  const floor = span !== undefined && span > 0 ? -span : -1e3;
  return !(lower > floor);
}

/** Every agent step in execution order: finished stages, then the running one. */
export function allSteps(records: readonly StageRecord[], current?: PartialStage | null): AgentStepRecord[] {
  const out: AgentStepRecord[] = [];
  for (const r of records) out.push(...r.steps);
  if (current && !records.some((r) => r.stage === current.stage)) out.push(...current.steps);
  return out;
}

/** The agent step `ref` points at (a stage without an agent: its last step), or null. */
export function findStep(records: readonly StageRecord[], current: PartialStage | null | undefined, ref: StepRef | null | undefined): AgentStepRecord | null {
  return findIn(allSteps(records, current), ref);
}

/** The step `ref` names, with its agent filled in ({stage} names the stage's last step); null if it has not run. */
export function toStepRef(records: readonly StageRecord[], current: PartialStage | null | undefined, ref: StepRef | null | undefined): Required<StepRef> | null {
  const s = findStep(records, current, ref);
  return s ? { stage: s.stage, agent: s.agent } : null;
}

/** The running stage as the charts take it, from the steps done so far (null between stages). */
export function partialStage(partial: readonly AgentStepRecord[], order?: readonly number[]): PartialStage | null {
  const first = partial[0];
  return first ? { stage: first.stage, steps: partial, ...(order ? { order } : {}) } : null;
}

/** The latest agent step run ("where we are"), or null before the first. */
export function lastStepRef(records: readonly StageRecord[], current?: PartialStage | null): Required<StepRef> | null {
  const steps = allSteps(records, current);
  const s = steps[steps.length - 1];
  return s ? { stage: s.stage, agent: s.agent } : null;
}

function num(m: StageRecord['metrics'], key: string): number {
  const v = m[key];
  return typeof v === 'number' ? v : Number.NaN;
}

/**
 * A domain widened outward to round numbers and its ticks, about `count` of them, on a 1–2–5 step
 * (Heckbert's "nice numbers"): [−3.867, 6.191] → [−4, 7] with ticks every 1 or 2.
 */
export function niceScale(lo: number, hi: number, count = 5): { domain: [number, number]; ticks: number[] } {
  if (!(Number.isFinite(lo) && Number.isFinite(hi))) return { domain: [0, 1], ticks: [0, 1] };
  if (hi <= lo) {
    const d = Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1;
    lo -= d;
    hi += d;
  }
  const raw = (hi - lo) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  const a = Math.floor(lo / step + 1e-9) * step;
  const b = Math.ceil(hi / step - 1e-9) * step;
  const ticks: number[] = [];
  for (let k = 0; a + k * step <= b + step * 1e-9; k++) ticks.push(Number((a + k * step).toPrecision(12)));
  return { domain: [ticks[0]!, ticks[ticks.length - 1]!], ticks };
}

/** Ticks at the powers of ten covering [lo, hi] (both > 0), and that domain. */
export function decadeTicks(lo: number, hi: number): { domain: [number, number]; ticks: number[] } {
  const a = Math.floor(Math.log10(lo));
  const b = Math.max(a + 1, Math.ceil(Math.log10(hi)));
  const ticks = Array.from({ length: b - a + 1 }, (_, k) => Number(`1e${a + k}`)); // exact, unlike 10 ** −4
  return { domain: [ticks[0]!, ticks[ticks.length - 1]!], ticks };
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// Team J per stage, band, certified floor
// ─────────────────────────────────────────────────────────────────────────────────────────────

export interface JRow {
  readonly stage: number;
  /** Team J after the stage (stage 0: the initial team). */
  readonly j: number;
  /** Half-width of J's 95 % interval (0 when J is exact). */
  readonly ci: number;
  /** [J − ci, J + ci], the band recharts draws as a range area. */
  readonly band: readonly [number, number];
  /** J_before + lower bound: the certificate's promise for this stage's J (null at stage 0). */
  readonly floor: number | null;
  /** The floor as drawn: clipped to the domain's bottom when off the scale. */
  readonly floorShown: number | null;
  /** True when the floor lies below the chart's domain (drawn as ▼ at the bottom edge). */
  readonly floorClipped: boolean;
  /** The bound against what the stage did (heldUnder; null at stage 0). */
  readonly held: HeldState | null;
  /** Lower bound > 0: the stage certifiably improved the team (null at stage 0). */
  readonly certified: boolean | null;
  readonly dJ: number | null;
  readonly lower: number | null;
  /** The row's J again, only for held / not-held stages: the marks' series. */
  readonly jHeld: number | null;
  readonly jNotHeld: number | null;
}

export interface JSeries {
  readonly rows: JRow[];
  readonly domain: readonly [number, number];
  /** Round tick values spanning the domain. */
  readonly ticks: readonly number[];
  /** Stages whose floor is below the drawn domain. */
  readonly clipped: number;
  /** The overlaid run's J per stage (its stage 0 included), [] when none. */
  readonly overlay: readonly { readonly stage: number; readonly j: number }[];
  readonly heldCount: number;
  /** Stages whose verdict is decided (held or not held): all of them with exact J. */
  readonly checkedCount: number;
  /** Of the rest, the stages checked but undecided (the others were not checked). */
  readonly undecidedCount: number;
  /** Stages whose bound is above 0 (certified improvement). */
  readonly certifiedCount: number;
  readonly stages: number;
  /** Stages whose bound is vacuous (below −span). */
  readonly vacuous: number;
  /** Every J (and the overlay's) rounds to one value at 3 decimals: drawn as a flat line, "no change". */
  readonly flat: boolean;
}

/** The J axis's least height: five ticks 0.001 or more apart, so distinct at J's 3 decimals. */
export const J_MIN_SPAN = 0.006;
/** Half the rounding of J's 3 decimals: values closer than this to one another print the same. */
const J_ROUNDING = 5e-4;

/**
 * J per stage with its band, the certified floor, and per stage whether the certificate held
 * (bound ≤ realised ΔJ) and whether it certified an improvement (bound > 0) — two different
 * claims: a vacuous bound holds without certifying anything. The y-domain covers every band and
 * every floor that lies within one "J range" (at least `span`/4, at least 0.1) below the lowest
 * band; floors further down are clipped to the bottom edge and counted, so one vacuous bound cannot
 * squash the J curve into a flat line.
 */
export function jSeries(records: readonly StageRecord[], opts: { form?: FormChoice; span?: number; j0ci?: number; overlay?: readonly StageRecord[] } = {}): JSeries {
  const form = opts.form ?? 'chosen';
  const raw: Omit<JRow, 'floorShown' | 'floorClipped'>[] = [];
  const first = records[0];
  if (first) {
    const j = first.jBefore;
    const ci = opts.j0ci !== undefined && Number.isFinite(opts.j0ci) ? opts.j0ci : 0;
    raw.push({ stage: first.stage - 1, j, ci, band: [j - ci, j + ci], floor: null, held: null, certified: null, dJ: null, lower: null, jHeld: null, jNotHeld: null });
  }
  for (const r of records) {
    const ci = Number.isFinite(r.evaluation.ci) ? r.evaluation.ci : 0;
    const lower = termsOf(r, form).lower;
    const dJ = realisedDJ(r);
    const held = heldUnder(r, form);
    raw.push({
      stage: r.stage, j: r.jAfter, ci, band: [r.jAfter - ci, r.jAfter + ci], floor: r.jBefore + lower, held, certified: certifiedUnder(r, form), dJ, lower,
      jHeld: held === 'held' ? r.jAfter : null, jNotHeld: held === 'not held' ? r.jAfter : null,
    });
  }
  // Another run of the same seed (the J chart's dashed overlay): its J per stage as `other`, on
  // the rows of the same stage, extra rows past this run's last stage.
  const other = new Map<number, number>();
  const ov = opts.overlay ?? [];
  if (ov.length > 0 && first) {
    other.set(ov[0]!.stage - 1, ov[0]!.jBefore);
    for (const r of ov) other.set(r.stage, r.jAfter);
  }
  let lo = Infinity;
  let hi = -Infinity;
  for (const r of raw) {
    lo = Math.min(lo, r.band[0]);
    hi = Math.max(hi, r.band[1]);
  }
  for (const v of other.values()) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  if (!Number.isFinite(lo)) return { rows: [], overlay: [], domain: [0, 1], ticks: [0, 1], clipped: 0, heldCount: 0, checkedCount: 0, undecidedCount: 0, certifiedCount: 0, stages: 0, vacuous: 0, flat: false };
  const js = [...raw.map((r) => r.j), ...other.values()];
  const flat = raw.length > 1 && Math.max(...js) - Math.min(...js) < J_ROUNDING;
  const reach = Math.max(hi - lo, (opts.span ?? 0) / 4, 0.1);
  const allowed = lo - reach;
  for (const r of raw) if (r.floor !== null && Number.isFinite(r.floor) && r.floor >= allowed) lo = Math.min(lo, r.floor);
  // At least J_MIN_SPAN tall: the ticks, printed to 3 decimals, then never repeat a label. A flat
  // J gets an axis a quarter of J's range tall (at least 0.1), so no rounding wiggle looks like a result.
  const minSpan = flat ? Math.max(0.1, (opts.span ?? 0) / 4) : J_MIN_SPAN;
  const pad = Math.max((hi - lo) * 0.04, (minSpan - (hi - lo)) / 2, 1e-3);
  const nice = niceScale(lo - pad, hi + pad);
  const domain = nice.domain;
  let clipped = 0;
  const rows: JRow[] = raw.map((r) => {
    const off = r.floor !== null && !(r.floor >= domain[0]);
    if (off) clipped++;
    return { ...r, floorShown: r.floor === null ? null : off ? domain[0] : r.floor, floorClipped: off };
  });
  const overlay = [...other].sort((a, b) => a[0] - b[0]).map(([stage, j]) => ({ stage, j }));
  const staged = rows.filter((r) => r.held !== null);
  return {
    rows, domain, ticks: nice.ticks, clipped,
    overlay, flat,
    heldCount: staged.filter((r) => r.held === 'held').length,
    checkedCount: staged.filter((r) => r.held === 'held' || r.held === 'not held').length,
    undecidedCount: staged.filter((r) => r.held === 'undecided').length,
    certifiedCount: staged.filter((r) => r.certified).length,
    stages: staged.length,
    vacuous: staged.filter((r) => isVacuous(r.lower!, opts.span)).length,
  };
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// Certificate waterfall
// ─────────────────────────────────────────────────────────────────────────────────────────────

/**
 * gain: Σ fresh gains (the certification batch); insample: Σ gains on the agents' own training
 * batches (a diagnostic beside it, not in the sum); shift, bias, finite: the penalties; lower, realised:
 * the totals; agent: one agent's share of a language stage's team-level fresh gain (a diagnostic,
 * not in the sum and not a bound on that agent's ΔJ, docs/certificate.md §5.1).
 */
export type WaterfallKind = 'insample' | 'gain' | 'shift' | 'bias' | 'finite' | 'lower' | 'realised' | 'agent';

export interface WaterfallRow {
  readonly kind: WaterfallKind;
  readonly label: string;
  /** The term's signed contribution (gain +, penalties −); for totals and the diagnostic, the value itself. */
  readonly value: number;
  /** Where the bar starts and ends on the ΔJ axis. */
  readonly from: number;
  readonly to: number;
  /** [min(from, to), max(from, to)]: the floating bar. */
  readonly range: readonly [number, number];
  /** Totals (lower bound, realised ΔJ) and the diagnostic start at 0; terms float. */
  readonly total: boolean;
  /** True for a step of the running sum fresh gain → −shift → −bias → −finite = lower bound. */
  readonly inSum: boolean;
  /** kind 'agent': the agent, its position in the stage's order σ and its own bound L_i (a diagnostic too). */
  readonly agent?: { readonly index: number; readonly position: number; readonly lower: number };
}

export interface Waterfall {
  readonly rows: WaterfallRow[];
  readonly form: CertForm;
  readonly terms: BoundTerms;
  readonly dJ: number;
  readonly held: HeldState;
  /** Lower bound > 0: a certified improvement (docs/certificate.md §12). */
  readonly certified: boolean;
  readonly vacuous: boolean;
  /** How many times larger the penalties are than the gain (Infinity when the gain is ≤ 0). */
  readonly penaltyOverGain: number;
  /** In-sample gain − fresh gain: how much scoring an update on its own training data flattered it (NaN when not recorded). */
  readonly optimism: number;
  /** Rows of kind 'agent' follow the totals: a language stage's team-level bound, shown in the episodic form. */
  readonly agentShares: boolean;
}

function bar(kind: WaterfallKind, label: string, value: number, from: number, to: number, total: boolean, inSum: boolean): WaterfallRow {
  return { kind, label, value, from, to, range: [Math.min(from, to), Math.max(from, to)], total, inSum };
}

/** Ulps of a value's scale below which a difference is float rounding, not a change (see `dropNoise`). */
const NOISE_ULPS = 8;

/**
 * `x`, or exactly 0 when |x| is within NOISE_ULPS ulps of `scale` (the size of the quantities it
 * was computed from): J − J of an unchanged team is ±1e−17, not a change to draw as a bar.
 */
export function dropNoise(x: number, scale: number): number {
  return Number.isFinite(x) && Math.abs(x) <= NOISE_ULPS * Number.EPSILON * Math.abs(scale) ? 0 : x;
}

/**
 * The bound of one stage as cumulative bars: the fresh gain from 0 up, then each penalty down from
 * where the previous bar ended; the running end after "−finite" is exactly the lower bound (the
 * last step is drawn to it, so float rounding in gain − finite cannot leave a gap), drawn again as
 * a total from 0, beside the realised ΔJ. The in-sample gain stands first, from 0, as a diagnostic
 * outside the sum (omitted for records saved before it was measured). A language stage's
 * team-level bound (episodic form) is followed by each agent's share of its fresh gain, from 0 in
 * the order σ: diagnostics of who contributed — with a finite c only their sum lies below ΔJ.
 */
export function waterfallRows(rec: StageRecord, form: FormChoice = 'chosen', span?: number): Waterfall {
  const raw = termsOf(rec, form);
  // Drawn at the precision of the numbers they come from: a term or ΔJ within a few ulps of J's
  // scale is drawn as 0. `held` stays the recorded decision (stage.ts compares the raw numbers).
  const scale = Math.max(Math.abs(rec.jBefore), Math.abs(rec.jAfter), span ?? 0);
  const t: BoundTerms = { ...raw, gain: dropNoise(raw.gain, scale), shift: dropNoise(raw.shift, scale), bias: dropNoise(raw.bias, scale), finite: dropNoise(raw.finite, scale), lower: dropNoise(raw.lower, scale) };
  const dJ = dropNoise(realisedDJ(rec), scale);
  const rows: WaterfallRow[] = [];
  const inSample = typeof t.gainInSample === 'number' && Number.isFinite(t.gainInSample) ? dropNoise(t.gainInSample, scale) : Number.NaN;
  if (Number.isFinite(inSample)) rows.push(bar('insample', 'in-sample gain (optimistic)', inSample, 0, inSample, true, false));
  let at = 0;
  rows.push(bar('gain', 'fresh gain', t.gain, at, (at += t.gain), false, true));
  rows.push(bar('shift', '−shift', -t.shift, at, (at -= t.shift), false, true));
  rows.push(bar('bias', '−bias', -t.bias, at, (at -= t.bias), false, true));
  rows.push(bar('finite', '−finite', -t.finite, at, t.lower, false, true));
  rows.push(bar('lower', '= bound', t.lower, 0, t.lower, true, false));
  rows.push(bar('realised', 'real ΔJ', dJ, 0, dJ, true, false));
  const resolved = resolvedForm(rec, form);
  const agentShares = resolved === 'episodic' && teamLevelBound(rec.metrics) && rec.steps.length > 0;
  if (agentShares) {
    rec.steps.forEach((s, position) => {
      const share = dropNoise(s.cert.gain, scale);
      rows.push({ ...bar('agent', `agent ${s.agent} share`, share, 0, share, true, false), agent: { index: s.agent, position, lower: s.cert.lower } });
    });
  }
  const penalties = t.shift + t.bias + t.finite;
  return {
    rows, form: resolved, terms: t, dJ, held: heldUnder(rec, form), certified: certifiedUnder(rec, form), vacuous: isVacuous(t.lower, span),
    penaltyOverGain: t.gain > 0 ? penalties / t.gain : Infinity,
    optimism: inSample - t.gain,
    agentShares,
  };
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// Histograms: advantages and per-state KL
// ─────────────────────────────────────────────────────────────────────────────────────────────

export interface BinRow {
  readonly lo: number;
  readonly hi: number;
  readonly mid: number;
  readonly count: number;
}

export type AdvMode = 'norm' | 'raw';

/** The chart's bins: odd, so that 0 sits in the middle of a bin (a "no signal" spike is centred). */
export const ADV_BINS = 21;

/** |advantage| below this counts as 0: Ã of a group whose rewards are all equal is (float noise)/(σ + ε) ≈ 1e−7. */
export const ADV_ZERO = 1e-6;

/**
 * Histogram of one agent step's advantages, one value per episode of its batch: normalised
 * (Ã, the value the objective sees; range [−A_clip, A_clip] when `aClip` covers the data) or raw
 * (R − μ in reward units; symmetric range from the data). Every episode falls in a bin.
 */
export function advantageRows(step: AgentStepRecord, mode: AdvMode, opts: { bins?: number; aClip?: number } = {}): BinRow[] {
  const xs = mode === 'norm' ? step.advNorm : step.advRaw;
  return symmetricHistogram(xs, opts.bins ?? ADV_BINS, mode === 'norm' ? opts.aClip : undefined);
}

/** Equal-width bins over [−m, m], m = max(|x|) (or `cover` when it is at least that). */
export function symmetricHistogram(xs: ArrayLike<number>, bins: number, cover?: number): BinRow[] {
  let m = 0;
  for (let i = 0; i < xs.length; i++) if (Number.isFinite(xs[i]!)) m = Math.max(m, Math.abs(xs[i]!));
  if (cover !== undefined && cover >= m && cover > 0) m = cover;
  if (!(m > 0)) m = 1;
  const finite = Array.from(xs).filter(Number.isFinite);
  const h = histogram(finite, bins, [-m, m]);
  return h.counts.map((count, i) => {
    const lo = h.edges[i]!;
    const hi = h.edges[i + 1]!;
    return { lo, hi, mid: (lo + hi) / 2, count };
  });
}

export interface KlHistogram {
  /** Bins in log10(κ): lo/hi/mid are log10 values; the first bin also holds κ = 0 and anything below. */
  readonly rows: (BinRow & { readonly over: boolean })[];
  /** log10 δ and log10 q (q = the monitor's (1−α)-quantile; −Infinity when 0). */
  readonly logDelta: number;
  readonly logQ: number;
  readonly n: number;
  readonly zeros: number;
}

/**
 * Per-visit KL κ(s) of one agent step on log-spaced bins (`perDecade` bins per factor of 10), from a
 * decade below the smaller of min κ > 0 and δ/100 up to a decade containing max(max κ, δ). Zero KLs
 * (an unchanged state) count in the first bin. Bins starting at or above δ are marked `over`.
 */
export function klRows(step: AgentStepRecord, perDecade = 4): KlHistogram {
  const kl = step.kl;
  const delta = step.delta;
  let minPos = Infinity;
  let max = 0;
  let zeros = 0;
  for (let i = 0; i < kl.length; i++) {
    const k = kl[i]!;
    if (k > 0) minPos = Math.min(minPos, k);
    else zeros++;
    max = Math.max(max, k);
  }
  const lowAnchor = Math.min(Number.isFinite(minPos) ? minPos : Infinity, delta > 0 ? delta / 100 : 1e-6);
  const loDec = Math.floor(Math.log10(lowAnchor > 0 ? lowAnchor : 1e-6));
  const topVal = Math.max(max, delta > 0 ? delta : 0, 10 ** (loDec + 1));
  let hiDec = Math.ceil(Math.log10(topVal));
  if (hiDec <= loDec) hiDec = loDec + 1;
  const bins = (hiDec - loDec) * perDecade;
  const logs = Array.from(kl, (k) => (k > 0 ? Math.min(hiDec, Math.max(loDec, Math.log10(k))) : loDec));
  const h = histogram(logs, bins, [loDec, hiDec]);
  const ld = delta > 0 ? Math.log10(delta) : -Infinity;
  return {
    rows: h.counts.map((count, i) => {
      const lo = h.edges[i]!;
      const hi = h.edges[i + 1]!;
      return { lo, hi, mid: (lo + hi) / 2, count, over: lo >= ld - 1e-12 };
    }),
    logDelta: ld,
    logQ: step.check.q > 0 ? Math.log10(step.check.q) : -Infinity,
    n: kl.length,
    zeros,
  };
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// KL violation rate against δ
// ─────────────────────────────────────────────────────────────────────────────────────────────

export interface ViolationPoint {
  readonly delta: number;
  /** Fraction of visited states with κ(s) > δ. */
  readonly rate: number;
  /** Where the point comes from ("this run", "sweep seed 3", …). */
  readonly source: string;
  /** How many agent steps the rate averages (1 for a single step). */
  readonly weight?: number;
}

/** One point per agent step of a run: (δ_j, its violation rate). */
export function violationPointsFromStages(records: readonly StageRecord[], source = 'this run', current?: PartialStage | null): ViolationPoint[] {
  return allSteps(records, current).map((s) => ({ delta: s.delta, rate: s.check.violRate, source, weight: 1 }));
}

/** Points from whole runs, one per agent step (a δ sweep the session ran: one run per δ). */
export function violationPointsFromRuns(runs: readonly { readonly stages: readonly StageRecord[] }[], source = 'δ sweep'): ViolationPoint[] {
  return runs.flatMap((r) => violationPointsFromStages(r.stages, source));
}

/** Points from a sweep (the CLI's `--sweep delta=… --json` gives `values` and `violation`). */
export function violationPointsFromSweep(deltas: readonly number[], rates: readonly number[], source = 'sweep'): ViolationPoint[] {
  if (deltas.length !== rates.length) throw new RangeError(`violationPointsFromSweep: ${deltas.length} δ values but ${rates.length} rates`);
  return deltas.map((delta, i) => ({ delta, rate: rates[i]!, source }));
}

/** Mean rate per (source, δ), weighted by each point's weight. */
export function aggregateViolation(points: readonly ViolationPoint[]): ViolationPoint[] {
  const by = new Map<string, { delta: number; source: string; s: number; w: number }>();
  for (const p of points) {
    if (!(p.delta > 0) || !Number.isFinite(p.rate)) continue;
    const key = `${p.source}\u0000${p.delta}`;
    const w = p.weight ?? 1;
    const e = by.get(key) ?? { delta: p.delta, source: p.source, s: 0, w: 0 };
    e.s += p.rate * w;
    e.w += w;
    by.set(key, e);
  }
  return [...by.values()].map((e) => ({ delta: e.delta, rate: e.w > 0 ? e.s / e.w : 0, source: e.source, weight: e.w })).sort((a, b) => a.delta - b.delta);
}

export interface ViolationFit extends PowerLawFit {
  /** The fitted line at its two ends, for drawing: [δ, c·δ^p]. */
  readonly line: readonly (readonly [number, number])[];
}

/**
 * v ≈ c·δ^p by least squares in log–log space on the aggregated points with rate > 0 (stats.fitPowerLaw);
 * null when fewer than two distinct δ have a positive rate.
 */
export function violationFit(points: readonly ViolationPoint[]): ViolationFit | null {
  const agg = aggregateViolation(points).filter((p) => p.rate > 0);
  if (new Set(agg.map((p) => p.delta)).size < 2) return null;
  const f = fitPowerLaw(agg.map((p) => p.delta), agg.map((p) => p.rate));
  const lo = Math.min(...agg.map((p) => p.delta));
  const hi = Math.max(...agg.map((p) => p.delta));
  return { ...f, line: [[lo, f.c * lo ** f.p], [hi, f.c * hi ** f.p]] };
}

/**
 * A √δ reference line c₀·δ^½ through the geometric centre of the positive points (so only its
 * slope carries meaning), over [δ_lo, δ_hi] of the data widened by ×/÷ 2; null without positive points.
 */
export function sqrtReference(points: readonly ViolationPoint[]): (readonly [number, number])[] | null {
  const pos = aggregateViolation(points).filter((p) => p.rate > 0);
  if (pos.length === 0) return null;
  const mx = pos.reduce((s, p) => s + Math.log(p.delta), 0) / pos.length;
  const my = pos.reduce((s, p) => s + Math.log(p.rate), 0) / pos.length;
  const c0 = Math.exp(my - 0.5 * mx);
  const lo = Math.min(...pos.map((p) => p.delta)) / 2;
  const hi = Math.max(...pos.map((p) => p.delta)) * 2;
  return [[lo, c0 * Math.sqrt(lo)], [hi, c0 * Math.sqrt(hi)]];
}

/** One δ of a δ sweep (src/studies/deltaSweep.ts, docs/method.md §9.2): its pooled violation rate, and the scaling check. */
export interface SweepViolationPoint extends ViolationPoint {
  /** Mean per-visit KL / δ (flat across δ ⇔ the step was scaled to the radius). */
  readonly klOverDelta: number;
  readonly lr: number;
  /** Seeds pooled into the rate. */
  readonly seeds: number;
}

/** The sweep's label on the chart: which lr protocol it ran. */
function deltaSweepSource(r: DeltaSweepResult): string {
  // A language team's states are token prefixes (protocol.states = 0): name the team, not a table shape.
  const game = r.protocol.states === 0 ? `${r.protocol.task} team of ${r.protocol.agents}` : `${r.protocol.task} ${r.protocol.agents}×${r.protocol.actions}`;
  return r.protocol.lrScaling === 'sqrt' ? `δ sweep (${game}), lr ∝ √δ` : `δ sweep (${game}), lr fixed`;
}

/** One point per δ of a sweep (rate pooled over seeds, weighted by visits). */
export function violationPointsFromDeltaSweep(r: DeltaSweepResult, source = deltaSweepSource(r)): SweepViolationPoint[] {
  return r.points.map((p) => ({ delta: p.delta, rate: p.violRate, source, weight: p.visits, klOverDelta: p.klOverDelta, lr: p.lr, seeds: r.protocol.seeds.length }));
}

export interface DeltaSweepFitView extends ViolationFit {
  /** The bootstrap 95 % interval of p (over seeds), if the sweep had more than one seed. */
  readonly ci: { readonly lo: number; readonly hi: number } | null;
  /** Lines of slope ci.lo and ci.hi through the fit at the geometric centre of the fitted δ: the interval, drawn. */
  readonly band: { readonly lo: readonly (readonly [number, number])[]; readonly hi: readonly (readonly [number, number])[] } | null;
}

/** The sweep's own fit v ≈ c·δ^p (rates pooled over seeds) with its interval; null without a fit. */
export function deltaSweepFit(r: DeltaSweepResult): DeltaSweepFitView | null {
  if (!r.fit) return null;
  const used = r.points.filter((p) => p.violRate > 0).map((p) => p.delta);
  const lo = Math.min(...used);
  const hi = Math.max(...used);
  const { c, p } = r.fit;
  const line: [number, number][] = [[lo, c * lo ** p], [hi, c * hi ** p]];
  if (!r.ci) return { ...r.fit, line, ci: null, band: null };
  const mid = Math.exp(used.reduce((s, d) => s + Math.log(d), 0) / used.length);
  const vMid = c * mid ** p;
  const through = (q: number): [number, number][] => [[lo, vMid * (lo / mid) ** q], [hi, vMid * (hi / mid) ** q]];
  return { ...r.fit, line, ci: { lo: r.ci.lo, hi: r.ci.hi }, band: { lo: through(r.ci.lo), hi: through(r.ci.hi) } };
}

/** The scaling check in three numbers: the smallest and largest per-δ mean KL/δ, and their ratio (1 = exact). */
export function klScaleCheck(r: DeltaSweepResult): { readonly min: number; readonly max: number; readonly spread: number } {
  const ks = r.points.map((p) => p.klOverDelta);
  const min = Math.min(...ks);
  const max = Math.max(...ks);
  return { min, max, spread: min > 0 ? max / min : Number.NaN };
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// β and backtracks per agent step
// ─────────────────────────────────────────────────────────────────────────────────────────────

export interface BetaRow {
  /** 1-based index of the agent step in the run. */
  readonly i: number;
  /** "stage·position", position 1-based in σ. */
  readonly label: string;
  readonly stage: number;
  readonly position: number;
  readonly agent: number;
  /** β after this step (what the agent carries into its next update). */
  readonly beta: number;
  readonly backtracks: number;
  readonly accepted: boolean;
  /** `beta<j>`: β for agent j at its own steps only (one line per agent); `bt<j>`: same for backtracks. */
  readonly [perAgent: `beta${number}` | `bt${number}`]: number | undefined;
}

export function betaRows(records: readonly StageRecord[], current?: PartialStage | null): BetaRow[] {
  return allSteps(records, current).map((s, k) => {
    const beta = num(s.metrics, `agent/${s.agent}/beta`);
    return {
      i: k + 1, label: `${s.stage}·${s.position + 1}`, stage: s.stage, position: s.position, agent: s.agent,
      beta, backtracks: s.backtracks, accepted: s.accepted,
      [`beta${s.agent}`]: beta, [`bt${s.agent}`]: s.backtracks,
    } as BetaRow;
  });
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// Order comparison
// ─────────────────────────────────────────────────────────────────────────────────────────────

export interface OrderSeries {
  /** What the reader sees: "σ = 0→1→2", "random", … */
  readonly label: string;
  /** The run's finished stages (the store's `SeriesRun` has this shape). */
  readonly stages: readonly StageRecord[];
}

export interface OrderRow {
  readonly stage: number;
  /**
   * `s<k>`: series k's J after the stage; `h<k>`: its verdict's code (HELD_CODE: 1 held, 0 not
   * held, 2 undecided, 3 not checked; undefined at stage 0); `e<k>`:
   * the 95 % half-width of that J's held-out evaluation (StageRecord.evaluation.ci), where it is
   * an estimate (undefined where J is exact, and at the start).
   */
  readonly [key: `s${number}` | `h${number}` | `e${number}`]: number | undefined;
}

/** A held state as a number in an order row (rows hold numbers), and back. */
export const HELD_CODE: Record<HeldState, number> = { held: 1, 'not held': 0, undecided: 2, unchecked: 3 };
export const HELD_OF_CODE: readonly HeldState[] = ['not held', 'held', 'undecided', 'unchecked'];

/** One row per stage (stage 0 = each series' start), series k's J under `s<k>`, its CI half-width under `e<k>`. */
export function orderRows(series: readonly OrderSeries[], form: FormChoice = 'chosen'): OrderRow[] {
  const rows = new Map<number, Record<string, number>>();
  const at = (stage: number) => {
    let r = rows.get(stage);
    if (!r) rows.set(stage, (r = { stage }));
    return r;
  };
  series.forEach((s, k) => {
    const first = s.stages[0];
    if (first) at(first.stage - 1)[`s${k}`] = first.jBefore;
    for (const r of s.stages) {
      const row = at(r.stage);
      row[`s${k}`] = r.jAfter;
      row[`h${k}`] = HELD_CODE[heldUnder(r, form)];
      if (!r.evaluation.exact && Number.isFinite(r.evaluation.ci) && r.evaluation.ci > 0) row[`e${k}`] = r.evaluation.ci;
    }
  });
  return [...rows.values()].sort((a, b) => a.stage! - b.stage!) as unknown as OrderRow[];
}

/** Final J (with its 95 % half-width, 0 when exact), held and decided (held or not held) counts of each series, for the legend. */
export function orderSummary(series: readonly OrderSeries[], form: FormChoice = 'chosen'): { label: string; finalJ: number; finalCi: number; held: number; checked: number; undecided: number; stages: number }[] {
  return series.map((s) => {
    const last = s.stages[s.stages.length - 1];
    const ci = last && !last.evaluation.exact && Number.isFinite(last.evaluation.ci) ? last.evaluation.ci : 0;
    const states = s.stages.map((r) => heldUnder(r, form));
    return { label: s.label, finalJ: last ? last.jAfter : Number.NaN, finalCi: ci, held: states.filter((h) => h === 'held').length, checked: states.filter((h) => h === 'held' || h === 'not held').length, undecided: states.filter((h) => h === 'undecided').length, stages: s.stages.length };
  });
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// Transcripts (language tasks)
// ─────────────────────────────────────────────────────────────────────────────────────────────

/** One message as a rollout records it (src/tasks/llm/protocols.ts `Message`). */
export interface TranscriptMessage {
  readonly turn: number;
  readonly agent: number;
  readonly text: string;
}

/** One episode as LmEnv records it (src/sat/env/lm.ts `LmEpisodeRecord`, which this shape accepts as is). */
export interface TranscriptEpisode {
  readonly problem: { readonly id: string; readonly prompt: string; readonly answer: string };
  readonly sample: number;
  readonly messages: readonly TranscriptMessage[];
  readonly reward: number;
  readonly correct: boolean;
  /** The verifier's reason, when it gave one (teamVerdict(...).reason). */
  readonly reason?: string;
}

/**
 * A rollout's episodes tagged with when they were sampled: in stage `stage`, just before the agent
 * at position `before` of σ was updated, i.e. under π̂^before (0 = the stage batch, under π_cur).
 * That is what `LmEnv.lastEpisodes` holds right after the stage loop yields the step at `before`
 * (the stage batch, the resample batch or the bias probe — all sampled under π̂^before).
 */
export interface TranscriptBatch {
  readonly stage: number;
  readonly before: number;
  readonly episodes: readonly TranscriptEpisode[];
}

export interface TranscriptCell extends TranscriptMessage {
  /** The agent step whose update produced the policy that wrote this message; null = the initial policy. */
  readonly producer: StepRef | null;
}

export interface TranscriptRow {
  readonly key: string;
  readonly prompt: string;
  readonly reference: string;
  readonly messages: readonly TranscriptCell[];
  readonly reward: number;
  readonly correct: boolean;
  readonly reason?: string;
}

/**
 * Which agent step wrote agent `agent`'s policy at the moment (stage, before): its latest accepted
 * step that ran before it — in this stage at a position < `before`, or in an earlier stage. A
 * rejected step kept π_cur, so it produced nothing. Null: the agent still has its initial policy.
 */
export function producerOf(agent: number, at: { stage: number; before: number }, records: readonly StageRecord[], current?: PartialStage | null): StepRef | null {
  const steps = allSteps(records, current);
  for (let k = steps.length - 1; k >= 0; k--) {
    const s = steps[k]!;
    if (s.agent !== agent || !s.accepted) continue;
    if (s.stage < at.stage || (s.stage === at.stage && s.position < at.before)) return refOf(s);
  }
  return null;
}

/** Language episodes with, per message, the agent step whose policy wrote it (the latest accepted step of its agent before the rollout). */
export function transcriptRows(batch: TranscriptBatch | null | undefined, records: readonly StageRecord[], opts: { current?: PartialStage | null; limit?: number } = {}): TranscriptRow[] {
  if (!batch) return [];
  const cache = new Map<number, StepRef | null>();
  const prod = (a: number) => {
    if (!cache.has(a)) cache.set(a, producerOf(a, batch, records, opts.current));
    return cache.get(a)!;
  };
  return batch.episodes.slice(0, opts.limit ?? 12).map((e, k) => ({
    key: `${batch.stage}.${batch.before}.${k}`,
    prompt: e.problem.prompt,
    reference: e.problem.answer,
    messages: e.messages.map((m) => ({ turn: m.turn, agent: m.agent, text: m.text, producer: prod(m.agent) })),
    reward: e.reward,
    correct: e.correct,
    ...(e.reason !== undefined ? { reason: e.reason } : {}),
  }));
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// Timeline: stages × agents
// ─────────────────────────────────────────────────────────────────────────────────────────────

/** done: accepted, no backtrack; backtracked: accepted after ≥ 1 backtrack; rejected: kept π_cur; pending: not run yet. */
export type CellStatus = 'done' | 'backtracked' | 'rejected' | 'pending';

export interface TimelineCell {
  readonly stage: number;
  readonly agent: number;
  /** 1-based position in σ; null when σ is not known yet. */
  readonly position: number | null;
  readonly status: CellStatus;
  readonly backtracks: number;
}

export interface TimelineStage {
  readonly stage: number;
  /** σ, when known. */
  readonly order: readonly number[] | null;
  /** One cell per agent, by agent index. */
  readonly cells: readonly TimelineCell[];
  readonly finished: boolean;
  /** The chosen bound against what the stage did (finished stages only). */
  readonly held: HeldState | null;
  /** The common-random-numbers estimate of ΔJ behind a checked language stage's verdict. */
  readonly estimate?: { readonly dJ: number; readonly se: number; readonly pairs: number };
}

function cellOf(stage: number, agent: number, order: readonly number[] | null, step: AgentStepRecord | undefined): TimelineCell {
  const idx = step ? step.position : order ? order.indexOf(agent) : -1;
  const status: CellStatus = !step ? 'pending' : !step.accepted ? 'rejected' : step.backtracks > 0 ? 'backtracked' : 'done';
  return { stage, agent, position: idx >= 0 ? idx + 1 : null, status, backtracks: step ? step.backtracks : 0 };
}

/**
 * The timeline's columns: every finished stage, then the running one (its σ from `current.order`,
 * or from its steps so far). `nAgents` rows per column.
 */
export function timelineStages(records: readonly StageRecord[], nAgents: number, current?: PartialStage | null): TimelineStage[] {
  const out: TimelineStage[] = records.map((r) => ({
    stage: r.stage,
    order: r.order,
    cells: Array.from({ length: nAgents }, (_, a) => cellOf(r.stage, a, r.order, r.steps.find((s) => s.agent === a))),
    finished: true,
    held: heldUnder(r, 'chosen'),
    ...(r.held && r.held.pairs > 0 ? { estimate: { dJ: r.held.estimate, se: r.held.se, pairs: r.held.pairs } } : {}),
  }));
  if (current && !records.some((r) => r.stage === current.stage)) {
    const known = current.order ?? null;
    const fromSteps = [...current.steps].sort((a, b) => a.position - b.position).map((s) => s.agent);
    const order = known ?? (fromSteps.length > 0 ? fromSteps : null);
    out.push({
      stage: current.stage,
      order: known,
      cells: Array.from({ length: nAgents }, (_, a) => cellOf(current.stage, a, order && known ? order : null, current.steps.find((s) => s.agent === a))),
      finished: false,
      held: null,
    });
  }
  return out;
}

/** Cells in execution order (σ within each stage), for ←/→ navigation; pending cells without σ go last, by agent. */
export function executionOrder(stages: readonly TimelineStage[]): Required<StepRef>[] {
  const out: Required<StepRef>[] = [];
  for (const st of stages) {
    const cells = [...st.cells].sort((a, b) => (a.position ?? 1e9 + a.agent) - (b.position ?? 1e9 + b.agent));
    for (const c of cells) out.push({ stage: c.stage, agent: c.agent });
  }
  return out;
}

export type NavKey = 'ArrowLeft' | 'ArrowRight' | 'ArrowUp' | 'ArrowDown' | 'Home' | 'End';

/**
 * Where a key moves the selection: ←/→ to the previous/next agent step in update order (across
 * stages), ↑/↓ to the agent above/below in the same stage, Home/End to the first/last step run.
 * Only steps that have run can be selected; returns `from` when the move would leave them.
 */
export function moveSelection(stages: readonly TimelineStage[], from: Required<StepRef> | null, key: NavKey): Required<StepRef> | null {
  const ran = executionOrder(stages).filter((r) => stages.find((s) => s.stage === r.stage)?.cells[r.agent]?.status !== 'pending');
  if (ran.length === 0) return from;
  const idx = from ? ran.findIndex((r) => r.stage === from.stage && r.agent === from.agent) : -1;
  if (idx < 0 || key === 'End') return ran[ran.length - 1]!;
  if (key === 'Home') return ran[0]!;
  if (key === 'ArrowLeft') return ran[Math.max(0, idx - 1)]!;
  if (key === 'ArrowRight') return ran[Math.min(ran.length - 1, idx + 1)]!;
  const st = stages.find((s) => s.stage === from!.stage);
  if (!st) return from;
  const dir = key === 'ArrowUp' ? -1 : 1;
  for (let a = from!.agent + dir; a >= 0 && a < st.cells.length; a += dir) {
    if (st.cells[a]!.status !== 'pending') return { stage: st.stage, agent: a };
  }
  return from;
}
