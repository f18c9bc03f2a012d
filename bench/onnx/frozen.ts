/**
 * The frozen ONNX teammate's sampling speed (`npm run bench`'s last row): the same random Llama
 * checkpoint (tests/helpers/hfCheckpoint.ts: d 128, 2 layers, 8 heads / 4 K/V heads, hidden 384,
 * vocab 272) as an f32 ONNX decoder with a KV cache (bench/onnx/decoder.ts) sampled by
 * onnxruntime-web (wasm, 1 thread) through the frozen seat (src/sat/agents/frozen.ts: one prompt
 * at a time, one run per token) — against the project's own sampler (Model.generate, CPU backend)
 * on the same weights, in the same process: batched (how a seat of ours samples a rollout) and
 * one prompt at a time (the frozen seat's way). 8 one-token prompts × 31 new tokens, τ = 1, no
 * stop; both draw the same tokens for a seed (tests/onnx-frozen.test.ts). Calls alternate A, B, C
 * after one warm-up each; the median of REPS is printed.
 *
 * Not here: correctness (tests/onnx-frozen.test.ts), the forward-pass rows (bench/cpu.ts).
 */
import { loadHfCheckpoint } from '../../src/model/hfLoad';
import { OrtDecoder } from '../../src/model/onnx/ort';
import { readOnnx } from '../../src/model/onnx/read';
import type { TextTokenizer } from '../../src/model/tokenizer';
import { FrozenOnnxAgent } from '../../src/sat/agents/frozen';
import { hfSeatAgent } from '../../src/sat/hfSeat';
import { exportHfDecoder } from './decoder';
import { hfCheckpoint } from '../../tests/helpers/hfCheckpoint';

const PROMPTS = 8;
const NEW = 31;
const REPS = 5;

export interface FrozenBenchResult {
  readonly describe: string;
  /** tokens / s: onnxruntime-web (frozen seat), ours batched, ours one prompt at a time. */
  readonly ort: number;
  readonly oursBatched: number;
  readonly oursSerial: number;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function benchFrozenSampling(): Promise<FrozenBenchResult> {
  const spec = { vocab: 272, d: 128, layers: 2, heads: 8, kvHeads: 4, hidden: 384, maxPositions: 64 };
  const hf = hfCheckpoint(spec);
  const ex = exportHfDecoder({ ...spec, ropeTheta: 10000, eps: 1e-5 }, hf.tensors, { weights: 'f32' });
  const files = new Map(hf.files);
  for (const [k, v] of ex.files) files.set(k, v);
  // The frozen seat's agent itself, with room for 1 + NEW positions and no stop token (generate reads only `eos` of its tokenizer).
  const noStop = { eos: -1 } as TextTokenizer;
  const agent = new FrozenOnnxAgent(1, await OrtDecoder.create(files, readOnnx(files, 'onnx/model.onnx')), noStop, { name: 'bench', temperature: 1, topK: 0, maxSeq: 64 });
  const m = await loadHfCheckpoint(hf.files, { maxSeq: 64 });
  const ours = hfSeatAgent(1, m, { loraRank: 1, loraAlpha: 1, seed: 1, temperature: 1, topK: 0 });
  const prompts = Array.from({ length: PROMPTS }, (_, i) => Int32Array.of(261, 10 + i));
  const opts = { maxNew: NEW, seed: 7, stream: 0 };
  const time = async (f: () => Promise<unknown>): Promise<number> => {
    const t = performance.now();
    await f();
    return performance.now() - t;
  };
  const runs = {
    ort: () => agent.generate(prompts, opts),
    batched: () => ours.model.generate(prompts, { ...opts, temperature: 1, topK: 0, stop: -1 }),
    serial: async () => {
      for (const [i, p] of prompts.entries()) await ours.model.generate([p], { ...opts, temperature: 1, topK: 0, stop: -1, seq0: i });
    },
  };
  const ms = { ort: [] as number[], batched: [] as number[], serial: [] as number[] };
  for (const k of ['ort', 'batched', 'serial'] as const) await runs[k]();
  for (let r = 0; r < REPS; r++) for (const k of ['ort', 'batched', 'serial'] as const) ms[k].push(await time(runs[k]));
  const tps = (x: number[]): number => (PROMPTS * NEW) / (median(x) / 1000);
  await agent.dispose();
  ours.model.dispose();
  return { describe: `d ${spec.d} · ${spec.layers} layers · ${spec.heads}/${spec.kvHeads} heads · hidden ${spec.hidden} · vocab ${spec.vocab}, f32; ${PROMPTS} prompts × ${NEW} new tokens`, ort: tps(ms.ort), oursBatched: tps(ms.batched), oursSerial: tps(ms.serial) };
}
