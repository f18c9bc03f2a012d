/**
 * The context of a checkpoint seat (src/sat/hfSeat.ts hfSeatContext; docs/models.md "Memory"):
 * measured for the preset with the checkpoint's own tokenizer and chat template, it bounds every
 * context a rollout and an evaluation actually give the seat (plus its message); a preset whose
 * contexts pass 128 tokens (four agents in a chain, 32-token messages) runs; a checkpoint shorter
 * than the preset needs is refused naming both numbers; a context past the seat's maxSeq is refused
 * by the agent naming the seat, the length and the limit (not the model's generic message); and the
 * page's memory estimate counts the measured context, not 128.
 *
 * Not here: the loader (tests/hf.test.ts), the page's seat (tests/hfpage.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { readCheckpointFolder, type FileLike } from '../src/app/hfFiles';
import { Rng } from '../src/core/rng';
import { estimateMemory } from '../src/model/hfConfig';
import { hfTokenizerOf, loadHfCheckpoint, readHfConfig } from '../src/model/hfLoad';
import type { LmAgent } from '../src/sat/agents/lm';
import { planLlm } from '../src/sat/experiment';
import { HF_SEAT_MAX_SEQ, hfSeatAgent, hfSeatBudget, hfSeatContext, hfSeatSeed } from '../src/sat/hfSeat';
import { presetConfig } from '../src/sat/presets';
import type { Config } from '../src/sat/config';
import { hfCheckpoint } from './helpers/hfCheckpoint';

/** A team of checkpoint seats for `cfg` at the measured context, each recording the longest context it was asked to continue. */
async function seatedTeam(cfg: Config, files: Map<string, Uint8Array>) {
  const head = readHfConfig(files);
  const context = hfSeatContext(cfg, hfTokenizerOf(files, head.cfg, head.info), head.info.maxPositions);
  const m = await loadHfCheckpoint(files, { quant: 'q8', maxSeq: context });
  const longest = { n: 0 };
  const team = Array.from({ length: cfg.agents }, (_, j) => {
    const a = hfSeatAgent(j, m, { loraRank: 4, loraAlpha: 8, seed: hfSeatSeed(cfg.seed, j), temperature: 1, topK: 0 });
    const generate = a.generate.bind(a);
    a.generate = (contexts, opts) => {
      for (const c of contexts) longest.n = Math.max(longest.n, c.length);
      return generate(contexts, opts);
    };
    return a;
  });
  return { context, m, team, longest };
}

describe('the context of a checkpoint seat', () => {
  it('bounds every context a rollout and an evaluation give the seat, plus its message, and is below 128 for a short preset', async () => {
    const cfg = presetConfig('arith-team', { agents: 3, batch: 2, group: 2, evalEpisodes: 16, maxNew: 6 });
    const { context, team, longest } = await seatedTeam(cfg, hfCheckpoint({ maxPositions: 512 }).files);
    const { env } = planLlm(cfg);
    await env.rollout(team, cfg.batch, cfg.group, new Rng(3));
    await env.evaluate(team);
    expect(longest.n).toBeGreaterThan(0);
    expect(longest.n + cfg.maxNew).toBeLessThanOrEqual(context);
    expect(context).toBeLessThan(HF_SEAT_MAX_SEQ);
    expect(context % 16).toBe(0);
  }, 120_000);

  it('runs a preset whose contexts pass 128 tokens (4 agents in a chain, 32-token messages) on a checkpoint that allows them', async () => {
    const cfg = presetConfig('arith-team', { agents: 4, batch: 1, group: 2, evalEpisodes: 8, maxNew: 32, temperature: 1 });
    const { context, m, team, longest } = await seatedTeam(cfg, hfCheckpoint({ maxPositions: 512 }).files);
    expect(context).toBeGreaterThan(128);
    expect(m.cfg.maxSeq).toBe(context);
    const { env } = planLlm(cfg);
    const batch = await env.rollout(team, cfg.batch, cfg.group, new Rng(4));
    expect(longest.n).toBeGreaterThan(0);
    expect(longest.n + cfg.maxNew).toBeLessThanOrEqual(context);
    expect(Math.max(...(batch.context as { seqs: Int32Array[] }).seqs.map((s) => s.length))).toBeLessThanOrEqual(context);
  }, 240_000);

  it('refuses a checkpoint shorter than the preset needs, naming the need and max_position_embeddings', () => {
    const cfg = presetConfig('arith-team', { agents: 4, maxNew: 32 });
    const files = hfCheckpoint({ maxPositions: 64 }).files;
    const head = readHfConfig(files);
    expect(() => hfSeatContext(cfg, hfTokenizerOf(files, head.cfg, head.info), head.info.maxPositions)).toThrow(
      /This preset needs contexts of up to \d{3} tokens for a checkpoint seat .* longer than the checkpoint's max_position_embeddings = 64; lower maxNew or the number of agents/,
    );
  });

  it('the seat refuses a context past its maxSeq naming the seat, the length and the limit', async () => {
    const files = hfCheckpoint({ maxPositions: 64 }).files;
    const m = await loadHfCheckpoint(files, { quant: 'q8', maxSeq: 48 });
    const a: LmAgent = hfSeatAgent(1, m, { loraRank: 4, loraAlpha: 8, seed: 1, temperature: 1, topK: 0, name: 'tiny@12345678' });
    await expect(a.generate([Int32Array.from({ length: 50 }, () => 5)], { maxNew: 3, seed: 1, stream: 0 })).rejects.toThrow(
      /tiny@12345678#1: a context of 50 tokens .* leaves no room for a message in the seat's context of 48 tokens/,
    );
    const ok = await a.generate([Int32Array.from({ length: 20 }, () => 5)], { maxNew: 3, seed: 1, stream: 0 });
    expect(ok.tokens[0]!.length).toBeLessThanOrEqual(3);
  });

  it('the page\'s estimate counts the measured context: activations and KV cache at that length, not 128', async () => {
    const cfg = presetConfig('arith-team', { agents: 2, batch: 2, group: 2, evalEpisodes: 8, maxNew: 3 });
    const files = hfCheckpoint({ maxPositions: 512 }).files;
    const list: FileLike[] = [...files].map(([name, b]) => ({ name, size: b.byteLength, webkitRelativePath: `t/${name}`, arrayBuffer: async () => b.slice().buffer }));
    const r = await readCheckpointFolder(list, cfg, { bytes: 2 ** 34, where: 'the test' });
    const head = readHfConfig(files);
    expect(r.context).toBe(hfSeatContext(cfg, hfTokenizerOf(files, head.cfg, head.info), 512));
    expect(r.context).toBeLessThan(128);
    const at = (T: number) => estimateMemory(readHfConfig(files, T).cfg, { quant: 'q8', ...hfSeatBudget(cfg, T) });
    expect(r.estimate).toEqual(at(r.context));
    expect(r.estimate.activations).toBeLessThan(at(128).activations);
  });
});
