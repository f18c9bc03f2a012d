/**
 * `npm run sat -- --agent-model J=DIR` with an ONNX folder (src/cli/onnxSeat.ts): a tiny random
 * decoder in the onnx-community layout (tests/helpers/onnxFolder.ts, 4-bit MatMulNBits with
 * external data, plus an f32 variant in the same folder) written to a temp dir is seated as agent
 * 1 of the arith-team chain, trainable (mapped into our model, parity with onnxruntime-web printed)
 * and frozen (run by onnxruntime-web), and each runs a stage; the frozen seat's ratio is 1 and its
 * parameters none; a swap of the trainable seat onto another folder of its tokenizer runs Stage-0
 * with π_pre from onnxruntime-web, one across tokenizers is refused by name; a missing file, a
 * bad mode and a memory limit are refused by name. Runs the
 * real CLI (tsx) in a child process with a small batch.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { onnxFolder } from './helpers/onnxFolder';

function sat(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/sat.ts', ...args], { encoding: 'utf8', timeout: 180_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const SMALL = ['--stages', '1', '--set', 'batch=2', '--set', 'group=2', '--set', 'evalEpisodes=8', '--set', 'epochs=1'];

describe('npm run sat -- --agent-model with an ONNX folder', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'sat-onnx-')), 'tiny-onnx');
  const spec = { kvHeads: 2, maxPositions: 128 };
  for (const f of [onnxFolder(spec, { weights: 'q4', external: true, file: 'onnx/model_q4.onnx' }), onnxFolder(spec, { weights: 'f32', file: 'onnx/model.onnx' })]) {
    for (const [name, bytes] of f.files) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), bytes);
    }
  }

  it('seats the 4-bit file trainable (parity printed) and runs a stage', () => {
    const r = sat('--preset', 'arith-team', ...SMALL, '--agent-model', `1=${dir}`, '--agent-onnx-file', 'onnx/model_q4.onnx', '--agent-quant', 'q4');
    expect(r.err).not.toContain('error:');
    expect(r.code).toBe(0);
    expect(r.err).toContain(`agent 1 ← ${dir}/onnx/model_q4.onnx: trainable; d 64 · 2 layers · 4 heads · hidden 96 · vocab 272 · maxSeq 80 · untied head`);
    expect(r.err).toMatch(/parity with onnxruntime-web \(wasm\): largest \|Δ log p\| \d\.\d+e-\d+ nats over 4 prompts × the vocabulary \(tolerance 0\.01\)/);
    expect(r.err).toMatch(/agent 1 is tests\/tiny-llama: [\d,]+ LoRA parameters over a frozen q4 base read from f32 \/ int4 initializers/);
    expect(r.out.split('\n').filter((l) => /^\s+1\s+-?\d+\.\d{3}/.test(l))).toHaveLength(1);
  });

  it('seats the default file (onnx/model.onnx) frozen and runs a stage around it', () => {
    const r = sat('--preset', 'arith-team', ...SMALL, '--agent-model', `1=${dir}`, '--agent-onnx', 'frozen', '--json', join(dir, 'run.json'));
    expect(r.err).not.toContain('error:');
    expect(r.code).toBe(0);
    expect(r.err).toMatch(new RegExp(`agent 1 ← ${dir}/onnx/model\\.onnx: frozen, run by onnxruntime-web \\(wasm\\); context 80; memory estimate files [\\d.]+ KiB .* \\(limit .*\\); other files of the folder: onnx/model_q4\\.onnx`));
    expect(r.err).toContain('agent 1 is tests/tiny-llama: never updated (ratio 1 in every estimator)');
    expect(r.out.split('\n').filter((l) => /^\s+1\s+-?\d+\.\d{3}/.test(l))).toHaveLength(1);
    // The frozen seat's update: no step, no KL to its reference, no gradient, no gain.
    const stage = (JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { stages: Record<string, unknown>[] }).stages[0]!;
    for (const k of ['kl_max', 'kl_mean', 'grad_norm', 'gain', 'gain_insample', 'kappa', 'clipfrac', 'backtracks']) expect(stage[`agent/1/${k}`], k).toBe(0);
  });

  it('swaps agent 1 onto another ONNX folder of its tokenizer (π_pre from onnxruntime-web); refuses one across tokenizers', () => {
    const target = join(dirname(dir), 'tiny-onnx-target');
    for (const [name, bytes] of onnxFolder({ ...spec, kvHeads: 1, seed: 9 }, { weights: 'q4', file: 'onnx/model_q4.onnx' }).files) {
      mkdirSync(dirname(join(target, name)), { recursive: true });
      writeFileSync(join(target, name), bytes);
    }
    const r = sat('--preset', 'arith-team', ...SMALL, '--agent-model', `1=${dir}`, '--agent-onnx-file', 'onnx/model.onnx', '--swap', `1=${target}`, '--swap-stage', '1', '--stage0', '0.02');
    expect(r.err).not.toContain('error:');
    expect(r.code).toBe(0);
    expect(r.out).toContain(`swap target for agent 1: ${target}/onnx/model_q4.onnx (same tokenizer as tests/tiny-llama#1)`);
    expect(r.out).toMatch(/swap target onnx\/model_q4\.onnx: parity with onnxruntime-web \(wasm\): largest \|Δ log p\| \d\.\d+e-\d+ nats .*; π_pre is computed by onnxruntime-web/);
    expect(r.out).toMatch(/swap before stage 1: agent 1 ← arithmetic-onnx, Stage-0 on \(δ0 = 0\.02/);
    expect(r.out).toMatch(/KL to π_cur q50\/q90\/q99: .*projected [\d.e+-]+\/[\d.e+-]+\/[\d.e+-]+ \(0\.0 % > δ\)/);
    expect(r.out.split('\n').filter((l) => /^\s+1\s+-?\d+\.\d{3}/.test(l))).toHaveLength(1);
    // Agent 0 holds the shipped model (the character tokenizer): refused by name before any stage.
    const bad = sat('--preset', 'arith-team', ...SMALL, '--swap', `0=${target}`, '--swap-stage', '1');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain('onto onnx/model_q4.onnx: the two models do not share a tokenizer (a vocabulary of 64 ids against 264)');
  });

  it('refuses a file the folder lacks, a bad mode, and a frozen seat over --agent-memory', () => {
    expect(sat('--preset', 'arith-team', '--agent-model', `1=${dir}`, '--agent-onnx-file', 'onnx/model_fp16.onnx').err).toContain('"onnx/model_fp16.onnx" is not one of the folder\'s .onnx files (it has: onnx/model.onnx, onnx/model_q4.onnx)');
    expect(sat('--preset', 'arith-team', '--agent-model', `1=${dir}`, '--agent-onnx', 'thawed').err).toContain('--agent-onnx expects one of trainable, frozen, got thawed');
    expect(sat('--preset', 'arith-team', '--agent-model', `1=${dir}`, '--agent-onnx', 'frozen', '--agent-memory', '0.1').err).toMatch(/error: This ONNX model needs about [\d.]+ (KiB|MiB) as a frozen seat \(files .*\) but --agent-memory allows 102\.4 KiB/);
  });
});
