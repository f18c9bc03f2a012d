/**
 * One categorical distribution given by its logits (a state's policy over a small action set, in
 * f64): log-sum-exp, log-softmax, softmax, and the exact KL from logits or from probabilities, for
 * the tabular agent and Stage-0. Max-shifted, so no exp() sees a positive argument; a −Infinity
 * logit means probability 0 (at least one must be finite). With an `out` array nothing is
 * allocated.
 *
 * Not here: the language model's batched rows over a vocabulary (src/backend/cpu/softmax.ts),
 * temperature, sampling, gradients.
 */

/** Logits or log-probabilities of one categorical distribution. */
export type Logits = Float64Array | readonly number[];
/** A writable output buffer. */
export type OutArray = Float64Array | number[];

function checkSameLength(a: ArrayLike<number>, b: ArrayLike<number>, what: string): void {
  if (a.length !== b.length) {
    throw new RangeError(`${what}: lengths differ (${a.length} vs ${b.length})`);
  }
}

/**
 * log Σ_i exp(z_i), by the max-shift identity in the header. Returns −Infinity for an empty
 * input or one whose logits are all −Infinity (no mass anywhere).
 */
export function logSumExp(logits: Logits): number {
  const n = logits.length;
  let m = -Infinity;
  for (let i = 0; i < n; i++) {
    const z = logits[i]!;
    if (z > m) m = z;
  }
  if (m === -Infinity) return -Infinity;
  if (m === Infinity) return Infinity;
  let s = 0;
  for (let i = 0; i < n; i++) s += Math.exp(logits[i]! - m);
  return m + Math.log(s);
}

/**
 * log π_i = z_i − log Σ_j exp(z_j). Writes into `out` when given (it may be `logits` itself, for an
 * in-place update) and returns it; otherwise returns a new Float64Array.
 */
export function logSoftmax(logits: Logits): Float64Array;
export function logSoftmax<T extends OutArray>(logits: Logits, out: T): T;
export function logSoftmax(logits: Logits, out?: OutArray): OutArray {
  const res = out ?? new Float64Array(logits.length);
  checkSameLength(logits, res, 'logSoftmax(logits, out)');
  const lse = logSumExp(logits); // computed before any write, so out === logits is safe
  for (let i = 0; i < logits.length; i++) res[i] = logits[i]! - lse;
  return res;
}

/**
 * π_i = exp(z_i − m) / Σ_j exp(z_j − m), m = max_j z_j (the same max shift). Writes into `out`
 * when given (it may be `logits` itself) and returns it; otherwise returns a new Float64Array.
 */
export function softmax(logits: Logits): Float64Array;
export function softmax<T extends OutArray>(logits: Logits, out: T): T;
export function softmax(logits: Logits, out?: OutArray): OutArray {
  const res = out ?? new Float64Array(logits.length);
  checkSameLength(logits, res, 'softmax(logits, out)');
  const n = logits.length;
  let m = -Infinity;
  for (let i = 0; i < n; i++) {
    const z = logits[i]!;
    if (z > m) m = z;
  }
  let s = 0;
  for (let i = 0; i < n; i++) {
    const e = Math.exp(logits[i]! - m);
    res[i] = e;
    s += e;
  }
  const inv = 1 / s;
  for (let i = 0; i < n; i++) res[i] = res[i]! * inv;
  return res;
}

/**
 * KL(p‖q) = Σ_i p_i (log p_i − log q_i), with log p = lp − LSE(lp) and log q = lq − LSE(lq).
 *
 * `lp` and `lq` may be log-probabilities or unnormalised logits: the normalisers are recomputed
 * (they are 0 for log-probs, so nothing changes). Conventions: a term with p_i = 0 contributes 0
 * (0·log 0 = 0, even where q_i = 0); a term with p_i > 0 and q_i = 0 makes the result +Infinity.
 * Because KL ≥ 0 (Gibbs' inequality), a result that rounding pushed a few ulps below 0 is returned
 * as 0. No allocation.
 */
export function klFromLogits(lp: Logits, lq: Logits): number {
  checkSameLength(lp, lq, 'klFromLogits(lp, lq)');
  const lseP = logSumExp(lp);
  const lseQ = logSumExp(lq);
  let kl = 0;
  for (let i = 0; i < lp.length; i++) {
    const logP = lp[i]! - lseP;
    if (logP === -Infinity) continue; // p_i = 0: 0·log(0/q_i) = 0
    const logQ = lq[i]! - lseQ;
    if (logQ === -Infinity) return Infinity; // p_i > 0, q_i = 0
    kl += Math.exp(logP) * (logP - logQ);
  }
  return kl > 0 ? kl : 0;
}

/**
 * KL(p‖q) = Σ_i p_i log(p_i / q_i) from probabilities (assumed each to sum to 1; not renormalised).
 * Conventions as in klFromLogits: 0·log(0/q) = 0, and p_i > 0 with q_i = 0 gives +Infinity.
 * Clamped at 0 from below (rounding only). No allocation.
 */
export function klProbs(p: ArrayLike<number>, q: ArrayLike<number>): number {
  checkSameLength(p, q, 'klProbs(p, q)');
  let kl = 0;
  for (let i = 0; i < p.length; i++) {
    const pi = p[i]!;
    if (pi === 0) continue;
    const qi = q[i]!;
    if (qi === 0) return Infinity;
    kl += pi * Math.log(pi / qi);
  }
  return kl > 0 ? kl : 0;
}
