/**
 * `npm run bench:hf`: what a Hugging Face Llama checkpoint costs on the CPU backend — a random
 * checkpoint in the HF layout with SmolLM-135M's shape (d 576, 30 layers, 9 heads / 3 K/V heads,
 * hidden 1536, vocab 49152, tied; 134.5M parameters, BF16 on disk), built in memory by
 * tests/helpers/hfCheckpoint.ts, so nothing is downloaded. A printed table, not a test.
 *
 * Per base storage (f32, then q8 — the ratio q8 / f32 is measured in the same run):
 *   load     loadHfCheckpoint (read, BF16 → f32, RoPE permutation, K/V repeat, quantize) → seconds
 *   sample   generate(S prompts of P tokens, N new tokens each, greedy, no stop) on a 'none'
 *            model → generated tokens / call time
 *   LoRA     trainOnSequences (forward + next-token loss + backward + AdamW of rank-8 adapters on
 *            every projection over the frozen base) on random tokens [B × T] → B·T / step time
 * and the memory: the process RSS after each phase minus the RSS before the load (both after a
 * full GC — the script runs with --expose-gc — so the other base's garbage is not counted; the
 * checkpoint's file bytes are held throughout and are in neither), beside the config-only
 * estimate (hfConfig.ts estimateMemory) of an agent on it for the same B × T and S prompts. Each
 * phase: 1 warm-up call, then REPS timed; the median is reported. `--size tiny` runs the same on a
 * 0.1M-parameter checkpoint (a smoke check of the bench).
 *
 * Not here: WebGPU (bench/gpu.ts measures the kernels there; an HF model on WebGPU is not
 * measured yet), correctness (tests/hf.test.ts).
 */
import { parseArgs } from 'node:util';
import { cpuBackend } from '../src/backend/cpu';
import { Rng } from '../src/core/rng';
import { describeConfig } from '../src/model/config';
import { estimateMemory, formatBytes } from '../src/model/hfConfig';
import { loadHfCheckpoint } from '../src/model/hfLoad';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import type { QuantKind } from '../src/model/quant';
import { hfCheckpoint, type HfSpec } from '../tests/helpers/hfCheckpoint';
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

const { values } = parseArgs({ options: { size: { type: 'string', default: '135m' } } });
const spec = SIZES[values.size!];
if (!spec) throw new Error(`--size must be one of ${Object.keys(SIZES).join(', ')}`);

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:hf does), so garbage does not count as memory');
/** RSS after a full GC, bytes. */
const rssNow = (): number => {
  gc();
  return process.memoryUsage().rss;
};
const rss = (): string => formatBytes(rssNow());
const growth = (b: number): string => (b < 0 ? `−${formatBytes(-b)}` : formatBytes(b));
const t0 = performance.now();
const ck = hfCheckpoint({ ...spec, seed: 1 });
ck.tensors.clear(); // the bench needs the files only
console.log(`random checkpoint built in ${((performance.now() - t0) / 1000).toFixed(1)} s (${[...ck.files.values()].reduce((a, b) => a + b.length, 0).toLocaleString('en-US')} bytes on "disk"); RSS ${rss()}`);

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

interface Row {
  quant: QuantKind;
  loadS: number;
  sample: number;
  train: number;
  rssSample: string;
  rssTrain: string;
  estimate: string;
}

const rows: Row[] = [];
let cfgLine = '';
for (const quant of ['f32', 'q8'] as const) {
  const base = rssNow();
  const a = performance.now();
  const m = await loadHfCheckpoint(ck.files, { quant, maxSeq: 128 });
  const loadS = (performance.now() - a) / 1000;
  cfgLine = describeConfig(m.cfg);
  const r = new Rng(2, [quant === 'f32' ? 0 : 1]);
  const prompts = Array.from({ length: S }, () => Int32Array.from({ length: P }, () => r.int(m.cfg.vocab)));
  const inf = new Model(cpuBackend, m.cfg, m.weights, { trainable: 'none' });
  const sampleMs = await time(() => inf.generate(prompts, { maxNew: N, temperature: 0, topK: 0, seed: 1, stream: 0, stop: -1 }));
  const rssSample = growth(rssNow() - base);
  inf.dispose();
  const lora = new Model(cpuBackend, m.cfg, m.weights, { trainable: 'lora', lora: { rank: RANK, alpha: 2 * RANK }, seed: 1 });
  const tokens = Int32Array.from({ length: B * T }, () => 1 + r.int(m.cfg.vocab - 1));
  const trainMs = await time(() => trainOnSequences(lora, tokens, B, T, { lr: 1e-4 }));
  const rssTrain = growth(rssNow() - base);
  lora.dispose();
  const est = estimateMemory(m.cfg, { quant, loraRank: RANK, sequences: B, seqLen: T, prompts: S });
  rows.push({ quant, loadS, sample: tokensPerSecond(S * N, sampleMs, median), train: tokensPerSecond(B * T, trainMs, median), rssSample, rssTrain, estimate: formatBytes(est.total) });
  console.log(`  ${quant}: load ${loadS.toFixed(1)} s, sample ${sampleMs.map((x) => x.toFixed(0)).join('/')} ms, LoRA step ${trainMs.map((x) => x.toFixed(0)).join('/')} ms`);
}

console.log(`\n${cfgLine}; CPU backend, one thread; sampling ${S} prompts × ${P} tokens, ${N} new each (greedy); LoRA rank ${RANK} on every projection, batch ${B} × ${T}; medians of ${REPS}\n`);
console.log(markdownTable(
  ['base', 'load (s)', 'sample (tok/s)', 'LoRA train (tok/s)', 'RSS growth: inference model', 'RSS growth: LoRA model', 'estimate (one LoRA agent)'],
  rows.map((x) => [x.quant, x.loadS.toFixed(1), x.sample.toFixed(1), x.train.toFixed(1), x.rssSample, x.rssTrain, x.estimate]),
  [false, true, true, true, true, true, true],
));
const [f, q] = rows as [Row, Row];
console.log(`\nq8 / f32 in this run: sampling ${(q.sample / f.sample).toFixed(2)}×, LoRA training ${(q.train / f.train).toFixed(2)}×`);
