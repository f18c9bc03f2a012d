/**
 * The sequential certificate's controls for the validity suites (docs/certificate.md §5.3): given a
 * stage's looks — the units after every round, drawn to the stage's budget (certStop = cap) — and
 * its exact ΔJ, did each way of reading them hold?
 *
 * - worst stop: the confidence sequence read at the worst round for it (the first whose bound
 *   exceeds ΔJ, if any) — what anytime validity must survive;
 * - peeking (the negative controls): a fixed-N bound recomputed after every round and stopped when
 *   it first clears 0 (else read at the last round) — the normal approximation mean − 1.645·se, and
 *   the betting bound tuned to the units seen so far.
 *
 * Not here: running the stages (the suites), the bounds themselves (src/core/confidence.ts).
 */
import { expect } from 'vitest';
import { lowerConfidenceBound, lowerConfidenceBoundBelow } from '../../src/core/confidence';

/** The normal-approximation bound at a fixed N, mean − 1.645·se (δ = 0.05): not a finite-sample bound, the one a class would compute. */
export function normalLower(x: ArrayLike<number>): number {
  let m = 0;
  for (let k = 0; k < x.length; k++) m += x[k]!;
  m /= x.length;
  let v = 0;
  for (let k = 0; k < x.length; k++) v += (x[k]! - m) ** 2;
  return x.length > 1 ? m - 1.645 * Math.sqrt(v / (x.length - 1) / x.length) : -Infinity;
}

export interface Look {
  readonly x: Float64Array;
  readonly range: readonly [number, number];
  readonly scale: number | undefined;
}

export interface PeekTally {
  stages: number;
  worstHeld: number;
  normalHeld: number;
  bettingHeld: number;
}
export const peekTally = (): PeekTally => ({ stages: 0, worstHeld: 0, normalHeld: 0, bettingHeld: 0 });

/** Stop at the first look whose bound clears 0, else read the last: did that value stay ≤ ΔJ? */
function peekHeld(looks: readonly Look[], bound: (l: Look) => number, dJ: number, tol: number): boolean {
  let v = -Infinity;
  for (const l of looks) {
    v = bound(l);
    if (v > 0) break;
  }
  return v <= dJ + tol;
}

/** Scores one stage: `seqLowers` the stage's own running bounds after every round, `looks` their units. */
export function scorePeek(t: PeekTally, looks: readonly Look[], seqLowers: readonly number[], dJ: number, deltaConf: number, tol: number): void {
  t.stages++;
  if (Math.max(...seqLowers) <= dJ + tol) t.worstHeld++;
  if (peekHeld(looks, (l) => normalLower(l.x), dJ, tol)) t.normalHeld++;
  const betting = (l: Look) => (l.scale === undefined ? lowerConfidenceBound('betting', l.x, l.range[0], l.range[1], deltaConf) : lowerConfidenceBoundBelow(l.x, l.range[0], l.scale, deltaConf));
  if (peekHeld(looks, betting, dJ, tol)) t.bettingHeld++;
}

/** What a sequential family counted on its early-stopping runs. */
export interface FamilyTally {
  stages: number;
  held: number;
  certified: number;
  /** Stages that stopped before their last allowed round. */
  early: number;
  episodes: number;
  /** The average budget summed over the stages. */
  base: number;
}

/**
 * Prints a sequential family's line and checks it: ≥ `minStages` stages; the early-stopping rule
 * and the sequence read at its worst round hold in ≥ 1 − δ_conf; some stages stopped early and the
 * runs stayed within their budget; and the negative control — the normal bound read after every
 * round — fails.
 */
export function checkSequentialFamily(label: string, t: FamilyTally, peek: PeekTally, deltaConf: number, minStages: number): void {
  const rate = (k: number, n: number) => (n > 0 ? (k / n).toFixed(3) : '—');
  console.log(
    `${label}: ${t.stages} stages, held ${rate(t.held, t.stages)}, certified ${rate(t.certified, t.stages)}, stopped before the budget in ${rate(t.early, t.stages)}, ` +
      `certification draws ${(t.episodes / t.base).toFixed(2)} × the average budget\n` +
      `drawn to the budget: the confidence sequence read at its worst round held in ${rate(peek.worstHeld, peek.stages)}; read after every round and stopped when it first clears 0, ` +
      `the normal-approximation bound held in ${rate(peek.normalHeld, peek.stages)}, the fixed-N betting bound in ${rate(peek.bettingHeld, peek.stages)}`,
  );
  expect(t.stages).toBeGreaterThanOrEqual(minStages);
  expect(t.held / t.stages).toBeGreaterThanOrEqual(1 - deltaConf);
  expect(peek.worstHeld / peek.stages).toBeGreaterThanOrEqual(1 - deltaConf);
  expect(t.early).toBeGreaterThan(0);
  expect(t.episodes).toBeLessThanOrEqual(t.base);
  // The negative control: peeking breaks the statement the sequence keeps.
  expect(peek.normalHeld / peek.stages).toBeLessThan(1 - deltaConf);
}
