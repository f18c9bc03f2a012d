/**
 * "Held" as a test of the certificate (docs/certificate.md §12): did the stage's lower bound L stay
 * at or below the true ΔJ = J(π̄) − J(π_cur)?
 *
 * - Exact J (tabular): held when L ≤ ΔJ + a few ulps of |J| (`heldTolerance`): J is a sum of
 *   products, and a ΔJ of exactly 0 can come out as −2e−16.
 * - Estimated J (language teams): ΔJ is estimated on the distribution the bound is about (the
 *   task's train split, the rollout's sampler) with common random numbers: the starting and the
 *   final team answer the same prompts with the same sampler uniforms, `pairs` episodes each, and
 *   ΔĴ = mean(R_final − R_start) with its standard error. The verdict says what the estimate can
 *   tell: 'held' when L ≤ ΔĴ − z·se, 'not held' when L > ΔĴ + z·se, else 'undecided' (z = 2).
 *
 * It costs 2 × pairs episodes, so it runs only where asked (the CLI's certify report, the claims,
 * a page action) — a stage not checked is 'unchecked', never a ✓ from a noisy comparison.
 *
 * The paired rollout itself (`crnUnits`) is also the unit of the paired team-level certificate
 * (docs/certificate.md §5.5), drawn there from the certification streams.
 *
 * Not here: the bound itself (certificate.ts) or the stage loop (stage.ts).
 */
import type { Rng } from '../core/rng';
import type { TeamEnv } from './env/types';
import type { AgentPolicy, AgentSnapshot } from './types';

export type HeldState = 'held' | 'not held' | 'undecided' | 'unchecked';

export interface HeldCheck {
  readonly state: HeldState;
  /** ΔJ: exact (tabular), the CRN estimate (language), NaN when unchecked. */
  readonly estimate: number;
  /** Its standard error (0 when exact, NaN when unchecked). */
  readonly se: number;
  /** CRN pairs behind the estimate (0 when exact or unchecked). */
  readonly pairs: number;
}

/** Standard errors between the bound and the estimate before the check decides. */
export const HELD_Z = 2;

/** The tie tolerance of an exact "held": 8 ulps of the larger |J| (J ≤ 0 games included). */
export function heldTolerance(jBefore: number, jAfter: number): number {
  return 8 * Number.EPSILON * Math.max(Math.abs(jBefore), Math.abs(jAfter));
}

/** The verdict of a bound `lower` against an estimate of ΔJ ± se (the header's rule). */
export function heldVerdict(lower: number, estimate: number, se: number, pairs: number): HeldCheck {
  const state: HeldState = !Number.isFinite(estimate) ? 'unchecked' : lower <= estimate - HELD_Z * se ? 'held' : lower > estimate + HELD_Z * se ? 'not held' : 'undecided';
  return { state, estimate, se, pairs };
}

/**
 * ΔJ by common random numbers between the team's state `start` (snapshots, one per agent) and its
 * state now: both roll out `pairs` episodes from the same stream `rng` (same prompts, same sampler
 * uniforms), paired by episode. The agents are left exactly as they were (their current state is
 * snapshotted and restored). Returns the verdict for `lower`.
 */
export async function checkHeld(env: TeamEnv, team: readonly AgentPolicy[], start: readonly AgentSnapshot[], lower: number, pairs: number, rng: Rng): Promise<HeldCheck> {
  const { estimate, se } = (await crnDeltaJ(env, team, start, pairs, rng))!;
  return heldVerdict(lower, estimate, se, pairs);
}

/**
 * How a check asked from the page goes: `done(k)` after each of its two rollouts (the final
 * team's, then the starting team's: k = 1, 2), and `cancelled()` asked between them.
 */
export interface CheckWatch {
  readonly done?: (rollouts: 1 | 2) => void;
  readonly cancelled?: () => boolean;
}

/** checkHeld told how it goes (`watch`); null when cancelled between its rollouts (the team as it was). */
export async function checkHeldWatched(env: TeamEnv, team: readonly AgentPolicy[], start: readonly AgentSnapshot[], lower: number, pairs: number, rng: Rng, watch: CheckWatch): Promise<HeldCheck | null> {
  const r = await crnDeltaJ(env, team, start, pairs, rng, watch);
  return r && heldVerdict(lower, r.estimate, r.se, pairs);
}

/** The CRN estimate of J(now) − J(start) and its standard error (see checkHeld); null when `watch` cancelled it. */
export async function crnDeltaJ(env: TeamEnv, team: readonly AgentPolicy[], start: readonly AgentSnapshot[], pairs: number, rng: Rng, watch: CheckWatch = {}): Promise<{ estimate: number; se: number } | null> {
  if (!(pairs >= 2)) throw new RangeError(`checkHeld: needs at least 2 pairs, got ${pairs}`);
  const d = await crnUnits(env, team, start, Math.max(1, Math.ceil(pairs / env.slots)), rng, { watch });
  if (!d) return null;
  const units = d.length;
  let m = 0;
  for (const x of d) m += x;
  m /= units;
  let v = 0;
  for (const x of d) v += (x - m) ** 2;
  return { estimate: m, se: Math.sqrt(v / Math.max(1, units - 1) / units) };
}

/**
 * Common-random-numbers pairs between the team as it is now and its state `start` (snapshots, one
 * per agent): `units` units of env.slots episodes rolled out by each, both from the same stream
 * `rng` (same prompts, same sampler uniforms per position and message), and per unit
 * D = mean over its episodes of (R_now − R_start). Each side alone is an exact sample of its team,
 * so E[D] = J(now) − J(start) (docs/certificate.md §5.5). The agents are left as they were (their
 * state now is snapshotted, or given as `final`, and restored). `before`: the starting team's
 * rewards from this very stream, when already rolled out (its rollout is then skipped). Null when
 * `watch` cancelled between the two rollouts.
 */
export async function crnUnits(
  env: TeamEnv, team: readonly AgentPolicy[], start: readonly AgentSnapshot[], units: number, rng: Rng,
  o: { readonly final?: readonly AgentSnapshot[]; readonly before?: ArrayLike<number>; readonly watch?: CheckWatch } = {},
): Promise<Float64Array | null> {
  if (start.length !== team.length) throw new RangeError(`crnUnits: ${start.length} starting snapshots for a team of ${team.length}`);
  const episodes = units * env.slots;
  if (o.before && o.before.length !== episodes) throw new RangeError(`crnUnits: ${o.before.length} starting-team rewards for ${units} units of ${env.slots} episodes`);
  const watch = o.watch ?? {};
  const final = o.final ?? (o.before ? null : await Promise.all(team.map((a) => a.snapshot())));
  const after = await env.rollout(team, units, env.slots, rng, { record: false, scored: [] });
  watch.done?.(1);
  if (watch.cancelled?.()) return null;
  let before: ArrayLike<number>;
  if (o.before) {
    before = o.before;
  } else {
    try {
      await Promise.all(team.map((a, k) => a.restore(start[k]!)));
      before = Float64Array.from((await env.rollout(team, units, env.slots, rng, { record: false, scored: [] })).episodes, (e) => e.reward);
    } finally {
      await Promise.all(team.map((a, k) => a.restore(final![k]!)));
    }
  }
  watch.done?.(2);
  // Paired by unit (a unit's episodes share a prompt and, for `independent`, cover every slot).
  const d = new Float64Array(units);
  after.episodes.forEach((e, k) => (d[Math.floor(k / env.slots)]! += (e.reward - before[k]!) / env.slots));
  return d;
}
