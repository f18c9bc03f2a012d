/**
 * The frozen ONNX teammate (src/sat/agents/frozen.ts), in process: its log-probs of a step set
 * are the log-softmax at τ of the graph's own logits, the same numbers every time they are asked
 * for (so every ratio is exactly 1 and its KL to the reference exactly 0); its sampler with the
 * graph's KV cache draws, for a seed, the very tokens the project's own sampler draws from our
 * model on the same weights (an f32 graph of the same checkpoint); another seed gives other
 * messages; and it owns no parameters.
 */
import { describe, expect, it } from 'vitest';
import { loadHfCheckpoint } from '../src/model/hfLoad';
import { hfSeatAgent } from '../src/sat/hfSeat';
import { seatOnnxFrozen } from '../src/sat/onnxSeat';
import { presetConfig } from '../src/sat/presets';
import type { StepSet } from '../src/sat/types';
import { onnxFolder } from './helpers/onnxFolder';

const settings = presetConfig('arith-team', { agents: 2, batch: 2, group: 2, evalEpisodes: 8, maxNew: 6, temperature: 1 });

describe('frozen ONNX teammate', () => {
  it('log-probs are the graph\'s, identical when asked again; KL 0; no parameters', async () => {
    const f = onnxFolder({ kvHeads: 2, maxPositions: 128 }, { weights: 'q8' });
    const { agent } = await seatOnnxFrozen(f.files, f.file, settings, 1, { temperature: 0.7, topK: 0 });
    const seqs = [Int32Array.of(261, 10, 20, 30, 40), Int32Array.of(261, 50, 60)];
    const steps: StepSet & { actions: Int32Array } = {
      obs: Int32Array.of(0, 1, 2, 3),
      actions: Int32Array.of(30, 40, 60, 20),
      context: { seqs, stepSeq: Int32Array.of(0, 0, 1, 1), stepPos: Int32Array.of(3, 4, 2, 1) },
    } as unknown as StepSet & { actions: Int32Array };
    const a = await agent.logProbs(steps);
    const b = await agent.logProbs({ ...steps, obs: Int32Array.from(steps.obs) }); // a fresh set: no cache
    expect(Array.from(b)).toEqual(Array.from(a));
    const { logits, V } = await agent.decoder.logits(seqs[0]!);
    const row = logits.subarray(2 * V, 3 * V); // predicts position 3
    let m = -Infinity;
    for (const z of row) m = Math.max(m, z / 0.7);
    let s = 0;
    for (const z of row) s += Math.exp(z / 0.7 - m);
    expect(a[0]).toBeCloseTo(row[30]! / 0.7 - m - Math.log(s), 12);
    expect(Array.from(await agent.klToReference(steps))).toEqual([0, 0, 0, 0]);
    expect((await agent.info()).parameters).toBe(0);
    expect((await agent.snapshot()).params.length).toBe(0);
    await agent.dispose();
  });

  it('samples with the project\'s sampler: the same tokens as our model on the same weights, for a seed', async () => {
    const f = onnxFolder({ kvHeads: 2, maxPositions: 128 }, { weights: 'f32' });
    const { agent } = await seatOnnxFrozen(f.files, f.file, settings, 1, { temperature: 1, topK: 0 });
    const m = await loadHfCheckpoint(f.hf.files, { maxSeq: 80 });
    const ours = hfSeatAgent(1, m, { loraRank: 1, loraAlpha: 1, seed: 3, temperature: 1, topK: 0 });
    const contexts = [Int32Array.of(261, 10, 20), Int32Array.of(261, 40, 41, 42, 43), Int32Array.of(261, 7)];
    const opts = { maxNew: 12, seed: 42, stream: 5 };
    const x = await agent.generate(contexts, opts);
    const y = await ours.generate(contexts, opts);
    expect(x.tokens.map((t) => Array.from(t))).toEqual(y.tokens.map((t) => Array.from(t)));
    expect(x.stopped).toEqual(y.stopped);
    const other = await agent.generate(contexts, { ...opts, seed: 43 });
    expect(other.tokens.map((t) => Array.from(t))).not.toEqual(x.tokens.map((t) => Array.from(t)));
    ours.model.dispose();
    await agent.dispose();
  });
});
