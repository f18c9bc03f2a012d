/**
 * Checks of user-supplied input run in a worker under a time budget, so no file can freeze the
 * page or hang the CLI: the job (inputJobs.ts) is posted to a fresh worker; if no answer comes
 * within the budget, or the worker dies (a Node thread past its heap limit, a crash), the worker is
 * terminated and the input is refused with a FormatError naming it and the budget — nothing was
 * loaded. A SatError the check raised comes back as its own class and message.
 *
 * One worker per check: a check that ran away cannot leave a busy worker behind, and a terminated
 * worker takes everything it allocated with it. Memory is bounded by the size caps the readers
 * apply before they allocate (src/core/limits.ts) and, in Node, by the thread's heap limit.
 *
 *   const check = budgeted(startWorker, { timeMs: CHECK_TIME_MS, perMiBMs: PER_MIB_MS });
 *   const r = await check('experimentFile', bytes, 'The file “run.satexp”', [bytes.buffer]);
 *
 * `startWorker` adapts the platform's worker: src/app/inputCheck.ts (a Web Worker running
 * input.worker.ts), src/cli/inputCheck.ts (a worker thread with resourceLimits).
 *
 * A range session (budgetedRanges) is the same door held open for a load that must not hold a
 * file whole: the worker opens the files with its checks and answers reads of byte ranges, each
 * read under its own time (the budget's, and more per MiB read), one at a time.
 *
 * Not here: the jobs (inputJobs.ts), what a caller tells the user beyond the message.
 */
import { ConfigError, FormatError, NumericError, SatError } from '../core/errors';
import { CHECK_TIME_PER_MIB_MS } from '../core/limits';
import { escapeControl } from '../core/text';
import type { ByteRanges } from '../model/safetensors';
import type { ByteSource, JobFailure, JobInput, JobName, JobOutput, JobReply, RangeReply, RangeRequest } from './inputJobs';

/** The few things a check needs of a worker, whatever the platform. */
export interface CheckWorker {
  post(message: { readonly job: JobName; readonly input: unknown }, transfer: Transferable[]): void;
  /** Calls back once with the worker's reply. */
  onReply(cb: (reply: JobReply) => void): void;
  /** Calls back once if the worker dies before replying, saying why in words ("it needed more than 1 GiB of memory"). */
  onDeath(cb: (why: string) => void): void;
  terminate(): void;
}

export interface Budget {
  /** Time the check may take, from posting to reply. */
  readonly timeMs: number;
  /** More time per MiB of input, for the jobs named (those whose legitimate inputs are large). */
  readonly perMiBMs?: { readonly [K in JobName]?: number };
  /** The memory limit in words, for the message when the worker dies of it ("1 GiB of heap"); the platform enforces it. */
  readonly memory?: string;
}

/** The jobs whose legitimate inputs are large, and the time each gets per MiB (the page's and the CLI's budgets). */
export const PER_MIB_MS: Budget['perMiBMs'] = { experimentFile: CHECK_TIME_PER_MIB_MS, runLog: CHECK_TIME_PER_MIB_MS, importLog: CHECK_TIME_PER_MIB_MS, onnxGraph: CHECK_TIME_PER_MIB_MS, onnxFolder: CHECK_TIME_PER_MIB_MS, generations: CHECK_TIME_PER_MIB_MS };

/** A check: job name, input, what the input is (for messages: "The file “x.satexp”"), buffers to transfer. */
export type Check = <K extends JobName>(job: K, input: JobInput<K>, what: string, transfer?: Transferable[]) => Promise<JobOutput<K>>;

/** The SatError a failed job raised, rebuilt with its class (others are bugs: an Error saying so). */
function rebuild(r: JobFailure): Error {
  switch (r.errorClass) {
    case 'FormatError': return new FormatError(r.message);
    case 'ConfigError': return new ConfigError(r.key ?? '', undefined, r.message);
    case 'NumericError': return new NumericError(r.message);
    case '': return new Error(`checking the input failed unexpectedly (${r.message})`);
    default: return new SatError('format', r.message);
  }
}

/** Bytes of an input: its byte arrays', Blobs', sized paths' and strings' lengths, in arrays and plain objects a few levels down. */
function bytesOf(x: unknown, depth = 0): number {
  if (typeof x === 'string') return x.length;
  if (ArrayBuffer.isView(x)) return x.byteLength;
  if (typeof Blob !== 'undefined' && x instanceof Blob) return x.size;
  if (x !== null && typeof x === 'object' && typeof (x as { path?: unknown }).path === 'string' && typeof (x as { size?: unknown }).size === 'number') return (x as { size: number }).size;
  if (depth >= 4 || x === null || typeof x !== 'object') return 0;
  return Object.values(x).reduce((n: number, y) => n + bytesOf(y, depth + 1), 0);
}

/** The time `job` gets for `input`: the budget's, plus its per-MiB share for the jobs that have one. */
export function timeFor(budget: Budget, job: JobName, input: unknown): number {
  const perMiB = budget.perMiBMs?.[job] ?? 0;
  return perMiB === 0 ? budget.timeMs : budget.timeMs + Math.ceil((bytesOf(input) / 2 ** 20) * perMiB);
}

/** A Check that runs each job in a fresh worker from `start` within `budget` (header). */
export function budgeted(start: () => CheckWorker, budget: Budget): Check {
  return <K extends JobName>(job: K, input: JobInput<K>, what: string, transfer: Transferable[] = []) =>
    new Promise<JobOutput<K>>((resolve, reject) => {
      const timeMs = timeFor(budget, job, input);
      const w = start();
      let done = false;
      const finish = (f: () => void): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        w.terminate();
        f();
      };
      const timer = setTimeout(
        () => finish(() => reject(new FormatError(`${what}: checking it took longer than ${timeMs / 1000} s, the time this playground gives ${timeMs === budget.timeMs ? 'one input' : 'an input of its size'} (docs/models.md, "Input limits"); it was stopped and nothing was loaded`))),
        timeMs,
      );
      w.onReply((r) => finish(() => (r.ok ? resolve(r.value as JobOutput<K>) : reject(rebuild(r)))));
      w.onDeath((why) => finish(() => reject(new FormatError(`${what}: checking it was stopped: ${why}${budget.memory ? ` (the limit is ${budget.memory})` : ''}; nothing was loaded`))));
      w.post({ job, input }, transfer);
    });
}

/** A Check that runs jobs in this thread (no budget): where the platform has no workers, such as the Node tests of the page's modules. */
export const inProcess: Check = async (job, input) => {
  const { runJob } = await import('./inputJobs');
  const r = await runJob(job, input);
  if (r.ok) return r.value;
  throw rebuild(r);
};

/** The few things a range session needs of a worker: a check's, with every message the worker posts heard. */
export interface SessionWorker extends Omit<CheckWorker, 'onReply' | 'post'> {
  post(message: RangeRequest, transfer: ArrayBuffer[]): void;
  /** Calls back with each answer, in order. */
  onMessage(cb: (reply: RangeReply) => void): void;
}

/**
 * Files opened in a range session: each read by range in the worker; close ends the session (and
 * the worker). The bytes of a read live in the session's one buffer, which the next read hands back
 * to the worker: use them before the next read (after it they are detached — empty, never
 * overwritten). The loader does: each block is converted before the next is read.
 */
export interface RangeFiles {
  readonly files: ReadonlyMap<string, ByteRanges>;
  close(): Promise<void>;
}

/** Opens `files` in a range session; `what` names them in messages ("--agent-model: the checkpoint folder …"). */
export type OpenRanges = (files: readonly { readonly name: string; readonly source: ByteSource }[], what: string) => Promise<RangeFiles>;

/**
 * Range sessions in a worker from `start` within `budget` (header): the open gets the budget's
 * time, each read the budget's and CHECK_TIME_PER_MIB_MS more per MiB it asks for. A read that
 * outruns its time, or a worker that dies, ends the session: the worker is terminated and every
 * read after fails with a FormatError naming the file, the range and the budget.
 */
export function budgetedRanges(start: () => SessionWorker, budget: Budget): OpenRanges {
  return async (list, what) => {
    const w = start();
    let ended: Error | null = null;
    let pending: { resolve: (v: RangeReply) => void; timer: ReturnType<typeof setTimeout> } | null = null;
    const finish = (e: Error): void => {
      if (ended) return;
      ended = e;
      w.terminate();
      if (pending) {
        clearTimeout(pending.timer);
        const p = pending;
        pending = null;
        p.resolve({ ok: false, errorClass: 'FormatError', message: e.message });
      }
    };
    w.onMessage((r) => {
      const p = pending;
      if (!p) return;
      pending = null;
      clearTimeout(p.timer);
      p.resolve(r);
    });
    w.onDeath((why) => finish(new FormatError(`${what}: reading it was stopped: ${why}${budget.memory ? ` (the limit is ${budget.memory})` : ''}; nothing was loaded`)));
    // One request at a time, each answered before the next is posted.
    let queue: Promise<unknown> = Promise.resolve();
    // The buffer of the last read, handed back with the next one (header of RangeFiles).
    let spare: ArrayBuffer | undefined;
    const ask = (m: RangeRequest, timeMs: number, late: string): Promise<RangeReply> => {
      const run = (): Promise<RangeReply> =>
        new Promise((resolve) => {
          if (ended) return resolve({ ok: false, errorClass: 'FormatError', message: ended.message });
          const timer = setTimeout(() => finish(new FormatError(`${what}: ${late} took longer than ${timeMs / 1000} s, the time this playground gives ${timeMs === budget.timeMs ? 'it' : 'a read of its size'} (docs/models.md, "Input limits"); it was stopped and nothing was loaded`)), timeMs);
          pending = { resolve, timer };
          const give = 'read' in m ? spare : undefined;
          if (give !== undefined) spare = undefined;
          w.post(give === undefined ? m : { ...m, buffer: give }, give === undefined ? [] : [give]);
        });
      const p = queue.then(run);
      queue = p;
      return p;
    };
    const value = async (m: RangeRequest, timeMs: number, late: string): Promise<RangeReply & { ok: true }> => {
      const r = await ask(m, timeMs, late);
      if (!r.ok) throw rebuild(r);
      return r;
    };
    const close = async (): Promise<void> => {
      await ask({ close: true }, budget.timeMs, 'closing its files').catch(() => {});
      finish(new FormatError(`${what}: its files were closed`));
    };
    try {
      await value({ open: list.map((f) => f.source) }, budget.timeMs, 'opening its files');
    } catch (e) {
      finish(e instanceof Error ? e : new Error(String(e)));
      throw e;
    }
    const files = new Map<string, ByteRanges>();
    list.forEach((f, i) => {
      const name = `"${escapeControl(f.name)}"`;
      files.set(f.name, {
        byteLength: f.source instanceof Uint8Array ? f.source.byteLength : f.source.size,
        read: async (begin, end) => {
          const timeMs = budget.timeMs + Math.ceil(((end - begin) / 2 ** 20) * CHECK_TIME_PER_MIB_MS);
          const bytes = (await value({ read: [i, begin, end] }, timeMs, `reading bytes [${begin}, ${end}) of ${name}`)).value as Uint8Array;
          if (bytes.buffer instanceof ArrayBuffer) spare = bytes.buffer;
          return bytes;
        },
      });
    });
    return { files, close };
  };
}
