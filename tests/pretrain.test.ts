/**
 * Pretraining: the corpus is in the protocols' context format, a few steps of next-token training
 * lower the loss, the data-parallel step on worker threads (src/train/parallel.ts) matches the
 * single-thread step within f32 rounding, is deterministic, and fails cleanly when a worker
 * throws, and `npm run pretrain` (a seconds-long run, on 1 and on 2 workers) writes a model file
 * and a card that load back with matching contents. Seeds fixed here: model init 2, 5, 7; data
 * 3, 4, 6, 11. Every model is a `Model` (src/model/model.ts) on the f32 CPU backend. The shipped
 * models' own accuracy is checked in zoo.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cpuBackend } from '../src/backend/cpu';
import { Rng } from '../src/core/rng';
import { cardFromJson } from '../src/model/card';
import { modelConfig } from '../src/model/config';
import { AGENT_TOKENS, BOS, EOS, SEP, tokenizer, vocabSize } from '../src/model/tokenizer';
import { Model } from '../src/model/model';
import { initWeights, loadModel } from '../src/model/weights';
import { pretrainExample } from '../src/tasks/llm/corpus';
import { arithmetic } from '../src/tasks/llm/index';
import { DataParallelTrainer, PretrainWorkerError, pretrainParallel } from '../src/train/parallel';
import { crossEntropyStep, pretrain, type PretrainExample, type PretrainOptions } from '../src/train/pretrain';

/** Tiny model for the worker tests (a 1-layer, d 32 model: each step is a few milliseconds). */
const tinyCfg = modelConfig({ vocab: vocabSize, d: 32, layers: 1, heads: 2, hidden: 64, maxSeq: 64 });
const tinyModel = (seed: number): Model => new Model(cpuBackend, tinyCfg, initWeights(tinyCfg, new Rng(seed)), { trainable: 'full' });

/** Random sequences (never zeros) of random lengths 6..40, the loss starting at a random position. */
function randomBatch(rng: Rng, B: number): PretrainExample[] {
  return Array.from({ length: B }, () => {
    const len = 6 + Math.floor(rng.uniform() * 35);
    const tokens = Int32Array.from({ length: len }, () => 1 + Math.floor(rng.uniform() * (vocabSize - 1)));
    return { tokens, lossFrom: 1 + Math.floor(rng.uniform() * (len - 2)) };
  });
}

/** max |a − b| / max(|a|, floor) over two equal-length arrays. */
function maxRelDiff(a: ArrayLike<number>, b: ArrayLike<number>, floor: number): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!) / Math.max(Math.abs(a[i]!), floor));
  return worst;
}

describe('pretraining', () => {
  const task = arithmetic({ seed: 1, level: 2 });

  it('examples use the protocols\' context format and the loss starts at the answer', () => {
    const rng = new Rng(3);
    let chains = 0;
    for (let i = 0; i < 200; i++) {
      const ex = pretrainExample(task, rng.fork(i));
      const t = Array.from(ex.tokens);
      expect(t[0]).toBe(BOS);
      expect(t.at(-1)).toBe(EOS);
      expect(AGENT_TOKENS).toContain(t[ex.lossFrom - 1]);
      if (t.includes(SEP)) {
        chains++;
        // agent j speaks after agents 0..j−1, each message closed by <sep>
        const markers = t.filter((x) => AGENT_TOKENS.includes(x));
        expect(markers).toEqual(AGENT_TOKENS.slice(0, markers.length));
      }
      const answer = tokenizer.decode(t.slice(ex.lossFrom, -1));
      expect(answer).toMatch(/^-?\d+$/);
    }
    expect(chains).toBeGreaterThan(20);
  });

  it('next-token training lowers the loss on the answers', async () => {
    const cfg = modelConfig({ vocab: vocabSize, d: 32, layers: 1, heads: 2, hidden: 64, maxSeq: 64 });
    const model = new Model(cpuBackend, cfg, initWeights(cfg, new Rng(2)), { trainable: 'full' });
    const rng = new Rng(4);
    const batch = () => Array.from({ length: 16 }, (_, b) => pretrainExample(task, rng.fork(b + Math.floor(rng.uniform() * 1e6))));
    const first = (await crossEntropyStep(model, batch(), 3e-3, 0)).loss;
    let last = first;
    for (let s = 0; s < 150; s++) last = (await crossEntropyStep(model, batch(), 3e-3, 0)).loss;
    console.log(`[pretrain] loss ${first.toFixed(3)} → ${last.toFixed(3)} after 150 steps`);
    expect(last).toBeLessThan(first * 0.6);
  });

  it('npm run pretrain writes a loadable model and its card (a seconds-long run)', () => {
    const out = mkdtempSync(join(tmpdir(), 'sat-pretrain-'));
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/pretrain.ts', '--task', 'countdown', '--size', 'S', '--level', '1', '--steps', '20', '--eval', '16', '--out', out, '--workers', '2'], { encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/2 workers \(data parallel\)/);
    expect(r.stdout).toMatch(/trained 20 steps in [\d.]+ s wall time on 2 workers/);
    expect(r.stdout).toMatch(/held-out accuracy \(greedy, 16 problems\)/);
    const model = loadModel(new Uint8Array(readFileSync(join(out, 'countdown-S.safetensors'))));
    const card = cardFromJson(readFileSync(join(out, 'countdown-S.json'), 'utf8'));
    expect(model.card).toEqual(card);
    expect(card.quant).toBe('q8');
    expect(card.task).toBe('countdown level 1');
    expect(card.pretrainWorkers).toBe(2);
    const bad = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/pretrain.ts', '--size', 'XL'], { encoding: 'utf8', timeout: 60_000 });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--size must be one of S, M, L, got "XL"/);
    const badWorkers = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/pretrain.ts', '--workers', '0'], { encoding: 'utf8', timeout: 60_000 });
    expect(badWorkers.status).toBe(2);
    expect(badWorkers.stderr).toMatch(/--workers must be an integer in \[1, 64\], got 0/);
  });

  describe('data-parallel step on worker threads', () => {
    it('a 2-worker step equals the 1-worker step within f32 rounding, and 1 worker equals it exactly', async () => {
      const single = tinyModel(5);
      const two = tinyModel(5);
      const one = tinyModel(5);
      const pool2 = await DataParallelTrainer.create(two, 2);
      const pool1 = await DataParallelTrainer.create(one, 1);
      try {
        const rng = new Rng(6);
        let firstGrad = 0; // step 0: same parameters, so only the f32 rounding of the shard sum differs
        let firstParam = 0;
        let worstGrad = 0; // steps 0..4: the parameters drift apart by that rounding, too
        let worstParam = 0;
        for (let step = 0; step < 5; step++) {
          const batch = randomBatch(rng, 13); // odd: shards of 6 and 7 with different lengths T
          const lr = 3e-3;
          const r = await crossEntropyStep(single, batch, lr, 0.01);
          const r2 = await pool2.step(batch, lr, 0.01);
          const r1 = await pool1.step(batch, lr, 0.01);
          // Gradients relative to the largest entry of the whole gradient (entries near 0 have no scale of their own).
          const [gSingle, gTwo, pSingle, pTwo, pOne] = await Promise.all([single.getGrads(), two.getGrads(), single.getParams(), two.getParams(), one.getParams()]);
          let gmax = 0;
          for (const g of gSingle) gmax = Math.max(gmax, Math.abs(g));
          worstGrad = Math.max(worstGrad, maxRelDiff(gSingle, gTwo, gmax));
          worstParam = Math.max(worstParam, maxRelDiff(pSingle, pTwo, 1e-2));
          if (step === 0) [firstGrad, firstParam] = [worstGrad, worstParam];
          expect(Math.abs(r2.loss - r.loss)).toBeLessThan(1e-6 * r.loss); // f32 parameters differ after step 0
          // One worker holds the whole batch: the same numbers as the single-thread step, bit for bit.
          expect(r1.loss).toBe(r.loss);
          expect(Array.from(pOne)).toEqual(Array.from(pSingle));
        }
        const f = (x: number): string => x.toExponential(2);
        console.log(`[pretrain] 2 workers vs 1 thread, max rel diff — gradient (of max |g|): step 0 ${f(firstGrad)}, steps 0–4 ${f(worstGrad)}; parameters (of max(|p|, 1e-2)): after step 0 ${f(firstParam)}, after 5 steps ${f(worstParam)}`);
        // f32 tolerances: the gradient's shard sum is rounded once more (≈ 2⁻²⁴ of its terms),
        // and AdamW's g/√v amplifies relative error in tiny entries, hence the looser parameter bound.
        expect(firstGrad).toBeLessThan(1e-6);
        expect(worstGrad).toBeLessThan(1e-5);
        expect(worstParam).toBeLessThan(1e-4);
      } finally {
        await Promise.all([pool2.close(), pool1.close()]);
      }
    });

    it('two 2-worker runs with the same seed are bit-identical', async () => {
      const task2 = arithmetic({ seed: 11, level: 2 });
      const o: PretrainOptions = { seed: 11, batch: 9, lr: 3e-3, weightDecay: 0.01, steps: 6, seconds: 1e9 };
      const runs = [];
      for (let k = 0; k < 2; k++) {
        const model = tinyModel(7);
        const r = await pretrainParallel(model, task2, o, 2);
        const state = await model.getState(); // params and [t, m, v]
        runs.push({ r, params: state.params, optim: state.optim, t: model.t });
      }
      const [a, b] = runs as [(typeof runs)[0], (typeof runs)[0]];
      expect(a.r.steps).toBe(6);
      expect(b.r.finalLoss).toBe(a.r.finalLoss);
      expect(b.t).toBe(6);
      expect(Buffer.from(b.params.buffer).equals(Buffer.from(a.params.buffer))).toBe(true);
      expect(Buffer.from(b.optim.buffer).equals(Buffer.from(a.optim.buffer))).toBe(true);
      // …and a 1-worker pool run is the single-thread run exactly.
      const ref = tinyModel(7);
      const refRun = await pretrain(ref, task2, o);
      const pooled = tinyModel(7);
      const pooledRun = await pretrainParallel(pooled, task2, o, 1);
      expect(pooledRun.finalLoss).toBe(refRun.finalLoss);
      expect(Buffer.from((await pooled.getParams()).buffer).equals(Buffer.from((await ref.getParams()).buffer))).toBe(true);
    });

    it('a worker that throws rejects the step with a specific error and the pool shuts down', async () => {
      const model = tinyModel(5);
      const before = await model.getParams();
      const pool = await DataParallelTrainer.create(model, 2);
      const batch = randomBatch(new Rng(3), 4);
      batch[3] = { tokens: new Int32Array(100).fill(5), lossFrom: 50 }; // longer than maxSeq 64, in shard 1
      const err = await pool.step(batch, 3e-3, 0).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PretrainWorkerError);
      expect((err as PretrainWorkerError).worker).toBe(1);
      expect((err as Error).message).toMatch(/^pretrain worker 1 failed on step 0 \(shard 1 of 2\): ConfigError: forward: T = 100 exceeds the model's maxSeq = 64/);
      // Every thread exits (no hung process), no step was taken, and the pool refuses further work.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const exited = await Promise.race([pool.whenExited().then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 10_000)))]);
      clearTimeout(timer);
      expect(exited).toBe(true);
      expect(Array.from(await model.getParams())).toEqual(Array.from(before));
      await expect(pool.step(batch.slice(0, 2), 3e-3, 0)).rejects.toThrow(/pretrain worker 1 failed/);
      await pool.close();
    });
  });
});
