/**
 * A language stage's progress (src/sat/stageProgress.ts) and Cancel: the plan the settings give
 * is the stage loop's real sequence of phases — every planned unit is passed by the stage's end,
 * in process (the CLI's team, whose updates enter their own phases) and in workers (the page's,
 * whose update is one call) — on shipped models and on three checkpoint seats; the seats' workers
 * tell their sampling speed; and a stage cancelled at a worker call (the team's gate) or at a
 * phase boundary, with the team put back from its snapshot, runs again to the very record the
 * uncancelled stage gave.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SatError } from '../src/core/errors';
import { loadFromDisk } from '../src/cli/models';
import { readCheckpointFolder, type FileLike } from '../src/app/hfFiles';
import { restoreTeamState, runStages, stepThrough, teamState, type Experiment } from '../src/sat/experiment';
import { BUDGETS } from '../src/sat/hfSeatLimits';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { presetConfig } from '../src/sat/presets';
import { StageProgress, stagePlan, type PlanStep, type StageProgressReport } from '../src/sat/stageProgress';
import type { StageRecord } from '../src/sat/stage';
import type { SeatSpeed } from '../src/workers/agentApi';
import { createRemoteExperiment, type RemoteExperiment } from '../src/workers/remoteTeam';
import { hfCheckpoint } from './helpers/hfCheckpoint';
import { nodeAgentWorker } from './helpers/nodeAgentWorker';

/** Runs the next stage to its end; its record. */
async function oneStage(exp: Experiment): Promise<StageRecord> {
  const gen = stepThrough(exp);
  let r = await gen.next();
  while (!r.done) r = await gen.next();
  return r.value;
}

/** Progress reports of `exp`'s stages from here on, by stage. */
function follow(exp: Experiment, cancelled: () => Error | null = () => null): Map<number, StageProgressReport[]> {
  const seen = new Map<number, StageProgressReport[]>();
  exp.profiler = new StageProgress(exp.cfg, exp.team.length, exp.lastEval !== undefined, (r) => {
    if (!seen.has(r.stage)) seen.set(r.stage, []);
    seen.get(r.stage)!.push(r);
  }, cancelled).begin(exp.stagesDone + 1, exp.lastEval !== undefined);
  return seen;
}

/**
 * Every planned unit passed, in order, and the words of the last agent's update on the way; every
 * planned step that costs something was stood on (reported), not jumped over — except an update
 * in a worker, one call that enters no phase (`updatesSeen` false).
 */
function expectWholeStage(reports: readonly StageProgressReport[] | undefined, n: number, plan: readonly PlanStep[], updatesSeen: boolean): void {
  const said = new Set(reports?.map((r) => r.what));
  for (const p of plan) if (p.units > 0 && (updatesSeen || p.phase !== 'update')) expect(said, p.what).toContain(p.what);
  expect(reports && reports.length).toBeGreaterThan(3);
  const done = reports!.map((r) => r.done);
  expect(done).toEqual([...done].sort((a, b) => a - b));
  expect(done[0]).toBe(0);
  expect(done[done.length - 1]).toBe(reports![0]!.total);
  expect(reports!.some((r) => r.what.startsWith(`agent ${n} of ${n}: `))).toBe(true);
}

describe('a language stage tells its progress', () => {
  it('in process (the CLI): every planned unit is passed in two stages; the first plans the starting J, the second reuses it', async () => {
    const cfg = presetConfig('arith-team', { batch: 2, group: 2, evalEpisodes: 8, epochs: 1, geoIters: 2, certEpisodes: 4, stages: 2 });
    const exp = await createLlmExperiment(cfg, loadFromDisk);
    const seen = follow(exp);
    await runStages(exp, 2, (s) => (exp.profiler as StageProgress).begin(s.stage + 1, true));
    expectWholeStage(seen.get(1), 3, stagePlan(cfg, 3, false), true);
    expectWholeStage(seen.get(2), 3, stagePlan(cfg, 3, true), true);
    expect(seen.get(1)![0]!.total - seen.get(2)![0]!.total).toBe(cfg.evalEpisodes * 3);
    // The plan is the settings': more certification episodes, a larger share of the stage.
    const share = (c: typeof cfg) => {
      const plan = stagePlan(c, 3, true);
      return plan.filter((p) => p.what.startsWith('the certification batch')).reduce((s, p) => s + p.units, 0) / plan.reduce((s, p) => s + p.units, 0);
    };
    expect(share({ ...cfg, certEpisodes: 64 })).toBeGreaterThan(share(cfg));
  }, 120_000);

  it('the real-size budget is rows of the config table, and a stage at it plans its certification batch as 8 episodes per agent', () => {
    const cfg = presetConfig('arith-team', BUDGETS['real-size']);
    expect(cfg.batch * cfg.group).toBe(8);
    expect(stagePlan(cfg, 3, true).find((p) => p.what.startsWith('the certification batch'))!.what).toBe('the certification batch (24 episodes)');
  });
});

describe('three checkpoint seats in workers (the page)', () => {
  const opened: RemoteExperiment[] = [];
  afterAll(() => opened.forEach((e) => e.terminate()));
  const cfg = presetConfig('arith-team', { batch: 2, group: 2, evalEpisodes: 8, epochs: 1, geoIters: 0, certEpisodes: 4, stages: 3 });

  it('a stage passes every planned unit, each seat tells its sampling speed, and a cancelled stage put back runs again to the same record', async () => {
    const { files } = hfCheckpoint();
    const picked: FileLike[] = [...files].map(([name, bytes]) => ({ name, size: bytes.byteLength, webkitRelativePath: `tiny-llama/${name}`, arrayBuffer: async () => bytes.slice().buffer }));
    const c = await readCheckpointFolder(picked, cfg, { bytes: 2 ** 34, where: 'the test' });
    const speeds = new Map<number, SeatSpeed>();
    const exp = await createRemoteExperiment(cfg, {
      makeWorker: () => nodeAgentWorker(), load: async () => new Uint8Array(), seats: new Map([0, 1, 2].map((j) => [j, c] as const)), onSpeed: (j, s) => speeds.set(j, s),
    });
    opened.push(exp);
    if (exp.kind !== 'lm') throw new Error('a language team');
    expect(exp.infos.map((i) => i.name)).toEqual([0, 1, 2].map((j) => `${c.name}#${j}`));
    const start = await teamState(exp);

    // Uncancelled: the record to match.
    const seen = follow(exp);
    const whole = await oneStage(exp);
    expectWholeStage(seen.get(1), 3, stagePlan(cfg, 3, false), false);
    // Every seat sampled (J₀ and the stage), and what it told is what its worker measured.
    await new Promise((r) => setTimeout(r, 50)); // the last speed message may trail the call's answer
    for (const a of exp.team) {
      const s = await a.speed();
      expect(s.newTokens).toBeGreaterThan(0);
      expect(s.promptTokens).toBeGreaterThan(s.newTokens);
      expect(s.ms).toBeGreaterThan(0);
      expect(speeds.get(a.index)).toEqual(s);
    }

    // Cancelled at a worker call: the gate closes while agent 2 of 3 is on, the stage rejects with that error.
    await restoreTeamState(exp, start, []);
    const stop = new SatError('cancelled', 'cancelled by the test');
    let closedAt = '';
    exp.profiler = new StageProgress(exp.cfg, 3, false, (r) => {
      if (!closedAt && r.what.startsWith('agent 2 of 3')) {
        closedAt = r.what;
        exp.gate.close(stop);
      }
    }).begin(1, false);
    await expect(oneStage(exp)).rejects.toBe(stop);
    expect(closedAt).not.toBe('');
    await exp.gate.idle();
    exp.gate.open();
    await restoreTeamState(exp, start, []);
    exp.profiler = undefined;
    const again = await oneStage(exp);
    expect(again.jAfter).toBe(whole.jAfter);
    expect(again.certificate.chosen.lower).toBe(whole.certificate.chosen.lower);
    expect(again.steps.map((s) => s.metrics)).toEqual(whole.steps.map((s) => s.metrics));

    // Cancelled at a phase boundary (the progress's own check), in the middle of the next stage.
    const mid = await teamState(exp);
    let phases = 0;
    const boundary = new SatError('cancelled', 'at a phase boundary');
    follow(exp, () => (++phases > 6 ? boundary : null));
    const before = exp.stagesDone;
    await expect(oneStage(exp)).rejects.toBe(boundary);
    expect(exp.stagesDone).toBe(before);
    await restoreTeamState(exp, mid, [whole]);
    exp.profiler = undefined;
    const second = await oneStage(exp);
    expect(second.stage).toBe(2);
    expect(Number.isFinite(second.jAfter)).toBe(true);
  }, 240_000);
});
