/**
 * Side runs the charts compare against the main experiment, run in this tab stage by stage (with
 * progress and Cancel; tabular games take milliseconds per stage):
 *
 *   compareOrders()  the same config and seed under each update order σ (fixed, reverse, random,
 *                    greedy when the geometric gain is on) — visual debugging of update order
 *   sweepDeltas()    the same config at five radii δ, the radius monitored but not enforced (no
 *                    backtracking, steps kept — as the delta-sweep preset and the paper's plot) —
 *                    points of the violation-rate-vs-δ chart
 *
 * Language presets are refused with a message: a side run of a language team costs minutes per
 * stage on a CPU, which belongs in the CLI (`npm run sat -- --sweep …`), not behind a button.
 *
 * Not here: the main experiment (session.ts) or drawing (charts/).
 */
import { isLlmTask, parseConfig, type Config } from '../sat/config';
import { createExperiment, runStages } from '../sat/experiment';
import type { StageRecord } from '../sat/stage';
import { longWork, yieldToBrowser } from './session';
import { usePlayground } from './store';

/** The radii of the δ sweep (log-spaced over two decades around the presets' values). */
export const SWEEP_DELTAS: readonly number[] = [0.001, 0.003, 0.01, 0.03, 0.1];

function tabularConfig(what: string): Config | null {
  const cfg = usePlayground.getState().config;
  if (!cfg) return null;
  if (isLlmTask(cfg.task)) {
    usePlayground.setState({ notice: `${what} runs on tabular games in the page; for language teams use the CLI (npm run sat -- --preset … --compare / --sweep).` });
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
export async function compareOrders(): Promise<void> {
  const cfg = tabularConfig('Comparing orders');
  if (!cfg) return;
  const orders = ['fixed', 'reverse', 'random', ...(cfg.geoIters > 0 ? ['greedy'] : [])] as const;
  const stages = cfg.stages;
  const total = orders.length * stages;
  await longWork('Comparing orders…', async (progress, cancelled) => {
    const runs: { label: string; stages: StageRecord[] }[] = [];
    let done = 0;
    for (const order of orders) {
      const c = parseConfig({ ...cfg, order, customOrder: [] });
      const recs = await runSide(c, stages, () => progress(++done, total, `Comparing orders: σ = ${order}, stage ${done % stages || stages} / ${stages}`), cancelled);
      runs.push({ label: `σ = ${order}`, stages: recs });
      if (cancelled()) break;
    }
    usePlayground.setState({ orders: runs });
  });
}

/** The same config at each δ of SWEEP_DELTAS; results land in the store's `sweep`. */
export async function sweepDeltas(): Promise<void> {
  const cfg = tabularConfig('The δ sweep');
  if (!cfg) return;
  const stages = Math.min(cfg.stages, 20);
  const total = SWEEP_DELTAS.length * stages;
  await longWork('Sweeping δ…', async (progress, cancelled) => {
    const runs: { delta: number; stages: StageRecord[] }[] = [];
    let done = 0;
    for (const delta of SWEEP_DELTAS) {
      const c = parseConfig({ ...cfg, delta, deltas: [], maxBacktracks: 0, onExhausted: 'keep' });
      const recs = await runSide(c, stages, () => progress(++done, total, `Sweeping δ = ${delta}: stage ${done % stages || stages} / ${stages}`), cancelled);
      runs.push({ delta, stages: recs });
      if (cancelled()) break;
    }
    usePlayground.setState({ sweep: runs });
  });
}
