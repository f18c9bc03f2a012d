/**
 * The page's "Check bound" (stage.ts `checkFinishedStage`): a finished language stage's bound
 * checked afterwards gives the verdict the stage would have had if it had been checked as it ran
 * (`env.heldPairs`), leaves the team exactly as it was, and replaces only the held check and its
 * metrics in the record. On the tiny enumerable task with J reported as estimated, so the stage
 * takes the CRN path; the exact J it can also compute checks the estimate.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { parseConfig } from '../src/sat/config';
import type { AgentPolicy } from '../src/sat/types';
import type { TeamEvaluation } from '../src/sat/env/types';
import { ExactLmEnv } from '../src/sat/env/lm';
import { checkFinishedStage, runStage, type StageRecord } from '../src/sat/stage';
import { TINY_PROBLEMS, tinyTask } from '../src/tasks/llm/tiny';
import { tinyTeam } from './helpers/tinyTeam';

/** The tiny task's environment, reporting its J as an estimate: stages then check "held" by CRN. */
class EstimatedTinyEnv extends ExactLmEnv {
  override async evaluate(team: readonly AgentPolicy[]): Promise<TeamEvaluation & { accuracy: number }> {
    return { ...(await super.evaluate(team)), exact: false };
  }
}

const PAIRS = 512;

async function oneStage(heldPairs: number): Promise<{ rec: StageRecord; env: EstimatedTinyEnv; team: ReturnType<typeof tinyTeam>['team']; start: Awaited<ReturnType<AgentPolicy['snapshot']>>[]; rng: Rng }> {
  const { team } = tinyTeam({ agents: 2, maxNew: 2, temperature: 1, topK: 0, seed: 11 });
  const env = new EstimatedTinyEnv(tinyTask, 'chain', 2, { maxNew: 2, evalEpisodes: 8, evalSeed: 1 }, TINY_PROBLEMS);
  env.heldPairs = heldPairs;
  const cfg = parseConfig({ task: 'arithmetic', agents: 2, seed: 5, batch: 3, group: 4, epochs: 2, geoIters: 0, probeEpisodes: 12, certEpisodes: 32, delta: 0.5, lr: 0.1, maxNew: 2 });
  const rng = new Rng(cfg.seed);
  const start = await Promise.all(team.map((a) => a.snapshot()));
  const gen = runStage({ env, cfg, team, rng, betas: team.map(() => cfg.beta), stage: 1, aMax: 1, startEval: await env.evaluate(team) });
  let r = await gen.next();
  while (!r.done) r = await gen.next();
  return { rec: r.value, env, team, start, rng };
}

describe('Check bound: a finished stage checked afterwards', () => {
  it('gives the in-run verdict, leaves the team as it was, and changes only the held fields', async () => {
    const inRun = await oneStage(PAIRS);
    const plain = await oneStage(0);
    expect(plain.rec.held?.state).toBe('unchecked');
    expect(inRun.rec.held?.state).not.toBe('unchecked');

    const end = await Promise.all(plain.team.map((a) => a.snapshot()));
    const told: number[] = [];
    const checked = (await checkFinishedStage(plain.env, plain.team, plain.start, plain.rec, PAIRS, plain.rng, { done: (k) => told.push(k), cancelled: () => false }))!;
    expect(told).toEqual([1, 2]); // the page's progress: after each of the two rollouts
    expect(checked.held).toEqual(inRun.rec.held);
    for (const key of ['cert/held', 'cert/held_dj', 'cert/held_se', 'cert/held_pairs']) expect(checked.metrics[key], key).toEqual(inRun.rec.metrics[key]);
    // Everything else is the record as it was (the check draws from its own stream).
    const { held: _a, metrics: ma, ...restChecked } = checked;
    const { held: _b, metrics: mb, ...restPlain } = plain.rec;
    expect(restChecked).toEqual(restPlain);
    const others = (m: Record<string, unknown>) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('cert/held') && !k.startsWith('perf/')));
    expect(others(ma)).toEqual(others(mb));
    // The team is where the stage left it, parameter for parameter.
    const after = await Promise.all(plain.team.map((a) => a.snapshot()));
    after.forEach((s, k) => expect(Array.from(s.params)).toEqual(Array.from(end[k]!.params)));
    // The estimate is of the stage's ΔJ, which the tiny task also computes exactly.
    const h = checked.held!;
    expect(h.pairs).toBe(PAIRS);
    expect(Math.abs(h.estimate - (plain.rec.jAfter - plain.rec.jBefore))).toBeLessThanOrEqual(4 * h.se + 1e-12);
  });

  it('cancelled between its rollouts: no verdict, the team as it was, and a later check gives the same verdict', async () => {
    const plain = await oneStage(0);
    const end = await Promise.all(plain.team.map((a) => a.snapshot()));
    const told: number[] = [];
    const none = await checkFinishedStage(plain.env, plain.team, plain.start, plain.rec, PAIRS, plain.rng, { done: (k) => told.push(k), cancelled: () => true });
    expect(none).toBeNull();
    expect(told).toEqual([1]);
    const after = await Promise.all(plain.team.map((a) => a.snapshot()));
    after.forEach((s, k) => expect(Array.from(s.params)).toEqual(Array.from(end[k]!.params)));
    const inRun = await oneStage(PAIRS);
    const checked = await checkFinishedStage(plain.env, plain.team, plain.start, plain.rec, PAIRS, plain.rng);
    expect(checked!.held).toEqual(inRun.rec.held);
  });
});
