/**
 * `npm run bench:hf`: what a Hugging Face Llama checkpoint costs on the CPU backend — a random
 * checkpoint in the HF layout with SmolLM-135M's shape (d 576, 30 layers, 9 heads / 3 K/V heads,
 * hidden 1536, vocab 49152, tied; 134.5M parameters, BF16 on disk), built by
 * tests/helpers/hfCheckpoint.ts and written to a temp dir, so nothing is downloaded. A printed
 * table, not a test; docs/models.md has the results.
 *
 * Per base storage (f32, then q8 — the ratio q8 / f32 is measured in the same run):
 *   load     loadHfCheckpoint (read, BF16 → f32, RoPE permutation, K/V repeat, quantize) → seconds
 *   sample   generate(S prompts of P tokens, N new tokens each, greedy, no stop) on a 'none'
 *            model → generated tokens / call time
 *   LoRA     trainOnSequences (forward + next-token loss + backward + AdamW of rank-8 adapters on
 *            every projection over the frozen base) on random tokens [B × T] → B·T / step time
 * and the memory: the process RSS after each phase minus the RSS before the load (both after a
 * full GC; the checkpoint's file bytes are held throughout and are in neither), beside the
 * config-only estimate (hfConfig.ts estimateMemory) of an agent on it for the same B × T and S
 * prompts. The parent writes the checkpoint folder to a temp dir once; each base runs in its own
 * child process (a fork of this file with --expose-gc), one after the other, which reads the folder
 * as the CLI does (src/cli/hfSeat.ts readHfFolder) — so the baseline holds no garbage of building
 * it, and neither base's memory is in the other's numbers. Each phase: 1 warm-up call, then REPS
 * timed; the median is reported.
 * `--size tiny` runs the same on a 0.1M-parameter checkpoint (a smoke check of the bench).
 * `--gpu` adds a third child: the q8 base on the WebGPU backend (the machine's adapter, or
 * Chromium's SwiftShader where there is no GPU — a CPU emulation: its figures show the path runs,
 * not GPU speed; its RSS includes the emulated GPU's buffers).
 *
 * Not here: the kernels on WebGPU (bench/gpu.ts), correctness (tests/hf.test.ts,
 * tests/webgpu/hf.test.ts).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { cpuBackend } from '../src/backend/cpu';
import type { Backend, TensorKinds } from '../src/backend/types';
import { webgpuBackend } from '../src/backend/webgpu/backend';
import { acquireDevice } from '../src/backend/webgpu/device';
import { GpuContext } from '../src/backend/webgpu/kernel';
import { softwareFallback } from '../src/backend/webgpu/node';
import { Rng } from '../src/core/rng';
import { describeConfig } from '../src/model/config';
import { estimateMemory, formatBytes } from '../src/model/hfConfig';
import { loadHfCheckpoint } from '../src/model/hfLoad';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import type { QuantKind } from '../src/model/quant';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { readHfFolder } from '../src/cli/hfSeat';
import { hfCheckpoint, writeHfFolder, type HfSpec } from '../tests/helpers/hfCheckpoint';
import { markdownTable, tokensPerSecond } from './report';
import { median } from './measure';

const SIZES: Record<string, HfSpec> = {
  '135m': { vocab: 49152, d: 576, layers: 30, heads: 9, kvHeads: 3, hidden: 1536, tied: true, dtype: 'BF16', maxPositions: 2048, shards: 2 },
  tiny: { vocab: 272, d: 64, layers: 2, heads: 4, kvHeads: 2, hidden: 96, tied: false, dtype: 'BF16', maxPositions: 128 },
};
const REPS = 3;
const S = 4, P = 16, N = 16; // sampling: prompts × prompt length, new tokens each
const B = 2, T = 32; // LoRA training batch
const RANK = 8;

const { values } = parseArgs({ options: { size: { type: 'string', default: '135m' }, child: { type: 'string' }, dir: { type: 'string' }, gpu: { type: 'boolean' }, backend: { type: 'string', default: 'cpu' } } });
const spec = SIZES[values.size!];
if (!spec) throw new Error(`--size must be one of ${Object.keys(SIZES).join(', ')}`);

interface Row {
  quant: QuantKind;
  backend: string;
  cfgLine: string;
  loadS: number;
  sample: number;
  train: number;
  sampleMs: number[];
  trainMs: number[];
  rssSample: number;
  rssTrain: number;
  estimate: number;
}

async function time(fn: () => Promise<unknown>): Promise<number[]> {
  await fn();
  const ms: number[] = [];
  for (let i = 0; i < REPS; i++) {
    const a = performance.now();
    await fn();
    ms.push(performance.now() - a);
  }
  return ms;
}

/** The child's backend: the CPU, or (--backend webgpu) the adapter WebGPU finds, SwiftShader as the fallback. */
async function backendOf(name: string): Promise<Backend<TensorKinds>> {
  if (name === 'cpu') return cpuBackend as unknown as Backend<TensorKinds>;
  const fallback = softwareFallback();
  const h = await acquireDevice(fallback !== undefined ? { node: fallback } : {});
  if (!h.ok) throw new Error(`--gpu: no WebGPU adapter: ${h.reason}`);
  return webgpuBackend(new GpuContext(h.device), h.description) as unknown as Backend<TensorKinds>;
}

/** One base in this (child) process: read the folder, load, sample, train; RSS growth over the baseline after the read. */
async function measure(quant: QuantKind, backendName: string): Promise<Row> {
  const be = await backendOf(backendName);
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('the child runs with node --expose-gc, so garbage does not count as memory');
  const rssNow = (): number => {
    gc();
    return process.memoryUsage().rss;
  };
  const files = await readHfFolder(values.dir!);
  const base = rssNow();
  const a = performance.now();
  const m = await loadHfCheckpoint(files, { quant, maxSeq: 128 });
  const loadS = (performance.now() - a) / 1000;
  const r = new Rng(2);
  const prompts = Array.from({ length: S }, () => Int32Array.from({ length: P }, () => r.int(m.cfg.vocab)));
  const inf = new Model(be, m.cfg, m.weights, { trainable: 'none' });
  const sampleMs = await time(() => inf.generate(prompts, { maxNew: N, temperature: 0, topK: 0, seed: 1, stream: 0, stop: -1 }));
  const rssSample = rssNow() - base;
  inf.dispose();
  const lora = new Model(be, m.cfg, m.weights, { trainable: 'lora', lora: { rank: RANK, alpha: 2 * RANK }, seed: 1 });
  const tokens = Int32Array.from({ length: B * T }, () => 1 + r.int(m.cfg.vocab - 1));
  const trainMs = await time(() => trainOnSequences(lora, tokens, B, T, { lr: 1e-4 }));
  const rssTrain = rssNow() - base;
  lora.dispose();
  const est = estimateMemory(m.cfg, { quant, loraRank: RANK, sequences: B, seqLen: T, prompts: S });
  return {
    quant, backend: be.name, cfgLine: describeConfig(m.cfg), loadS, sampleMs, trainMs, rssSample, rssTrain, estimate: est.total,
    sample: tokensPerSecond(S * N, sampleMs, median), train: tokensPerSecond(B * T, trainMs, median),
  };
}

function child(quant: QuantKind, dir: string, backend = 'cpu'): Promise<Row> {
  return new Promise((resolve, reject) => {
    const c = fork(fileURLToPath(import.meta.url), ['--child', quant, '--dir', dir, '--backend', backend], { execArgv: ['--expose-gc', '--import', 'tsx'] });
    c.once('message', (m) => resolve(m as Row));
    c.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`the ${quant} child exited with ${code}`))));
  });
}

if (values.child) {
  process.send!(await measure(values.child as QuantKind, values.backend!));
  process.exit(0);
}

const t0 = performance.now();
const dir = join(mkdtempSync(join(os.tmpdir(), 'sat-bench-hf-')), values.size!);
const ck = hfCheckpoint({ ...spec, seed: 1 });
writeHfFolder(dir, ck.files);
console.log(`random checkpoint written to ${dir} in ${((performance.now() - t0) / 1000).toFixed(1)} s (${[...ck.files.values()].reduce((n, b) => n + b.length, 0).toLocaleString('en-US')} bytes)`);
const rows: Row[] = [];
const runs: [QuantKind, string][] = [['f32', 'cpu'], ['q8', 'cpu'], ...(values.gpu ? [['q8', 'webgpu'] as [QuantKind, string]] : [])];
for (const [quant, backend] of runs) {
  const x = await child(quant, dir, backend);
  console.log(`  ${quant} on ${x.backend}: load ${x.loadS.toFixed(1)} s, sample ${x.sampleMs.map((v) => v.toFixed(0)).join('/')} ms, LoRA step ${x.trainMs.map((v) => v.toFixed(0)).join('/')} ms`);
  rows.push(x);
}
const growth = (b: number): string => (b < 0 ? `−${formatBytes(-b)}` : formatBytes(b));
console.log(`\n${rows[0]!.cfgLine}; CPU backend one thread${values.gpu ? `, and ${rows[2]!.backend}` : ''}; sampling ${S} prompts × ${P} tokens, ${N} new each (greedy); LoRA rank ${RANK} on every projection, batch ${B} × ${T}; medians of ${REPS}\n`);
console.log(markdownTable(
  ['base', 'backend', 'load (s)', 'sample (tok/s)', 'LoRA train (tok/s)', 'RSS growth after sampling', 'RSS growth after training', 'estimate (one LoRA agent)'],
  rows.map((x) => [x.quant, x.backend, x.loadS.toFixed(1), x.sample.toFixed(1), x.train.toFixed(1), growth(x.rssSample), growth(x.rssTrain), formatBytes(x.estimate)]),
  [false, false, true, true, true, true, true, true],
));
const [f, q] = rows as [Row, Row];
rmSync(dir, { recursive: true, force: true });
console.log(`\nq8 / f32 in this run: sampling ${(q.sample / f.sample).toFixed(2)}×, LoRA training ${(q.train / f.train).toFixed(2)}×; 1-minute load average at the end ${os.loadavg()[0]!.toFixed(2)}`);
const g = rows[2];
if (g) console.log(`q8 on ${g.backend} / q8 on the CPU: sampling ${(g.sample / q.sample).toFixed(2)}×, LoRA training ${(g.train / q.train).toFixed(2)}×`);
