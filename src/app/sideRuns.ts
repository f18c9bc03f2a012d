/**
 * Side runs the charts compare against the main experiment, with progress and Cancel: the same
 * config and seed under each update order σ, under scheme = simultaneous, and across radii δ (the
 * δ-sweep of docs/method.md §9.2). Table games run whole side experiments in this tab; a language
 * team runs from where it stands, in its agents' workers, from one snapshot that is restored
 * after, so the experiment's next step is what it would have been without the comparison.
 *
 * Not here: the main experiment (session.ts) or drawing (charts/).
 */
import { isLlmTask, parseConfig, type Config } from '../sat/config';
import { presetConfig } from '../sat/presets';
import { deltaSweep, SWEEP_DELTAS, SWEEP_SEEDS } from '../studies/deltaSweep';
import { createTabularExperiment, runStages, teamSize } from '../sat/experiment';
import { compareOrdersFrom, orderLabel, ordersToCompare, TeamStart } from '../studies/orderComparison';
import type { StageRecord } from '../sat/stage';
import { yieldToBrowser, type Session } from './session';

/** Stages per sweep run in the page: the config's own, capped (the delta-sweep preset has 5). */
const SWEEP_MAX_STAGES = 10;
/** Most stages per order when comparing orders of a language team (a language stage takes seconds). */
const LM_ORDER_STAGES = 3;

/** Stages per order for a language team with `done` stages behind it: the run's stages left, at least 1, at most LM_ORDER_STAGES. */
function languageOrderStages(cfg: Config, done: number): number {
  return Math.min(LM_ORDER_STAGES, Math.max(1, cfg.stages - done));
}

async function runSide(cfg: Config, stages: number, onStage: () => void, cancelled: () => boolean): Promise<StageRecord[]> {
  const exp = createTabularExperiment(cfg);
  const out: StageRecord[] = [];
  for (let k = 0; k < stages && !cancelled(); k++) {
    out.push(...(await runStages(exp, 1)));
    onStage();
    await yieldToBrowser();
  }
  return out;
}

/** What the Compare orders button does for this config, in one sentence (its tooltip). */
export function compareOrdersTitle(cfg: Config, done: number): string {
  if (!isLlmTask(cfg.task)) return 'Run this config and seed under every update order σ, side by side';
  const k = languageOrderStages(cfg, done);
  return `Run the next ${k} stage${k === 1 ? '' : 's'} from where your team stands under each update order σ (${ordersToCompare(cfg).join(', ')}), one after another in the agents' workers, each point with its held-out 95 % interval; then the team is put back exactly as it was`;
}

/**
 * The same seed under every update order (fixed, reverse, random, greedy when the geometric gain
 * is on); results land in the store's `orders`. Tabular: whole runs from stage 0, stage by stage.
 * Language: the stages left (1 to 3) from where the team stands, one order after another
 * (src/studies/orderComparison.ts; Cancel stops within one agent step), from a stage boundary only.
 */
export async function compareOrders(session: Session): Promise<void> {
  const cfg = session.store.getState().config;
  if (!cfg) return;
  if (isLlmTask(cfg.task)) return compareLanguageOrders(session, cfg);
  const orders = ordersToCompare(cfg);
  const stages = cfg.stages;
  const total = orders.length * stages;
  await session.longWork('Comparing orders…', async (progress, cancelled) => {
    const runs: { label: string; stages: StageRecord[] }[] = [];
    let done = 0;
    for (const order of orders) {
      const c = parseConfig({ ...cfg, order, customOrder: [] });
      const recs = await runSide(c, stages, () => progress(++done, total, `Comparing orders: σ = ${order}, stage ${done % stages || stages} / ${stages}`), cancelled);
      runs.push({ label: orderLabel(order), stages: recs });
      if (cancelled()) break;
    }
    session.store.setState({ orders: runs });
  });
}

/**
 * A language team's orders, from where it stands, in its own workers (orderComparison.ts): the
 * run's stages left (at least 1, at most LM_ORDER_STAGES) under each order; the experiment is
 * restored after.
 */
async function compareLanguageOrders(session: Session, cfg: Config): Promise<void> {
  const exp = session.currentExperiment();
  const s = session.store.getState();
  if (!exp) return;
  if (teamSize(exp) < 2) {
    session.store.setState({ notice: 'A team of one agent has one update order: there is nothing to compare.' });
    return;
  }
  if (s.partial.length > 0) {
    session.store.setState({ notice: `Orders are compared from a stage boundary: finish stage ${s.stages.length + 1} first (Step stage), then Compare orders.` });
    return;
  }
  const orders = ordersToCompare(cfg);
  const stages = languageOrderStages(cfg, exp.stagesDone);
  const swapNote = cfg.swapAgent >= 0 && exp.stagesDone < cfg.swapAt && cfg.swapAt <= exp.stagesDone + stages ? ' The configured swap is not made in the comparison (it replaces the agent in its worker).' : '';
  await session.longWork('Comparing orders…', async (progress, cancelled) => {
    const r = await compareOrdersFrom(exp, {
      orders, stages, cancelled,
      onProgress: async (done, total, what) => {
        progress(done, total, what);
        await yieldToBrowser();
      },
    });
    const runs = r.runs.filter((x) => x.stages.length > 0).map((x) => ({ label: x.label, stages: x.stages }));
    session.store.setState({ orders: runs });
    const from = `from stage ${exp.stagesDone}, ${stages} stage${stages === 1 ? '' : 's'} per order`;
    if (r.stopped?.why === 'cancelled') {
      session.store.setState({ notice: `Comparing orders cancelled (${from}); the finished stages are shown and your experiment is as it was.${swapNote}` });
    } else if (r.stopped?.why === 'error') {
      const e = r.stopped.error;
      session.store.setState({ notice: `Comparing orders stopped: ${e instanceof Error ? e.message : String(e)} The finished stages are shown; your experiment is as it was.` });
    } else {
      session.store.setState({ notice: `Compared ${orders.length} orders ${from} on your team's own agents; your experiment is as it was.${swapNote}` });
    }
  });
}

/** What the Overlay simultaneous button does for this config (its tooltip). */
export function compareSimultaneousTitle(cfg: Config): string {
  if (isLlmTask(cfg.task)) return 'Not offered for a language team: a second run of every stage would take minutes. The claims (Claims ▸) compare the schemes over seeds.';
  return `Run this config and seed with scheme = simultaneous (every agent moves at once from the same batch) for ${cfg.stages} stages, in this tab, and draw its J dashed on this chart`;
}

/**
 * The same config and seed with scheme = simultaneous, whole (every configured stage), in this tab:
 * the J chart draws it dashed beside the run (UX: "the difference is visible without reading a
 * number"). Table games only.
 */
export async function compareSimultaneous(session: Session): Promise<void> {
  const cfg = session.store.getState().config;
  if (!cfg || isLlmTask(cfg.task)) return;
  const c = parseConfig({ ...cfg, scheme: 'simultaneous' });
  await session.longWork('Running scheme = simultaneous…', async (progress, cancelled) => {
    let done = 0;
    const recs = await runSide(c, cfg.stages, () => progress(++done, cfg.stages, `Running scheme = simultaneous, same seed: stage ${done} / ${cfg.stages}`), cancelled);
    session.store.setState({ simultaneous: { label: 'simultaneous, same seed', stages: recs } });
  });
}

/** What the Sweep δ button does for this config, in one sentence (its tooltip). */
export function sweepDeltasTitle(cfg: Config): string {
  if (isLlmTask(cfg.task)) {
    return `Run one stage from where your team stands at seven radii δ over ${LM_SWEEP_SEEDS} seeds with only δ changing (one step with lr ∝ √δ from these settings' δ and lr, no backtracking, fixed β), in the agents' workers: the violation rate per δ, its fitted exponent with a bootstrap CI, and the mean KL/δ check; then the team is put back exactly as it was`;
  }
  return "Rerun this game at seven radii δ over ten seeds with only δ changing (same tables and seeds, one step with lr ∝ √δ, no backtracking, fixed β): the violation rate per δ, its fitted exponent with a bootstrap CI, and the mean KL/δ check (the open settings on the delta-sweep preset, else that preset's relay with many states)";
}

/** The sweep's settings: the open ones on the delta-sweep preset (tabular), else that preset's at the open seed. */
function sweepBase(open: Config | null, preset: string): Config {
  if (open && preset === 'delta-sweep' && !isLlmTask(open.task)) return open;
  return presetConfig('delta-sweep', open ? { seed: open.seed } : {});
}

/**
 * The δ-sweep protocol (sweepBase's δ and lr are the reference point of lr ∝ √δ), at each δ of
 * SWEEP_DELTAS over SWEEP_SEEDS seeds from the base's seed; the result lands in the store's `sweep`
 * (a cancelled sweep keeps the seeds it finished for every δ). The other games have a handful of
 * states and, at their own lr, step far inside δ, so every rate would be 0: hence the preset.
 * A language team sweeps seven radii over LM_SWEEP_SEEDS seeds, one stage each, from one snapshot.
 */
export async function sweepDeltas(session: Session): Promise<void> {
  const { config, preset } = session.store.getState();
  if (config && isLlmTask(config.task)) return sweepLanguageDeltas(session, config);
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

/** Seeds per δ when sweeping a language team (a language stage takes seconds; the tabular sweep has SWEEP_SEEDS). */
export const LM_SWEEP_SEEDS = 3;

/**
 * The δ sweep of a language team from where it stands: the open settings are the reference point
 * (δ_ref, lr_ref); every (seed, δ) run is one stage from the same snapshot of the team, in its own
 * agents (TeamStart, orderComparison.ts), which are put back after — the experiment is as it was.
 */
async function sweepLanguageDeltas(session: Session, cfg: Config): Promise<void> {
  const exp = session.currentExperiment();
  const s = session.store.getState();
  if (!exp) return;
  if (s.partial.length > 0) {
    session.store.setState({ notice: `The δ sweep starts at a stage boundary: finish stage ${s.stages.length + 1} first (Step stage), then Sweep δ.` });
    return;
  }
  const seeds = Array.from({ length: LM_SWEEP_SEEDS }, (_, i) => cfg.seed + i).filter((x) => x <= 0xffffffff);
  await session.longWork('Sweeping δ…', async (progress, cancelled) => {
    const start = await TeamStart.take(exp);
    let r: Awaited<ReturnType<typeof deltaSweep>> = null;
    try {
      r = await deltaSweep({
        base: cfg, deltas: SWEEP_DELTAS, seeds, stages: 1, cancelled, open: (c) => start.side(c),
        onProgress: async (done, total, what) => {
          progress(done, total, `${what} (from stage ${exp.stagesDone}, in your team's own agents)`);
          await yieldToBrowser();
        },
      });
    } finally {
      await start.restore();
    }
    if (r) session.store.setState({ sweep: r });
    session.store.setState({
      notice: `${r?.complete ? 'Swept' : 'Cancelled the sweep of'} ${SWEEP_DELTAS.length} radii δ over ${r?.protocol.seeds.length ?? 0} of ${seeds.length} seeds, one stage each from stage ${exp.stagesDone}; your experiment is as it was.`,
    });
  });
}
