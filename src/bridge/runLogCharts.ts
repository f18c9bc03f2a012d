/**
 * What the page draws of an imported run, worked out where the run was parsed (the check's worker):
 * each chart's rows as drawn (runLogSeries.ts, thinned past CHART_POINTS) packed into columns —
 * the steps, and every series' values one after another in one Float64Array (NaN: no value there)
 * —, the readouts' last values and the timeline's last rows. The columns are transferred with the
 * reply, so the page's main thread builds at most CHART_POINTS small objects a chart for recharts
 * and never one per step of a long log.
 *
 * Not here: the charts' rows and the thinning (runLogSeries.ts), drawing (src/app/components/RunLogView.tsx).
 */
import type { RunLog } from './runLog';
import { runClip, runJ, runKl, runTimeline, thinChart, type RunJRow, type RunTimelineRow, type ThinNote } from './runLogSeries';

/** The rows a chart draws, as columns: series s at row k is `values[s * steps.length + k]` (NaN: that series has no point there). */
export interface DrawnColumns {
  readonly steps: Float64Array;
  readonly values: Float64Array;
  /** How many series `values` holds. */
  readonly width: number;
  /** What a thinned chart draws of the steps (null: every row). */
  readonly thin: ThinNote | null;
}

/** The J chart's series, in their order in DrawnColumns.values. */
export const J_SERIES = ['J', 'train', 'lower'] as const;

export type JChart = { readonly reason: string } | (DrawnColumns & { readonly note?: string; readonly last: RunJRow | null });
export type KlChart = { readonly reason: string } | (DrawnColumns & { readonly deltas: readonly (number | null)[]; readonly violationRate: readonly (number | null)[]; readonly what: string; readonly last: readonly number[] | null });
export type ClipChart = { readonly reason: string } | (DrawnColumns & { readonly last: readonly number[] | null });
/** The timeline's last TIMELINE_ROWS rows (the view lists those) and how many rows it has. */
export type TimelineChart = { readonly reason: string } | { readonly rows: readonly RunTimelineRow[]; readonly count: number; readonly note?: string };

/** The rows of the update timeline the view lists: the last ones. */
export const TIMELINE_ROWS = 60;

export interface RunLogCharts {
  readonly j: JChart;
  readonly kl: KlChart;
  readonly clip: ClipChart;
  readonly timeline: TimelineChart;
}

/** The run and what its charts draw, as an opened run crosses to the page. */
export interface OpenedRun {
  readonly log: RunLog;
  readonly charts: RunLogCharts;
}

/** Rows of `width` values each (`pick`), thinned as the page draws them, packed (DrawnColumns). */
function drawn<R extends { step: number }>(rows: readonly R[], width: number, pick: (r: R) => readonly number[]): DrawnColumns {
  const thinned = thinChart(rows, pick, (r, kept) => ({ ...r, kept }) as R & { kept?: readonly number[] });
  const out = thinned.rows as readonly (R & { kept?: readonly number[] })[];
  const n = out.length;
  const steps = new Float64Array(n);
  const values = new Float64Array(n * width);
  out.forEach((r, k) => {
    steps[k] = r.step;
    const v = r.kept ?? pick(r);
    for (let s = 0; s < width; s++) values[s * n + k] = Number.isFinite(v[s]) ? v[s]! : NaN;
  });
  return { steps, values, width, thin: thinned.note };
}

const orNaN = (x: number | undefined) => (x === undefined ? NaN : x);

/** The charts of `log` as the page draws them (header). */
export function runLogCharts(log: RunLog): RunLogCharts {
  const j = runJ(log);
  const kl = runKl(log);
  const clip = runClip(log);
  const tl = runTimeline(log);
  const agents = Math.max(log.agents, 1);
  const lastJ = 'rows' in j ? ([...j.rows].reverse().find((r) => r.J !== undefined || r.train !== undefined || r.lower !== undefined) ?? null) : null;
  return {
    j: 'reason' in j ? j : { ...drawn(j.rows, J_SERIES.length, (r) => [orNaN(r.J), orNaN(r.train), orNaN(r.lower)]), ...(j.note !== undefined ? { note: j.note } : {}), last: lastJ },
    kl: 'reason' in kl ? kl : { ...drawn(kl.rows, agents, (r) => r.kl), deltas: kl.deltas, violationRate: kl.violationRate, what: kl.what, last: kl.rows[kl.rows.length - 1]?.kl ?? null },
    clip: 'reason' in clip ? clip : { ...drawn(clip.rows, agents, (r) => r.clip), last: clip.rows[clip.rows.length - 1]?.clip ?? null },
    timeline: 'reason' in tl ? tl : { rows: tl.rows.slice(-TIMELINE_ROWS), count: tl.rows.length, ...(tl.note !== undefined ? { note: tl.note } : {}) },
  };
}

