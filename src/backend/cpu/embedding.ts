/**
 * Token embedding, CPU reference (llm.c `encoder_forward/backward` without the position table —
 * positions enter through RoPE): out[b,t,:] = wte[tokens[b,t], :].
 *
 * Shapes: B batch, T time, C channels, V vocabulary (rows of wte).
 *   tokens [B·T] int32 in [0, V),  wte [V × C],  out / dout [B × T × C]
 *
 * Not here: the tied LM head (that is `matmulForward` with weight = wte, OC = V).
 */
import type { FloatArray } from '../types';
import { checkEmbedding } from '../check';

/** out[b,t,c] = wte[tokens[b,t], c]. Overwrites `out`. Throws RangeError on a token outside [0, V). */
export function embeddingForward(out: FloatArray, tokens: Int32Array, wte: FloatArray, B: number, T: number, C: number): void {
  checkEmbedding('embeddingForward', 'out', out, tokens, B, T, C);
  const N = B * T;
  const V = Math.floor(wte.length / Math.max(1, C));
  for (let n = 0; n < N; n++) {
    const tok = tokens[n]!;
    if (tok < 0 || tok >= V) throw new RangeError(`embeddingForward: token ${tok} at row ${n} is outside [0, ${V})`);
    const src = tok * C;
    const dst = n * C;
    for (let c = 0; c < C; c++) out[dst + c] = wte[src + c]!;
  }
}

/** ∂/∂wte: dwte[tokens[b,t], c] += dout[b,t,c]. Accumulates. */
export function embeddingBackward(dwte: FloatArray, dout: FloatArray, tokens: Int32Array, B: number, T: number, C: number): void {
  checkEmbedding('embeddingBackward', 'dout', dout, tokens, B, T, C);
  const N = B * T;
  const V = Math.floor(dwte.length / Math.max(1, C));
  for (let n = 0; n < N; n++) {
    const tok = tokens[n]!;
    if (tok < 0 || tok >= V) throw new RangeError(`embeddingBackward: token ${tok} at row ${n} is outside [0, ${V})`);
    const dst = tok * C;
    const src = n * C;
    for (let c = 0; c < C; c++) dwte[dst + c]! += dout[src + c]!;
  }
}
