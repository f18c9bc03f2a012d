/**
 * The CLI's input-check worker thread: runs one job of src/workers/inputJobs.ts on the message it
 * is sent and posts the reply — the Node twin of src/workers/input.worker.ts. Booted by
 * inputWorker.mjs.
 *
 * Not here: the jobs, the budget (src/workers/budget.ts, src/cli/inputCheck.ts).
 */
import { parentPort } from 'node:worker_threads';
import { replyTransfer, runJob, type JobName } from '../workers/inputJobs';

parentPort!.once('message', async (m: { job: JobName; input: never }) => {
  const reply = await runJob(m.job, m.input);
  parentPort!.postMessage(reply, replyTransfer(reply));
});
