/**
 * The charts' formula cards, in one place: for each chart the formula it draws as TeX, symbolic
 * (as docs/method.md or docs/certificate.md writes it) and then with the run's numbers, each number
 * a slot naming the metric key it shows. A slot's number is exactly `metrics[key]`, never
 * recomputed, so a card cannot disagree with the CLI table, the JSON export or the stage table;
 * every number carries data-metric / data-value / data-term in the page (tests compare them).
 *
 * Not here: rendering (FormulaCard.tsx imports KaTeX, lazily), choosing the record (the chart has
 * it), or highlighting (ChartFrame.tsx keeps the picked term; each chart draws it).
 */
import type { Metrics } from '../../sat/stage';
import { count, fixed3, sci } from '../format';
import { pct, term } from './fmt';

/** How a slot's number is written: as the chart beside it writes it (fmt.ts / ../format.ts). */
export type SlotFormat = 'term' | 'fixed3' | 'sci' | 'pct' | 'count';

export interface FormulaSlot {
  /** Placeholder in `numeric`: {{name}}. */
  readonly name: string;
  /** The metric key (docs/method.md §9); `<j>` stands for the agent of the step in view. */
  readonly metric: string;
  readonly format: SlotFormat;
  /** The part of the chart that draws this number (what a click on it highlights). */
  readonly term: string;
  /** Subtracted in the formula: a negative number is written in parentheses. */
  readonly subtracted?: boolean;
  /** Which of several records' metrics it reads (the order card: series k); default the only one. */
  readonly from?: number;
}

/**
 * {{rel:name}} in `numeric` becomes ≤ when slot `left`'s number ≤ slot `right`'s, else >; with
 * `decidedBy`, the record's own decision under that metric key instead (1: ≤, 0: >, anything else:
 * ≤ with a question mark — the decision was not made, e.g. a language stage whose bound was not
 * checked against a common-random-numbers estimate, docs/certificate.md).
 */
export interface FormulaRelation {
  readonly name: string;
  readonly left: string;
  readonly right: string;
  readonly decidedBy?: string;
}

/** The relation sign of an undecided comparison. */
export const UNDECIDED_REL = String.raw`\overset{?}{\le}`;

export type FormulaId = 'waterfall' | 'waterfall-team' | 'waterfall-mixture' | 'waterfall-gamma' | 'j' | 'adv' | 'kl' | 'beta' | 'violation' | 'order';

export interface FormulaDef {
  readonly id: FormulaId;
  /** What the card is about, one line. */
  readonly title: string;
  /** Whose metrics fill it: a finished stage's record or one agent step's. */
  readonly source: 'stage' | 'step';
  /** The docs section it restates, e.g. "docs/certificate.md §5, §12". */
  readonly docs: string;
  /** The formula as the docs write it (no numbers). */
  readonly symbolic: string;
  /** The formula with {{slot}} and {{rel:name}} placeholders. */
  readonly numeric: string;
  readonly slots: readonly FormulaSlot[];
  readonly relations?: readonly FormulaRelation[];
  /** One sentence on what the numbers are (which step, which batch). */
  readonly note: string;
}

const slot = (name: string, metric: string, format: SlotFormat, termName: string, subtracted = false): FormulaSlot => ({
  name, metric, format, term: termName, ...(subtracted ? { subtracted } : {}),
});

const CERT_SLOTS: readonly FormulaSlot[] = [
  slot('gain', 'cert/gain', 'term', 'gain'),
  slot('shift', 'cert/shift', 'term', 'shift', true),
  slot('bias', 'cert/bias', 'term', 'bias', true),
  slot('finite', 'cert/finite', 'term', 'finite', true),
  slot('lower', 'cert/lower', 'term', 'lower'),
  slot('dJ', 'team/dJ', 'term', 'realised'),
];

const CERT_NUMERIC =
  String.raw`L = \underbrace{ {{gain}} }_{\text{gain}} - \underbrace{ {{shift}} }_{\text{shift}} - \underbrace{ {{bias}} }_{\text{bias}} - \underbrace{ {{finite}} }_{\text{finite}} = {{lower}} \\ L \;{{rel:held}}\; \Delta J = {{dJ}}`;

/**
 * The certificate card a stage record gets: the γ form's, the language team-level form's with the
 * mixture estimator (its baseline in `cert/baseline`, docs/certificate.md §5.4) or with the
 * truncated ratio (a finite truncation c in `cert/clip`, §5.1–§5.2), or the episodic one (tabular
 * teams, and records older than `cert/clip`).
 */
export function certFormulaId(metrics: Metrics, form: 'episodic' | 'gamma'): 'waterfall' | 'waterfall-team' | 'waterfall-mixture' | 'waterfall-gamma' {
  if (form === 'gamma') return 'waterfall-gamma';
  if (!teamLevelBound(metrics)) return 'waterfall';
  const b = metrics['cert/baseline'];
  return typeof b === 'number' && Number.isFinite(b) ? 'waterfall-mixture' : 'waterfall-team';
}

/** A language stage certified with the team-level form: one batch, the team ratio truncated at a finite c. */
export function teamLevelBound(metrics: Metrics): boolean {
  const clip = metrics['cert/clip'];
  return metrics['cert/team'] === 1 && typeof clip === 'number' && Number.isFinite(clip);
}

/** The cards of the waterfall (episodic, language team-level and γ form: certFormulaId picks one), J, advantage, KL, β and violation charts. */
export const FORMULAS: Readonly<Record<Exclude<FormulaId, 'order'>, FormulaDef>> = {
  waterfall: {
    id: 'waterfall',
    title: 'The certificate, episodic form',
    source: 'stage',
    docs: 'docs/certificate.md §4–§6, §12',
    symbolic: String.raw`\Delta J \ \ge\ L = \underbrace{\textstyle\sum_i \hat G_i}_{\text{fresh gain}} - \underbrace{0}_{\text{shift}} - \underbrace{0}_{\text{bias}} - \underbrace{\big(\bar S - \mathrm{LCB}_{1-\delta_{\mathrm{conf}}}(S)\big)}_{\text{finite}} \\ S_t = \textstyle\sum_i X_{i,t}`,
    numeric: CERT_NUMERIC,
    slots: CERT_SLOTS,
    relations: [{ name: 'held', left: 'lower', right: 'dJ', decidedBy: 'cert/held' }],
    note: 'X = (r − 1)(R − b) on certification batches no update saw; shift and bias are 0 by construction (§6). Held: L ≤ ΔJ.',
  },
  'waterfall-team': {
    id: 'waterfall-team',
    title: 'The certificate, team-level form (language team)',
    source: 'stage',
    docs: 'docs/certificate.md §5.1–§5.3, §12',
    symbolic: String.raw`\Delta J \ \ge\ L = \underbrace{\bar X}_{\text{fresh gain}} - \underbrace{\big(\bar X - \mathrm{LCB}_{1-\delta_{\mathrm{conf}}}(X)\big)}_{\text{finite}} \\ X_e = \big(\min(\bar r_e, c) - 1\big)(R_e - R_{\min}),\quad \bar r_e = \textstyle\prod_j r_{j,e},\quad e = 1 \dots N`,
    numeric: String.raw`c = {{clip}},\quad N = {{episodes}} \\ L = \underbrace{ {{gain}} }_{\text{gain}} - \underbrace{ {{finite}} }_{\text{finite}} = {{lower}} \\ L \;{{rel:held}}\; \Delta J = {{dJ}}`,
    slots: [
      slot('clip', 'cert/clip', 'fixed3', 'gain'), slot('episodes', 'cert/episodes', 'count', 'gain'),
      ...CERT_SLOTS.filter((x) => x.name !== 'shift' && x.name !== 'bias'),
    ],
    relations: [{ name: 'held', left: 'lower', right: 'dJ', decidedBy: 'cert/held' }],
    note: 'N episodes drawn under the starting team in rounds until the bound decided (§5.3), each scored with the ratio of the final team to the starting team; the betting bound uses only X ≥ −A (§5.2). Held: L ≤ the common-random-numbers estimate of ΔJ, when the stage was checked.',
  },
  'waterfall-mixture': {
    id: 'waterfall-mixture',
    title: 'The certificate, team-level form with the mixture estimator (language team)',
    source: 'stage',
    docs: 'docs/certificate.md §5.3–§5.4, §12',
    symbolic: String.raw`\Delta J \ \ge\ L = \underbrace{\bar X}_{\text{fresh gain}} - \underbrace{\big(\bar X - \mathrm{LCB}_{1-\delta_{\mathrm{conf}}}(X)\big)}_{\text{finite}} \\ X_u = \tfrac12\big(w(\bar r_u)(R_u - b) + w(\bar r'_u)(R'_u - b)\big),\quad w(\bar r) = \frac{2(\bar r - 1)}{\bar r + 1},\quad \bar r = \textstyle\prod_j r_j`,
    numeric: String.raw`b = {{baseline}},\quad N = {{episodes}} \\ L = \underbrace{ {{gain}} }_{\text{gain}} - \underbrace{ {{finite}} }_{\text{finite}} = {{lower}} \\ L \;{{rel:held}}\; \Delta J = {{dJ}}`,
    slots: [
      slot('baseline', 'cert/baseline', 'fixed3', 'gain'), slot('episodes', 'cert/episodes', 'count', 'gain'),
      ...CERT_SLOTS.filter((x) => x.name !== 'shift' && x.name !== 'bias'),
    ],
    relations: [{ name: 'held', left: 'lower', right: 'dJ', decidedBy: 'cert/held' }],
    note: 'N episodes in pairs, one of the starting team (R_u) and one of the final team (R′_u), drawn in rounds until the bound decided (§5.3), each weighted by w(r̄) ∈ [−2, 2], r̄ the ratio of the final team to the starting team: E[X] = ΔJ exactly for the baseline b fixed before the draws (§5.4). Held: L ≤ the common-random-numbers estimate of ΔJ, when the stage was checked.',
  },
  'waterfall-gamma': {
    id: 'waterfall-gamma',
    title: "The certificate, the paper's γ form",
    source: 'stage',
    docs: 'docs/certificate.md §9',
    symbolic: String.raw`L = \textstyle\sum_i \hat G_i - \frac{2\gamma}{(1-\gamma)^2} A_{\max} \sum_i \sqrt{\kappa_i/2} \\ \textstyle - \frac{1}{1-\gamma}\sum_i \zeta_i - \sum_i \frac{A_{\max}}{1-\gamma}\sqrt{\frac{\log(2n/\delta_{\mathrm{conf}})}{2N_i}}`,
    numeric: CERT_NUMERIC,
    slots: CERT_SLOTS,
    relations: [{ name: 'held', left: 'lower', right: 'dJ', decidedBy: 'cert/held' }],
    note: 'κ_i is the agent’s largest per-state KL, ζ_i its measured estimator bias, N_i its certification episodes. Held: L ≤ ΔJ.',
  },
  j: {
    id: 'j',
    title: 'Team J and its certified floor, latest stage',
    source: 'stage',
    docs: 'docs/certificate.md §12; docs/method.md §7.4',
    symbolic: String.raw`J_k - J_{k-1} = \Delta J \ \ge\ L \quad\Longleftrightarrow\quad J_k \ \ge\ J_{k-1} + L`,
    numeric: String.raw`J_k = {{J}},\qquad \Delta J = {{dJ}} \;{{rel:held}}\; L = {{lower}}`,
    slots: [slot('J', 'team/J', 'fixed3', 'j'), slot('dJ', 'team/dJ', 'term', 'j'), slot('lower', 'cert/lower', 'term', 'floor')],
    relations: [{ name: 'held', left: 'lower', right: 'dJ', decidedBy: 'cert/held' }],
    note: 'The dot is J_k; the grey bar under it is J_{k−1} + L. Held (filled dot): L ≤ ΔJ.',
  },
  adv: {
    id: 'adv',
    title: 'The advantages, and the objective they feed',
    source: 'step',
    docs: 'docs/method.md §4.1, §5.1',
    symbolic: String.raw`\tilde A_e = \mathrm{clip}\!\Big(\frac{R_e - \mu_{g(e)}}{\sigma_{g(e)} + \varepsilon},\, \pm A_{\mathrm{clip}}\Big) \\ \hat L_j = \frac1N \sum_e \min\!\big(r_e \tilde A_e,\ \mathrm{clip}(r_e, 1-\epsilon, 1+\epsilon)\,\tilde A_e\big)`,
    numeric: String.raw`\hat L_j = {{surrogate}} \\ \text{clipped share} = {{clipfrac}},\qquad \|\nabla \hat L_j\| = {{grad}}`,
    slots: [slot('surrogate', 'agent/<j>/surrogate', 'sci', 'bars'), slot('clipfrac', 'agent/<j>/clipfrac', 'pct', 'bars'), slot('grad', 'agent/<j>/grad_norm', 'sci', 'bars')],
    note: 'The histogram counts the Ã_e; the numbers are the surrogate, its clipped share and gradient norm at the start of the step’s last optimizer step.',
  },
  kl: {
    id: 'kl',
    title: 'The trust-region check',
    source: 'step',
    docs: 'docs/method.md §6.1',
    symbolic: String.raw`\kappa(s) = \mathrm{KL}\big(\pi_\theta(\cdot|s)\,\|\,\pi_{\mathrm{cur}}(\cdot|s)\big) \\ q = Q_{1-\alpha}(\kappa) \le \delta_j \ \text{(keep)},\qquad v = \frac{\#\{s : \kappa(s) > \delta_j\}}{K}`,
    numeric: String.raw`q = {{q}} \;{{rel:ok}}\; \delta_j = {{delta}},\qquad v = {{viol}} \\ \bar\kappa = {{mean}},\qquad \max\kappa = {{max}}`,
    slots: [slot('q', 'agent/<j>/kl_q', 'sci', 'q'), slot('delta', 'agent/<j>/delta', 'sci', 'delta'), slot('viol', 'agent/<j>/viol_rate', 'pct', 'over'), slot('mean', 'agent/<j>/kl_mean', 'sci', 'bars'), slot('max', 'agent/<j>/kl_max', 'sci', 'bars')],
    relations: [{ name: 'ok', left: 'q', right: 'delta' }],
    note: 'Over the K state visits of the step’s batch, after its last accepted try.',
  },
  beta: {
    id: 'beta',
    title: 'Backtracking and adaptive β, latest agent step',
    source: 'step',
    docs: 'docs/method.md §6.2, §6.4',
    symbolic: String.raw`\text{retry: } \beta \leftarrow \min(10^4, \max(1.5\,\beta, 10^{-2})) \\ \text{after (betaAdapt): } \beta_j \leftarrow \max(10^{-4}, \beta/1.5) \ \text{ if } q < \delta_j/1.5`,
    numeric: String.raw`\beta_j = {{beta}}\ \text{after}\ {{bt}}\ \text{backtracks} \\ q = {{q}},\qquad \delta_j = {{delta}}`,
    slots: [slot('beta', 'agent/<j>/beta', 'sci', 'beta'), slot('bt', 'agent/<j>/backtracks', 'count', 'backtracks'), slot('q', 'agent/<j>/kl_q', 'sci', 'beta'), slot('delta', 'agent/<j>/delta', 'sci', 'beta')],
    note: 'β is the value the agent carries to its next update.',
  },
  violation: {
    id: 'violation',
    title: 'The violation rate of the agent step in view',
    source: 'step',
    docs: 'docs/method.md §6.1, §9.2',
    symbolic: String.raw`v(\delta) = \frac{\#\{s : \kappa(s) > \delta\}}{K} \ \approx\ c\,\delta^{p}\qquad(\text{the paper: } p \approx \tfrac12)`,
    numeric: String.raw`v = {{viol}}\ \text{at}\ \delta_j = {{delta}}`,
    slots: [slot('viol', 'agent/<j>/viol_rate', 'pct', 'points'), slot('delta', 'agent/<j>/delta', 'sci', 'points')],
    note: 'One point of this run; the fit needs several δ (Sweep δ).',
  },
};

/**
 * The order comparison's card for series labelled `labels` (σ_1 … σ_n in the TeX, the labels in the
 * note: KaTeX's strict mode takes no Unicode in \text): per series, its last finished stage's
 * team/J, cert/lower and team/dJ, read from that series' record (slot `from` = k).
 */
export function orderFormula(labels: readonly string[]): FormulaDef {
  const rows = labels.map((_, k) => String.raw`\sigma_{${k + 1}}:\ \ J = {{J${k}}},\quad L = {{L${k}}} \;{{rel:h${k}}}\; \Delta J = {{dJ${k}}}`);
  return {
    id: 'order',
    title: 'The certificate under each order, at its last stage',
    source: 'stage',
    docs: 'docs/method.md §3.1, §10b; docs/certificate.md §2',
    symbolic: String.raw`\Delta J^{\sigma} \ \ge\ L^{\sigma}\ 	ext{ for every order } \sigma`,
    numeric: rows.join(String.raw` \ `),
    slots: labels.flatMap((_, k) => [
      { ...slot(`J${k}`, 'team/J', 'fixed3', `s${k}`), from: k },
      { ...slot(`L${k}`, 'cert/lower', 'term', `s${k}`), from: k },
      { ...slot(`dJ${k}`, 'team/dJ', 'term', `s${k}`), from: k },
    ]),
    relations: labels.map((_, k) => ({ name: `h${k}`, left: `L${k}`, right: `dJ${k}` })),
    note: `${labels.map((l, k) => `σ${k < 9 ? String.fromCharCode(0x2081 + k) : k + 1}: ${l}`).join('; ')}. Held: L ≤ ΔJ.`,
  };
}

/** One substituted number of a card. */
export interface BoundSlot extends FormulaSlot {
  /** The metric key with the agent filled in. */
  readonly key: string;
  /** metrics[key] as recorded (NaN when the record has no number there). */
  readonly value: number;
  /** As written in the card (the chart's own format). */
  readonly shown: string;
}

export interface BoundFormula {
  readonly def: FormulaDef;
  readonly slots: readonly BoundSlot[];
  /** symbolic \\ numeric, as one aligned TeX block. */
  readonly tex: string;
}

/** The metric key of a slot for agent `agent` (agent/<j>/kl_q → agent/2/kl_q). */
export function slotKey(s: FormulaSlot, agent?: number): string {
  if (!s.metric.includes('<j>')) return s.metric;
  if (agent === undefined) throw new RangeError(`formula slot ${s.name} (${s.metric}) needs an agent`);
  return s.metric.replace('<j>', String(agent));
}

export function formatSlot(format: SlotFormat, x: number): string {
  switch (format) {
    case 'term': return term(x);
    case 'fixed3': return fixed3(x);
    case 'sci': return sci(x);
    case 'pct': return pct(x);
    case 'count': return count(x);
  }
}

/**
 * A number as the charts write it ("−1.2e−3", "4.5 %", "—"), as TeX: the typographic minus as
 * TeX's, e-notation as ×10^k, the percent sign escaped, the dash as text.
 */
export function texNumber(shown: string): string {
  if (shown === '—') return String.raw`\text{—}`;
  let s = shown.replace(/\u2212/g, '-');
  s = s.replace(/^(-?[\d.]+)e(-?\d+)$/, (_m, a: string, e: string) => `${a}\\times 10^{${e}}`);
  s = s.replace(/,/g, '{,}');
  return s.replace(/ ?%$/, String.raw`\,\%`);
}

/**
 * The card for `metrics` (a stage record's or an agent step's; for the order card, one per series,
 * picked by each slot's `from`); `agent` fills agent/<j>/ keys. Every number of the TeX is wrapped
 * as \htmlData{metric=…, value=…, term=…}; a relation (≤ or >) is decided from two slots' numbers,
 * as stage.ts decides cert/held.
 */
export function bindFormula(def: FormulaDef, metrics: Metrics | readonly Metrics[], agent?: number): BoundFormula {
  const slots: BoundSlot[] = def.slots.map((s) => {
    const key = slotKey(s, agent);
    const m: Metrics | undefined = Array.isArray(metrics) ? (metrics as readonly Metrics[])[s.from ?? 0] : (metrics as Metrics);
    const v = m?.[key];
    const value = typeof v === 'number' ? v : Number.NaN;
    return { ...s, key, value, shown: formatSlot(s.format, value) };
  });
  const by = new Map(slots.map((s) => [s.name, s]));
  let numeric = def.numeric.replace(/\{\{(rel:)?([A-Za-z0-9_]+)\}\}/g, (_m, rel: string | undefined, name: string) => {
    if (rel) {
      const r = def.relations?.find((x) => x.name === name);
      if (!r) throw new RangeError(`formula ${def.id}: no relation "${name}"`);
      if (r.decidedBy !== undefined) {
        const m: Metrics | undefined = Array.isArray(metrics) ? (metrics as readonly Metrics[])[0] : (metrics as Metrics);
        const d = m?.[r.decidedBy];
        return d === 1 ? String.raw`\le` : d === 0 ? '>' : UNDECIDED_REL;
      }
      return by.get(r.left)!.value <= by.get(r.right)!.value ? String.raw`\le` : '>';
    }
    const s = by.get(name);
    if (!s) throw new RangeError(`formula ${def.id}: no slot "${name}"`);
    let t = texNumber(s.shown);
    if (s.subtracted && s.value < 0) t = `(${t})`;
    return String.raw`\htmlData{metric=${s.key}, value=${String(s.value)}, term=${s.term}}{${t}}`;
  });
  numeric = numeric.trim();
  const tex = String.raw`\begin{gathered} ${def.symbolic} \\[6pt] ${numeric} \end{gathered}`;
  return { def, slots, tex };
}

/**
 * KaTeX's options for every card: display math, HTML output only (no MathML twin, so each number
 * is in the page once), errors thrown (a card that does not typeset is a bug the tests catch), and
 * of the HTML extension only \htmlData trusted.
 */
export const KATEX_OPTIONS = {
  displayMode: true,
  output: 'html' as const,
  throwOnError: true,
  trust: (ctx: { command: string }) => ctx.command === '\\htmlData',
  strict: (code: string) => (code === 'htmlExtension' ? 'ignore' : 'error'),
};
