/**
 * The certificate matches the sampler (docs/certificate.md §3.1): the log-probs a ratio is built
 * from are those of the distribution the sampler draws from — softmax at τ, top-k truncated and
 * renormalised.
 *
 * - `samplerLogProbs` is the twin of `sampleForward`: on fresh random logits (Rng 31), its keep
 *   set is the sampler's and its probabilities match the sampler's frequencies (4.5 standard
 *   errors per token, 20,000 draws per row).
 * - The hand counterexample: old message distribution (.5, .3, .2), new (.45, .55, 0), top-k = 1,
 *   reward 1 for the first message only. True ΔJ = −1. Scored with the full softmax the
 *   estimator's mean is −0.1 and its bound sits far above −1 (the bound fails); scored with the
 *   sampler's distribution every summand is −1, the mean is the truth, and the bound holds.
 * - E_old[r] = 1 within 3 standard errors on a real tiny team (rollouts by the real sampler,
 *   ratios of a perturbed team's log-probs to the recorded ones) for topK ∈ {0, 1, 3} at τ = 0.7
 *   and 1.3 (at topK = 1 every sampled state keeps its argmax, so r ≡ 1 exactly). The perturbation keeps every top-k set of the sampled states (checked: no new log-prob
 *   is −∞), the case in which the identity holds; when it does not, E_old[min(r, c)·R′] is only
 *   smaller, which §3.1 shows is still a valid lower bound.
 */
import { describe, expect, it } from 'vitest';
import { samplerLogProbs, sampleForward } from '../src/backend/cpu/sampling';
import { logSoftmaxForward } from '../src/backend/cpu/softmax';
import { Rng } from '../src/core/rng';
import { lowerConfidenceBound } from '../src/core/confidence';
import { TeamCertBatch, teamRange } from '../src/sat/certificate';
import { agentSteps } from '../src/sat/rollout';
import { tinyTeam } from './helpers/tinyTeam';

describe('samplerLogProbs is the distribution sampleForward draws from', () => {
  it('same keep set, same probabilities (fresh random logits)', () => {
    const rng = new Rng(31);
    const V = 7;
    const draws = 20000;
    for (const topK of [0, 1, 2, 3, 5]) {
      for (const tau of [0.7, 1.3]) {
        const z = Float32Array.from({ length: V }, () => rng.normal() * 2);
        const lp = new Float64Array(V);
        samplerLogProbs(lp, z, 1, V, tau, topK);
        const p = Array.from(lp, Math.exp);
        expect(p.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
        const kept = p.filter((x) => x > 0).length;
        expect(kept).toBe(topK === 0 ? V : topK);
        const counts = new Float64Array(V);
        const out = new Int32Array(1);
        for (let d = 0; d < draws; d++) {
          sampleForward(out, z, 1, V, { seed: 9, stream: topK * 10 + Math.round(tau * 10), step: d, temperature: tau, topK });
          counts[out[0]!]!++;
        }
        for (let v = 0; v < V; v++) {
          const se = Math.sqrt((p[v]! * (1 - p[v]!)) / draws);
          if (p[v] === 0) expect(counts[v]).toBe(0);
          else expect(Math.abs(counts[v]! / draws - p[v]!)).toBeLessThanOrEqual(4.5 * se + 1e-12);
        }
      }
    }
  });
});

describe('the hand counterexample: old (.5, .3, .2), new (.45, .55, 0), topK = 1', () => {
  it('the full-softmax ratio certifies ≈ −0.1 against a true ΔJ of −1; the sampler\'s ratio does not', () => {
    const V = 3;
    const zOld = Float64Array.from([0.5, 0.3, 0.2], Math.log);
    const zNew = Float64Array.from([0.45, 0.55, 0], Math.log);
    const reward = [1, 0, 0];
    // The sampler at topK = 1 always draws the argmax: message 0 under the old policy, 1 under the new.
    const out = new Int32Array(1);
    sampleForward(out, Float32Array.from(zOld), 1, V, { seed: 1, stream: 0, step: 0, temperature: 1, topK: 1 });
    expect(out[0]).toBe(0);
    sampleForward(out, Float32Array.from(zNew), 1, V, { seed: 1, stream: 0, step: 0, temperature: 1, topK: 1 });
    expect(out[0]).toBe(1);
    const trueDJ = reward[1]! - reward[0]!; // J(new) − J(old) = 0 − 1
    expect(trueDJ).toBe(-1);

    const score = (kind: 'sampler' | 'softmax') => {
      const lo = new Float64Array(V);
      const ln = new Float64Array(V);
      if (kind === 'sampler') {
        samplerLogProbs(lo, zOld, 1, V, 1, 1);
        samplerLogProbs(ln, zNew, 1, V, 1, 1);
      } else {
        logSoftmaxForward(lo, zOld, 1, V, 1);
        logSoftmaxForward(ln, zNew, 1, V, 1);
      }
      // 256 episodes from the old sampler: all message 0.
      const N = 256;
      const tc = new TeamCertBatch(new Float64Array(N).fill(reward[0]!), 1, 2);
      tc.advance(new Float64Array(N).fill(ln[0]! - lo[0]!));
      const x = tc.summands();
      const [a, b] = teamRange(1, 2).team;
      return { mean: x.reduce((s, v) => s + v, 0) / N, lower: lowerConfidenceBound('betting', x, a, b, 0.05) };
    };
    const soft = score('softmax');
    expect(soft.mean).toBeCloseTo(-0.1, 12);
    expect(soft.lower).toBeGreaterThan(trueDJ); // a "bound" above the truth: it does not hold
    const samp = score('sampler');
    expect(samp.mean).toBe(-1); // r = 0/1: every summand is −1, the truth
    expect(samp.lower).toBeLessThanOrEqual(trueDJ);
  });
});

describe('E_old[r] = 1 under the real sampler (tiny team, 4,096 episodes)', () => {
  for (const topK of [0, 1, 3]) {
    for (const tau of [0.7, 1.3]) {
      it(`topK ${topK}, τ ${tau}`, async () => {
        // Peaked policies (embeddings of sd 1), so a small perturbation keeps every top-k set.
        const { env, team } = tinyTeam({ agents: 2, maxNew: 2, temperature: tau, topK, seed: 7, embeddingScale: 50 });
        const batch = await env.rollout(team, 4096, 1, new Rng(100 + topK, [Math.round(tau * 10)]), { record: false });
        // Perturb every agent's parameters (fresh normal noise, Rng 55) and score the recorded steps.
        const noise = new Rng(55, [topK, Math.round(tau * 10)]);
        const logR = new Float64Array(batch.episodes.length);
        for (const a of team) {
          const snap = await a.snapshot();
          const p = Float32Array.from(snap.params, (x) => x + 0.02 * noise.normal());
          a.model.setParams(p);
          const s = agentSteps(batch, a.index);
          const now = await a.logProbs(s);
          for (let k = 0; k < now.length; k++) {
            expect(now[k], 'the perturbation left a sampled token outside its top-k set').toBeGreaterThan(-Infinity);
            logR[s.episodeOf[k]!]! += now[k]! - s.logp[k]!;
          }
        }
        const r = Array.from(logR, Math.exp);
        const m = r.reduce((a, b) => a + b, 0) / r.length;
        const se = Math.sqrt(r.reduce((a, b) => a + (b - m) ** 2, 0) / (r.length - 1) / r.length);
        // topK = 1: both policies are the argmax at every sampled state (no −∞ above), so r ≡ 1 exactly.
        if (topK === 1) expect(r.every((x) => x === 1)).toBe(true);
        else expect(se).toBeGreaterThan(0);
        expect(Math.abs(m - 1)).toBeLessThanOrEqual(3 * se);
      });
    }
  }
});
