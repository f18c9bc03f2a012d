/**
 * The information-geometric gain of docs/method.md §7.3 (its form: docs/certificate.md §11):
 * G ≈ κ√δ̄ − a·δ̄, with
 *   κ = √(2 gᵀ(F+εI)⁻¹g)        g = ∇θ of the surrogate at θ_cur, F = Fisher on visited states
 *   a = L_loc / λ_min(F+εI)     L_loc = ‖g(θ_new) − g(θ_cur)‖ / ‖θ_new − θ_cur‖ (measured smoothness)
 * Both come from one Lanczos run started from g with Fisher-vector products (never forming F):
 * gᵀ(F+εI)⁻¹g from the tridiagonal's (1,1) inverse entry (equal to conjugate gradient's answer
 * after as many steps), and λ_min as its smallest Ritz value. For a softmax policy g lies in the
 * range of F (each state's block sums to zero), so the Krylov space avoids F's null directions
 * (logit shifts, unvisited states) and λ_min is the smallest curvature the update can feel.
 *
 * Not here: the agents' gradients (each AgentPolicy supplies g and F·v).
 */
import { addScaled, divided, dot } from '../core/vec';

export const FISHER_EPS = 1e-6;

/** The least weight of g on a Ritz vector for its Ritz value to count in λ_min (geometryAt). */
const RITZ_WEIGHT = 1e-12;

export type MatVec = (v: Float64Array) => Promise<Float64Array>;

/** Eigenvalues of a small symmetric matrix (cyclic Jacobi rotations). */
export function symmetricEigenvalues(a: number[][]): number[] {
  return symmetricEigen(a).values.slice().sort((x, y) => x - y);
}

/** Eigenvalues and eigenvectors (columns of `vectors`) of a small symmetric matrix (cyclic Jacobi rotations). */
export function symmetricEigen(a: number[][]): { values: number[]; vectors: number[][] } {
  const n = a.length;
  const m = a.map((row) => [...row]);
  const v = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j): number => (i === j ? 1 : 0)));
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
        for (let k = 0; k < n; k++) {
          const vkp = v[k]![p]!;
          const vkq = v[k]![q]!;
          v[k]![p] = c * vkp - s * vkq;
          v[k]![q] = s * vkp + c * vkq;
        }
      }
  }
  return { values: m.map((row, i) => row[i]!), vectors: v };
}

/** The Lanczos tridiagonal T = Qᵀ F Q on the Krylov space of `start` (full reorthogonalisation): its diagonal and off-diagonal. */
export interface Tridiagonal {
  readonly alpha: readonly number[];
  readonly beta: readonly number[];
}

/** `steps` Lanczos steps on F from `start` (one Fisher-vector product each; stops early on an invariant subspace). */
export async function lanczos(fvp: MatVec, start: Float64Array, steps: number): Promise<Tridiagonal> {
  const norm0 = Math.sqrt(dot(start, start));
  const alpha: number[] = [];
  const beta: number[] = [];
  if (norm0 === 0) return { alpha, beta };
  const Q: Float64Array[] = [divided(start, norm0)];
  for (let k = 0; k < Math.min(steps, start.length); k++) {
    const w = await fvp(Q[k]!);
    const a = dot(w, Q[k]!);
    alpha.push(a);
    // A residual below 1e-6 of F's scale is the Krylov space running out, not a new direction:
    // normalised as if it were one, its error brings in a direction g never touched, such as F's
    // null direction.
    orthogonalise(w, Q);
    const b = Math.sqrt(dot(w, w));
    if (b < 1e-6 * Math.max(1, Math.abs(a))) break;
    if (k + 1 < steps) {
      beta.push(b);
      Q.push(divided(w, b));
    }
  }
  return { alpha, beta: beta.slice(0, Math.max(0, alpha.length - 1)) };
}

/** w ← w − (w·q) q for every Lanczos vector q, twice ("twice is enough"). */
function orthogonalise(w: Float64Array, Q: readonly Float64Array[]): void {
  for (let pass = 0; pass < 2; pass++) {
    for (const q of Q) addScaled(w, w, -dot(w, q), q);
  }
}

/** e₁ᵀ (T + εI)⁻¹ e₁ for a tridiagonal T (the Thomas algorithm; T + εI is positive definite). */
function firstOfInverse(t: Tridiagonal, eps: number): number {
  const k = t.alpha.length;
  // Solve (T + εI) y = e₁: forward sweep, then back substitution.
  const c = new Float64Array(k);
  const d = new Float64Array(k);
  for (let i = 0; i < k; i++) {
    const diag = t.alpha[i]! + eps - (i > 0 ? t.beta[i - 1]! * c[i - 1]! : 0);
    c[i] = i + 1 < k ? t.beta[i]! / diag : 0;
    d[i] = ((i === 0 ? 1 : 0) - (i > 0 ? t.beta[i - 1]! * d[i - 1]! : 0)) / diag;
  }
  let y = d[k - 1]!;
  for (let i = k - 2; i >= 0; i--) y = d[i]! - c[i]! * y;
  return y;
}

export interface GeometryBefore {
  /** g at θ_cur. */
  readonly g: Float64Array;
  readonly kappa: number;
  /** λ_min(F+εI). */
  readonly lambdaMin: number;
}

/**
 * κ and λ_min at θ_cur, from the surrogate gradient g and `iters` Fisher-vector products — ONE
 * Lanczos run from g serves both. With Q the Lanczos basis of the Krylov space K_k(F, g) and
 * T = QᵀFQ, the Galerkin solution of (F+εI)x = g on that space (what k steps of conjugate
 * gradient compute, in exact arithmetic) gives gᵀx = ‖g‖²·e₁ᵀ(T+εI)⁻¹e₁, so
 *   κ = √(2‖g‖² e₁ᵀ(T+εI)⁻¹e₁),   λ_min = max(0, min eig T) + ε.
 * Each product costs a language agent two forwards and one backward, so its presets use few.
 */
export async function geometryAt(g: Float64Array, fvp: MatVec, iters = 50): Promise<GeometryBefore> {
  const gg = dot(g, g);
  if (gg === 0 || iters < 1) return { g, kappa: 0, lambdaMin: FISHER_EPS };
  const t = await lanczos(fvp, g, iters);
  const kappa = Math.sqrt(Math.max(0, 2 * gg * firstOfInverse(t, FISHER_EPS)));
  const k = t.alpha.length;
  const T = Array.from({ length: k }, (_, i) => Array.from({ length: k }, (_, j) => (i === j ? t.alpha[i]! : Math.abs(i - j) === 1 ? t.beta[Math.min(i, j)]! : 0)));
  // The smallest Ritz value whose Ritz vector g reaches (weight e₁ᵀy squared): a value carried in
  // only by rounding error in the last Lanczos vectors (F's null direction) has a weight near 0.
  const { values, vectors } = symmetricEigen(T);
  const seen = values.filter((_, j) => vectors[0]![j]! ** 2 > RITZ_WEIGHT);
  const lambdaMin = Math.max(0, Math.min(...(seen.length > 0 ? seen : values))) + FISHER_EPS;
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
