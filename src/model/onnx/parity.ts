/**
 * The seating check of a trainable ONNX seat: the same .onnx file run by onnxruntime-web
 * (ort.ts) and our model on the file's exact values (llama.ts `exact`, f32, on the CPU backend)
 * must give the same next-token log-probabilities on the preset's prompts. The measure is the
 * largest |log p_onnx(a | prompt) − log p_ours(a | prompt)| over every token a of the vocabulary
 * and every prompt, in nats, at temperature 1.
 *
 * Tolerance ONNX_PARITY_TOLERANCE = 0.01 nats: onnxruntime sums in f32 and we in f64, which moves
 * a log-prob by ~1e-6 on the tests' tiny models and by more on deep wide ones (each of the
 * layers' sums adds a few f32 ulps × √width); a mapping error (a RoPE pair order, a K/V head
 * grouping, a transposed matrix, a wrong zero point) moves it by 0.1 … 10. The check runs on the
 * file's own values, not on the Q8/Q4 storage the user picked: storage is a choice, not an error
 * (its drift is docs/models.md's).
 *
 * Not here: which prompts (src/sat/onnxSeat.ts takes them from the preset), the load (llama.ts).
 */
import { cpuBackend } from '../../backend/cpu';
import { ConfigError } from '../../core/errors';
import type { ModelConfig } from '../config';
import { Model } from '../model';
import type { ModelWeights } from '../weights';
import type { OrtDecoder } from './ort';

export const ONNX_PARITY_TOLERANCE = 0.01;

export interface OnnxParity {
  readonly prompts: number;
  /** Largest |Δ log p| in nats over prompts × vocabulary. */
  readonly maxAbs: number;
  /** Which prompt and token it was at. */
  readonly at: { readonly prompt: number; readonly token: number };
  readonly tolerance: number;
}

function logSoftmax(z: ArrayLike<number>, off: number, V: number): Float64Array {
  let m = -Infinity;
  for (let i = 0; i < V; i++) m = Math.max(m, z[off + i]!);
  let s = 0;
  for (let i = 0; i < V; i++) s += Math.exp(z[off + i]! - m);
  const ls = m + Math.log(s);
  const out = new Float64Array(V);
  for (let i = 0; i < V; i++) out[i] = z[off + i]! - ls;
  return out;
}

/** Measures the difference (header) on `prompts` (each shorter than cfg.maxSeq). */
export async function onnxParity(dec: OrtDecoder, cfg: ModelConfig, exact: ModelWeights, prompts: readonly Int32Array[]): Promise<OnnxParity> {
  const model = new Model(cpuBackend, cfg, exact, { trainable: 'none' });
  const V = cfg.vocab;
  let maxAbs = 0;
  let at = { prompt: 0, token: 0 };
  try {
    for (const [k, p] of prompts.entries()) {
      const ours = model.forward(p, 1, p.length);
      const a = logSoftmax(ours, (p.length - 1) * V, V);
      const z = await dec.lastLogits(p);
      if (z.length !== V) throw new ConfigError('onnx', z.length, `onnxruntime returned ${z.length} logits per position, the model ${V}; the graph's vocabulary is not config.json's`);
      const b = logSoftmax(z, 0, V);
      for (let i = 0; i < V; i++) {
        const d = Math.abs(a[i]! - b[i]!);
        if (!(d <= maxAbs)) {
          maxAbs = Number.isNaN(d) ? Infinity : d;
          at = { prompt: k, token: i };
        }
      }
    }
  } finally {
    model.dispose();
  }
  return { prompts: prompts.length, maxAbs, at, tolerance: ONNX_PARITY_TOLERANCE };
}

/** "largest |Δ log p| 3.1e-6 nats over 4 prompts (tolerance 0.01)". */
export function describeParity(p: OnnxParity): string {
  return `largest |Δ log p| ${p.maxAbs.toExponential(2)} nats over ${p.prompts} prompts × the vocabulary (tolerance ${p.tolerance})`;
}

/** ConfigError with the numbers when the difference is past the tolerance. */
export function checkParity(p: OnnxParity, file: string): void {
  if (p.maxAbs > p.tolerance) {
    throw new ConfigError(
      'onnx',
      p.maxAbs,
      `${file}: onnxruntime-web and the model read from it disagree — the largest difference of next-token log-probabilities is ${p.maxAbs.toExponential(3)} nats (prompt ${p.at.prompt}, token ${p.at.token}), past the tolerance of ${p.tolerance} nats: the graph computes something the mapping does not (docs/models.md lists what is mapped). Seat it frozen instead, or use another file of the folder.`,
    );
  }
}
