/**
 * The agent worker's class (src/workers/agentApi.ts) on WebGPU, in Node (Dawn on this machine's
 * adapter, SwiftShader here): an agent asked for `backend: 'webgpu'` says so and reports its GPU
 * buffers, starts from the same parameters as the CPU agent and writes the same tokens for the
 * same seed; destroying its device mid-run makes every later call fail with a DeviceLostError
 * that says what happened — never a hang, never garbage; `'auto'` in Node (no navigator.gpu)
 * stays on the CPU and says why; a language plug-and-play swap (`swapIn`) builds the Stage-0 seat
 * on the worker's GPU, with the CPU worker's report and distributions; a Hugging Face checkpoint
 * seat (kind "hf": a tiny random GQA checkpoint, Q8 on load) asked for 'webgpu' runs there, from
 * the CPU seat's parameters and with its tokens. Models: public/models/arithmetic-S (LoRA r4 over
 * its Q8 base), arithmetic-M as the incoming model of the swap.
 *
 * Without an adapter the suite skips, printing the reason (tests/webgpu/gpu.ts).
 *
 * Not here: the kernels (the other files here) or the session's recovery (tests/session.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LmSteps } from '../../src/sat/agents/lm';
import type { StepSet } from '../../src/sat/types';
import { AgentApi, DeviceLostError, type HfAgentSpec, type LmSpec } from '../../src/workers/agentApi';
import { hfCheckpoint } from '../helpers/hfCheckpoint';
import { gpu } from './gpu';

const model = new Uint8Array(readFileSync(join(import.meta.dirname, '../../public/models/arithmetic-S.safetensors')));
const spec = (backend: LmSpec['backend']): LmSpec => ({
  kind: 'lm', index: 0, name: 'arithmetic-S#0', modelFile: 'arithmetic-S', modelName: 'arithmetic-S', model: model.slice(), backend,
  lora: 4, loraAlpha: 16, seed: 7, temperature: 1, topK: 0,
});
// "12+7=" after <bos>: tokens are the char tokenizer's; any short prompt will do.
const prompts = [Int32Array.of(1, 20, 21, 30, 26, 29), Int32Array.of(1, 22, 30, 23, 29)];

describe.skipIf(typeof gpu === 'string')('AgentApi on WebGPU', () => {
  it('says where it runs, starts where the CPU agent starts, and samples the same tokens', async () => {
    const g = new AgentApi();
    const c = new AgentApi();
    await g.init(spec('webgpu'));
    await c.init(spec('cpu'));
    expect((await g.info()).backend).toMatch(/^webgpu/);
    expect((await c.info()).backend).toBe('cpu (TypeScript)');
    expect(await g.memoryBytes()).toBeGreaterThan(0);
    const sg = await g.snapshot();
    const sc = await c.snapshot();
    expect(sg.params.length).toBe(sc.params.length);
    let worst = 0;
    for (let i = 0; i < sc.params.length; i++) worst = Math.max(worst, Math.abs(sg.params[i]! - sc.params[i]!));
    expect(worst).toBeLessThan(1e-6);
    const opts = { maxNew: 4, seed: 11, stream: 3 };
    const a = await g.generate(prompts, opts);
    const b = await c.generate(prompts, opts);
    expect(a.tokens.map((t) => [...t])).toEqual(b.tokens.map((t) => [...t]));
    expect(a.stopped).toEqual(b.stopped);
  }, 120_000);

  it('a destroyed device fails every later call with a DeviceLostError naming the agent', async () => {
    const g = new AgentApi();
    await g.init(spec('webgpu'));
    await g.generate(prompts, { maxNew: 2, seed: 1, stream: 0 });
    expect(await g.loseDevice()).toBe(true);
    const err = await g.generate(prompts, { maxNew: 2, seed: 1, stream: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeviceLostError);
    expect((err as Error).message).toMatch(/Agent 0's GPU device was lost \(destroyed/);
    expect((err as Error).message).toMatch(/safe in the last snapshot/);
    await expect(g.snapshot()).rejects.toBeInstanceOf(DeviceLostError);
  }, 120_000);

  it('a language swap in the worker builds the Stage-0 seat on the GPU, with the CPU worker\'s report and distributions', async () => {
    const incoming = new Uint8Array(readFileSync(join(import.meta.dirname, '../../public/models/arithmetic-M.safetensors')));
    // Agent 0's token states: every position after each prompt of two short messages.
    const seqs = [Int32Array.of(1, 20, 21, 30, 26, 29, 22, 23), Int32Array.of(1, 22, 30, 23, 29, 24)];
    const stepSeq: number[] = [];
    const stepPos: number[] = [];
    seqs.forEach((q, i) => {
      for (let pos = 5; pos < q.length; pos++) (stepSeq.push(i), stepPos.push(pos));
    });
    const context: LmSteps = { seqs, stepSeq: Int32Array.from(stepSeq), stepPos: Int32Array.from(stepPos) };
    const steps: StepSet = { obs: Int32Array.from(stepSeq, (_, k) => k), actions: Int32Array.from(stepSeq, (s, k) => seqs[s]![stepPos[k]!]!), context };
    const o = { stage0: true, delta0: 0.05, distillSteps: 5, distillLr: 1e-3, delta: 0.05 };
    const g = new AgentApi();
    const c = new AgentApi();
    await g.init(spec('webgpu'));
    await c.init(spec('cpu'));
    const rg = await g.swapIn('arithmetic-M', incoming, steps, o);
    const rc = await c.swapIn('arithmetic-M', incoming, steps, o);
    expect(rg.seat).toBe('projection');
    expect(rg.states).toBe(steps.obs.length);
    expect(rg.states).toBe(rc.states);
    // Before any distillation the two halves of the projection are f32 forwards: equal to ~1e-5.
    for (const q of ['q50', 'q90', 'q99'] as const) {
      expect(Math.abs(rg.klPre[q] - rc.klPre[q])).toBeLessThan(1e-4 * Math.max(1, rc.klPre[q]));
      expect(Math.abs(rg.klProjected[q] - rc.klProjected[q])).toBeLessThan(1e-3 * Math.max(1e-2, rc.klProjected[q]) + 1e-6);
    }
    expect(rc.klPre.q99).toBeGreaterThan(o.delta0); // the raw M is outside the ball somewhere: the projection binds
    expect(rg.klProjected.q99).toBeLessThanOrEqual(o.delta0 * (1 + 1e-3));
    rg.lambdas.forEach((l, k) => expect(Math.abs(l - rc.lambdas[k]!)).toBeLessThan(1e-3 * Math.max(1, rc.lambdas[k]!)));
    const pg = await g.distributions(steps);
    const pc = await c.distributions(steps);
    let worst = 0;
    for (let i = 0; i < pc.length; i++) worst = Math.max(worst, Math.abs(pg[i]! - pc[i]!));
    expect(worst).toBeLessThan(1e-4);
    expect((await g.info()).name).toBe('arithmetic-M#0');
    expect((await g.info()).backend).toMatch(/^webgpu/);
  }, 300_000);

  it('a Hugging Face checkpoint seat asked for webgpu runs on the GPU, from the CPU seat\'s parameters and with its tokens', async () => {
    const files = hfCheckpoint({ kvHeads: 2, tied: false, dtype: 'BF16' }).files;
    const hf = (backend: HfAgentSpec['backend']): HfAgentSpec => ({
      kind: 'hf', index: 1, name: 'tiny@0123abcd', backend, quant: 'q8', files: new Map([...files].map(([k, v]) => [k, v.slice()])),
      memory: { loraRank: 4, sequences: 4, seqLen: 32, prompts: 4, limitBytes: Number.MAX_SAFE_INTEGER, where: 'no limit' },
      agent: { loraRank: 4, loraAlpha: 8, seed: 5, temperature: 1, topK: 0 },
    });
    const g = new AgentApi();
    const c = new AgentApi();
    await g.init(hf('webgpu'));
    await c.init(hf('cpu'));
    expect((await g.info()).backend).toMatch(/^webgpu/);
    expect((await c.info()).backend).toBe('cpu (TypeScript)');
    expect((await g.info()).name).toBe('tiny@0123abcd#1');
    const sg = await g.snapshot();
    const sc = await c.snapshot();
    expect(sg.params.length).toBe(sc.params.length);
    let worst = 0;
    for (let i = 0; i < sc.params.length; i++) worst = Math.max(worst, Math.abs(sg.params[i]! - sc.params[i]!));
    expect(worst).toBeLessThan(1e-6);
    const opts = { maxNew: 4, seed: 11, stream: 3 };
    const few = [Int32Array.of(1, 5, 9, 12), Int32Array.of(1, 7, 3)];
    const a = await g.generate(few, opts);
    const b = await c.generate(few, opts);
    expect(a.tokens.map((t) => [...t])).toEqual(b.tokens.map((t) => [...t]));
  }, 120_000);

  it("'auto' in Node (no navigator.gpu) stays on the CPU and says why", async () => {
    const a = new AgentApi();
    await a.init(spec('auto'));
    expect((await a.info()).backend).toMatch(/^cpu \(TypeScript\) — this browser has no WebGPU/);
  });
});
