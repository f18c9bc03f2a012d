/**
 * ONNX seats in the agent workers the page uses (src/workers/agentApi.ts, kind "onnx", through
 * src/workers/remoteTeam.ts createRemoteExperiment, over node:worker_threads):
 *   - a frozen ONNX teammate (onnxruntime-web in its worker) sits in an arith-team chain of
 *     shipped models and a SAT stage runs around it: its update is no update (KL 0, gradient 0,
 *     gain 0, clip fraction 0, parameters none), its messages are fixed by the seed (two builds,
 *     same J₀), and the teammates train as usual;
 *   - a trainable ONNX seat in a worker is the seat built in process: same parameter count and
 *     held-out J, with its parity figure on the card's record (`onnxSeat()`).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadFromDisk } from '../src/cli/models';
import { createRemoteExperiment, type RemoteExperiment } from '../src/workers/remoteTeam';
import { runStages } from '../src/sat/experiment';
import { hfSeatAgent, hfSeatBudget, hfSeatContext, hfSeatSeed } from '../src/sat/hfSeat';
import { seatOnnxTrainable, onnxSeatTokenizer } from '../src/sat/onnxSeat';
import { presetConfig } from '../src/sat/presets';
import { nodeAgentWorker, workersStillAlive } from './helpers/nodeAgentWorker';
import { onnxFolder } from './helpers/onnxFolder';

// A small certification batch: the certificate is not what this file checks.
const cfg = presetConfig('arith-team', { agents: 3, batch: 2, group: 2, evalEpisodes: 8, epochs: 1, geoIters: 0, maxNew: 3, certEpisodes: 32 });
const roomy = { bytes: 2 ** 34, where: 'the test' };

describe('ONNX seats in agent workers', () => {
  const opened: RemoteExperiment[] = [];
  afterAll(() => opened.forEach((e) => e.terminate()));

  it('a frozen ONNX teammate in a SAT stage: never updated, ratio 1, seeded; the team trains around it', async () => {
    const f = onnxFolder({ kvHeads: 2, maxPositions: 128 }, { weights: 'q4', external: true });
    const seat = { name: 'tiny-onnx@12345678', hash: '12345678', files: f.files, quant: 'q8' as const, onnx: { file: f.file, mode: 'frozen' as const } };
    const build = () => createRemoteExperiment(cfg, { makeWorker: () => nodeAgentWorker(), load: loadFromDisk, seats: new Map([[1, seat]]), seatLimit: roomy });
    const exp = await build();
    opened.push(exp);
    expect(exp.infos[1]).toMatchObject({ name: 'tiny-onnx@12345678#1', parameters: 0 });
    expect(exp.infos[1]!.backend).toMatch(/^onnxruntime-web wasm \(no WebGPU in this context\)$/);
    const card = await exp.team[1]!.onnxSeat();
    expect(card).toMatchObject({ mode: 'frozen', file: 'onnx/model.onnx', ep: 'wasm', context: 80 });
    expect(card!.estimateBytes).toBeGreaterThan(f.files.get('onnx/model.onnx_data')!.length);
    // Seeded: a second build samples the same messages, hence the same J₀.
    const again = await build();
    opened.push(again);
    expect(again.j0).toBe(exp.j0);
    again.terminate();

    const before = await Promise.all(exp.team.map((a) => a.snapshot()));
    const [rec] = await runStages(exp, 1);
    const r = rec!.metrics as unknown as Record<string, number>;
    for (const k of ['kl_max', 'kl_mean', 'grad_norm', 'gain', 'clipfrac']) expect(r[`agent/1/${k}`], k).toBe(0);
    const after = await Promise.all(exp.team.map((a) => a.snapshot()));
    expect(after[1]!.params.length).toBe(0);
    // The teammates (shipped models) were updated by the stage.
    const moved = [0, 2].map((j) => after[j]!.params.some((v, i) => v !== before[j]!.params[i]));
    expect(moved.some(Boolean)).toBe(true);
    expect(await exp.team[1]!.inspect()).toMatchObject({ ok: false, reason: expect.stringMatching(/frozen ONNX teammate: it is never updated/) });
    exp.terminate();
    expect(await workersStillAlive()).toBe(0);
  }, 240_000);

  it('a trainable ONNX seat in a worker is the one built in process (parameters, held-out J), with its parity on record', async () => {
    const f = onnxFolder({ kvHeads: 2, maxPositions: 128 }, { weights: 'f16', naming: 'genai' });
    const seat = { name: 'tiny-onnx@abcdef12', hash: 'abcdef12', files: f.files, quant: 'q8' as const, onnx: { file: f.file, mode: 'trainable' as const } };
    const two = presetConfig('arith-team', { agents: 2, batch: 2, group: 2, evalEpisodes: 8, epochs: 1, geoIters: 0, maxNew: 3 });
    const exp = await createRemoteExperiment(two, { makeWorker: () => nodeAgentWorker(), load: loadFromDisk, seats: new Map([[0, seat], [1, seat]]), seatLimit: roomy });
    opened.push(exp);
    const card = await exp.team[0]!.onnxSeat();
    expect(card).toMatchObject({ mode: 'trainable', ep: 'wasm' });
    expect(card!.parity!.maxAbs).toBeLessThan(1e-3);
    const t = onnxSeatTokenizer(f.files, f.file, 'trainable');
    const context = hfSeatContext(two, t.tokenizer, t.maxPositions);
    const local = [];
    for (const j of [0, 1]) {
      const s = await seatOnnxTrainable(f.files, f.file, two, j, { quant: 'q8', maxSeq: context });
      local.push(hfSeatAgent(j, { ...s.model }, { loraRank: hfSeatBudget(two).loraRank, loraAlpha: two.loraAlpha, seed: hfSeatSeed(two.seed, j), temperature: two.temperature, topK: two.topK, name: seat.name }));
    }
    expect(exp.infos.map((i) => i.parameters)).toEqual(await Promise.all(local.map(async (a) => (await a.info()).parameters)));
    expect(exp.j0).toBe((await exp.env.evaluate(local)).J);
    exp.terminate();
  }, 240_000);
});
