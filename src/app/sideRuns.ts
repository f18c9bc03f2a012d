/**
 * Side runs the charts compare against the main experiment, run in this tab stage by stage (with
 * progress and Cancel; tabular games take milliseconds per stage):
 *
 *   compareOrders()  the same config and seed under each update order σ (fixed, reverse, random,
 *                    greedy when the geometric gain is on) — visual debugging of update order
 *   sweepDeltas()    the δ-sweep protocol of src/sat/deltaSweep.ts, as the CLI runs it for the
 *                    delta-sweep preset: only δ changes (same tables and seeds, one step with
 *                    lr ∝ √δ, no backtracking, fixed β; docs/method.md §9.2) — the violation-rate
 *                    chart's points, fit, bootstrap CI and KL/δ check. It runs the open settings
 *                    when the delta-sweep preset is open (edited or not), else that preset's own
 *                    settings at the open seed: the other games have a handful of states and, at
 *                    their own lr, steps far inside δ, so every rate would be 0 and nothing tested.
 *
 * Comparing orders refuses language presets with a message: a side run of a language team costs
 * minutes per stage on a CPU, which belongs in the CLI (`npm run sat -- --compare …`), not behind a
 * button.
 *
 * Not here: the main experiment (session.ts) or drawing (charts/).
 */
import { isLlmTask, parseConfig, type Config } from '../sat/config';
import { presetConfig } from '../sat/presets';
import { deltaSweep, SWEEP_DELTAS, SWEEP_SEEDS } from '../sat/deltaSweep';
import { createExperiment, runStages } from '../sat/experiment';
import type { StageRecord } from '../sat/stage';
import { yieldToBrowser, type Session } from './session';

/** The radii of the δ sweep (deltaSweep.ts's defaults, as the CLI's). */
export { SWEEP_DELTAS };
/** Stages per sweep run in the page: the config's own, capped (the delta-sweep preset has 5). */
export const SWEEP_MAX_STAGES = 10;

function tabularConfig(session: Session, what: string): Config | null {
  const cfg = session.store.getState().config;
  if (!cfg) return null;
  if (isLlmTask(cfg.task)) {
    session.store.setState({ notice: `${what} runs on tabular games in the page; for language teams use the CLI (npm run sat -- --preset … --compare / --sweep).` });
    return null;
  }
  return cfg;
}

async function runSide(cfg: Config, stages: number, onStage: () => void, cancelled: () => boolean): Promise<StageRecord[]> {
  const exp = createExperiment(cfg);
  const out: StageRecord[] = [];
  for (let k = 0; k < stages && !cancelled(); k++) {
    out.push(...(await runStages(exp, 1)));
    onStage();
    await yieldToBrowser();
  }
  return out;
}

/** The same seed under every update order; results land in the store's `orders`. */
export async function compareOrders(session: Session): Promise<void> {
  const cfg = tabularConfig(session, 'Comparing orders');
  if (!cfg) return;
  const orders = ['fixed', 'reverse', 'random', ...(cfg.geoIters > 0 ? ['greedy'] : [])] as const;
  const stages = cfg.stages;
  const total = orders.length * stages;
  await session.longWork('Comparing orders…', async (progress, cancelled) => {
    const runs: { label: string; stages: StageRecord[] }[] = [];
    let done = 0;
    for (const order of orders) {
      const c = parseConfig({ ...cfg, order, customOrder: [] });
      const recs = await runSide(c, stages, () => progress(++done, total, `Comparing orders: σ = ${order}, stage ${done % stages || stages} / ${stages}`), cancelled);
      runs.push({ label: `σ = ${order}`, stages: recs });
      if (cancelled()) break;
    }
    session.store.setState({ orders: runs });
  });
}

/** The sweep's settings: the open ones on the delta-sweep preset (tabular), else that preset's at the open seed. */
export function sweepBase(open: Config | null, preset: string): Config {
  if (open && preset === 'delta-sweep' && !isLlmTask(open.task)) return open;
  return presetConfig('delta-sweep', open ? { seed: open.seed } : {});
}

/**
 * The δ-sweep protocol (sweepBase's δ and lr are the reference point of lr ∝ √δ), at each δ of
 * SWEEP_DELTAS over SWEEP_SEEDS seeds from the base's seed; the result lands in the store's `sweep`
 * (a cancelled sweep keeps the seeds it finished for every δ).
 */
export async function sweepDeltas(session: Session): Promise<void> {
  const { config, preset } = session.store.getState();
  const cfg = sweepBase(config, preset);
  const stages = Math.min(cfg.stages, SWEEP_MAX_STAGES);
  const seeds = Array.from({ length: SWEEP_SEEDS }, (_, i) => cfg.seed + i).filter((s) => s <= 0xffffffff);
  await session.longWork('Sweeping δ…', async (progress, cancelled) => {
    const r = await deltaSweep({
      base: cfg, deltas: SWEEP_DELTAS, seeds, stages, cancelled,
      onProgress: async (done, total, what) => {
        progress(done, total, what);
        await yieldToBrowser();
      },
    });
    if (r) session.store.setState({ sweep: r });
  });
}
