/**
 * Where the test run's global setup (tests/setup/global.ts) writes the bundled Node agent worker,
 * and tests/helpers/nodeAgentWorker.ts starts it from: in this checkout's ignored .cache folder,
 * so two checkouts sharing node_modules never run each other's code.
 */
export const AGENT_WORKER_BUNDLE = new URL('../../.cache/test-workers/agentWorker.mjs', import.meta.url);
