/**
 * What the certificate's records say, and what older records keep (docs/certificate.md §5.1, §12):
 *
 * - "held" on exact J: a tie within a few ulps of |J| is held; beyond it is not; the language
 *   verdict against a CRN estimate is held / not held / undecided at 2 standard errors.
 * - The CRN check leaves the team exactly as it was, and pairs the same prompts and sampler draws:
 *   a "final" team identical to the starting one has ΔĴ = 0 exactly with se 0 (tiny team).
 * - A setting the ratio cannot follow (a Stage-0 projection seat under top-k) is refused with a
 *   message saying why.
 * - Experiment files: a new record round-trips with its team-level fields and its `held`; a record
 *   written before them (no certificate.scope/team/refused, no held) opens with its old
 *   certificate fields and its old cert/held kept; a malformed `held` is refused by name.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { decodeContainer, encodeContainer, parseExperimentFile, serializeExperiment, type ExperimentData } from '../src/app/savefile';
import { parseConfig } from '../src/sat/config';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { checkHeld, heldTolerance, heldVerdict } from '../src/sat/heldCheck';
import { presetConfig } from '../src/sat/presets';
import { certRefusal } from '../src/sat/stage';
import { tinyTeam } from './helpers/tinyTeam';

describe('held', () => {
  it('exact J: a tie within 8 ulps of |J| holds; one past it does not', () => {
    const J = 7.25;
    const tol = heldTolerance(J, J);
    expect(tol).toBe(8 * Number.EPSILON * 7.25);
    expect(0 <= -2.2e-16 + tol).toBe(true); // the −2.2e−16 tie of a ΔJ that is exactly 0
    expect(0 <= -1e-12 + tol).toBe(false);
  });

  it('against an estimate: held below ΔĴ − 2 se, not held above ΔĴ + 2 se, undecided between', () => {
    expect(heldVerdict(0.01, 0.05, 0.01, 2048).state).toBe('held');
    expect(heldVerdict(0.04, 0.05, 0.01, 2048).state).toBe('undecided');
    expect(heldVerdict(0.08, 0.05, 0.01, 2048).state).toBe('not held');
    expect(heldVerdict(0.08, Number.NaN, Number.NaN, 0).state).toBe('unchecked');
  });

  it('the CRN check pairs prompts and sampler draws, and leaves the team as it was', async () => {
    const { env, team } = tinyTeam({ agents: 2, maxNew: 2, temperature: 1, topK: 0, seed: 3 });
    const start = await Promise.all(team.map((a) => a.snapshot()));
    const same = await checkHeld(env, team, start, -0.01, 256, new Rng(4));
    expect(same.estimate).toBe(0); // the same team twice: every pair identical
    expect(same.se).toBe(0);
    expect(same.state).toBe('held');
    // Move agent 1, check, and find its parameters exactly where they were.
    const moved = Float32Array.from(start[1]!.params, (x, i) => x + 0.3 * Math.sin(i));
    team[1]!.model.setParams(moved);
    const before = await team[1]!.snapshot();
    const r = await checkHeld(env, team, start, -1, 512, new Rng(4));
    expect(r.pairs).toBe(512);
    expect(r.se).toBeGreaterThan(0);
    expect(Array.from((await team[1]!.snapshot()).params)).toEqual(Array.from(before.params));
    // The estimate is of J(now) − J(start), which the tiny task computes exactly: within 4 se.
    const jNow = await env.exactJ(team);
    await team[1]!.restore(start[1]!);
    const jStart = await env.exactJ(team);
    expect(Math.abs(r.estimate - (jNow - jStart))).toBeLessThanOrEqual(4 * r.se);
  });
});

describe('a setting the ratio cannot follow is refused', () => {
  it('a Stage-0 projection seat under top-k: no certificate, and the message says why', () => {
    const team = [{ sampler: 'student' }, { sampler: 'projection' }] as never;
    expect(certRefusal(parseConfig({ task: 'arithmetic', topK: 0 }), team)).toBeUndefined();
    const msg = certRefusal(parseConfig({ task: 'arithmetic', topK: 3 }), team);
    expect(msg).toContain('topK = 3');
    expect(msg).toContain('Stage-0 projection');
    expect(msg).toContain('Set topK = 0');
  });
});

describe('experiment files and the certificate fields', () => {
  const experiment = async (): Promise<ExperimentData> => {
    const exp = createTabularExperiment(presetConfig('relay', { stages: 2, batch: 4, seed: 5 }));
    exp.env.certScope = 'team'; // so the record carries the team-level fields
    const stages = await runStages(exp, 2);
    const snaps = await Promise.all(exp.team.map((a) => a.snapshot()));
    return { config: exp.cfg, presetName: 'relay', createdAt: '2026-12-02T03:00:00.000Z', stages, agents: snaps.map((snapshot) => ({ snapshot })), betas: exp.betas.slice(), cursor: { stage: 2 } };
  };
  const rewrite = (bytes: Uint8Array, edit: (h: any) => void): Uint8Array => {
    const c = decodeContainer(bytes);
    if (!c.ok) throw new Error(c.error);
    const h: unknown = JSON.parse(c.value.header);
    edit(h);
    return encodeContainer(JSON.stringify(h), c.value.blobs);
  };

  it('a new record keeps its team-level fields and held; an older record opens with its own fields; a bad held is refused by name', async () => {
    const data = await experiment();
    const s0 = data.stages[0]!;
    expect(s0.certificate.scope).toBe('team');
    expect(s0.certificate.team!.episodes).toBeGreaterThan(0);
    expect(s0.held!.state === 'held' || s0.held!.state === 'not held').toBe(true);
    const bytes = serializeExperiment(data);
    const back = parseExperimentFile(bytes);
    if (!back.ok) throw new Error(back.error);
    expect(back.value.stages[0]!.certificate.team).toEqual(s0.certificate.team);
    expect(back.value.stages[0]!.held).toEqual(s0.held);

    // A record from before the team-level form and the held check: none of the new fields, an old cert/held.
    const old = rewrite(bytes, (h) => {
      for (const st of h.stages) {
        delete st.certificate.scope;
        delete st.certificate.team;
        delete st.held;
        st.metrics['cert/held'] = 1;
        st.metrics['cert/lower'] = -0.5;
      }
    });
    const opened = parseExperimentFile(old);
    if (!opened.ok) throw new Error(opened.error);
    expect(opened.value.stages[0]!.held).toBeUndefined();
    expect(opened.value.stages[0]!.certificate.scope).toBeUndefined();
    expect(opened.value.stages[0]!.metrics['cert/held']).toBe(1);
    expect(opened.value.stages[0]!.metrics['cert/lower']).toBe(-0.5);

    // The language team-level estimator's name (§5.4, §5.5) opens as written; an unknown one is refused by name.
    for (const estimator of ['truncated-is', 'mixture', 'paired']) {
      const named = parseExperimentFile(rewrite(bytes, (h) => (h.stages[0].certificate.estimator = estimator)));
      if (!named.ok) throw new Error(named.error);
      expect(named.value.stages[0]!.certificate.estimator).toBe(estimator);
    }
    const unknown = parseExperimentFile(rewrite(bytes, (h) => (h.stages[0].certificate.estimator = 'crn')));
    expect(unknown.ok).toBe(false);
    if (!unknown.ok) expect(unknown.error).toContain('estimator');

    const bad = parseExperimentFile(rewrite(bytes, (h) => (h.stages[1].held.state = 'maybe')));
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.error).toContain('stage record 2');
      expect(bad.error).toContain('held.state');
    }
  });
});
