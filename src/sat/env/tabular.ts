/**
 * The environment of a tabular team (the `TeamEnv` of types.ts): a TabularGame; J is exact
 * (enumeration), so its confidence half-width is 0, and the certificate's summand has an exact
 * range (enumeration again, `certSample`).
 *
 * Not here: sampling details (rollout.ts) or the games themselves (src/tasks).
 */
import type { Rng } from '../../core/rng';
import { exactJ, forEachTrajectory } from '../../tasks/tabular';
import type { TabularGame } from '../../tasks/types';
import { sampleBatch, tablePolicy, teamTables } from '../rollout';
import type { CertScope } from '../certificate';
import type { AgentPolicy, Batch, StepSet } from '../types';
import type { RolloutOptions, TeamCertSpace, TeamEnv, TeamEvaluation } from './types';

export type { TeamEnv, TeamEvaluation } from './types';

/**
 * `n` i.i.d. inverse-CDF draws from a cumulative distribution (unnormalised; last entry = total).
 * 53-bit uniforms: a 24-bit grid could not reach trajectories rarer than 2⁻²⁴, and an estimator's
 * mean would drift from its target by up to (trajectories × 2⁻²⁴) × the range.
 */
function drawTrajectories(cdf: readonly number[], n: number, rng: Rng): Int32Array {
  const total = cdf[cdf.length - 1] ?? 0;
  const idx = new Int32Array(n);
  for (let e = 0; e < n; e++) {
    const u = (((rng.nextU32() >>> 5) * 67108864 + (rng.nextU32() >>> 6)) / 9007199254740992) * total;
    let a = 0;
    let z = cdf.length - 1;
    while (a < z) {
      const m = (a + z) >> 1;
      if (cdf[m]! > u) z = m;
      else a = m + 1;
    }
    idx[e] = a;
  }
  return idx;
}

/** Per trajectory of a TeamCertSpace, log r_j: Σ over agent j's decisions of log(new/old). */
export function trajectoryLogRatios(space: TeamCertSpace, agent: number, oldTable: Float64Array, newTable: Float64Array): Float64Array {
  return Float64Array.from(space.decisions, (d) => {
    let u = 0;
    for (let k = 0; k < d.length; k += 2) if (d[k] === agent) u += Math.log(newTable[d[k + 1]!]! / oldTable[d[k + 1]!]!);
    return u;
  });
}

export class TabularEnv implements TeamEnv {
  readonly game: TabularGame;
  readonly evaluatePerAgent = true;
  /** The team-level form: as tight as the per-agent one or tighter on every preset, in the same time (docs/certificate.md §5.1). */
  certScope: CertScope = 'team';
  constructor(game: TabularGame) {
    this.game = game;
  }
  get nAgents(): number {
    return this.game.nAgents;
  }
  get horizon(): number {
    return this.game.horizon;
  }
  get rewardRange(): readonly [number, number] {
    return this.game.rewardRange;
  }
  get slots(): number {
    return this.game.nSlots;
  }
  readonly stepsPerTurn = 1;
  agentTurns(agent: number): number {
    if (!this.turnsOf) {
      // The game's structure, not a policy's: every branch is enumerated under the uniform policy.
      const most = new Array<number>(this.game.nAgents).fill(0);
      forEachTrajectory(this.game, (a) => new Float64Array(this.game.nActions[a]!).fill(1 / this.game.nActions[a]!), (t) => {
        const count = new Array<number>(this.game.nAgents).fill(0);
        for (const turn of t.history) for (const d of turn.decisions) count[d.agent]!++;
        count.forEach((c, a) => (most[a] = Math.max(most[a]!, c)));
      });
      this.turnsOf = most;
    }
    return this.turnsOf[agent]!;
  }
  private turnsOf?: number[];
  /** B × G episodes under the team's tables — `opts.tables` when the caller has them (no agent is asked then). */
  async rollout(team: readonly AgentPolicy[], B: number, G: number, rng: Rng, opts: RolloutOptions = {}): Promise<Batch> {
    return sampleBatch(this.game, opts.tables ?? (await teamTables(this.game, team)), B, G, rng);
  }
  /** Every agent's full table [nObs × nActions] now (what certSample compares against). */
  async tables(team: readonly AgentPolicy[]): Promise<Float64Array[]> {
    return teamTables(this.game, team);
  }
  /** Every state of agent j, as the step set whose `distributions` are its full table [nObs × nActions]. */
  tableSteps(agent: number): StepSet {
    return { obs: Int32Array.from({ length: this.game.nObs[agent]! }, (_, s) => s) };
  }
  /**
   * A certification sample of agent j's step (docs/certificate.md §4–§5): N episodes drawn i.i.d.
   * under the old team `before` (π̂ⁱ⁻¹), each scored with the summand X(τ) = (r_j(τ) − 1)·(R(τ) − b),
   * where r_j(τ) is the product over agent j's decisions of newTable/oldTable; and the exact interval
   * of X over every trajectory the old team can produce.
   *
   * The game is a small finite tree, so the episodes are drawn from its exact trajectory
   * distribution (enumerated once, then inverse-CDF draws from `rng`): the same distribution a
   * rollout samples from, at a millisecond for 65,536 episodes instead of a second.
   */
  certSample(before: readonly Float64Array[], agent: number, newTable: Float64Array, b: number, N: number, rng: Rng): { x: Float64Array; range: [number, number] } {
    const A = this.game.nActions[agent]!;
    const old = before[agent]!;
    const cdf: number[] = [];
    const value: number[] = [];
    let total = 0;
    let lo = Infinity;
    let hi = -Infinity;
    forEachTrajectory(this.game, tablePolicy(this.game, before), (t) => {
      if (!(t.prob > 0)) return; // a branch the old team never samples
      let r = 1;
      for (const turn of t.history) {
        turn.decisions.forEach((d, k) => {
          if (d.agent !== agent) return;
          const i = d.obs * A + turn.actions[k]!;
          r *= newTable[i]! / old[i]!;
        });
      }
      const x = (r - 1) * (t.reward - b);
      lo = Math.min(lo, x);
      hi = Math.max(hi, x);
      total += t.prob;
      cdf.push(total);
      value.push(x);
    });
    const idx = drawTrajectories(cdf, N, rng);
    return { x: Float64Array.from(idx, (a) => value[a]!), range: [lo, hi] };
  }
  /**
   * The team-level certificate's sample space (docs/certificate.md §5.1): every trajectory the team
   * `tables` (π_cur) can produce, with its probability, reward and decisions (agent, table entry),
   * and `draws` indices drawn i.i.d. from that exact distribution with `rng`.
   */
  teamCertSpace(tables: readonly Float64Array[], draws: number, rng: Rng): TeamCertSpace {
    const reward: number[] = [];
    const decisions: Int32Array[] = [];
    const cdf: number[] = [];
    let total = 0;
    forEachTrajectory(this.game, tablePolicy(this.game, tables), (t) => {
      if (!(t.prob > 0)) return;
      const d: number[] = [];
      for (const turn of t.history) turn.decisions.forEach((dec, k) => d.push(dec.agent, dec.obs * this.game.nActions[dec.agent]! + turn.actions[k]!));
      total += t.prob;
      cdf.push(total);
      reward.push(t.reward);
      decisions.push(Int32Array.from(d));
    });
    return { reward: Float64Array.from(reward), decisions, draws: drawTrajectories(cdf, draws, rng) };
  }
  async evaluate(team: readonly AgentPolicy[]): Promise<TeamEvaluation> {
    return this.evaluateTables(await teamTables(this.game, team));
  }
  /** J of the team whose tables are `tables` (exact; no call to any agent). */
  evaluateTables(tables: readonly Float64Array[]): TeamEvaluation {
    return { J: exactJ(this.game, tablePolicy(this.game, tables)), ci: 0, exact: true };
  }
}
