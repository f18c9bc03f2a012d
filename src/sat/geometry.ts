/**
 * The information-geometric gain of docs/method.md §7.3 (its form: docs/certificate.md §11):
 * G ≈ κ√δ̄ − a·δ̄, with
 *   κ = √(2 gᵀ(F+εI)⁻¹g)        g = ∇θ of the surrogate at θ_cur, F = Fisher on visited states
 *   a = L_loc / λ_min(F+εI)     L_loc = ‖g(θ_new) − g(θ_cur)‖ / ‖θ_new − θ_cur‖ (measured smoothness)
 * gᵀ(F+εI)⁻¹g is solved by conjugate gradient with Fisher-vector products (never forming F), and
 * λ_min by Lanczos started from g: for a softmax policy g lies in the range of F (each state's
 * block sums to zero), so the Krylov space avoids F's null directions (logit shifts, unvisited
 * states) and λ_min is the smallest curvature the update can actually feel.
 *
 * Not here: the agents' gradients (each AgentPolicy supplies g and F·v).
 */

export const FISHER_EPS = 1e-6;

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

export type MatVec = (v: Float64Array) => Promise<Float64Array>;

/** Solves (F+εI)x = b by conjugate gradient; returns x. */
export async function conjugateGradient(fvp: MatVec, b: Float64Array, eps = FISHER_EPS, maxIter = 50, tol = 1e-12): Promise<Float64Array> {
  const x = new Float64Array(b.length);
  const r = b.slice();
  const p = b.slice();
  let rr = dot(r, r);
  for (let it = 0; it < maxIter && rr > tol; it++) {
    const fp = await fvp(p);
    for (let i = 0; i < fp.length; i++) fp[i]! += eps * p[i]!;
    const alpha = rr / dot(p, fp);
    for (let i = 0; i < x.length; i++) {
      x[i]! += alpha * p[i]!;
      r[i]! -= alpha * fp[i]!;
    }
    const rrNew = dot(r, r);
    for (let i = 0; i < p.length; i++) p[i] = r[i]! + (rrNew / rr) * p[i]!;
    rr = rrNew;
  }
  return x;
}

/** Eigenvalues of a small symmetric matrix (cyclic Jacobi rotations). */
export function symmetricEigenvalues(a: number[][]): number[] {
  const n = a.length;
  const m = a.map((row) => [...row]);
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0;
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) off += m[i]![j]! ** 2;
    if (off < 1e-22) break;
    for (let p = 0; p < n; p++)
      for (let q = p + 1; q < n; q++) {
        const apq = m[p]![q]!;
        if (Math.abs(apq) < 1e-300) continue;
        const theta = (m[q]![q]! - m[p]![p]!) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = m[k]![p]!;
          const akq = m[k]![q]!;
          m[k]![p] = c * akp - s * akq;
          m[k]![q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = m[p]![k]!;
          const aqk = m[q]![k]!;
          m[p]![k] = c * apk - s * aqk;
          m[q]![k] = s * apk + c * aqk;
        }
      }
  }
  return m.map((row, i) => row[i]!).sort((x, y) => x - y);
}

/** Smallest Ritz value of F on the Krylov space of `start` (Lanczos with full reorthogonalisation). */
export async function lanczosMinEig(fvp: MatVec, start: Float64Array, steps = 20): Promise<number> {
  const norm0 = Math.sqrt(dot(start, start));
  if (norm0 === 0) return 0;
  const Q: Float64Array[] = [start.map((x) => x / norm0)];
  const alpha: number[] = [];
  const beta: number[] = [];
  for (let k = 0; k < Math.min(steps, start.length); k++) {
    const w = await fvp(Q[k]!);
    const a = dot(w, Q[k]!);
    alpha.push(a);
    for (const q of Q) {
      const c = dot(w, q);
      for (let i = 0; i < w.length; i++) w[i]! -= c * q[i]!;
    }
    const b = Math.sqrt(dot(w, w));
    if (b < 1e-10 * Math.max(1, Math.abs(a))) break;
    beta.push(b);
    Q.push(w.map((x) => x / b));
  }
  const k = alpha.length;
  const T = Array.from({ length: k }, (_, i) => Array.from({ length: k }, (_, j) => (i === j ? alpha[i]! : Math.abs(i - j) === 1 ? beta[Math.min(i, j)]! : 0)));
  return symmetricEigenvalues(T)[0]!;
}

export interface GeometryBefore {
  /** g at θ_cur. */
  readonly g: Float64Array;
  readonly kappa: number;
  /** λ_min(F+εI). */
  readonly lambdaMin: number;
}

/**
 * κ and λ_min at θ_cur, from the surrogate gradient g and Fisher-vector products, with at most
 * `iters` products for CG and as many Lanczos steps (each product costs a language agent two
 * forward/backward passes, so the CLI's language presets use few).
 */
export async function geometryAt(g: Float64Array, fvp: MatVec, iters = 50): Promise<GeometryBefore> {
  const gg = dot(g, g);
  if (gg === 0) return { g, kappa: 0, lambdaMin: FISHER_EPS };
  const x = await conjugateGradient(fvp, g, FISHER_EPS, iters);
  const kappa = Math.sqrt(Math.max(0, 2 * dot(g, x)));
  const lambdaMin = Math.max(0, await lanczosMinEig(fvp, g, Math.min(20, iters))) + FISHER_EPS;
  return { g, kappa, lambdaMin };
}

/** a = L_loc/λ_min and the predicted gain κ√δ̄ − aδ̄, given the gradients before/after and the parameter move. */
export function geometricGain(before: GeometryBefore, gAfter: Float64Array, paramsBefore: Float64Array, paramsAfter: Float64Array, klMean: number): { a: number; lLoc: number; gain: number } {
  let dg = 0;
  let dp = 0;
  for (let i = 0; i < gAfter.length; i++) {
    dg += (gAfter[i]! - before.g[i]!) ** 2;
    dp += (paramsAfter[i]! - paramsBefore[i]!) ** 2;
  }
  const lLoc = dp > 0 ? Math.sqrt(dg / dp) : 0;
  const a = lLoc / before.lambdaMin;
  return { a, lLoc, gain: before.kappa * Math.sqrt(klMean) - a * klMean };
}
