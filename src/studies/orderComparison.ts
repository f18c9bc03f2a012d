/**
 * Comparing update orders σ from where a team stands (docs/method.md §3.1): the team's next
 * stages run once per order, each from the same snapshot, on the same agents (in this process or
 * in their workers), and the team is restored after. One snapshot in memory whatever the number
 * of orders, no model loaded twice, no worker started; the experiment's own state is never written.
 *
 *   const r = await compareOrdersFrom(exp, { orders: ['fixed', 'reverse'], stages: 2 });
 *   r.runs[k].stages      // order k's StageRecords, numbered on from exp.stagesDone
 *
 * Not here: the page's button and progress (src/app/sideRuns.ts), the order rule (order.ts),
 * drawing (src/app/charts/OrderChart.tsx).
 */
import { Rng } from '../core/rng';
import { isLlmTask, parseConfig, type Config } from '../sat/config';
import type { TeamEnv } from '../sat/env/types';
import { planLlm, stepThrough, type Experiment } from '../sat/experiment';
import type { OrderKind } from '../sat/order';
import type { StageRecord } from '../sat/stage';
import type { AgentSnapshot } from '../sat/types';

/** The orders a comparison runs by default (docs/method.md §3.1). */
export function ordersToCompare(cfg: Config): OrderKind[] {
  // With two language agents each stage's random σ is one of the other two, at a language stage's price.
  const random = !(isLlmTask(cfg.task) && cfg.agents < 3);
  return ['fixed', 'reverse', ...(random ? (['random'] as const) : []), ...(cfg.geoIters > 0 ? (['greedy'] as const) : [])];
}

/** What a comparison shows for order σ. */
export function orderLabel(order: OrderKind): string {
  return `σ = ${order}`;
}

export interface OrderRun {
  readonly order: OrderKind;
  readonly label: string;
  /** The stages this order finished (all of them unless the comparison stopped early). */
  readonly stages: StageRecord[];
}

export interface CompareFromOptions {
  readonly orders: readonly OrderKind[];
  /** Stages per order. */
  readonly stages: number;
  /** Checked before every agent step; true stops the comparison there. */
  readonly cancelled?: () => boolean;
  /** Told before every agent step: agent steps done, of `total`, and what runs next. */
  readonly onProgress?: (done: number, total: number, what: string) => void | Promise<void>;
}

export interface CompareFromResult {
  readonly runs: OrderRun[];
  /** Bytes of the team's snapshot held for the comparison (parameters and optimizer state, f64): all it adds to memory besides the records. */
  readonly startBytes: number;
  /** null when every order ran every stage; else why it stopped (an error is returned, not thrown: the team was restored first). */
  readonly stopped: null | { readonly why: 'cancelled' } | { readonly why: 'error'; readonly error: unknown };
}

/**
 * A team's start, held for side runs (an order comparison here, a δ sweep in deltaSweep.ts): every
 * agent's snapshot and the team's evaluation. `side(cfg)` puts the agents back to it and returns the
 * experiment `cfg` would be from there — the same agents; its own environment (planLlm(cfg)'s for a
 * language team: its transcripts are its own), β, stage count and seed streams (new Rng(cfg.seed));
 * the configured language swap off (it would replace the agent in its worker). `restore()` puts the
 * agents back once more; the experiment itself is never written to.
 */
export class TeamStart {
  private constructor(
    private readonly exp: Experiment,
    private readonly start: readonly AgentSnapshot[],
    private readonly startEval: NonNullable<Experiment['lastEval']>,
  ) {}

  /** Snapshots the team (one evaluation too, when the experiment has none yet). Call it at a stage boundary. */
  static async take(exp: Experiment): Promise<TeamStart> {
    const start = await Promise.all(exp.team.map((a) => a.snapshot()));
    const startEval = exp.lastEval ?? (await planEnv(exp, exp.cfg).evaluate(exp.team));
    return new TeamStart(exp, start, startEval);
  }

  /** Bytes of the snapshot (parameters and optimizer state, f64): what the side runs add to memory besides their records. */
  get bytes(): number {
    return this.start.reduce((b, x) => b + x.params.byteLength + x.optim.byteLength, 0);
  }

  /** The agents restored to the start, as the experiment `cfg` would run them from there. */
  async side(cfg: Config): Promise<Experiment> {
    await this.restore();
    const exp = this.exp;
    const c = isLlmTask(cfg.task) && cfg.swapAgent >= 0 ? parseConfig({ ...cfg, swapAgent: -1 }) : cfg;
    return {
      ...exp,
      cfg: c,
      env: planEnv(exp, c),
      rng: new Rng(c.seed),
      betas: exp.betas.slice(), // the team's β where it stands (adaptive β carries across stages)
      stagesDone: exp.stagesDone,
      lastEval: this.startEval,
      profiler: undefined,
    };
  }

  async restore(): Promise<void> {
    await Promise.all(this.exp.team.map((a, i) => a.restore(this.start[i]!)));
  }
}

/** The environment `cfg` plans, for a language team (fresh: its transcripts are its own); a tabular one is stateless and shared. */
function planEnv(exp: Experiment, cfg: Config): TeamEnv {
  return isLlmTask(cfg.task) ? planLlm(cfg).env : exp.env;
}

/**
 * Runs `stages` stages under each order from the team's current state, one order after another in
 * the same agents, and puts every agent back where it started (also after a cancel or an error).
 * Throws only when that restore fails (a dead worker): the experiment is then not usable.
 */
export async function compareOrdersFrom(exp: Experiment, o: CompareFromOptions): Promise<CompareFromResult> {
  const n = exp.team.length;
  const start = await TeamStart.take(exp);
  const total = o.orders.length * o.stages * n;
  const runs: OrderRun[] = [];
  let stopped: CompareFromResult['stopped'] = null;
  let done = 0;
  try {
    orders: for (const [k, order] of o.orders.entries()) {
      const side = await start.side(parseConfig({ ...exp.cfg, order, customOrder: [] }));
      const run: OrderRun = { order, label: orderLabel(order), stages: [] };
      runs.push(run);
      for (let s = 0; s < o.stages; s++) {
        const gen = stepThrough(side);
        for (let i = 0; ; i++) {
          if (i < n) {
            if (o.cancelled?.()) {
              stopped = { why: 'cancelled' };
              break orders;
            }
            await o.onProgress?.(done, total, `Comparing orders: ${run.label} (${k + 1} of ${o.orders.length}), stage ${s + 1} of ${o.stages}, agent step ${i + 1} of ${n}`);
          }
          const r = await gen.next();
          if (r.done) {
            run.stages.push(r.value);
            break;
          }
          done++;
        }
      }
    }
  } catch (e) {
    stopped = { why: 'error', error: e };
  }
  await start.restore();
  return { runs, startBytes: start.bytes, stopped };
}
