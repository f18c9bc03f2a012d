/**
 * The bench's printed tables (bench/cpu.ts): per model, our child's result and the TF.js child's
 * (and ORT's threaded child's, when there is one)
 * → three Markdown tables: throughput (ours, TF.js stock / fixed, ORT at 1 and at our thread count, and the ratios), our
 * memory, TF.js's memory. Every figure is measured in the run; ratios are ours ÷ peer, training
 * against the better of the two TF.js configurations. The same text is pasted into
 * docs/performance.md, so it is Markdown that also reads well in a terminal (columns padded).
 *
 * Not here: the measuring (bench/cpu.ts, bench/measure.ts).
 */
import type { PhaseMemory } from './measure';

/** What one model's TF.js child process measured (bench/tfjs.ts). Times in ms, memory in bytes. */
export interface TfjsResult {
  readonly name: string;
  readonly version: string;
  readonly threads: number;
  readonly simd: boolean;
  readonly multithread: boolean;
  readonly trainStockMs: number[];
  readonly trainFixedMs: number[];
  readonly sampleMs: number[];
  readonly sampleTokens: number;
  readonly forwardMs: number[];
  /** max |ours − TF.js| / max |ours|, logits of the initial weights on the bench batch. */
  readonly relDiff: number;
  /** The same for the gradients, fixed vs stock (same maths, other kernels). */
  readonly gradRelDiff: number;
  /** ms per product at N × C → hidden (w1's shape): NN, NT, TN flags and transpose-then-NN. */
  readonly matmul: { readonly nn: number; readonly nt: number; readonly tn: number; readonly transposeNn: number };
  /** RSS before TF.js is imported, and after import + wasm backend ready (before the model). */
  readonly baselineRss: number;
  readonly importRss: number;
  readonly mem: { readonly stock: PhaseMemory; readonly fixed: PhaseMemory; readonly sample: PhaseMemory; readonly forward: PhaseMemory };
  /** process.resourceUsage().maxRSS after the four phases (bytes). */
  readonly peakRss: number;
}

/** What one model's child process measured. Times in ms (every repetition), memory in bytes. */
export interface ModelResult {
  readonly name: string;
  readonly params: number;
  readonly describe: string;
  readonly batch: number;
  readonly seq: number;
  readonly trainMs: number[];
  readonly sampleMs: number[];
  /** Tokens generated per `generate` call. */
  readonly sampleTokens: number;
  readonly forwardMs: number[];
  readonly ortMs: number[];
  readonly ortCreateMs: number;
  /** max |ours − ORT| / max |ours| on the bench batch. */
  readonly ortRelDiff: number;
  readonly baselineRss: number;
  readonly mem: { readonly train: PhaseMemory; readonly sample: PhaseMemory; readonly forward: PhaseMemory; readonly ort: PhaseMemory };
  /** process.resourceUsage().maxRSS after our three phases, before ORT is loaded (bytes). */
  readonly peakRssOurs: number;
  /** The same at the end (ORT included). */
  readonly peakRssAll: number;
  /** Threads our CPU backend used (src/backend/cpu/threads.ts: the caller and its ready helpers). */
  readonly threads: number;
}

/** ORT with numThreads > 1, in a child of its own (its thread count is per process): bench/cpu.ts `--ort`. */
export interface OrtThreadedResult {
  readonly threads: number;
  readonly ortMs: number[];
}

const MiB = 1024 * 1024;

function fmtInt(x: number): string {
  return Math.round(x).toLocaleString('en-US');
}

function fmtMiB(x: number): string {
  return (x / MiB).toFixed(0);
}

/** A padded Markdown table. */
export function markdownTable(head: readonly string[], rows: readonly (readonly string[])[], rightAlign: readonly boolean[]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => `| ${cells.map((c, i) => (rightAlign[i] ? c.padStart(w[i]!) : c.padEnd(w[i]!))).join(' | ')} |`;
  const sep = `|${w.map((n, i) => (rightAlign[i] ? `${'-'.repeat(n + 1)}:` : `:${'-'.repeat(n + 1)}`)).join('|')}|`;
  return [line(head), sep, ...rows.map(line)].join('\n');
}

/** tokens / median seconds. */
export function tokensPerSecond(tokens: number, ms: readonly number[], med: (xs: readonly number[]) => number): number {
  return tokens / (med(ms) / 1000);
}

/** One field of several phases' memory, MiB to one decimal, "a / b / c". */
function perPhase(phases: readonly PhaseMemory[], key: 'heapUsed' | 'arrayBuffers'): string {
  return phases.map((m) => (m[key] / MiB).toFixed(1)).join(' / ');
}

/** A ratio: two decimals, one from 10 up ("0.35", "12.3"). */
function fmtRatio(x: number): string {
  return x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

/** The throughput table (tokens/s, medians), our memory table and TF.js's (MiB). */
export function renderTables(rows: readonly { readonly ours: ModelResult; readonly tfjs: TfjsResult; readonly ortT: OrtThreadedResult | null }[], med: (xs: readonly number[]) => number): string {
  const ortThreads = rows.find((x) => x.ortT !== null)?.ortT?.threads ?? 0;
  const thr = rows.map(({ ours: r, tfjs: t, ortT }) => {
    const N = r.batch * r.seq;
    const train = tokensPerSecond(N, r.trainMs, med);
    const stock = tokensPerSecond(N, t.trainStockMs, med);
    const fixed = tokensPerSecond(N, t.trainFixedMs, med);
    const sample = tokensPerSecond(r.sampleTokens, r.sampleMs, med);
    const tSample = tokensPerSecond(t.sampleTokens, t.sampleMs, med);
    const fwd = tokensPerSecond(N, r.forwardMs, med);
    const tFwd = tokensPerSecond(N, t.forwardMs, med);
    const ort = tokensPerSecond(N, r.ortMs, med);
    const ortN = ortT === null ? 0 : tokensPerSecond(N, ortT.ortMs, med);
    return [
      r.name,
      fmtInt(r.params),
      fmtInt(train),
      fmtInt(stock),
      fmtInt(fixed),
      fmtRatio(train / Math.max(stock, fixed)),
      fmtInt(sample),
      fmtInt(tSample),
      fmtRatio(sample / tSample),
      fmtInt(fwd),
      fmtInt(tFwd),
      fmtInt(ort),
      ...(ortThreads > 0 ? [ortT === null ? '—' : fmtInt(ortN)] : []),
      fmtRatio(fwd / tFwd),
      fmtRatio(fwd / Math.max(ort, ortN)),
    ];
  });
  const t1 = markdownTable(
    [
      'model',
      'params',
      'train (ours)',
      'train TF.js stock',
      'train TF.js fixed',
      'train: ours / best TF.js',
      'sample (ours)',
      'sample (TF.js)',
      'sample: ours / TF.js',
      'forward (ours)',
      'forward (TF.js)',
      'forward (ORT)',
      ...(ortThreads > 0 ? [`forward (ORT ${ortThreads} threads)`] : []),
      'fwd: ours / TF.js',
      ortThreads > 0 ? 'fwd: ours / best ORT' : 'fwd: ours / ORT',
    ],
    thr,
    [false, ...new Array<boolean>(ortThreads > 0 ? 14 : 13).fill(true)],
  );
  const mem = rows.map(({ ours: r, tfjs: t }) => {
    const { train, sample, forward, ort } = r.mem;
    return [
      r.name,
      fmtMiB(r.baselineRss),
      fmtMiB(train.rss),
      fmtMiB(sample.rss),
      fmtMiB(forward.rss),
      fmtMiB(r.peakRssOurs),
      fmtMiB(t.peakRss),
      fmtRatio(r.peakRssOurs / t.peakRss),
      fmtMiB(ort.rss),
      perPhase([train, sample, forward, ort], 'heapUsed'),
      perPhase([train, sample, forward, ort], 'arrayBuffers'),
    ];
  });
  const t2 = markdownTable(
    ['model', 'RSS start', 'RSS train', 'RSS sample', 'RSS forward', 'peak RSS (ours)', 'peak RSS (TF.js)', 'ours / TF.js', 'RSS + ORT', 'heapUsed tr / sa / fw / ORT', 'arrayBuffers tr / sa / fw / ORT'],
    mem,
    [false, ...new Array<boolean>(10).fill(true)],
  );
  const tmem = rows.map(({ tfjs: t }) => {
    const { stock, fixed, sample, forward } = t.mem;
    return [
      t.name,
      fmtMiB(t.baselineRss),
      fmtMiB(t.importRss),
      fmtMiB(stock.rss),
      fmtMiB(fixed.rss),
      fmtMiB(sample.rss),
      fmtMiB(forward.rss),
      fmtMiB(t.peakRss),
      perPhase([stock, fixed, sample, forward], 'heapUsed'),
    ];
  });
  const t3 = markdownTable(
    ['model', 'RSS start', 'RSS + TF.js loaded', 'RSS train stock', 'RSS train fixed', 'RSS sample', 'RSS forward', 'peak RSS (TF.js)', 'heapUsed st / fx / sa / fw'],
    tmem,
    [false, ...new Array<boolean>(8).fill(true)],
  );
  return [
    `Throughput, tokens/s (median of the timed repetitions; ratios ours ÷ peer, training against the better TF.js configuration${ortThreads > 0 ? ', forward against the better ORT thread count' : ''}):\n\n${t1}`,
    `Memory, ours, MiB (peak during each phase; one fresh process per model):\n\n${t2}`,
    `Memory, TF.js, MiB (its own fresh process per model; TF.js keeps tensors in the wasm heap, inside RSS but not in heapUsed):\n\n${t3}`,
  ].join('\n\n');
}
