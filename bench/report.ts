/**
 * The bench's printed tables (bench/cpu.ts): one result per model → two Markdown tables, the
 * throughput one and the memory one, with the issue's TF.js reference figures as columns. The
 * same text is pasted into docs/performance.md, so it is Markdown that also reads well in a
 * terminal (columns padded).
 *
 * Not here: the measuring (bench/cpu.ts, bench/measure.ts).
 */
import type { PhaseMemory } from './measure';

/** TF.js 4.22 (wasm backend) figures from the issue, same shapes (batch 64 × 32 tokens). */
export interface Reference {
  readonly train: number;
  readonly sample: number;
  /** Peak process memory, MB. */
  readonly peakMb: number;
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

/** The throughput table (tokens/s, medians) and the memory table (MiB). */
export function renderTables(results: readonly ModelResult[], refs: ReadonlyMap<string, Reference>, med: (xs: readonly number[]) => number): string {
  const thr = results.map((r) => {
    const ref = refs.get(r.name);
    const N = r.batch * r.seq;
    const fwd = tokensPerSecond(N, r.forwardMs, med);
    const ort = tokensPerSecond(N, r.ortMs, med);
    return [
      r.name,
      fmtInt(r.params),
      fmtInt(tokensPerSecond(N, r.trainMs, med)),
      ref ? `≈ ${fmtInt(ref.train)}` : '—',
      fmtInt(tokensPerSecond(r.sampleTokens, r.sampleMs, med)),
      ref ? `≈ ${fmtInt(ref.sample)}` : '—',
      fmtInt(fwd),
      fmtInt(ort),
      (fwd / ort).toFixed(2),
    ];
  });
  const t1 = markdownTable(
    ['model', 'params', 'train (ours)', 'train (TF.js)', 'sample (ours)', 'sample (TF.js)', 'forward (ours)', 'forward (ORT wasm)', 'ours / ORT'],
    thr,
    [false, true, true, true, true, true, true, true, true],
  );
  const mem = results.map((r) => {
    const ref = refs.get(r.name);
    const { train, sample, forward, ort } = r.mem;
    return [
      r.name,
      fmtMiB(r.baselineRss),
      fmtMiB(train.rss),
      fmtMiB(sample.rss),
      fmtMiB(forward.rss),
      fmtMiB(r.peakRssOurs),
      ref ? `≈ ${ref.peakMb}` : '—',
      fmtMiB(ort.rss),
      [train, sample, forward, ort].map((m) => (m.heapUsed / MiB).toFixed(1)).join(' / '),
      [train, sample, forward, ort].map((m) => (m.arrayBuffers / MiB).toFixed(1)).join(' / '),
    ];
  });
  const t2 = markdownTable(
    ['model', 'RSS start', 'RSS train', 'RSS sample', 'RSS forward', 'peak RSS (ours)', 'TF.js peak', 'RSS + ORT', 'heapUsed tr / sa / fw / ORT', 'arrayBuffers tr / sa / fw / ORT'],
    mem,
    [false, true, true, true, true, true, true, true, true, true],
  );
  return `Throughput, tokens/s (median of the timed repetitions):\n\n${t1}\n\nMemory, MiB (peak during each phase; one fresh process per model):\n\n${t2}`;
}
