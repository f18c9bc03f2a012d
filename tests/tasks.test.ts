/**
 * Tests for the tabular games and the machinery that plays them: every registered game is sound,
 * exact J matches Monte-Carlo rollouts, and the classic values (climbing, penalty, relay, router)
 * match hand calculations. Seeds are fixed: policies from Rng(7), rollouts from Rng(2024).
 *
 * Not here: learning on these games (see the SAT tests).
 */

import { describe, expect, it } from 'vitest';
import { ConfigError } from '../src/core/errors';
import { Rng } from '../src/core/rng';
import { guess, guessTargets, majorityVote } from '../src/tasks/guess';
import { TASK_NAMES, TASKS, makeGame } from '../src/tasks/index';
import { climbing, jointIndex, penalty, randomMatrix } from '../src/tasks/matrix';
import { relay } from '../src/tasks/relay';
import { router, routerAnswer, routerExpert } from '../src/tasks/router';
import {
  enumerateTrajectories,
  exactJ,
  samplePrompt,
  sampleEpisode,
  stateVisitProbs,
  uniformPolicy,
  validateGame,
} from '../src/tasks/tabular';
import type { PolicyTable, TabularGame, TurnRecord } from '../src/tasks/types';

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/** A random non-uniform policy: softmax of normal(0, 1.5²) logits, fixed by `rng`. */
function randomPolicy(game: TabularGame, rng: Rng): PolicyTable {
  const table: Float64Array[][] = [];
  for (let agent = 0; agent < game.nAgents; agent++) {
    const rows: Float64Array[] = [];
    for (let obs = 0; obs < game.nObs[agent]!; obs++) {
      const logits = Array.from({ length: game.nActions[agent]! }, () => 1.5 * rng.normal());
      const max = Math.max(...logits);
      const w = logits.map((l) => Math.exp(l - max));
      const total = w.reduce((a, b) => a + b, 0);
      rows.push(Float64Array.from(w, (v) => v / total));
    }
    table.push(rows);
  }
  return (agent, obs) => table[agent]![obs]!;
}

/** A deterministic policy: agent `agent` in state `obs` always plays choose(agent, obs). */
function deterministic(game: TabularGame, choose: (agent: number, obs: number) => number): PolicyTable {
  return (agent, obs) => {
    const row = new Float64Array(game.nActions[agent]!);
    row[choose(agent, obs)] = 1;
    return row;
  };
}

/** One-turn history with the given decisions and actions (for calling reward directly). */
function oneTurn(actions: number[], obs = 0): TurnRecord[] {
  return [{ decisions: actions.map((_, agent) => ({ agent, obs })), actions }];
}

/** Every (task, protocol, n) combination the tests sweep, with m = 3 actions. */
function allGames(): { label: string; game: TabularGame }[] {
  const out: { label: string; game: TabularGame }[] = [];
  for (const name of TASK_NAMES) {
    for (const protocol of TASKS[name].protocols) {
      for (const agents of [2, 3]) {
        const game = makeGame(name, { agents, actions: 3, protocol, taskSeed: 11, penaltyK: -10 });
        out.push({ label: `${name}/${protocol}/n=${agents}`, game });
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Every game
// ---------------------------------------------------------------------------------------------

describe('every registered task', () => {
  const games = allGames();

  it('covers all six tasks and every allowed protocol', () => {
    expect(TASK_NAMES).toEqual(['climbing', 'penalty', 'random-matrix', 'relay', 'router', 'guess']);
    // climbing, penalty, random-matrix, relay, router: 1 protocol each; guess: 4. Times n ∈ {2, 3}.
    expect(games.length).toBe((5 + 4) * 2);
    for (const { game } of games) expect(TASKS[game.name as keyof typeof TASKS]).toBeDefined();
  });

  for (const { label, game } of games) {
    it(`${label} passes validateGame`, () => {
      expect(validateGame(game)).toEqual([]);
    });
  }

  games.forEach(({ label, game }, index) => {
    it(`${label}: exact J matches 20k sampled episodes under a random policy`, () => {
      const policy = randomPolicy(game, new Rng(7, [index]));
      const j = exactJ(game, policy);

      const rng = new Rng(2024, [index]);
      const episodes = 20_000;
      let sum = 0;
      let sumSq = 0;
      for (let e = 0; e < episodes; e++) {
        const prompt = samplePrompt(game, rng);
        const slot = rng.int(game.nSlots);
        const r = sampleEpisode(game, prompt, slot, policy, rng).reward;
        sum += r;
        sumSq += r * r;
      }
      const mean = sum / episodes;
      const variance = Math.max(0, sumSq / episodes - mean * mean);
      const standardError = Math.sqrt(variance / episodes);
      expect(Math.abs(mean - j)).toBeLessThanOrEqual(4 * standardError + 1e-12);
    });
  });

  games.forEach(({ label, game }, index) => {
    it(`${label}: enumerated probabilities sum to 1 and match sampled ones`, () => {
      const policy = randomPolicy(game, new Rng(7, [index]));
      const all = enumerateTrajectories(game, policy);
      const total = all.reduce((s, t) => s + t.prob, 0);
      expect(total).toBeCloseTo(1, 12);

      // A sampled episode's prob (actions only) × p(x) / nSlots is its enumerated probability.
      const rng = new Rng(99, [index]);
      const prompt = samplePrompt(game, rng);
      const slot = rng.int(game.nSlots);
      const sampled = sampleEpisode(game, prompt, slot, policy, rng);
      const key = (h: readonly TurnRecord[]) => JSON.stringify(h.map((t) => t.actions));
      const match = all.filter((t) => t.prompt === prompt && t.slot === slot && key(t.history) === key(sampled.history));
      expect(match.length).toBe(1);
      expect(match[0]!.reward).toBe(sampled.reward);
      expect(match[0]!.prob).toBeCloseTo((sampled.prob * game.promptProbs[prompt]!) / game.nSlots, 14);
    });
  });
});

describe('validateGame finds broken games', () => {
  it('reports a horizon shorter than the longest episode', () => {
    const broken: TabularGame = { ...relay(3, 3), horizon: 2 };
    expect(validateGame(broken).join(' ')).toMatch(/horizon/);
  });

  it('reports rewards outside rewardRange', () => {
    const broken: TabularGame = { ...climbing(), rewardRange: [0, 11] };
    expect(validateGame(broken).join(' ')).toMatch(/outside/);
  });

  it('reports prompt probabilities that do not sum to 1', () => {
    const broken: TabularGame = { ...relay(2, 3), promptProbs: [0.5, 0.5, 0.5] };
    expect(validateGame(broken).join(' ')).toMatch(/sum to 1\.5/);
  });

  it('reports a local state out of range', () => {
    const broken: TabularGame = { ...relay(3, 3), nObs: [3, 3, 3] }; // agent 2 needs 9 states
    expect(validateGame(broken).join(' ')).toMatch(/agent 2 is in local state/);
  });
});

// ---------------------------------------------------------------------------------------------
// Matrix games
// ---------------------------------------------------------------------------------------------

describe('matrix games', () => {
  it('climbing: deterministic joint actions give their payoffs', () => {
    const g = climbing();
    expect(exactJ(g, deterministic(g, () => 0))).toBe(11); // (a, a)
    expect(exactJ(g, deterministic(g, () => 1))).toBe(7); // (b, b)
    expect(exactJ(g, deterministic(g, () => 2))).toBe(5); // (c, c)
    expect(exactJ(g, deterministic(g, (agent) => agent))).toBe(-30); // (a, b)
  });

  it('climbing: uniform J is the matrix mean, (11 − 30 + 0 − 30 + 7 + 6 + 0 + 0 + 5)/9 = −31/9', () => {
    const g = climbing();
    expect(exactJ(g, uniformPolicy(g))).toBeCloseTo(-31 / 9, 12);
  });

  it('penalty: uniform J = (20 + 2 + 2k)/9 and the optima pay 10', () => {
    for (const k of [-10, -50, 0]) {
      const g = penalty(2, k);
      expect(exactJ(g, uniformPolicy(g))).toBeCloseTo((22 + 2 * k) / 9, 12);
      expect(exactJ(g, deterministic(g, () => 0))).toBe(10); // (a, a)
      expect(exactJ(g, deterministic(g, () => 2))).toBe(10); // (c, c)
      expect(exactJ(g, deterministic(g, (agent) => 2 * agent))).toBe(k); // (a, c)
    }
    expect(penalty().rewardRange).toEqual([-10, 10]);
  });

  it('n = 3 uses the mean over pairs: climbing (a, b, c) = (M[a][b] + M[a][c] + M[b][c])/3 = (−30 + 0 + 6)/3', () => {
    const g = climbing(3);
    expect(g.reward(0, 0, oneTurn([0, 1, 2]))).toBeCloseTo(-8, 12);
    expect(exactJ(g, deterministic(g, (agent) => agent))).toBeCloseTo(-8, 12);
    expect(g.reward(0, 0, oneTurn([0, 0, 0]))).toBe(11);
    // Penalty, k = −10, (a, a, c): (10 + k + k)/3.
    expect(penalty(3, -10).reward(0, 0, oneTurn([0, 0, 2]))).toBeCloseTo(-10 / 3, 12);
  });

  it('randomMatrix is deterministic in its seed, differs across seeds, and reads the documented stream', () => {
    const joints: number[][] = [];
    for (let a = 0; a < 4; a++) for (let b = 0; b < 4; b++) for (let c = 0; c < 4; c++) joints.push([a, b, c]);
    const payoffs = (seed: number) => {
      const g = randomMatrix(3, 4, seed);
      return joints.map((j) => g.reward(0, 0, oneTurn(j)));
    };
    expect(payoffs(5)).toEqual(payoffs(5));
    expect(payoffs(5)).not.toEqual(payoffs(6));

    // Row-major: the payoff of joint action (a, b, c) is draw number a·16 + b·4 + c.
    const stream = new Rng(5, [0x6d61]);
    const expected = joints.map(() => stream.uniform());
    expect(payoffs(5)).toEqual(expected);
    expect(jointIndex([1, 2, 3], 4)).toBe(16 + 8 + 3);
  });

  it('rejects sizes out of range with RangeError', () => {
    expect(() => climbing(1)).toThrow(RangeError);
    expect(() => penalty(7)).toThrow(RangeError);
    expect(() => randomMatrix(2, 1, 0)).toThrow(RangeError);
    expect(() => randomMatrix(2, 9, 0)).toThrow(RangeError);
    expect(() => randomMatrix(2.5, 3, 0)).toThrow(RangeError);
  });
});

// ---------------------------------------------------------------------------------------------
// Relay
// ---------------------------------------------------------------------------------------------

describe('relay', () => {
  for (const n of [2, 3, 4]) {
    it(`n = ${n}: the copy code gets J = 1, uniform gets 1/m`, () => {
      const m = 3;
      const g = relay(n, m);
      // Agent 0 says the secret; agent t ≥ 1 repeats the last message (the last base-m digit).
      const copy = deterministic(g, (agent, obs) => (agent === 0 ? obs : obs % m));
      expect(exactJ(g, copy)).toBeCloseTo(1, 12);
      expect(exactJ(g, uniformPolicy(g))).toBeCloseTo(1 / m, 12);
    });
  }

  it('encodes earlier messages base m with a_0 most significant', () => {
    const g = relay(3, 3);
    const history: TurnRecord[] = [
      { decisions: [{ agent: 0, obs: 2 }], actions: [1] },
      { decisions: [{ agent: 1, obs: 1 }], actions: [2] },
    ];
    expect(g.turn(2, 0, history)).toEqual([{ agent: 2, obs: 1 * 3 + 2 }]);
    expect(g.obsLabel(2, 5)).toBe('heard 1·2');
    expect(g.nObs).toEqual([3, 3, 9]);
  });
});

// ---------------------------------------------------------------------------------------------
// Router
// ---------------------------------------------------------------------------------------------

describe('router', () => {
  it('perfect routing and perfect answers get J = 1', () => {
    const n = 3;
    const m = 3;
    const g = router(n, m);
    const perfect = deterministic(g, (agent, x) => (agent === 0 ? routerExpert(x, n) - 1 : routerAnswer(x, m)));
    expect(exactJ(g, perfect)).toBeCloseTo(1, 12);
  });

  it('sending everything to agent 1 gets 2/4 · 1 + 2/4 · 0.25 = 0.625 (n = 3)', () => {
    // K = 4 types; agent 1 is the expert on x = 0 and x = 2, agent 2 on x = 1 and x = 3.
    const n = 3;
    const m = 3;
    const g = router(n, m);
    expect(g.promptProbs).toEqual([0.25, 0.25, 0.25, 0.25]);
    const allToOne = deterministic(g, (agent, x) => (agent === 0 ? 0 : routerAnswer(x, m)));
    expect(exactJ(g, allToOne)).toBeCloseTo(0.625, 12);
  });

  it('only the chosen solver acts, and wrong answers score 0', () => {
    const g = router(4, 3);
    const history: TurnRecord[] = [{ decisions: [{ agent: 0, obs: 5 }], actions: [1] }];
    expect(g.turn(5, 0, history)).toEqual([{ agent: 2, obs: 5 }]);
    const answered = (y: number): TurnRecord[] => [...history, { decisions: [{ agent: 2, obs: 5 }], actions: [y] }];
    // x = 5: answer (35 + 3) mod 3 = 2; expert is agent 5 mod 3 + 1 = 3, so agent 2 is not.
    expect(g.reward(5, 0, answered(2))).toBe(0.25);
    expect(g.reward(5, 0, answered(0))).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// Guess, per protocol
// ---------------------------------------------------------------------------------------------

describe('guess', () => {
  it('vote: the most frequent action wins, ties go to the smallest action', () => {
    expect(majorityVote([2, 1])).toBe(1);
    expect(majorityVote([2, 2, 1])).toBe(2);
    expect(majorityVote([0, 1, 2])).toBe(0);
    expect(majorityVote([3, 1, 3, 1])).toBe(1);
    expect(majorityVote([2, 1, 1, 2, 0])).toBe(1);

    // In the game: a tie between the right answer and a smaller wrong one is lost.
    const m = 4;
    const g = guess(2, m, 'vote', 3);
    const target = guessTargets(m, 3);
    for (let x = 0; x < m; x++) {
      const t = target[x]!;
      const smaller = t > 0 ? t - 1 : null;
      const larger = t < m - 1 ? t + 1 : null;
      if (smaller !== null) expect(g.reward(x, 0, oneTurn([t, smaller], x))).toBe(0);
      if (larger !== null) expect(g.reward(x, 0, oneTurn([larger, t], x))).toBe(1);
    }
  });

  it('independent: slot k is answered by agent k alone', () => {
    const n = 3;
    const m = 3;
    const g = guess(n, m, 'independent', 1);
    expect(g.nSlots).toBe(n);
    for (let k = 0; k < n; k++) expect(g.turn(2, k, [])).toEqual([{ agent: k, obs: 2 }]);

    // Only agent 1 knows the answers: J = 1/3 · 1 + 2/3 · 1/m.
    const target = guessTargets(m, 1);
    const onlyOne = (agent: number, x: number): ArrayLike<number> =>
      agent === 1 ? deterministic(g, (_a, o) => target[o]!)(agent, x) : uniformPolicy(g)(agent, x);
    expect(exactJ(g, onlyOne)).toBeCloseTo(1 / 3 + (2 / 3) * (1 / m), 12);
  });

  it('chain: agent t sees (x, a_{t-1}) and the last answer is graded', () => {
    const m = 3;
    const g = guess(3, m, 'chain', 4);
    const target = guessTargets(m, 4);
    const history: TurnRecord[] = [{ decisions: [{ agent: 0, obs: 1 }], actions: [2] }];
    expect(g.turn(1, 0, history)).toEqual([{ agent: 1, obs: 1 * m + 2 }]);
    // Agents 0 and 1 babble; agent 2 reads x from its state and answers it.
    const lastKnows = (agent: number, obs: number): ArrayLike<number> =>
      agent === 2 ? deterministic(g, (_a, o) => target[Math.floor(o / m)]!)(agent, obs) : uniformPolicy(g)(agent, obs);
    expect(exactJ(g, lastKnows)).toBeCloseTo(1, 12);
  });

  it('router: every solver is an expert, so any routing with right answers gets 1', () => {
    const m = 3;
    const g = guess(3, m, 'router', 8);
    const target = guessTargets(m, 8);
    expect(g.nActions).toEqual([2, 3, 3]);
    const policy = (agent: number, obs: number): ArrayLike<number> =>
      agent === 0 ? uniformPolicy(g)(agent, obs) : deterministic(g, (_a, o) => target[o]!)(agent, obs);
    expect(exactJ(g, policy)).toBeCloseTo(1, 12);
  });

  it('the answer key is a permutation fixed by the seed', () => {
    const t = guessTargets(6, 10);
    expect([...t].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(guessTargets(6, 10)).toEqual(t);
    expect(guessTargets(6, 10)).toEqual(new Rng(10, [0x6775]).permutation(6));
  });
});

// ---------------------------------------------------------------------------------------------
// State-visit occupancy
// ---------------------------------------------------------------------------------------------

describe('stateVisitProbs', () => {
  const sum = (v: Float64Array) => v.reduce((a, b) => a + b, 0);

  it('sums to the expected number of turns each agent takes', () => {
    const rng = new Rng(7, [1000]);

    // Chain: every agent acts exactly once per episode.
    const r = relay(3, 3);
    const rp = randomPolicy(r, rng);
    for (let i = 0; i < 3; i++) expect(sum(stateVisitProbs(r, rp, i))).toBeCloseTo(1, 12);
    // Agent 0's state is the secret, so its occupancy is p(x).
    expect([...stateVisitProbs(r, rp, 0)]).toEqual(r.promptProbs.map((p) => expect.closeTo(p, 12)));

    // Independent: agent k acts only in slot k, i.e. in 1/n of episodes.
    const gi = guess(3, 3, 'independent', 0);
    const ip = randomPolicy(gi, rng);
    for (let i = 0; i < 3; i++) expect(sum(stateVisitProbs(gi, ip, i))).toBeCloseTo(1 / 3, 12);

    // Vote: everyone acts once.
    const c = climbing(3);
    for (let i = 0; i < 3; i++) expect(sum(stateVisitProbs(c, randomPolicy(c, rng), i))).toBeCloseTo(1, 12);

    // Router: solver i acts when the router picks it, probability Σ_x p(x) π_router(i-1 | x).
    const g = router(4, 3);
    const p = randomPolicy(g, rng);
    expect(sum(stateVisitProbs(g, p, 0))).toBeCloseTo(1, 12);
    for (let i = 1; i < 4; i++) {
      let chosen = 0;
      for (let x = 0; x < g.promptProbs.length; x++) chosen += g.promptProbs[x]! * p(0, x)[i - 1]!;
      expect(sum(stateVisitProbs(g, p, i))).toBeCloseTo(chosen, 12);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------------------------

describe('registry', () => {
  const opts = { agents: 2, actions: 4, taskSeed: 0, penaltyK: -10 } as const;

  it('rejects a protocol the task does not support, and unknown tasks', () => {
    expect(() => makeGame('relay', { ...opts, protocol: 'vote' })).toThrow(ConfigError);
    expect(() => makeGame('nope' as 'relay', { ...opts, protocol: 'chain' })).toThrow(ConfigError);
  });

  it('default protocols are allowed, and fixed-action tasks ignore `actions`', () => {
    for (const name of TASK_NAMES) {
      expect(TASKS[name].protocols).toContain(TASKS[name].defaultProtocol);
      const g = makeGame(name, { ...opts, protocol: TASKS[name].defaultProtocol });
      expect(g.name).toBe(name);
      expect(g.protocol).toBe(TASKS[name].defaultProtocol);
      const fixed = TASKS[name].fixedActions;
      if (fixed !== undefined) expect(g.nActions).toEqual([fixed, fixed]);
    }
    expect(makeGame('penalty', { ...opts, protocol: 'vote', penaltyK: -50 }).rewardRange).toEqual([-50, 10]);
  });
});
