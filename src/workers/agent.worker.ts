/**
 * One agent's Web Worker: exposes an AgentApi over comlink, its results transferred (wire.ts).
 * The page starts one per agent with
 *   new Worker(new URL('../workers/agent.worker.ts', import.meta.url), { type: 'module' })
 * (src/workers/remoteTeam.ts `makeAgentWorker`), and drives it from the main thread.
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
