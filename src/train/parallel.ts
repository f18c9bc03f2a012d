/**
 * Data-parallel pretraining on the machine's cores (node:worker_threads): W workers, each holding a
 * replica of the model, take one synchronous step together. It differs from the single-thread step
 * only by the f32 rounding of summing W partial gradients (tests/pretrain.test.ts states the
 * tolerance). A failing worker rejects the step with PretrainWorkerError and the whole pool is
 * terminated. The entry, pretrainWorker.mjs, is a plain-JS shim that registers tsx, so the same
 * code starts under `npm run pretrain` and vitest.
 *
 * Not here: the loss and its gradient, the data and schedule (pretrain.ts, which stays Node-free
 * for the app); a general job queue (one step at a time, W fixed).
 */
import { availableParallelism, cpus } from 'node:os';
import { Worker } from 'node:worker_threads';
import { SatError } from '../core/errors';
import type { ModelConfig } from '../model/config';
import type { Model } from '../model/model';
import type { LlmTask } from '../tasks/llm/types';
import { PretrainRun, targetCount, type PretrainExample, type PretrainOptions } from './pretrain';

/** A worker of the pool failed: its message names the worker, its shard and the cause. */
export class PretrainWorkerError extends SatError {
  /** Index of the failing worker (= its shard), or −1 when the pool itself was misused. */
  readonly worker: number;
  constructor(worker: number, message: string) {
    super('worker', message);
    this.name = 'PretrainWorkerError';
    this.worker = worker;
  }
}

/** Worker count when none is given: both cores of the reference machine, never more than the host has. */
export function defaultWorkers(): number {
  const n = typeof availableParallelism === 'function' ? availableParallelism() : cpus().length;
  return Math.max(1, Math.min(2, n));
}

/** What the main thread sends a worker. */
export interface ToWorker {
  readonly type: 'step';
  readonly seq: number;
  readonly params: Float32Array;
  readonly examples: readonly PretrainExample[];
  /** Target tokens of the whole batch (the loss's denominator). */
  readonly count: number;
}

/** What a worker sends back. */
export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'grad'; readonly seq: number; readonly grads: Float32Array; readonly lossSum: number; readonly tokens: number; readonly ms: number }
  | { readonly type: 'error'; readonly seq: number; readonly name: string; readonly message: string };

/** Data the worker starts with (workerData). */
export interface WorkerInit {
  readonly cfg: ModelConfig;
  readonly params: Float32Array;
  readonly index: number;
}

interface Pending {
  resolve: (m: Extract<FromWorker, { type: 'ready' | 'grad' }>) => void;
  reject: (e: Error) => void;
}

/** Contiguous shards of `n` examples over `w` workers: shard i is [bounds[i], bounds[i+1]). */
export function shardBounds(n: number, w: number): number[] {
  return Array.from({ length: w + 1 }, (_, i) => Math.floor((i * n) / w));
}

/**
 * A pool of W workers training one model by data parallelism. One step:
 *   1. the minibatch is cut into W contiguous shards (examples in batch order);
 *   2. worker i gets the current parameters (transferred) and shard i, and returns the gradient of
 *      Σ_{shard i} CE / count, count being the WHOLE batch's target tokens (crossEntropyGrad in
 *      pretrain.ts says why), so every ∂loss/∂logit equals the single-thread one bit for bit;
 *   3. the main thread sums the shard gradients in shard order (deterministic whatever order the
 *      workers finish in) and takes the one AdamW step on its own model.
 * Create with
 * `DataParallelTrainer.create` (it waits until every worker has loaded), call `step` once per
 * minibatch, and `close` at the end (also on error: a failed step closes the pool itself).
 */
export class DataParallelTrainer {
  private closed = false;
  private seq = 0;
  private readonly pending: (Pending | null)[];
  private readonly exited: Promise<void>[];
  private failure: PretrainWorkerError | null = null;
  /** Milliseconds each worker spent computing its shard's gradient in the last step (0: it sat out); for diagnosis. */
  readonly shardMs: number[];

  private constructor(
    private readonly model: Model,
    private readonly workers: Worker[],
  ) {
    this.pending = workers.map(() => null);
    this.shardMs = workers.map(() => 0);
    this.exited = workers.map((w, i) => {
      w.on('message', (m: FromWorker) => this.onMessage(i, m));
      w.on('error', (e: unknown) => this.fail(i, `pretrain worker ${i} crashed: ${e instanceof Error ? e.message : String(e)}`));
      return new Promise<void>((resolve) =>
        w.once('exit', (code) => {
          if (!this.closed) this.fail(i, `pretrain worker ${i} exited unexpectedly (code ${code}).`);
          resolve();
        }),
      );
    });
  }

  /** Starts W workers, each with a replica of `model` (trainable 'full', f32), and waits until all are ready. */
  static async create(model: Model, workers: number): Promise<DataParallelTrainer> {
    if (!Number.isInteger(workers) || workers < 1) throw new PretrainWorkerError(-1, `DataParallelTrainer: workers must be an integer ≥ 1, got ${workers}.`);
    if (model.trainable !== 'full') throw new PretrainWorkerError(-1, `DataParallelTrainer trains all weights (trainable 'full'); this model is '${model.trainable}'.`);
    if (model.be.name !== 'cpu') throw new PretrainWorkerError(-1, `DataParallelTrainer runs replicas on the CPU backend; this model is on ${model.be.name}.`);
    const entry = new URL('./pretrainWorker.mjs', import.meta.url);
    const params = await model.getParams();
    const ws = Array.from({ length: workers }, (_, index) => {
      const init: WorkerInit = { cfg: model.cfg, params, index };
      // One kernel thread per replica: the replicas are the parallelism here, and each one's own
      // helper threads (src/backend/cpu/threads.ts) would only oversubscribe the cores.
      return new Worker(entry, { workerData: init, name: `pretrain-${index}`, env: { ...process.env, SAT_THREADS: '1' } });
    });
    const pool = new DataParallelTrainer(model, ws);
    try {
      await Promise.all(ws.map((_, i) => pool.request(i)));
    } catch (e) {
      await pool.close();
      throw e;
    }
    return pool;
  }

  /** Number of workers (W). */
  get size(): number {
    return this.workers.length;
  }

  /** Resolves when every worker thread has exited (after `close`, or after a failure). */
  whenExited(): Promise<void> {
    return Promise.all(this.exited).then(() => undefined);
  }

  /** A promise for worker i's next reply (one request in flight per worker). */
  private request(i: number): Promise<Extract<FromWorker, { type: 'ready' | 'grad' }>> {
    return new Promise((resolve, reject) => {
      if (this.failure !== null) return reject(this.failure);
      this.pending[i] = { resolve, reject };
    });
  }

  private onMessage(i: number, m: FromWorker): void {
    if (m.type === 'error') {
      this.fail(i, `pretrain worker ${i} failed on step ${m.seq} (shard ${i} of ${this.workers.length}): ${m.name}: ${m.message}`);
      return;
    }
    const p = this.pending[i];
    this.pending[i] = null;
    if (p) p.resolve(m);
  }

  /** Records the first failure, rejects every pending request with it, and terminates the pool. */
  private fail(i: number, message: string): void {
    if (this.failure === null) this.failure = new PretrainWorkerError(i, message);
    for (let j = 0; j < this.pending.length; j++) {
      const p = this.pending[j];
      this.pending[j] = null;
      if (p) p.reject(this.failure);
    }
    void this.close();
  }

  /**
   * One data-parallel step on `examples` (header): shard gradients summed in shard order, one
   * AdamW step with `lr` and `weightDecay` on the main model. Returns the mean loss over the
   * batch's target tokens and the padded tokens processed (Σ over shards of B_i·T_i).
   */
  async step(examples: readonly PretrainExample[], lr: number, weightDecay: number): Promise<{ loss: number; tokens: number }> {
    if (this.failure !== null) throw this.failure;
    if (this.closed) throw new PretrainWorkerError(-1, 'DataParallelTrainer.step: the pool is closed.');
    if (examples.length === 0) throw new PretrainWorkerError(-1, 'DataParallelTrainer.step: the batch is empty.');
    const count = targetCount(examples);
    const W = this.workers.length;
    const bounds = shardBounds(examples.length, W);
    const seq = this.seq++;
    const current = await this.model.getParams();
    const replies = await Promise.all(
      this.workers.map(async (w, i) => {
        const shard = examples.slice(bounds[i]!, bounds[i + 1]!);
        if (shard.length === 0) return null; // fewer examples than workers: this one sits out
        const reply = this.request(i);
        const params = current.slice();
        const msg: ToWorker = { type: 'step', seq, params, examples: shard, count };
        w.postMessage(msg, [params.buffer]);
        return reply;
      }),
    );
    // Σ shard gradients in shard order (deterministic), then the single optimizer step.
    const grads = new Float32Array(this.model.paramCount());
    let first = true;
    let lossSum = 0;
    let tokens = 0;
    for (const [i, r] of replies.entries()) {
      this.shardMs[i] = r?.type === 'grad' ? r.ms : 0;
      if (r === null || r.type !== 'grad') continue;
      if (r.seq !== seq) throw new PretrainWorkerError(-1, `DataParallelTrainer.step: a reply for step ${r.seq} arrived during step ${seq}.`);
      if (first) grads.set(r.grads);
      else for (let j = 0; j < grads.length; j++) grads[j]! += r.grads[j]!;
      first = false;
      lossSum += r.lossSum;
      tokens += r.tokens;
    }
    this.model.setGrads(grads);
    this.model.adamStep({ lr, weightDecay });
    return { loss: lossSum / count, tokens };
  }

  /** Stops every worker (idempotent); resolves when all threads have exited. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      for (const w of this.workers) void w.terminate();
    }
    await this.whenExited();
  }
}

/**
 * `pretrain` (pretrain.ts) on W workers by data parallelism: the same data, schedule and progress
 * reports (PretrainRun), each step through a DataParallelTrainer. The pool is closed at the end,
 * also when a step fails (the error is rethrown).
 */
export async function pretrainParallel(model: Model, task: LlmTask, o: PretrainOptions, workers: number): Promise<{ steps: number; seconds: number; finalLoss: number }> {
  const pool = await DataParallelTrainer.create(model, workers);
  try {
    const run = new PretrainRun(task, o);
    for (let s = run.next(); s !== null; s = run.next()) run.record(await pool.step(s.examples, s.lr, o.weightDecay));
    return run.result();
  } finally {
    await pool.close();
  }
}
