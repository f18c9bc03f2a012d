/**
 * One agent's Web Worker: exposes an AgentApi over comlink, its results transferred (wire.ts).
 * The page starts one per agent with
 *   new Worker(new URL('../workers/agent.worker.ts', import.meta.url), { type: 'module' })
 * (src/workers/remoteTeam.ts `makeAgentWorker`), and drives it from the main thread.
 *
 * The page's shipped-model agents share one such worker instead, each over a MessagePort of its own
 * (remoteTeam.ts `hostAgents`), as the CLI's agents share one thread.
 *
 * It also tells onnxruntime-web where the build put its wasm (ortAssets.ts), for ONNX seats.
 *
 * Not here: anything else — the agent is AgentApi (agentApi.ts), the glue is wire.ts.
 */
import { expose } from 'comlink';
import { AgentApi } from './agentApi';
import './ortAssets';
import { withTransfer } from './wire';

expose(withTransfer(new AgentApi()));

// A worker may host more agents (remoteTeam.ts `hostAgents`): each arrives as a MessagePort, over
// which a fresh AgentApi of its own is exposed. comlink's listener above ignores this message.
self.addEventListener('message', (ev: MessageEvent<unknown>) => {
  const port = (ev.data as { agentPort?: unknown } | null)?.agentPort;
  if (port instanceof MessagePort) expose(withTransfer(new AgentApi()), port);
});
