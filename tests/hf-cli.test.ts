/**
 * `npm run sat -- --agent-model J=DIR` (src/cli/hfSeat.ts): a tiny random Hugging Face Llama
 * folder (tests/helpers/hfCheckpoint.ts) written to a temp dir is seated as agent 1 of the
 * arith-team chain and trains a stage, with progress lines and the memory estimate on stderr; a
 * checkpoint over --agent-memory is refused before it is read, and bad flags are named. Runs the
 * real CLI (tsx) in a child process, with a small batch so it stays fast.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hfCheckpoint, writeHfFolder } from './helpers/hfCheckpoint';

function sat(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/sat.ts', ...args], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const SMALL = ['--stages', '1', '--set', 'batch=2', '--set', 'group=2', '--set', 'evalEpisodes=8', '--set', 'epochs=1'];

describe('npm run sat -- --agent-model', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'sat-hf-')), 'tiny-llama');
  writeHfFolder(dir, hfCheckpoint({ kvHeads: 2, maxPositions: 128 }).files);

  it('seats the checkpoint as agent 1 (q8 + LoRA, its own chat template) and runs a stage', () => {
    const r = sat('--preset', 'arith-team', ...SMALL, '--agent-model', `1=${dir}`);
    expect(r.err).not.toContain('error:');
    expect(r.code).toBe(0);
    // arith-team's contexts with this tokenizer and chat template, 3 agents, maxNew 3: 80 positions (hfSeatContext), not the checkpoint's 128.
    expect(r.err).toContain(`agent 1 ← ${dir}: d 64 · 2 layers · 4 heads · hidden 96 · vocab 272 · maxSeq 80 · untied head`);
    expect(r.err).toMatch(/q8, LoRA rank 8; memory estimate for 4 sequences × 80 tokens \(the context this preset needs with its tokenizer; sampling 8\): weights [\d.]+ KiB .* = [\d.]+ MiB \(limit/);
    expect(r.err).toContain('reading 1/1 files');
    expect(r.err).toContain('quantizing 21/21 tensors');
    expect(r.err).toContain('agent 1 is tests/tiny-llama: ');
    expect(r.err).toContain('turns marked by its chat template; messages end at token 263');
    expect(r.out.split('\n').filter((l) => /^\s+1\s+-?\d+\.\d{3}/.test(l))).toHaveLength(1);
  });

  it('--budget real-size lays the named budget over the preset, --set still wins, and an unknown name is refused', () => {
    const r = sat('--preset', 'arith-team', '--stages', '1', '--budget', 'real-size', '--set', 'evalEpisodes=8');
    expect(r.code, r.err).toBe(0);
    const line = JSON.parse(/^preset arith-team: (\{.*\})$/m.exec(r.out)?.[1] ?? '{}') as Record<string, unknown>;
    expect(line).toMatchObject({ batch: 2, group: 4, epochs: 1, geoIters: 0, certEpisodes: 8, evalEpisodes: 8 });
    expect(sat('--preset', 'arith-team', '--budget', 'huge').err).toContain('--budget expects one of real-size, got huge');
  });

  it('refuses a checkpoint over --agent-memory before reading it, and names bad flags', () => {
    const big = sat('--preset', 'arith-team', ...SMALL, '--agent-model', `1=${dir}`, '--agent-memory', '0.5');
    expect(big.code).toBe(2);
    expect(big.err).toMatch(/error: This checkpoint needs about [\d.]+ MiB .* but --agent-memory allows 512\.0 KiB; quantize it/);
    expect(big.err).not.toContain('reading 1/1');
    expect(sat('--preset', 'arith-team', '--agent-model', 'x').err).toContain('--agent-model expects J=DIR');
    expect(sat('--preset', 'arith-team', '--agent-model', `7=${dir}`).err).toContain('--agent-model 7=…: the team has agents 0..2');
    expect(sat('--preset', 'arith-team', '--agent-model', `1=${dir}-nope`).err).toContain('is not a folder that can be read');
    expect(sat('--preset', 'arith-team', '--set', 'swapAgent=1', '--set', 'swapTo=M', '--agent-model', `1=${dir}`).err).toMatch(/--agent-model 1=…: The configured plug-and-play swap \(swapAgent = 1, at stage 1, to M\) would replace agent 1, which holds checkpoint .*: swapping a checkpoint seat is not supported yet/);
    expect(sat('--preset', 'arith-team', '--agent-model', `1=${dir}`, '--agent-quant', 'q5').err).toContain('--agent-quant expects one of f32, q8, q4');
    expect(sat('--preset', 'climbing', '--agent-model', `1=${dir}`).err).toContain('--agent-model seats a language model');
  });
});
