/**
 * The geometric gain's κ and λ_min (src/sat/geometry.ts `geometryAt`: one Lanczos run from g) on
 * fresh random Fisher matrices with known spectra, against two independent twins written here:
 *   - the exact answer from the spectrum: F = U diag(λ) Uᵀ, g = U c, so
 *     κ = √(2 Σ c_i² / (λ_i + ε)) and λ_min = the smallest λ_i with c_i ≠ 0 (+ ε), when the
 *     Krylov space is the whole reachable space (iters ≥ n);
 *   - k steps of conjugate gradient on (F + εI)x = g for κ with iters = k < n, which the
 *     Lanczos–Galerkin formula equals in exact arithmetic.
 * F has a null direction g does not touch (as a softmax Fisher's logit shifts), which λ_min
 * must ignore.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { FISHER_EPS, geometryAt } from '../src/sat/geometry';

/** Fresh each run; GEOMETRY_SEED=<n> replays one (the suite's name prints it). */
const seed = process.env.GEOMETRY_SEED !== undefined ? Number(process.env.GEOMETRY_SEED) : Math.floor(Math.random() * 2 ** 31);

/** A random orthogonal n×n matrix (Gram–Schmidt on normal columns), column-major rows[i][j] = U_ij. */
function orthogonal(n: number, rng: Rng): number[][] {
  const cols: Float64Array[] = [];
  while (cols.length < n) {
    const v = Float64Array.from({ length: n }, () => rng.normal());
    for (const c of cols) {
      let d = 0;
      for (let i = 0; i < n; i++) d += v[i]! * c[i]!;
      for (let i = 0; i < n; i++) v[i]! -= d * c[i]!;
    }
    const norm = Math.hypot(...v);
    if (norm < 1e-6) continue;
    cols.push(v.map((x) => x / norm));
  }
  return Array.from({ length: n }, (_, i) => cols.map((c) => c[i]!));
}

function problem(n: number, rng: Rng) {
  const U = orthogonal(n, rng);
  const lambda = Array.from({ length: n }, (_, i) => (i === 0 ? 0 : 0.05 + rng.uniform() * 3)); // λ_0 = 0: a null direction
  const c = Array.from({ length: n }, (_, i) => (i === 0 ? 0 : 0.2 + rng.uniform())); // g has no component on it
  const g = Float64Array.from({ length: n }, (_, r) => U[r]!.reduce((s, u, i) => s + u * c[i]!, 0));
  let calls = 0;
  const fvp = async (v: Float64Array): Promise<Float64Array> => {
    calls++;
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      let ui = 0; // (Uᵀv)_i
      for (let r = 0; r < n; r++) ui += U[r]![i]! * v[r]!;
      for (let r = 0; r < n; r++) out[r]! += U[r]![i]! * lambda[i]! * ui;
    }
    return out;
  };
  return { g, fvp, lambda, c, calls: () => calls };
}

/** k steps of conjugate gradient on (F + εI)x = g (the textbook recurrence): the twin for iters < n. */
async function cgKappa(fvp: (v: Float64Array) => Promise<Float64Array>, g: Float64Array, k: number): Promise<number> {
  const n = g.length;
  const x = new Float64Array(n);
  const r = g.slice();
  const p = g.slice();
  let rr = r.reduce((s, v) => s + v * v, 0);
  for (let it = 0; it < k; it++) {
    const fp = await fvp(p);
    for (let i = 0; i < n; i++) fp[i]! += FISHER_EPS * p[i]!;
    const alpha = rr / p.reduce((s, v, i) => s + v * fp[i]!, 0);
    for (let i = 0; i < n; i++) {
      x[i]! += alpha * p[i]!;
      r[i]! -= alpha * fp[i]!;
    }
    const rrNew = r.reduce((s, v) => s + v * v, 0);
    for (let i = 0; i < n; i++) p[i] = r[i]! + (rrNew / rr) * p[i]!;
    rr = rrNew;
  }
  return Math.sqrt(2 * g.reduce((s, v, i) => s + v * x[i]!, 0));
}

describe(`geometryAt (seed ${seed})`, () => {
  it('with the whole Krylov space: κ and λ_min equal the spectrum\'s, the null direction ignored', async () => {
    const rng = new Rng(seed, [1]);
    for (let trial = 0; trial < 5; trial++) {
      const n = 6 + rng.int(10);
      const { g, fvp, lambda, c, calls } = problem(n, rng);
      const geo = await geometryAt(g, fvp, n + 5);
      const kappa = Math.sqrt(2 * c.reduce((s, ci, i) => s + (ci * ci) / (lambda[i]! + FISHER_EPS), 0));
      const lmin = Math.min(...lambda.filter((_, i) => c[i]! !== 0)) + FISHER_EPS;
      expect(Math.abs(geo.kappa - kappa) / kappa, `κ, n = ${n}`).toBeLessThan(1e-8);
      expect(Math.abs(geo.lambdaMin - lmin) / lmin, `λ_min, n = ${n}`).toBeLessThan(1e-8);
      expect(calls()).toBeLessThanOrEqual(n); // one Lanczos run: at most n products, none for a second solver
    }
  });

  it('a Ritz value that only rounding error carries (F\'s null direction) does not become λ_min: a seed that drew one', async () => {
    const rng = new Rng(445631691, [1]); // its 5th problem (n = 13) drew a spurious Ritz value near 0
    for (let trial = 0; trial < 5; trial++) {
      const n = 6 + rng.int(10);
      const { g, fvp, lambda, c } = problem(n, rng);
      const geo = await geometryAt(g, fvp, n + 5);
      const lmin = Math.min(...lambda.filter((_, i) => c[i]! !== 0)) + FISHER_EPS;
      expect(Math.abs(geo.lambdaMin - lmin) / lmin, `λ_min, n = ${n}`).toBeLessThan(1e-8);
    }
  });

  it('with fewer steps than dimensions: κ equals conjugate gradient after as many steps', async () => {
    const rng = new Rng(seed, [2]);
    for (let trial = 0; trial < 5; trial++) {
      const n = 12 + rng.int(8);
      const k = 2 + rng.int(4);
      const { g, fvp, calls } = problem(n, rng);
      const geo = await geometryAt(g, fvp, k);
      expect(calls()).toBe(k);
      const twin = await cgKappa(fvp, g, k);
      expect(Math.abs(geo.kappa - twin) / twin, `n = ${n}, k = ${k}`).toBeLessThan(1e-8);
      expect(geo.lambdaMin).toBeGreaterThan(0);
    }
  });

  it('g = 0 or no products asked: κ = 0, λ_min = ε, no product made', async () => {
    const { fvp, calls } = problem(5, new Rng(seed, [3]));
    expect(await geometryAt(new Float64Array(5), fvp, 10)).toMatchObject({ kappa: 0, lambdaMin: FISHER_EPS });
    expect(await geometryAt(Float64Array.of(1, 0, 0, 0, 0), fvp, 0)).toMatchObject({ kappa: 0, lambdaMin: FISHER_EPS });
    expect(calls()).toBe(0);
  });
});
