/**
 * Entry of a data-parallel pretraining worker thread (started by src/train/parallel.ts): plain
 * JavaScript, so Node can load it with no TypeScript support, that registers tsx's loader in this
 * thread and then imports the real worker, pretrainWorker.ts. The same file therefore starts under
 * `tsx` (npm run pretrain), under vitest, and under plain node.
 *
 * Not here: any training code (pretrainWorker.ts); not part of the browser build.
 */
import { tsImport } from 'tsx/esm/api';

await tsImport('./pretrainWorker.ts', import.meta.url);
