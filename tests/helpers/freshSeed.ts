/**
 * Fresh random inputs per run, replayable: `freshSeed` draws a run's seed (or takes $VAR to replay
 * one) and prints it with the command that replays it; `randF32` fills f32-exact uniforms in [−1, 1).
 * Used by tests/simd.test.ts and tests/threads.test.ts.
 * Not here: any tolerance or comparison.
 */
import type { Rng } from '../../src/core/rng';

/** $`envVar` when set, else a fresh seed; printed as "<file>: seed N (replay with VAR=N)". */
export function freshSeed(file: string, envVar: string): number {
  const env = process.env[envVar];
  const seed = env !== undefined ? Number(env) : Math.floor(Math.random() * 2 ** 31);
  console.log(`${file}: seed ${seed} (replay with ${envVar}=${seed})`);
  return seed;
}

/** n uniforms in [−1, 1), f32-exact. */
export function randF32(n: number, r: Rng): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = r.uniform() * 2 - 1;
  return a;
}
