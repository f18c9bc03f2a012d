/**
 * A Node worker_threads Worker running AgentApi (agentWorkerNode.ts, bundled by the test run's
 * global setup into AGENT_WORKER_BUNDLE), adapted to the AgentWorker interface of
 * src/workers/remoteTeam.ts: the same RemoteAgent and createRemoteExperiment the page uses, driven
 * from a test. `crash` makes the worker die in a named method (death tests).
 *
 * Not here: the browser worker (src/workers/agent.worker.ts, started by makeAgentWorker).
 */
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import type { AgentWorker } from '../../src/workers/remoteTeam';
import { AGENT_WORKER_BUNDLE } from './workerBundle';

export interface NodeWorkerOptions {
  readonly crash?: { readonly method: string; readonly how: 'exit' | 'throw' | 'hang' };
}

/** Workers started and not yet exited (tests check they are all ended). */
export const live = new Set<Worker>();

export function nodeAgentWorker(opts: NodeWorkerOptions = {}): AgentWorker {
  if (!existsSync(AGENT_WORKER_BUNDLE)) throw new Error(`no agent worker bundle at ${AGENT_WORKER_BUNDLE.pathname}: run the tests through vitest, whose global setup (tests/setup/global.ts) writes it`);
  const w = new Worker(AGENT_WORKER_BUNDLE, { workerData: { crash: opts.crash } });
  live.add(w);
  w.on('exit', () => live.delete(w));
  return {
    endpoint: nodeEndpoint(w as unknown as Parameters<typeof nodeEndpoint>[0]),
    onDeath(cb) {
      w.on('error', (e) => cb(`it threw ${e instanceof Error ? e.message : String(e)}`));
      w.on('exit', (code) => cb(`it exited with code ${code}`));
    },
    terminate: () => void w.terminate(),
  };
}

/** Waits (up to 2 s) for every worker started here to exit; returns how many are still alive (a test expects 0). */
export async function workersStillAlive(): Promise<number> {
  for (let t = 0; t < 100 && live.size > 0; t++) await new Promise((r) => setTimeout(r, 20));
  return live.size;
}
