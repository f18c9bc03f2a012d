/**
 * The token inspector's numbers (src/sat/inspect.ts, docs/method.md §9b.1), checked against an
 * independent recomputation: a tiny random model, a real rollout's batch with seeded advantages of
 * both signs, one update run by the agent's own AgentApi (as in its worker); then every listed
 * token's numbers recomputed by tests/helpers/inspectRef.ts from the model's forward pass over each
 * sequence alone at the parameters before and after the update — log π_new, log π_cur, the ratio,
 * the clip decision as docs/method.md §5.3 words it (r the episode's ratio under `sequence`, the
 * token's under `token`), the exact per-state KL of §5.4, the contribution and both next-token
 * distributions — and the KL also against the monitor's own f32 kernel. The update's settings are
 * chosen so that some terms end clipped and some not (asserted, so the clip check cannot pass
 * vacuously).
 *
 * Also: a rejected update inspects as π_new = π_cur exactly; a Stage-0 seat is inspected against
 * the projection it sampled from (public/models arithmetic-S → arithmetic-M); the latest update is
 * kept (its K × V × 4 bytes counted in memoryBytes), a recorded older step is inspected at the
 * parameters it left and the agent put back, a step dropped past the budget says why; the
 * next-token bars (`topTokens`); and the drawing (server-rendered): one button per token, the
 * clipped ones outlined, green for a positive contribution and red for a negative one, the KL bar
 * red exactly where KL > δ. Through the page's Session over Node worker threads: which steps can be
 * inspected (every recorded step, also after its agent updated again) and that a step
 * asked for while an inspection is in flight waits for it instead of being dropped.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createElement as h } from 'react';
import { renderToString } from 'react-dom/server';
import { afterAll, describe, expect, it } from 'vitest';
import { InspectionView } from '../src/app/components/TokenInspector';
import { createRemoteExperiment, type RemoteAgent } from '../src/workers/remoteTeam';
import { Session } from '../src/app/session';
import type { TeamOpener } from '../src/app/team';
import { createPlaygroundStore } from '../src/app/store';
import { presetConfig } from '../src/sat/presets';
import { Rng } from '../src/core/rng';
import { tokenizer } from '../src/model/tokenizer';
import { loadModel } from '../src/model/weights';
import { parseConfig, type Config } from '../src/sat/config';
import { planLlm } from '../src/sat/experiment';
import { createLlmExperiment, lmAgent } from '../src/sat/llmExperiment';
import { topTokens, type TokenInspection } from '../src/sat/inspect';
import type { LmSteps } from '../src/sat/agents/lm';
import { agentSteps } from '../src/sat/rollout';
import type { AgentBatch } from '../src/sat/types';
import type { UpdatePlan, UpdateSettings } from '../src/sat/update';
import { AgentApi } from '../src/workers/agentApi';
import { clippedByTheBook, logPolicyRows, referenceNumbers } from './helpers/inspectRef';
import { nodeAgentWorker } from './helpers/nodeAgentWorker';
import { tinyModelBytes } from './helpers/tinyModel';

const modelBytes = tinyModelBytes(5);
const load = async () => modelBytes;
const TAU = 0.8;
const EPS = 0.2;

function lmSettings(): Config {
  return parseConfig({ task: 'arithmetic', level: 1, agents: 2, protocol: 'chain', batch: 3, group: 4, evalEpisodes: 8, maxNew: 4, temperature: TAU, stages: 3 });
}

function settings(objective: 'sequence' | 'token', extra: Partial<UpdateSettings> = {}): UpdateSettings {
  return {
    objective, tokenAgg: 'grpo', epsLow: EPS, epsHigh: EPS, lr: 0.0005, weightDecay: 0, epochs: 2, alpha: 0.05,
    maxBacktracks: 0, retryLrFactor: 1, onExhausted: 'keep', betaAdapt: false, geoIters: 0, ...extra,
  };
}

/** A rollout of the tiny team, agent j's batch with seeded advantages of both signs and weights ≠ 1. */
async function setup(j: number) {
  const cfg = lmSettings();
  const exp = await createLlmExperiment(cfg, load);
  const batch = await exp.env.rollout(exp.team, 3, 4, new Rng(9));
  const s = agentSteps(batch, j);
  const N = batch.episodes.length;
  const rng = new Rng(21, [j]);
  const adv = Float64Array.from({ length: N }, () => 4 * rng.uniform() - 2);
  const weight = Float64Array.from({ length: N }, () => 0.5 + rng.uniform());
  const agentBatch: AgentBatch = { nEpisodes: N, obs: s.obs, actions: s.actions, episodeOf: s.episodeOf, context: s.context, adv, weight, horizon: exp.env.horizon };
  const rawAdv = Float64Array.from(adv, (a) => a / 3);
  const api = new AgentApi();
  const init = planLlm(cfg).agents[j]!;
  await api.init({ kind: 'lm', modelName: 'arithmetic-S', model: modelBytes.slice(), ...init });
  // The independent twin: the same model file, its own Model, driven by plain forward passes.
  const twin = lmAgent(init, loadModel(modelBytes)).model;
  return { api, agentBatch, rawAdv, twin };
}

async function inspected(api: AgentApi): Promise<TokenInspection> {
  const ans = await api.inspect(100);
  if (!ans.ok) throw new Error(`no inspection: ${ans.reason}`);
  return ans.inspection;
}

describe('token inspector: the numbers equal an independent recomputation from the model', () => {
  for (const objective of ['sequence', 'token'] as const) {
    it(`${objective} objective: log π_new, log π_cur, ratio, clip decision, KL and contribution of every token`, async () => {
      const j = 1;
      const { api, agentBatch, rawAdv, twin } = await setup(j);
      const before = (await api.snapshot()).params;
      // A sequence ratio multiplies its message's token ratios, so it leaves the clip band after a
      // smaller step: each objective gets the rate at which its clip decision goes both ways.
      const plan: UpdatePlan = { batch: agentBatch, rawAdv, delta: 10, beta: 0, settings: settings(objective, { lr: objective === 'sequence' ? 0.0002 : 0.0005 }) };
      const res = await api.update(plan);
      expect(res.rejected).toBe(false);
      const after = (await api.snapshot()).params;
      const ins = await inspected(api);
      const V = twin.cfg.vocab;
      const K = agentBatch.obs.length;
      expect(ins.nTokens).toBe(K);
      expect(ins.objective).toBe(objective);
      expect(ins.temperature).toBe(TAU);
      const ref = referenceNumbers(agentBatch, logPolicyRows(twin, before, agentBatch, TAU), logPolicyRows(twin, after, agentBatch, TAU));
      let listed = 0;
      let clipped = 0;
      let worst = 0;
      const ctx = agentBatch.context as LmSteps;
      for (const ep of ins.episodes) {
        expect(ep.adv).toBe(agentBatch.adv[ep.e]);
        expect(ep.weight).toBe(agentBatch.weight[ep.e]);
        expect(ep.rawAdv).toBe(rawAdv[ep.e]);
        expect(ep.logRatio).toBeCloseTo(ref.u[ep.e]!, 9);
        for (const m of ep.messages) {
          m.tokens.forEach((t, i) => {
            const k = t.k;
            const want = ref.tokens[k]!;
            expect(agentBatch.episodeOf[k]).toBe(ep.e);
            expect(t.token).toBe(agentBatch.actions[k]);
            // The message's context is the sequence up to its first token.
            if (i === 0) expect(Array.from(m.context)).toEqual(Array.from(ctx.seqs[ctx.stepSeq[agentBatch.obs[k]!]!]!.slice(0, ctx.stepPos[agentBatch.obs[k]!]!)));
            const rTerm = objective === 'sequence' ? Math.exp(ref.u[ep.e]!) : want.ratio;
            worst = Math.max(worst, Math.abs(t.logpNew - want.logpNew), Math.abs(t.logpCur - want.logpCur), Math.abs(t.ratio - want.ratio) / want.ratio, Math.abs(t.kl - want.kl));
            expect(t.clipped, `token ${k}: r = ${rTerm}, Ã = ${ep.adv}`).toBe(clippedByTheBook(rTerm, ep.adv, EPS, EPS));
            expect(t.contribution).toBeCloseTo(ep.weight * ep.adv * (want.logpNew - want.logpCur), 9);
            // The next-token distributions at this state, before and after.
            for (let b = 0; b < V; b++) {
              expect(Math.abs(ins.pNew[t.row * V + b]! - want.pNew[b]!)).toBeLessThan(1e-6);
              expect(Math.abs(ins.pCur[t.row * V + b]! - want.pCur[b]!)).toBeLessThan(1e-6);
            }
            // The monitor's own κ (the f32 KL kernel) agrees with the inspector's f64 KL.
            expect(Math.abs(t.kl - res.kl[k]!)).toBeLessThan(1e-5 + 1e-4 * t.kl);
            listed++;
            if (t.clipped) clipped++;
          });
        }
      }
      console.log(`inspect (${objective}): ${listed} tokens listed of ${K}, ${clipped} clipped, largest gap to the recomputation ${worst.toExponential(2)}`);
      expect(worst).toBeLessThan(1e-9);
      expect(listed).toBe(K);
      // The settings make the update move far enough that the clip decision goes both ways.
      expect(clipped).toBeGreaterThan(0);
      expect(clipped).toBeLessThan(listed);
      expect(ins.klMax).toBeGreaterThan(0);
      // The summary covers the whole batch.
      expect(ins.klMean).toBeCloseTo(res.check.mean, 5);
    });
  }

  it('a rejected update inspects as π_new = π_cur: every ratio exactly 1, every KL exactly 0, nothing clipped', async () => {
    const { api, agentBatch, rawAdv } = await setup(0);
    const plan: UpdatePlan = { batch: agentBatch, rawAdv, delta: 1e-6, beta: 0, settings: settings('sequence', { lr: 0.05, onExhausted: 'reject' }) };
    const res = await api.update(plan);
    expect(res.rejected).toBe(true);
    const ins = await inspected(api);
    expect(ins.rejected).toBe(true);
    const tokens = ins.episodes.flatMap((e) => e.messages.flatMap((m) => m.tokens));
    expect(tokens.length).toBeGreaterThan(0);
    for (const t of tokens) {
      expect(t.ratio).toBe(1);
      expect(t.kl).toBe(0);
      expect(t.clipped).toBe(false);
      expect(t.contribution === 0).toBe(true);
    }
  });

  it('a Stage-0 seat (plug-and-play swap): π_cur is the projection it sampled from, π_new the student after its update', async () => {
    const file = (name: string) => new Uint8Array(readFileSync(join(import.meta.dirname, '../public/models', `${name}.safetensors`)));
    const api = new AgentApi();
    await api.init({ kind: 'lm', index: 0, name: 'arithmetic-S#0', modelFile: 'arithmetic-S', modelName: 'arithmetic-S', model: file('arithmetic-S'), lora: 4, loraAlpha: 16, seed: 7, temperature: 1, topK: 0 });
    // Two short messages after arithmetic prompts: every message token a step of agent 0.
    const texts = [['<bos>12+7=<a0>', '19<eos>'], ['<bos>3+4=<a0>', '72<eos>']];
    const seqs = texts.map(([c, m]) => Int32Array.from(tokenizer.encode(c! + m!)));
    const stepSeq: number[] = [];
    const stepPos: number[] = [];
    texts.forEach(([c], i) => {
      for (let pos = tokenizer.encode(c!).length; pos < seqs[i]!.length; pos++) (stepSeq.push(i), stepPos.push(pos));
    });
    const context: LmSteps = { seqs, stepSeq: Int32Array.from(stepSeq), stepPos: Int32Array.from(stepPos) };
    const b: AgentBatch = {
      nEpisodes: 2, obs: Int32Array.from(stepSeq, (_, k) => k), actions: Int32Array.from(stepSeq, (q, k) => seqs[q]![stepPos[k]!]!), episodeOf: Int32Array.from(stepSeq),
      context, adv: Float64Array.of(1.2, -0.8), weight: Float64Array.of(1, 1), horizon: 4,
    };
    await api.update({ batch: b, rawAdv: b.adv, delta: 10, beta: 0, settings: settings('sequence') });
    expect(await api.keep('stage 1')).toBe(true);
    await api.swapIn('arithmetic-M', file('arithmetic-M'), b, { stage0: true, delta0: 0.05, distillSteps: 3, distillLr: 1e-3, delta: 10 });
    const gone = await api.inspect();
    expect(!gone.ok && /seat was swapped/.test(gone.reason)).toBe(true);
    // A step recorded before the swap belongs to the model it replaced: said so, not recomputed.
    const before = await api.inspect(100, 'stage 1');
    expect(!before.ok && /update in stage 1: its seat was swapped for another model since: the parameters kept for this step belong to the model it replaced/.test(before.reason)).toBe(true);
    await api.setReference(); // the next stage: the projection becomes the seat's π_cur
    const projection = await api.distributions(b);
    await api.update({ batch: b, rawAdv: b.adv, delta: 10, beta: 0, settings: settings('sequence', { lr: 1e-3 }) });
    const student = await api.distributions(b);
    const ins = await inspected(api);
    const V = 64;
    let worst = 0;
    let moved = 0;
    for (const t of ins.episodes.flatMap((e) => e.messages.flatMap((m) => m.tokens))) {
      const a = b.actions[t.k]!;
      worst = Math.max(worst, Math.abs(t.logpCur - Math.log(projection[t.k * V + a]!)), Math.abs(t.logpNew - Math.log(student[t.k * V + a]!)));
      moved = Math.max(moved, Math.abs(t.logpNew - t.logpCur));
    }
    expect(ins.nTokens).toBe(b.obs.length);
    expect(moved).toBeGreaterThan(1e-3);
    expect(worst).toBeLessThan(1e-5); // π_cur through the student's reference (f32 logits of the projection) vs the projection's f64 log-probs
  }, 120_000);

  it('only the latest update is kept: before any update, after a restore and for a table the answer says why', async () => {
    const { api, agentBatch, rawAdv } = await setup(0);
    const first = await api.inspect();
    expect(first.ok).toBe(false);
    if (!first.ok) expect(first.reason).toMatch(/has not been updated yet/);
    const snap = await api.snapshot();
    const m0 = await api.memoryBytes();
    await api.update({ batch: agentBatch, rawAdv, delta: 10, beta: 0, settings: settings('sequence') });
    expect((await api.inspect()).ok).toBe(true);
    // What the worker keeps for it: π_cur's logits at the batch's K states, K × V × 4 bytes.
    expect((await api.memoryBytes()) - m0).toBe(agentBatch.obs.length * 64 * 4);
    // A second inspection gives the same numbers (nothing moved).
    const a = await inspected(api);
    const b = await inspected(api);
    expect(b.episodes).toEqual(a.episodes);
    // Listing fewer episodes lists the first ones.
    const two = (await api.inspect(2)) as { ok: true; inspection: TokenInspection };
    expect(two.inspection.episodes.map((e) => e.e)).toEqual(a.episodes.slice(0, 2).map((e) => e.e));
    await api.restore(snap);
    const gone = await api.inspect();
    expect(gone.ok).toBe(false);
    if (!gone.ok) expect(gone.reason).toMatch(/restored from a snapshot/);
    const table = new AgentApi();
    await table.init({ kind: 'tabular', index: 0, nObs: 2, nActions: 2, initScale: 0.5, seed: 1, path: [0, 0] });
    const t = await table.inspect();
    expect(t.ok).toBe(false);
    if (!t.ok) expect(t.reason).toMatch(/is a table/);
  });

  it('recorded steps: an older one is inspected at the parameters it left, the agent put back; past the budget the oldest says it was dropped and why', async () => {
    const { api, agentBatch, rawAdv } = await setup(0);
    const plan = (lr: number): UpdatePlan => ({ batch: agentBatch, rawAdv, delta: 10, beta: 0, settings: settings('sequence', { lr }) });
    await api.update(plan(0.0005));
    expect(await api.keep('stage 1')).toBe(true);
    const first = await inspected(api);
    await api.update(plan(0.001));
    expect(await api.keep('stage 2')).toBe(true);
    const live = (await api.snapshot()).params;
    const again = await api.inspect(100, 'stage 1');
    if (!again.ok) throw new Error(again.reason);
    expect(again.inspection.episodes).toEqual(first.episodes);
    expect(Array.from(again.inspection.pNew)).toEqual(Array.from(first.pNew));
    expect(Array.from((await api.snapshot()).params)).toEqual(Array.from(live));
    const latest = await api.inspect(100, 'stage 2');
    if (!latest.ok) throw new Error(latest.reason);
    expect(Array.from(latest.inspection.pNew)).not.toEqual(Array.from(first.pNew));
    const unknown = await api.inspect(100, 'stage 9');
    expect(!unknown.ok && /never recorded it/.test(unknown.reason)).toBe(true);
    // A budget that holds one step: keeping a second drops the first, which then says so.
    const small = new AgentApi(1);
    await small.init({ kind: 'lm', modelName: 'arithmetic-S', model: modelBytes.slice(), ...planLlm(lmSettings()).agents[0]! });
    await small.update(plan(0.0005));
    await small.keep('stage 1');
    await small.update(plan(0.0005));
    await small.keep('stage 2');
    const dropped = await small.inspect(100, 'stage 1');
    expect(dropped.ok).toBe(false);
    if (!dropped.ok) expect(dropped.reason).toMatch(/update in stage 1: its worker keeps .* within 9\.5e-7 MiB \(1 of them now, 0\.\d+ MiB each.*dropped to make room/);
    expect((await small.inspect(100, 'stage 2')).ok).toBe(true);
  });
});

describe('Session.inspectStep: the page asks the agent\'s worker', () => {
  /** The page's team.ts with Node worker threads for Web Workers. */
  const opener: TeamOpener = async (cfg) => {
    const exp = await createRemoteExperiment(cfg, { makeWorker: () => nodeAgentWorker(), load });
    return { exp, agents: exp.infos.map((info, index) => ({ ...info, index })), backend: 'Node workers', workers: exp.team, terminate: () => exp.terminate() };
  };
  const session = new Session(createPlaygroundStore(), opener);
  afterAll(() => session.currentTeam()?.terminate());

  it('every recorded step, also after its agent updated again; steps not yet run say why; a step waits for an inspection in flight', async () => {
    await session.openConfig(lmSettings(), 'arith-team', 'test');
    const store = session.store;
    const first = await session.inspectStep({ stage: 1, agent: 0 });
    expect(first.ok).toBe(false);
    if (!first.ok) expect(first.reason).toMatch(/Agent 0 has not been updated in stage 1 yet/);
    await session.stepAgent(); // stage 1, agent 0
    const a0 = await session.inspectStep({ stage: 1, agent: 0 });
    expect(a0.ok && a0.inspection.agent === 0 && a0.inspection.nTokens > 0).toBe(true);
    // Asked while an inspection is in flight, a step runs after it (it is not dropped): its first
    // call to any worker comes after the inspection's answer.
    const team = session.currentExperiment()!.team as RemoteAgent[];
    const log: string[] = [];
    const inspect0 = team[0]!.inspect.bind(team[0]);
    team[0]!.inspect = async (n, tag) => {
      const r = await inspect0(n, tag);
      log.push('inspected');
      return r;
    };
    for (const a of team) {
      const speak = a.speak.bind(a); // a rollout's call per turn (the environment sends text)
      a.speak = (c, o) => (log.push('step calls a worker'), speak(c, o));
    }
    const during = session.inspectStep({ stage: 1, agent: 0 });
    await session.stepAgent(); // stage 1, agent 1: closes the stage
    expect((await during).ok).toBe(true);
    expect(log[0]).toBe('inspected');
    expect(log.length).toBeGreaterThan(1);
    expect(store.getState().stages.length).toBe(1);
    const a1 = await session.inspectStep({ stage: 1, agent: 1 });
    if (!a1.ok) throw new Error(a1.reason);
    await session.stepAgent(); // stage 2, agent 0 (the stage start re-froze every agent's π_cur)
    // Agent 0 has updated since: its stage-1 step is recomputed from the parameters that step left,
    // the same numbers as when it was the latest; and the agent itself is put back as it was.
    const live = (await team[0]!.snapshot()).params;
    const old = await session.inspectStep({ stage: 1, agent: 0 });
    if (!old.ok) throw new Error(old.reason);
    if (!a0.ok) throw new Error(a0.reason);
    expect(old.inspection.episodes).toEqual(a0.inspection.episodes);
    expect(Array.from(old.inspection.pNew)).toEqual(Array.from(a0.inspection.pNew));
    expect(Array.from((await team[0]!.snapshot()).params)).toEqual(Array.from(live));
    const now2 = await session.inspectStep({ stage: 2, agent: 0 });
    if (!now2.ok) throw new Error(now2.reason);
    expect(Array.from(now2.inspection.pNew)).not.toEqual(Array.from(a0.inspection.pNew));
    // Agent 1 has not moved since its stage-1 update: the same numbers as before stage 2 began.
    const again = await session.inspectStep({ stage: 1, agent: 1 });
    if (!again.ok) throw new Error(again.reason);
    expect(again.inspection.episodes).toEqual(a1.inspection.episodes);
    expect(Array.from(again.inspection.pNew)).toEqual(Array.from(a1.inspection.pNew));
  }, 120_000);

  it('a table says the inspector is for language agents', async () => {
    await session.openConfig(presetConfig('climbing'), 'climbing', 'test');
    await session.stepAgent();
    const step = session.store.getState().partial[0]!;
    const ans = await session.inspectStep({ stage: step.stage, agent: step.agent });
    expect(ans.ok).toBe(false);
    if (!ans.ok) expect(ans.reason).toMatch(/is a table: the token inspector is for language agents/);
  }, 60_000);
});

describe('the inspector as drawn (server-rendered)', () => {
  it('one button per token; clipped outlined; colour by the contribution\'s sign; the KL bar red exactly where KL > δ', async () => {
    const { api, agentBatch, rawAdv } = await setup(1);
    await api.update({ batch: agentBatch, rawAdv, delta: 10, beta: 0, settings: settings('token') });
    const got = await inspected(api);
    // Here the update moved every token the way its advantage asked (all 45 contributions > 0); the
    // view reads only a contribution's sign and size, so every other token's is negated to draw
    // both colours. And a radius inside the KLs' range, so the bars go both ways.
    const kls = got.episodes.flatMap((e) => e.messages.flatMap((m) => m.tokens.map((t) => t.kl))).sort((a, b) => a - b);
    const ins: TokenInspection = {
      ...got,
      delta: kls[Math.floor(kls.length / 2)]!,
      episodes: got.episodes.map((e) => ({ ...e, messages: e.messages.map((m) => ({ ...m, tokens: m.tokens.map((t) => ({ ...t, contribution: t.k % 2 ? -t.contribution : t.contribution })) })) })),
    };
    const tokens = ins.episodes.flatMap((e) => e.messages.flatMap((m) => m.tokens));
    const html = renderToString(h(InspectionView, { ins }));
    const count = (re: RegExp) => (html.match(re) ?? []).length;
    expect(count(/data-testid="inspector-token"/g)).toBe(tokens.length);
    const clipped = tokens.filter((t) => t.clipped).length;
    expect(clipped).toBeGreaterThan(0);
    expect(count(/class="ti-token clipped/g)).toBe(clipped);
    const over = tokens.filter((t) => t.kl > ins.delta).length;
    expect(over).toBeGreaterThan(0);
    expect(over).toBeLessThan(tokens.length);
    expect(count(/class="ti-kl over"/g)).toBe(over);
    expect(tokens.some((t) => t.contribution > 0) && tokens.some((t) => t.contribution < 0)).toBe(true);
    // Each colour once more, in the legend's swatch.
    expect(count(/background:rgba\(0, 158, 115/g)).toBe(tokens.filter((t) => t.contribution > 0).length + 1);
    expect(count(/background:rgba\(213, 94, 0/g)).toBe(tokens.filter((t) => t.contribution < 0).length + 1);
    // One tab stop for all the tokens.
    expect(count(/tabindex="0"/g)).toBe(1);
  });
});

describe('topTokens: the next-token bars', () => {
  it('the k most likely tokens under either policy, the sampled one always among them, and the rest of the mass', () => {
    const V = 10;
    const rng = new Rng(3);
    const norm = (x: number[]) => {
      const s = x.reduce((a, b) => a + b, 0);
      return x.map((v) => v / s);
    };
    const pCur = Float32Array.from([...norm(Array.from({ length: V }, () => rng.uniform())), ...norm(Array.from({ length: V }, () => rng.uniform()))]);
    const pNew = Float32Array.from([...norm(Array.from({ length: V }, () => rng.uniform())), ...norm(Array.from({ length: V }, () => rng.uniform()))]);
    const row = 1;
    const score = (b: number) => Math.max(pCur[row * V + b]!, pNew[row * V + b]!);
    const least = Array.from({ length: V }, (_, b) => b).sort((x, y) => score(x) - score(y))[0]!;
    const bars = topTokens(pCur, pNew, row, V, 4, least);
    expect(bars.length).toBe(5);
    expect(bars[4]!.token).toBeNull();
    const shown = bars.slice(0, 4).map((b) => b.token!);
    expect(shown).toContain(least);
    // The other three are the three best by max(π_cur, π_new).
    const best = Array.from({ length: V }, (_, b) => b).sort((x, y) => score(y) - score(x)).slice(0, 3);
    expect(shown.slice(0, 3)).toEqual(best);
    for (const which of ['pCur', 'pNew'] as const) {
      const total = bars.reduce((s, b) => s + b[which], 0);
      expect(Math.abs(total - 1)).toBeLessThan(1e-6);
    }
    for (const b of bars.slice(0, 4)) expect(b.pNew).toBe(pNew[row * V + b.token!]);
  });
});
