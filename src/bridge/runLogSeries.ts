/**
 * The charts of an imported real run: pure functions from a `RunLog` (runLog.ts) to the rows of
 * the pictures the playground draws for its own runs — J per step, each agent's KL against δ with
 * the violation rate, the clip fraction, the timeline of updates. A chart the log cannot feed gets
 * a reason saying what the log lacks. Keys are read as the engines write them (cited below).
 *
 * Not here: parsing (runLog.ts, logs/), drawing (src/app/components/RunLogView.tsx).
 */
import { column, updatesByStep, type RunLog } from './runLog';

export type Chart<R> = { readonly rows: readonly R[]; readonly note?: string } | { readonly reason: string };

export interface RunJRow {
  readonly step: number;
  /** Validation score (J), when logged at this step. */
  readonly J?: number;
  /** Mean training reward of the step's batch. */
  readonly train?: number;
  /** The SAT authors' certificate: the stage's lower bound on the improvement. */
  readonly lower?: number;
}

export interface RunKlRow {
  readonly step: number;
  /** Per agent: the KL the log gives for this step (NaN when that agent has none here). */
  readonly kl: readonly number[];
}

export interface RunKlChart {
  readonly rows: readonly RunKlRow[];
  /** Each agent's radius δ (null: the engine has none). */
  readonly deltas: readonly (number | null)[];
  /** Each agent's share of updates that ended outside δ (null: no δ to compare against). */
  readonly violationRate: readonly (number | null)[];
  /** What the KL is, in words. */
  readonly what: string;
}

export interface RunClipRow {
  readonly step: number;
  readonly clip: readonly number[];
}

export interface RunTimelineRow {
  readonly step: number;
  /** Agents in the order they were updated, with each update's outcome. */
  readonly updates: readonly { readonly agent: number; readonly violated: boolean; readonly backtracks: number }[];
}

const VAL = /^val-core\/(.+)\/(acc|reward)\/mean@(\d+)$/;
const OLD_VAL = /^val\/test_score\/(.+)$/;

/**
 * The key J is read from: verl's core validation score `val-core/<data_source>/<acc|reward>/mean@<n>`
 * (verl/trainer/ppo/ray_trainer.py _val_metrics_update; our reward.py returns a float, recorded as
 * `acc`), first data source, or null. Without it: the training reward `critic/score/mean`, or the
 * SAT authors' certificate `lower_bound`.
 */
export function jKey(log: RunLog): string | null {
  return log.keys.find((k) => VAL.test(k)) ?? log.keys.find((k) => OLD_VAL.test(k)) ?? null;
}

/** Who wrote the log, in words (the view's and the CLI's heading). */
export function engineLabel(log: RunLog): string {
  if (log.engine === 'satTrainer') return "the SAT authors' trainer";
  if (log.engine === 'verlTeam') return 'a verl team log from the exported driver';
  return log.engine;
}

export function runJ(log: RunLog): Chart<RunJRow> {
  const key = jKey(log);
  const J = key ? column(log, key) : null;
  const train = column(log, 'critic/score/mean');
  const lower = column(log, 'lower_bound');
  if (!J && !train && !lower) {
    return { reason: 'This log has no validation score (val-core/…/mean@n: run with trainer.test_freq > 0 and val_files), no training reward (critic/score/mean) and no certificate lower bound, so there is no J to draw.' };
  }
  const rows: RunJRow[] = [];
  const at = (c: Float64Array | null, i: number) => (c === null || Number.isNaN(c[i]!) ? undefined : c[i]!);
  for (let i = 0; i < log.steps.length; i++) {
    const [j, t, l] = [at(J, i), at(train, i), at(lower, i)];
    if (j === undefined && t === undefined && l === undefined) continue;
    const row: { -readonly [K in keyof RunJRow]: RunJRow[K] } = { step: log.steps[i]! };
    if (j !== undefined) row.J = j;
    if (t !== undefined) row.train = t;
    if (l !== undefined) row.lower = l;
    rows.push(row);
  }
  const note = key ? `J = ${key}` : log.engine === 'satTrainer' ? "The SAT authors' trainer logs no validation score: its certificate's lower bound per stage is drawn instead." : 'No validation score in this log: the training reward is drawn.';
  return { rows, note };
}

/** The columns of the per-agent metric `name` (`actor/ppo_kl`…): agent<i>/name, or name for one policy (null: not logged). */
function perAgent(log: RunLog, name: string): (Float64Array | null)[] {
  return log.agents === 0 ? [column(log, name)] : Array.from({ length: log.agents }, (_, i) => column(log, `agent${i}/${name}`));
}

/** Per step, each agent's value of `cols` (NaN where none); the steps where no agent has one left out. */
function perAgentRows(log: RunLog, cols: readonly (Float64Array | null)[]): { step: number; values: number[] }[] {
  const rows: { step: number; values: number[] }[] = [];
  for (let i = 0; i < log.steps.length; i++) {
    const values = new Array<number>(cols.length);
    let any = false;
    for (let a = 0; a < cols.length; a++) {
      const v = cols[a] === null ? NaN : cols[a]![i]!;
      values[a] = v;
      if (Number.isFinite(v)) any = true;
    }
    if (any) rows.push({ step: log.steps[i]!, values });
  }
  return rows;
}

export function runKl(log: RunLog): { readonly reason: string } | RunKlChart {
  if (log.engine === 'satTrainer') {
    const n = log.agents;
    if (n === 0) return { reason: "This part of the SAT authors' log has no agent updates (the printed \"[Stage] Updating agent …\" lines); stage_log.jsonl alone has only the certificate's terms." };
    const rows: RunKlRow[] = [];
    const deltas: (number | null)[] = Array(n).fill(null);
    const viol = Array(n).fill(0);
    const count = Array(n).fill(0);
    updatesByStep(log).forEach((us, i) => {
      const kl = Array(n).fill(NaN);
      for (const u of us) {
        kl[u.agent] = u.klQ;
        if (Number.isFinite(u.delta)) deltas[u.agent] = u.delta;
        count[u.agent]++;
        if (u.violated) viol[u.agent]++;
      }
      rows.push({ step: log.steps[i]!, kl });
    });
    return { rows, deltas, violationRate: count.map((c, i) => (c > 0 ? viol[i] / c : null)), what: 'the (quantile) per-state KL each agent\'s update ended with, against its δ (target_kl); an update whose retries ran out is a violation (its last KL is not printed)' };
  }
  // verl's mean KL of the update (core_algos.py); TeamTR prefixes it agent<i>/.
  const name = 'actor/ppo_kl';
  const agents = log.agents;
  const present = log.keys.some((k) => k === name || (agents > 0 && k.endsWith(`/${name}`)));
  if (!present) return { reason: `This log has no ${name}${agents > 0 ? ` (per agent: agent<i>/${name})` : ''}, the KL of each update.` };
  const rows = perAgentRows(log, perAgent(log, name)).map((r) => ({ step: r.step, kl: r.values }));
  const width = Math.max(agents, 1);
  return {
    rows,
    deltas: Array(width).fill(null),
    violationRate: Array(width).fill(null),
    what: `${name}: the mean KL between the rollout policy and the updated one${log.engine === 'verlTeam' ? ", from each agent's own verl run" : ''}. ${log.engine === 'teamtr' ? 'TeamTR' : 'verl'} has no trust-region monitor, so there is no δ to hold it against and no violation rate.`,
  };
}

export function runClip(log: RunLog): Chart<RunClipRow> {
  const name = 'actor/pg_clipfrac';
  if (!log.keys.some((k) => k === name || k.endsWith(`/${name}`))) {
    return { reason: log.engine === 'satTrainer' ? "The SAT authors' trainer does not log a clip fraction." : `This log has no ${name}.` };
  }
  return { rows: perAgentRows(log, perAgent(log, name)).map((r) => ({ step: r.step, clip: r.values })) };
}

export function runTimeline(log: RunLog): Chart<RunTimelineRow> {
  if (log.engine === 'satTrainer' || log.engine === 'verlTeam') {
    const rows: RunTimelineRow[] = [];
    updatesByStep(log).forEach((us, i) => {
      rows.push({ step: log.steps[i]!, updates: us.sort((a, b) => a.position - b.position).map((u) => ({ agent: u.agent, violated: u.violated, backtracks: u.backtracks })) });
    });
    if (rows.length === 0) return { reason: 'No agent updates in this log.' };
    return log.engine === 'satTrainer' ? { rows } : { rows, note: "The exported verl driver trains one agent per verl run, in the team's update order, and writes each run's metrics as agent<j>/… in that order: the order is read from each step's keys. verl has no trust-region monitor, so no update is marked as a violation." };
  }
  if (log.agents === 0) return { reason: 'One policy: this log has no per-agent steps, so there is no order of agent updates to show.' };
  // Each agent's columns (its agent<i>/ keys): the agent was updated at a step where any of them has a value.
  const own = Array.from({ length: log.agents }, (_, a) => log.columns.filter((_, c) => log.keys[c]!.startsWith(`agent${a}/`)));
  const rows: RunTimelineRow[] = [];
  for (let i = 0; i < log.steps.length; i++) {
    const updates = own.flatMap((cols, agent) => (cols.some((c) => !Number.isNaN(c[i]!)) ? [{ agent, violated: false, backtracks: 0 }] : []));
    if (updates.length > 0) rows.push({ step: log.steps[i]!, updates });
  }
  return { rows, note: 'TeamTR updates the agents in increasing id order every step (its update_actor); it has no trust-region monitor, so no update is marked as a violation.' };
}

/**
 * The most rows one chart of an imported run draws. recharts draws every row on the page's main
 * thread, so a longer chart is thinned (thinChart); one with at most this many rows draws them all.
 */
export const CHART_POINTS = 1_200;

/** What a thinned chart draws, for its label: `drawn` of `of` rows, each series keeping its first, last, lowest and highest value in every run of `shortest`–`longest` consecutive rows. */
export interface ThinNote {
  readonly drawn: number;
  readonly of: number;
  readonly shortest: number;
  readonly longest: number;
}

/**
 * The indices a thinned series keeps: `values` cut into `buckets` runs of consecutive indices
 * (run b is [⌊b·n/B⌋, ⌊(b+1)·n/B⌋)), and of each run its first and last finite value and its
 * lowest and highest (the first of equal ones), so a one-step spike survives any thinning. NaN
 * (a step without a value) is never kept. Ascending, each index once; one pass over `values`.
 */
export function bucketExtremes(values: ArrayLike<number>, buckets: number): number[] {
  const n = values.length;
  const runs = Math.max(1, Math.min(Math.floor(buckets), n));
  const out: number[] = [];
  const picks = [0, 0, 0, 0];
  for (let b = 0; b < runs; b++) {
    const hi = Math.floor(((b + 1) * n) / runs);
    let first = -1;
    let last = -1;
    let lo = 0;
    let up = 0;
    for (let i = Math.floor((b * n) / runs); i < hi; i++) {
      const v = values[i]!;
      if (!Number.isFinite(v)) continue;
      if (first < 0) first = lo = up = i;
      else if (v < values[lo]!) lo = i;
      else if (v > values[up]!) up = i;
      last = i;
    }
    if (first < 0) continue;
    picks[0] = first;
    picks[1] = lo;
    picks[2] = up;
    picks[3] = last;
    picks.sort((x, y) => x - y);
    for (let k = 0; k < 4; k++) if (k === 0 || picks[k] !== picks[k - 1]) out.push(picks[k]!);
  }
  return out;
}

/**
 * A chart's rows as drawn: all of them up to `cap`; past it, per series (`values(row)[s]`, NaN
 * where the row has none) the rows bucketExtremes keeps, in ⌊cap / (4 × series with a value)⌋
 * runs so the union stays within `cap`. A kept row carries only the values of the series that kept
 * it (`rebuild` gets NaN for the others; the lines join across them). `note` says what was drawn
 * (null: every row).
 */
export function thinChart<R>(rows: readonly R[], values: (r: R) => readonly number[], rebuild: (r: R, kept: readonly number[]) => R, cap = CHART_POINTS): { readonly rows: readonly R[]; readonly note: ThinNote | null } {
  const n = rows.length;
  if (n <= cap) return { rows, note: null };
  const width = values(rows[0]!).length;
  const cols = Array.from({ length: width }, () => new Float64Array(n));
  const live = new Uint8Array(width);
  for (let i = 0; i < n; i++) {
    const v = values(rows[i]!);
    for (let s = 0; s < width; s++) {
      const x = v[s]!;
      cols[s]![i] = x;
      if (Number.isFinite(x)) live[s] = 1;
    }
  }
  const runs = Math.max(1, Math.floor(cap / (4 * Math.max(1, live.reduce((a, b) => a + b, 0)))));
  // kept[i]: the values row i is drawn with (NaN for a series that did not keep it); null: not drawn.
  const kept: (number[] | null)[] = new Array<number[] | null>(n).fill(null);
  cols.forEach((c, s) => {
    if (live[s] === 0) return;
    for (const i of bucketExtremes(c, runs)) (kept[i] ??= new Array<number>(width).fill(NaN))[s] = c[i]!;
  });
  const drawn: R[] = [];
  kept.forEach((v, i) => v && drawn.push(rebuild(rows[i]!, v)));
  const used = Math.min(runs, n);
  return { rows: drawn, note: { drawn: drawn.length, of: n, shortest: Math.floor(n / used), longest: Math.ceil(n / used) } };
}

/** The label of a thinned chart (ThinNote), in words. */
export function thinText(t: ThinNote): string {
  const run = t.shortest === t.longest ? `${t.shortest}` : `${t.shortest}–${t.longest}`;
  return `Drawn: ${t.drawn.toLocaleString('en')} of ${t.of.toLocaleString('en')} steps — each line keeps its first, last, lowest and highest value in every run of ${run} steps.`;
}
