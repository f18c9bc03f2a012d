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
 * Not here: the jobs (inputJobs.ts), what a caller tells the user beyond the message.
 */
import { ConfigError, FormatError, NumericError, SatError } from '../core/errors';
import { CHECK_TIME_PER_MIB_MS } from '../core/limits';
import type { JobInput, JobName, JobOutput, JobReply } from './inputJobs';

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
function rebuild(r: Extract<JobReply, { ok: false }>): Error {
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
