/**
 * The Node twin of src/workers/agent.worker.ts, for tests: exposes an AgentApi (results
 * transferred, errors keeping their class) over a worker_threads parentPort with comlink's node
 * adapter. Bundled into one module by the test run's global setup, and started from there by
 * nodeAgentWorker.ts.
 *
 * workerData.crash (tests of a dying worker only): when the named AgentApi method is called,
 * 'exit' ends the thread, 'throw' throws an uncaught error, 'hang' never answers.
 *
 * Not here: anything the browser worker does not do, apart from the crash hook.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { expose } from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { AgentApi } from '../../src/workers/agentApi';
import { withTransfer } from '../../src/workers/wire';

const api = withTransfer(new AgentApi());
const crash = (workerData ?? {}) as { crash?: { method: string; how: 'exit' | 'throw' | 'hang' } };
if (crash.crash) {
  const { method, how } = crash.crash;
  (api as unknown as Record<string, unknown>)[method] = () => {
    if (how === 'exit') process.exit(3);
    if (how === 'throw') {
      setTimeout(() => {
        throw new Error(`crash test: ${method} blew up`);
      });
    }
    return new Promise(() => {}); // never answers: only a death or terminate() can end the call
  };
}
expose(api, nodeEndpoint(parentPort!));
