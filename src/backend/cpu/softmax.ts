/**
 * Rows of log-probabilities over the vocabulary, their gather at target ids, and the exact
 * per-state KL between two policies given by logits — CPU reference, at temperature τ > 0 (ratios
 * and KL use the sampling temperature, docs/method.md §5.4, §9b):
 *   lp_v = z_v/τ − log Σ_u exp(z_u/τ)   (max-shifted)      dz_v += (dlp_v − p_v Σ_u dlp_u) / τ
 *   gather: out_n = lp[n, target_n]                         dlp[n, target_n] += dout_n
 *   KL_n = Σ_v p_v (lp_v − lq_v)  (p_v = 0 adds 0)          ∂KL/∂zp_v = p_v ((lp_v − lq_v) − KL)/τ,
 *                                                           ∂KL/∂zq_v = (q_v − p_v)/τ
 * `crossEntropy` is gather∘logSoftmax composed: the twin of the WebGPU one-dispatch kernel.
 *
 * Shapes: N rows (usually B·T), V vocabulary.
 *   logits, logp, dlogits, dlogp [N × V];  targets [N] int32 in [0, V);  KL, gathered [N]
 *
 * Not here: one small f64 distribution (src/sat/categorical.ts), sampling (sampling.ts), the
 * clipped objective (objective.ts).
 */
import type { FloatArray } from '../types';
import { checkGatherBackward, checkGatherForward, checkKlBackward, checkKlForward, checkLogSoftmaxBackward, checkLogSoftmaxForward } from '../check';

/** log Σ_v exp(z[off+v]·invT), max-shifted. */
export function rowLogSumExp(z: FloatArray, off: number, V: number, invT: number): number {
  let m = -Infinity;
  for (let v = 0; v < V; v++) {
    const x = z[off + v]! * invT;
    if (x > m) m = x;
  }
  if (m === -Infinity || m === Infinity) return m;
  let s = 0;
  for (let v = 0; v < V; v++) s += Math.exp(z[off + v]! * invT - m);
  return m + Math.log(s);
}

/** logp = log_softmax(logits / τ) per row. Overwrites `out` (which may be `logits`). */
export function logSoftmaxForward(out: FloatArray, logits: FloatArray, N: number, V: number, temperature = 1): void {
  checkLogSoftmaxForward(out, logits, N, V, temperature);
  const invT = 1 / temperature;
  for (let n = 0; n < N; n++) {
    const off = n * V;
    const lse = rowLogSumExp(logits, off, V, invT);
    for (let v = 0; v < V; v++) out[off + v] = logits[off + v]! * invT - lse;
  }
}

/** dlogits += (dlogp − p Σ dlogp)/τ per row. Accumulates. */
export function logSoftmaxBackward(dlogits: FloatArray, dlogp: FloatArray, logp: FloatArray, N: number, V: number, temperature = 1): void {
  checkLogSoftmaxBackward(dlogits, dlogp, logp, N, V, temperature);
  const invT = 1 / temperature;
  for (let n = 0; n < N; n++) {
    const off = n * V;
    let s = 0;
    for (let v = 0; v < V; v++) s += dlogp[off + v]!;
    for (let v = 0; v < V; v++) dlogits[off + v]! += (dlogp[off + v]! - Math.exp(logp[off + v]!) * s) * invT;
  }
}

function checkTarget(op: string, t: number, n: number, V: number): void {
  if (!(t >= 0 && t < V)) throw new RangeError(`${op}: target ${t} at row ${n} is outside [0, ${V})`);
}

/** out[n] = logp[n, targets[n]]. Overwrites `out`. */
export function gatherForward(out: FloatArray, logp: FloatArray, targets: Int32Array, N: number, V: number): void {
  checkGatherForward(out, logp, targets, N, V);
  for (let n = 0; n < N; n++) {
    const t = targets[n]!;
    checkTarget('gatherForward', t, n, V);
    out[n] = logp[n * V + t]!;
  }
}

/** dlogp[n, targets[n]] += dout[n]. Accumulates. */
export function gatherBackward(dlogp: FloatArray, dout: FloatArray, targets: Int32Array, N: number, V: number): void {
  checkGatherBackward(dlogp, dout, targets, N, V);
  for (let n = 0; n < N; n++) {
    const t = targets[n]!;
    checkTarget('gatherBackward', t, n, V);
    dlogp[n * V + t]! += dout[n]!;
  }
}

/** out[n] = KL(softmax(zp_n/τ) ‖ softmax(zq_n/τ)), exact over V. Overwrites `out`. */
export function klForward(out: FloatArray, logitsP: FloatArray, logitsQ: FloatArray, N: number, V: number, temperature = 1): void {
  checkKlForward(out, logitsP, logitsQ, N, V, temperature);
  const invT = 1 / temperature;
  for (let n = 0; n < N; n++) out[n] = rowKl(logitsP, logitsQ, n * V, V, invT, rowLogSumExp(logitsP, n * V, V, invT), rowLogSumExp(logitsQ, n * V, V, invT));
}

/** Σ_v p_v (lp_v − lq_v) for one row at offset off, given both log-sum-exps of z·invT. */
export function rowKl(zp: FloatArray, zq: FloatArray, off: number, V: number, invT: number, lseP: number, lseQ: number): number {
  let kl = 0;
  for (let v = 0; v < V; v++) {
    const lp = zp[off + v]! * invT - lseP;
    const p = Math.exp(lp);
    if (p > 0) kl += p * (lp - (zq[off + v]! * invT - lseQ));
  }
  return kl;
}

/**
 * dlogitsP += dout_n ∂KL_n/∂zp and dlogitsQ += dout_n ∂KL_n/∂zq (header); null skips one.
 * Accumulates.
 */
export function klBackward(
  dlogitsP: FloatArray | null,
  dlogitsQ: FloatArray | null,
  dout: FloatArray,
  logitsP: FloatArray,
  logitsQ: FloatArray,
  N: number,
  V: number,
  temperature = 1,
): void {
  checkKlBackward(dlogitsP, dlogitsQ, dout, logitsP, logitsQ, N, V, temperature);
  const invT = 1 / temperature;
  for (let n = 0; n < N; n++) {
    const off = n * V;
    const lseP = rowLogSumExp(logitsP, off, V, invT);
    const lseQ = rowLogSumExp(logitsQ, off, V, invT);
    const g = dout[n]! * invT;
    if (dlogitsP !== null) {
      const kl = rowKl(logitsP, logitsQ, off, V, invT, lseP, lseQ);
      for (let v = 0; v < V; v++) {
        const lp = logitsP[off + v]! * invT - lseP;
        const p = Math.exp(lp);
        if (p > 0) dlogitsP[off + v]! += g * p * (lp - (logitsQ[off + v]! * invT - lseQ) - kl);
      }
    }
    if (dlogitsQ !== null) {
      for (let v = 0; v < V; v++) {
        const p = Math.exp(logitsP[off + v]! * invT - lseP);
        const q = Math.exp(logitsQ[off + v]! * invT - lseQ);
        dlogitsQ[off + v]! += g * (q - p);
      }
    }
  }
}

type LsfFn = (out: FloatArray, logits: FloatArray, N: number, V: number, temperature?: number) => void;
type LsbFn = (dlogits: FloatArray, dlogp: FloatArray, logp: FloatArray, N: number, V: number, temperature?: number) => void;

/** `crossEntropy` over given log-softmax forward / backward (the TS ones, or their SIMD twins in cpuBackend). */
export function crossEntropyWith(lsf: LsfFn, lsb: LsbFn) {
  return (lrow: FloatArray, dlogits: FloatArray | null, logits: FloatArray, targets: Int32Array, dout: FloatArray | null, N: number, V: number): void => {
    const ctor = logits instanceof Float64Array ? Float64Array : Float32Array;
    const logp = new ctor(N * V);
    lsf(logp, logits, N, V, 1);
    gatherForward(lrow, logp, targets, N, V);
    if (dlogits === null) return;
    if (dout === null) throw new TypeError('crossEntropy: dlogits needs dout');
    const dlogp = new ctor(N * V);
    gatherBackward(dlogp, dout, targets, N, V);
    lsb(dlogits, dlogp, logp, N, V, 1);
  };
}

/**
 * lrow[n] = log_softmax(logits)[n, targets[n]] (τ = 1) and, with dlogits, dlogits += the gradient
 * of Σ_n dout[n]·lrow[n] — logSoftmaxForward, gatherForward, gatherBackward and
 * logSoftmaxBackward composed (header). Overwrites lrow; accumulates into dlogits.
 */
export const crossEntropy = crossEntropyWith(logSoftmaxForward, logSoftmaxBackward);
