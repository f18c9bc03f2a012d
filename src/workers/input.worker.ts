/**
 * The page's input-check worker: runs one job of inputJobs.ts on the message it is sent and posts
 * the reply, its buffers transferred (replyTransfer). Started fresh for each check by src/app/inputCheck.ts, and terminated by budget.ts
 * when the check outruns its budget.
 *
 * Not here: the jobs (inputJobs.ts), the budget (budget.ts).
 */
import { replyTransfer, runJob, type JobName } from './inputJobs';

self.onmessage = async (e: MessageEvent<{ job: JobName; input: never }>) => {
  const reply = await runJob(e.data.job, e.data.input);
  self.postMessage(reply, { transfer: replyTransfer(reply) });
};
