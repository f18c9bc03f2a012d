/**
 * The CLI's input-check worker thread: runs one job of src/workers/inputJobs.ts on the message it
 * is sent and posts the reply — the Node twin of src/workers/input.worker.ts —, or, when the first
 * message opens files for reading by range, serves that range session (inputJobs.ts rangeServer)
 * until it is closed. Booted by inputWorker.mjs.
 *
 * Not here: the jobs, the budget (src/workers/budget.ts, src/cli/inputCheck.ts).
 */
import { parentPort } from 'node:worker_threads';
import { rangeServer, rangeTransfer, replyTransfer, runJob, type JobName, type RangeRequest } from '../workers/inputJobs';

parentPort!.once('message', async (m: { job: JobName; input: never } | RangeRequest) => {
  if ('job' in m) {
    const reply = await runJob(m.job, m.input);
    parentPort!.postMessage(reply, replyTransfer(reply));
    return;
  }
  const serve = rangeServer();
  const answer = async (r: RangeRequest): Promise<void> => {
    const reply = await serve(r);
    parentPort!.postMessage(reply, rangeTransfer(reply));
  };
  let queue = answer(m);
  parentPort!.on('message', (r: RangeRequest) => void (queue = queue.then(() => answer(r))));
});
