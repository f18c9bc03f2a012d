/**
 * The charts of an imported real run: pure functions from a `RunLog` (runLog.ts) to the rows of
 * the pictures the playground draws for its own runs — J per step, each agent's KL against δ with
 * the violation rate, the clip fraction, the timeline of updates. A chart the log cannot feed gets
 * a reason saying what the log lacks. Keys are read as the engines write them (cited below).
 *
 * Not here: parsing (runLog.ts, logs/), drawing (src/app/components/RunLogView.tsx).
 */
import type { RunLog, RunStep } from './runLog';

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

export function runJ(log: RunLog): Chart<RunJRow> {
  const key = jKey(log);
  const train = log.keys.includes('critic/score/mean') ? 'critic/score/mean' : null;
  const hasLower = log.keys.includes('lower_bound');
  if (!key && !train && !hasLower) {
    return { reason: 'This log has no validation score (val-core/…/mean@n: run with trainer.test_freq > 0 and val_files), no training reward (critic/score/mean) and no certificate lower bound, so there is no J to draw.' };
  }
  const rows = log.steps
    .map((s) => ({ step: s.step, ...(key && key in s.metrics ? { J: s.metrics[key] } : {}), ...(train && train in s.metrics ? { train: s.metrics[train] } : {}), ...(hasLower && 'lower_bound' in s.metrics ? { lower: s.metrics.lower_bound } : {}) }))
    .filter((r) => 'J' in r || 'train' in r || 'lower' in r);
  const note = key ? `J = ${key}` : log.engine === 'satTrainer' ? "The SAT authors' trainer logs no validation score: its certificate's lower bound per stage is drawn instead." : 'No validation score in this log: the training reward is drawn.';
  return { rows, note };
}

/** The per-agent metric `name` (`actor/ppo_kl`…) of a step: agent<i>/name, or name for one policy. */
function perAgent(s: RunStep, name: string, agents: number): number[] {
  if (agents === 0) return [name in s.metrics ? s.metrics[name]! : NaN];
  return Array.from({ length: agents }, (_, i) => s.metrics[`agent${i}/${name}`] ?? NaN);
}

export function runKl(log: RunLog): { readonly reason: string } | RunKlChart {
  if (log.engine === 'satTrainer') {
    const n = log.agents;
    if (n === 0) return { reason: "This part of the SAT authors' log has no agent updates (the printed \"[Stage] Updating agent …\" lines); stage_log.jsonl alone has only the certificate's terms." };
    const rows: RunKlRow[] = [];
    const deltas: (number | null)[] = Array(n).fill(null);
    const viol = Array(n).fill(0);
    const count = Array(n).fill(0);
    for (const s of log.steps) {
      if (!s.updates) continue;
      const kl = Array(n).fill(NaN);
      for (const u of s.updates) {
        kl[u.agent] = u.klQ;
        if (Number.isFinite(u.delta)) deltas[u.agent] = u.delta;
        count[u.agent]++;
        if (u.violated) viol[u.agent]++;
      }
      rows.push({ step: s.step, kl });
    }
    return { rows, deltas, violationRate: count.map((c, i) => (c > 0 ? viol[i] / c : null)), what: 'the (quantile) per-state KL each agent\'s update ended with, against its δ (target_kl); an update whose retries ran out is a violation (its last KL is not printed)' };
  }
  // verl's mean KL of the update (core_algos.py); TeamTR prefixes it agent<i>/.
  const name = 'actor/ppo_kl';
  const agents = log.agents;
  const present = log.keys.some((k) => k === name || (agents > 0 && k.endsWith(`/${name}`)));
  if (!present) return { reason: `This log has no ${name}${agents > 0 ? ` (per agent: agent<i>/${name})` : ''}, the KL of each update.` };
  const rows = log.steps.map((s) => ({ step: s.step, kl: perAgent(s, name, agents) })).filter((r) => r.kl.some(Number.isFinite));
  const width = Math.max(agents, 1);
  return {
    rows,
    deltas: Array(width).fill(null),
    violationRate: Array(width).fill(null),
    what: `${name}: the mean KL between the rollout policy and the updated one. ${log.engine === 'teamtr' ? 'TeamTR' : 'verl'} has no trust-region monitor, so there is no δ to hold it against and no violation rate.`,
  };
}

export function runClip(log: RunLog): Chart<RunClipRow> {
  const name = 'actor/pg_clipfrac';
  if (!log.keys.some((k) => k === name || k.endsWith(`/${name}`))) {
    return { reason: log.engine === 'satTrainer' ? "The SAT authors' trainer does not log a clip fraction." : `This log has no ${name}.` };
  }
  const rows = log.steps.map((s) => ({ step: s.step, clip: perAgent(s, name, log.agents) })).filter((r) => r.clip.some(Number.isFinite));
  return { rows };
}

export function runTimeline(log: RunLog): Chart<RunTimelineRow> {
  if (log.engine === 'satTrainer') {
    const rows = log.steps.filter((s) => s.updates && s.updates.length > 0).map((s) => ({ step: s.step, updates: [...s.updates!].sort((a, b) => a.position - b.position).map((u) => ({ agent: u.agent, violated: u.violated, backtracks: u.backtracks })) }));
    return rows.length > 0 ? { rows } : { reason: 'No agent updates in this log.' };
  }
  if (log.agents === 0) return { reason: 'One policy: this log has no per-agent steps, so there is no order of agent updates to show.' };
  const rows = log.steps
    .map((s) => ({ step: s.step, updates: Array.from({ length: log.agents }, (_, i) => i).filter((i) => Object.keys(s.metrics).some((k) => k.startsWith(`agent${i}/`))).map((agent) => ({ agent, violated: false, backtracks: 0 })) }))
    .filter((r) => r.updates.length > 0);
  return { rows, note: 'TeamTR updates the agents in increasing id order every step (its update_actor); it has no trust-region monitor, so no update is marked as a violation.' };
}
