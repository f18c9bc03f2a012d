/**
 * What the stage table shows of one finished stage: a flat, plain-number summary of a
 * `StageRecord` (the metric keys of docs/method.md §9), cheap to keep for thousands of stages and
 * easy to test.
 *
 * Not here: running stages (src/sat/experiment.ts, driven by session.ts) or drawing them
 * (components/StageTable.tsx). The charts read the full records (charts/series.ts); this row is
 * only the table's view.
 */
import type { StageRecord } from '../sat/stage';
import { heldUnder, type HeldState } from './charts/series';

export interface StageRow {
  readonly stage: number;
  /** Exact team J after the stage. */
  readonly j: number;
  /** Realised change of J during the stage. */
  readonly dJ: number;
  /** The certificate's lower bound on dJ (the configured form, cert/lower). */
  readonly certLower: number;
  /** The bound against what the stage did (charts/series.ts heldUnder): held, not held, undecided or unchecked. */
  readonly held: HeldState;
  /**
   * cert/certified: the lower bound is above 0, a certified improvement (docs/certificate.md §12).
   * Records saved before the metric existed: the same rule on cert/lower.
   */
  readonly certified: boolean;
  /** σ: agents in the order they were updated. */
  readonly order: readonly number[];
  /** Per agent (by index, not by position in σ): (1−α)-quantile of per-state KL to π_cur. */
  readonly klQ: readonly number[];
  /** Per agent: trust-region backtracks this stage. */
  readonly backtracks: readonly number[];
}

function num(m: StageRecord['metrics'], key: string): number {
  const v = m[key];
  return typeof v === 'number' ? v : Number.NaN;
}

export function stageRow(rec: StageRecord, nAgents: number): StageRow {
  const m = rec.metrics;
  const sigma = m['order/sigma'];
  const agents = Array.from({ length: nAgents }, (_, j) => j);
  return {
    stage: rec.stage,
    j: num(m, 'team/J'),
    dJ: num(m, 'team/dJ'),
    certLower: num(m, 'cert/lower'),
    held: heldUnder(rec, 'chosen'),
    certified: Number.isNaN(num(m, 'cert/certified')) ? num(m, 'cert/lower') > 0 : num(m, 'cert/certified') === 1,
    order: Array.isArray(sigma) ? sigma : rec.order,
    klQ: agents.map((j) => num(m, `agent/${j}/kl_q`)),
    backtracks: agents.map((j) => num(m, `agent/${j}/backtracks`)),
  };
}
