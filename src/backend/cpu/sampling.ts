/**
 * Batched sampling of the next token from logits with temperature and top-k, CPU reference, on the
 * counter-based RNG (Philox4x32-10, src/core/rng.ts) so a token depends only on (seed, stream,
 * step, sequence, logits): same seed ⇒ same tokens, in any batch order or split. The WebGPU
 * sampler reproduces this layout bit for bit. `samplerLogProbs` is the log of the same
 * distribution, which an importance ratio needs to be unbiased (docs/certificate.md §3.1).
 *
 * Shapes: B rows (sequences), V vocabulary.  logits [B × V],  out [B] int32.
 *
 * Not here: repetition penalties, top-p, stop tokens (the rollout decides those).
 */
import { philox4x32, sampleCategorical, u32ToUniform } from '../../core/rng';
import type { FloatArray, SampleParams } from '../types';
import { checkSample, checkSamplerLogProbs } from '../check';

const block = new Uint32Array(4);

/**
 * The uniform used for sequence `seq` at decoding `step`:
 *   key = (seed, stream),  counter = (step, seq, 0, 0),  u = (word0 >>> 8) · 2⁻²⁴ ∈ [0, 1).
 */
export function samplerUniform(seed: number, stream: number, step: number, seq: number): number {
  philox4x32(step, seq, 0, 0, seed, stream, block);
  return u32ToUniform(block[0]!);
}

/** The first index of the largest of logits[off .. off + V). */
function argmax(logits: FloatArray, off: number, V: number): number {
  let best = 0;
  for (let v = 1; v < V; v++) if (logits[off + v]! > logits[off + best]!) best = v;
  return best;
}

/**
 * The sampler's keep set of the row at `off`, in kept[v] (1 kept, 0 not): the k largest logits,
 * ties to the lower index; all V when `order` is null (k ≥ V). One rule for the sampler and its
 * log-probabilities, so a ratio is taken over exactly the tokens the sampler could draw.
 */
function keepSet(kept: Uint8Array, order: Int32Array | null, logits: FloatArray, off: number, V: number, k: number): void {
  if (order === null) {
    kept.fill(1);
    return;
  }
  for (let v = 0; v < V; v++) order[v] = v;
  order.sort((x, y) => logits[off + y]! - logits[off + x]! || x - y);
  kept.fill(0);
  for (let i = 0; i < k; i++) kept[order[i]!] = 1;
}

/**
 * out[b] = a token drawn from softmax(top-k(z_b)/τ) with the Philox uniform of (step, seq0 + b):
 *   τ = 0 or top-k = 1: argmax z (lowest index on ties); u is not used.
 *   keep set S: v is kept iff #{w : z_w > z_v or (z_w = z_v and w < v)} < k (k ≤ 0 or ≥ V: all);
 *   p_v = exp((z_v − max_S z)/τ) on S, else 0; the first v with u·Σp < Σ_{w ≤ v} p_w (core
 *   `sampleCategorical`; if rounding leaves none, the last v with p_v > 0).
 * p is computed in f64; an f32 GPU sampler may differ only when u·Σp is within f32 rounding of a
 * CDF boundary.
 */
export function sampleForward(out: Int32Array, logits: FloatArray, B: number, V: number, sp: SampleParams): void {
  const k = checkSample(out, logits, B, V, sp);
  const seq0 = sp.seq0 ?? 0;
  const tau = sp.temperature;
  const p = new Float64Array(V);
  const order = k < V ? new Int32Array(V) : null;
  const kept = new Uint8Array(V);
  for (let b = 0; b < B; b++) {
    const off = b * V;
    if (tau === 0 || k === 1) {
      out[b] = argmax(logits, off, V);
      continue;
    }
    keepSet(kept, order, logits, off, V, k);
    let m = -Infinity;
    for (let v = 0; v < V; v++) if (kept[v] && logits[off + v]! > m) m = logits[off + v]!;
    const invT = 1 / tau;
    for (let v = 0; v < V; v++) p[v] = kept[v] ? Math.exp((logits[off + v]! - m) * invT) : 0;
    out[b] = sampleCategorical(p, samplerUniform(sp.seed, sp.stream, sp.step, seq0 + b));
  }
}

/**
 * out[n, v] = log P(sampleForward draws v | logits row n) at τ > 0 and top-k: the keep set S is
 * chosen by the same rule (k largest, ties to the lower index; k ≤ 0 or k ≥ V keeps all), then
 * log p_v = z_v/τ − log Σ_{w∈S} exp(z_w/τ) on S and −Infinity off it; k = 1 is the argmax, with
 * probability 1. In f64 (the same max-shifted form as the full log-softmax). Overwrites `out`.
 */
export function samplerLogProbs(out: FloatArray, logits: FloatArray, N: number, V: number, temperature: number, topK: number): void {
  const k = checkSamplerLogProbs(out, logits, N, V, temperature, topK);
  const invT = 1 / temperature;
  const order = k < V ? new Int32Array(V) : null;
  const kept = new Uint8Array(V);
  for (let n = 0; n < N; n++) {
    const off = n * V;
    if (k === 1) {
      const best = argmax(logits, off, V);
      for (let v = 0; v < V; v++) out[off + v] = v === best ? 0 : -Infinity;
      continue;
    }
    keepSet(kept, order, logits, off, V, k);
    let m = -Infinity;
    for (let v = 0; v < V; v++) if (kept[v] && logits[off + v]! * invT > m) m = logits[off + v]! * invT;
    let s = 0;
    for (let v = 0; v < V; v++) if (kept[v]) s += Math.exp(logits[off + v]! * invT - m);
    const lse = m + Math.log(s);
    for (let v = 0; v < V; v++) out[off + v] = kept[v] ? logits[off + v]! * invT - lse : -Infinity;
  }
}
