/**
 * Timing and memory helpers of the benches (bench/cpu.ts, bench/page.ts, bench/realSize.ts).
 *
 * Timing: `timeReps` runs a function `warm` times untimed, then `reps` times timed with
 * performance.now(), and returns every duration (ms); the bench reports the median.
 *
 * Memory: a training step or a forward is one synchronous call, so a timer on the main thread
 * never fires inside it. `MemoryProbe` therefore starts a worker thread that reads the PROCESS
 * resident set size (process.memoryUsage.rss() is process-wide, also from a worker) every ~2 ms
 * and keeps the maximum per phase in shared memory — a true high-water mark during the phase,
 * give or take a 2 ms sampling gap and the worker's own few MB. heapUsed and arrayBuffers (where
 * our Float32Arrays live — they are not in the V8 heap) are per-thread numbers, so the main
 * thread samples those itself after every repetition (`sample`).
 *
 * Agreement: `relDiff`, the one measure every bench prints when it compares an engine's numbers with
 * a reference's.
 *
 * Not here: what is measured (bench/cpu.ts), the table (bench/report.ts).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

/** Median of a non-empty list. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new RangeError('median of an empty list');
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** max |x − ref| / max |ref| (the difference itself when ref is all zeros). */
export function relDiff(x: ArrayLike<number>, ref: ArrayLike<number>): number {
  let d = 0;
  let s = 0;
  for (let i = 0; i < ref.length; i++) {
    d = Math.max(d, Math.abs(x[i]! - ref[i]!));
    s = Math.max(s, Math.abs(ref[i]!));
  }
  return s > 0 ? d / s : d;
}

/** Peak memory of one phase, bytes. */
export interface PhaseMemory {
  /** Process RSS high-water mark (worker-sampled every ~2 ms, plus the main thread's samples). */
  readonly rss: number;
  /** Max V8 heapUsed of the main thread, sampled after every repetition. */
  readonly heapUsed: number;
  /** Max bytes in ArrayBuffers (typed arrays, wasm memory excluded), same sampling. */
  readonly arrayBuffers: number;
}

const SAMPLER = `
const { workerData } = require('node:worker_threads');
const ctrl = new Int32Array(workerData.ctrl);
const peaks = new Int32Array(workerData.peaks);
for (;;) {
  const p = Atomics.load(ctrl, 0);
  if (p < 0) break;
  const kb = Math.round(process.memoryUsage.rss() / 1024);
  if (kb > Atomics.load(peaks, p)) Atomics.store(peaks, p, kb);
  Atomics.wait(ctrl, 1, 0, 2);
}
`;

/** Per-phase memory high-water marks (header). Phases are small integers 0..maxPhases−1. */
export class MemoryProbe {
  private readonly ctrl = new Int32Array(new SharedArrayBuffer(8));
  private readonly peaksKb: Int32Array;
  private readonly heap: number[];
  private readonly ab: number[];
  private readonly rssMain: number[];
  private readonly worker: Worker;
  private current = 0;

  constructor(maxPhases: number) {
    this.peaksKb = new Int32Array(new SharedArrayBuffer(4 * maxPhases));
    this.heap = new Array<number>(maxPhases).fill(0);
    this.ab = new Array<number>(maxPhases).fill(0);
    this.rssMain = new Array<number>(maxPhases).fill(0);
    this.worker = new Worker(SAMPLER, { eval: true, workerData: { ctrl: this.ctrl.buffer, peaks: this.peaksKb.buffer } });
    this.worker.unref();
  }

  /** Starts attributing samples to phase `p` (and takes a sample). */
  phase(p: number): void {
    this.current = p;
    Atomics.store(this.ctrl, 0, p);
    this.sample();
  }

  /** A main-thread sample (rss, heapUsed, arrayBuffers) for the current phase. */
  sample(): void {
    const m = process.memoryUsage();
    const p = this.current;
    this.rssMain[p] = Math.max(this.rssMain[p]!, m.rss);
    this.heap[p] = Math.max(this.heap[p]!, m.heapUsed);
    this.ab[p] = Math.max(this.ab[p]!, m.arrayBuffers);
  }

  /** The peaks of phase `p` so far. */
  peaks(p: number): PhaseMemory {
    return { rss: Math.max(Atomics.load(this.peaksKb, p) * 1024, this.rssMain[p]!), heapUsed: this.heap[p]!, arrayBuffers: this.ab[p]! };
  }

  /** Stops the sampler thread. */
  async stop(): Promise<void> {
    Atomics.store(this.ctrl, 0, -1);
    Atomics.notify(this.ctrl, 1);
    await this.worker.terminate();
  }
}

/** `warm` untimed calls, then `reps` timed ones (ms each); samples memory after every call. */
export async function timeReps(fn: () => unknown, warm: number, reps: number, probe: MemoryProbe): Promise<number[]> {
  for (let i = 0; i < warm; i++) {
    await fn();
    probe.sample();
  }
  const ms: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
    probe.sample();
  }
  return ms;
}

/** /proc's clock ticks per second (USER_HZ; 100 on Linux). */
const CLOCK_TICKS = 100;

/**
 * CPU time (user + system, ms) of every process this one started, however deep — a browser's
 * processes with all their threads (renderer, agent workers, kernel helpers, GPU and utility
 * processes), or a CLI child — from /proc; this process itself is left out. CPU time, unlike wall
 * time, is not shared out by the machine's load between one side's many threads and the other's
 * few, so its ratio says which side does more work on a loaded machine. By thread: "process type /
 * thread name" (Chromium's --type, else "browser"; the thread's name without its trailing digits,
 * e.g. "renderer / DedicatedWorker thread") → CPU ms, summed over processes of that type and
 * threads of that name.
 */
export function childrenCpu(): Map<string, number> {
  const parent = new Map<number, number>();
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      pids.push(Number(d));
    } catch {
      // exited meanwhile
    }
  }
  const out = new Map<string, number>();
  for (const pid of pids) {
    let q = parent.get(pid);
    while (q !== undefined && q > 1 && q !== process.pid) q = parent.get(q);
    if (q !== process.pid) continue;
    try {
      const type = /--type=([\w-]+)/.exec(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))?.[1] ?? 'browser';
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/[\d:.#-]+$/, '').trim();
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const key = `${type} / ${name}`;
        out.set(key, (out.get(key) ?? 0) + ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS); // utime, stime
      }
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** The sum of a childrenCpu map. */
export const cpuTotal = (m: ReadonlyMap<string, number>): number => [...m.values()].reduce((t, x) => t + x, 0);

/**
 * `npm run sat -- ARGS --profile` (tsx, in checkout `root`) as a child process: per stage, the wall
 * time its profile table totals (the stage loop from its first phase to its end), the CPU time of
 * every thread of the process over the stage (its own count), and the stage row's J as printed.
 * Rejects with the output when the run fails or prints no stage profile.
 */
export function cliProfile(root: string, args: readonly string[]): Promise<{ ms: number[]; cpu: number[]; j: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(root, 'node_modules/.bin/tsx'), ['src/cli/sat.ts', ...args, '--profile'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => (out += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      const ms = [...out.matchAll(/^total\s+(\d+)\s/gm)].map((m) => Number(m[1]));
      const j = [...out.matchAll(/^\s+\d+\s+(-?[\d.]+)\s/gm)].map((m) => m[1]!);
      const cpu = [...out.matchAll(/^stage \d+ cpu (\d+) ms/gm)].map((m) => Number(m[1]));
      if (code === 0 && ms.length > 0 && cpu.length === ms.length && j.length >= ms.length) resolve({ ms, cpu, j });
      else reject(new Error(`npm run sat exited with ${code} and ${ms.length} stage profiles:\n${out}`));
    });
  });
}
