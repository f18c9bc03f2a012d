/**
 * The SAT authors' trainer's logs, as its code writes them (Yydc/SAT-AAMAS @ 4f6d2f8):
 *
 *   printed   scripts/train.py "=== Stage k/N ===" and "  Stage lower bound: …  (info_gain=…,
 *             occ=…, bias=…, sample=…)"; sat/stage_coordinator.py "[Stage] Updating agent i (j/n)",
 *             "  KL constraint met: q <= δ", "  KL exceeded: q > δ, backtracking...",
 *             "  Max backtracks reached" (the last try's KL is not printed), "[Stage] Completed,
 *             lower bound: …", "  Collected N episodes";
 *   file      scripts/train.py stage_log.jsonl: {"stage": k, "info_gain", "occ_shift_penalty",
 *             "estimator_bias_penalty", "finite_sample_penalty", "lower_bound", "n_agents"}.
 *
 * Either, or both concatenated, is read. From the printed log each stage gets its order σ and
 * each agent's KL quantile against δ, backtracks and whether the retries ran out.
 *
 * Not here: detecting the format and merging steps (runLog.ts).
 */
import { checkLineKeys, Warnings, type AgentUpdate, type Parsed, type RunStep } from '../runLog';

// A number: digits with an optional fraction (`\d+(?:\.\d*)?`, never `\d+\.?\d*`, whose two runs could split one digit run n ways).
const NUM = '(-?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?|nan|inf|-inf)';
const STAGE = /^=== Stage (\d+)\/(\d+) ===$/;
const UPDATING = /^\[Stage\] Updating agent (\d+) \((\d+)\/(\d+)\)$/;
const MET = new RegExp(`^KL constraint met: ${NUM} <= ${NUM}$`);
const EXCEEDED = new RegExp(`^KL exceeded: ${NUM} > ${NUM}, backtracking\\.\\.\\.$`);
const LOWER = new RegExp(`^Stage lower bound: ${NUM}\\s+\\(info_gain=${NUM}, occ=${NUM}, bias=${NUM}, sample=${NUM}\\)$`);
const COLLECTED = /^Collected (\d+) episodes$/;

const n = (s: string) => (s === 'nan' ? NaN : s === 'inf' ? Infinity : s === '-inf' ? -Infinity : Number(s));

/** The printed log and/or stage_log.jsonl. */
export function parseSatTrainerLog(text: string): Parsed {
  const w = new Warnings();
  const byStage = new Map<number, { metrics: Record<string, number>; updates: AgentUpdate[] }>();
  const stage = (k: number) => {
    let s = byStage.get(k);
    if (!s) byStage.set(k, (s = { metrics: {}, updates: [] }));
    return s;
  };
  let cur: number | null = null;
  let upd: { agent: number; position: number; klQ: number; delta: number; backtracks: number; violated: boolean } | null = null;
  const close = () => {
    if (upd && cur !== null) stage(cur).updates.push({ ...upd });
    upd = null;
  };
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    if (line.startsWith('{')) {
      checkLineKeys(line, i);
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(line);
      } catch {
        w.add(`line ${i + 1}: not JSON.`);
        return;
      }
      if (!Number.isInteger(o.stage)) {
        w.add(`line ${i + 1}: a JSON line without a whole "stage".`);
        return;
      }
      const s = stage(o.stage as number);
      for (const [k, v] of Object.entries(o)) if (k !== 'stage' && typeof v === 'number' && Number.isFinite(v)) s.metrics[k] = v;
      return;
    }
    let m = STAGE.exec(line);
    if (m) {
      close();
      cur = Number(m[1]);
      stage(cur);
      return;
    }
    if (cur === null) return;
    if ((m = UPDATING.exec(line))) {
      close();
      upd = { agent: Number(m[1]), position: Number(m[2]) - 1, klQ: NaN, delta: NaN, backtracks: 0, violated: false };
    } else if ((m = MET.exec(line)) && upd) {
      upd.klQ = n(m[1]!);
      upd.delta = n(m[2]!);
      upd.violated = false;
    } else if ((m = EXCEEDED.exec(line)) && upd) {
      upd.backtracks++;
      upd.delta = n(m[2]!);
    } else if (line === 'Max backtracks reached' && upd) {
      upd.violated = true;
      upd.klQ = NaN;
    } else if ((m = LOWER.exec(line))) {
      close();
      const s = stage(cur).metrics;
      [s.lower_bound, s.info_gain, s.occ_shift_penalty, s.estimator_bias_penalty, s.finite_sample_penalty] = m.slice(1, 6).map(n) as [number, number, number, number, number];
    } else if ((m = COLLECTED.exec(line))) stage(cur).metrics.episodes = Number(m[1]);
  });
  close();
  const steps: RunStep[] = [...byStage.entries()].map(([step, s]) => {
    const metrics = Object.fromEntries(Object.entries(s.metrics).filter(([, v]) => Number.isFinite(v)));
    return s.updates.length > 0 ? { step, metrics, updates: s.updates } : { step, metrics };
  });
  return w.done(steps);
}
