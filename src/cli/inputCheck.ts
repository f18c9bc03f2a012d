/**
 * The command line's budgeted input checks (src/workers/budget.ts): each check in a fresh worker
 * thread (inputWorker.mjs) with CHECK_TIME_MS of time (an experiment file more, by its size) and
 * a CHECK_HEAP_MIB heap limit (resourceLimits), so a checkpoint folder whose tokenizer or chat template runs away ends in a
 * message naming it and the budget — not a hang, and not a V8 abort of the whole process. A
 * checkpoint's weights are read the same way, by range (cliRanges): a worker thread under the same
 * limits holds the files open and answers each read, so the CLI's own thread reads no byte of them.
 *
 * Not here: the jobs (src/workers/inputJobs.ts), what the command prints.
 */
import { Worker } from 'node:worker_threads';
import { CHECK_HEAP_MIB, CHECK_TIME_MS, formatSize } from '../core/limits';
import { budgeted, budgetedRanges, PER_MIB_MS, type Check, type CheckWorker, type OpenRanges, type SessionWorker } from '../workers/budget';
import type { JobReply, RangeReply } from '../workers/inputJobs';

/** A fresh worker thread under the heap limit, posting, terminating and saying why it died; `on` hears the first message or every one. */
function thread<R>(on: 'once' | 'on'): Omit<CheckWorker, 'onReply'> & { onMessage(cb: (r: R) => void): void } {
  const w = new Worker(new URL('./inputWorker.mjs', import.meta.url), { name: 'sat-input-check', resourceLimits: { maxOldGenerationSizeMb: CHECK_HEAP_MIB } });
  w.unref(); // a check that was given up on must not keep the process alive
  return {
    post: (message, transfer) => w.postMessage(message, transfer as never),
    onMessage: (cb) => void w[on]('message', (r: R) => cb(r)),
    onDeath: (cb) => {
      w.once('error', (e: Error & { code?: string }) => cb(e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'it ran out of memory' : `the check failed (${e.message})`));
      w.once('exit', (code) => cb(`the check ended without an answer (exit code ${code})`));
    },
    terminate: () => void w.terminate(),
  };
}

function threadWorker(): CheckWorker {
  const t = thread<JobReply>('once');
  return { ...t, onReply: t.onMessage };
}

function sessionWorker(): SessionWorker {
  const t = thread<RangeReply>('on');
  return { ...t, post: (m, transfer) => t.post(m as never, transfer) };
}

const MEMORY = `${formatSize(CHECK_HEAP_MIB * 2 ** 20)} of heap`;

/** The CLI's check, with its budgets (header). */
export function cliCheck(timeMs = CHECK_TIME_MS): Check {
  return budgeted(threadWorker, { timeMs, perMiBMs: PER_MIB_MS, memory: MEMORY });
}

/** The CLI's range sessions (header): each in a fresh worker thread, each read within CHECK_TIME_MS and more per MiB. */
export function cliRanges(timeMs = CHECK_TIME_MS): OpenRanges {
  return budgetedRanges(sessionWorker, { timeMs, memory: MEMORY });
}
