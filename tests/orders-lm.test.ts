/**
 * Comparing update orders of a language team from where it stands (src/studies/orderComparison.ts,
 * the page's Compare orders on a language preset, src/app/sideRuns.ts), with the agents in
 * worker_threads workers (tests/helpers/nodeAgentWorker.ts, the page's RemoteAgent and
 * createRemoteExperiment):
 *   - two orders after one stage of the team: two series of held-out J, each with its 95 %
 *     interval, bit-identical to running each order in-process from the same start, and the same
 *     again when repeated (a seed fixes it);
 *   - the experiment is untouched: β, stage count, last evaluation and transcripts as they were,
 *     and its next stage equals that of a twin that never compared;
 *   - a side run that fails (a NaN loss injected into one agent) returns its error with the
 *     finished orders and leaves every agent exactly as it was;
 *   - Cancel stops before the next agent step (the workers made exactly the updates of the steps
 *     done), and the experiment still steps on as its twin;
 *   - the page's session: Compare orders on a language team fills the order chart's series (CIs
 *     included), says the experiment is as it was, refuses mid-stage with a message, and the next
 *     stage is the twin's; its Cancel (session.cancelWork, pressed while a step is announced)
 *     keeps the order that finished and the experiment.
 *   - the δ sweep from where the team stands (deltaSweep.ts with a TeamStart's side runs): in the
 *     workers equal to in-process, the experiment stepping on as its twin; the page session's
 *     Sweep δ fills the sweep, refuses mid-stage, keeps the experiment.
 * The team: two arithmetic-S agents (public/models, the shipped model: real rewards, so the
 * intervals are not degenerate), chain protocol, tiny batches; seed 3.
 *
 * Not here: drawing (tests/charts.test.ts, tests/e2e/orders.test.ts) or tabular comparisons
 * (tests/e2e/playground.test.ts).
 */
import { readFileSync } from 'node:fs';
import { NumericError } from '../src/core/errors';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRemoteExperiment, type RemoteAgent, type RemoteExperiment } from '../src/workers/remoteTeam';
import { Session } from '../src/app/session';
import { compareOrders, LM_SWEEP_SEEDS, sweepDeltas } from '../src/app/sideRuns';
import { createPlaygroundStore } from '../src/app/store';
import { orderRows, orderSummary } from '../src/app/charts/series';
import { parseConfig, type Config } from '../src/sat/config';
import { runStages } from '../src/sat/experiment';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { presetConfig } from '../src/sat/presets';
import type { LmEnv } from '../src/sat/env/lm';
import { deltaSweep, SWEEP_DELTAS } from '../src/studies/deltaSweep';
import { compareOrdersFrom, ordersToCompare, TeamStart } from '../src/studies/orderComparison';
import type { OrderKind } from '../src/sat/order';
import type { StageRecord } from '../src/sat/stage';
import { nodeAgentWorker, workersStillAlive } from './helpers/nodeAgentWorker';

const load = async (name: string) => new Uint8Array(readFileSync(join(import.meta.dirname, '../public/models', `${name}.safetensors`)));

/** arith-team with two agents and small batches (its own lr, δ, β and retry factor, so updates are accepted and move). */
const cfg: Config = presetConfig('arith-team', { agents: 2, seed: 3, stages: 2, batch: 4, group: 8, evalEpisodes: 32, certEpisodes: 16, lr: 2e-3, geoIters: 0 });

/** Metrics minus wall-clock timings, which differ run to run. */
function stable(r: StageRecord): unknown {
  const metrics = Object.fromEntries(Object.entries(r.metrics).filter(([k]) => !k.startsWith('perf/ms_') && k !== 'perf/tokens_per_s'));
  return { stage: r.stage, order: r.order, metrics, certificate: r.certificate, evaluation: r.evaluation, kl: r.steps.map((s) => s.kl) };
}

const opened: RemoteExperiment[] = [];
async function remote(c: Config = cfg): Promise<RemoteExperiment> {
  const exp = await createRemoteExperiment(c, { makeWorker: () => nodeAgentWorker(), load });
  opened.push(exp);
  return exp;
}

afterAll(async () => {
  for (const e of opened) e.terminate();
  expect(await workersStillAlive()).toBe(0);
});

/** In-process: one stage with the configured order, then `stages` stages under `order`. */
async function inProcess(order: OrderKind, stages: number): Promise<{ first: StageRecord; then: StageRecord[] }> {
  const local = await createLlmExperiment(cfg, load);
  const [first] = await runStages(local, 1);
  const then = await runStages({ ...local, cfg: parseConfig({ ...cfg, order }) }, stages);
  return { first: first!, then };
}

const updates = (exp: RemoteExperiment) => (exp.team as readonly RemoteAgent[]).reduce((s, a) => s + (a.calls.get('update') ?? 0), 0);

describe('comparing orders of a language team in its workers', () => {
  it('two orders from stage 1: two series with CIs, equal to each order run in-process, the same when repeated; the experiment is untouched', async () => {
    expect(ordersToCompare(cfg)).toEqual(['fixed', 'reverse']); // two agents, no geometry: the two distinct orders
    const exp = await remote();
    await runStages(exp, 1);
    const kept = { betas: exp.betas.slice(), stagesDone: exp.stagesDone, lastEval: exp.lastEval, episodes: (exp.env as LmEnv).lastEpisodes };
    const r = await compareOrdersFrom(exp, { orders: ['fixed', 'reverse'], stages: 2 });
    expect(r.stopped).toBeNull();
    expect(r.runs.map((x) => x.label)).toEqual(['σ = fixed', 'σ = reverse']);
    for (const run of r.runs) {
      expect(run.stages.map((s) => s.stage)).toEqual([2, 3]);
      for (const s of run.stages) {
        expect(s.evaluation.exact).toBe(false);
        expect(s.evaluation.ci).toBeGreaterThan(0);
        expect(s.metrics['team/J_ci']).toBe(s.evaluation.ci);
      }
    }
    // Not vacuous: the side runs moved the agents (accepted steps with KL > 0).
    const moved = r.runs.flatMap((x) => x.stages.flatMap((s) => s.steps)).filter((st) => st.accepted && st.check.mean > 0);
    expect(moved.length).toBeGreaterThan(0);
    expect(r.runs[0]!.stages[0]!.order).toEqual([0, 1]);
    expect(r.runs[1]!.stages[0]!.order).toEqual([1, 0]);
    // The order chart's data: two series, each point with its interval.
    const rows = orderRows(r.runs);
    expect(rows.map((x) => x.stage)).toEqual([1, 2, 3]);
    for (const row of rows.slice(1)) for (const k of [0, 1]) expect(row[`e${k}`]).toBeGreaterThan(0);
    expect(orderSummary(r.runs).map((s) => s.finalCi)).toEqual(r.runs.map((x) => x.stages[1]!.evaluation.ci));
    // Memory: one snapshot of the team, 24 bytes per trainable parameter (f64 parameters and both Adam moments).
    const params = exp.infos.reduce((n, i) => n + i.parameters, 0);
    expect(r.startBytes).toBe(2 * 8 + 24 * params);
    console.log(`[orders-lm] the comparison holds ${(r.startBytes / 1e6).toFixed(2)} MB of snapshot for ${params} trainable parameters (${exp.infos.length} agents), whatever the number of orders`);
    console.log(`[orders-lm] held-out J after stages 2, 3 — ${r.runs.map((x) => `${x.label}: ${x.stages.map((s) => `${s.jAfter.toFixed(3)} ± ${s.evaluation.ci.toFixed(3)}`).join(', ')}`).join('; ')}`);

    // The experiment is as it was …
    expect(exp.betas).toEqual(kept.betas);
    expect(exp.stagesDone).toBe(kept.stagesDone);
    expect(exp.lastEval).toBe(kept.lastEval);
    expect((exp.env as LmEnv).lastEpisodes).toBe(kept.episodes);
    // … and repeating the comparison gives the same numbers (the restore is exact).
    const again = await compareOrdersFrom(exp, { orders: ['fixed', 'reverse'], stages: 2 });
    expect(again.runs.map((x) => x.stages.map(stable))).toEqual(r.runs.map((x) => x.stages.map(stable)));

    // Each order equals that order run in-process from the same start.
    const fixed = await inProcess('fixed', 2);
    const reverse = await inProcess('reverse', 2);
    expect(r.runs[0]!.stages.map(stable)).toEqual(fixed.then.map(stable));
    expect(r.runs[1]!.stages.map(stable)).toEqual(reverse.then.map(stable));
    expect(r.runs[0]!.stages.map(stable)).not.toEqual(r.runs[1]!.stages.map(stable));

    // The experiment's next stage is the twin's that never compared (its order is fixed).
    const [next] = await runStages(exp, 1);
    expect(stable(next!)).toEqual(stable(fixed.then[0]!));
  }, 240_000);

  it('Cancel stops before the next agent step; nothing of the experiment is lost', async () => {
    const exp = await remote();
    await runStages(exp, 1);
    const before = updates(exp);
    let seen = 0;
    const r = await compareOrdersFrom(exp, {
      orders: ['fixed', 'reverse'], stages: 2,
      onProgress: () => void seen++,
      cancelled: () => seen >= 3, // after three agent steps: stage 3 of σ = fixed, before its first agent
    });
    expect(r.stopped).toEqual({ why: 'cancelled' });
    expect(seen).toBe(3);
    expect(updates(exp) - before).toBe(3); // the workers made the updates of the steps done, and no more
    expect(r.runs.map((x) => x.stages.length)).toEqual([1]); // σ = fixed's first stage; the one in progress dropped
    const { then } = await inProcess('fixed', 1);
    expect(r.runs[0]!.stages.map(stable)).toEqual(then.map(stable));
    const [next] = await runStages(exp, 1);
    expect(stable(next!)).toEqual(stable(then[0]!));
  }, 240_000);
});

/** A page session (its own store) on a team in worker_threads workers, one stage done. */
async function sessionAtStage1() {
  const store = createPlaygroundStore();
  const session = new Session(store, async (c) => {
    const exp = await remote(c);
    return { exp, agents: exp.infos.map((info, index) => ({ ...info, index })), backend: 'test workers', workers: exp.team, terminate: () => exp.terminate() };
  });
  await session.openConfig(cfg, 'arith-team', 'test');
  await session.stepStage();
  return { store, session };
}

describe('a side run that fails', () => {
  it('a NaN loss in σ = reverse: the error comes back with the finished order, and every agent is restored exactly', async () => {
    const exp = await createLlmExperiment(cfg, load);
    await runStages(exp, 1);
    const before = await Promise.all(exp.team.map((a) => a.snapshot()));
    let armed = false;
    const agent = exp.team[1]!;
    const trainStep = agent.trainStep.bind(agent);
    // Agent 1's loss turns NaN once σ = reverse has started (it runs agent 1 first).
    agent.trainStep = async (b, spec) => {
      if (armed) throw new NumericError('the clipped loss of agent 1 is NaN; expected a finite number');
      return trainStep(b, spec);
    };
    const r = await compareOrdersFrom(exp, { orders: ['fixed', 'reverse'], stages: 1, onProgress: (_d, _t, what) => void (armed ||= what.includes('σ = reverse')) });
    agent.trainStep = trainStep;
    expect(r.stopped?.why).toBe('error');
    expect(r.stopped?.why === 'error' && r.stopped.error).toBeInstanceOf(NumericError);
    expect(r.runs.map((x) => [x.label, x.stages.length])).toEqual([['σ = fixed', 1], ['σ = reverse', 0]]);
    expect(await Promise.all(exp.team.map((a) => a.snapshot()))).toEqual(before);
  }, 240_000);
});

describe('the page session compares a language team\'s orders', () => {
  it('fills the order series with CIs, keeps the experiment, and refuses mid-stage', async () => {
    const { store, session } = await sessionAtStage1();
    await compareOrders(session);
    const s = store.getState();
    expect(s.error).toBeNull();
    expect(s.notice).toMatch(/Compared 2 orders from stage 1, 1 stage per order.*as it was/);
    expect(s.orders.map((o) => [o.label, o.stages.map((x) => x.stage)])).toEqual([['σ = fixed', [2]], ['σ = reverse', [2]]]);
    for (const o of s.orders) for (const x of o.stages) expect(x.evaluation.ci).toBeGreaterThan(0);
    // Mid-stage: a message, nothing run.
    await session.stepAgent();
    store.setState({ notice: null });
    await compareOrders(session);
    expect(store.getState().notice).toMatch(/from a stage boundary: finish stage 2 first/);
    expect(store.getState().orders).toBe(s.orders);
    await session.stepAgent(); // closes stage 2
    const { first, then } = await inProcess('fixed', 1);
    expect(store.getState().stages.map(stable)).toEqual([stable(first), stable(then[0]!)]);
  }, 240_000);

  it('Cancel (the progress bar\'s button: session.cancelWork) keeps the finished order and the experiment', async () => {
    const { store, session } = await sessionAtStage1();
    const labels: string[] = [];
    const stop = store.subscribe((s) => {
      if (!s.progress || labels[labels.length - 1] === s.progress.label) return;
      labels.push(s.progress.label);
      expect(s.progress.cancellable).toBe(true);
      // Pressed while σ = fixed's last agent step is announced: that step and its stage finish, σ = reverse never starts.
      if (s.progress.label.includes('σ = fixed (1 of 2), stage 1 of 1, agent step 2 of 2')) session.cancelWork();
    });
    await compareOrders(session);
    stop();
    const s = store.getState();
    expect(labels.filter((l) => l.startsWith('Comparing orders: σ'))).toEqual([
      'Comparing orders: σ = fixed (1 of 2), stage 1 of 1, agent step 1 of 2',
      'Comparing orders: σ = fixed (1 of 2), stage 1 of 1, agent step 2 of 2',
    ]);
    expect(s.notice).toMatch(/cancelled.*your experiment is as it was/);
    expect(s.orders.map((o) => [o.label, o.stages.length])).toEqual([['σ = fixed', 1]]);
    expect(s.status).toBe('ready');
    await session.stepStage();
    const { first, then } = await inProcess('fixed', 1);
    expect(store.getState().stages.map(stable)).toEqual([stable(first), stable(then[0]!)]);
  }, 240_000);
});

describe('the δ sweep of a language team from where it stands (same machinery)', () => {
  it('in the workers equals in-process from the same start; the experiment steps on as its twin', async () => {
    const sweep = async (exp: Parameters<typeof TeamStart.take>[0]) => {
      const start = await TeamStart.take(exp);
      try {
        return await deltaSweep({ base: cfg, deltas: [0.01, 0.1], seeds: [3, 4], stages: 1, open: (c) => start.side(c) });
      } finally {
        await start.restore();
      }
    };
    const exp = await remote();
    await runStages(exp, 1);
    const r = await sweep(exp);
    expect(r!.complete).toBe(true);
    expect(r!.protocol.states).toBe(0);
    for (const p of r!.points) {
      expect(p.visits).toBeGreaterThan(0);
      expect(p.klOverDelta).toBeGreaterThan(0); // one step, never undone: every run moved
    }
    const local = await createLlmExperiment(cfg, load);
    await runStages(local, 1);
    expect(await sweep(local)).toEqual(r);
    const [next] = await runStages(exp, 1);
    const [twin] = await runStages(local, 1);
    expect(stable(next!)).toEqual(stable(twin!));
    console.log(`[orders-lm] language δ sweep from stage 1: ${r!.points.map((p) => `δ = ${p.delta}: violation rate ${p.violRate.toFixed(3)}, KL/δ ${p.klOverDelta.toFixed(3)} over ${p.visits} visits`).join('; ')}`);
  }, 240_000);

  it('the page session: Sweep δ fills the violation chart\'s sweep, refuses mid-stage, and keeps the experiment', async () => {
    const { store, session } = await sessionAtStage1();
    await sweepDeltas(session);
    const s = store.getState();
    expect(s.error).toBeNull();
    expect(s.sweep?.points.map((p) => p.delta)).toEqual([...SWEEP_DELTAS]);
    expect(s.sweep?.protocol.seeds).toHaveLength(LM_SWEEP_SEEDS);
    expect(s.notice).toMatch(/Swept 7 radii δ over 3 of 3 seeds, one stage each from stage 1; your experiment is as it was/);
    await session.stepAgent();
    await sweepDeltas(session);
    expect(store.getState().notice).toMatch(/starts at a stage boundary: finish stage 2 first/);
    await session.stepAgent();
    const { first, then } = await inProcess('fixed', 1);
    expect(store.getState().stages.map(stable)).toEqual([stable(first), stable(then[0]!)]);
  }, 240_000);
});
