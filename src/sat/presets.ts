/**
 * Named experiments: a partial config plus two sentences on what to look for, so a teacher can
 * open a lesson with one click. The CLI's --preset and the playground's gallery read this list.
 *
 * Not here: settings' meaning (config.ts owns every default, range and doc).
 */
import { type Config, parseConfig } from './config';

export interface Preset {
  readonly name: string;
  /** Tabular presets run anywhere instantly; language presets load a shipped model. */
  readonly kind: 'tabular' | 'llm';
  readonly title: string;
  readonly settings: Readonly<Record<string, unknown>>;
  readonly lookFor: string;
}

export const PRESETS: readonly Preset[] = [
  {
    kind: 'tabular',
    name: 'climbing',
    title: 'Climbing game, 3 agents: SAT vs simultaneous',
    settings: { task: 'climbing', agents: 3, estimator: 'resample', stages: 30, delta: 0.5, lr: 0.3, initScale: 0.5 },
    lookFor:
      'The optimum (all play a, payoff 11) sits next to the −30 penalty, so agents that move together drift to the safe (b, b) or (c, c) corners. Compare with scheme=simultaneous on the same seeds: over 20 seeds SAT ends higher on average and its J falls in fewer stages — a modest gap, not a rout (see the README).',
  },
  {
    kind: 'tabular',
    name: 'climbing2',
    title: 'Climbing game as Claus & Boutilier posed it (2 agents)',
    settings: { task: 'climbing', agents: 2, estimator: 'resample', stages: 30, delta: 0.5, lr: 0.3, initScale: 0.5 },
    lookFor: 'The original two-player game. Watch the certificate: the gain measured on each agent\u2019s fresh certification batch, minus its confidence width, certifies most improving stages; beside it the in-sample gain shows how optimistic scoring on the training data would be.',
  },
  {
    kind: 'tabular',
    name: 'penalty',
    title: 'Penalty game (k = −10), 2 agents',
    settings: { task: 'penalty', agents: 2, penaltyK: -10, stages: 30, initScale: 0.5 },
    lookFor: 'Two optima (a,a) and (c,c) with a penalty for mixing them. Sequential updates let the second agent follow the first instead of both switching at once.',
  },
  {
    kind: 'tabular',
    name: 'coordination',
    title: 'Lesson: two equally good optima from a symmetric start (why one at a time)',
    settings: { task: 'penalty', agents: 2, penaltyK: -50, initScale: 0, estimator: 'resample', stages: 20, lr: 1, delta: 0.5, seed: 3 },
    lookFor:
      'Both agents start uniform; (a, a) and (c, c) pay 10, mixing them costs −50, the safe (b, b) pays 2. Moving one at a time, agent 1 answers the move agent 0 just made; moving together (Overlay simultaneous, dashed), both chase the same noisy batch and retreat to (b, b). On this seed (3) SAT ends at J ≈ 10 and simultaneous at 2. Not on every seed: over seeds 1–20 SAT reaches an optimum on 19 and simultaneous on 10, so SAT ends more than 5 above on 10 of 20 (docs/claims.md, claim 2).',
  },
  {
    kind: 'tabular',
    name: 'relay',
    title: 'Relay with masked activation (3 agents, 3 actions)',
    settings: { task: 'relay', agents: 3, actions: 3, stages: 40, lr: 0.2, initScale: 0.5 },
    lookFor: 'Only one agent acts per turn; each sees the earlier actions. The team must invent a code to pass the secret along. Each agent acts at one turn, so the certificate needs no shift term even with H = 3 (docs/certificate.md §6); its gains are small, and it still certifies most improving stages.',
  },
  {
    kind: 'tabular',
    name: 'router',
    title: 'Router picks a solver (3 agents)',
    settings: { task: 'router', agents: 3, actions: 3, stages: 40, lr: 0.2, initScale: 0.5 },
    lookFor: 'Agent 0 routes each problem type to a solver; solvers only score fully on their own types. Watch the router learn who the experts are while the solvers learn the answers.',
  },
  {
    kind: 'tabular',
    name: 'random-matrix',
    title: 'Random cooperative matrix game (3 agents, seeded)',
    settings: { task: 'random-matrix', agents: 3, actions: 4, stages: 30, initScale: 0.5 },
    lookFor: 'A game with no special structure; change taskSeed for another one. Compare orders: the certificate holds for any σ, the numbers change.',
  },
  {
    kind: 'tabular',
    name: 'order',
    title: 'Update order: greedy vs fixed on the relay',
    settings: { task: 'relay', agents: 3, actions: 3, stages: 30, order: 'greedy', lr: 0.2, initScale: 0.5 },
    lookFor: 'Greedy updates the agent with the largest predicted gain κ√δ first. Run again with order=fixed or reverse on the same seed and compare.',
  },
  {
    kind: 'tabular',
    name: 'delta-sweep',
    title: 'Does the KL violation rate grow like √δ? Only δ changes, the step scaled to it',
    settings: {
      task: 'relay', agents: 4, actions: 6, batch: 16, group: 8, stages: 5, delta: 0.01, lr: 0.18, initScale: 0.5,
      epochs: 1, maxBacktracks: 0, onExhausted: 'keep', betaAdapt: false, certEpisodes: 64, geoIters: 0,
    },
    lookFor:
      'Press Sweep δ (or run --sweep delta=0.001,…,0.1): the same tables and seeds at seven radii, one Adam step per update with lr ∝ √δ (0.18 at δ = 0.01, so mean KL ≈ 0.6·δ at every δ), no backtracking, fixed β, on a 4-agent relay with 264 local states. It measures the share of visited states with KL > δ (most of them in stage 1, the first step from the start; about 0.19 averaged over 5 stages, at every δ) and fits v ≈ c·δ^p with a bootstrap CI over seeds: p ≈ −0.04 over 10 seeds, its interval excluding ½ — about 0, not the paper\'s +½ (docs/claims.md, claim 5: does not hold). With the step scaled to the radius the share past it does not move (docs/method.md §9.2).',
  },
  {
    kind: 'tabular',
    name: 'relay-pnp',
    title: 'Plug-and-play on the relay: agent 1 swapped for the best response at stage 8',
    settings: { task: 'relay', agents: 3, actions: 3, stages: 20, lr: 0.2, initScale: 0.5, swapAgent: 1, swapAt: 8, swapTo: 'best', swapStage0: true, stage0Delta: 0.05 },
    lookFor:
      'Before stage 8 agent 1\'s seat gets the best response to the team, projected per state into KL ≤ δ₀ of the agent it replaces (Stage-0): the swap card shows how far it moved and the λ(s) histogram. Set swapStage0 = false and Apply: the raw seat jumps further in J here (the best response really is better) but leaves the trust region at every state (KL up to 0.6–1.9 over seeds 1–3) — Stage-0 trades that jump for a guarantee.',
  },
  {
    kind: 'llm',
    name: 'arith-team',
    title: 'Arithmetic team: three small models in a chain learn to cooperate',
    settings: {
      task: 'arithmetic', level: 1, model: 'S', agents: 3, protocol: 'chain', stages: 30,
      batch: 16, group: 8, lr: 5e-4, epochs: 2, delta: 0.1, beta: 0.05, retryLrFactor: 0.5, maxNew: 3, evalEpisodes: 256, geoIters: 4,
    },
    lookFor:
      'Three 29k-parameter models answer one-digit sums in turn, each seeing the earlier answers; the last one is graded. Pretrained alone, the chain starts poorly (its members were never trained together); watch held-out J climb as SAT updates them one at a time inside their trust regions. Compare with arith-single-L.',
  },
  {
    kind: 'llm',
    name: 'arith-single-L',
    title: 'One larger model (L, 15× an S) trained with plain GRPO, same episode budget',
    settings: {
      task: 'arithmetic', level: 1, model: 'L', agents: 1, protocol: 'independent', stages: 30,
      batch: 48, group: 8, lr: 5e-4, epochs: 2, delta: 0.1, beta: 0.05, retryLrFactor: 0.5, maxNew: 3, evalEpisodes: 256, geoIters: 4,
    },
    lookFor:
      'The single-agent baseline of claim 1 (docs/method.md §10b): one model with 15× the parameters of an S, given as many episodes per stage as the three-agent team (SAT resamples for every agent).',
  },
  {
    kind: 'llm',
    name: 'plan-team',
    title: 'Countdown team: reach the target with the given numbers',
    settings: {
      task: 'countdown', level: 3, model: 'S', agents: 3, protocol: 'chain', stages: 30,
      batch: 16, group: 4, lr: 5e-4, epochs: 2, delta: 0.1, beta: 0.05, retryLrFactor: 0.5, maxNew: 10, evalEpisodes: 256, geoIters: 4,
    },
    lookFor: 'Many answers are right, so reward comes from planning, not copying. A later agent in the chain can repair an earlier plan.',
  },
  {
    kind: 'llm',
    name: 'plan-team-2',
    title: 'Countdown level 2 team: three small models learn three-number plans',
    settings: {
      task: 'countdown', level: 2, model: 'S', agents: 3, protocol: 'chain', stages: 30,
      batch: 32, group: 4, lr: 5e-4, epochs: 2, delta: 0.1, beta: 0.05, retryLrFactor: 0.5, maxNew: 8, evalEpisodes: 256, geoIters: 4,
    },
    lookFor:
      'Three 29k-parameter S models in a chain reach a target with three numbers and + or − ("8,2,5>11:" → "8-2+5"); held-out J, over 87 distinct unseen problems, climbs from about 0.28 to 0.62 in 30 stages (mean of seeds 1–3), past one S (0.34) or one M (0.44) answering alone. The level is what makes the difference, not the batch: plan-team\'s own settings at level 2 climb almost as fast, while at arithmetic level 2 (243 distinct held-out sums) these settings leave J flat.',
  },
  {
    kind: 'llm',
    name: 'arith-pnp',
    title: 'Plug-and-play: swap agent 1 for a larger model mid-training',
    settings: {
      task: 'arithmetic', level: 1, model: 'S', agents: 3, protocol: 'chain', stages: 12,
      batch: 16, group: 8, lr: 5e-4, epochs: 2, delta: 0.1, beta: 0.05, retryLrFactor: 0.5, maxNew: 3, evalEpisodes: 256, stage0Delta: 0.1, geoIters: 4,
      swapAgent: 1, swapAt: 3, swapTo: 'M', swapStage0: true,
    },
    lookFor:
      'Before stage 3 agent 1\'s seat gets the M model (in the page, in agent 1\'s worker; in the CLI the same, or --swap 1=arithmetic-M --swap-stage K): with Stage-0 (δ0 = δ) the projection of M into the trust region samples for the seat at once and hands it to the distilled M at agent 1\'s first update — the swap card shows the shares of token states outside δ before and after the projection. Set swapStage0 = false (or --no-stage0): the raw M starts outside the radius on most states. Compare the first stage after the swap (8 seeds: fewer backtracks with Stage-0, ΔJ within noise).',
  },
];

export function findPreset(name: string): Preset {
  const p = PRESETS.find((x) => x.name === name);
  if (!p) throw new RangeError(`Unknown preset "${name}". Presets: ${PRESETS.map((x) => x.name).join(', ')}.`);
  return p;
}

export function presetConfig(name: string, overrides: Readonly<Record<string, unknown>> = {}): Config {
  return parseConfig({ ...findPreset(name).settings, ...overrides });
}
