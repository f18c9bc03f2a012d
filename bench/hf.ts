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
import { GpuContext } from '../src/backend/webgpu/kernel';
import { acquireAnyDevice } from '../src/backend/webgpu/node';
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
const RANK = 8;

/**
 * What one row measures: sampling S prompts × P tokens, N new each; LoRA steps on B × T tokens;
 * `reps` timed calls after one warm-up (the same call, or with `warm` the smaller one it names:
 * it compiles the same pipelines), as many as fit in budgetS per phase.
 */
interface Workload {
  readonly S: number;
  readonly P: number;
  readonly N: number;
  readonly B: number;
  readonly T: number;
  readonly reps: number;
  /** A smaller warm-up: a prompt of P tokens with N new, a LoRA step on 1 × T; null: no warm-up (the timed call includes the pipelines' compilation). */
  readonly warm?: { readonly P: number; readonly N: number; readonly T: number } | null;
  /** The phases measured (default both). */
  readonly phases?: readonly ('sample' | 'train')[];
  /** Seconds per phase (warm-up included) after which no further timed call starts; null: all `reps`. */
  readonly budgetS: number | null;
}
/** The CPU rows' workload (the figures in docs/models.md). */
const FULL: Workload = { S: 4, P: 16, N: 16, B: 2, T: 32, reps: 3, budgetS: null };

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '135m' }, child: { type: 'string' }, dir: { type: 'string' }, gpu: { type: 'boolean' }, 'gpu-only': { type: 'boolean' },
    backend: { type: 'string', default: 'cpu' }, workload: { type: 'string' }, budget: { type: 'string', default: '240' }, deadline: { type: 'string' },
    phases: { type: 'string' }, 'no-warmup': { type: 'boolean' },
  },
});
const spec = SIZES[values.size!];
if (!spec) throw new Error(`--size must be one of ${Object.keys(SIZES).join(', ')}`);
const budgetS = Number(values.budget);
if (!(budgetS > 0)) throw new Error(`--budget must be a number of seconds > 0, not ${values.budget}`);
/**
 * The WebGPU rows' workload (and a CPU q8 row at the same workload, for the ratio): one prompt of
 * 4 tokens, 4 new; one LoRA step on 1 × 4 tokens; warm-ups of a 1-token prompt with 2 new and a
 * step on 1 × 2 — small enough that SwiftShader (a CPU emulation of a GPU: about 10 s per token of
 * the 135M checkpoint's forward here) finishes in minutes; `--budget` seconds per phase.
 */
const phasesArg = (values.phases ?? 'sample,train').split(',');
if (!phasesArg.every((x) => x === 'sample' || x === 'train')) throw new Error(`--phases must list sample and/or train, not ${values.phases}`);
const SMALL: Workload = {
  S: 1, P: 4, N: 4, B: 1, T: 4, reps: 1, budgetS, warm: values['no-warmup'] ? null : { P: 1, N: 2, T: 2 },
  ...(values.phases ? { phases: phasesArg as ('sample' | 'train')[] } : {}),
};

/** "1 prompt × 4 tokens, 4 new each, 1 timed call (warm-up: 1 × 1, 2 new)" / "batch 1 × 4 tokens, 1 timed step (warm-up 1 × 2)". */
function describeSampling(w: Workload, calls: number): string {
  if (w.phases && !w.phases.includes('sample')) return 'not measured (--phases)';
  return `${w.S} prompt${w.S === 1 ? '' : 's'} × ${w.P} tokens, ${w.N} new each, ${calls} timed call${calls === 1 ? '' : 's'}${w.warm ? ` (warm-up: 1 × ${w.warm.P}, ${w.warm.N} new)` : w.warm === null ? ' (no warm-up)' : ''}`;
}
function describeTraining(w: Workload, calls: number): string {
  if (w.phases && !w.phases.includes('train')) return 'not measured (--phases)';
  return `batch ${w.B} × ${w.T} tokens, ${calls} timed step${calls === 1 ? '' : 's'}${w.warm ? ` (warm-up 1 × ${w.warm.T})` : w.warm === null ? ' (no warm-up)' : ''}`;
}

interface Row {
  quant: QuantKind;
  backend: string;
  workload: Workload;
  cfgLine: string;
  loadS: number;
  /** tokens/s (NaN: the phase did not finish before the child's deadline). */
  sample: number;
  train: number;
  sampleMs: number[];
  trainMs: number[];
  /** The warm-up calls (pipeline compilation on WebGPU), ms. */
  warmMs: [number, number];
  rssSample: number;
  rssTrain: number;
  estimate: number;
  /** Set by the parent when the child was stopped at its deadline: what it had not finished. */
  unfinished?: string;
}

/** One warm-up call (none when warmFn is null), then up to w.reps timed calls while the phase's budget lasts (at least one). */
async function time(fn: () => Promise<unknown>, w: Workload, warmFn: (() => Promise<unknown>) | null = fn): Promise<{ warm: number; ms: number[] }> {
  const a0 = performance.now();
  if (warmFn) await warmFn();
  const warm = warmFn ? performance.now() - a0 : NaN;
  const ms: number[] = [];
  while (ms.length < w.reps && (ms.length === 0 || w.budgetS === null || performance.now() - a0 < 1000 * w.budgetS)) {
    const a = performance.now();
    await fn();
    ms.push(performance.now() - a);
  }
  return { warm, ms };
}

/** The child's backend: the CPU, or (--backend webgpu) the adapter WebGPU finds, SwiftShader as the fallback. */
async function backendOf(name: string): Promise<Backend<TensorKinds>> {
  if (name === 'cpu') return cpuBackend as unknown as Backend<TensorKinds>;
  const h = await acquireAnyDevice();
  if (!h.ok) throw new Error(`--gpu: no WebGPU adapter: ${h.reason}`);
  return webgpuBackend(new GpuContext(h.device), h.description) as unknown as Backend<TensorKinds>;
}

/** One base in this (child) process: read the folder, load, sample, train; RSS growth over the baseline after the read. Each finished phase is sent to the parent at once. */
async function measure(quant: QuantKind, backendName: string, w: Workload): Promise<Row> {
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
  const est = estimateMemory(m.cfg, { quant, loraRank: RANK, sequences: w.B, seqLen: w.T, prompts: w.S });
  const row: Row = {
    quant, backend: be.name, workload: w, cfgLine: describeConfig(m.cfg), loadS, sampleMs: [], trainMs: [], warmMs: [NaN, NaN],
    rssSample: NaN, rssTrain: NaN, estimate: est.total, sample: NaN, train: NaN,
  };
  process.send!({ partial: row });
  const r = new Rng(2);
  const prompts = Array.from({ length: w.S }, () => Int32Array.from({ length: w.P }, () => r.int(m.cfg.vocab)));
  const phases = w.phases ?? ['sample', 'train'];
  let s = { warm: NaN, ms: [] as number[] };
  if (phases.includes('sample')) {
    const inf = new Model(be, m.cfg, m.weights, { trainable: 'none' });
    const gen = (ps: Int32Array[], maxNew: number) => () => inf.generate(ps, { maxNew, temperature: 0, topK: 0, seed: 1, stream: 0, stop: -1 });
    s = await time(gen(prompts, w.N), w, w.warm ? gen([prompts[0]!.slice(0, w.warm.P)], w.warm.N) : w.warm === null ? null : undefined);
    Object.assign(row, { sampleMs: s.ms, sample: tokensPerSecond(w.S * w.N, s.ms, median), rssSample: rssNow() - base, warmMs: [s.warm, NaN] });
    inf.dispose();
  }
  process.send!({ partial: row });
  if (!phases.includes('train')) return row;
  const lora = new Model(be, m.cfg, m.weights, { trainable: 'lora', lora: { rank: RANK, alpha: 2 * RANK }, seed: 1 });
  const tokens = Int32Array.from({ length: w.B * w.T }, () => 1 + r.int(m.cfg.vocab - 1));
  const t = await time(() => trainOnSequences(lora, tokens, w.B, w.T, { lr: 1e-4 }), w, w.warm ? () => trainOnSequences(lora, tokens.slice(0, w.warm!.T), 1, w.warm!.T, { lr: 1e-4 }) : w.warm === null ? null : undefined);
  Object.assign(row, { trainMs: t.ms, train: tokensPerSecond(w.B * w.T, t.ms, median), rssTrain: rssNow() - base, warmMs: [s.warm, t.warm] });
  lora.dispose();
  return row;
}

/**
 * Runs one base in a child; a child still running `deadlineS` after it started is stopped and its
 * row says which phases it had not finished (its finished phases are kept).
 */
function child(quant: QuantKind, dir: string, backend: string, w: Workload, deadlineS: number): Promise<Row> {
  return new Promise((resolve, reject) => {
    const c = fork(fileURLToPath(import.meta.url), ['--child', quant, '--dir', dir, '--backend', backend, '--workload', JSON.stringify(w)], { execArgv: ['--expose-gc', '--import', 'tsx'] });
    let last: Row | undefined;
    const timer = Number.isFinite(deadlineS)
      ? setTimeout(() => {
          c.kill('SIGKILL');
          const what = !last ? 'the load' : !Number.isFinite(last.sample) ? 'sampling and LoRA training' : 'LoRA training';
          if (!last) return reject(new Error(`the ${quant} ${backend} child did not finish loading in ${deadlineS} s`));
          resolve({ ...last, unfinished: `${what} did not finish within the child's ${deadlineS} s` });
        }, deadlineS * 1000)
      : undefined;
    c.on('message', (m: { partial?: Row; row?: Row }) => {
      if (m.partial) last = m.partial;
      if (m.row) {
        clearTimeout(timer);
        resolve(m.row);
      }
    });
    c.once('exit', (code, sig) => {
      clearTimeout(timer);
      if (code !== 0 && sig !== 'SIGKILL') reject(new Error(`the ${quant} ${backend} child exited with ${code}`));
    });
  });
}

if (values.child) {
  process.send!({ row: await measure(values.child as QuantKind, values.backend!, JSON.parse(values.workload!) as Workload) });
  process.exit(0);
}

const t0 = performance.now();
const dir = join(mkdtempSync(join(os.tmpdir(), 'sat-bench-hf-')), values.size!);
const ck = hfCheckpoint({ ...spec, seed: 1 });
writeHfFolder(dir, ck.files);
console.log(`random checkpoint written to ${dir} in ${((performance.now() - t0) / 1000).toFixed(1)} s (${[...ck.files.values()].reduce((n, b) => n + b.length, 0).toLocaleString('en-US')} bytes)`);
/** A child at the small workload is stopped this long after it starts: the load, two warm-ups and two phase budgets. */
const deadlineS = Number(values.deadline ?? 5 * budgetS);
const rows: Row[] = [];
const cpuRuns: [QuantKind, string, Workload][] = values['gpu-only'] ? [] : [['f32', 'cpu', FULL], ['q8', 'cpu', FULL]];
const gpuRuns: [QuantKind, string, Workload][] = values.gpu || values['gpu-only'] ? [['q8', 'cpu', SMALL], ['q8', 'webgpu', SMALL]] : [];
for (const [quant, backend, w] of [...cpuRuns, ...gpuRuns]) {
  const x = await child(quant, dir, backend, w, w === SMALL ? deadlineS : Infinity);
  // NaN crosses the child's channel as null: a phase that did not finish.
  const one = (t: number | null): string => (typeof t === 'number' && Number.isFinite(t) ? t.toFixed(0) : '—');
  const ms = (v: number[]): string => (v.length ? v.map(one).join('/') : '—');
  console.log(`  ${quant} on ${x.backend}: load ${x.loadS.toFixed(1)} s, sample warm-up ${one(x.warmMs[0])} ms then ${ms(x.sampleMs)} ms, LoRA warm-up ${one(x.warmMs[1])} ms then ${ms(x.trainMs)} ms${x.unfinished ? ` — ${x.unfinished}` : ''}`);
  rows.push(x);
}
const growth = (b: number | null): string => (typeof b !== 'number' || !Number.isFinite(b) ? '—' : b < 0 ? `−${formatBytes(-b)}` : formatBytes(b));
const rate = (v: number | null): string => (typeof v === 'number' && Number.isFinite(v) ? (v < 1 ? v.toPrecision(2) : v.toFixed(1)) : 'did not finish');
const backends = [...new Set(rows.map((x) => x.backend))].join(', ');
const measured = (x: Row, phase: 'sample' | 'train'): boolean => !x.workload.phases || x.workload.phases.includes(phase);
console.log(`\n${rows[0]!.cfgLine}; backends: ${backends} (the CPU backend on one thread); greedy sampling; LoRA rank ${RANK} on every projection; medians of the timed calls after one warm-up (none with --no-warmup)${gpuRuns.length ? `; at the small workload a phase starts no timed call after ${budgetS} s (--budget) and a child is stopped after ${deadlineS} s` : ''}\n`);
console.log(markdownTable(
  ['base', 'backend', 'load (s)', 'sampling workload', 'sample (tok/s)', 'LoRA workload', 'LoRA train (tok/s)', 'RSS growth after sampling', 'RSS growth after training', 'estimate (one LoRA agent)'],
  rows.map((x) => [
    x.quant, x.backend, x.loadS.toFixed(1), describeSampling(x.workload, x.sampleMs.length), measured(x, 'sample') ? rate(x.sample) : '—', describeTraining(x.workload, x.trainMs.length), measured(x, 'train') ? rate(x.train) : '—',
    growth(x.rssSample), growth(x.rssTrain), formatBytes(x.estimate),
  ]),
  [false, false, true, false, true, false, true, true, true, true],
));
rmSync(dir, { recursive: true, force: true });
const [f, q] = cpuRuns.length ? (rows as [Row, Row]) : [];
if (f && q) console.log(`\nq8 / f32 in this run: sampling ${(q.sample / f.sample).toFixed(2)}×, LoRA training ${(q.train / f.train).toFixed(2)}×`);
const [qs, g] = gpuRuns.length ? rows.slice(cpuRuns.length) : [];
const ratio = (a: number | null, b: number | null): string => (typeof a === 'number' && typeof b === 'number' && Number.isFinite(a / b) ? `${(a / b).toPrecision(2)}×` : '—');
if (qs && g) console.log(`q8 on ${g.backend} / q8 on the CPU at the small workload: sampling ${ratio(g.sample, qs.sample)}, LoRA training ${ratio(g.train, qs.train)}`);
console.log(`1-minute load average at the end ${os.loadavg()[0]!.toFixed(2)}; ${new Date().toISOString()}`);
