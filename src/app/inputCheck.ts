/**
 * The page's budgeted input checks (src/workers/budget.ts): each check in a fresh Web Worker
 * (src/workers/input.worker.ts) given CHECK_TIME_MS (an experiment file CHECK_TIME_PER_MIB_MS more
 * per MiB), so an experiment file or a checkpoint's tokenizer and chat template are parsed and run
 * off the main thread and a runaway one is stopped with a message naming it. Where there is no Worker (the Node tests of the page's modules) the
 * checks run in-process.
 *
 * Not here: the jobs (src/workers/inputJobs.ts), what each caller shows.
 */
import { CHECK_TIME_MS } from '../core/limits';
import { budgeted, inProcess, PER_MIB_MS, type Check, type CheckWorker } from '../workers/budget';
import type { JobReply } from '../workers/inputJobs';

function webWorker(): CheckWorker {
  const w = new Worker(new URL('../workers/input.worker.ts', import.meta.url), { type: 'module', name: 'sat-input-check' });
  return {
    post: (message, transfer) => w.postMessage(message, transfer),
    onReply: (cb) => w.addEventListener('message', (e: MessageEvent<JobReply>) => cb(e.data), { once: true }),
    onDeath: (cb) => w.addEventListener('error', (e) => cb(`the check failed (${e.message || 'the worker stopped'})`), { once: true }),
    terminate: () => w.terminate(),
  };
}

/** The page's check: budgeted in a Web Worker, or in-process where workers do not exist. */
export const checkInput: Check = typeof Worker === 'function' ? budgeted(webWorker, { timeMs: CHECK_TIME_MS, perMiBMs: PER_MIB_MS }) : inProcess;
