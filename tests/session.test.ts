/**
 * The page's session (src/app/session.ts) driven from Node, where there are no Web Workers so the
 * team runs in-process (the browser test covers workers): stepping agent by agent gives the same
 * records as the experiment runner; a step that fails (here a NaN loss injected into one agent)
 * reports a specific message and leaves the experiment exactly at the last completed agent step,
 * from which stepping on reproduces the undisturbed run; the session state round-trips through
 * the save format and restores to identical records; two sessions, each with its own store, run
 * independently; the game view's frames show the tables as they stand; the questions the page asks
 * of an experiment (experiment.ts agentInfos, teamAgents) answer for the right agents. Seeds: the
 * climbing preset's (seed 1).
 *
 * Not here: rendering (tests/e2e) or the save format's own corruption cases (tests/savefile.test.ts).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { NumericError } from '../src/core/errors';
import { serializeExperiment, parseExperimentFile } from '../src/app/savefile';
import { Session } from '../src/app/session';
import { createPlaygroundStore, usePlayground } from '../src/app/store';
import { agentInfos, createTabularExperiment, runStages, teamAgents, teamSize, type TabularExperiment } from '../src/sat/experiment';
import { gameFrame } from '../src/app/gameFrame';
import { presetConfig } from '../src/sat/presets';
import type { StageRecord } from '../src/sat/stage';

/** Records without wall-clock metrics (perf/…), which differ from run to run by nature. */
function strip(recs: readonly StageRecord[]) {
  return recs.map((r) => ({ ...r, metrics: Object.fromEntries(Object.entries(r.metrics).filter(([k]) => !k.startsWith('perf/'))) }));
}

const cfg = presetConfig('climbing', { stages: 6 });
const session = new Session(usePlayground);

beforeEach(async () => {
  usePlayground.setState({ error: null, notice: null });
  await session.openConfig(cfg, 'climbing', 'test');
});

describe('session', () => {
  it('agent by agent equals the experiment runner', async () => {
    for (let k = 0; k < 3 * 3; k++) await session.stepAgent();
    await session.stepStage();
    const ref = await runStages(createTabularExperiment(cfg), 4);
    expect(strip(usePlayground.getState().stages)).toEqual(strip(ref));
    expect(usePlayground.getState().status).toBe('ready');
  });

  it('the game view shows the tables as they stand after each agent step', async () => {
    await session.stepStage();
    await session.stepAgent();
    await session.stepAgent();
    const exp = session.currentExperiment() as TabularExperiment;
    const frames = usePlayground.getState().frames;
    const last = frames[frames.length - 1]!;
    expect([frames.length, last.stage, last.position]).toEqual([1 + 3 + 2, 2, 1]);
    const want = gameFrame(exp.game, exp.team.map((a) => a.distributionTable()), 2, 1);
    expect(last.top.moves).toEqual(want.top.moves);
    expect(last.top.prob).toBeCloseTo(want.top.prob, 12);
    last.marginals.forEach((row, j) => row.forEach((x, k) => expect(x).toBeCloseTo(want.marginals[j]![k]!, 12)));
    expect(usePlayground.getState().horizon).toBe(exp.env.horizon);
  });

  it('a NaN in one agent step: specific message, back at the last completed step, nothing lost', async () => {
    await session.stepStage();
    await session.stepAgent(); // stage 2, first agent
    const before = usePlayground.getState();
    const kept = { stages: before.stages, partial: before.partial.map((p) => p.agent) };
    // Sabotage the next agent to train: its loss turns NaN (as a diverging model's would).
    const exp = session.currentExperiment()!;
    for (const a of exp.team) {
      a.trainStep = async () => {
        throw new NumericError('the clipped loss of agent 1 is NaN; expected a finite number');
      };
    }
    await session.stepAgent();
    const s = usePlayground.getState();
    expect(s.status).toBe('error');
    expect(s.error).toMatch(/NaN/);
    expect(s.error).toMatch(/back at the last completed agent step/);
    expect(s.stages).toEqual(kept.stages);
    expect(s.partial.map((p) => p.agent)).toEqual(kept.partial);
    // The rebuilt team is healthy: stepping on reproduces the run that never failed.
    usePlayground.setState({ error: null });
    await session.stepStage();
    await session.stepStage();
    const ref = await runStages(createTabularExperiment(cfg), 3);
    expect(strip(usePlayground.getState().stages)).toEqual(strip(ref));
  });

  it('save → restore lands on the same agent step and continues identically', async () => {
    await session.stepStage();
    await session.stepAgent();
    await session.stepAgent();
    const st = session.sessionState()!;
    const bytes = serializeExperiment({
      config: st.config,
      presetName: st.preset,
      createdAt: '2026-11-29T00:00:00.000Z',
      stages: [...st.stages],
      agents: st.boundary.snapshots.map((snapshot) => ({ snapshot })),
      betas: [...st.boundary.betas],
      cursor: st.cursor,
    });
    const want = usePlayground.getState();
    const parsed = parseExperimentFile(bytes);
    if (!parsed.ok) throw new Error(parsed.error);
    await session.openConfig(presetConfig('relay'), 'relay', 'elsewhere'); // something else in between
    const v = parsed.value;
    await session.restoreSession({ config: v.config, preset: v.presetName, stages: v.stages, cursor: v.cursor, boundary: { stages: v.stages.length, snapshots: v.agents.map((a) => a.snapshot), betas: v.betas } }, 'restore');
    const got = usePlayground.getState();
    expect(strip(got.stages)).toEqual(strip(want.stages));
    expect(got.partial.map((p) => [p.agent, p.jAfter])).toEqual(want.partial.map((p) => [p.agent, p.jAfter]));
    await session.stepStage();
    await session.stepStage();
    const ref = await runStages(createTabularExperiment(cfg), 3);
    expect(strip(usePlayground.getState().stages)).toEqual(strip(ref));
  });

  it("what the page asks of an experiment: each agent's info in seat order, the team itself", async () => {
    const exp = createTabularExperiment(presetConfig('relay', { stages: 3 }));
    const infos = await agentInfos(exp);
    expect(infos.map((i) => i.name)).toEqual(exp.game.nObs.map((_, j) => `table-${j}`));
    expect(infos.map((i) => i.parameters)).toEqual(exp.game.nObs.map((n, j) => n * exp.game.nActions[j]!));
    expect(teamSize(exp)).toBe(exp.game.nAgents);
    expect(teamAgents(exp).map((a) => a.index)).toEqual(exp.game.nObs.map((_, j) => j));
    // The page's agent cards come from the same question (src/app/team.ts).
    expect(usePlayground.getState().agents.map((a) => [a.name, a.parameters])).toEqual(
      (await agentInfos(createTabularExperiment(cfg))).map((i) => [i.name, i.parameters]));
  });

  it('two sessions, each with its own store, do not share anything', async () => {
    const a = new Session(createPlaygroundStore());
    const b = new Session(createPlaygroundStore());
    await a.openConfig(cfg, 'climbing', 'a');
    await b.openConfig(presetConfig('relay', { stages: 3 }), 'relay', 'b');
    await a.stepStage();
    await a.stepAgent();
    expect(b.store.getState().stages).toHaveLength(0);
    expect(b.store.getState().partial).toHaveLength(0);
    await b.stepStage();
    expect(a.store.getState().stages).toHaveLength(1);
    expect(a.store.getState().partial).toHaveLength(1);
    expect(a.sessionState()!.config.task).toBe('climbing');
    expect(b.sessionState()!.config.task).toBe('relay');
    await a.stepStage();
    expect(strip(a.store.getState().stages)).toEqual(strip(await runStages(createTabularExperiment(cfg), 2)));
    expect(strip(b.store.getState().stages)).toEqual(strip(await runStages(createTabularExperiment(presetConfig('relay', { stages: 3 })), 1)));
    expect(a.currentTeam()).not.toBe(b.currentTeam());
  });
});
