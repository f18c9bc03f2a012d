/**
 * The worker boundary (src/workers/agentApi.ts, src/workers/remoteTeam.ts):
 *   (a) AgentApi used directly gives the in-process agents' numbers for every method, for a
 *       table and for a small language model;
 *   (b) the whole remote path — comlink over node:worker_threads (tests/helpers/nodeAgentWorker.ts),
 *       one worker per agent — gives bit-identical stage metrics to the in-process run (timings
 *       aside), for the climbing preset and a tiny language team;
 *   (e) a worker's warm-up (a scratch copy's update) changes neither its agent nor the run;
 *   (d) an agent step costs its worker one `update` call plus the rollouts' calls: counted per
 *       agent step (tabular and language), at most the rollout turns plus a small constant;
 *   (c) errors cross with their class, and a worker that dies rejects the call instead of hanging;
 * Seeds are fixed in each test; the language model is random (built here), so its rewards are
 * mostly 0 — this checks the plumbing, not learning.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { FormatError, NumericError } from '../src/core/errors';
import { Rng } from '../src/core/rng';
import { makeCard } from '../src/model/card';
import { modelConfig } from '../src/model/config';
import { vocabSize } from '../src/model/tokenizer';
import { initWeights, saveModel } from '../src/model/weights';
import { groupAdvantages } from '../src/sat/advantages';
import { parseConfig, type Config } from '../src/sat/config';
import { bestResponseLogits, createTabularExperiment, planLlm, planTabular, runStages, stepThrough, swapAgent } from '../src/sat/experiment';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { presetConfig } from '../src/sat/presets';
import { agentSteps } from '../src/sat/rollout';
import type { StageRecord } from '../src/sat/stage';
import type { AgentBatch, AgentPolicy, Batch, ObjectiveSpec } from '../src/sat/types';
import { agentGeometry, updateAgent, type UpdatePlan } from '../src/sat/update';
import { warmUpShape } from '../src/sat/warmUp';
import { createRemoteExperiment, RemoteAgent, type RemoteExperiment } from '../src/workers/remoteTeam';
import { AgentApi, AgentWorkerError, CPU_BACKEND } from '../src/workers/agentApi';
import { withTransfer } from '../src/workers/wire';
import { live, nodeAgentWorker } from './helpers/nodeAgentWorker';

const tinyCfg = modelConfig({ vocab: vocabSize, d: 32, layers: 1, heads: 2, hidden: 64, maxSeq: 64 });
const modelBytes = saveModel(
  tinyCfg,
  initWeights(tinyCfg, new Rng(5)),
  makeCard(tinyCfg, { name: 'arithmetic-S', task: 'arithmetic level 1', dataSeed: 5, heldOutAccuracy: 0, pretrainSeconds: 0, quant: 'f32' }),
);
const load = async () => modelBytes;

function lmSettings(extra: Record<string, unknown> = {}): Config {
  return parseConfig({ task: 'arithmetic', level: 1, agents: 2, protocol: 'chain', batch: 2, group: 4, evalEpisodes: 8, maxNew: 4, lr: 1e-3, epochs: 2, stages: 1, geoIters: 2, ...extra });
}

const spec: ObjectiveSpec = { level: 'sequence', tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.2, beta: 0.01, lr: 0.05, weightDecay: 0 };

/** Agent j's training batch from a rollout, with seeded advantages. */
function agentBatch(batch: Batch, j: number, horizon: number): AgentBatch {
  const s = agentSteps(batch, j);
  const N = batch.episodes.length;
  const rng = new Rng(11, [j]);
  const rewards = Float64Array.from({ length: N }, () => rng.uniform());
  const adv = groupAdvantages(rewards, batch.groups, batch.groupSize, 'group', 5).norm;
  return { nEpisodes: N, obs: s.obs, actions: s.actions, episodeOf: s.episodeOf, context: s.context, adv, weight: new Float64Array(N).fill(1), horizon };
}

/**
 * Calls every AgentPolicy method on both agents in the same order and expects identical results,
 * ending with a whole update (update.ts) run by AgentApi against updateAgent in-process.
 */
async function sameEverywhere(local: AgentPolicy, api: AgentApi, batch: AgentBatch): Promise<void> {
  const probe = { obs: batch.obs, actions: batch.actions, context: batch.context };
  expect(await api.distributions(probe)).toEqual(await local.distributions(probe));
  expect(await api.logProbs(probe)).toEqual(await local.logProbs(probe));
  await Promise.all([local.setReference(), api.setReference()]);
  const s0 = await local.snapshot();
  expect(await api.snapshot()).toEqual(s0);
  for (let k = 0; k < 2; k++) {
    expect(await api.trainStep(batch, spec)).toEqual(await local.trainStep(batch, spec));
    expect(await api.klToReference(batch)).toEqual(await local.klToReference(batch));
  }
  const g = await local.surrogateGradient(batch);
  expect(await api.surrogateGradient(batch)).toEqual(g);
  expect(await api.fisherVectorProduct(batch, g)).toEqual(await local.fisherVectorProduct(batch, g));
  const s1 = await local.snapshot();
  expect(await api.snapshot()).toEqual(s1);
  await Promise.all([local.interpolate(s0, 0.5), api.interpolate(s0, 0.5)]);
  expect(await api.snapshot()).toEqual(await local.snapshot());
  await Promise.all([local.restore(s1), api.restore(s1)]);
  expect(await api.logProbs(probe)).toEqual(await local.logProbs(probe));
  const info = await local.info();
  expect(await api.info()).toEqual({ ...info, backend: CPU_BACKEND });
  expect(await api.memoryBytes()).toBeGreaterThan(0);
  const plan: UpdatePlan = {
    batch, rawAdv: batch.adv, delta: 1e-4, beta: 0.01, // a tiny radius: the retries and 'reject' run too
    settings: { objective: 'sequence', tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.2, lr: 0.05, weightDecay: 0, epochs: 2, alpha: 0.1, maxBacktracks: 2, retryLrFactor: 0.5, onExhausted: 'reject', betaAdapt: true, geoIters: 2 },
    after: { logProbs: [batch], distributions: probe },
  };
  expect(await api.update(plan)).toEqual(await updateAgent(local, plan));
  expect(await api.snapshot()).toEqual(await local.snapshot());
  expect(await api.kappa(batch, batch.adv, 2)).toBe((await agentGeometry(local, batch, batch.adv, 2)).kappa);
}

/** Metrics minus wall-clock timings (perf/ms_*, perf/tokens_per_s), which differ run to run. */
function stableMetrics(r: StageRecord): Record<string, unknown> {
  return Object.fromEntries(Object.entries(r.metrics).filter(([k]) => !k.startsWith('perf/ms_') && k !== 'perf/tokens_per_s'));
}

function expectSameRun(remote: readonly StageRecord[], local: readonly StageRecord[]): void {
  expect(remote.length).toBe(local.length);
  remote.forEach((r, s) => {
    const l = local[s]!;
    expect(stableMetrics(r)).toEqual(stableMetrics(l));
    expect(r.certificate).toEqual(l.certificate);
    expect(r.steps.map((x) => [x.kl, x.advNorm, x.jAfter])).toEqual(l.steps.map((x) => [x.kl, x.advNorm, x.jAfter]));
  });
}

const opened: RemoteExperiment[] = [];
async function remote(cfg: Config): Promise<RemoteExperiment> {
  const exp = await createRemoteExperiment(cfg, { makeWorker: () => nodeAgentWorker(), load });
  opened.push(exp);
  return exp;
}

afterAll(async () => {
  for (const e of opened) e.terminate();
  for (let t = 0; t < 100 && live.size > 0; t++) await new Promise((r) => setTimeout(r, 20));
  expect(live.size).toBe(0);
});

describe('AgentApi used directly equals the in-process agent', () => {
  it('tabular: every method, the table, and the same initial logits as createTabularExperiment', async () => {
    const cfg = presetConfig('climbing', { seed: 7 });
    const exp = createTabularExperiment(cfg);
    const specs = planTabular(cfg).agents;
    const batch = await exp.env.rollout(exp.team, 4, 4, new Rng(3));
    for (const agent of exp.team) {
      const api = new AgentApi();
      await api.init({ kind: 'tabular', ...specs[agent.index]! });
      expect(await api.getLogits()).toEqual(agent.getLogits());
      await sameEverywhere(agent, api, agentBatch(batch, agent.index, exp.env.horizon));
      const z = Float64Array.from({ length: agent.nObs * agent.nActions }, (_, i) => Math.sin(i));
      agent.setLogits(z);
      await api.setLogits(z);
      expect(await api.snapshot()).toEqual(await agent.snapshot());
      await expect(api.generate([Int32Array.of(1)], { maxNew: 2, seed: 1, stream: 0 })).rejects.toThrow(AgentWorkerError);
    }
  });

  it('language model: every method plus generate', async () => {
    const cfg = lmSettings();
    const specs = planLlm(cfg).agents;
    const exp = await createLlmExperiment(cfg, load);
    const batch = await exp.env.rollout(exp.team, 2, 4, new Rng(9));
    for (const agent of exp.team) {
      const api = new AgentApi();
      await api.init({ kind: 'lm', modelName: exp.modelName, model: modelBytes, ...specs[agent.index]! });
      const ctx = [Int32Array.of(1, 5, 6), Int32Array.of(1, 7)];
      const gOpts = { maxNew: 4, seed: 5, stream: agent.index };
      expect(await api.generate(ctx, gOpts)).toEqual(await agent.generate(ctx, gOpts));
      await sameEverywhere(agent, api, agentBatch(batch, agent.index, exp.env.horizon));
      await expect(api.getLogits()).rejects.toThrow(AgentWorkerError);
    }
  });

  it('says plainly when used before init', async () => {
    await expect(new AgentApi().snapshot()).rejects.toThrow(/call init\(spec\)/);
  });
});

describe('a team of workers (comlink over node:worker_threads)', () => {
  it('climbing preset, 3 stages: every metric equals the in-process run exactly', async () => {
    const cfg = presetConfig('climbing', { seed: 4 });
    const local = createTabularExperiment(cfg);
    const exp = await remote(cfg);
    expect(exp.kind).toBe('tabular');
    expect(exp.team.length).toBe(3);
    expect(exp.infos.map((i) => i.backend)).toEqual([CPU_BACKEND, CPU_BACKEND, CPU_BACKEND]);
    expect(exp.j0).toBe(local.j0);
    expectSameRun(await runStages(exp, 3), await runStages(local, 3));
    // The tabular swap runs on a remote team too.
    if (exp.kind !== 'tabular') throw new Error('unreachable');
    const pre = await bestResponseLogits(local, 1);
    expect(await bestResponseLogits(exp, 1)).toEqual(pre);
    expect(await swapAgent(exp, 1, pre, { stage0: true })).toEqual(await swapAgent(local, 1, pre, { stage0: true }));
    expectSameRun(await runStages(exp, 1), await runStages(local, 1));
    exp.terminate();
  });

  it('a language team: the same stage metrics as in-process', async () => {
    const cfg = lmSettings({ seed: 2 });
    const local = await createLlmExperiment(cfg, load);
    const exp = await remote(cfg);
    expect(exp.j0).toBe(local.j0);
    expect(exp.infos[0]!.kind).toBe('lm');
    expect(await (exp.team[0] as RemoteAgent).memoryBytes()).toBeGreaterThan(modelBytes.byteLength);
    expectSameRun(await runStages(exp, 1), await runStages(local, 1));
    exp.terminate();
  });

  it('a warm-up (warmUp on a scratch copy) leaves every agent as it was and the run unchanged', async () => {
    const cfg = lmSettings({ seed: 3, stages: 2 });
    const cold = await remote(cfg);
    const warm = await remote(cfg);
    const team = warm.team as RemoteAgent[];
    const before = await Promise.all(team.map((a) => a.snapshot()));
    expect(await Promise.all(team.map((a) => a.warmUp(warmUpShape(cfg))))).toEqual([true, true]);
    expect(await Promise.all(team.map((a) => a.snapshot()))).toEqual(before);
    expectSameRun(await runStages(warm, 2), await runStages(cold, 2));
    // Nothing to warm in a table's worker.
    const table = await remote(parseConfig({ task: 'climbing', stages: 1 }));
    expect(await (table.team[0] as RemoteAgent).warmUp(warmUpShape(cfg))).toBe(false);
    for (const e of [cold, warm, table]) e.terminate();
  });

  /**
   * Worker calls per agent step, counted: the agent being updated makes exactly one `update` call
   * and nothing else of the update's kind (trainStep, klToReference, snapshots, Fisher products…);
   * every other call serves a rollout. Language: per rollout an agent writes one message (one
   * `generate` per turn it speaks) and scores it (one `logProbs`); a tabular rollout asks each
   * agent once for its table (`distributions`).
   */
  it('an agent step costs its worker one update call plus the rollouts\' calls', async () => {
    const updateKind = ['trainStep', 'klToReference', 'snapshot', 'restore', 'interpolate', 'surrogateGradient', 'fisherVectorProduct'];
    const perStep = async (cfg: Config): Promise<{ calls: number[]; byName: Record<string, number>[] }> => {
      const exp = await remote(cfg);
      const team = exp.team as RemoteAgent[];
      const total = () => team.reduce((s, a) => s + a.callCount, 0);
      const names = () => team.map((a) => Object.fromEntries(a.calls));
      const calls: number[] = [];
      const byName: Record<string, number>[] = [];
      const gen = stepThrough(exp);
      let before = total();
      let prev = names();
      for (let r = await gen.next(); !r.done; r = await gen.next()) {
        calls.push(total() - before);
        const now = names();
        const j = r.value.agent;
        const diff: Record<string, number> = {};
        for (const [k, v] of Object.entries(now[j]!)) if (v - (prev[j]![k] ?? 0) > 0) diff[k] = v - (prev[j]![k] ?? 0);
        byName.push(diff);
        before = total();
        prev = now;
      }
      exp.terminate();
      return { calls, byName };
    };
    const tab = await perStep(presetConfig('climbing', { seed: 4, stages: 1 }));
    const lm = await perStep(lmSettings({ seed: 2 }));
    console.log(`[workers] worker calls per agent step — climbing: ${tab.calls.join(', ')}; language (2 agents, chain): ${lm.calls.join(', ')}`);
    // A language stage whose certificate may draw more than its first round snapshots every agent
    // once at the stage start (π_cur, to roll the later rounds out from; stage.ts §1, docs/
    // certificate.md §5.3): a call of the stage, counted with its first agent step, not the update's.
    const roundsLater = lmSettings().certRounds > 1;
    [...tab.byName, ...lm.byName].forEach((d, i) => {
      expect(d.update).toBe(1);
      const firstLm = i === tab.byName.length;
      for (const k of updateKind) expect(d[k], k).toBe(k === 'snapshot' && firstLm && roundsLater ? 1 : undefined);
    });
    // Tabular (n = 3): one update and nothing else — the stage keeps the team's tables, so J, the
    // resampled batches and the certificate ask no agent. The first step also carries the stage
    // start: the tables and the references (one call per agent each).
    const n = 3;
    tab.calls.forEach((c, i) => expect(c).toBeLessThanOrEqual(1 + (i === 0 ? 2 * n : 0)));
    // Language (n = 2, one message each per episode): a rollout costs ≤ n generate + n logProbs,
    // an evaluation n generate. Per step: one update, the certification batch, a probe, the
    // stage-end evaluation; the first step also the start's evaluation, stage batch, references and snapshots.
    lm.calls.forEach((c, i) => expect(c).toBeLessThanOrEqual(1 + 2 * (2 + 2) + 2 + (i === 0 ? 2 + (2 + 2) + 2 + 2 : 0)));
  });
});

describe('results across the boundary', () => {
  it('a typed array on shared memory (a resident CPU tensor) leaves the worker as an unshared copy; ordinary ones are transferred as they are', async () => {
    const shared = new Float32Array(new SharedArrayBuffer(64), 16, 4).fill(3);
    const plain = Float32Array.of(1, 2);
    class Fake {
      async get(): Promise<unknown> {
        return { a: shared, b: [shared, plain], c: 7, d: plain };
      }
    }
    const r = (await (withTransfer(new Fake() as unknown as AgentApi) as unknown as Fake).get()) as { a: Float32Array; b: Float32Array[]; c: number; d: Float32Array };
    for (const x of [r.a, r.b[0]!]) {
      expect(x.buffer).toBeInstanceOf(ArrayBuffer);
      expect([...x]).toEqual([3, 3, 3, 3]);
    }
    expect(r.d).toBe(plain);
    expect(r.b[1]).toBe(plain);
    expect(r.c).toBe(7);
    shared[0] = 9;
    expect(r.a[0], 'a copy, not a window onto the worker’s memory').toBe(3);
  });
});

describe('errors across the boundary', () => {
  it('a thrown SatError keeps its class and message', async () => {
    const a = new RemoteAgent(0, nodeAgentWorker());
    try {
      const bad = modelBytes.slice(0, 40);
      await expect(a.init({ kind: 'lm', modelName: 'x', modelFile: 'x', model: bad, index: 0, name: 'x', lora: 0, loraAlpha: 1, seed: 0, temperature: 1, topK: 0 })).rejects.toThrow(FormatError);
      await a.init({ kind: 'tabular', index: 0, nObs: 1, nActions: 2, initScale: 0, seed: 0, path: [0, 0] });
      const err = await a.generate([Int32Array.of(1)], { maxNew: 1, seed: 0, stream: 0 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentWorkerError);
      expect((err as AgentWorkerError).code).toBe('worker');
      expect((err as Error).name).toBe('AgentWorkerError');
      expect((err as Error).message).toMatch(/needs a language-model agent/);
      // A NaN advantage makes the objective non-finite: NumericError, parameters unchanged.
      const before = await a.snapshot();
      const nan: AgentBatch = { nEpisodes: 1, obs: Int32Array.of(0), actions: Int32Array.of(1), episodeOf: Int32Array.of(0), adv: Float64Array.of(NaN), weight: Float64Array.of(1), horizon: 1 };
      await expect(a.trainStep(nan, spec)).rejects.toThrow(NumericError);
      expect(await a.snapshot()).toEqual(before);
    } finally {
      a.terminate();
    }
  });

  it('a worker that exits mid-call rejects that call and every later one with AgentWorkerError', async () => {
    const a = new RemoteAgent(2, nodeAgentWorker({ crash: { method: 'snapshot', how: 'exit' } }));
    await a.init({ kind: 'tabular', index: 2, nObs: 1, nActions: 2, initScale: 0, seed: 0, path: [0, 2] });
    await expect(a.snapshot()).rejects.toThrow(/Agent 2's worker stopped \(it exited with code 3\)/);
    await expect(a.setReference()).rejects.toThrow(AgentWorkerError);
    a.terminate();
  });

  it('a worker that throws outside any call rejects the pending call instead of hanging', async () => {
    const a = new RemoteAgent(1, nodeAgentWorker({ crash: { method: 'setReference', how: 'throw' } }));
    await a.init({ kind: 'tabular', index: 1, nObs: 1, nActions: 2, initScale: 0, seed: 0, path: [0, 1] });
    await expect(a.setReference()).rejects.toThrow(/Agent 1's worker stopped \(it threw crash test: setReference blew up\)/);
    a.terminate();
  });

  it('terminate() rejects calls still pending', async () => {
    const a = new RemoteAgent(0, nodeAgentWorker({ crash: { method: 'memoryBytes', how: 'hang' } }));
    await a.init({ kind: 'tabular', index: 0, nObs: 1, nActions: 2, initScale: 0, seed: 0, path: [0, 0] });
    const pending = a.memoryBytes();
    a.terminate();
    await expect(pending).rejects.toThrow(/terminated/);
  });

  it('an experiment whose worker cannot start ends all its workers and says why', async () => {
    let n = 0;
    const make = () => nodeAgentWorker(n++ === 1 ? { crash: { method: 'init', how: 'exit' } } : {});
    await expect(createRemoteExperiment(presetConfig('climbing'), { makeWorker: make })).rejects.toThrow(/Agent 1's worker stopped/);
  });
});
