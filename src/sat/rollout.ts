/**
 * Rollouts on a tabular team game: B groups × G samples under the team's current policies.
 *
 * Each group draws its prompt from its own sub-stream and each episode samples from its own
 * sub-stream (`rng.fork(group, k)`), so an episode is a pure function of (seed, purpose, group, k):
 * reproducible on any backend and independent of the order work is done in.
 *
 * Not here: language-model generation (token sampling arrives with the model layer).
 */
import type { Rng } from '../core/rng';
import { samplePrompt, sampleEpisode } from '../tasks/tabular';
import type { PolicyTable, TabularGame } from '../tasks/types';
import type { AgentPolicy, AgentTurn, Batch, Episode } from './types';

/** Every agent's full table: probs[agent] is [nObs × nActions]. */
export async function teamTables(game: TabularGame, team: readonly AgentPolicy[]): Promise<Float64Array[]> {
  return Promise.all(team.map((a, i) => a.distributions({ obs: Int32Array.from({ length: game.nObs[i]! }, (_, s) => s) })));
}

export function tablePolicy(game: TabularGame, tables: readonly Float64Array[]): PolicyTable {
  return (agent, obs) => {
    const A = game.nActions[agent]!;
    return tables[agent]!.subarray(obs * A, (obs + 1) * A);
  };
}

/** Samples B×G episodes (group-major order) under the given team tables. */
export function sampleBatch(game: TabularGame, tables: readonly Float64Array[], B: number, G: number, rng: Rng): Batch {
  const policy = tablePolicy(game, tables);
  const episodes: Episode[] = [];
  for (let g = 0; g < B; g++) {
    const prompt = samplePrompt(game, rng.fork(g));
    for (let k = 0; k < G; k++) {
      const slot = k % game.nSlots;
      const traj = sampleEpisode(game, prompt, slot, policy, rng.fork(g, k + 1));
      const turns: AgentTurn[] = [];
      traj.history.forEach((rec, t) => {
        rec.decisions.forEach((d, i) => {
          const a = rec.actions[i]!;
          turns.push({ agent: d.agent, t, obs: d.obs, action: a, logp: Math.log(policy(d.agent, d.obs)[a]!) });
        });
      });
      episodes.push({ prompt, slot, group: g, turns, reward: traj.reward });
    }
  }
  return { episodes, groups: B, groupSize: G };
}

/** The steps agent j took in the batch, flattened in episode order. */
export function agentSteps(batch: Batch, agent: number): { obs: Int32Array; actions: Int32Array; episodeOf: Int32Array; logp: Float64Array; context?: unknown } {
  const obs: number[] = [];
  const actions: number[] = [];
  const episodeOf: number[] = [];
  const logp: number[] = [];
  batch.episodes.forEach((ep, e) => {
    for (const t of ep.turns) {
      if (t.agent !== agent) continue;
      obs.push(t.obs);
      actions.push(t.action);
      episodeOf.push(e);
      logp.push(t.logp);
    }
  });
  return { obs: Int32Array.from(obs), actions: Int32Array.from(actions), episodeOf: Int32Array.from(episodeOf), logp: Float64Array.from(logp), context: batch.context };
}
