/**
 * The engines of `npm run bench:hf` (bench/hf.ts), one per child process: each loads the same
 * random checkpoint in its own format, returns its logits on the check prompt, then times the same
 * workloads with the same token ids. What one engine is:
 *   ours      Model over the CPU backend (wasm SIMD, its default threads) or the WebGPU backend,
 *             loaded by loadHfCheckpoint at f32 / q8 / q4: Model.forward (prefill),
 *             Model.generate (decode, greedy), trainOnSequences (LoRA rank 8)
 *   ort       an f32 ONNX decoder with a KV cache (bench/onnx/decoder.ts, the transformers.js
 *             layout: past_key_values.L.key/value in, present.L.* out) run by onnxruntime-web
 *             (wasm EP at 1 or 2 threads, or its WebGPU EP) or onnxruntime-node (native CPU EP);
 *             decode = one run over the prompts, then one run per new token feeding `present` back
 *   llama     llama.cpp through node-llama-cpp on a GGUF written by bench/gguf.ts (F32, Q8_0, Q4_0);
 *             decode = one context sequence per prompt, evaluated together (node-llama-cpp batches
 *             the sequences' tokens into one llama_decode)
 *   torch     PyTorch (bench/hfTorch.py, a child Python process: the first of $PYTHON, python3,
 *             /usr/bin/python3 that imports torch and numpy)
 *   limits    this machine's streaming read (GB/s) and our SIMD matmul's peak (GFLOP/s)
 * Greedy decoding everywhere, no stop token. Timing: one warm-up call (decode: a smaller one),
 * then up to `reps` timed calls while the workload's budget lasts; the median is reported.
 * Peak RSS: the child's VmHWM at its end (peakRss; the Python child's own getrusage); ours: before
 * its self-check (which builds a second, dequantized f32 model), so the seat's own peak, noted
 * beside the RSS before the load and the CPU kernels' memory at that peak.
 *
 * The native peers live in bench/peers/node_modules (`npm run bench:peers` installs them; they are
 * never needed by the page, the CLI or the tests): `peerImport` returns null with the reason
 * when they are absent.
 *
 * Not here: writing the files (bench/hf.ts), the tables (bench/hf.ts).
 */
import { spawnSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cpuBackend, simdBuild } from '../src/backend/cpu';
import { simdResidentStats } from '../src/backend/cpu/simdMemory';
import { threadPlan } from '../src/backend/cpu/threads';
import type { Backend, TensorKinds } from '../src/backend/types';
import { openHfFolder } from '../src/cli/hfSeat';
import { estimateMemory, formatBytes } from '../src/model/hfConfig';
import { loadHfCheckpoint } from '../src/model/hfLoad';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import type { QuantKind } from '../src/model/quant';
import { dequantizeWeights, weightBytes } from '../src/model/weights';
import { relDiff } from './measure';

/** One decode workload: S prompts of P tokens, N new tokens each. */
export interface DecodeWork {
  readonly S: number;
  readonly P: number;
  readonly N: number;
}

/** What every engine runs (the same ids everywhere: the parent draws them). */
export interface Workloads {
  /** The prefill prompt (its last position's logits are the check). */
  readonly prefill: number[];
  readonly decode: readonly DecodeWork[];
  /** Prompts: decode[k] uses the first S rows, first P tokens of each. */
  readonly prompts: number[][];
  /** LoRA batch B × T (ours and torch only) and its tokens. */
  readonly lora: { readonly B: number; readonly T: number; readonly tokens: number[] };
  readonly reps: number;
  /** Seconds per workload after which no further timed call starts. */
  readonly budgetS: number;
}

/** One engine's result (sent to the parent). Times in ms; NaN: not measured. */
export interface EngineResult {
  readonly engine: string;
  readonly label: string;
  /** Why it did not run (not installed, failed): the row prints it instead of numbers. */
  skipped?: string;
  loadS: number;
  /** The check prompt's last-position logits (`logp` true: log-probabilities, llama.cpp gives no raw logits). */
  check: number[] | null;
  logp: boolean;
  /** Engines that compare themselves (ours q8/q4 against their own dequantized f32): max |Δ| / max |logits|. */
  selfCheck?: { against: string; rel: number };
  /** The first decode workload's greedy tokens of prompt 0. */
  greedy: number[];
  prefillMs: number[];
  decodeMs: number[][];
  loraMs: number[];
  peakRss: number;
  notes: string[];
}

const repo = fileURLToPath(new URL('..', import.meta.url));
const peersDir = `${repo}bench/peers/node_modules/`;

/** A native peer from bench/peers (header), or why not. */
export async function peerImport<T>(pkg: 'node-llama-cpp' | 'onnxruntime-node'): Promise<T | string> {
  const pj = `${peersDir}${pkg}/package.json`;
  if (!existsSync(pj)) return `${pkg} is not installed (npm run bench:peers installs the bench's native peers into bench/peers)`;
  try {
    return (await import(pathToFileURL(`${peersDir}${pkg}/dist/index.js`).href)) as T;
  } catch (e) {
    return `${pkg} failed to load: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`;
  }
}

/** The installed version of a peer package (bench/peers or the root's node_modules). */
export function peerVersion(pkg: string): string {
  for (const base of [peersDir, `${repo}node_modules/`]) {
    try {
      return (JSON.parse(readFileSync(`${base}${pkg}/package.json`, 'utf8')) as { version: string }).version;
    } catch {
      /* next */
    }
  }
  return '?';
}

/** Warm-up, then up to reps timed calls within the budget (at least one). */
async function timed(fn: () => Promise<unknown>, w: Workloads, warm: (() => Promise<unknown>) | null = fn): Promise<number[]> {
  const t0 = performance.now();
  if (warm) await warm();
  const ms: number[] = [];
  while (ms.length < w.reps && (ms.length === 0 || performance.now() - t0 < 1000 * w.budgetS)) {
    const a = performance.now();
    await fn();
    ms.push(performance.now() - a);
  }
  return ms;
}

function blank(engine: string, label: string): EngineResult {
  return { engine, label, loadS: NaN, check: null, logp: false, greedy: [], prefillMs: [], decodeMs: [], loraMs: [], peakRss: NaN, notes: [] };
}

/**
 * This process's peak RSS: Linux's VmHWM (per address space, so it starts afresh at exec) — not
 * getrusage's maxRSS, which a forked child inherits from the moment of the fork, when it is still
 * a copy of the parent (here: the parent's checkpoint and model files); maxRSS elsewhere.
 */
function peakRss(): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    /* not Linux */
  }
  return process.resourceUsage().maxRSS * 1024;
}

const finish = (r: EngineResult): EngineResult => ({ ...r, peakRss: peakRss() });

/** log-softmax of a logits row. */
export function logSoftmax(z: ArrayLike<number>): number[] {
  let mx = -Infinity;
  for (let i = 0; i < z.length; i++) mx = Math.max(mx, z[i]!);
  let s = 0;
  for (let i = 0; i < z.length; i++) s += Math.exp(z[i]! - mx);
  const l = mx + Math.log(s);
  return Array.from(z, (v) => v - l);
}

function argmax(z: ArrayLike<number>, off = 0, n = z.length): number {
  let best = 0;
  for (let i = 1; i < n; i++) if (z[off + i]! > z[off + best]!) best = i;
  return best;
}

// ------------------------------------------------------------------ ours

/** Ours on `be` at `quant` (header). */
export async function runOurs(engine: string, label: string, dir: string, quant: QuantKind, be: Backend<TensorKinds>, w: Workloads, train: boolean, activations: 'exact' | 'int8' = 'exact'): Promise<EngineResult> {
  const r = blank(engine, label);
  const before = process.memoryUsage().rss; // the runtime's own (Node, tsx, the modules), before any weight
  const a = performance.now();
  // As the CLI seats a checkpoint: the safetensors files read by position as each tensor is
  // converted, and on the CPU the weights written into the kernels' memory, where the model takes
  // them (adopt) — so the inference and the LoRA model each load their own (the first is disposed first).
  const cpu = be.name === 'cpu';
  const load = async (into: boolean) => {
    const folder = await openHfFolder(dir);
    return loadHfCheckpoint(folder.files, { quant, maxSeq: 128, into: into ? cpuBackend : undefined }).finally(() => folder.close());
  };
  const m = await load(cpu);
  r.loadS = (performance.now() - a) / 1000;
  const V = m.cfg.vocab;
  const inf = new Model(be, m.cfg, m.weights, { trainable: 'none', activations, adopt: cpu });
  const T = w.prefill.length;
  const lastRow = async (model: Model<TensorKinds>): Promise<Float32Array> => {
    const lg = (await be.download('f32', model.forward(Int32Array.from(w.prefill), 1, T))) as Float32Array;
    return lg.slice((T - 1) * V, T * V);
  };
  const row = await lastRow(inf);
  r.check = Array.from(row);
  r.prefillMs = await timed(async () => be.download('f32', inf.forward(Int32Array.from(w.prefill), 1, T)), w);
  const gen = (k: DecodeWork | { S: number; P: number; N: number }) => () =>
    inf.generate(w.prompts.slice(0, k.S).map((p) => Int32Array.from(p.slice(0, k.P))), { maxNew: k.N, temperature: 0, topK: 0, seed: 1, stream: 0, stop: -1 });
  for (const [i, k] of w.decode.entries()) {
    if (i === 0) r.greedy = Array.from((await gen(k)()).tokens[0]!);
    r.decodeMs.push(await timed(gen(k), w, gen({ S: 1, P: k.P, N: 2 })));
  }
  inf.dispose();
  if (train) {
    const base = cpu ? (await load(true)).weights : m.weights;
    const lora = new Model(be, m.cfg, base, { trainable: 'lora', lora: { rank: 8, alpha: 16 }, seed: 1, activations, adopt: cpu });
    const tokens = Int32Array.from(w.lora.tokens);
    r.loraMs = await timed(() => trainOnSequences(lora, tokens, w.lora.B, w.lora.T, { lr: 1e-4 }), w);
    lora.dispose();
  }
  // The peak so far is the seat's (load, inference, a LoRA step); the self-check below builds a
  // second, f32 model (on weights loaded again: the seat's were its models'), so it comes after
  // and is left out of the row's peak.
  const seatPeak = peakRss();
  const kernels = simdResidentStats()?.memoryBytes;
  if (quant !== 'f32') {
    const deq = new Model(be, m.cfg, dequantizeWeights(cpu ? (await load(false)).weights : m.weights), { trainable: 'none' });
    r.selfCheck = { against: `its own weights dequantized to f32`, rel: relDiff(row, await lastRow(deq)) };
    deq.dispose();
  }
  r.notes.push(`weights ${formatBytes(weightBytes(m.weights))} as stored; peak RSS ${(seatPeak / weightBytes(m.weights)).toFixed(2)}× them (RSS before the load ${formatBytes(before)}${cpu && kernels !== undefined ? `; the CPU kernels' memory ${formatBytes(kernels)}: the weights, the LoRA state, activations and scratch` : ''})`);
  const est = estimateMemory(m.cfg, { quant, loraRank: 8, sequences: w.lora.B, seqLen: w.lora.T, prompts: Math.max(...w.decode.map((k) => k.S)), hostCopy: !cpu });
  r.notes.push(`config-only estimate of one LoRA agent ${formatBytes(est.total)}`);
  if (be.name === 'cpu') {
    const t = threadPlan();
    r.notes.push(`our threads ${t.threads}${t.why ? ` (${t.why})` : ''}, kernel build ${simdBuild()}`);
  }
  return { ...r, peakRss: seatPeak };
}

// ------------------------------------------------------------------ onnxruntime (web or node)

type OrtLike = typeof import('onnxruntime-web');

/** ORT on the KV-cache decoder (header): `ort` is onnxruntime-web or onnxruntime-node (the same API). */
export async function runOrt(engine: string, label: string, ort: OrtLike, onnx: Uint8Array, spec: { layers: number; kvHeads: number; HS: number; vocab: number }, w: Workloads, options: Record<string, unknown>): Promise<EngineResult> {
  const r = blank(engine, label);
  const a = performance.now();
  const session = await ort.InferenceSession.create(onnx, { graphOptimizationLevel: 'all', ...options });
  r.loadS = (performance.now() - a) / 1000;
  const { layers: L, kvHeads: KV, HS, vocab: V } = spec;
  /** One run: ids [S × T] at positions past..past+T−1 with the cache `kv` (null: empty). */
  const step = async (ids: number[][], past: number, kv: Map<string, InstanceType<OrtLike['Tensor']>> | null) => {
    const S = ids.length;
    const T = ids[0]!.length;
    const feeds: Record<string, InstanceType<OrtLike['Tensor']>> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.flat(), (x) => BigInt(x)), [S, T]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(S * (past + T)).fill(1n), [S, past + T]),
      position_ids: new ort.Tensor('int64', BigInt64Array.from({ length: S * T }, (_, i) => BigInt(past + (i % T))), [S, T]),
    };
    for (let l = 0; l < L; l++) {
      for (const kind of ['key', 'value']) {
        feeds[`past_key_values.${l}.${kind}`] = kv?.get(`present.${l}.${kind}`) ?? new ort.Tensor('float32', new Float32Array(0), [S, KV, 0, HS]);
      }
    }
    const out = await session.run(feeds);
    const logits = (await out.logits!.getData()) as Float32Array;
    const next = new Map<string, InstanceType<OrtLike['Tensor']>>();
    for (const [k, v] of Object.entries(out)) if (k.startsWith('present.')) next.set(k, v as InstanceType<OrtLike['Tensor']>);
    return { logits, next, S, T };
  };
  const first = await step([w.prefill], 0, null);
  const T = w.prefill.length;
  r.check = Array.from(first.logits.subarray((T - 1) * V, T * V));
  r.prefillMs = await timed(() => step([w.prefill], 0, null), w);
  const decode = async (k: DecodeWork): Promise<number[]> => {
    const prompts = w.prompts.slice(0, k.S).map((p) => p.slice(0, k.P));
    let s = await step(prompts, 0, null);
    const got: number[][] = prompts.map(() => []);
    let last = prompts.map((_, b) => argmax(s.logits, (b * s.T + s.T - 1) * V, V));
    for (let n = 0; n < k.N; n++) {
      last.forEach((t, b) => got[b]!.push(t));
      if (n === k.N - 1) break;
      s = await step(last.map((t) => [t]), k.P + n, s.next);
      last = last.map((_, b) => argmax(s.logits, b * V, V));
    }
    return got[0]!;
  };
  for (const [i, k] of w.decode.entries()) {
    if (i === 0) r.greedy = await decode(k);
    r.decodeMs.push(await timed(() => decode(k), w, () => decode({ S: 1, P: k.P, N: 2 })));
  }
  await session.release();
  return finish(r);
}

// ------------------------------------------------------------------ llama.cpp

/** The part of node-llama-cpp 3.21's API used here (typed locally: the package is an on-demand install). */
interface LlamaSeq {
  clearHistory(): Promise<void>;
  evaluateWithoutGeneratingNewTokens(tokens: number[]): Promise<void>;
  evaluate(tokens: number[], opts: { temperature: number }): AsyncGenerator<number, void, void>;
  controlledEvaluate(items: (number | [number, unknown])[]): Promise<({ next?: { probabilities?: Map<number, number> } } | undefined)[]>;
}
interface LlamaCtx {
  readonly flashAttention: boolean;
  getSequence(): LlamaSeq;
  dispose(): Promise<void>;
}
interface NodeLlamaCpp {
  LlamaLogLevel: { error: unknown };
  getLlama(o: Record<string, unknown>): Promise<{ loadModel(o: Record<string, unknown>): Promise<{ createContext(o: Record<string, unknown>): Promise<LlamaCtx>; dispose(): Promise<void> }> }>;
}

/** llama.cpp on a GGUF (header). */
export async function runLlama(engine: string, label: string, gguf: string, w: Workloads, threads: number): Promise<EngineResult> {
  const r = blank(engine, label);
  const nlc = await peerImport<NodeLlamaCpp>('node-llama-cpp');
  if (typeof nlc === 'string') return { ...r, skipped: nlc };
  const llama = await nlc.getLlama({ gpu: false, build: 'never', logLevel: nlc.LlamaLogLevel.error });
  const a = performance.now();
  const model = await llama.loadModel({ modelPath: gguf, gpuLayers: 0 });
  r.loadS = (performance.now() - a) / 1000;
  const maxS = Math.max(...w.decode.map((k) => k.S));
  const ctxLen = Math.max(w.prefill.length, ...w.decode.map((k) => k.P + k.N)) + 8;
  // The check: f32 K/V cache and no flash attention, so f32 weights give f32 maths throughout.
  const exact = await model.createContext({ contextSize: ctxLen, sequences: 1, threads, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32', flashAttention: false });
  const items: (number | [number, unknown])[] = w.prefill.slice(0, -1);
  items.push([w.prefill.at(-1)!, { generateNext: { probabilities: true, options: { temperature: 1, topK: 0, topP: 1, minP: 0 } } }]);
  const out = await exact.getSequence().controlledEvaluate(items);
  const probs = out.at(-1)?.next?.probabilities;
  if (probs) {
    const lp: number[] = [];
    for (let t = 0; t < probs.size; t++) lp.push(Math.log(probs.get(t) ?? 0));
    r.check = lp;
    r.logp = true;
  }
  await exact.dispose();
  // Timing: llama.cpp's own defaults (f16 K/V cache, flash attention where it chooses).
  const ctx = await model.createContext({ contextSize: ctxLen * maxS, sequences: maxS, threads, batchSize: Math.max(512, ctxLen * maxS) });
  r.notes.push(`llama.cpp threads ${threads}, K/V cache ${ctx.flashAttention ? 'f16 with flash attention' : 'f16'}`);
  const seqs = Array.from({ length: maxS }, () => ctx.getSequence());
  const prefill = async (): Promise<void> => {
    await seqs[0]!.clearHistory();
    await seqs[0]!.evaluateWithoutGeneratingNewTokens(w.prefill);
  };
  r.prefillMs = await timed(prefill, w);
  const decode = async (k: DecodeWork): Promise<number[]> => {
    const outs = await Promise.all(
      seqs.slice(0, k.S).map(async (sq, b) => {
        await sq.clearHistory();
        const got: number[] = [];
        for await (const t of sq.evaluate(w.prompts[b]!.slice(0, k.P), { temperature: 0 })) {
          got.push(t);
          if (got.length >= k.N) break;
        }
        return got;
      }),
    );
    return outs[0]!;
  };
  for (const [i, k] of w.decode.entries()) {
    if (i === 0) r.greedy = await decode(k);
    r.decodeMs.push(await timed(() => decode(k), w, () => decode({ S: 1, P: k.P, N: 2 })));
  }
  await ctx.dispose();
  await model.dispose();
  return finish(r);
}

// ------------------------------------------------------------------ PyTorch

/** PyTorch through bench/hfTorch.py with the first of $PYTHON, python3, /usr/bin/python3 that imports torch (header); otherwise skipped with the reason. */
export async function runTorch(engine: string, dir: string, w: Workloads, threads: number): Promise<EngineResult> {
  const r = blank(engine, 'PyTorch CPU, f32');
  const tried: string[] = [];
  let python = '';
  let version = '';
  for (const py of [process.env.PYTHON, 'python3', '/usr/bin/python3'].filter((x): x is string => !!x)) {
    const probe = spawnSync(py, ['-c', 'import torch, numpy, sys; sys.stdout.write(torch.__version__)'], { encoding: 'utf8' });
    if (probe.status === 0) {
      python = py;
      version = probe.stdout;
      break;
    }
    tried.push(`${py}: ${(probe.stderr || probe.error?.message || '').trim().split('\n').at(-1)}`);
  }
  if (!python) return { ...r, skipped: `no python3 with torch and numpy (${tried.join('; ')}); Debian: apt install python3-torch` };
  const py = fileURLToPath(new URL('./hfTorch.py', import.meta.url));
  return new Promise((resolve) => {
    const c = spawn(python, [py, dir, String(threads)], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (b: Buffer) => (out += b.toString()));
    c.on('close', (code) => {
      if (code !== 0) return resolve({ ...r, skipped: `bench/hfTorch.py exited with ${code}` });
      const x = JSON.parse(out) as EngineResult;
      resolve({ ...r, ...x, engine, label: `PyTorch ${version} CPU (${python}), f32` });
    });
    c.stdin.end(JSON.stringify(w));
  });
}

// ------------------------------------------------------------------ this machine's limits

/** Streaming read (GB/s: one thread's memcmp of two equal 256 MiB buffers, best of 5) and our matmul's peak (GFLOP/s, best of 10). */
export async function machineLimits(): Promise<{ readGBs: number; matmulGflops: number; matmulShape: string; threads: number }> {
  const n = 256 * 2 ** 20;
  const x = Buffer.alloc(n, 1);
  const y = Buffer.alloc(n, 1);
  let best = Infinity;
  for (let k = 0; k < 5; k++) {
    const a = performance.now();
    if (Buffer.compare(x, y) !== 0) throw new Error('unreachable');
    best = Math.min(best, performance.now() - a);
  }
  const readGBs = (2 * n) / (best / 1000) / 1e9;
  const [N, C, OC] = [256, 576, 1536];
  const be = cpuBackend;
  const inp = be.upload('f32', Float32Array.from({ length: N * C }, (_, i) => ((i * 7919) % 13) / 13 - 0.5));
  const W = be.upload('f32', Float32Array.from({ length: OC * C }, (_, i) => ((i * 104729) % 17) / 17 - 0.5));
  const out = be.zeros('f32', N * OC);
  const ms: number[] = [];
  for (let k = 0; k < 12; k++) {
    const a = performance.now();
    be.matmulForward(out, inp, W, 1, N, C, OC);
    ms.push(performance.now() - a);
  }
  const matmulGflops = (2 * N * C * OC) / (Math.min(...ms.slice(2)) / 1000) / 1e9;
  return { readGBs, matmulGflops, matmulShape: `${N} × ${C} · (${OC} × ${C})ᵀ`, threads: threadPlan().threads };
}
