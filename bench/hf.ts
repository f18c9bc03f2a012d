/**
 * `npm run bench:hf`: a small language model on our engine against its peers, in one run, on one
 * random checkpoint with SmolLM-135M's shape in the Hugging Face layout (d 576, 30 layers, 9 heads
 * / 3 K/V heads, hidden 1536, vocab 49,152, tied; 134.5M matmul parameters, BF16 on disk; built by
 * tests/helpers/hfCheckpoint.ts, nothing downloaded). The parent writes the checkpoint folder, an
 * f32 ONNX decoder with a KV cache of the same weights (bench/onnx/decoder.ts) and GGUF files of
 * them (bench/gguf.ts: F32, Q8_0, Q4_0), draws the token ids, then runs every engine in a child
 * process of its own, one after the other (bench/hfPeers.ts says what each runs):
 *   ours-f32, ours-q8, ours-q4   our CPU backend (wasm SIMD, its default threads) through the public API
 *   ours-q8-i8, ours-q4-i8       the same with int8 activations (Model option activations 'int8')
 *   ort-web-1, ort-web-2         onnxruntime-web, wasm EP, 1 and 2 threads, on the ONNX
 *   ort-node                     onnxruntime-node (native CPU EP, as many threads as cores), same ONNX
 *   llama-f32, llama-q8_0, llama-q4_0   llama.cpp (node-llama-cpp) on the GGUFs
 *   torch                        PyTorch CPU when python3 has it
 *   limits                       this machine: streaming read GB/s, our SIMD matmul's peak GFLOP/s
 * `--threads N` sets the native peers' threads (default: every core); ours and onnxruntime-web keep
 * their own (ours: min(cores, 4); ORT-web: the row's 1 or 2).
 * `--gpu` runs instead the WebGPU rows (ours-webgpu-f32, ours-webgpu-q8, ort-webgpu: onnxruntime-web's
 * WebGPU EP on the same ONNX) beside ours-f32 on the CPU; `--engines a,b` picks rows.
 *
 * Workloads (the same ids everywhere): check — the last position's logits of the 64-token prefill
 * prompt, compared with ours at the same storage before any timing (max |Δ| / max |logits|; llama.cpp
 * gives probabilities, so its row compares log-probabilities); prefill 64 tokens; decode 1 prompt
 * (16 + 32 new), 4 prompts (16 + 16), 16 prompts (16 + 16), greedy; LoRA rank 8 on every projection,
 * batch 2 × 32 (ours, PyTorch). Tables: tokens/s with peak RSS; ours ÷ each peer at the same
 * storage; each row's GFLOP/s (2·params per token forward, 4·params for a LoRA step over a frozen
 * base) and GB/s (a decode step reads every weight once for all its prompts) beside the measured
 * limits. `--size tiny` runs the same on a 0.1M-parameter checkpoint (a smoke run, seconds).
 *
 * Not here: correctness (tests/hf.test.ts, tests/gguf.test.ts), the zoo's models (bench/cpu.ts).
 */
import { fork } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuBackend } from '../src/backend/cpu';
import type { Backend, TensorKinds } from '../src/backend/types';
import { webgpuBackend } from '../src/backend/webgpu/backend';
import { GpuContext } from '../src/backend/webgpu/kernel';
import { acquireAnyDevice } from '../src/backend/webgpu/node';
import { Rng } from '../src/core/rng';
import { formatBytes } from '../src/model/hfConfig';
import type { QuantKind } from '../src/model/quant';
import { hfCheckpoint, writeHfFolder, type HfSpec } from '../tests/helpers/hfCheckpoint';
import { writeGguf, type GgufStorage } from './gguf';
import { exportHfDecoder } from './onnx/decoder';
import { machineLimits, peerImport, peerVersion, logSoftmax, runLlama, runOrt, runOurs, runTorch, type EngineResult, type Workloads } from './hfPeers';
import { median, relDiff } from './measure';
import { loadOrtWebgpu } from './ortWebgpu';
import { markdownTable } from './report';

const SIZES: Record<string, HfSpec> = {
  '135m': { vocab: 49152, d: 576, layers: 30, heads: 9, kvHeads: 3, hidden: 1536, tied: true, dtype: 'BF16', maxPositions: 2048, shards: 2 },
  tiny: { vocab: 272, d: 64, layers: 2, heads: 4, kvHeads: 2, hidden: 96, tied: false, dtype: 'BF16', maxPositions: 128 },
};
const CPU_ENGINES = ['limits', 'ours-f32', 'ours-q8', 'ours-q4', 'ours-q8-i8', 'ours-q4-i8', 'ort-web-1', 'ort-web-2', 'ort-node', 'llama-f32', 'llama-q8_0', 'llama-q4_0', 'torch'];
const GPU_ENGINES = ['ours-f32', 'ours-webgpu-f32', 'ours-webgpu-q8', 'ort-webgpu'];
/** The storage each engine computes with, and ours at that storage (the row its ratio and check are against). */
const STORAGE: Record<string, QuantKind> = { 'ours-q8': 'q8', 'ours-q4': 'q4', 'ours-q8-i8': 'q8', 'ours-q4-i8': 'q4', 'llama-q8_0': 'q8', 'llama-q4_0': 'q4', 'ours-webgpu-q8': 'q8' };
const storageOf = (e: string): QuantKind => STORAGE[e] ?? 'f32';
/** log p below which llama.cpp's f32 probabilities may have underflowed (e^−87 is f32's smallest normal). */
const LOGP_FLOOR = -80;

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '135m' }, engines: { type: 'string' }, gpu: { type: 'boolean' }, reps: { type: 'string', default: '3' },
    budget: { type: 'string', default: '30' }, deadline: { type: 'string', default: '900' }, threads: { type: 'string' }, json: { type: 'string' },
    child: { type: 'string' }, dir: { type: 'string' }, work: { type: 'string' },
  },
});
const spec = SIZES[values.size!];
if (!spec) throw new Error(`--size must be one of ${Object.keys(SIZES).join(', ')}, not ${values.size}`);
const full = { ropeTheta: 10000, eps: 1e-5, vocab: spec.vocab!, d: spec.d!, layers: spec.layers!, heads: spec.heads!, kvHeads: spec.kvHeads!, hidden: spec.hidden!, maxPositions: spec.maxPositions! };
const HS = full.d / full.heads;
/** The native peers' threads (--threads; default: every core, as their own defaults do). */
const cores = Number(values.threads ?? os.cpus().length);
if (!(Number.isInteger(cores) && cores >= 1)) throw new Error(`--threads must be an integer ≥ 1, not ${values.threads}`);

type OrtWeb = typeof import('onnxruntime-web');
/** This file, or the bundle scripts/gpu-pack.sh makes of it (which runs without tsx). */
const selfFile = fileURLToPath(import.meta.url);

/** One engine in this (child) process. */
async function runChild(engine: string, dir: string, w: Workloads): Promise<EngineResult | { limits: Awaited<ReturnType<typeof machineLimits>> }> {
  const kv = { layers: full.layers, kvHeads: full.kvHeads, HS, vocab: full.vocab };
  const onnx = (): Uint8Array => readFileSync(join(dir, 'onnx/model.onnx'));
  const cpu = cpuBackend as unknown as Backend<TensorKinds>;
  const webgpu = async (): Promise<Backend<TensorKinds>> => {
    const h = await acquireAnyDevice();
    if (!h.ok) throw new Error(`no WebGPU adapter: ${h.reason}`);
    return webgpuBackend(new GpuContext(h.device), h.description) as unknown as Backend<TensorKinds>;
  };
  const ortWeb = async (threads: number): Promise<OrtWeb> => {
    const m = await import('onnxruntime-web');
    const ort = (m as unknown as { default?: OrtWeb }).default ?? m;
    ort.env.wasm.numThreads = threads;
    return ort;
  };
  switch (engine) {
    case 'limits':
      return { limits: await machineLimits() };
    case 'ours-f32':
    case 'ours-q8':
    case 'ours-q4':
      return runOurs(engine, `ours ${storageOf(engine)} (CPU, wasm SIMD)`, dir, storageOf(engine), cpu, w, true);
    case 'ours-q8-i8':
    case 'ours-q4-i8':
      return runOurs(engine, `ours ${storageOf(engine)}, int8 activations (CPU, wasm SIMD)`, dir, storageOf(engine), cpu, w, true, 'int8');
    case 'ours-webgpu-f32':
    case 'ours-webgpu-q8': {
      const be = await webgpu();
      return runOurs(engine, `ours ${storageOf(engine)} (WebGPU: ${be.name})`, dir, storageOf(engine), be, w, true);
    }
    case 'ort-web-1':
    case 'ort-web-2': {
      const n = Number(engine.at(-1));
      return runOrt(engine, `onnxruntime-web ${peerVersion('onnxruntime-web')} wasm, ${n} thread${n > 1 ? 's' : ''}, KV cache, f32`, await ortWeb(n), onnx(), kv, w, { executionProviders: ['wasm'] });
    }
    case 'ort-webgpu': {
      await webgpu(); // picks the driver (the machine's, else SwiftShader) that ORT's navigator.gpu then sees
      const o = await loadOrtWebgpu();
      if (typeof o === 'string') return { engine, label: 'onnxruntime-web WebGPU EP', skipped: o } as EngineResult;
      return runOrt(engine, `onnxruntime-web ${o.version} WebGPU EP (${o.adapter}), KV cache, f32`, o.ort, onnx(), kv, w, { executionProviders: ['webgpu'] });
    }
    case 'ort-node': {
      const ort = await peerImport<OrtWeb>('onnxruntime-node');
      if (typeof ort === 'string') return { engine, label: 'onnxruntime-node', skipped: ort } as EngineResult;
      return runOrt(engine, `onnxruntime-node ${peerVersion('onnxruntime-node')} (native CPU EP, ${cores} thread${cores > 1 ? 's' : ''}), KV cache, f32`, ort, onnx(), kv, w, { executionProviders: ['cpu'], intraOpNumThreads: cores });
    }
    case 'llama-f32':
    case 'llama-q8_0':
    case 'llama-q4_0': {
      const st = engine.slice('llama-'.length);
      return runLlama(engine, `llama.cpp (node-llama-cpp ${peerVersion('node-llama-cpp')}, native), ${st}`, join(dir, `model-${st}.gguf`), w, cores);
    }
    case 'torch':
      return runTorch(engine, dir, w, cores);
  }
  throw new Error(`unknown engine "${engine}"`);
}

if (values.child) {
  const w = JSON.parse(readFileSync(values.work!, 'utf8')) as Workloads;
  let out: unknown;
  try {
    out = await runChild(values.child, values.dir!, w);
  } catch (e) {
    out = { engine: values.child, label: values.child, skipped: `failed: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}` };
  }
  // Exit once the message is out (native peers keep threads alive; an early exit would lose it).
  process.send!({ result: out }, () => process.exit(0));
} else await parent();

/** Runs one engine's child; stopped after `deadlineS`. */
function child(engine: string, dir: string, work: string, deadlineS: number): Promise<unknown> {
  return new Promise((resolve) => {
    const c = fork(selfFile, ['--size', values.size!, '--threads', String(cores), '--child', engine, '--dir', dir, '--work', work], { execArgv: selfFile.endsWith('.ts') ? ['--import', 'tsx'] : [] });
    let got: unknown = null;
    const timer = setTimeout(() => c.kill('SIGKILL'), deadlineS * 1000);
    c.on('message', (m: { result?: unknown }) => (got = m.result ?? got));
    c.once('exit', (code, sig) => {
      clearTimeout(timer);
      resolve(got ?? { engine, label: engine, skipped: sig === 'SIGKILL' ? `stopped after ${deadlineS} s (--deadline)` : `the child exited with ${code} before reporting` });
    });
  });
}

async function writeChunks(path: string, parts: Uint8Array[]): Promise<void> {
  const s = createWriteStream(path);
  for (const p of parts) if (!s.write(p)) await new Promise<void>((r) => s.once('drain', () => r()));
  await new Promise<void>((r) => s.end(() => r()));
}

async function parent(): Promise<void> {
  const engines = values.engines ? values.engines.split(',') : values.gpu ? GPU_ENGINES : CPU_ENGINES;
  for (const e of engines) if (![...CPU_ENGINES, ...GPU_ENGINES].includes(e)) throw new Error(`--engines: unknown engine "${e}" (known: ${[...new Set([...CPU_ENGINES, ...GPU_ENGINES])].join(', ')})`);
  const reps = Number(values.reps);
  const budgetS = Number(values.budget);
  const deadlineS = Number(values.deadline);
  if (!(reps >= 1) || !(budgetS > 0) || !(deadlineS > 0)) throw new Error('--reps ≥ 1, --budget > 0 and --deadline > 0 seconds');
  const t0 = performance.now();
  const root = mkdtempSync(join(os.tmpdir(), 'sat-bench-hf-'));
  const dir = join(root, values.size!);
  const ck = hfCheckpoint({ ...spec, seed: 1 });
  writeHfFolder(dir, ck.files);
  if (engines.some((e) => e.startsWith('ort-'))) {
    const ex = exportHfDecoder(full, ck.tensors, { weights: 'f32' });
    mkdirSync(join(dir, 'onnx'), { recursive: true });
    writeFileSync(join(dir, 'onnx/model.onnx'), ex.files.get('onnx/model.onnx')!);
  }
  for (const e of engines.filter((x) => x.startsWith('llama-'))) {
    const st = e.slice('llama-'.length) as GgufStorage;
    await writeChunks(join(dir, `model-${st}.gguf`), writeGguf(full, ck.tensors, st));
  }
  const r = new Rng(2);
  const V = full.vocab;
  const ids = (n: number): number[] => Array.from({ length: n }, () => 3 + r.int(V - 3));
  const w: Workloads = {
    prefill: ids(64),
    decode: [{ S: 1, P: 16, N: 32 }, { S: 4, P: 16, N: 16 }, { S: 16, P: 16, N: 16 }],
    prompts: Array.from({ length: 16 }, () => ids(16)),
    lora: { B: 2, T: 32, tokens: ids(64) },
    reps,
    budgetS,
  };
  const work = join(root, 'work.json');
  writeFileSync(work, JSON.stringify(w));
  console.log(`random checkpoint, ONNX and GGUF files written to ${root} in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}, Node ${process.version}`);

  const rows: EngineResult[] = [];
  let limits: Awaited<ReturnType<typeof machineLimits>> | null = null;
  for (const e of engines) {
    const a = performance.now();
    const x = (await child(e, dir, work, deadlineS)) as EngineResult | { limits: typeof limits };
    if ('limits' in x) {
      limits = x.limits;
      console.log(`  limits: streaming read ${limits!.readGBs.toFixed(1)} GB/s, SIMD matmul ${limits!.matmulGflops.toFixed(1)} GFLOP/s (${limits!.matmulShape}, ${limits!.threads} threads)`);
      continue;
    }
    rows.push(x);
    const ms = (v: number[]): string => (v.length ? v.map((t) => t.toFixed(0)).join('/') : '—');
    console.log(`  ${e}: ${x.skipped ? `skipped — ${x.skipped}` : `load ${x.loadS.toFixed(1)} s, prefill ${ms(x.prefillMs)} ms, decode ${x.decodeMs.map(ms).join(' | ')} ms, LoRA ${ms(x.loraMs)} ms${x.notes.length ? `; ${x.notes.join('; ')}` : ''}`} (${((performance.now() - a) / 1000).toFixed(0)} s)`);
  }
  rmSync(root, { recursive: true, force: true });
  report(rows, w, limits);
  if (values.json) writeFileSync(values.json, JSON.stringify({ rows: rows.map((x) => ({ ...x, checkRel: checkRel(x, rows) })), limits, workloads: { ...w, prompts: undefined } }));
}

/** Ours at storage q in `rows` (on WebGPU when `gpu` and there is such a row). */
function oursIn(rows: readonly EngineResult[], q: QuantKind, gpu: boolean): EngineResult | undefined {
  return rows.find((x) => !x.skipped && x.engine === (gpu ? `ours-webgpu-${q}` : `ours-${q}`)) ?? rows.find((x) => !x.skipped && x.engine === `ours-${q}`);
}

/** A row's logits check against ours on the CPU at its storage (ours q8/q4 against ours f32): max |Δ| / max |logits| (log-probabilities for llama.cpp) and greedy tokens in common; null without a reference. */
function checkRel(x: EngineResult, allRows: readonly EngineResult[]): { rel: number; against: string; greedySame: number } | null {
  const q = storageOf(x.engine);
  const ref = x.engine.startsWith('ours-') && !x.engine.includes('webgpu') ? (q === 'f32' ? undefined : oursIn(allRows, 'f32', false)) : oursIn(allRows, q, false);
  if (x.skipped || !x.check || !ref?.check) return null;
  let rel: number;
  if (x.logp) {
    // llama.cpp's probabilities are f32: below e^−80 they underflow to 0 (log p = −∞), so only the tokens above are compared.
    const lp = logSoftmax(ref.check);
    const kept = lp.flatMap((v, i) => (v > LOGP_FLOOR ? [i] : []));
    rel = relDiff(kept.map((i) => x.check![i]!), kept.map((i) => lp[i]!));
  } else rel = relDiff(x.check, ref.check);
  return { rel, against: ref.engine, greedySame: x.greedy.filter((t, i) => t === ref.greedy[i]).length };
}

/** The tables (header). */
function report(rows: EngineResult[], w: Workloads, limits: Awaited<ReturnType<typeof machineLimits>> | null): void {
  const { layers: L, d: C, kvHeads: KV, hidden: H, vocab: V } = full;
  const params = L * (2 * C * C + 2 * C * KV * HS + 3 * C * H) + V * C;
  const bytesPer: Record<QuantKind, number> = { f32: 4, q8: 34 / 32, q4: 18 / 32 };
  const tps = (tokens: number, ms: number[]): number => (ms.length ? tokens / (median(ms) / 1000) : NaN);
  const rate = (x: EngineResult) => ({
    prefill: tps(w.prefill.length, x.prefillMs),
    decode: w.decode.map((k, i) => tps(k.S * k.N, x.decodeMs[i] ?? [])),
    lora: tps(w.lora.B * w.lora.T, x.loraMs),
  });
  const fmt = (v: number): string => (!Number.isFinite(v) ? '—' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toPrecision(2));
  const live = rows.filter((x) => !x.skipped);
  const oursAt = (q: QuantKind, gpu: boolean): EngineResult | undefined => oursIn(live, q, gpu);
  const check = (x: EngineResult): string => {
    if (x.skipped) return '—';
    const parts: string[] = [];
    const c = checkRel(x, rows);
    if (c) parts.push(`${c.rel.toExponential(1)} vs ${c.against}${x.logp ? ` (log p > ${LOGP_FLOOR})` : ''}, greedy ${c.greedySame}/${x.greedy.length}`);
    if (x.selfCheck) parts.push(`${x.selfCheck.rel.toExponential(1)} vs ${x.selfCheck.against}`);
    return parts.join('; ') || (x.engine === 'ours-f32' ? 'reference' : 'not compared (no reference row in this run)');
  };
  const head = ['engine', 'load (s)', `prefill ${w.prefill.length}`, ...w.decode.map((k) => `decode ${k.S} × (${k.P} + ${k.N})`), `LoRA r8 ${w.lora.B} × ${w.lora.T}`, 'peak RSS', 'logits: max |Δ| / max |logits|'];
  console.log(`\n${values.size} checkpoint: d ${C}, ${L} layers, ${full.heads}/${KV} heads, hidden ${H}, vocab ${V}; ${(params / 1e6).toFixed(1)}M matmul parameters. Tokens/s, median of up to ${w.reps} timed calls after a warm-up (a phase starts no call after ${w.budgetS} s); greedy; every engine in its own process.\n`);
  console.log(markdownTable(head, rows.map((x) => {
    if (x.skipped) return [x.label, '—', '—', ...w.decode.map(() => '—'), '—', '—', `not run: ${x.skipped}`];
    const t = rate(x);
    return [x.label, x.loadS.toFixed(1), fmt(t.prefill), ...t.decode.map(fmt), fmt(t.lora), formatBytes(x.peakRss), check(x)];
  }), [false, true, true, ...w.decode.map(() => true), true, true, false]));

  const peers = live.filter((x) => !x.engine.startsWith('ours-'));
  if (peers.length) {
    console.log(`\nOurs ÷ peer (ours at the peer's storage: f32 for ONNX Runtime and PyTorch, q8 for Q8_0, q4 for Q4_0${values.gpu ? '; WebGPU rows against ours on WebGPU' : ''}):\n`);
    console.log(markdownTable(['peer', 'ours', `prefill ${w.prefill.length}`, ...w.decode.map((k) => `decode ${k.S} prompt${k.S > 1 ? 's' : ''}`), 'LoRA'], peers.flatMap((p) => {
      const q = storageOf(p.engine);
      const gpu = p.engine.includes('webgpu');
      // Ours at the peer's storage, exact; for Q8_0 / Q4_0 (which quantize activations too) also with int8 activations.
      const ours = [oursAt(q, gpu), ...(q !== 'f32' && !gpu ? [live.find((x) => x.engine === `ours-${q}-i8`)] : [])].filter((x): x is EngineResult => x !== undefined);
      if (!ours.length) return [[p.label, '—', '—', ...w.decode.map(() => '—'), '—']];
      const b = rate(p);
      const ratio = (x: number, y: number): string => (Number.isFinite(x / y) ? `${(x / y).toFixed(2)}×` : '—');
      return ours.map((o) => {
        const a = rate(o);
        return [p.label, o.engine, ratio(a.prefill, b.prefill), ...a.decode.map((v, i) => ratio(v, b.decode[i]!)), ratio(a.lora, b.lora)];
      });
    }), [false, false, true, ...w.decode.map(() => true), true]));
  }

  console.log(`\nAgainst this machine's limits${limits ? `: streaming read ${limits.readGBs.toFixed(1)} GB/s, our SIMD matmul ${limits.matmulGflops.toFixed(1)} GFLOP/s (${limits.threads} threads)` : ' (not measured: add the limits engine)'}. GFLOP/s: 2·params per token (prefill, decode), 4·params per LoRA token (forward + input gradients through the frozen base); GB/s: the weights at their storage (${(params / 1e6).toFixed(1)}M × 4 / 34⁄32 / 18⁄32 bytes) read once per decode step, shared by its prompts.\n`);
  console.log(markdownTable(['engine', `prefill GFLOP/s`, ...w.decode.map((k) => `decode ${k.S}: GB/s · GFLOP/s`), 'LoRA GFLOP/s'], live.map((x) => {
    const t = rate(x);
    const gf = (tok: number, per: number): string => fmt((tok * per * params) / 1e9);
    const gb = (tok: number, S: number): string => fmt(((tok / S) * params * bytesPer[storageOf(x.engine)]) / 1e9);
    return [x.label, gf(t.prefill, 2), ...t.decode.map((v, i) => `${gb(v, w.decode[i]!.S)} · ${gf(v, 2)}`), gf(t.lora, 4)];
  }), [false, true, ...w.decode.map(() => true), true]));
  console.log(`\n1-minute load average at the end ${os.loadavg()[0]!.toFixed(2)}; ${new Date().toISOString()}`);
}
