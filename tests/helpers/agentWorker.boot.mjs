// Boots tests/helpers/agentWorkerNode.ts in a worker_threads Worker: Node 20 ignores
// `--import tsx` in a worker's execArgv, so the TypeScript loader is registered here first.
import { register } from 'tsx/esm/api';

register();
await import('./agentWorkerNode.ts');
