/**
 * Tests for the tabular softmax agent (src/sat/agents/tabular.ts), the reference `AgentPolicy`.
 *
 *  - r = 1 exactly before the first step: after setReference the log-probs equal the reference
 *    bit for bit, the KL is exactly 0, and trainStep reports objective = mean w·Ã exactly;
 *  - the exact KL equals a brute-force Σ_a p(a)(log p(a) − log q(a)) computed here with plain Math
 *    from distributions(), before and after training steps;
 *  - team KL = sum of agent KLs for product policies (the paper's lemma for the factorised team
 *    policy of docs/method.md §2.1): on 100 random teams of 2–4 agents on one shared state, the brute-force KL over the joint action space equals Σ_i KL_i;
 *  - trainStep is an ascent step (the favoured action's probability rises; the first Adam step
 *    moves each logit by lr·sign(∂L/∂z), with ∂L/∂z from finite differences of the objective);
 *    surrogateGradient matches finite differences of (1/N) Σ w A (r − 1); fisherVectorProduct
 *    equals an explicitly built Fisher matrix times v;
 *  - snapshot/restore restores the parameters AND the Adam state exactly (replaying three steps is
 *    bit-identical; restoring the parameters alone is not), and interpolate puts the parameters
 *    at the requested fraction with the optimizer state of `from`.
 *
 * Seeds are fixed: Rng(31337, …), stated at each use.
 */

import { describe, expect, it } from 'vitest';
import { NumericError } from '../src/core/errors';
import { Rng } from '../src/core/rng';
import { logSoftmax } from '../src/sat/categorical';
import { TabularSoftmaxAgent } from '../src/sat/agents/tabular';
import type { AgentBatch, ObjectiveSpec } from '../src/sat/types';

// ---------------------------------------------------------------------------------------------
// Helpers (plain Math, independent of the code under test)
// ---------------------------------------------------------------------------------------------

function logSoftmaxRow(z: ArrayLike<number>): number[] {
  const m = Math.max(...Array.from(z));
  const lse = m + Math.log(Array.from(z).reduce((s, x) => s + Math.exp(x - m), 0));
  return Array.from(z, (x) => x - lse);
}

/** Log-probs of a [S × A] logit table. */
function logProbTable(z: ArrayLike<number>, A: number): Float64Array {
  const out = new Float64Array(z.length);
  for (let s = 0; s < z.length / A; s++) out.set(logSoftmaxRow(Array.from(z).slice(s * A, (s + 1) * A)), s * A);
  return out;
}

/** KL(p‖q) = Σ p (log p − log q), from probabilities. */
function klBrute(p: ArrayLike<number>, q: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < p.length; i++) if (p[i]! > 0) s += p[i]! * (Math.log(p[i]!) - Math.log(q[i]!));
  return s;
}

const allStates = (n: number) => Int32Array.from({ length: n }, (_, i) => i);

const spec = (over: Partial<ObjectiveSpec> = {}): ObjectiveSpec => ({
  level: 'sequence',
  tokenAgg: 'grpo',
  epsLow: 0.2,
  epsHigh: 0.2,
  beta: 0.1,
  lr: 0.1,
  weightDecay: 0,
  ...over,
});

/** A random batch: N episodes, each with 0–3 steps of this agent at random states. */
function randomBatch(rng: Rng, nObs: number, A: number, N: number): AgentBatch {
  const obs: number[] = [];
  const actions: number[] = [];
  const episodeOf: number[] = [];
  for (let e = 0; e < N; e++) {
    const steps = rng.int(4);
    for (let t = 0; t < steps; t++) {
      obs.push(rng.int(nObs));
      actions.push(rng.int(A));
      episodeOf.push(e);
    }
  }
  return {
    nEpisodes: N,
    obs: Int32Array.from(obs),
    actions: Int32Array.from(actions),
    episodeOf: Int32Array.from(episodeOf),
    adv: Float64Array.from({ length: N }, () => rng.normal()),
    weight: Float64Array.from({ length: N }, () => 0.3 + rng.uniform()),
    horizon: 3,
  };
}

/** The objective of docs/method.md §5.1 (sequence level) as a function of the whole logit table. */
function objectiveOfTable(z: ArrayLike<number>, refLp: Float64Array, A: number, b: AgentBatch, s: ObjectiveSpec): number {
  const lp = logProbTable(z, A);
  const u = new Float64Array(b.nEpisodes);
  for (let k = 0; k < b.obs.length; k++) {
    const i = b.obs[k]! * A + b.actions[k]!;
    u[b.episodeOf[k]!]! += lp[i]! - refLp[i]!;
  }
  let sur = 0;
  for (let e = 0; e < b.nEpisodes; e++) {
    const r = Math.exp(u[e]!);
    const rc = Math.min(1 + s.epsHigh, Math.max(1 - s.epsLow, r));
    sur += b.weight[e]! * Math.min(r * b.adv[e]!, rc * b.adv[e]!);
  }
  sur /= b.nEpisodes;
  let kl = 0;
  for (let k = 0; k < b.obs.length; k++) {
    const row = b.obs[k]! * A;
    for (let a = 0; a < A; a++) kl += Math.exp(lp[row + a]!) * (lp[row + a]! - refLp[row + a]!);
  }
  return sur - (s.beta * kl) / Math.max(1, b.obs.length);
}

function centralDiff(f: (z: Float64Array) => number, z0: Float64Array, h: number): Float64Array {
  const z = z0.slice();
  const g = new Float64Array(z.length);
  for (let i = 0; i < z.length; i++) {
    const x = z[i]!;
    z[i] = x + h;
    const fp = f(z);
    z[i] = x - h;
    const fm = f(z);
    z[i] = x;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

const maxAbs = (a: ArrayLike<number>) => Math.max(...Array.from(a, Math.abs));
const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => Math.max(...Array.from(a, (x, i) => Math.abs(x - b[i]!)));

function newAgent(seed: number, nObs: number, A: number, scale = 1): TabularSoftmaxAgent {
  return new TabularSoftmaxAgent(0, nObs, A, { initScale: scale, rng: new Rng(31337, [seed]) });
}

// ---------------------------------------------------------------------------------------------
// r = 1 before the first step
// ---------------------------------------------------------------------------------------------

describe('r = 1 exactly before the first step', () => {
  it('after setReference, log-probs equal the reference bit for bit and the KL is exactly 0', async () => {
    for (let t = 0; t < 20; t++) {
      const rng = new Rng(31337, [1, t]);
      const nObs = 1 + rng.int(5);
      const A = 2 + rng.int(6);
      const agent = newAgent(100 + t, nObs, A, 3);
      // Move away from the initial table (a few steps), then freeze it as π_cur.
      const batch = randomBatch(rng, nObs, A, 6);
      for (let i = 0; i < 3; i++) await agent.trainStep(batch, spec());
      await agent.setReference();
      const obs = Int32Array.from({ length: nObs * A }, (_, i) => Math.floor(i / A));
      const acts = Int32Array.from({ length: nObs * A }, (_, i) => i % A);
      const lp = await agent.logProbs({ obs: obs, actions: acts });
      // The reference log-probs, from the reference logits by the same log-softmax.
      const refLp = logProbTable(agent.referenceLogits(), A);
      expect(Array.from(agent.referenceLogits())).toEqual(Array.from(agent.getLogits()));
      for (let i = 0; i < lp.length; i++) expect(Math.abs(lp[i]! - refLp[i]!)).toBeLessThan(1e-14);
      // Bit for bit: the library's log-softmax of the frozen logits, row by row.
      const refZ = agent.referenceLogits();
      for (let st = 0; st < nObs; st++) {
        const row = logSoftmax(refZ.subarray(st * A, (st + 1) * A));
        for (let a = 0; a < A; a++) expect(lp[st * A + a]).toBe(row[a]);
      }
      // And through the objective: a one-step, one-episode batch at every (state, action) with
      // Ã = 1 reports surrogate min(r, clip(r)) = r, which is exactly 1 only if u is exactly 0.
      for (let st = 0; st < nObs; st++)
        for (let a = 0; a < A; a++) {
          const probe = await agent.snapshot();
          const one: AgentBatch = { nEpisodes: 1, obs: Int32Array.from([st]), actions: Int32Array.from([a]), episodeOf: Int32Array.from([0]), adv: Float64Array.from([1]), weight: Float64Array.from([1]), horizon: 1 };
          const r = await agent.trainStep(one, spec({ beta: 0 }));
          expect(r.surrogate).toBe(1);
          await agent.restore(probe);
        }
      const kl = await agent.klToReference({ obs: allStates(nObs) });
      for (const x of kl) expect(x).toBe(0);
      // The decisive check: in trainStep, every ratio is exactly 1 (u = 0 bit for bit), so the
      // reported objective is exactly the mean of w·Ã with KL exactly 0, and no term is clipped.
      let mean = 0;
      for (let e = 0; e < batch.nEpisodes; e++) mean += (batch.weight[e]! * batch.adv[e]!) / batch.nEpisodes;
      const rep = await agent.trainStep(batch, spec({ beta: 5 }));
      expect(rep.surrogate).toBe(mean);
      expect(rep.objective).toBe(mean);
      expect(rep.clipfrac).toBe(0);
    }
  });

  it('a fresh agent is its own reference (no setReference needed)', async () => {
    const agent = newAgent(7, 3, 4, 2);
    const kl = await agent.klToReference({ obs: allStates(3) });
    expect(Array.from(kl)).toEqual([0, 0, 0]);
  });
});

// ---------------------------------------------------------------------------------------------
// The exact KL
// ---------------------------------------------------------------------------------------------

describe('klToReference', () => {
  it('equals a brute-force Σ p (log p − log q) over the full action set, before and after training (seed 31337)', async () => {
    let largest = 0;
    for (let t = 0; t < 20; t++) {
      const rng = new Rng(31337, [2, t]);
      const nObs = 2 + rng.int(4);
      const A = 2 + rng.int(7);
      const agent = newAgent(200 + t, nObs, A, 1.5);
      const states = allStates(nObs);
      await agent.setReference();
      const q = await agent.distributions({ obs: states });
      expect(Array.from(await agent.klToReference({ obs: states }))).toEqual(new Array<number>(nObs).fill(0));
      const batch = randomBatch(rng, nObs, A, 8);
      for (let step = 1; step <= 6; step++) {
        await agent.trainStep(batch, spec({ beta: 0.05, lr: 0.2 }));
        const p = await agent.distributions({ obs: states });
        const kl = await agent.klToReference({ obs: states });
        for (let s = 0; s < nObs; s++) {
          const want = klBrute(p.subarray(s * A, (s + 1) * A), q.subarray(s * A, (s + 1) * A));
          expect(Math.abs(kl[s]! - want)).toBeLessThanOrEqual(1e-12 * want + 1e-15);
          largest = Math.max(largest, want);
        }
      }
      // distributions() rows are distributions, and equal distributionTable().
      const table = agent.distributionTable();
      const d = await agent.distributions({ obs: states });
      expect(Array.from(d)).toEqual(Array.from(table));
      for (let s = 0; s < nObs; s++) expect(d.subarray(s * A, (s + 1) * A).reduce((x, y) => x + y, 0)).toBeCloseTo(1, 14);
    }
    expect(largest).toBeGreaterThan(0.01); // the steps really moved the policies
  });

  it('lists states in the order asked, with repeats', async () => {
    const agent = newAgent(9, 3, 3, 1);
    await agent.setReference();
    agent.setLogits(Float64Array.from([1, 0, 0, 0, 0, 0, 0, 0, 3]));
    const all = await agent.klToReference({ obs: allStates(3) });
    const some = await agent.klToReference({ obs: Int32Array.from([2, 0, 2]) });
    expect(Array.from(some)).toEqual([all[2], all[0], all[2]]);
    expect(all[2]!).toBeGreaterThan(all[0]!);
  });
});

describe('team KL = sum of agent KLs for product policies (the paper\'s lemma, docs/method.md §2.1)', () => {
  it('holds to 1e-12 on 100 random teams of 2–4 agents on one shared state (seed 31337)', async () => {
    const rng = new Rng(31337, [3]);
    let worst = 0;
    for (let t = 0; t < 100; t++) {
      const n = 2 + rng.int(3);
      const agents: TabularSoftmaxAgent[] = [];
      const p: Float64Array[] = [];
      const q: Float64Array[] = [];
      const one = Int32Array.from([0]);
      let sumKl = 0;
      for (let i = 0; i < n; i++) {
        const A = 2 + rng.int(5);
        const agent = new TabularSoftmaxAgent(i, 1, A, { initScale: 1.5, rng: rng.fork(t, i) });
        await agent.setReference();
        q.push(await agent.distributions({ obs: one }));
        agent.setLogits(Float64Array.from(agent.getLogits(), (x) => x + 0.8 * rng.normal()));
        p.push(await agent.distributions({ obs: one }));
        sumKl += (await agent.klToReference({ obs: one }))[0]!;
        agents.push(agent);
      }
      // Brute force over the joint action space: P(a) = Π p_i(a_i), Q(a) = Π q_i(a_i).
      let joint = 0;
      const idx = new Array<number>(n).fill(0);
      for (;;) {
        let P = 1;
        let Q = 1;
        for (let i = 0; i < n; i++) {
          P *= p[i]![idx[i]!]!;
          Q *= q[i]![idx[i]!]!;
        }
        joint += P * (Math.log(P) - Math.log(Q));
        let i = 0;
        while (i < n && ++idx[i]! === p[i]!.length) idx[i++] = 0;
        if (i === n) break;
      }
      const rel = Math.abs(joint - sumKl) / joint;
      worst = Math.max(worst, rel);
      expect(joint).toBeGreaterThan(1e-3);
      expect(rel).toBeLessThan(1e-12);
    }
    console.info(`[team KL] worst relative gap over 100 teams: ${worst.toExponential(2)}`);
  });
});

// ---------------------------------------------------------------------------------------------
// Training, gradients, Fisher
// ---------------------------------------------------------------------------------------------

describe('trainStep', () => {
  it('is an ascent step: the action with positive advantage gains probability', async () => {
    for (const level of ['sequence', 'token'] as const) {
      const agent = new TabularSoftmaxAgent(0, 1, 3);
      await agent.setReference();
      // Four one-step episodes at state 0: action 1 gets Ã = +1, actions 0 and 2 get Ã = −1.
      const batch: AgentBatch = {
        nEpisodes: 4,
        obs: Int32Array.from([0, 0, 0, 0]),
        actions: Int32Array.from([0, 1, 2, 1]),
        episodeOf: Int32Array.from([0, 1, 2, 3]),
        adv: Float64Array.from([-1, 1, -1, 1]),
        weight: Float64Array.from([1, 1, 1, 1]),
        horizon: 1,
      };
      const before = await agent.distributions({ obs: Int32Array.from([0]) });
      for (const x of before) expect(x).toBeCloseTo(1 / 3, 15);
      const rep = await agent.trainStep(batch, spec({ level }));
      const after = await agent.distributions({ obs: Int32Array.from([0]) });
      expect(after[1]!).toBeGreaterThan(before[1]! + 0.01);
      expect(after[0]!).toBeLessThan(before[0]!);
      expect(after[2]!).toBeLessThan(before[2]!);
      expect(rep.gradNorm).toBeGreaterThan(0);
      // A second step keeps climbing, and the objective it reports (at the pre-step point) rose.
      const rep2 = await agent.trainStep(batch, spec({ level }));
      expect((await agent.distributions({ obs: Int32Array.from([0]) }))[1]!).toBeGreaterThan(after[1]!);
      expect(rep2.objective).toBeGreaterThan(rep.objective);
    }
  });

  it('the first Adam step moves each logit by lr·sign(∂L/∂z), ∂L/∂z from finite differences (seed 31337)', async () => {
    for (let t = 0; t < 10; t++) {
      const rng = new Rng(31337, [4, t]);
      const nObs = 2 + rng.int(3);
      const A = 2 + rng.int(4);
      const agent = newAgent(400 + t, nObs, A, 1);
      await agent.setReference();
      const refLp = logProbTable(agent.referenceLogits(), A);
      // Move away from the reference with a fresh optimizer, so the next step is a "first" one.
      const warm = randomBatch(rng, nObs, A, 6);
      for (let i = 0; i < 2; i++) await agent.trainStep(warm, spec({ lr: 0.05 }));
      agent.setLogits(agent.getLogits()); // resets Adam (step 0, m = v = 0)
      const z0 = agent.getLogits();
      const batch = randomBatch(rng, nObs, A, 8);
      const s = spec({ beta: 0.4, lr: 0.01 });
      const g = centralDiff((z) => objectiveOfTable(z, refLp, A, batch, s), z0, 1e-6);
      const rep = await agent.trainStep(batch, s);
      const z1 = agent.getLogits();
      // ‖∇L‖ as reported equals the FD gradient's norm.
      const gNorm = Math.sqrt(g.reduce((x, y) => x + y * y, 0));
      expect(Math.abs(rep.gradNorm - gNorm)).toBeLessThan(1e-6 * Math.max(1, gNorm));
      expect(rep.objective).toBeCloseTo(objectiveOfTable(z0, refLp, A, batch, s), 12);
      // Bias-corrected Adam at step 1: m̂ = g, v̂ = g², so Δz = lr·g/(|g| + 1e-8).
      for (let i = 0; i < z0.length; i++) {
        const dz = z1[i]! - z0[i]!;
        expect(Math.abs(dz)).toBeLessThanOrEqual(s.lr);
        if (Math.abs(g[i]!) > 1e-4) expect(Math.abs(dz - (s.lr * g[i]!) / (Math.abs(g[i]!) + 1e-8))).toBeLessThan(1e-9);
        if (Math.abs(g[i]!) > 1e-3) expect(Math.sign(dz)).toBe(Math.sign(g[i]!));
      }
    }
  });

  it('a non-finite objective throws NumericError and leaves parameters and optimizer untouched', async () => {
    const rng = new Rng(31337, [4, 99]);
    const agent = newAgent(499, 3, 3, 1);
    await agent.setReference();
    await agent.trainStep(randomBatch(rng, 3, 3, 6), spec());
    const before = await agent.snapshot();
    const bad = randomBatch(rng, 3, 3, 6);
    const nan: AgentBatch = { ...bad, obs: Int32Array.from([0]), actions: Int32Array.from([1]), episodeOf: Int32Array.from([0]), adv: Float64Array.from(bad.adv, (x, i) => (i === 0 ? Number.NaN : x)) };
    await expect(agent.trainStep(nan, spec())).rejects.toThrow(NumericError);
    const after = await agent.snapshot();
    expect(Array.from(after.params)).toEqual(Array.from(before.params));
    expect(Array.from(after.optim)).toEqual(Array.from(before.optim));
  });

  it('decoupled weight decay shrinks visited rows by lr·wd·z; unvisited rows do not move (sparse update)', async () => {
    const z = Float64Array.from([2, -1, 0.5, 0.25, -3, 1]);
    // One step at state 0 with advantage 0: the gradient is 0 there, only the decay acts on row 0.
    const batch: AgentBatch = { nEpisodes: 1, obs: Int32Array.from([0]), actions: Int32Array.from([1]), episodeOf: Int32Array.from([0]), adv: Float64Array.from([0]), weight: Float64Array.from([1]), horizon: 1 };
    const agent = new TabularSoftmaxAgent(0, 2, 3, { logits: z });
    const rep = await agent.trainStep(batch, spec({ lr: 0.1, weightDecay: 0.5, beta: 0 }));
    expect(rep.gradNorm).toBe(0);
    const z1 = agent.getLogits();
    for (let i = 0; i < 3; i++) expect(z1[i]).toBeCloseTo(z[i]! * (1 - 0.1 * 0.5), 15);
    for (let i = 3; i < 6; i++) expect(z1[i]).toBe(z[i]); // state 1 was not visited
  });

  it('rows of unvisited states never move, even with momentum from earlier steps', async () => {
    const agent = new TabularSoftmaxAgent(0, 2, 3, {});
    const at = (s: number, a: number, adv: number): AgentBatch => ({ nEpisodes: 1, obs: Int32Array.from([s]), actions: Int32Array.from([a]), episodeOf: Int32Array.from([0]), adv: Float64Array.from([adv]), weight: Float64Array.from([1]), horizon: 1 });
    await agent.trainStep(at(1, 2, 1), spec({ lr: 0.1 })); // builds momentum in row 1
    const row1 = agent.getLogits().slice(3, 6);
    for (let i = 0; i < 5; i++) await agent.trainStep(at(0, 0, 1), spec({ lr: 0.1 }));
    expect(Array.from(agent.getLogits().slice(3, 6))).toEqual(Array.from(row1));
  });
});

describe('surrogateGradient', () => {
  it('matches central finite differences of (1/N) Σ w A (r − 1) (seed 31337)', async () => {
    let worst = 0;
    for (let t = 0; t < 15; t++) {
      const rng = new Rng(31337, [5, t]);
      const nObs = 2 + rng.int(4);
      const A = 2 + rng.int(5);
      const agent = newAgent(500 + t, nObs, A, 1);
      await agent.setReference();
      const refLp = logProbTable(agent.referenceLogits(), A);
      for (let i = 0; i < 3; i++) await agent.trainStep(randomBatch(rng, nObs, A, 6), spec({ lr: 0.3 }));
      const batch = randomBatch(rng, nObs, A, 10);
      // Reward-unit advantages (not normalised).
      const advRaw = Float64Array.from(batch.adv, (x) => 7 * x);
      const b: AgentBatch = { ...batch, adv: advRaw };
      const S = (z: Float64Array): number => {
        const lp = logProbTable(z, A);
        const u = new Float64Array(b.nEpisodes);
        for (let k = 0; k < b.obs.length; k++) {
          const i = b.obs[k]! * A + b.actions[k]!;
          u[b.episodeOf[k]!]! += lp[i]! - refLp[i]!;
        }
        let s = 0;
        for (let e = 0; e < b.nEpisodes; e++) s += b.weight[e]! * b.adv[e]! * (Math.exp(u[e]!) - 1);
        return s / b.nEpisodes;
      };
      const z0 = agent.getLogits();
      const fd = centralDiff(S, z0, 1e-6);
      const g = await agent.surrogateGradient(b);
      expect(agent.getLogits()).toEqual(z0); // no side effects
      const scale = Math.max(maxAbs(fd), maxAbs(g));
      expect(scale).toBeGreaterThan(1e-2);
      const rel = maxAbsDiff(g, fd) / scale;
      worst = Math.max(worst, rel);
      expect(rel).toBeLessThan(1e-6);
    }
    console.info(`[FD] surrogateGradient: max relative error ${worst.toExponential(2)}`);
  });
});

describe('fisherVectorProduct', () => {
  it('equals an explicitly built Fisher matrix E_s E_a[∇log π ∇log πᵀ] times v (seed 31337)', async () => {
    for (let t = 0; t < 10; t++) {
      const rng = new Rng(31337, [6, t]);
      const nObs = 2 + rng.int(4);
      const A = 2 + rng.int(5);
      const P = nObs * A;
      const agent = newAgent(600 + t, nObs, A, 1.5);
      // Visited states with repeats; the last state is never visited.
      const obs = Int32Array.from({ length: 1 + rng.int(8) }, () => rng.int(nObs - 1));
      const probs = agent.distributionTable();
      // F = (1/K) Σ_k Σ_a π(a|s_k) g_a g_aᵀ, g_a = ∂ log π(a|s_k)/∂z = e_(s_k,a) − π(·|s_k) on row s_k.
      const F = Array.from({ length: P }, () => new Float64Array(P));
      for (const s of obs) {
        for (let a = 0; a < A; a++) {
          const ga = new Float64Array(P);
          for (let b = 0; b < A; b++) ga[s * A + b] = (a === b ? 1 : 0) - probs[s * A + b]!;
          const pa = probs[s * A + a]!;
          for (let i = 0; i < P; i++) for (let j = 0; j < P; j++) F[i]![j]! += (pa * ga[i]! * ga[j]!) / obs.length;
        }
      }
      for (let trial = 0; trial < 3; trial++) {
        const v = Float64Array.from({ length: P }, () => rng.normal());
        const Fv = F.map((row) => row.reduce((acc, x, j) => acc + x * v[j]!, 0));
        const got = await agent.fisherVectorProduct({ obs: obs }, v);
        expect(maxAbsDiff(got, Fv)).toBeLessThan(1e-13 * Math.max(1, maxAbs(Fv)));
        expect(maxAbs(Fv)).toBeGreaterThan(1e-3);
        for (let b = 0; b < A; b++) expect(got[(nObs - 1) * A + b]).toBe(0); // unvisited state
        // Positive semi-definite: vᵀ F v ≥ 0.
        expect(got.reduce((acc, x, i) => acc + x * v[i]!, 0)).toBeGreaterThanOrEqual(-1e-15);
      }
      // The Fisher's null direction for softmax: adding a constant to a row changes nothing.
      const ones = new Float64Array(P).fill(1);
      expect(maxAbs(await agent.fisherVectorProduct({ obs: obs }, ones))).toBeLessThan(1e-15);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// snapshot / restore / interpolate
// ---------------------------------------------------------------------------------------------

describe('snapshot and restore', () => {
  async function threeSteps(agent: TabularSoftmaxAgent, batches: AgentBatch[], s: ObjectiveSpec) {
    const reports = [];
    for (const b of batches) reports.push(await agent.trainStep(b, s));
    return { logits: agent.getLogits(), reports };
  }

  it('restores parameters AND Adam state: replaying 3 steps is bit-identical; params alone are not (seed 31337)', async () => {
    const rng = new Rng(31337, [7]);
    const nObs = 3;
    const A = 4;
    const agent = newAgent(700, nObs, A, 1);
    await agent.setReference();
    const s = spec({ beta: 0.2, lr: 0.05, weightDecay: 0.01 });
    // Warm up so that the Adam moments are non-trivial.
    for (let i = 0; i < 4; i++) await agent.trainStep(randomBatch(rng, nObs, A, 8), s);
    const snap = await agent.snapshot();
    const snapCopy = { params: snap.params.slice(), optim: snap.optim.slice() };
    const batches = [0, 1, 2].map(() => randomBatch(rng, nObs, A, 8));

    const first = await threeSteps(agent, batches, s);
    expect(maxAbsDiff(first.logits, snap.params)).toBeGreaterThan(1e-3); // the steps moved it
    // The snapshot is a copy, untouched by later steps.
    expect(Array.from(snap.params)).toEqual(Array.from(snapCopy.params));
    expect(Array.from(snap.optim)).toEqual(Array.from(snapCopy.optim));

    await agent.restore(snap);
    expect(Array.from(agent.getLogits())).toEqual(Array.from(snap.params));
    const again = await threeSteps(agent, batches, s);
    expect(Array.from(again.logits)).toEqual(Array.from(first.logits)); // bit-identical
    expect(again.reports).toEqual(first.reports);

    // Only the parameters restored (setLogits resets the optimizer): a different trajectory.
    agent.setLogits(snap.params);
    const paramsOnly = await threeSteps(agent, batches, s);
    expect(maxAbsDiff(paramsOnly.logits, first.logits)).toBeGreaterThan(1e-4);

    // The same via restore with the optimizer part of a fresh agent: identical to setLogits.
    const fresh = await new TabularSoftmaxAgent(0, nObs, A).snapshot();
    await agent.restore({ params: snap.params, optim: fresh.optim });
    const freshOptim = await threeSteps(agent, batches, s);
    expect(Array.from(freshOptim.logits)).toEqual(Array.from(paramsOnly.logits));

    // And restoring the params with the optimizer state of a *different* moment differs too.
    await agent.restore(snap);
    await agent.trainStep(batches[0]!, s);
    const later = await agent.snapshot();
    await agent.restore({ params: snap.params, optim: later.optim });
    const wrongOptim = await threeSteps(agent, batches, s);
    expect(maxAbsDiff(wrongOptim.logits, first.logits)).toBeGreaterThan(1e-6);
  });

  it('restore does not move the reference (π_cur)', async () => {
    const rng = new Rng(31337, [8]);
    const agent = newAgent(800, 2, 3, 1);
    await agent.setReference();
    const ref = agent.referenceLogits();
    const snap = await agent.snapshot();
    await agent.trainStep(randomBatch(rng, 2, 3, 6), spec());
    await agent.restore(snap);
    expect(Array.from(agent.referenceLogits())).toEqual(Array.from(ref));
    expect(Array.from(await agent.klToReference({ obs: allStates(2) }))).toEqual([0, 0]);
  });

  it('rejects a snapshot of the wrong size', async () => {
    const agent = newAgent(801, 2, 3, 1);
    const other = await newAgent(802, 3, 3, 1).snapshot();
    await expect(agent.restore(other)).rejects.toThrow(RangeError);
  });
});

describe('interpolate', () => {
  it('θ ← θ_from + f·(θ − θ_from) with the optimizer state of `from` (seed 31337)', async () => {
    const rng = new Rng(31337, [9]);
    const nObs = 3;
    const A = 3;
    const s = spec({ lr: 0.1 });
    const agent = newAgent(900, nObs, A, 1);
    await agent.setReference();
    await agent.trainStep(randomBatch(rng, nObs, A, 6), s);
    const from = await agent.snapshot();
    for (let i = 0; i < 3; i++) await agent.trainStep(randomBatch(rng, nObs, A, 6), s);
    const cur = await agent.snapshot();
    expect(maxAbsDiff(cur.params, from.params)).toBeGreaterThan(0.05);

    await agent.interpolate(from, 0.5);
    const half = agent.getLogits();
    for (let i = 0; i < half.length; i++) expect(half[i]).toBeCloseTo((from.params[i]! + cur.params[i]!) / 2, 14);
    expect(Array.from((await agent.snapshot()).optim)).toEqual(Array.from(from.optim));

    for (const f of [0, 0.25, 1]) {
      await agent.restore(cur);
      await agent.interpolate(from, f);
      const z = agent.getLogits();
      for (let i = 0; i < z.length; i++) expect(z[i]).toBeCloseTo(from.params[i]! + f * (cur.params[i]! - from.params[i]!), 14);
    }
    await agent.restore(cur);
    await agent.interpolate(from, 0);
    expect(Array.from(agent.getLogits())).toEqual(Array.from(from.params));

    // Halving toward π_cur shrinks the KL (the 'shrink' policy relies on it).
    await agent.restore(await agent.snapshot());
    await agent.setReference();
    const base = await agent.snapshot();
    for (let i = 0; i < 3; i++) await agent.trainStep(randomBatch(rng, nObs, A, 6), s);
    const kl1 = await agent.klToReference({ obs: allStates(nObs) });
    await agent.interpolate(base, 0.5);
    const kl2 = await agent.klToReference({ obs: allStates(nObs) });
    for (let st = 0; st < nObs; st++) if (kl1[st]! > 1e-8) expect(kl2[st]!).toBeLessThan(kl1[st]!);
  });
});
