/**
 * Entry of the CLI's input-check worker thread (started by src/cli/inputCheck.ts): plain
 * JavaScript that registers tsx's loader in this thread and imports the real entry,
 * inputWorker.ts — so it starts under `tsx` (npm run sat), under vitest and under plain node.
 *
 * Not here: any check (src/workers/inputJobs.ts); not part of the browser build.
 */
import { tsImport } from 'tsx/esm/api';

await tsImport('./inputWorker.ts', import.meta.url);
