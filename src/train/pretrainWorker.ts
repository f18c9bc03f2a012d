/**
 * One worker of the data-parallel pretraining pool (parallel.ts): it holds a replica of the model
 * (trainable 'full', f32) and answers each 'step' message — the current parameters, its shard of
 * the batch and the whole batch's target count — with the shard's gradient (crossEntropyGrad),
 * its summed loss and its padded token count, the gradient as a transferred ArrayBuffer. It
 * posts 'ready' once the replica is built. Any error is sent back as an 'error' message (name and
 * text) rather than thrown, so the main thread can say which worker and shard failed.
 *
 * Not here: the optimizer step, the summing of shards, or any state across steps beyond the
 * replica's buffers (the parameters arrive with every step). Not a module to import: it runs
 * only as a worker thread, started through pretrainWorker.mjs.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Rng } from '../core/rng';
import { cpuBackend } from '../backend/cpu';
import { Model } from '../model/model';
import { initWeights } from '../model/weights';
import type { FromWorker, ToWorker, WorkerInit } from './parallel';
import { crossEntropyGrad } from './pretrain';

const port = parentPort;
if (port === null) throw new Error('pretrainWorker.ts runs as a worker thread (see src/train/parallel.ts), not as a script.');
const init = workerData as WorkerInit;
// The initial weights are overwritten by the parameters of every step; they only size the replica.
const model = new Model(cpuBackend, init.cfg, initWeights(init.cfg, new Rng(0)), { trainable: 'full' });
model.setParams(init.params);

const send = (m: FromWorker, transfer: ArrayBuffer[] = []): void => port.postMessage(m, transfer);

port.on('message', async (m: ToWorker) => {
  try {
    const t0 = performance.now();
    model.setParams(m.params);
    const r = await crossEntropyGrad(model, m.examples, m.count);
    const grads = await model.getGrads();
    send({ type: 'grad', seq: m.seq, grads, lossSum: r.lossSum, tokens: r.tokens, ms: performance.now() - t0 }, [grads.buffer as ArrayBuffer]);
  } catch (e) {
    send({ type: 'error', seq: m.seq, name: e instanceof Error ? e.name : 'Error', message: e instanceof Error ? e.message : String(e) });
  }
});
send({ type: 'ready' });
